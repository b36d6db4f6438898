# SPDX-License-Identifier: MIT
"""Second adversarial pass (docs/SECURITY.md "Escape attempts"): an attacker inside a
sandbox going after the newest mechanisms: deny globs (races between the scan and the
masks, hard links, the scan's cost on the event loop) and `deny` entries inside a
writable root across process starts."""

import os

import pytest

import conftest
from conftest import HOST, sandbox_server
from test_sandbox import EACCES, PY, area, sh, text, ws_policy, path_entry  # noqa: F401
from test_sandbox import REFUSED
from test_sandbox_globs import glob, make_files, start_error

pytestmark = [pytest.mark.needs("x86_64", "sandbox"),
              pytest.mark.needs_programs("/bin/bash", "/bin/sh", PY)]


KINDS = ["default", "abi0", "abi4", "sandbox-uid", "sandbox-uid-abi4", "non-root"]


@pytest.mark.parametrize("kind", KINDS)
def test_masked_file_cannot_be_hard_linked(server_factory, uniq, area, kind):
    """A deny-glob match and a `deny` file inside the writable root: `ln` of the masked
    name to an innocent name (which the next start's glob would not match) fails, so no
    second name of the secret ever exists; the host keeps one link."""
    srv = sandbox_server(server_factory, kind)
    c = srv.connect()
    make_files(area.ws, ("s.env", "d/secret"), content="SECRET\n")
    srv.own(area.base)   # the trees are the sandbox's uid's: only the sandbox refuses
    sb = ws_policy(area.ws, extra=[glob("*.env"), path_entry(area.ws + "/d/secret", "deny")])
    out = text(sh(c, uniq, "ln s.env a.txt; ln d/secret b.txt; ln -P s.env c.txt; "
                  "cat a.txt b.txt c.txt; echo end", area.ws, sb))
    assert "end" in out and "SECRET" not in out, out
    for n in ("a.txt", "b.txt", "c.txt"):
        assert not os.path.exists(os.path.join(area.ws, n)), (n, out)
    assert os.stat(os.path.join(area.ws, "s.env")).st_nlink == 1
    assert os.stat(os.path.join(area.ws, "d/secret")).st_nlink == 1


@pytest.mark.parametrize("kind", KINDS)
def test_renaming_the_parent_of_a_mask_does_not_unhide_it_next_time(server_factory, uniq, area,
                                                                    kind):
    """The masks sit on the secret files; their parent directories are ordinary
    directories of the writable root. Renaming one in a first process would move the
    secret to a path the next start's `deny` entry or glob (`<ws>/cfg/*.env`) no longer
    names, and the next process would read it. The parents of masks inside writable
    roots cannot be renamed or removed (EBUSY), so the secret keeps its path."""
    srv = sandbox_server(server_factory, kind)
    c = srv.connect()
    make_files(area.ws, ("cfg/s.env", "cfg/plain", "d/e/secret", "r/o/f"), content="SECRET\n")
    srv.own(area.base)   # the trees are the sandbox's uid's: only the sandbox refuses
    sb = ws_policy(area.ws, extra=[glob(area.ws + "/cfg/*.env"),
                                   path_entry(area.ws + "/d/e/secret", "deny"),
                                   path_entry(area.ws + "/r/o", "read")])
    out1 = text(sh(c, uniq, "mv cfg cfg2; mv d/e d/f; mv d d2; mv r r2; rmdir d/e; "
                   "echo x >> cfg/plain; echo end", area.ws, sb))
    assert "end" in out1, out1
    for a, b in (("cfg", "cfg2"), ("d/e", "d/f"), ("d", "d2"), ("r", "r2")):
        assert "mv: cannot move '%s' to '%s': Device or resource busy" % (a, b) in out1, out1
    assert "x\n" == open(os.path.join(area.ws, "cfg/plain")).read()[-2:]  # still writable
    out3 = text(sh(c, uniq, "echo y >> r2/o/f; echo y >> r/o/f; echo end", area.ws, sb))
    assert open(os.path.join(area.ws, "r/o/f")).read() == "SECRET\n", out3
    out2 = text(sh(c, uniq, "cat cfg2/s.env d/f/secret d2/f/secret d2/e/secret cfg/s.env "
                   "d/e/secret; echo end", area.ws, sb))
    assert "end" in out2 and "SECRET" not in out2, (out1, out2)
    assert os.path.exists(os.path.join(area.ws, "cfg/s.env")), out1
    assert os.path.exists(os.path.join(area.ws, "d/e/secret")), out1


