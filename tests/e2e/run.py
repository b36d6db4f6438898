#!/usr/bin/python3
"""Acceptance harness: the real Codex CLI 0.169.0 (`codex exec`) against an
exec-server (the reference `codex exec-server` or uexec), with a scripted mock
model (mock_model.py) and a frame-logging WebSocket tap (wstap.py) in between.

  tests/e2e/run.sh [--server ref|uexec] [--only NAME[,NAME]] [--out DIR] [--list]

Exit status: 0 all scenarios passed, 1 some failed, 77 skipped (no codex CLI /
no uexec binary). Per scenario the output directory keeps: tap.jsonl (every
exec-server frame), model.jsonl (every request the CLI sent to the model),
cli.out / cli.err (the CLI's stdout/stderr), work/ (the scenario's cwd).
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import mock_model  # noqa: E402
import scenarios  # noqa: E402

SKIP = 77


def find_codex():
    cands = []
    if os.environ.get("UEXEC_REF_BIN"):
        cands.append(os.environ["UEXEC_REF_BIN"])
    ref_dir = os.environ.get("UEXEC_REF_DIR", "/opt/uexec-ref")
    cands.append(os.path.join(ref_dir, "codex"))
    cands.append(os.path.join(ref_dir, "node_modules/@openai/codex-linux-x64/vendor/"
                              "x86_64-unknown-linux-musl/bin/codex"))
    for c in cands:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.realpath(c)
    return None


def start_listening(argv, env, cwd, log_path, what, timeout=30.0):
    """Start a process that prints its ws:// URL as its first stdout line."""
    err = open(log_path, "ab")
    p = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=err,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    line = [None]

    def rd():
        line[0] = p.stdout.readline().decode().strip()

    t = threading.Thread(target=rd, daemon=True)
    t.start()
    t.join(timeout)
    if not line[0] or not line[0].startswith("ws://"):
        stop_proc(p)
        raise RuntimeError("%s did not print its URL (got %r); see %s" % (what, line[0], log_path))
    # keep draining stdout so the child never blocks on a full pipe
    threading.Thread(target=lambda: p.stdout.read(), daemon=True).start()
    return p, line[0]


def stop_proc(p, sig=signal.SIGTERM, wait=5.0):
    if p is None or p.poll() is not None:
        return
    try:
        os.killpg(p.pid, sig)
    except ProcessLookupError:
        return
    try:
        p.wait(wait)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


class Ctx:
    """What a scenario sees: its work dir, a unique marker and a failure list."""

    def __init__(self, name, workdir, outdir):
        self.name = name
        self.workdir = workdir
        self.outdir = outdir
        self.mark = "m" + uuid.uuid4().hex[:10]
        self.failures = []
        self.notes = []
        self._n = 0

    def call_id(self):
        self._n += 1
        return "call_%s_%d" % (self.name.replace("-", "_"), self._n)

    def check(self, cond, what):
        if not cond:
            self.failures.append(what)
        return bool(cond)

    def expect_in(self, needle, haystack, what):
        return self.check(needle in (haystack or ""),
                          "%s: %r not in %r" % (what, needle, (haystack or "")[-600:]))

    # -- the exec-server transcript --------------------------------------------
    def tap(self):
        recs = []
        try:
            with open(os.path.join(self.outdir, "tap.jsonl")) as f:
                for ln in f:
                    recs.append(json.loads(ln))
        except FileNotFoundError:
            pass
        return recs

    def rpc(self, method):
        """[(request params, response msg or None)] for one method, client side."""
        recs = self.tap()
        reqs = {}
        out = []
        for r in recs:
            m = r.get("msg")
            if r.get("kind") != "text" or not isinstance(m, dict):
                continue
            if r["dir"] == "c2s" and m.get("method") == method and "id" in m:
                reqs[(r["conn"], json.dumps(m["id"]))] = len(out)
                out.append([m.get("params"), None])
            elif r["dir"] == "s2c" and "id" in m and "method" not in m:
                k = (r["conn"], json.dumps(m["id"]))
                if k in reqs:
                    out[reqs[k]][1] = m
        return [tuple(x) for x in out]

    def notifications(self, method, process_id=None):
        res = []
        for r in self.tap():
            m = r.get("msg")
            if r.get("kind") == "text" and r.get("dir") == "s2c" and isinstance(m, dict) \
                    and m.get("method") == method:
                if process_id is None or (m.get("params") or {}).get("processId") == process_id:
                    res.append(m["params"])
        return res


