# SPDX-License-Identifier: MIT
"""uexec servers of every kind for the integration tests: one module that starts them.

* kinds: the uid a uexec runs as (root, or another uid: a non-root uexec) and the uid
  its sandboxes run as (--sandbox-uid), set for the whole suite by $UEXEC_TEST_AS_UID
  and $UEXEC_TEST_SANDBOX_UID or for some servers by a module (kind_fixture) or a test
  (sandbox_server: "default", "abiN", "sandbox-uid[-abiN]", "non-root");
* `Server`: one uexec on ws://127.0.0.1:0, checked at teardown (exit 0 on SIGTERM, no
  sanitizer report), and the fixtures around it (server_factory, server,
  shared_server, client, sclient), bounded_server for the stress tests;
* Landlock levels: level_fixtures/level_fixture rerun a module's tests once per level;
* the other ways a test starts uexec: run_once (a start that is expected to end, e.g.
  a refused flag) and StdioServer (--listen stdio).

conftest.py imports everything here (tests keep using `conftest.X` and fixtures by
name); this module reads conftest's host probes (HOST), UEXEC_BIN (which tests
monkeypatch) and suite settings at call time, never at import time, so that the two
can import each other.
"""

import contextlib
import os
import re
import shutil
import signal
import stat
import subprocess
import time
import urllib.parse

import pytest

import conftest
import wsclient

# How long a test waits for an event: a process exiting, a server starting or stopping, a
# connection closing, the kernel tearing a namespace or a cgroup down, a reply. Generous
# enough for an ASan + UBSan uexec (2-5x slower) on a loaded 2-core machine (load 5+);
# every wait returns as soon as the event happens, so it costs nothing when the test
# passes. Never a performance bound: no test asserts how fast something happens
# (bench/ does). The same as wsclient.DEFAULT_TIMEOUT, the RPC client's default.
EVENT_TIMEOUT = wsclient.DEFAULT_TIMEOUT


# --------------------------------------------------------------------------
# kinds: the uid uexec runs as, the uid its sandboxes run as

def _parse_as_uid(v):
    if v in (None, ""):
        return None
    uid, _, gid = v.partition(":")
    return int(uid), int(gid or uid)


# Run every uexec the suite starts as another uid (a non-root uexec, issue 13 item 2):
# UEXEC_TEST_AS_UID=UID[:GID] (the tests stay root). Each Server is started through
# `setpriv --reuid --regid --clear-groups` with HOME and TMPDIR in a directory that uid
# owns, and test_sandbox.py's scratch trees are handed to it (own()).
AS_UID = _parse_as_uid(os.environ.get("UEXEC_TEST_AS_UID"))
# The uid of test_sandbox_nonroot.py when the suite runs as root (no passwd entry needed).
NONROOT_UID = AS_UID or (64123, 64123)
_as_override = [None]


def run_as():
    """(uid, gid) the Servers started now run as, or None (the tests' own uid)."""
    return _as_override[0] or AS_UID


# Run every (root) uexec the suite starts with --sandbox-uid UID (issue 13 item 3):
# UEXEC_TEST_SANDBOX_UID=UID[:GID] (GID: the gid uexec derives, UID's passwd group, else
# UID; give it when that differs). Sandboxed commands are then that uid on the host, and
# own() hands the scratch trees to it, so that only the sandbox keeps outside/ unchanged.
SANDBOX_UID = _parse_as_uid(os.environ.get("UEXEC_TEST_SANDBOX_UID"))
_sandbox_uid_override = [None]


def sandbox_uid():
    """(uid, gid) of --sandbox-uid for the root Servers started now, or None."""
    if run_as():
        return None
    return _sandbox_uid_override[0] or SANDBOX_UID


def set_sandbox_uid(ids):
    """Makes the next Servers (and own()) use --sandbox-uid ids; None: the suite's setting."""
    _sandbox_uid_override[0] = ids


def sandboxed_ids():
    """(uid, gid) sandboxed commands run as on the host when it is not root's, or None."""
    return run_as() or sandbox_uid()