def _env_files(d, prefix, n):
    """Makes d with n empty files prefix0.env ... prefix<n-1>.env, the first holding SECRET."""
    os.makedirs(d)
    for i in range(n):
        open(os.path.join(d, "%s%d.env" % (prefix, i)), "w").close()
    with open(os.path.join(d, prefix + "0.env"), "w") as f:
        f.write("SECRET\n")


def test_costly_glob_refused_not_run_on_the_event_loop(server, uniq, area):
    """The scan runs on the server's event loop when the process starts. 64 {a,b}
    alternatives of 63 components (`**` interleaved) matched against files 31
    directories deep cost about 1 ms a file (every session stalled meanwhile; the
    entry limit allows 262 144 files, and with 123 components 61 deep it is 3 ms):
    the matching work of one start is bounded (SANDBOX_GLOB_MAX_STEPS) and such a
    pattern refused, naming it. An ordinary pattern over the same tree still starts
    and hides its match."""
    deep = os.path.join(area.ws, "deep", *(["aaaa"] * 30))
    _env_files(deep, "f", 400)
    conftest.own(area.base)
    c = server.connect()
    costly = (area.ws + "/deep/**/" + "{a,b}" * 6 + "*/" + "**/a*/" * 30 + "zz")
    err = start_error(c, uniq, area.ws, ws_policy(area.ws, extra=[glob(costly)]))
    assert err.get("error") == REFUSED, err
    log = server.log()
    assert "deny glob `%s`: " % costly in log and "took more than 16777216 steps" in log, log
    ok = text(sh(c, uniq, "cat %s/f0.env; echo end" % deep, area.ws,
                 ws_policy(area.ws, extra=[glob(area.ws + "/deep/**/f0.env")])))
    assert "end" in ok and "SECRET" not in ok and EACCES in ok, ok


CG_PROBE = r'''
import os
mounts = []
for line in open("/proc/self/mountinfo"):
    f = line.split()
    fstype = f[f.index("-") + 1]
    if fstype in ("cgroup", "cgroup2"):
        mounts.append(f[4])
own = [l.rstrip("\n").split(":", 2)[2] for l in open("/proc/self/cgroup")]
res = []
def t(what, fn):
    try:
        fn()
        res.append(what + "=ok")
    except OSError as e:
        res.append(what + "=" + os.strerror(e.errno))
def w(p, s):
    with open(p, "w") as f:
        f.write(s)
for m in mounts:
    for rel in set(own + ["/"]):
        d = os.path.normpath(m + "/" + rel)
        for name, val in (("pids.max", "max"), ("memory.max", "max"), ("cpu.max", "max"),
                          ("cgroup.procs", str(os.getpid())), ("cgroup.subtree_control", "+pids"),
                          ("cgroup.kill", "1"), ("tasks", str(os.getpid()))):
            if os.path.exists(d + "/" + name):
                t(d + "/" + name, lambda: w(d + "/" + name, val))
        t(d + "/mkdir", lambda: os.mkdir(d + "/escape-probe"))
    t(m + "/cgroup.procs", lambda: w(m + "/cgroup.procs", str(os.getpid())))
# kernel settings a capability-less uid 0 may write by file mode alone (opened, never written)
for p in ("/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe", "/proc/sys/vm/drop_caches",
          "/sys/kernel/uevent_helper", "/proc/sysrq-trigger", "/sys/kernel/mm/transparent_hugepage/enabled"):
    if os.path.exists(p):
        t(p, lambda: os.close(os.open(p, os.O_WRONLY)))
print("MOUNTS", len(mounts))
print("\n".join(res))
print("CG", open("/proc/self/cgroup").read())
'''

FULL = {"type": "managed", "file_system": {"type": "unrestricted"}, "network": "restricted"}


@pytest.mark.parametrize("policy", ["workspace", "workspace-net", "full-write", "full-write-net",
                                    "read-only"])
