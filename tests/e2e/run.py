#!/usr/bin/python3
"""Acceptance harness: the real Codex CLI 0.169.0 (`codex exec`) against an
exec-server (the reference `codex exec-server` or uexec), with a scripted mock
model (mock_model.py) and a frame-logging WebSocket tap (wstap.py) in between.

  tests/e2e/run.sh [--server ref|uexec] [--remote | --forward] [--sandbox MODE]
                   [--only NAME[,NAME]] [--out DIR] [--list]

--remote: remote mode (RELAY.md): a fake registry + rendezvous (tests/relay/fake_relay.py), the
executor registered there (`codex exec-server --remote BASE --environment-id ID`, or
`UEXEC_BIN --remote BASE --environment-id ID`, credential in CODEX_API_KEY), and `codex exec`
as the Noise harness (CODEX_EXEC_SERVER_NOISE_REGISTRY_URL / _ENVIRONMENT_ID / _AUTH_TOKEN).
The relay is encrypted end to end, so there is no exec-server transcript: the checks are the
tool output the model got, files on the host, the final answer, and the relay's routing log
(relay.jsonl); checks that need the transcript are skipped and named on the PASS/FAIL line.

--forward: remote mode with a transcript: a plain listener (`--listen ws://127.0.0.1:0`) with
wstap.py in front of it, and the forwarder (`UEXEC_BIN --remote BASE --environment-id ID forward
--connect ws://TAP`, or `codex exec-server forward --remote BASE --environment-id ID --connect
ws://TAP` for --server ref) registered with the fake relay; `codex exec` goes relay -> forwarder
-> tap -> listener, so every scenario runs with its full transcript checks plus the relay checks.

--sandbox MODE: run the scenarios that default to danger-full-access with `codex exec -s MODE`
instead (e.g. workspace-write); sandbox-ws / sandbox-ro keep their own mode.

Exit status: 0 all scenarios passed, 1 some failed, 77 skipped (no codex CLI /
no uexec binary). Per scenario the output directory keeps: tap.jsonl (every
exec-server frame), model.jsonl (every request the CLI sent to the model),
cli.out / cli.err (the CLI's stdout/stderr), work/ (the scenario's cwd).
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import shlex
import sys
import threading
import time
import urllib.request
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FAKE_RELAY = os.path.join(ROOT, "tests", "relay", "fake_relay.py")
REMOTE_ENV_ID = "e2e-env"
REMOTE_EXECUTOR_TOKEN = "e2e-executor-token"
REMOTE_HARNESS_TOKEN = "e2e-harness-token"
sys.path.insert(0, HERE)

import mock_model  # noqa: E402
import scenarios  # noqa: E402

# UEXEC_E2E_AS_UID=UID[:GID]: run uexec as that unprivileged user (through setpriv, as
# tests/integration's UEXEC_TEST_AS_UID); each scenario's work/ and the server's HOME are
# given to it, as a user's workspace belongs to the user who runs the executor.
def _as_uid(spec):
    if not spec:
        return None
    uid, _, gid = spec.partition(":")
    return int(uid), int(gid or uid)


AS_UID = _as_uid(os.environ.get("UEXEC_E2E_AS_UID"))


def give_to_as_uid(path):
    if AS_UID is None:
        return
    for d, dirs, files in os.walk(path):
        for n in [d] + [os.path.join(d, x) for x in dirs + files]:
            os.lchown(n, *AS_UID)

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


def start_listening(argv, env, cwd, log_path, what, timeout=30.0, scheme="ws://"):
    """Start a process that prints its URL (ws:// or the given scheme) as its first stdout line."""
    err = open(log_path, "ab")
    p = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=err,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    line = [None]

    def rd():
        line[0] = p.stdout.readline().decode().strip()

    t = threading.Thread(target=rd, daemon=True)
    t.start()
    t.join(timeout)
    if not line[0] or not line[0].startswith(scheme):
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
        self.remote = None      # remote / forward mode: the fake relay's base URL
        self.relay_log = []     # remote / forward mode: the relay's log entries of this scenario
        self.transcript = True  # False in plain remote mode: the relay is encrypted, no tap
        self.skipped = []       # checks skipped for want of a transcript
        self.sandbox = "danger-full-access"  # the `codex exec -s` mode of this run
        self.server_kind = None  # "uexec" or "ref"; None with --url
        self.server_pid = None   # the exec-server's pid (SIGUSR2 for a live upgrade)
        self.upgraded = False    # a live upgrade was made (remote mode: the link went away)
        self.server_log = None   # its stderr

    def upgrade_server(self, timeout=60.0):
        """uexec only: SIGUSR2 (a live upgrade to the same binary, issue 26), then wait for
        the log to say the new binary took over; a refused or failed hand-over is a
        failure of the scenario, with the server's reason."""
        def log():
            with open(self.server_log, "rb") as f:
                return f.read().decode(errors="replace")
        done = "Upgrade: took over from uexec "
        before, start = log().count(done), len(log())
        os.kill(self.server_pid, signal.SIGUSR2)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = log()
            if text.count(done) > before:
                self.upgraded = True
                return True
            failed = re.search(r"Upgrade: no hand-over \(([^)]*)\)|upgrade refused, (.*)",
                               text[start:])
            if failed:
                return self.check(False, "the live upgrade was not made: %s" % failed.group(0))
            time.sleep(0.05)
        return self.check(False, "no upgrade within %.0f s; see %s" % (timeout, self.server_log))

    def skip(self, what):
        """A check that needs the exec-server transcript, skipped in plain remote mode."""
        if what not in self.skipped:
            self.skipped.append(what)

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
                    try:
                        recs.append(json.loads(ln))
                    except ValueError:  # forward mode: a line cut at the slice's start
                        pass
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
            if r.get("kind") not in ("text", "binary") or not isinstance(m, dict):
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
            if r.get("kind") in ("text", "binary") and r.get("dir") == "s2c" \
                    and isinstance(m, dict) \
                    and m.get("method") == method:
                if process_id is None or (m.get("params") or {}).get("processId") == process_id:
                    res.append(m["params"])
        return res


def write_config(home, base_url, model, extra=""):
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
""" % (model, base_url) + extra)


def relay_log(base, since=0):
    with urllib.request.urlopen("%s/_log?since=%d" % (base, since), timeout=10) as r:
        return json.loads(r.read())


def wait_registered(base, srv, timeout=30.0):
    """Waits until an executor has registered and holds its rendezvous connection."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with urllib.request.urlopen(base + "/_state", timeout=10) as r:
            st = json.loads(r.read())
        if any(g["executor_connected"] for g in st["registrations"]):
            return True
        if srv.poll() is not None:
            return False
        time.sleep(0.1)
    return False


def run_scenario(sc, codex, server_url, outroot, timeout, remote=None, shared_tap=None,
                 sandbox=None, server=None):
    """remote: the fake relay's base URL (remote / forward mode); shared_tap: forward mode, the
    path of the run's tap log (one tap in front of the listener for the whole run), whose new
    lines become this scenario's tap.jsonl."""
    outdir = os.path.join(outroot, sc.name)
    shutil.rmtree(outdir, ignore_errors=True)
    workdir = os.path.join(outdir, "work")
    home = os.path.join(outdir, "home")
    os.makedirs(workdir)
    ctx = Ctx(sc.name, workdir, outdir)
    ctx.remote = remote
    ctx.transcript = not remote or shared_tap is not None
    mode = sc.sandbox
    if sandbox and mode == "danger-full-access":
        mode = sandbox
    ctx.sandbox = mode
    if server:
        ctx.server_kind, ctx.server_pid, ctx.server_log = server
    sc.setup(ctx)
    give_to_as_uid(workdir)

    tap_p = None
    if shared_tap:
        tap_start = os.path.getsize(shared_tap) if os.path.exists(shared_tap) else 0
    if remote:
        log_start = len(relay_log(remote))
    else:
        hostport = server_url[len("ws://"):].rstrip("/")
        tap_p, tap_url = start_listening(
            [sys.executable, os.path.join(HERE, "wstap.py"), "--upstream", hostport,
             "--log", os.path.join(outdir, "tap.jsonl")],
            os.environ.copy(), outdir, os.path.join(outdir, "tap.err"), "wstap")
    mock = mock_model.MockModel(sc.script(ctx), os.path.join(outdir, "model.jsonl"))
    base_url = mock.start()
    write_config(home, base_url, sc.model, getattr(sc, "config_extra", ""))

    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL", "CODEX_HOME",
                        "CODEX_EXEC_SERVER_URL", "CODEX_SANDBOX", "CODEX_THREAD_ID",
                        "CODEX_EXEC_SERVER_NOISE_REGISTRY_URL",
                        "CODEX_EXEC_SERVER_NOISE_ENVIRONMENT_ID",
                        "CODEX_EXEC_SERVER_NOISE_AUTH_TOKEN")}
    env.update({"CODEX_HOME": home, "UEXEC_E2E_API_KEY": "dummy-key", "NO_COLOR": "1",
                "RUST_LOG": env.get("UEXEC_E2E_RUST_LOG", "warn")})
    if remote:
        server_env = {"CODEX_EXEC_SERVER_NOISE_REGISTRY_URL": remote,
                      "CODEX_EXEC_SERVER_NOISE_ENVIRONMENT_ID": REMOTE_ENV_ID,
                      "CODEX_EXEC_SERVER_NOISE_AUTH_TOKEN": REMOTE_HARNESS_TOKEN}
    else:
        server_env = {"CODEX_EXEC_SERVER_URL": tap_url}
    env.update(server_env)
    argv = [codex, "exec", "--skip-git-repo-check", "-s", mode,
            "-C", workdir] + sc.cli_args + [sc.prompt]
    with open(os.path.join(outdir, "cmd.txt"), "w") as f:
        f.write(" ".join(argv) + "\n" + "".join("%s=%s\n" % kv for kv in server_env.items()))
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
    if shared_tap:
        with open(shared_tap, "rb") as f:
            f.seek(tap_start)
            data = f.read()
        with open(os.path.join(outdir, "tap.jsonl"), "wb") as f:
            f.write(data[:data.rfind(b"\n") + 1])
        check_forward(ctx)
    if remote:
        ctx.relay_log = relay_log(remote, log_start)
        with open(os.path.join(outdir, "relay.jsonl"), "w") as f:
            for e in ctx.relay_log:
                f.write(json.dumps(e) + "\n")
        check_relay(ctx)
        # codex exec exits 0 even when the remote environment failed: the final answer
        # (the script's last message) must be what the CLI printed
        final = mock.final_text() if hasattr(mock, "final_text") else None
        try:
            with open(os.path.join(outdir, "cli.out")) as f:
                out = f.read()
        except OSError:
            out = ""
        if final:
            ctx.expect_in(final, out, "final answer on codex exec's stdout")

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


