# SPDX-License-Identifier: MIT
"""A cgroup per process, limits and no orphans (issue 15 items 1-3; README.md
"Protocol extensions", docs/ARCHITECTURE.md "No orphans").

Every process uexec starts lives with all its descendants in a leaf cgroup of
its own: process/terminate, timeouts, session expiry and shutdown kill the
whole tree (setsid cannot escape), limits apply to the tree, and the leaf goes
when empty. If uexec dies, even by SIGKILL, its processes die too; what a
previous instance left is swept at start-up.

Every check looks at the host itself (cgroup files, /proc), never at paths of
one machine; tests that need per-process cgroups skip with the reason where
the host has no writable cgroup v2."""

import os
import re
import signal
import statistics
import threading
import time

import pytest

from conftest import EVENT_TIMEOUT, HOST, Server, children_of, pid_alive, wait_until
from wsclient import unb64

pytestmark = pytest.mark.needs_programs("/bin/sh", "/bin/sleep", "/bin/true", "setsid")

ENV = {"PATH": "/usr/bin:/bin"}
PY = "/usr/bin/python3"
KINDS = ("pids", "memory", "cpu")


def sh(script):
    return ["/bin/sh", "-c", script]


def cgroup_why():
    """None when uexec can make per-process cgroups here (root, a writable cgroup v2
    directory of its own), else why not."""
    if os.geteuid() != 0:
        return "per-process cgroups need root or a delegated cgroup (uid %d)" % os.geteuid()
    d, why = HOST.own_cgroup2_dir()
    if why:
        return why
    if not os.access(d, os.W_OK):
        return "cannot create a cgroup under %s" % d
    return None


def v1_dir(ctrl):
    """This process's directory in the v1 hierarchy of ctrl, or None."""
    rel = None
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            if ctrl in ctrls.split(","):
                rel = path
    if rel is None:
        return None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            r = right.split()
            if r and r[0] == "cgroup" and ctrl in r[-1].split(","):
                root, mnt = left.split()[3], left.split()[4]
                if root != "/" and not rel.startswith(root):
                    return None
                rel2 = rel[len(root):] if root != "/" else rel
                return mnt + (rel2 if rel2 != "/" else "")
    return None


def limit_where(ctrl):
    """'v2', 'v1' or None: where uexec can enforce limits of ctrl on this host."""
    if cgroup_why() is None:
        d, _ = HOST.own_cgroup2_dir()
        with open(os.path.join(d, "cgroup.controllers")) as f:
            if ctrl in f.read().split():
                return "v2"
    d = v1_dir(ctrl)
    return "v1" if d and os.access(d, os.W_OK) else None


def needs_cgroups():
    why = cgroup_why()
    if why:
        pytest.skip(why)


def needs_limit(*ctrls):
    needs_cgroups()
    for c in ctrls:
        if not limit_where(c):
            pytest.skip("no %s controller available (cgroup v2 or v1)" % c)


def base_dir(server):
    return os.path.join(HOST.own_cgroup2_dir()[0], "uexec-%d.procs" % server.pid)


def server_dirs(pid, own=None):
    """Every cgroup directory uexec `pid` made (v2 and v1), that still exists. own: the v2
    cgroup uexec ran in (default: this process's)."""
    own = own or HOST.own_cgroup2_dir()[0]
    out = [os.path.join(own, "uexec-%d.%s" % (pid, s)) for s in ("procs", "sandbox")]
    for c in KINDS:
        d = v1_dir(c)
        if d:
            out.append(os.path.join(d, "uexec-%d.procs" % pid))
    return [d for d in out if os.path.isdir(d)]


def leaves(server):
    d = base_dir(server)
    return sorted(e for e in os.listdir(d) if os.path.isdir(os.path.join(d, e)))


def marked(marker):
    """Pids of live processes whose environment holds marker."""
    out = []
    needle = marker.encode()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % d, "rb") as f:
                env = f.read()
        except OSError:
            continue
        if needle in env and pid_alive(int(d)):
            out.append(int(d))
    return out


def cgroup_of(pid):
    with open("/proc/%d/cgroup" % pid) as f:
        return [l for l in f.read().splitlines() if l.startswith("0::")][0][3:]


@pytest.fixture
def marker(uniq):
    m = "UEXEC_CG_MARK=%s-%d" % (uniq("m"), time.monotonic_ns())
    yield m
    for p in marked(m):   # never leave anything behind, whatever the test did
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def menv(marker):
    k, v = marker.split("=", 1)
    return dict(ENV, **{k: v})


DAEMON = "setsid sh -c 'sleep 1000 & sleep 1000' & sleep 1000 & echo started"


# ---- capabilities and the layout


def test_capabilities_match_host(client):
    caps = client.init_result["environmentInfo"]["capabilities"]
    assert caps["uexecProcessCgroup"] is (cgroup_why() is None)
    for name, ctrl in (("Pids", "pids"), ("Memory", "memory"), ("Cpu", "cpu")):
        assert caps["uexecProcessLimit" + name] is (limit_where(ctrl) is not None), ctrl


