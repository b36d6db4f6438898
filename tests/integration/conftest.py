# SPDX-License-Identifier: MIT
"""Fixtures for the uexec black-box integration suite.

The binary comes from $UEXEC_BIN (default /work/main/build/src/uexec).
Run:  /usr/bin/python3 -m pytest -q tests/integration            (slow tests excluded)
      /usr/bin/python3 -m pytest -q tests/integration -m slow    (only slow ones)
      /usr/bin/python3 -m pytest -q tests/integration -m ""      (everything)
"""

import os
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import wsclient  # noqa: E402

UEXEC_BIN = os.environ.get("UEXEC_BIN", "/work/main/build/src/uexec")
SANITIZER_MARKERS = (b"ERROR: AddressSanitizer", b"ERROR: LeakSanitizer",
                     b"runtime error:", b"ERROR: ThreadSanitizer")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes more than ~10 s; excluded unless -m selects it")
    # slow tests are excluded unless the user gave an explicit -m expression
    # (`-m ""` selects everything)
    args = [str(a) for a in config.invocation_params.args]
    explicit = any(a == "-m" or (a.startswith("-m") and not a.startswith("--"))
                   or a.startswith("--markexpr") for a in args)
    if not explicit and not config.option.markexpr:
        config.option.markexpr = "not slow"


# --------------------------------------------------------------------------
# server management


def wait_until(pred, timeout=15.0, interval=0.02, what="condition"):
    """Poll pred() until truthy; returns its value or fails the test."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            pytest.fail("timed out after %.1fs waiting for %s" % (timeout, what))
        time.sleep(interval)


def pid_alive(pid):
    """True if pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except FileNotFoundError:
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


def children_of(pid):
    """Direct children of pid (any state) as {pid: state}."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
        except (FileNotFoundError, ProcessLookupError):
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid:
            out[int(d)] = fields[0]
    return out


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


class Server:
    """One uexec process listening on an ephemeral port."""

    def __init__(self, args=(), env=None, cwd=None, logdir="/tmp", listen="ws://127.0.0.1:0"):
        if not os.access(UEXEC_BIN, os.X_OK):
            pytest.fail("uexec binary not found or not executable: %s (set UEXEC_BIN)" % UEXEC_BIN)
        self.args = [UEXEC_BIN, "--listen", listen] + list(args)
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
        deadline = time.monotonic() + 15
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
                pytest.fail("uexec did not print its URL within 15 s; stderr:\n%s"
                            % self.stderr_tail())
            time.sleep(0.01)
        assert self.url.startswith("ws://127.0.0.1:"), self.url
        self.host, self.port = wsclient.parse_ws_url(self.url)

    def stderr(self):
        with open(self.stderr_path, "rb") as f:
            return f.read()

    def stderr_tail(self, n=4000):
        return self.stderr()[-n:].decode("utf-8", "replace")

    def connect(self, initialize=True, **kw):
        return wsclient.connect(self.url, initialize=initialize, **kw)

    def ws(self, **kw):
        return wsclient.WebSocket.connect(self.url, **kw)

    def sanitizer_problems(self):
        err = self.stderr()
        return [m.decode() for m in SANITIZER_MARKERS if m in err]

    def terminate(self, timeout=15.0):
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
    """make(*flags, env=None, cwd=None) -> Server; all are checked on teardown."""
    servers = []

    def make(*args, env=None, cwd=None, listen="ws://127.0.0.1:0"):
        s = Server(args, env=env, cwd=cwd, logdir=str(tmp_path / "logs"), listen=listen)
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


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory):
    """One uexec per test module, for tests that only use their own session."""
    s = Server((), logdir=str(tmp_path_factory.mktemp("logs")))
    yield s
    s.check_stop()


@pytest.fixture
def client(server):
    """Connected + initialized RpcClient on the function-scoped server."""
    c = server.connect()
    yield c
    c.ws.abort()


@pytest.fixture
def sclient(shared_server):
    """Connected + initialized RpcClient on the module-scoped server."""
    c = shared_server.connect()
    yield c
    c.ws.abort()


@pytest.fixture
def uniq():
    """Unique process ids within a (possibly shared) session."""
    counter = [0]

    def make(prefix="p"):
        counter[0] += 1
        return "%s-%d-%d" % (prefix, os.getpid(), counter[0])

    return make