@pytest.mark.parametrize("kind", ["default", "abi0", "abi4", "sandbox-uid"])
def test_cgroupfs_read_only_inside(server_factory, uniq, area, policy, kind):
    """Whatever the policy (full-disk write included, network on or off) and level, the
    sandboxed process cannot write a cgroup file (its leaf's limits, any cgroup.procs,
    subtree_control, cgroup.kill) nor make a cgroup: it stays in its leaf, under its
    limits."""
    from test_sandbox import read_only_policy, sandbox
    if policy.endswith("-net"):
        HOST.require("network-sandbox")
    srv = sandbox_server(server_factory, kind)
    c = srv.connect()
    if policy.startswith("workspace"):
        sb = ws_policy(area.ws, network="enabled" if policy.endswith("-net") else "restricted")
    elif policy.startswith("full-write"):
        sb = sandbox(dict(FULL, network="enabled" if policy.endswith("-net") else "restricted"))
    else:
        sb = read_only_policy()
    srv.own(area.base)
    run = sh(c, uniq, "%s -c '%s'; echo end" % (PY, CG_PROBE.replace("'", "'\\''")), area.ws, sb)
    out = text(run)
    assert "end" in out and "MOUNTS" in out, out
    oks = [l for l in out.splitlines() if l.endswith("=ok")]
    assert oks == [], out


VICTIM = r'''
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:   # network restricted: seccomp refuses bind (EPERM); a listener if it ever allowed one
    s.bind("\0uexec-esc2-" + sys.argv[1]); s.listen(1)
except OSError:
    pass
open("/dev/shm/esc2-" + sys.argv[1], "w").write("victim\n")
open("victim-ready", "w").write(str(os.getpid()))
time.sleep(1000)   # until terminated
'''

ATTACKER = r'''
import ctypes, errno, os, signal, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
tag, vpid = sys.argv[1], int(sys.argv[2])
res = {}
def t(what, fn):
    try:
        fn()
        res[what] = "ok"
    except OSError as e:
        res[what] = errno.errorcode[e.errno]
def sc(nr, *a):
    r = libc.syscall(nr, *a)
    if r < 0:
        raise OSError(ctypes.get_errno(), "")
    return r
def status(k):
    return [l.split(":", 1)[1].strip() for l in open("/proc/self/status") if l.startswith(k + ":")][0]
for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
    res[k] = status(k)
res["NoNewPrivs"] = status("NoNewPrivs")
res["securebits"] = "%#x" % libc.prctl(27, 0, 0, 0, 0)   # PR_GET_SECUREBITS
res["Uid"] = status("Uid")
t("kill_victim", lambda: os.kill(vpid, 0))
t("pidfd_open_victim", lambda: sc(434, vpid, 0))
t("proc_mem_victim", lambda: os.close(os.open("/proc/%d/mem" % vpid, os.O_RDONLY)))
t("abstract_connect", lambda: socket.socket(socket.AF_UNIX).connect("\0uexec-esc2-" + tag))
t("shm_read", lambda: open("/dev/shm/esc2-" + tag).read())
t("unshare_user", lambda: sc(272, 0x10000000))
t("chown_root", lambda: os.chown("mine", 1, 1))
t("setfcap", lambda: os.setxattr("mine", "security.capability",
                                  bytes([1, 0, 0, 3] + [0xff] * 4 + [0] * 12)))
t("setuid_bit", lambda: os.chmod("mine", 0o4755))
t("setresuid_1", lambda: sc(117, 1, 1, 1))
print(";".join("%s=%s" % kv for kv in sorted(res.items())))
'''