def write_config(home, base_url, model):
    os.makedirs(home, exist_ok=True)
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write("""# written by tests/e2e/run.py
model = "%s"
model_provider = "e2emock"
approval_policy = "never"
check_for_update_on_startup = false

[model_providers.e2emock]
name = "uexec e2e mock"
base_url = "%s"
wire_api = "responses"
env_key = "UEXEC_E2E_API_KEY"
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 120000

[analytics]
enabled = false

# no network but loopback here: keep the CLI from trying to sync plugins/apps
[features]
plugins = false
remote_plugin = false
apps = false
""" % (model, base_url))


def run_scenario(sc, codex, server_url, outroot, timeout):
    outdir = os.path.join(outroot, sc.name)
    shutil.rmtree(outdir, ignore_errors=True)
    workdir = os.path.join(outdir, "work")
    home = os.path.join(outdir, "home")
    os.makedirs(workdir)
    ctx = Ctx(sc.name, workdir, outdir)
    sc.setup(ctx)

    hostport = server_url[len("ws://"):].rstrip("/")
    tap_p, tap_url = start_listening(
        [sys.executable, os.path.join(HERE, "wstap.py"), "--upstream", hostport,
         "--log", os.path.join(outdir, "tap.jsonl")],
        os.environ.copy(), outdir, os.path.join(outdir, "tap.err"), "wstap")
    mock = mock_model.MockModel(sc.script(ctx), os.path.join(outdir, "model.jsonl"))
    base_url = mock.start()
    write_config(home, base_url, sc.model)

    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL", "CODEX_HOME",
                        "CODEX_EXEC_SERVER_URL", "CODEX_SANDBOX", "CODEX_THREAD_ID")}
    env.update({"CODEX_HOME": home, "CODEX_EXEC_SERVER_URL": tap_url,
                "UEXEC_E2E_API_KEY": "dummy-key", "NO_COLOR": "1", "RUST_LOG": env.get(
                    "UEXEC_E2E_RUST_LOG", "warn")})
    argv = [codex, "exec", "--skip-git-repo-check", "-s", sc.sandbox,
            "-C", workdir] + sc.cli_args + [sc.prompt]
    with open(os.path.join(outdir, "cmd.txt"), "w") as f:
        f.write(" ".join(argv) + "\nCODEX_EXEC_SERVER_URL=%s\n" % tap_url)
    t0 = time.time()
    rc = None
    try:
        with open(os.path.join(outdir, "cli.out"), "wb") as so, \
                open(os.path.join(outdir, "cli.err"), "wb") as se:
            p = subprocess.Popen(argv, env=env, cwd=workdir, stdout=so, stderr=se,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
            try:
                rc = p.wait(timeout)
            except subprocess.TimeoutExpired:
                ctx.failures.append("codex exec timed out after %ds" % timeout)
                stop_proc(p, signal.SIGINT, 3.0)
                stop_proc(p, signal.SIGKILL)
    finally:
        mock.stop()
        time.sleep(0.2)  # let the tap log trailing frames
        stop_proc(tap_p)
    elapsed = time.time() - t0

    if rc not in (0, None):
        ctx.failures.append("codex exec exited %s" % rc)
    ctx.failures.extend("mock: " + e for e in mock.errors)
    if mock.extra_requests:
        ctx.failures.append("mock: %d unexpected extra model requests" % mock.extra_requests)
    if not mock.done:
        ctx.failures.append("mock: script did not run to completion (%d turn requests)"
                            % mock.turn_requests)
    ctx.results = mock.results
    try:
        sc.post(ctx)
    except Exception as e:
        ctx.failures.append("post-check raised %r" % (e,))
    return ctx, elapsed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", choices=["ref", "uexec"], default="ref")
    ap.add_argument("--only", default="")
    ap.add_argument("--out", default=os.environ.get(
        "UEXEC_E2E_OUT", os.path.join(os.path.expanduser("~"), ".cache", "uexec-e2e")))
    ap.add_argument("--timeout", type=int, default=180)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--url", default="", help="use an already running exec-server at ws://IP:PORT "
                    "instead of starting one (--server then only names the output dir)")
    args = ap.parse_args()

    scs = scenarios.all_scenarios()
    if args.list:
        for s in scs:
            print("%-10s %s" % (s.name, s.doc))
        return 0
    if args.only:
        want = set(args.only.split(","))
        unknown = want - {s.name for s in scs}
        if unknown:
            print("unknown scenario(s): %s" % ", ".join(sorted(unknown)), file=sys.stderr)
            return 2
        scs = [s for s in scs if s.name in want]

    codex = find_codex()
    if not codex:
        print("SKIP: codex CLI 0.169.0 not installed (run scripts/install-reference.sh, or set "
              "UEXEC_REF_BIN / UEXEC_REF_DIR)")
        return SKIP
    if args.out.startswith("/tmp/") or args.out == "/tmp":
        print("refusing --out under /tmp (CODEX_HOME must live outside /tmp)", file=sys.stderr)
        return 2
    outroot = os.path.join(args.out, args.server)
    os.makedirs(outroot, exist_ok=True)

    # Commands inherit the server's environment and run as `bash -lc`: a clean HOME keeps
    # this machine's login profile (e.g. a slow pyenv init) out of the results.
    shome = os.path.join(outroot, "server-home")
    os.makedirs(shome, exist_ok=True)
    if args.url:
        srv, url = None, args.url
    elif args.server == "ref":
        senv = dict(os.environ, CODEX_HOME=shome, HOME=shome)
        sargv = [codex, "exec-server", "--listen", "ws://127.0.0.1:0"]
    else:
        ubin = os.environ.get("UEXEC_BIN", os.path.join(ROOT, "build", "src", "uexec"))
        if not (os.path.isfile(ubin) and os.access(ubin, os.X_OK)):
            print("SKIP: uexec binary not found at %s (build it or set UEXEC_BIN)" % ubin)
            return SKIP
        senv = dict(os.environ, HOME=shome)
        sargv = [ubin, "--listen", "ws://127.0.0.1:0"]
    if not args.url:
        srv, url = start_listening(sargv, senv, outroot, os.path.join(outroot, "server.err"),
                                   "exec-server (%s)" % args.server)
    print("exec-server (%s) at %s; logs in %s" % (args.server, url, outroot), flush=True)
    npass = nfail = 0
    try:
        for sc in scs:
            if srv is not None and srv.poll() is not None:
                print("FAIL %-8s exec-server died (exit %s), see %s/server.err"
                      % (sc.name, srv.returncode, outroot))
                nfail += 1
                continue
            ctx, el = run_scenario(sc, codex, url, outroot, args.timeout)
            if ctx.failures:
                nfail += 1
                print("FAIL %-8s (%.1fs) %s" % (sc.name, el, ctx.outdir), flush=True)
                for f in ctx.failures:
                    print("     - " + f.replace("\n", "\\n")[:700], flush=True)
            else:
                npass += 1
                print("PASS %-8s (%.1fs)" % (sc.name, el), flush=True)
    finally:
        stop_proc(srv)
    print("%d passed, %d failed" % (npass, nfail))
    return 0 if nfail == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
