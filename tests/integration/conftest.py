# SPDX-License-Identifier: MIT
"""Fixtures for the uexec black-box integration suite.

The binary comes from $UEXEC_BIN (default: build/src/uexec of this checkout).
Run:  /usr/bin/python3 -m pytest -q tests/integration            (slow tests excluded)
      /usr/bin/python3 -m pytest -q tests/integration -m slow    (only slow ones)
      /usr/bin/python3 -m pytest -q tests/integration -m ""      (everything)

Host features (root, Landlock, mount namespaces, cgroup v2, BPF, io_uring, the
i386/x32 ABIs, programs...) are probed once per session from the kernel itself,
never from uexec's own announcements; a test that needs one says so with
@pytest.mark.needs("feature", ...) or @pytest.mark.needs_programs(...) and is
skipped with "needs <feature>: <why>" where the host lacks it. See HostProbes.
"""

import collections
import ctypes
import errno
import os
import platform
import pwd
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(TESTS_DIR))
sys.path.insert(0, TESTS_DIR)


UEXEC_BIN = os.environ.get("UEXEC_BIN", os.path.join(REPO_ROOT, "build", "src", "uexec"))
# Run every uexec the suite starts as on an older kernel: passed as --landlock-abi-max
# (testing only) to each one; HOST.landlock_level() is what its sandboxes then use.
LANDLOCK_ABI_MAX = os.environ.get("UEXEC_TEST_LANDLOCK_ABI_MAX")
LANDLOCK_ABI_MAX = int(LANDLOCK_ABI_MAX) if LANDLOCK_ABI_MAX not in (None, "") else None
LANDLOCK_ABI_NEWEST = 7          # sandbox/sandbox.h: SANDBOX_LANDLOCK_ABI_NEWEST


# The servers of every kind (servers.py); imported here so that tests keep using
# `conftest.X`, `from conftest import X` and the fixtures by name. servers.py reads
# what it needs from this module at call time (this import runs first).
from servers import (  # noqa: E402,F401
    AS_UID, EVENT_TIMEOUT, NONROOT_UID, SANDBOX_UID, STRESS_MEMORY_MAX, STRESS_PIDS_MAX, Server,
    StdioServer, bounded_server, cgroup_limits_of, checked, client, collect_again, connected,
    kind_fixture, level_fixture,
    level_fixtures, own, require_level, run_as, run_as_home, run_once, sandbox_server,
    sandbox_uid, sandboxed_ids, sclient, server, server_factory, set_run_as, set_sandbox_uid,
    shared_server, uexec_has_remote)


def start_workers(n, deadline, seed, actions, invoke, stop_at_error=True):
    """The chaos soaks' workers: n threads, each with its own generator seeded from seed,
    calling invoke(k, action, rnd, tag) with random actions until deadline (or, with
    stop_at_error, until any worker failed). Returns (errors, counts, threads), filled
    as they run: errors are "action (tag): exception" texts (a worker stops at its
    first), counts completed actions by name."""
    import threading
    errors, counts = [], {}
    lock = threading.Lock()

    def worker(k):
        rnd = random.Random(seed * 31 + k)
        i = 0
        while time.monotonic() < deadline and not (errors and stop_at_error):
            act = rnd.choice(actions)
            tag = "t%d-%d" % (k, i)
            i += 1
            try:
                invoke(k, act, rnd, tag)
            except Exception as e:  # noqa: BLE001 - every failure is reported with its seed
                with lock:
                    errors.append("%s (%s): %r" % (act.__name__, tag, e))
                return
            with lock:
                counts[act.__name__] = counts.get(act.__name__, 0) + 1

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    return errors, counts, threads


SANITIZER_MARKERS = (b"ERROR: AddressSanitizer", b"ERROR: LeakSanitizer",
                     b"runtime error:", b"ERROR: ThreadSanitizer")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes more than ~10 s; excluded unless -m selects it")
    config.addinivalue_line("markers", "needs(*features): host features the test relies on "
                            "(see HostProbes.FEATURES); skipped with the reason where one is missing")
    config.addinivalue_line("markers", "needs_programs(*names): programs the test runs (a name "
                            "is looked up in PATH plus the sbin directories, a path must exist)")
    # slow tests are excluded unless the user gave an explicit -m expression
    # (`-m ""` selects everything)
    args = [str(a) for a in config.invocation_params.args]
    explicit = any(a == "-m" or (a.startswith("-m") and not a.startswith("--"))
                   or a.startswith("--markexpr") for a in args)
    if not explicit and not config.option.markexpr:
        config.option.markexpr = "not slow"