def check_relay(ctx):
    """Remote mode: the harness went through the registry and the relay carried a Noise
    stream both ways (a connect, a harness stream with Resume + Handshake, the executor's
    validation of the harness key and its Handshake answer, Data frames in both directions,
    no Reset from the executor and nothing dropped by the relay)."""
    log = ctx.relay_log
    connects = [e for e in log if e.get("kind") == "http" and e["path"].endswith("/connect")]
    ctx.check(connects and connects[0].get("status") == 200,
              "the harness made no successful /connect: %r" % connects[:2])
    if connects:
        ctx.check(connects[0]["headers"].get("authorization") == "Bearer " + REMOTE_HARNESS_TOKEN,
                  "the harness's /connect did not carry its token")
    frames = [e for e in log if e.get("kind") == "ws" and e.get("event") == "frame"]
    hs = {e["stream_id"] for e in frames if e["role"] == "harness" and e["body_kind"] == "handshake"}
    ok = [s for s in hs if any(e["role"] == "executor" and e["stream_id"] == s
                               and e["body_kind"] == "handshake" for e in frames)]
    ctx.check(ok, "no stream completed its handshake through the relay (harness streams %r)"
              % sorted(hs))
    for s in ok:
        n_h = sum(1 for e in frames if e["stream_id"] == s and e["role"] == "harness"
                  and e["body_kind"] == "data")
        n_e = sum(1 for e in frames if e["stream_id"] == s and e["role"] == "executor"
                  and e["body_kind"] == "data")
        ctx.check(n_h >= 2 and n_e >= 2, "stream %s carried too little data (harness %d, "
                  "executor %d frames)" % (s, n_h, n_e))
    vals = [e for e in log if e.get("kind") == "http" and e["path"].endswith("/validate")]
    ctx.check(any(e.get("status") == 200 and (e.get("response") or {}).get("valid") is True
                  and e["headers"].get("authorization") == "Bearer " + REMOTE_EXECUTOR_TOKEN
                  and e["headers"].get("x-codex-noise-stream-id") in ok for e in vals),
              "the executor did not validate the harness's stream with its token: %r"
              % [(e.get("status"), e["headers"].get("x-codex-noise-stream-id")) for e in vals])
    resets = [e for e in frames if e["role"] == "executor" and e["body_kind"] == "reset"]
    ctx.check(not resets, "the executor reset stream(s): %r"
              % [(e["stream_id"], e.get("reason")) for e in resets])
    # Executor frames still in flight when the harness went away (e.g. process/closed after
    # the terminate at the end of the turn) are dropped by the relay: expected, not counted.
    gone = {e["stream_id"]: e["n"] for e in log if e.get("kind") == "ws"
            and e.get("event") == "reset-sent" and e.get("stream_id")}
    # A live upgrade closes the executor's link (docs/UPGRADE.md, "The relay link"): what
    # the harness sends before the relay closes its connection has no executor to go to.
    drops = [e for e in log if e.get("kind") == "ws" and e.get("event") in ("route-drop", "drop")
             and not (e.get("stream_id") in gone and e["n"] > gone[e["stream_id"]])
             and not (ctx.upgraded and e.get("why") == "no executor")]
    ctx.check(not drops, "the relay dropped frames while the harness was there: %r" % drops[:3])