def test_startup_log_names_layout(server):
    log = server.stderr().decode()
    line = [l for l in log.splitlines() if "Per-process cgroups" in l]
    assert len(line) == 1, log
    if cgroup_why() is None:
        assert "v2 leaves under %s" % base_dir(server) in line[0], line[0]
    else:
        assert "unavailable" in line[0], line[0]
    for c in KINDS:
        w = limit_where(c)
        assert ("%s (v2)" % c if w == "v2" else "%s (v1 hierarchy)" % c if w == "v1" else
                "%s unavailable" % c) in line[0], (c, line[0])


def test_cgroups_off(server_factory, uniq):
    srv = server_factory("--process-cgroups", "off")
    c = srv.connect()
    caps = c.init_result["environmentInfo"]["capabilities"]
    assert caps["uexecProcessCgroup"] is False
    assert not os.path.exists(os.path.join(HOST.own_cgroup2_dir()[0] or "/nonexistent",
                                           "uexec-%d.procs" % srv.pid))
    pid = uniq("off")
    c.start(pid, sh("cat /proc/self/cgroup"), env=ENV)
    run = c.collect(pid)
    assert ".procs/p" not in run.stdout.decode()
    # limits need the cgroups: refused with a clear error, no process started
    e = c.error("process/start", c.start_params(uniq("lim"), limits={"pidsMax": 10}))
    assert e["code"] == -32602 and "cannot be enforced" in e["message"], e


def test_bad_cli_values(tmp_path):
    import subprocess
    from conftest import UEXEC_BIN
    for args in (["--process-cgroups", "maybe"], ["--process-memory-max", "12"],
                 ["--process-memory-max", "1X"], ["--process-cpu-max", "0"],
                 ["--process-cpu-max", "abc"], ["--process-pids-max", "0"]):
        p = subprocess.run([UEXEC_BIN] + args, capture_output=True, timeout=60)
        assert p.returncode == 2 and b"invalid value" in p.stderr, (args, p.stderr)


# ---- item 1: the leaf, the whole-tree kill, removal


def test_process_in_own_leaf_removed_when_empty(server, uniq):
    needs_cgroups()
    c = server.connect()
    pid = uniq("leaf")
    c.start(pid, sh("cat /proc/self/cgroup; sh -c 'cat /proc/self/cgroup'"), env=ENV)
    run = c.collect(pid)
    lines = [l for l in run.stdout.decode().splitlines() if l.startswith("0::")]
    assert len(lines) == 2 and lines[0] == lines[1], run.stdout
    rel = lines[0][3:]
    assert re.fullmatch(r".*/uexec-%d\.procs/p\d+" % server.pid, rel), rel
    leaf = os.path.join(base_dir(server), os.path.basename(rel))
    wait_until(lambda: not os.path.exists(leaf), what="the leaf's removal")
    # two processes, two leaves
    a, b = uniq("a"), uniq("b")
    c.start(a, ["/bin/sleep", "30"], env=ENV)
    c.start(b, ["/bin/sleep", "30"], env=ENV)
    assert len(leaves(server)) == 2
    c.terminate(a)
    c.terminate(b)
    c.collect(a)
    c.collect(b)
    wait_until(lambda: leaves(server) == [], what="no leaf left")


@pytest.mark.parametrize("tty", [False, True])
def test_terminate_kills_setsid_daemons(server, uniq, marker, tty):
    """process/terminate kills the whole tree: setsid and background children too."""
    needs_cgroups()
    c = server.connect()
    pid = uniq("d")
    c.start(pid, sh(DAEMON + "; sleep 1000"), env=menv(marker), tty=tty)
    c.collect_until_output(pid, "started")
    wait_until(lambda: len(marked(marker)) >= 5, what="the daemons")
    assert c.terminate(pid) == {"running": True}
    wait_until(lambda: marked(marker) == [], what="every process of the tree gone")
    c.collect(pid)
    wait_until(lambda: leaves(server) == [], what="the leaf removed")


def test_terminate_after_exit_kills_what_it_left(server, uniq, marker):
    """`setsid sh -c 'sleep 1000 &'`: the process exits at once, its daemon stays (as on
    the reference) until process/terminate, which now kills it."""
    needs_cgroups()
    c = server.connect()
    pid = uniq("left")
    c.start(pid, sh("setsid sh -c 'sleep 1000 &'"), env=menv(marker))
    c.collect(pid, until="process/exited")
    wait_until(lambda: len(marked(marker)) == 1, what="the daemon")
    assert len(leaves(server)) == 1    # still populated: kept
    assert c.terminate(pid) == {"running": False}
    wait_until(lambda: marked(marker) == [], what="the daemon killed")
    c.collect(pid)
    wait_until(lambda: leaves(server) == [], what="the leaf removed")


def test_leaf_removed_when_background_child_ends(server, uniq, tmp_path):
    """A leaf kept by a background child that closed its output goes when the child ends
    (cgroup.events polled on the ring)."""
    needs_cgroups()
    c = server.connect()
    pid = uniq("bg")
    go = tmp_path / "go"
    c.start(pid, sh("(while [ ! -e %s ]; do sleep 0.02; done) >/dev/null 2>&1 </dev/null &"
                    % go), env=ENV)
    c.collect(pid)
    assert len(leaves(server)) == 1      # the child lives until `go`
    go.touch()
    wait_until(lambda: leaves(server) == [], what="the leaf removed after the child")