def set_run_as(ids):
    """Makes the next Servers (and own()) use ids; None restores the suite's setting."""
    _as_override[0] = ids


@contextlib.contextmanager
def _kind(kind, ids):
    """Servers started inside are of `kind`: "non-root" (uexec runs as ids) or
    "sandbox-uid" (a root uexec with --sandbox-uid ids); own() hands trees to ids."""
    if kind == "non-root":
        set_run_as(ids)
        try:
            yield
        finally:
            set_run_as(None)
        return
    if run_as():
        pytest.skip("--sandbox-uid needs a root uexec (the suite runs it as another uid)")
    set_sandbox_uid(ids)
    try:
        yield
    finally:
        set_sandbox_uid(None)


def sandbox_server(server_factory, kind, sandbox_uid=(64321, 64321), **kw):
    """A server for one kind of host the sandbox tests run on: `default` (as the suite
    runs it), `abiN` (Landlock ABI at most N), `sandbox-uid[-abiN]` (--sandbox-uid
    sandbox_uid), `non-root` (uexec itself unprivileged, as NONROOT_UID). Skips where
    the host cannot. The server's `sandboxed_ids` and `own()` say whose trees are whose."""
    if kind == "non-root":
        conftest.HOST.require("unprivileged-server", "mount-ns")
        with _kind(kind, NONROOT_UID):
            return server_factory(**kw)
    if "abi" in kind:
        conftest.HOST.require("uexec-init")
        kw["landlock_abi_max"] = int(kind.split("abi")[1])
    if kind.startswith("sandbox-uid"):
        with _kind("sandbox-uid", sandbox_uid):
            return server_factory(**kw)
    return server_factory(**kw)


def kind_fixture(kind, ids):
    """A module-scoped autouse fixture making every Server of the module (and own()) of
    `kind` ("non-root" or "sandbox-uid", with ids) whatever the suite's setting; give
    its name to level_fixtures(setup=...) so that the level servers are of it too."""
    @pytest.fixture(scope="module", autouse=True)
    def server_kind():
        with _kind(kind, ids):
            yield

    return server_kind


def own(*paths, ids=None):
    """Hands paths (recursively) to the uid uexec runs as, when it is not the tests' own:
    a workspace must be writable by the server's uid, as it is on a real host."""
    ids = ids or sandboxed_ids()
    if not ids:
        return
    for p in paths:
        for dirpath, dirnames, filenames in os.walk(p):
            os.lchown(dirpath, *ids)
            for n in dirnames + filenames:
                os.lchown(os.path.join(dirpath, n), *ids)
        if not os.path.isdir(p) and os.path.lexists(p):
            os.lchown(p, *ids)


_homes = []


def run_as_home(ids):
    """HOME and TMPDIR of a uexec run as ids: a 0700 directory it owns under /var/tmp, one
    per test process (test files run side by side: none shares another's), removed when
    the process exits."""
    d = "/var/tmp/uexec-test-home-%d-%d" % (ids[0], os.getpid())
    if not _homes:
        import atexit
        atexit.register(lambda: [shutil.rmtree(h, ignore_errors=True) for h in _homes])
    if d not in _homes:
        _homes.append(d)
    os.makedirs(d, exist_ok=True)
    os.chown(d, *ids)
    os.chmod(d, 0o700)
    return d


# --------------------------------------------------------------------------
# Server and its fixtures