# --------------------------------------------------------------------------
# waiting and processes



def accept_forever(sock, on_conn):
    """Calls on_conn(connection) for each connection sock accepts, on a daemon thread,
    until sock is closed."""
    def loop():
        while True:
            try:
                c, _ = sock.accept()
            except OSError:
                return
            on_conn(c)
    threading.Thread(target=loop, daemon=True).start()


def pipe_bytes(a, b, shut_both=False):
    """Copies what a receives to b until EOF or an error, then half-closes b (a TCP
    forwarder's direction), or with shut_both shuts both sockets down."""
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    finally:
        for s, how in ((a, socket.SHUT_RDWR), (b, socket.SHUT_RDWR)) if shut_both else \
                ((b, socket.SHUT_WR),):
            try:
                s.shutdown(how)
            except OSError:
                pass


def wait_until(pred, timeout=EVENT_TIMEOUT, interval=0.02, what="condition"):
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
    except (FileNotFoundError, ProcessLookupError):
        return False  # gone, or going (a read of a dying task's stat can fail with ESRCH)
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


def settled_fd_count(pid, quiet=0.3, timeout=10.0):
    """The process's fd count once it stayed the same for `quiet` seconds (or the last
    one seen when `timeout` runs out)."""
    deadline = time.monotonic() + timeout
    last, since = fd_count(pid), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        n = fd_count(pid)
        if n != last:
            last, since = n, time.monotonic()
        elif time.monotonic() - since >= quiet:
            break
    return last


@pytest.fixture
def uniq():
    """Unique process ids within a (possibly shared) session."""
    counter = [0]

    def make(prefix="p"):
        counter[0] += 1
        return "%s-%d-%d" % (prefix, os.getpid(), counter[0])

    return make


# --------------------------------------------------------------------------
# host probes (issue 11: tests pass on any suitable host and fail when they should)
#
# Every probe asks the kernel (or runs the program) itself and answers None when
# the host has the feature, else one sentence saying what is missing and why. A
# probe never asks uexec: were uexec to misdetect a feature, the tests relying on
# it fail (and test_host_probes.py compares uexec's announcements with these
# answers) instead of being skipped.

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long

NR_BPF = 321
NR_LANDLOCK_CREATE_RULESET = 444
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_ABI_SCOPE = 6     # sandbox/sandbox.h: signal and abstract-socket scoping
NOBODY = 65534
# The reference 0.171.0's capability flags, in its order (environment/info; uexec's own
# extensions follow them: test_process_ext.py)
REFERENCE_CAPABILITIES = [
    "networkProxyLaunch", "networkProxyReviewDomains", "networkProxyTransparentTcp",
    "credentialMasking", "credentialMaskingCustomProviders", "capabilityDiscoverySandbox",
    "fsWatchMissing", "capabilityDiscoveryV2", "environmentConfigRead", "httpHeaderEnvVars",
    "sandboxedFileStreaming", "fileWriteStreaming", "shellSnapshotV2", "windowsMxc",
    "linuxRootWritePreservesDevices", "linuxApprovedRootWritePreservesRestrictions"]

# The interpreter the tests run inside sandboxes and for the ABI probes.
SYSTEM_PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable

# A foreign-ABI socket(AF_INET, SOCK_STREAM, 0): the very code test_sandbox.py runs
# sandboxed, and the probes run outside any sandbox. "before" is printed first so
# that a kill at the syscall is told apart from a failure to start.
I386_SOCKET_CODE = r'''
import ctypes, mmap
def int80(nr, b=0, c=0, d=0):
    code = (bytes([0x53, 0xb8]) + nr.to_bytes(4, "little") + bytes([0xbb]) + b.to_bytes(4, "little")
            + bytes([0xb9]) + c.to_bytes(4, "little") + bytes([0xba]) + d.to_bytes(4, "little")
            + bytes([0xcd, 0x80, 0x5b, 0xc3]))
    m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    m.write(code)
    return ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))()
print("before", flush=True)
print("socket", int80(359, 2, 1, 0), flush=True)
'''
X32_SOCKET_CODE = r'''
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
print("before", flush=True)
r = libc.syscall(ctypes.c_long(0x40000000 + 41), ctypes.c_long(2), ctypes.c_long(1), ctypes.c_long(0))
print("socket", r if r >= 0 else -ctypes.get_errno(), flush=True)
'''