def test_session_expiry_kills_daemons(server_factory, uniq, marker):
    needs_cgroups()
    srv = server_factory("--resume-window-ms", "300")
    c = srv.connect()
    pid = uniq("exp")
    c.start(pid, sh("setsid sh -c 'sleep 1000 &'; " + DAEMON), env=menv(marker))
    c.collect_until_output(pid, "started")
    wait_until(lambda: len(marked(marker)) >= 4, what="the daemons")
    c.ws.abort()
    wait_until(lambda: marked(marker) == [], what="the session's processes gone")
    wait_until(lambda: leaves(srv) == [], what="no leaf left")


def test_timeout_kills_tree(server, uniq, marker):
    needs_cgroups()
    c = server.connect()
    pid = uniq("to")
    c.start(pid, sh("trap '' TERM; " + DAEMON + "; sleep 1000"), env=menv(marker),
            timeoutMs=300)
    run = c.collect(pid)
    assert run.exited["timedOut"] is True
    wait_until(lambda: marked(marker) == [], what="the tree killed at the timeout")


def test_timeout_kills_daemon_of_closed_process(server, uniq, marker):
    """The process dies of the SIGTERM and is closed at once; its setsid daemon (output
    elsewhere, SIGTERM ignored) goes too."""
    needs_cgroups()
    c = server.connect()
    pid = uniq("to2")
    c.start(pid, sh("setsid sh -c \"trap '' TERM; sleep 1000 >/dev/null 2>&1\" "
                    ">/dev/null 2>&1 </dev/null & sleep 1000"), env=menv(marker),
            timeoutMs=300)
    run = c.collect(pid)
    assert run.exited["timedOut"] is True and run.exit_code == 143, run.exited
    wait_until(lambda: marked(marker) == [], what="the daemon killed")


def test_shutdown_kills_everything(server_factory, uniq, marker):
    needs_cgroups()
    srv = server_factory()
    reaper = reaper_of(srv)
    assert reaper and pid_alive(reaper), srv.stderr_tail()
    assert reaper not in children_of(srv.pid)   # not uexec's child: its children are commands
    c = srv.connect()
    pid = uniq("sd")
    c.start(pid, sh("setsid sh -c 'sleep 1000 &'"), env=menv(marker))
    c.collect(pid, until="process/exited")
    wait_until(lambda: len(marked(marker)) == 1, what="the daemon")
    assert srv.terminate() == 0
    # its cgroups are gone, so no task is left in them; a killed task may still be a
    # moment from being a zombie
    assert server_dirs(srv.pid) == []
    wait_until(lambda: marked(marker) == [], what="the daemon dead")
    wait_until(lambda: not pid_alive(reaper), what="the supervisor gone too")


# ---- item 3: no orphans


def start_tree(c, uniq, marker):
    """Processes of every kind: pipes, a PTY, setsid daemons, a double fork."""
    for i, tty in enumerate((False, True, False)):
        pid = uniq("t%d" % i)
        c.start(pid, sh(DAEMON + "; (sh -c 'sleep 1000 &' &); sleep 1000"), env=menv(marker),
                tty=tty)
        c.collect_until_output(pid, "started")
    wait_until(lambda: len(marked(marker)) >= 18, what="the trees")


def reaper_of(server):
    """The supervisor uexec started (it says its pid at start), or None."""
    m = re.search(r"No orphans: pid (\d+) \(uexec-reaper\)", server.stderr().decode())
    if not m:
        return None
    pid = int(m.group(1))

    def named():
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip() == "uexec-reaper"
    # uexec logs the pid when the fork returns: the supervisor names itself a moment later
    wait_until(named, what="the supervisor named uexec-reaper")
    return pid


def test_sigkill_kills_direct_children_without_cgroups(tmp_path, uniq, marker):
    """Even without cgroups the processes uexec started (its direct children) die with it
    (PR_SET_PDEATHSIG), pipes and PTY alike."""
    srv = Server(("--process-cgroups", "off"), logdir=str(tmp_path))
    try:
        c = srv.connect()
        for i, tty in enumerate((False, True)):
            c.start(uniq("k%d" % i), ["/bin/sleep", "1000"], env=menv(marker), tty=tty)
        wait_until(lambda: len(marked(marker)) == 2, what="the children")
        srv.proc.send_signal(signal.SIGKILL)
        srv.proc.wait()
        wait_until(lambda: marked(marker) == [], what="the children dead with uexec")
    finally:
        srv.stopped = True
        if srv.proc.poll() is None:
            srv.proc.kill()


@pytest.mark.parametrize("group", [False, True])
def test_sigkill_leaves_no_process(tmp_path, uniq, marker, group):
    """SIGKILL of uexec (alone, or its whole process group, as a parent killing its
    child's tree would): every process it started dies (the direct children by
    PR_SET_PDEATHSIG, the rest through the cgroups, by the supervisor)."""
    needs_cgroups()
    srv = Server((), logdir=str(tmp_path))
    try:
        c = srv.connect()
        start_tree(c, uniq, marker)
        if group:
            os.killpg(srv.pid, signal.SIGKILL)   # started with a session of its own
        else:
            srv.proc.send_signal(signal.SIGKILL)
        srv.proc.wait()
        wait_until(lambda: marked(marker) == [],
                   what="no process of the killed uexec left")
        wait_until(lambda: server_dirs(srv.pid) == [], what="its cgroups removed")
    finally:
        srv.stopped = True
        if srv.proc.poll() is None:
            srv.proc.kill()