def check_forward(ctx):
    """Forward mode: the forwarder opened a WebSocket to the listener (through the tap) for the
    harness's stream, and every application message it forwarded is one Binary message
    (RELAY.md §8: payloads are opaque bytes), starting with the harness's initialize."""
    recs = ctx.tap()
    ups = {r["conn"] for r in recs if r.get("kind") == "http" and r.get("dir") == "s2c"
           and " 101 " in r.get("start_line", "") + " "}
    ctx.check(ups, "forward: no upgraded WebSocket from the forwarder reached the listener")
    data = [r for r in recs if r.get("dir") == "c2s" and r.get("kind") in ("text", "binary")]
    ctx.check(data and all(r["kind"] == "binary" for r in data),
              "forward: forwarder->listener messages not all Binary: %r"
              % sorted({r["kind"] for r in data}))
    first = data[0].get("msg") if data else None
    ctx.check(isinstance(first, dict) and first.get("method") == "initialize",
              "forward: the first forwarded message is not initialize: %r" % (first,))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", choices=["ref", "uexec"], default="ref")
    ap.add_argument("--remote", action="store_true",
                    help="remote mode: fake registry + rendezvous, the executor registered there, "
                    "codex exec as the Noise harness; no transcript, so transcript checks are "
                    "skipped")
    ap.add_argument("--forward", action="store_true",
                    help="remote mode through the executor's `forward --connect` in front of a "
                    "plain listener with the tap between them: full transcript checks")
    ap.add_argument("--sandbox", default="", metavar="MODE",
                    choices=["", "read-only", "workspace-write", "danger-full-access"],
                    help="codex exec -s MODE for the scenarios that default to "
                    "danger-full-access")
    ap.add_argument("--only", default="")
    ap.add_argument("--out", default=os.environ.get(
        "UEXEC_E2E_OUT", os.path.join(os.path.expanduser("~"), ".cache", "uexec-e2e")))
    ap.add_argument("--timeout", type=int, default=180)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--url", default="", help="use an already running exec-server at ws://IP:PORT "
                    "instead of starting one (--server then only names the output dir)")
    args = ap.parse_args()
    if args.forward:
        args.remote = True

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
    if args.remote and args.url:
        print("--remote/--forward and --url exclude each other", file=sys.stderr)
        return 2
    mode_name = "-forward" if args.forward else "-remote" if args.remote else ""
    if args.sandbox:
        mode_name += "-" + args.sandbox
    outroot = os.path.join(args.out, args.server + mode_name)
    os.makedirs(outroot, exist_ok=True)

    # Commands inherit the server's environment and run as `bash -lc`: a clean HOME keeps
    # this machine's login profile (e.g. a slow pyenv init) out of the results.
    shome = os.path.join(outroot, "server-home")
    os.makedirs(shome, exist_ok=True)
    relay = remote = None
    srv = fwd = tap = None   # executor or listener; forward mode: the forwarder and the tap
    shared_tap = None
    ubin = None
    if args.server == "ref":
        senv = dict(os.environ, CODEX_HOME=shome, HOME=shome)
        base_argv = [codex, "exec-server"]
    else:
        ubin = os.environ.get("UEXEC_BIN", os.path.join(ROOT, "build", "src", "uexec"))
        if not args.url and not (os.path.isfile(ubin) and os.access(ubin, os.X_OK)):
            print("SKIP: uexec binary not found at %s (build it or set UEXEC_BIN)" % ubin)
            return SKIP
        if args.remote:
            hp = subprocess.run([ubin, "--help"], capture_output=True, text=True)
            if "--remote" not in hp.stdout + hp.stderr:
                print("SKIP: %s --help does not mention --remote (remote mode not built)" % ubin)
                return SKIP
            if args.forward and "forward --connect" not in hp.stdout + hp.stderr:
                print("SKIP: %s --help does not mention `forward --connect`" % ubin)
                return SKIP
        senv = dict(os.environ, HOME=shome)
        # UEXEC_EXTRA_ARGS: more uexec options for every uexec started (e.g. "--landlock-abi-max 4").
        base_argv = [ubin] + shlex.split(os.environ.get("UEXEC_EXTRA_ARGS", ""))
        if AS_UID is not None and args.server == "uexec":
            setpriv = shutil.which("setpriv")
            if os.geteuid() != 0 or not setpriv:
                print("SKIP: UEXEC_E2E_AS_UID needs root and setpriv (util-linux)")
                return SKIP
            # every parent of --out must be searchable by that uid (the default, under
            # ~root, is not): else each start fails chdir with EACCES, far from the cause
            probe = subprocess.run([setpriv, "--reuid=%d" % AS_UID[0], "--regid=%d" % AS_UID[1],
                                    "--clear-groups", "test", "-x", outroot])
            if probe.returncode != 0:
                print("error: uid %d cannot search %s (a parent directory is closed to it); "
                      "set UEXEC_E2E_OUT to a directory it can reach (outside /tmp)"
                      % (AS_UID[0], outroot))
                return 1
            give_to_as_uid(shome)
            base_argv = [setpriv, "--reuid=%d" % AS_UID[0], "--regid=%d" % AS_UID[1],
                         "--clear-groups"] + base_argv
    if args.server == "ref" and args.forward:
        hp = subprocess.run([codex, "exec-server", "forward", "--help"], capture_output=True,
                            text=True)
        if "--connect" not in hp.stdout + hp.stderr:
            print("SKIP: the reference has no `exec-server forward --connect`")
            return SKIP
    # the executor's registry credential; nothing else of this machine's credentials
    renv = dict(senv)
    for k in ("OPENAI_API_KEY", "CODEX_ACCESS_TOKEN", "CODEX_API_KEY",
              "CODEX_EXEC_SERVER_REMOTE_BEARER_TOKEN"):
        senv.pop(k, None)
        renv.pop(k, None)
    renv["CODEX_API_KEY"] = REMOTE_EXECUTOR_TOKEN

    def register(argv, log_name, what):
        """Starts a remote-mode process and waits for its registration with the fake relay."""
        with open(os.path.join(outroot, log_name), "ab") as err:
            p = subprocess.Popen(argv, env=renv, cwd=outroot, stdout=err, stderr=err,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
        if not wait_registered(remote, p):
            print("FAIL %s (%s) did not register and connect at %s (exit %s); see %s/%s"
                  % (what, args.server, remote, p.poll(), outroot, log_name))
            stop_proc(p)
            return None
        return p

    try:
        if args.url:
            url = args.url
        elif args.remote:
            relay, remote = start_listening(
                [sys.executable, FAKE_RELAY, "--port", "0",
                 "--state-file", os.path.join(outroot, "relay-state.json")],
                os.environ.copy(), outroot, os.path.join(outroot, "relay.err"), "fake relay",
                scheme="http://")
            rargs = ["--remote", remote, "--environment-id", REMOTE_ENV_ID]
            if args.forward:
                srv, lurl = start_listening(base_argv + ["--listen", "ws://127.0.0.1:0"], senv,
                                            outroot, os.path.join(outroot, "server.err"),
                                            "exec-server (%s)" % args.server)
                shared_tap = os.path.join(outroot, "tap.jsonl")
                if os.path.exists(shared_tap):
                    os.unlink(shared_tap)
                tap, tap_url = start_listening(
                    [sys.executable, os.path.join(HERE, "wstap.py"), "--upstream",
                     lurl[len("ws://"):].rstrip("/"), "--log", shared_tap],
                    os.environ.copy(), outroot, os.path.join(outroot, "tap.err"), "wstap")
                if args.server == "ref":
                    fargv = base_argv + ["forward"] + rargs + ["--connect", tap_url]
                else:
                    fargv = base_argv + rargs + ["forward", "--connect", tap_url]
                fwd = register(fargv, "forwarder.err", "forwarder")
                if fwd is None:
                    return 1
                url = "%s -> forwarder -> %s (tap) -> %s" % (remote, tap_url, lurl)
            else:
                srv = register(base_argv + rargs, "server.err", "executor")
                if srv is None:
                    return 1
                url = remote
        else:
            srv, url = start_listening(base_argv + ["--listen", "ws://127.0.0.1:0"], senv,
                                       outroot, os.path.join(outroot, "server.err"),
                                       "exec-server (%s)" % args.server)
        print("exec-server (%s%s%s) at %s; logs in %s"
              % (args.server, ", forward" if args.forward else ", remote" if args.remote else "",
                 ", -s " + args.sandbox if args.sandbox else "", url, outroot), flush=True)
        npass = nfail = 0
        for sc in scs:
            dead = [(n, p) for n, p in (("exec-server", srv), ("forwarder", fwd), ("tap", tap))
                    if p is not None and p.poll() is not None]
            if dead:
                print("FAIL %-8s %s died (exit %s), see %s"
                      % (sc.name, dead[0][0], dead[0][1].returncode, outroot))
                nfail += 1
                continue
            server = (args.server, srv.pid, os.path.join(outroot, "server.err")) \
                if srv is not None and not args.url else None
            ctx, el = run_scenario(sc, codex, url, outroot, args.timeout, remote, shared_tap,
                                   args.sandbox, server)
            skipped = ""
            if ctx.skipped:
                skipped = " [no transcript, skipped: %s]" % "; ".join(ctx.skipped)
            if ctx.failures:
                nfail += 1
                print("FAIL %-8s (%.1fs) %s%s" % (sc.name, el, ctx.outdir, skipped), flush=True)
                for f in ctx.failures:
                    print("     - " + f.replace("\n", "\\n")[:700], flush=True)
            else:
                npass += 1
                print("PASS %-8s (%.1fs)%s" % (sc.name, el, skipped), flush=True)
    finally:
        stop_proc(fwd)
        stop_proc(srv)
        stop_proc(tap)
        stop_proc(relay)
    print("%d passed, %d failed" % (npass, nfail))
    return 0 if nfail == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