# What a foreign-ABI probe saw outside any sandbox. present: True when the ABI
# answered, False when the host lacks it (the process was killed at the syscall,
# or it returned -ENOSYS), None when the probe itself failed (a test must not
# skip on that); stdout and exit_code (128 + signal when killed, as uexec reports
# it) say how the attempt ended; detail is a sentence for messages.
AbiProbe = collections.namedtuple("AbiProbe", "present detail stdout exit_code")

_MOUNT_NS_PROBE = r'''
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def fail(what, code):
    print("%s: %s" % (what, os.strerror(ctypes.get_errno())))
    sys.exit(code)
outer = os.readlink("/proc/self/ns/mnt")
if os.geteuid() != 0:           # a non-root uexec: a user namespace first, ids mapped to themselves
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(0x10000000) != 0:                              # CLONE_NEWUSER
        fail("unshare(CLONE_NEWUSER) as uid %d (user.max_user_namespaces=%s)" % (
            uid, open("/proc/sys/user/max_user_namespaces").read().strip()), 1)
    for name, text in (("setgroups", "deny"), ("uid_map", "%d %d 1" % (uid, uid)),
                       ("gid_map", "%d %d 1" % (gid, gid))):
        with open("/proc/self/" + name, "w") as f:
            f.write(text)
if libc.unshare(0x20000) != 0:                                     # CLONE_NEWNS
    fail("unshare(CLONE_NEWNS)", 1)
if os.readlink("/proc/self/ns/mnt") == outer:                      # never touch the host's mounts
    print("unshare(CLONE_NEWNS) left the mount namespace unchanged")
    sys.exit(1)
if libc.mount(None, b"/", None, ctypes.c_ulong(0x4000 | 0x80000), None) != 0:   # MS_REC | MS_SLAVE
    fail("mount(/, MS_REC | MS_SLAVE)", 1)
attr = (ctypes.c_uint64 * 4)(1, 0, 0, 0)                           # MOUNT_ATTR_RDONLY
if libc.syscall(ctypes.c_long(442), ctypes.c_long(-100), b"/", ctypes.c_long(0x8000), attr,
                ctypes.c_long(ctypes.sizeof(attr))) != 0:           # mount_setattr AT_RECURSIVE
    fail("mount_setattr(/, AT_RECURSIVE, MOUNT_ATTR_RDONLY)", 2)
print("ok")
'''

_IO_URING_PROBE = r'''
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
params = ctypes.create_string_buffer(120)                           # struct io_uring_params
fd = libc.syscall(ctypes.c_long(425), ctypes.c_long(4), params)
if fd < 0:
    print(os.strerror(ctypes.get_errno()))
    sys.exit(1)
os.close(fd)
print("ok")
'''


def _syscall(nr, *args):
    """(result, errno) of a raw syscall; ints are passed as longs."""
    ctypes.set_errno(0)
    r = _libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a
                                           for a in args])
    return r, ctypes.get_errno() if r < 0 else 0


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _run(argv, timeout=30, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)


def _exit_code(rc):
    """subprocess returncode as uexec reports it (128 + signal for a kill)."""
    return 128 - rc if rc < 0 else rc


def _signame(n):
    try:
        return signal.Signals(n).name
    except ValueError:
        return "signal %d" % n