def private_cgroup():
    """(directory, launcher): a new child of this process's cgroup v2 directory, and a
    Server launcher that moves uexec into it. A uexec sweeps what dead servers left in its
    own cgroup only: the servers other test files start meanwhile (they run side by side)
    never sweep what is left in this one."""
    d = os.path.join(HOST.own_cgroup2_dir()[0], "uexec-test-%d-%d" % (os.getpid(),
                                                                      time.monotonic_ns()))
    os.mkdir(d)
    return d, ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', d]


def test_leftover_sweep(tmp_path, uniq, marker):
    """Supervisor and uexec both SIGKILLed: the setsid daemons survive (only the direct
    children die with uexec), and the next uexec kills them and removes the cgroups. Both
    run in a cgroup of their own (private_cgroup()): the next uexec is b."""
    needs_cgroups()
    own, launcher = private_cgroup()
    try:
        a = Server((), logdir=str(tmp_path), launcher=launcher)
        try:
            c = a.connect()
            start_tree(c, uniq, marker)
            reaper = reaper_of(a)
            assert reaper, "uexec has no supervisor"
            os.kill(reaper, signal.SIGKILL)
            wait_until(lambda: not pid_alive(reaper), what="the supervisor killed")
            a.proc.send_signal(signal.SIGKILL)
            a.proc.wait()
            left = marked(marker)   # the setsid daemons outlive both (nothing else kills them)
            assert left, ("nothing survived: the sweep would have nothing to do",
                          server_dirs(a.pid, own))
            assert server_dirs(a.pid, own), "the killed uexec's cgroups are gone already"
        finally:
            a.stopped = True
            if a.proc.poll() is None:
                a.proc.kill()
        b = Server((), logdir=str(tmp_path), launcher=launcher)
        try:
            wait_until(lambda: marked(marker) == [], what="the sweep killing them")
            assert server_dirs(a.pid, own) == []
            assert re.search(r"Removed the cgroup \S+uexec-%d\.procs left by uexec %d"
                             % (a.pid, a.pid), b.stderr().decode()), b.stderr_tail()
        finally:
            b.check_stop()
    finally:
        wait_until(lambda: _rmdir_ok(own), what="the test's cgroup to be removed")


def _rmdir_ok(d):
    try:
        os.rmdir(d)
        return True
    except FileNotFoundError:
        return True
    except OSError:
        return False


# ---- item 2: limits


def test_limits_errors(server_factory, uniq):
    needs_limit("pids", "memory", "cpu")
    srv = server_factory("--process-pids-max", "100", "--process-memory-max", "256M",
                         "--process-cpu-max", "1.5")
    c = srv.connect()

    def err(limits):
        e = c.error("process/start", c.start_params(uniq("e"), limits=limits))
        assert e["code"] == -32602, e
        return e["message"]

    assert err({"pidsMax": 101}) == \
        "limits.pidsMax 101 is above the server's ceiling 100 (--process-pids-max)"
    assert err({"memoryMaxBytes": 512 << 20}) == ("limits.memoryMaxBytes 536870912 is above "
                                                  "the server's ceiling 268435456 "
                                                  "(--process-memory-max)")
    assert err({"cpuMaxMillicpu": 1501}) == \
        "limits.cpuMaxMillicpu 1501 is above the server's ceiling 1500 (--process-cpu-max)"
    assert err({"pidsMax": 0}) == \
        "invalid value: integer `0`, expected limits.pidsMax between 1 and 4194304"
    assert "expected limits.memoryMaxBytes between 1048576" in err({"memoryMaxBytes": 4096})
    assert "expected limits.cpuMaxMillicpu between 10" in err({"cpuMaxMillicpu": 5})
    assert err({"pidsMax": "10"}) == 'invalid type: string "10", expected u64'
    assert err({"memoryMax": 1 << 30}).startswith("unknown field `memoryMax`")
    assert "expected struct ProcessLimits" in err([1])
    assert c.result("process/list")["processes"] == []   # nothing started


def limit_file(server, leaf, ctrl, name):
    """The value of a limit file of a process's leaf, in v2 or in ctrl's v1 hierarchy."""
    if limit_where(ctrl) == "v2":
        p = os.path.join(base_dir(server), leaf, name[ctrl][0])
    else:
        p = os.path.join(v1_dir(ctrl), "uexec-%d.procs" % server.pid, leaf, name[ctrl][1])
    with open(p) as f:
        return f.read().strip()


