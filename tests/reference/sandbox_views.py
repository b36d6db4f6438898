#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What a sandboxed child sees, reference vs uexec.

Runs the same shell script under the same `sandbox` object on both servers
and compares its output (ls -la, stat, error texts) after dropping the
reference's ~/.bashrc noise (PROTOCOL.md §13) and timestamps. Cases: the
SANDBOX.md §3.3 precedence example and its variants (a writable root below a
denied or read-only parent), the protected metadata names under a plain
writable root, and the private /dev, PID namespace, capabilities and
network refusal seen under a workspace-write policy.

    /usr/bin/python3 tests/reference/sandbox_views.py [-v]

Exit: 0 all equal, 1 a difference, 77 skipped (no reference or uexec).
"""

import argparse
import asyncio
import base64
import json
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import diffharness as harness  # noqa: E402


def special(kind, access):
    return {"path": {"type": "special", "value": {"kind": kind}}, "access": access}


def entry(path, access):
    return {"path": {"type": "path", "path": "file://" + path}, "access": access}


def cases(base):
    out = []
    for name in ("spec_example", "read_parent", "denied_ancestor"):
        top = os.path.join(base, name)
        repo, a = top + "/ws", top + "/ws/a"
        b = a + "/b"
        if name == "denied_ancestor":
            entries = [special("root", "read"), entry(top, "deny"), entry(b, "write")]
        else:
            entries = [special("root", "read"), entry(repo, "write"),
                       entry(a, "deny" if name == "spec_example" else "read"), entry(b, "write")]
        script = ("echo w > {b}/w.txt; echo rc=$?; echo h > {a}/hidden.txt; echo rc2=$?; "
                  "ls -la {a}; echo rc3=$?; ls -ld {a} {b}; cat {a}/hidden.txt; "
                  "echo x > {repo}/new.txt; echo rc4=$?; ls -la {b}").format(a=a, b=b, repo=repo)
        out.append((name, top, [b], {a + "/hidden.txt": "H\n"}, entries, b, script))
    top = os.path.join(base, "protected_names")
    ws = top + "/ws"
    out.append(("protected_names", top, [ws], {},
                [special("root", "read"), entry(ws, "write")], ws,
                "ls -la; for n in .git .agents .codex .aws; do mkdir $n/x; echo $n=$?; done"))
    top = os.path.join(base, "dev_and_pids")
    ws = top + "/ws"
    out.append(("dev_and_pids", top, [ws], {},
                [special("root", "read"), entry(ws, "write")], ws,
                "ls -la /dev | awk '{print $1, $NF}'; ls /dev/pts /dev/shm; "
                "stat -c '%a %U %n' /dev/null /dev/tty /dev/ptmx /dev/shm; "
                "echo pid=$$; echo procs=$(ps -e | wc -l); "
                "grep -E 'Cap|NoNewPrivs|Seccomp' /proc/self/status; "
                "touch /etc/x /tmp/uexec-sv-x; echo > /dev/tcp/127.0.0.1/22; echo rc=$?"))
    return out


def prepare(top, dirs, files):
    shutil.rmtree(top, ignore_errors=True)
    for d in dirs:
        os.makedirs(d)
    for p, text in files.items():
        with open(p, "w") as f:
            f.write(text)


def clean(text, base):
    lines = [ln for ln in text.splitlines() if ".bashrc" not in ln]
    text = "\n".join(lines)
    text = re.sub(r"[A-Z][a-z]{2} [ 0-9]\d (\d\d:\d\d|\d{4})", "<time>", text)
    return text.replace(base, "<base>")


async def run_one(url, pid, cwd, entries, script):
    ws = await harness.websockets.connect(url, compression=None, max_size=None,
                                          ping_interval=None, close_timeout=2, open_timeout=10)
    c = harness.Conn(ws)
    try:
        await ws.send(json.dumps({"id": 0, "method": "initialize",
                                  "params": {"clientName": "uexec-diff"}}))
        if "result" not in await c.response(0, 10):
            return "handshake failed"
        await ws.send(json.dumps({"method": "initialized", "params": {}}))
        sb = {"permissions": {"type": "managed",
                              "file_system": {"type": "restricted", "entries": entries},
                              "network": "restricted"},
              "windowsSandboxLevel": "disabled"}
        await ws.send(json.dumps({"id": 1, "method": "process/start", "params": {
            "processId": pid, "argv": ["/bin/bash", "-c", script], "cwd": "file://" + cwd,
            "env": {"PATH": "/usr/bin:/bin"}, "tty": False, "sandbox": sb}}))
        r = await c.response(1, 20)
        if "result" not in r:
            return "start: " + json.dumps(r)
        closed = await c.wait_for(lambda: any(e["method"] == "process/closed"
                                              for e in c.proc_events(pid)), 20)
        if not closed:
            return "no process/closed"
        # stdout and stderr are separate pipes: compared apart (their interleaving is racy)
        streams = {"stdout": b"", "stderr": b""}
        for e in c.proc_events(pid):
            if e["method"] == "process/output":
                streams[e["params"]["stream"]] += base64.b64decode(e["params"]["chunk"])
        return "\n".join("[%s]\n%s" % (k, v.decode("utf-8", "replace"))
                         for k, v in sorted(streams.items()))
    finally:
        await ws.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--verbose", "-v", action="store_true")
    args = ap.parse_args()
    if not harness.find_reference():
        print("SKIP: reference codex binary not installed (scripts/install-reference.sh)")
        return 77
    if not harness.find_uexec():
        print("SKIP: uexec binary not found (build it or set UEXEC_BIN)")
        return 77
    if os.geteuid() != 0:
        print("SKIP: the sandbox comparison needs root (both servers mount)")
        return 77
    servers, work = harness.start_servers(("ref", "uexec"))
    base = os.path.join(work, "sandbox-views")
    fails = 0
    try:
        for name, top, dirs, files, entries, cwd, script in cases(base):
            seen = {}
            for who in ("ref", "uexec"):
                prepare(top, dirs, files)
                out = asyncio.run(run_one(servers[who].url, "sv-" + name, cwd, entries, script))
                seen[who] = clean(out, base)
            same = seen["ref"] == seen["uexec"]
            fails += not same
            print("%-5s %s" % ("PASS" if same else "FAIL", name))
            if args.verbose or not same:
                for who in ("ref", "uexec"):
                    print("  [%s]\n    %s" % (who, seen[who].replace("\n", "\n    ")))
    finally:
        for s in servers.values():
            s.stop()
        shutil.rmtree(base, ignore_errors=True)
    print("%d passed, %d failed" % (len(cases(base)) - fails, fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