class Server:
    """One uexec process listening on an ephemeral port."""

    def __init__(self, args=(), env=None, cwd=None, logdir="/tmp", listen="ws://127.0.0.1:0",
                 landlock_abi_max=None, as_ids=None, launcher=None, kinds=True):
        """listen: any ws:// or wss:// address (the URL it prints must name it); kinds:
        False starts it as the tests' own uid without --sandbox-uid, whatever the suite's
        kinds (a test of the listener, not of the sandbox)."""
        _require_binary()
        conftest.HOST.require("io_uring")  # uexec cannot start without it
        self.args = [conftest.UEXEC_BIN, "--listen", listen]
        self.as_ids = as_ids or (run_as() if kinds else None)
        # the uid its sandboxed commands run as on the host, when not the tests' own
        self.sandboxed_ids = self.as_ids
        if self.as_ids:
            conftest.HOST.require("unprivileged-server")
            home = run_as_home(self.as_ids)
            base = os.environ if env is None else env
            # a TMPDIR the test made for this server is kept (handed to the uid); a shared
            # one (/tmp, /var/tmp: sticky, world-writable) is never handed over, which would
            # chown everything in it; the uid gets its own home instead
            tmp = base.get("TMPDIR") if env is not None and \
                base.get("TMPDIR") != os.environ.get("TMPDIR") else None
            if tmp and os.path.isdir(tmp) and not os.stat(tmp).st_mode & stat.S_ISVTX:
                own(tmp, ids=self.as_ids)
            else:
                tmp = None
            env = dict(base, HOME=home, TMPDIR=tmp or home)
            cwd = home if cwd is None else cwd
            # launcher: a program that switches to the uid itself and execs the rest
            self.args = (launcher or [conftest.HOST.program("setpriv"), "--reuid=%d" % self.as_ids[0],
                                      "--regid=%d" % self.as_ids[1], "--clear-groups"]) + self.args
        elif launcher:
            self.args = launcher + self.args
        elif kinds and sandbox_uid() and "--sandbox-uid" not in args:
            self.args += ["--sandbox-uid", str(sandbox_uid()[0])]
            self.sandboxed_ids = sandbox_uid()
        # a test's own level wins over the suite's ($UEXEC_TEST_LANDLOCK_ABI_MAX); before
        # args, which may end with a subcommand
        cap = landlock_abi_max if landlock_abi_max is not None else conftest.LANDLOCK_ABI_MAX
        if cap is not None:
            self.args += ["--landlock-abi-max", str(cap)]
        # sandboxDenied is the reference heuristic unless a test asks for denial evidence
        # (test_denial_evidence.py): the suite's expectations must not depend on whether
        # the host happens to have auditing on
        if not any(a in ("--enable-audit", "--denial-evidence") for a in args):
            self.args += ["--denial-evidence", "none"]
        self.args += list(args)
        self.landlock_level = conftest.HOST.landlock_level(cap)
        os.makedirs(logdir, exist_ok=True)
        stamp = "%d-%d" % (os.getpid(), time.monotonic_ns())
        self.stdout_path = os.path.join(logdir, "uexec-%s.stdout" % stamp)
        self.stderr_path = os.path.join(logdir, "uexec-%s.stderr" % stamp)
        self._out = open(self.stdout_path, "wb")
        self._err = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=self._out,
                                     stderr=self._err, env=env, cwd=cwd,
                                     start_new_session=True)
        self.pid = self.proc.pid
        self.url = None
        self.stopped = False
        deadline = time.monotonic() + EVENT_TIMEOUT
        while True:
            with open(self.stdout_path, "rb") as f:
                data = f.read()
            if b"\n" in data:
                self.url = data.split(b"\n", 1)[0].decode().strip()
                break
            if self.proc.poll() is not None:
                pytest.fail("uexec exited with %s before printing its URL; stderr:\n%s"
                            % (self.proc.returncode, self.stderr_tail()))
            if time.monotonic() > deadline:
                self.proc.kill()
                pytest.fail("uexec did not print its URL within %.0f s; stderr:\n%s"
                            % (EVENT_TIMEOUT, self.stderr_tail()))
            time.sleep(0.01)
        got, want = urllib.parse.urlsplit(self.url), urllib.parse.urlsplit(listen)
        assert (got.scheme, got.hostname) == (want.scheme, want.hostname) and got.port, \
            (self.url, listen)
        self.host, self.port = got.hostname, got.port

    def stderr(self):
        with open(self.stderr_path, "rb") as f:
            return f.read()

    def log(self):
        """What it logged so far (stderr), as text."""
        return self.stderr().decode("utf-8", "replace")

    def own(self, *paths):
        """Hands paths to the uid this server's sandboxes run as (when it is not the
        tests' own), so that only the sandbox, never file modes, refuses."""
        if self.sandboxed_ids:
            own(*paths, ids=self.sandboxed_ids)

    def stderr_tail(self, n=4000):
        return self.stderr()[-n:].decode("utf-8", "replace")

    def connect(self, initialize=True, **kw):
        c = wsclient.connect(self.url, initialize=initialize, **kw)
        c.landlock_level = self.landlock_level   # what this server's sandboxes use
        return c

    def ws(self, **kw):
        return wsclient.WebSocket.connect(self.url, **kw)

    def sanitizer_problems(self):
        err = self.stderr()
        return [m.decode() for m in conftest.SANITIZER_MARKERS if m in err]

    def terminate(self, timeout=EVENT_TIMEOUT):
        """SIGTERM and wait; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self.stopped = True
                raise AssertionError("uexec did not exit within %.0fs of SIGTERM" % timeout)
        self.stopped = True
        self._out.close()
        self._err.close()
        return self.proc.returncode

    def check_stop(self):
        """Teardown check: SIGTERM -> exit 0, no sanitizer reports."""
        crashed_before = self.proc.poll()
        problems = []
        try:
            rc = self.terminate()
        except AssertionError as e:
            problems.append(str(e))
            rc = None
        if crashed_before is not None and crashed_before != 0:
            problems.append("uexec died during the test with exit status %s" % crashed_before)
        elif rc not in (0, None):
            problems.append("uexec exited with status %s after SIGTERM" % rc)
        problems += ["sanitizer report: %s" % p for p in self.sanitizer_problems()]
        if problems:
            pytest.fail("; ".join(problems) + "\n--- uexec stderr tail ---\n" + self.stderr_tail())


@pytest.fixture
def server_factory(tmp_path):
    """make(*flags, env=None, cwd=None, listen=..., landlock_abi_max=None, launcher=None,
    kinds=True, cls=Server) -> a Server (cls: a subclass of it); all are checked on
    teardown. launcher: a command the server is started through (it execs the rest)."""
    servers = []

    def make(*args, cls=None, **kw):
        s = (cls or Server)(args, logdir=str(tmp_path / "logs"), **kw)
        servers.append(s)
        return s

    yield make
    for s in servers:
        if not s.stopped or s.sanitizer_problems():
            s.check_stop()


@pytest.fixture
def server(server_factory):
    """A fresh uexec with default flags (function scope)."""
    return server_factory()


# The limits of bounded_server: every process tree a stress test starts may hold at
# most this many tasks and this much memory (uexec's own per-process cgroup limits,
# --process-pids-max and --process-memory-max), so that a bug (a fork loop, a runaway
# allocation, a tree the server fails to kill) is stopped by the kernel instead of
# taking the machine and the other tests running on it down. Far above what the
# tests' trees need (a few tasks and megabytes each).
STRESS_PIDS_MAX = 256
STRESS_MEMORY_MAX = 1 << 30


def cgroup_limits_of(pid):
    """{"pids": pids.max, "memory": memory.max or memory.limit_in_bytes} of the cgroups
    process pid is in, as the kernel enforces them: for each controller, its cgroup in
    the v1 hierarchy that has it where there is one, else its cgroup v2 directory. A
    kind is absent when no such file exists (no controller)."""
    with open("/proc/%d/cgroup" % pid) as f:
        member = [line.rstrip("\n").split(":", 2) for line in f]
    mounts = []  # (fstype, root, mount point, super options)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, rfields = left.split(), right.split()
            if rfields and rfields[0] in ("cgroup", "cgroup2"):
                mounts.append((rfields[0], conftest._unescape(fields[3]), conftest._unescape(fields[4]),
                               rfields[-1].split(",")))

    def directory(fstype, ctrl, rel):
        for typ, root, mnt, opts in mounts:
            if typ != fstype or (ctrl and ctrl not in opts):
                continue
            if root != "/" and rel != root and not rel.startswith(root + "/"):
                continue
            rel2 = rel[len(root):] if root != "/" else rel
            return mnt + (rel2 if rel2 not in ("", "/") else "")
        return None

    out = {}
    for kind, v1_file, v2_file in (("pids", "pids.max", "pids.max"),
                                   ("memory", "memory.limit_in_bytes", "memory.max")):
        path = None
        for _, ctrls, rel in member:
            if kind in ctrls.split(","):
                d = directory("cgroup", kind, rel)
                path = d and os.path.join(d, v1_file)
        if path is None:
            v2 = [rel for hid, ctrls, rel in member if hid == "0" and ctrls == ""]
            d = v2 and directory("cgroup2", None, v2[0])
            path = d and os.path.join(d, v2_file)
        value = conftest._read(path) if path else None
        if value is not None:
            out[kind] = value
    return out


def bounded_server(server_factory, *args, pids_max=STRESS_PIDS_MAX,
                   memory_max=STRESS_MEMORY_MAX, **kw):
    """A server for a test that stresses the machine (floods of output, many or fork-heavy
    processes): every process tree it starts runs under uexec's own cgroup limits of
    pids_max tasks and memory_max bytes. Skips, saying why, where the server reports at
    start that it cannot enforce them on this host (it logs "--process-X-max cannot be
    enforced"): such a test never runs unbounded. Where it says it can, a process's
    cgroup files must show both limits (else the test fails: the server claimed limits
    it does not set). That check costs one short process on a connection of its own,
    whose session stays detached for the server's resume window."""
    srv = server_factory("--process-pids-max", str(pids_max),
                         "--process-memory-max", str(memory_max), *args, **kw)
    log = srv.stderr().decode("utf-8", "replace")
    refused = [line.split("warning: ", 1)[-1] for line in log.splitlines()
               if re.search(r"--process-(pids|memory)-max cannot be enforced", line)]
    if refused:
        srv.check_stop()
        pytest.skip("a stress test runs only within its own process limits, which this "
                    "uexec cannot enforce here: %s" % "; ".join(refused))
    c = srv.connect()
    try:
        c.start("bounded-server-probe", ["/bin/sleep", "1000"])
        pid = [p["pid"] for p in c.result("process/list")["processes"]
               if p["processId"] == "bounded-server-probe"][0]
        got = cgroup_limits_of(pid)
        assert c.terminate("bounded-server-probe") == {"running": True}
        c.collect("bounded-server-probe")
    finally:
        c.ws.abort()
    assert got == {"pids": str(pids_max), "memory": str(memory_max)}, (
        "the server said nothing about limits it cannot enforce, yet a process of it runs "
        "with %r (wanted pids %d, memory %d); start-up log:\n%s" % (got, pids_max, memory_max,
                                                                   srv.stderr_tail()))
    return srv


def checked(srv):
    """The body of a fixture that starts a Server itself (`yield from checked(Server(...))`):
    yields it, and at teardown checks its stop (exit 0 on SIGTERM, no sanitizer report)."""
    yield srv
    srv.check_stop()


def connected(srv, **kw):
    """The body of a client fixture (`yield from connected(server)`): a client of srv
    (connected and initialized unless kw says otherwise), dropped at teardown."""
    c = srv.connect(**kw)
    yield c
    c.ws.abort()


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory):
    """One uexec per test module, for tests that only use their own session."""
    yield from checked(Server((), logdir=str(tmp_path_factory.mktemp("logs"))))