def test_limits_applied(server_factory, uniq):
    needs_limit("pids", "memory", "cpu")
    srv = server_factory("--process-pids-max", "100", "--process-cpu-max", "2")
    c = srv.connect()
    files = {"pids": ("pids.max", "pids.max"), "memory": ("memory.max", "memory.limit_in_bytes"),
             "cpu": ("cpu.max", "cpu.cfs_quota_us")}
    pid = uniq("lim")
    c.start(pid, ["/bin/sleep", "30"], env=ENV, limits={"memoryMaxBytes": 64 << 20,
                                                       "cpuMaxMillicpu": 500})
    leaf = os.path.basename(cgroup_of(c.read(pid) and marked_pid(c, pid)))
    assert limit_file(srv, leaf, "pids", files) == "100"           # the server's default
    assert limit_file(srv, leaf, "memory", files) == str(64 << 20)
    cpu = limit_file(srv, leaf, "cpu", files)
    assert cpu in ("50000 100000", "50000"), cpu
    c.terminate(pid)
    c.collect(pid)


def marked_pid(c, process_id):
    return [p for p in c.result("process/list")["processes"]
            if p["processId"] == process_id][0]["pid"]


@pytest.mark.needs_programs(PY)
def test_memory_limit_reports_oom(server, uniq):
    """A 4 GiB allocation in 64 MiB: OOM-killed, said on process/exited; a process with a
    memory limit it did not reach says false, one without a limit has no new member."""
    needs_limit("memory")
    c = server.connect()
    pid = uniq("oom")
    # a child killed, the process itself survives: still said
    run = c.run(pid, sh("%s -c 'bytearray(4 << 30)'; echo survived" % PY), env=ENV,
                limits={"memoryMaxBytes": 64 << 20})
    assert run.exited["oomKilled"] is True and b"survived" in run.stdout, run.exited
    assert run.exit_code == 0
    run = c.run(pid + "b", [PY, "-c",
                            "b = bytearray(4 << 30); print('alive')"],
                env=ENV, limits={"memoryMaxBytes": 64 << 20})
    assert run.exited["oomKilled"] is True and run.exit_code == 137, run.exited
    assert b"alive" not in run.stdout
    assert re.search(r"process '%sb' \(pid \d+\) reached its memory limit: OOM-killed" % pid,
                     server.stderr().decode()), server.stderr_tail()
    run = c.run(pid + "c", ["/bin/true"], env=ENV, limits={"memoryMaxBytes": 64 << 20})
    assert run.exited["oomKilled"] is False
    run = c.run(pid + "d", ["/bin/true"], env=ENV)
    assert list(run.exited) == ["processId", "seq", "exitCode", "sandboxDenied"]


@pytest.mark.needs_programs(PY)
def test_server_memory_default_adds_no_member_to_reference_frames(server_factory, uniq):
    """--process-memory-max limits every process, but only a start that sent `limits`
    (the extension) gets oomKilled on process/exited: a reference client's frame is the
    reference's, also when its process is OOM-killed."""
    needs_limit("memory")
    srv = server_factory("--process-memory-max", str(64 << 20))
    c = srv.connect()
    pid = uniq("dflt")
    run = c.run(pid, [PY, "-c", "b = bytearray(4 << 30); print('alive')"], env=ENV)
    assert run.exit_code == 137 and b"alive" not in run.stdout, run.exited  # the limit holds
    assert list(run.exited) == ["processId", "seq", "exitCode", "sandboxDenied"], run.exited
    run = c.run(pid + "b", ["/bin/true"], env=ENV)
    assert list(run.exited) == ["processId", "seq", "exitCode", "sandboxDenied"], run.exited
    # the extension still says it where asked, the server's default being the limit
    run = c.run(pid + "c", [PY, "-c", "b = bytearray(4 << 30)"], env=ENV,
                limits={"pidsMax": 100})
    assert run.exited.get("oomKilled") is True and run.exit_code == 137, run.exited


def spawn_latency(url, n, out, stop=None):
    """process/start of /bin/true to process/closed, on a connection of its own."""
    import wsclient
    c = wsclient.connect(url)
    i = 0
    try:
        while (stop is None and i < n) or (stop is not None and not stop.is_set()):
            t = time.monotonic()
            run = c.run("lat-%d" % i, ["/bin/true"], env=ENV)
            out.append((time.monotonic() - t, run.exit_code))
            i += 1
    finally:
        c.ws.abort()


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p))] * 1000


READ_ONLY_SANDBOX = {
    "permissions": {"type": "managed", "network": "restricted",
                    "file_system": {"type": "restricted", "entries": [
                        {"path": {"type": "special", "value": {"kind": "root"}},
                         "access": "read"}]}},
    "windowsSandboxLevel": "disabled"}