@pytest.mark.parametrize("policy", ["workspace", "full-write"])
@pytest.mark.parametrize("kind", ["sandbox-uid", "sandbox-uid-abi4", "sandbox-uid-abi0"])
def test_sandbox_uid_neighbours_and_identity(server_factory, uniq, area, policy, kind):
    """--sandbox-uid: every sandbox of the server is uid 0 of the same user namespace
    (the same host uid). One (workspace or full-disk write) cannot reach another
    (workspace): no signal nor /proc/<pid>/mem of the other's command (its host pid), no
    connect to its abstract socket, no read of its /dev/shm; nor regain anything: every capability set empty (full-disk write keeps
    none, unlike host root), no_new_privs, no nested user namespace, no chown to another
    id, no file capability, no set-id bit, no other uid."""
    from test_sandbox import sandbox
    srv = sandbox_server(server_factory, kind)
    c = srv.connect()
    os.makedirs(area.ws + "/v")
    open(area.ws + "/mine", "w").close()
    conftest.own(area.base, ids=(64321, 64321))
    sb = ws_policy(area.ws) if policy == "workspace" else sandbox(FULL)
    tag = uniq("t")
    vid = uniq("victim")
    c.start(vid, [PY, "-c", VICTIM, tag], cwd=area.ws + "/v", env={}, sandbox=ws_policy(area.ws))
    ready = os.path.join(area.ws, "v", "victim-ready")
    try:
        conftest.wait_until(lambda: os.path.exists(ready) and os.path.getsize(ready) > 0)
    except BaseException:
        c.terminate(vid)
        raise AssertionError(text(c.collect(vid)))
    vpid = None
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if os.readlink("/proc/%s/cwd" % d) == area.ws + "/v" and \
                        open("/proc/%s/comm" % d).read().strip().startswith("python"):
                    vpid = int(d)
            except OSError:
                pass
    assert vpid, "victim not found"
    out = text(sh(c, uniq, "%s -c '%s' %s %d" % (PY, ATTACKER.replace("'", "'\\''"), tag, vpid),
                  area.ws, sb))
    c.terminate(vid)
    res = dict(kv.split("=", 1) for kv in out.strip().splitlines()[-1].split(";"))
    for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert res[k] == "0000000000000000", (k, out)
    assert res["NoNewPrivs"] == "1" and res["Uid"].split() == ["0"] * 4, out
    # NOROOT, NO_SETUID_FIXUP, NO_CAP_AMBIENT_RAISE and KEEP_CAPS off, each locked
    assert res["securebits"] == "0xef", out
    if policy == "workspace":   # its own PID namespace: the victim is not there
        assert res["kill_victim"] == "ESRCH" and res["pidfd_open_victim"] == "ESRCH", out
        assert res["proc_mem_victim"] == "ENOENT", out
    else:   # full-disk write from ABI 6 shares the host's pids: Landlock scoping, no ptrace
        assert res["kill_victim"] in ("EPERM", "ESRCH"), out
        assert res["proc_mem_victim"] in ("EACCES", "ENOENT"), out
    assert res["abstract_connect"] in ("EPERM", "ECONNREFUSED"), out
    assert res["shm_read"] == "ENOENT", out        # the victim's /dev/shm is its own
    # ids other than its own are not mapped in the namespace (EINVAL), or refused
    assert res["unshare_user"] == "EPERM" and res["setresuid_1"] in ("EPERM", "EINVAL"), out
    assert res["chown_root"] in ("EPERM", "EINVAL"), out
    assert res["setfcap"] in ("EPERM", "EINVAL"), out
    assert res["setuid_bit"] == "EPERM", out
    st = os.stat(area.ws + "/mine")
    assert (st.st_uid, st.st_mode & 0o7000) == (64321, 0), st
    assert not os.listxattr(area.ws + "/mine"), os.listxattr(area.ws + "/mine")


def test_pinned_directories_keep_the_idmap(server_factory, uniq, area):
    """--sandbox-uid with a workspace of another owner (root's: idmapped): a directory
    pinned because it leads to a deny-glob match stays writable through the idmap, a
    file created there belongs to the workspace's owner, and it cannot be renamed."""
    srv = sandbox_server(server_factory, "sandbox-uid")
    c = srv.connect()
    make_files(area.ws, ("cfg/s.env", "cfg/sub/t.env"), content="SECRET\n")
    conftest.own(area.base, ids=(0, 0))
    sb = ws_policy(area.ws, extra=[glob("*.env")])
    out = text(sh(c, uniq, "echo n > cfg/new && echo w1; echo n > cfg/sub/new && echo w2; "
                  "mv cfg/sub cfg/sub2; cat cfg/s.env; echo end", area.ws, sb))
    assert "w1\nw2\n" in out and "end" in out and "SECRET" not in out, out
    assert "Device or resource busy" in out, out
    for p in ("cfg/new", "cfg/sub/new"):
        st = os.stat(os.path.join(area.ws, p))
        assert (st.st_uid, st.st_gid) == (0, 0), (p, st)