@pytest.fixture
def client(server):
    """Connected + initialized RpcClient on the function-scoped server."""
    yield from connected(server)


@pytest.fixture
def sclient(shared_server):
    """Connected + initialized RpcClient on the module-scoped server."""
    yield from connected(shared_server)


def require_level(level, *features):
    """Skips unless this host can run uexec's sandboxes at Landlock level `level` (and has
    `features`, probed first)."""
    conftest.HOST.require(*features)
    abi = conftest.HOST.landlock_abi()[0]
    if abi < level:
        pytest.skip("needs Landlock ABI %d on the kernel (it offers %d)" % (level, abi))
    if level < 6:
        conftest.HOST.require("uexec-init")   # below ABI 6 the PID namespace is required


def _prepare_level(request, setup, features):
    if setup:
        request.getfixturevalue(setup)
    require_level(request.param, *features)


def level_fixtures(levels, setup=None, features=()):
    """The fixtures of a module that reruns tests once per Landlock level:
    level_server (one uexec per level, module scope, so pytest groups the tests by
    level), lclient (a client of it) and uniq (ids unique across the module's
    servers). setup: the name of a module fixture to set up first (one that changes
    how every Server starts, e.g. its uid); features: host features to require."""
    @pytest.fixture(scope="module", params=levels, ids=lambda l: "abi%d" % l)
    def level_server(request, tmp_path_factory):
        _prepare_level(request, setup, features)
        yield from checked(Server((), logdir=str(tmp_path_factory.mktemp("logs")),
                                  landlock_abi_max=request.param))

    @pytest.fixture
    def lclient(level_server):
        yield from connected(level_server)

    @pytest.fixture
    def uniq():
        counter = [0]

        def make(prefix="p"):
            counter[0] += 1
            return "%s-%d-%d-%d" % (prefix, os.getpid(), time.monotonic_ns(), counter[0])

        return make

    return level_server, lclient, uniq