@pytest.mark.needs_programs(PY, "/bin/bash")
@pytest.mark.parametrize("sandboxed", [False, True])
def test_bombs_contained(server, uniq, marker, sandboxed):
    """A fork bomb (pidsMax 64) and a 4 GiB allocation (memoryMaxBytes 64 MiB), each held
    to half a CPU, sandboxed or not, while another connection's spawn->exit latency is sampled: every sampled
    spawn succeeds, the bomb never holds more than 64 tasks, the allocation is OOM-killed
    again and again, everything is gone after terminate. The p50/p99 are printed
    (bench/, not asserts, make performance claims)."""
    needs_limit("pids", "memory", "cpu")
    extra = {}
    if sandboxed:
        HOST.require("sandbox")
        extra = {"sandbox": READ_ONLY_SANDBOX}
    before = []
    spawn_latency(server.url, 100, before)
    c = server.connect()
    bomb = uniq("bomb")
    # The bomb waits a second before it forks, so that the test can see its pids limit
    # in place first: a server that ignored `limits` must fail this test, not the host.
    c.start(bomb, ["/bin/bash", "-c", "sleep 1; f() { f | f & }; f; sleep 1000"],
            env=menv(marker),
            limits={"pidsMax": 64, "memoryMaxBytes": 256 << 20, "cpuMaxMillicpu": 500}, **extra)
    mem = uniq("mem")
    c.start(mem, sh("while :; do %s -c 'bytearray(4 << 30)'; echo oom; done" % PY),
            env=menv(marker), limits={"memoryMaxBytes": 64 << 20, "cpuMaxMillicpu": 500},
            **extra)
    leaf = os.path.basename(cgroup_of(marked_pid(c, bomb)))
    if limit_where("pids") == "v2":
        cur = os.path.join(base_dir(server), leaf, "pids.current")
    else:
        cur = os.path.join(v1_dir("pids"), "uexec-%d.procs" % server.pid, leaf, "pids.current")
    with open(os.path.join(os.path.dirname(cur), "pids.max")) as f:
        pids_max = f.read().strip()
    if pids_max != "64":
        c.terminate(bomb)
        c.terminate(mem)
        pytest.fail("the bomb's cgroup has pids.max %r, not 64: not started" % pids_max)
    during, stop = [], threading.Event()
    t = threading.Thread(target=spawn_latency, args=(server.url, 0, during, stop))
    t.start()
    # Until the bomb reached its limit and other spawns went through meanwhile (events,
    # however slow the machine): never above the limit at any sample.
    peak, samples = 0, []
    deadline = time.monotonic() + EVENT_TIMEOUT
    try:
        while not (peak == 64 and len(during) >= 3) and time.monotonic() < deadline:
            with open(cur) as f:
                samples.append(int(f.read()))
            peak = max(peak, samples[-1])
            assert peak <= 64, samples[-20:]
            time.sleep(0.05)
    finally:
        stop.set()
        t.join(EVENT_TIMEOUT)
    assert peak == 64, "the bomb never reached its limit of 64 tasks: %r" % samples[-20:]
    assert len(during) >= 3 and all(code == 0 for _, code in during), during[:5]
    assert all(code == 0 for _, code in before)
    print("\n%s: spawn->exit ms before: p50 %.2f p99 %.2f (n=%d); during the bombs: p50 %.2f "
          "p99 %.2f (n=%d)" % ("sandboxed" if sandboxed else "unsandboxed", pct([d for d, _ in before], .5), pct([d for d, _ in before], .99),
                               len(before), pct([d for d, _ in during], .5),
                               pct([d for d, _ in during], .99), len(during)))
    run = c.collect_until_output(mem, "oom")   # OOM-killed at least once by now
    c.terminate(bomb)
    c.terminate(mem)
    wait_until(lambda: marked(marker) == [], what="both bombs gone")
    c.collect(bomb)
    run = c.collect(mem, run=run)
    assert run.exited["oomKilled"] is True and run.stdout.count(b"oom") >= 1, run.exited
    wait_until(lambda: leaves(server) == [], what="no leaf left")


# ---- composition with the listener guard


@pytest.mark.needs("listener-guard")
@pytest.mark.needs_programs("/bin/bash")
def test_guarded_sandbox_leaf_below_guard(server, uniq, marker, tmp_path):
    """A sandbox with network access: its leaf is below the listener guard (whose connect
    filters it inherits), and the whole-tree kill works there too."""
    needs_cgroups()
    from conftest import guard_cgroup, require_guard
    from wsclient import file_uri
    require_guard(server)
    guard = guard_cgroup(server)
    c = server.connect()
    pid = uniq("g")
    sb = {"permissions": {"type": "managed", "file_system": {"type": "unrestricted"},
                          "network": "enabled"},
          "windowsSandboxLevel": "disabled", "cwd": file_uri(str(tmp_path))}
    c.start(pid, ["/bin/bash", "-c", DAEMON + "; sleep 1000"], env=menv(marker),
            cwd=str(tmp_path), sandbox=sb)
    c.collect_until_output(pid, "started")
    wait_until(lambda: len(marked(marker)) >= 4, what="the daemons")
    rels = {cgroup_of(p) for p in marked(marker)}
    assert len(rels) == 1, rels
    leaf = os.path.join(HOST.cgroup2_mounts()[0][1], rels.pop().lstrip("/"))
    assert os.path.dirname(leaf) == guard and re.fullmatch(r"p\d+", os.path.basename(leaf)), \
        (leaf, guard)
    with open(os.path.join(guard, "cgroup.procs")) as f:
        assert f.read().split() == []    # nothing in the guard itself
    assert c.terminate(pid) == {"running": True}
    wait_until(lambda: marked(marker) == [], what="the sandboxed tree killed")
    c.collect(pid)
    wait_until(lambda: not os.path.exists(leaf), what="the leaf removed")