class HostProbes:
    """Lazy, cached probes of this host (one instance per session: HOST, or the
    `host` fixture). missing(feature) -> None or why; require(*features) skips."""

    FEATURES = {
        "x86_64": "the x86_64 architecture (raw syscall numbers)",
        "root": "uid 0",
        "landlock": "Landlock filesystem rules (ABI >= 1 at the suite's level) for "
                    "restricted reads",
        "landlock-scope": "Landlock signal and abstract-socket scoping (ABI >= %d at the "
                          "suite's level)" % LANDLOCK_ABI_SCOPE,
        "seccomp": "seccomp filters",
        "mount-ns": "mount namespaces with mount_setattr",
        "sandbox": "uexec's process sandbox (seccomp, root, mount namespaces; below Landlock "
                   "ABI 6 also uexec-init)",
        "uexec-init": "uexec-init (sandboxes in their own PID namespace)",
        "cgroup2": "a cgroup v2 hierarchy this process belongs to",
        "bpf": "BPF cgroup socket programs and maps",
        "listener-guard": "the listener guard (sandbox, cgroup v2, BPF, /run, a root uexec)",
        "network-sandbox": "sandboxed processes with network access (a root uexec: a non-root "
                           "one refuses them, it cannot guard its own listener)",
        "root-server": "a uexec running as root (the oracle of unsandboxed control runs)",
        "io_uring": "io_uring",
        "ipv6": "IPv6 on the loopback interface (::1)",
        "unprivileged-server": "a uexec started as nobody (root, setpriv, io_uring for nobody)",
    }

    def __init__(self):
        self._cache = {}

    def _once(self, key, fn):
        if key not in self._cache:
            self._cache[key] = fn()
        return self._cache[key]

    # ---- public

    def missing(self, feature):
        if feature not in self.FEATURES:
            raise ValueError("unknown host feature %r" % feature)
        return getattr(self, "_missing_" + feature.replace("-", "_"))()

    def require(self, *features):
        for feature in features:
            why = self.missing(feature)
            if why:
                pytest.skip("needs %s: %s" % (feature, why))

    def program(self, name):
        """Absolute path of a program (a path, or a name in PATH or an sbin dir), or None."""
        if os.sep in name:
            return name if os.access(name, os.X_OK) else None
        path = os.environ.get("PATH", "/usr/bin:/bin") + ":/usr/local/sbin:/usr/sbin:/sbin"
        return shutil.which(name, path=path)

    def require_programs(self, *names):
        absent = [n for n in names if not self.program(n)]
        if absent:
            pytest.skip("needs %s: not installed on this host" % ", ".join(absent))

    def landlock_abi(self):
        """(abi, why): the kernel's Landlock ABI version (0 when absent) and why it is 0."""
        def probe():
            r, e = _syscall(NR_LANDLOCK_CREATE_RULESET, None, 0, LANDLOCK_CREATE_RULESET_VERSION)
            if r > 0:
                return r, None
            lsm = _read("/sys/kernel/security/lsm")
            why = {errno.ENOSYS: "the kernel has no Landlock (CONFIG_SECURITY_LANDLOCK)",
                   errno.EOPNOTSUPP: "Landlock is built but not enabled (lsm= boot option)"}.get(
                       e, "landlock_create_ruleset: %s" % os.strerror(e))
            if lsm is not None:
                why += "; active LSMs: %s" % lsm
            return 0, why
        return self._once("landlock", probe)

    def landlock_level(self, cap=None):
        """The Landlock ABI uexec's sandboxes use: the kernel's, at most the newest uexec
        knows, capped by cap (a server's --landlock-abi-max; default: the suite's
        $UEXEC_TEST_LANDLOCK_ABI_MAX)."""
        cap = LANDLOCK_ABI_MAX if cap is None else cap
        level = min(self.landlock_abi()[0], LANDLOCK_ABI_NEWEST)
        return level if cap is None else min(level, cap)

    def cgroup2_mounts(self):
        """[(root, mountpoint)] of the cgroup2 mounts, in mountinfo order."""
        out = []
        with open("/proc/self/mountinfo") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                if right.startswith("cgroup2 "):
                    fields = left.split()
                    out.append((_unescape(fields[3]), _unescape(fields[4])))
        return out

    def cgroup_mounts(self):
        """Mount points of every cgroup (v1) and cgroup2 file system."""
        out = []
        with open("/proc/self/mountinfo") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                if right.split(" ", 1)[0] in ("cgroup", "cgroup2"):
                    out.append(_unescape(left.split()[4]))
        return out

    def own_cgroup2_dir(self):
        """(directory, why): this process's cgroup v2 directory, found as uexec finds
        its own (sandbox/netguard.c: the first cgroup2 mount), or None and why."""
        rel = None
        for line in (_read("/proc/self/cgroup") or "").splitlines():
            if line.startswith("0::"):
                rel = line[3:]
        if rel is None:
            return None, "no cgroup v2 membership in /proc/self/cgroup (cgroup v1 only?)"
        mounts = self.cgroup2_mounts()
        if not mounts:
            return None, "no cgroup2 file system is mounted (looked for /sys/fs/cgroup, " \
                         "/sys/fs/cgroup/unified or any other place in /proc/self/mountinfo)"
        root, mnt = mounts[0]
        if root != "/":
            if rel != root and not rel.startswith(root + "/"):
                return None, "own cgroup %s is outside the cgroup2 mount's root %s" % (rel, root)
            rel = rel[len(root):] or "/"
        return (mnt if rel == "/" else mnt + rel), None

    def i386_abi(self):
        """AbiProbe of int 0x80 (absent: CONFIG_IA32_EMULATION off, ia32_emulation=0,
        or a hypervisor that does not deliver it)."""
        return self._once("i386", lambda: self._abi_probe("i386 (int 0x80)", I386_SOCKET_CODE))

    def x32_abi(self):
        """AbiProbe of the x32 ABI (absent: CONFIG_X86_X32_ABI off, the usual case)."""
        return self._once("x32", lambda: self._abi_probe("x32", X32_SOCKET_CODE))

    def uexec_init(self):
        """(path, why): where uexec will find uexec-init, or None and why."""
        return self._once(("init", UEXEC_BIN), self._probe_uexec_init)

    def announcements(self):
        """The log lines a default uexec prints when it starts (from a short-lived
        server), for the few answers only uexec has (its libexecdir)."""
        return self._once(("announce", UEXEC_BIN), self._probe_announcements)

    # ---- the features

    def _missing_x86_64(self):
        m = platform.machine()
        return None if m == "x86_64" else "this host is %s" % m

    def _missing_root(self):
        uid = os.geteuid()
        return None if uid == 0 else "the tests run as uid %d" % uid

    def _missing_landlock(self):
        abi, why = self.landlock_abi()
        if self.landlock_level() >= 1:
            return None
        if abi:
            return "the suite runs at Landlock level 0 (UEXEC_TEST_LANDLOCK_ABI_MAX=0)"
        return why

    def _missing_landlock_scope(self):
        level = self.landlock_level()
        if level >= LANDLOCK_ABI_SCOPE:
            return None
        if level < self.landlock_abi()[0]:
            return "the suite runs at Landlock level %d (UEXEC_TEST_LANDLOCK_ABI_MAX)" % level
        return "Landlock ABI %d (scoping needs %d, kernel >= 6.12)" % (level, LANDLOCK_ABI_SCOPE)

    def _missing_seccomp(self):
        status = _read("/proc/self/status") or ""
        if not re.search(r"^Seccomp:", status, re.M):
            return "the kernel has no seccomp (no Seccomp: line in /proc/self/status)"
        return None

    def _missing_mount_ns(self):
        """As the uid the servers run as (run_as()): root, or a non-root uid in a user
        namespace of its own (sandbox/sandbox.c probe_userns)."""
        ids = run_as()

        def probe():
            if os.geteuid() != 0:
                return "uexec needs root for mount namespaces (the tests run as uid %d)" % os.geteuid()
            argv = [SYSTEM_PYTHON, "-c", _MOUNT_NS_PROBE]
            if ids:
                why = self.missing("unprivileged-server")
                if why:
                    return why
                argv = [self.program("setpriv"), "--reuid=%d" % ids[0], "--regid=%d" % ids[1],
                        "--clear-groups"] + argv
            p = _run(argv, cwd="/")
            if p.returncode == 0 and p.stdout.strip() == "ok":
                return None
            return (p.stdout.strip() or p.stderr.strip()[-300:] or "probe exited %d" % p.returncode)
        return self._once(("mount-ns", ids), probe)

    def _missing_sandbox(self):
        # the order of sandbox_probe() in sandbox/sandbox.c, then sandbox_plan_new():
        # below ABI 6 only uexec-init's PID namespace scopes signals
        for feature in ("seccomp", "mount-ns"):
            why = self.missing(feature)
            if why:
                return why
        if self.landlock_level() < LANDLOCK_ABI_SCOPE and self.uexec_init()[1]:
            return "below Landlock ABI %d (here %d) signals are scoped by uexec-init's PID " \
                "namespace: %s" % (LANDLOCK_ABI_SCOPE, self.landlock_level(), self.uexec_init()[1])
        return None

    def _missing_uexec_init(self):
        return self.missing("sandbox") or self.uexec_init()[1]

    def _missing_cgroup2(self):
        return self.own_cgroup2_dir()[1]

    def _missing_bpf(self):
        return self._once("bpf", _probe_bpf)

    def _missing_root_server(self):
        if run_as():
            return "uexec runs as uid %d (UEXEC_TEST_AS_UID)" % run_as()[0]
        return self.missing("root")

    def _missing_network_sandbox(self):
        return self.missing("sandbox") or self.missing("root-server")

    def _missing_listener_guard(self):
        for feature in ("sandbox", "cgroup2", "bpf", "root-server"):
            why = self.missing(feature)
            if why:
                return why
        d, _ = self.own_cgroup2_dir()
        if not os.access(d, os.W_OK):
            return "cannot create a cgroup under %s (read-only or not delegated)" % d
        if not (os.path.isdir("/run") and os.access("/run", os.W_OK)):
            return "/run is not a writable directory (uexec keeps the guard's lock there)"
        return None

    def _missing_io_uring(self):
        def probe():
            why = None
            p = _run([sys.executable, "-c", _IO_URING_PROBE])
            if p.returncode != 0:
                why = "io_uring_setup: %s (kernel.io_uring_disabled=%s)" % (
                    p.stdout.strip() or p.stderr.strip()[-200:],
                    _read("/proc/sys/kernel/io_uring_disabled"))
            else:
                rel = re.match(r"(\d+)\.(\d+)", platform.release())
                if rel and (int(rel.group(1)), int(rel.group(2))) < (5, 19):
                    why = "kernel %s: uexec needs provided buffer rings (>= 5.19)" % platform.release()
            return why
        return self._once("io_uring", probe)

    def _missing_ipv6(self):
        return self.ipv6_error()[1]

    def ipv6_error(self):
        """(errno name, why) of socket(AF_INET6) + bind(::1) failing here, or (None, None)."""
        def probe():
            import socket
            try:
                with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as so:
                    so.bind(("::1", 0))
            except OSError as e:
                name = errno.errorcode.get(e.errno, str(e.errno))
                return name, "an IPv6 socket on ::1 fails here: %s (ipv6.disable=1 or " \
                             "net.ipv6.conf.lo.disable_ipv6=1?)" % name
            return None, None
        return self._once("ipv6", probe)

    def _missing_unprivileged_server(self):
        def probe():
            setpriv = self.program("setpriv")
            why = ("switching to uid %d needs root (the tests run as uid %d)" % (NOBODY, os.geteuid())
                   if os.geteuid() != 0 else None if setpriv else "setpriv (util-linux) is not installed")
            if why:
                return why
            as_nobody = [setpriv, "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups"]
            p = _run(as_nobody + [os.path.abspath(UEXEC_BIN), "--help"], cwd="/")
            if p.returncode != 0:
                return ("uid %d cannot run %s (%s): is a parent directory closed to others?"
                        % (NOBODY, UEXEC_BIN, (p.stderr.strip() or "exit %d" % p.returncode)[-200:]))
            p = _run(as_nobody + [SYSTEM_PYTHON, "-c", _IO_URING_PROBE], cwd="/")
            if p.returncode != 0:
                return "io_uring for uid %d: %s (kernel.io_uring_disabled=%s)" % (
                    NOBODY, (p.stdout.strip() or p.stderr.strip())[-200:],
                    _read("/proc/sys/kernel/io_uring_disabled"))
            return None
        return self._once(("nobody", UEXEC_BIN), probe)

    # ---- probe bodies

    def _abi_probe(self, name, code):
        try:
            p = subprocess.run([SYSTEM_PYTHON, "-c", code], capture_output=True, timeout=30)
        except subprocess.TimeoutExpired:
            return AbiProbe(None, "the %s probe hung" % name, b"", None)
        out, rc = p.stdout, _exit_code(p.returncode)
        m = re.fullmatch(rb"before\nsocket (-?\d+)\n", out)
        if p.returncode < 0:
            return AbiProbe(False, "a %s syscall outside any sandbox killed the process with %s "
                            "(exit %d): the host does not provide this ABI"
                            % (name, _signame(-p.returncode), rc), out, rc)
        if p.returncode != 0 or not m:
            return AbiProbe(None, "the %s probe failed outside any sandbox: exit %d, %r"
                            % (name, rc, (out + p.stderr)[-300:]), out, rc)
        r = int(m.group(1))
        if r == -errno.ENOSYS:
            return AbiProbe(False, "a %s syscall outside any sandbox returned -ENOSYS: the "
                            "kernel does not provide this ABI" % name, out, rc)
        if r >= 0:
            return AbiProbe(True, "a %s socket() outside any sandbox returned fd %d" % (name, r),
                            out, rc)
        return AbiProbe(True, "a %s socket() outside any sandbox returned %s (the ABI answers)"
                        % (name, errno.errorcode.get(-r, r)), out, rc)

    def _probe_uexec_init(self):
        beside = os.path.join(os.path.dirname(os.path.realpath(UEXEC_BIN)), "uexec-init")
        if os.path.exists(beside):
            return beside, None
        # not beside the binary: uexec also looks in its libexecdir, a build-time
        # path only uexec knows; it says when it found neither
        for line in self.announcements():
            m = re.search(r"Cannot open (\S+): sandboxed processes will share", line)
            if m:
                return None, "%s is missing and so is %s" % (beside, m.group(1))
        return "(uexec's libexecdir)", None

    def _probe_announcements(self):
        if not os.access(UEXEC_BIN, os.X_OK):
            return []
        p = subprocess.Popen([UEXEC_BIN, "--listen", "ws://127.0.0.1:0"], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
        try:
            p.stdout.readline()          # the URL: the start-up lines are written by now
        finally:
            p.send_signal(signal.SIGTERM)
            try:
                _, err = p.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                _, err = p.communicate()
        return err.decode("utf-8", "replace").splitlines()


def _unescape(s):
    """mountinfo's octal escapes (\\040 for a space)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


def _probe_bpf():
    """None if this process can load a cgroup connect4 program and create a hash map
    (what the listener guard does), else why not."""
    if os.geteuid() != 0:
        return "loading cgroup BPF programs needs root (the tests run as uid %d)" % os.geteuid()

    def bpf(cmd, attr):
        buf = ctypes.create_string_buffer(bytes(attr), 128)
        return _syscall(NR_BPF, cmd, buf, 128)

    # BPF_MAP_CREATE: BPF_MAP_TYPE_HASH, key 4, value 4, 1 entry
    fd, e = bpf(0, struct.pack("<IIII", 1, 4, 4, 1))
    if fd < 0:
        return "bpf(BPF_MAP_CREATE): %s (kernel.unprivileged_bpf_disabled=%s)" % (
            os.strerror(e), _read("/proc/sys/kernel/unprivileged_bpf_disabled"))
    os.close(fd)
    # BPF_PROG_LOAD: BPF_PROG_TYPE_CGROUP_SOCK_ADDR / BPF_CGROUP_INET4_CONNECT, "r0 = 1; exit"
    insns = ctypes.create_string_buffer(struct.pack("<BBhiBBhi", 0xb7, 0, 0, 1, 0x95, 0, 0, 0), 16)
    lic = ctypes.create_string_buffer(b"GPL")
    attr = bytearray(128)
    struct.pack_into("<IIQQ", attr, 0, 18, 2, ctypes.addressof(insns), ctypes.addressof(lic))
    struct.pack_into("<I", attr, 68, 10)
    fd, e = bpf(5, attr)
    if fd < 0:
        return "bpf(BPF_PROG_LOAD) of a cgroup connect4 program: %s (CONFIG_CGROUP_BPF?)" % \
            os.strerror(e)
    os.close(fd)
    return None


HOST = HostProbes()


@pytest.fixture(scope="session")
def host():
    """The session's HostProbes (HOST)."""
    return HOST


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """needs(...) and needs_programs(...) markers: skip before any fixture starts a server."""
    for mark in item.iter_markers("needs"):
        HOST.require(*mark.args)
    for mark in item.iter_markers("needs_programs"):
        HOST.require_programs(*mark.args)


def login_shell():
    """The login shell of the uid the tests (and uexec) run as; skips without a passwd entry."""
    try:
        return pwd.getpwuid(os.getuid()).pw_shell
    except KeyError:
        pytest.skip("needs a passwd entry for uid %d: uexec reports its login shell" % os.getuid())


def guard_cgroup(server):
    """The listener guard's cgroup directory, as the server announced it."""
    m = re.search(r"Listener guard: sandboxed processes cannot connect to port %d \(cgroup (.+)\)$"
                  % server.port, server.log(), re.M)
    assert m, "the server did not announce its listener guard:\n" + server.stderr_tail()
    return m.group(1)


def require_guard(server, shared=False):
    """The server must have set the listener guard up: the `listener-guard` probe
    (checked by the test's needs marker) says this host can. shared: the guard's
    port map must also be the host-wide one shared by every uexec."""
    log = server.log()
    bad = [l for l in log.splitlines() if "Listener guard unavailable" in l
           or (shared and "only this server's port is guarded" in l)]
    assert not bad, "the host probes say the listener guard can work here, but: %s" % bad[0]
    guard_cgroup(server)