def level_fixture(levels, setup=None, features=()):
    """A `level` fixture: each of `levels` this host can run, skipping the others."""
    @pytest.fixture(params=levels, ids=lambda l: "abi%d" % l)
    def level(request):
        _prepare_level(request, setup, features)
        return request.param

    return level


def uexec_has_remote():
    """True if this uexec has remote mode (`--help` names --remote)."""
    try:
        p = subprocess.run([conftest.UEXEC_BIN, "--help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--remote" in p.stdout + p.stderr



def collect_again(namespace, module, names):
    """Puts the tests (and fixtures) `names` of another test module into namespace (a
    test module's globals()): pytest collects them there again, run with that module's
    own fixtures, e.g. its level_server of another kind (test_sandbox_uid.py and
    test_sandbox_nonroot.py rerun test_sandbox_levels.py's escape subset so)."""
    for name in names:
        namespace[name] = getattr(module, name)


# --------------------------------------------------------------------------
# other ways to start uexec


def _require_binary():
    if not os.access(conftest.UEXEC_BIN, os.X_OK):
        pytest.fail("uexec binary not found or not executable: %s (set UEXEC_BIN)"
                    % conftest.UEXEC_BIN)


def run_once(*args, timeout=60, text=False, input=None, **kw):
    """uexec with args, expected to end by itself (a refused flag, --help, stdio input
    that ends): the CompletedProcess, output captured; stdin is `input` or /dev/null."""
    _require_binary()
    if input is None:
        kw.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run([conftest.UEXEC_BIN, *args], capture_output=True, text=text,
                          timeout=timeout, input=input, **kw)


class StdioServer:
    """uexec --listen stdio (or `listen`) as a child speaking over its stdin and stdout;
    stderr goes to stderr_path. ids: run it as that uid (setpriv, HOME and TMPDIR of its
    own). A context manager: on exit a server still running is killed."""

    def __init__(self, stderr_path, *args, listen="stdio", ids=None):
        _require_binary()
        cmd, extra = [conftest.UEXEC_BIN, "--listen", listen, *args], {}
        if ids:
            home = run_as_home(ids)
            cmd = [conftest.HOST.program("setpriv"), "--reuid=%d" % ids[0],
                   "--regid=%d" % ids[1], "--clear-groups"] + cmd
            extra = dict(cwd=home, env=dict(os.environ, HOME=home, TMPDIR=home))
        self.stderr_path = str(stderr_path)
        self._err = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._err, **extra)
        self.pid = self.proc.pid
        self.transport = wsclient.StdioTransport(self.proc)

    def client(self):
        return wsclient.RpcClient(self.transport)

    def end_input(self, timeout=60):
        """Closes its stdin (EOF) and returns its exit status."""
        self.proc.stdin.close()
        return self.proc.wait(timeout)

    def stderr(self):
        with open(self.stderr_path, "rb") as f:
            return f.read()

    def sanitizer_problems(self):
        err = self.stderr()
        return [m.decode() for m in conftest.SANITIZER_MARKERS if m in err]

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._err.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