def ns_pid_free_here():
    """A pid no process on this side has, for a uexec in a PID namespace of its own. Picked
    at random in the upper half: the uexec's cgroups are named after it, and another run
    of this test beside (in parallel, or another checkout's) must not take the same."""
    import random
    with open("/proc/sys/kernel/pid_max") as f:
        top = int(f.read())
    candidates = list(range(top // 2, top - 2))
    random.shuffle(candidates)
    for p in candidates:
        if not os.path.exists("/proc/%d" % p) and \
                not os.path.exists(os.path.join(HOST.own_cgroup2_dir()[0] or "/nonexistent",
                                                "uexec-%d.procs" % p)):
            return p
    pytest.skip("no free pid to give the namespaced uexec")


@pytest.mark.needs_programs("unshare")
def test_sweep_spares_live_uexec_in_other_pid_namespace(tmp_path, uniq, marker, monkeypatch):
    """A uexec in another PID namespace sharing this cgroup (containers on one host):
    its pid means nothing here (kill(pid, 0) says "no such process"), yet it is alive.
    Another uexec starting must neither kill its processes nor remove its cgroups."""
    needs_cgroups()
    import conftest
    nspid = ns_pid_free_here()
    wrapper = tmp_path / "in-pidns"
    # the namespace's pid 1 is sh; uexec gets nspid (ns_last_pid + 1), absent on this side
    wrapper.write_text("#!/bin/sh\nexec unshare --pid --fork --mount-proc /bin/sh -c "
                       "'echo %d > /proc/sys/kernel/ns_last_pid && \"$0\" \"$@\"; exit $?' %s \"$@\"\n"
                       % (nspid - 1, conftest.UEXEC_BIN))
    wrapper.chmod(0o755)
    monkeypatch.setattr(conftest, "UEXEC_BIN", str(wrapper))
    a = Server((), logdir=str(tmp_path))
    monkeypatch.undo()
    try:
        own = HOST.own_cgroup2_dir()[0]
        base = os.path.join(own, "uexec-%d.procs" % nspid)
        guard = os.path.join(own, "uexec-%d.sandbox" % nspid)   # the listener guard, if any
        assert os.path.isdir(base), a.stderr_tail()
        has_guard = os.path.isdir(guard)
        assert not pid_alive(nspid)   # what the sweep of the other uexec sees
        c = a.connect()
        pid = uniq("d")
        c.start(pid, sh(DAEMON), env=menv(marker))
        c.collect_until_output(pid, "started")
        wait_until(lambda: len(marked(marker)) >= 4, what="the tree")
        before = sorted(marked(marker))
        b = Server((), logdir=str(tmp_path))
        b.check_stop()
        assert "left by uexec %d" % nspid not in b.stderr().decode(), b.stderr_tail()
        assert sorted(marked(marker)) == before, "the other uexec's sweep killed them"
        assert os.path.isdir(base)
        assert os.path.isdir(guard) == has_guard, "the other uexec's sweep removed its guard"
        # and it still works: terminate kills its tree through the leaf
        c.terminate(pid)
        wait_until(lambda: marked(marker) == [], what="the tree terminated")
    finally:
        inner = [p for sh1 in children_of(a.pid) for p in children_of(sh1)]
        for p in inner:
            try:
                os.kill(p, signal.SIGTERM)
            except ProcessLookupError:
                pass   # already gone (the namespace's init ends with uexec)
        try:
            a.proc.wait(EVENT_TIMEOUT)
        except Exception:
            a.proc.kill()
        a.stopped = True
    wait_until(lambda: not os.path.isdir(base), what="its cgroups removed at its exit")


def test_clone3_refused_falls_back(tmp_path, uniq, marker, monkeypatch):
    """Where clone3 answers ENOSYS (Docker's default seccomp profile, valgrind) every
    process still starts, in its own leaf, and terminate still kills its whole tree."""
    needs_cgroups()
    import ctypes.util
    import sys
    import conftest
    if not ctypes.util.find_library("seccomp"):
        pytest.skip("libseccomp is not installed")
    wrapper = tmp_path / "no-clone3"
    wrapper.write_text(
        "#!%s\nimport ctypes, ctypes.util, errno, os, sys\n"
        "lib = ctypes.CDLL(ctypes.util.find_library('seccomp'))\n"
        "lib.seccomp_init.restype = ctypes.c_void_p\n"
        "lib.seccomp_init.argtypes = [ctypes.c_uint32]\n"
        "lib.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint]\n"
        "lib.seccomp_load.argtypes = [ctypes.c_void_p]\n"
        "ctx = lib.seccomp_init(0x7fff0000)\n"
        "nr = lib.seccomp_syscall_resolve_name(b'clone3')\n"
        "assert nr > 0 and lib.seccomp_rule_add(ctx, 0x00050000 | errno.ENOSYS, nr, 0) == 0\n"
        "assert lib.seccomp_load(ctx) == 0\n"
        "os.execv(%r, [%r] + sys.argv[1:])\n" % (sys.executable, conftest.UEXEC_BIN,
                                                  conftest.UEXEC_BIN))
    wrapper.chmod(0o755)
    monkeypatch.setattr(conftest, "UEXEC_BIN", str(wrapper))
    srv = Server((), logdir=str(tmp_path))
    monkeypatch.undo()
    try:
        c = srv.connect()
        pid = uniq("n")
        c.start(pid, sh(DAEMON), env=menv(marker))
        c.collect_until_output(pid, "started")
        wait_until(lambda: len(marked(marker)) >= 4, what="the tree")
        rels = {cgroup_of(p) for p in marked(marker)}
        assert len(rels) == 1 and re.search(r"/uexec-%d\.procs/p\d+$" % srv.pid, rels.pop()), rels
        assert "clone3 with CLONE_INTO_CGROUP is refused here" in srv.stderr().decode()
        c.terminate(pid)   # sh itself has exited: its daemons are what is left
        wait_until(lambda: marked(marker) == [], what="the tree killed")
    finally:
        srv.check_stop()


@pytest.mark.needs_programs("/bin/bash")
def test_sigkill_leaves_no_sandboxed_process(tmp_path, uniq, marker):
    """SIGKILL of uexec with sandboxed trees running (a PID namespace of their own; with
    network access, leaves below the listener guard), setsid daemons inside: none
    survives, no cgroup of that uexec is left, and the supervisor held nothing of
    uexec's (no listening socket, no ring) while it waited."""
    needs_cgroups()
    HOST.require("sandbox")
    srv = Server((), logdir=str(tmp_path))
    try:
        reaper = reaper_of(srv)
        assert reaper, srv.stderr_tail()

        def fds():
            d = "/proc/%d/fd" % reaper
            return sorted(os.readlink(os.path.join(d, f)) for f in os.listdir(d))
        # it names itself before it closes what it inherited from uexec
        wait_until(lambda: len(fds()) == 4 and
                   all(t == "/dev/null" or t.startswith("pipe:") for t in fds()),
                   what="the supervisor holding only /dev/null (0-2) and its pipe")
        assert os.readlink("/proc/%d/cwd" % reaper) == "/"   # uexec's is the test's
        c = srv.connect()
        sbs = [READ_ONLY_SANDBOX]
        if HOST.missing("listener-guard") is None:
            sbs.append({"permissions": {"type": "managed", "network": "enabled",
                                        "file_system": {"type": "unrestricted"}},
                        "windowsSandboxLevel": "disabled"})
        for i, sb in enumerate(sbs):
            pid = uniq("s%d" % i)
            c.start(pid, ["/bin/bash", "-c", DAEMON + "; sleep 1000"], env=menv(marker),
                    sandbox=sb)
            c.collect_until_output(pid, "started")
        wait_until(lambda: len(marked(marker)) >= 5 * len(sbs), what="the trees")
        srv.proc.send_signal(signal.SIGKILL)
        srv.proc.wait()
        wait_until(lambda: marked(marker) == [],
                   what="no sandboxed process of the killed uexec left")
        wait_until(lambda: server_dirs(srv.pid) == [], what="its cgroups removed")
        wait_until(lambda: not pid_alive(reaper), what="the supervisor gone")
    finally:
        srv.stopped = True
        if srv.proc.poll() is None:
            srv.proc.kill()


@pytest.mark.parametrize("network", ["restricted", "enabled"])
def test_sandbox_cannot_leave_its_cgroup(server, uniq, marker, network):
    """A sandboxed process that may write the whole disk, running as root: writing its
    pid into a cgroup.procs outside its leaf (cgroup v2, or a v1 hierarchy of its
    limits) would take it out of the whole-tree kill and its limits. Every cgroup
    mount is read-only in the sandbox; it stays in its leaf and terminate kills it."""
    needs_cgroups()
    HOST.require("sandbox")
    if network == "enabled" and HOST.missing("listener-guard"):
        pytest.skip("needs listener-guard: %s" % HOST.missing("listener-guard"))
    targets = [HOST.own_cgroup2_dir()[0]]
    limits = {}
    for k, field in (("pids", "pidsMax"),):
        if limit_where(k) == "v1":
            targets.append(v1_dir(k))
            limits[field] = 512
    sb = {"permissions": {"type": "managed", "network": network, "file_system": {
        "type": "restricted", "entries": [{"path": {"type": "special", "value": {"kind": "root"}},
                                           "access": "write"}]}},
          "windowsSandboxLevel": "disabled"}
    c = server.connect()
    pid = uniq("esc")
    script = "; ".join("echo $$ > %s/cgroup.procs 2>/dev/null && echo MOVED" % t for t in targets)
    c.start(pid, sh(script + "; echo tried; exec sleep 1000"), env=menv(marker), sandbox=sb,
            limits=limits)
    out = c.collect_until_output(pid, "tried").data()
    assert b"MOVED" not in out, out
    # between "tried" and the exec, /proc/PID/environ can read empty (the new image's
    # stack not yet set up): wait for the process rather than look once
    (p,) = wait_until(lambda: marked(marker), what="the sandboxed process")
    assert re.search(r"/p\d+$", cgroup_of(p)), cgroup_of(p)
    c.terminate(pid)
    wait_until(lambda: marked(marker) == [], what="the sandboxed process killed")
