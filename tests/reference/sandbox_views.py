#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What a sandboxed child sees, reference vs uexec.

Runs the same shell script under the same `sandbox` object on both servers
and compares its output (ls -la, stat, error texts) after dropping the
reference's ~/.bashrc noise (PROTOCOL.md §13) and timestamps. Cases: the
SANDBOX.md §3.3 precedence example and its variants (a writable root below a
denied or read-only parent), the protected metadata names under a plain
writable root, the private /dev, PID namespace, capabilities and
network refusal seen under a workspace-write policy, and a root write: bare
(the devices), with a denied path (the root's metadata names read-only), and
an approved command's policy (every carve-out, symlinks into denied places,
the devices). The scripts write nothing outside their tree but /dev/shm:
never a host kernel file (the reference's approved root write, as root,
could and did write kernel.core_pattern).

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


def glob(pattern):
    return {"path": {"type": "glob_pattern", "pattern": pattern}, "access": "deny"}


# What a command sees of the device nodes and what it may do with them.
DEVICES = ("for d in null zero full random urandom tty ptmx; do "
           "if [ -c /dev/$d ]; then echo $d=chr; else echo $d=missing; fi; done; "
           "echo x > /dev/null; echo null_w=$?; head -c 4 /dev/zero | od -An -tx1; "
           "echo full=$(head -c 9 /dev/full | wc -c); echo urandom=$(head -c 8 /dev/urandom | wc -c); "
           ": > /dev/tty; echo tty=$?; ls -d /dev/pts /dev/shm; "
           "echo s > /dev/shm/uexec-sv-$$; echo shm=$?; rm -f /dev/shm/uexec-sv-$$; "
           "mkfifo fifo; echo mkfifo=$?; ls -l /dev/null /dev/zero | awk '{print $1, $5, $6, $NF}'")
# Device nodes made on disk: refused in a view (no capabilities). A bare root
# write differs on purpose (docs/SECURITY.md): the reference, run as root,
# keeps every capability there and makes them; uexec keeps no CAP_MKNOD.
MKNOD = "; mknod nod c 1 3; echo mknod_chr=$?; mknod blk b 7 0; echo mknod_blk=$?"


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
    # Write on the root (SECURITY.md "Write on the root"): the devices stay usable.
    top = os.path.join(base, "root_write_devices")
    ws = top + "/ws"
    out.append(("root_write_devices", top, [ws], {}, [special("root", "write")], ws,
                DEVICES + "; echo x > new.txt; echo ws=$?"))
    # An approved command's policy: root write plus the denials it keeps
    # (a path, a glob), a read-only carve-out, the root's metadata names
    # granted, and symlinks whose targets are denied.
    top = os.path.join(base, "approved_root_write")
    ws = top + "/ws"
    out.append(("approved_root_write", top, [ws + "/private", ws + "/ro", ws + "/sub"],
                {ws + "/private/secret.txt": "S\n", ws + "/ro/r.txt": "R\n",
                 ws + "/a.env": "E\n", ws + "/sub/b.env": "E\n", ws + "/ok.txt": "O\n",
                 ws + "/link": "->private", ws + "/flink": "->private/secret.txt",
                 ws + "/.git": "->private"},
                [special("root", "write"), entry(ws + "/private", "deny"),
                 entry(ws + "/ro", "read"), glob(ws + "/**/*.env"),
                 entry("/.git", "write"), entry("/.agents", "write"), entry("/.codex", "write")],
                ws,
                "cat private/secret.txt; echo r1=$?; ls private; echo r2=$?; "
                "cat link/secret.txt; echo r3=$?; cat flink; echo r4=$?; "
                "echo x > link/new; echo r5=$?; echo x > private/new; echo r6=$?; "
                "cat .git/secret.txt; echo r7=$?; echo x > .git/new; echo r8=$?; "
                "cat ro/r.txt; echo x > ro/r.txt; echo r9=$?; echo y > ro/new; echo r10=$?; "
                "cat a.env; echo r11=$?; cat sub/b.env; echo r12=$?; echo x > a.env; echo r13=$?; "
                "ln -s private/secret.txt l2; cat l2; echo r14=$?; "
                "mv private gone; echo r15=$?; rm -rf ro; echo r16=$?; "
                "cat ok.txt; echo x > new.txt; echo r17=$?; mkdir -p .codex/x; echo r18=$?; "
                + DEVICES + MKNOD))
    # The §3.3 precedence example under a root write: a writable root inside a
    # denied directory re-opens it, masks inside that root hold again.
    top = os.path.join(base, "root_write_reopen")
    ws = top + "/ws"
    a, b = ws + "/a", ws + "/a/b"
    out.append(("root_write_reopen", top, [b + "/ro"], {a + "/hidden.txt": "H\n",
                                                        b + "/ro/r.txt": "R\n"},
                [special("root", "write"), entry(a, "deny"), entry(b, "write"),
                 entry(b + "/ro", "read")], ws,
                "echo w > a/b/w.txt; echo r1=$?; cat a/hidden.txt; echo r2=$?; ls a; echo r3=$?; "
                "echo x > a/b/ro/r.txt; echo r4=$?; cat a/b/ro/r.txt; ls -la a/b | awk '{print $1, $NF}'; "
                "mkdir a/b/.git; echo r5=$?; echo x > new.txt; echo r6=$?; mv a/b a/c; echo r7=$?"))
    # Write on the root with a denied path (not approved): the root's metadata names.
    top = os.path.join(base, "root_write_deny")
    ws = top + "/ws"
    out.append(("root_write_deny", top, [ws + "/private", ws + "/.codex"],
                {ws + "/private/secret.txt": "S\n"},
                [special("root", "write"), entry(ws + "/private", "deny")], ws,
                "ls -la / | grep -E ' [.](git|agents|codex|aws)$' | awk '{print $1, $NF}'; "
                "mkdir /.git/x; echo r1=$?; mkdir /.aws; echo r2=$?; mkdir .git; echo r3=$?; "
                "mkdir .codex/x; echo r4=$?; cat private/secret.txt; echo r5=$?; "
                "echo x > /tmp/uexec-sv-rwd; echo r6=$?; rm -f /tmp/uexec-sv-rwd; "
                + DEVICES + MKNOD))
    return out


def prepare(top, dirs, files):
    """files: path -> text, or "->target" for a symlink."""
    shutil.rmtree(top, ignore_errors=True)
    for d in dirs:
        os.makedirs(d)
    for p, text in files.items():
        if text.startswith("->"):
            os.symlink(text[2:], p)
            continue
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
    ap.add_argument("--only", action="append", help="run only this case (repeatable)")
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
    fails = ran = 0
    try:
        for name, top, dirs, files, entries, cwd, script in cases(base):
            if args.only and name not in args.only:
                continue
            seen = {}
            for who in ("ref", "uexec"):
                prepare(top, dirs, files)
                out = asyncio.run(run_one(servers[who].url, "sv-" + name, cwd, entries, script))
                seen[who] = clean(out, base)
            ran += 1
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
    print("%d passed, %d failed" % (ran - fails, fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