@pytest.mark.parametrize("kind", ["default", "abi4", "abi0", "non-root", "sandbox-uid"])
def test_full_write_cannot_write_the_servers_proc_files(server_factory, uniq, area, kind):
    """Full-disk write as host root shares the host's PID namespace from ABI 6: the
    server's /proc files that only check the file mode (uid 0) were writable:
    oom_score_adj (raised to 1000: the OOM killer takes the server first),
    coredump_filter, and its own /proc/self ones too. /proc is read-only in its mount
    namespace; below ABI 6 the server is not even listed."""
    from test_sandbox import sandbox
    srv = sandbox_server(server_factory, kind)
    c = srv.connect()
    srv.own(area.base)   # the trees are the sandbox's uid's: only the sandbox refuses
    code = ("import os\nfor p in ('/proc/%d/oom_score_adj', '/proc/%d/coredump_filter', "
            "'/proc/self/oom_score_adj'):\n"
            "    try:\n        os.close(os.open(p, os.O_WRONLY)); print(p, 'ok')\n"
            "    except OSError as e:\n        print(p, os.strerror(e.errno))\n"
            "print('end')\n") % (srv.pid, srv.pid)
    out = text(sh(c, uniq, "%s -c \"%s\"" % (PY, code), area.ws, sandbox(FULL)))
    assert "end" in out and " ok" not in out, out
    with open("/proc/%d/oom_score_adj" % srv.pid) as f:
        assert f.read().strip() != "1000"


AUDIT_FORGE = r'''
import errno, os, socket, struct
def t(what, fn):
    try:
        fn()
        print(what, "ok")
    except OSError as e:
        print(what, errno.errorcode[e.errno])
s = []
def op():
    s.append(socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 9))   # NETLINK_AUDIT
def send():
    # AUDIT_USER_AVC (1107) and AUDIT_TRUSTED_APP (1121): forged user-space records
    for typ in (1107, 1121):
        body = b"type=LANDLOCK_ACCESS domain=1 blockers=fs.read_file ses=1 pid=1\0"
        hdr = struct.pack("=IHHII", 16 + len(body), typ, 0x5, 1, 0)   # NLM_F_REQUEST|ACK
        s[0].sendto(hdr + body, (0, 0))
        reply = s[0].recv(4096)
        err = struct.unpack("=i", reply[16:20])[0]
        if err:
            raise OSError(-err, "")
t("socket", op)
if s:
    t("send", send)
t("loginuid", lambda: open("/proc/self/loginuid", "w").write("0"))
print("end")
'''


@pytest.mark.parametrize("network", ["restricted", "enabled"])
@pytest.mark.parametrize("kind", ["default", "abi4", "sandbox-uid"])
def test_cannot_forge_audit_evidence(server_factory, uniq, area, network, kind):
    """Denial evidence comes from the audit log: a sandboxed process cannot write a record
    of its own (no audit netlink socket with network restricted; no CAP_AUDIT_WRITE with
    it enabled) nor change the audit session its records are attributed by (loginuid)."""
    if network == "enabled":
        HOST.require("network-sandbox")
    srv = sandbox_server(server_factory, kind)
    c = srv.connect()
    srv.own(area.base)   # the trees are the sandbox's uid's: only the sandbox refuses
    out = text(sh(c, uniq, "%s -c '%s'" % (PY, AUDIT_FORGE.replace("'", "'\\''")), area.ws,
                  ws_policy(area.ws, network=network)))
    assert "end" in out, out
    lines = dict(l.split(" ", 1) for l in out.splitlines() if " " in l)
    if network == "restricted":
        assert lines["socket"] == "EPERM", out
    else:
        assert lines["socket"] == "EPERM" or lines.get("send") in ("EPERM", "ECONNREFUSED"), out
    assert lines["loginuid"] in ("EPERM", "EROFS", "EACCES"), out


def test_pin_limit_counts_directories_not_matches(server, uniq, area):
    """8000 matches in one directory three levels down share its three pins: the start
    succeeds and hides them; 6000 matches each in a chain of three directories of its own
    (18 000 pins, past SANDBOX_MAX_PINS 16 384) are refused, naming the limit."""
    c = server.connect()
    shared = os.path.join(area.ws, "a", "b", "c")
    _env_files(shared, "s", 8000)
    conftest.own(area.base)
    out = text(sh(c, uniq, "cat a/b/c/s0.env; mv a/b a/x; echo end", area.ws,
                  ws_policy(area.ws, extra=[glob(area.ws + "/a/**/*.env")])))
    assert "end" in out and "SECRET" not in out and EACCES in out, out
    assert "Device or resource busy" in out, out
    for i in range(6000):
        d = os.path.join(area.ws, "m", "d%d" % i, "e", "f")
        os.makedirs(d)
        open(os.path.join(d, "t.penv"), "w").close()
    conftest.own(area.base)
    err = start_error(c, uniq, area.ws, ws_policy(area.ws, extra=[glob(area.ws + "/m/**/*.penv")]))
    assert err.get("error") == REFUSED, err
    assert "lie in more than 16384 directories" in server.log(), server.log()
