# SPDX-License-Identifier: MIT
"""Third adversarial pass (docs/SECURITY.md "Escape attempts"): doors the earlier passes'
tables did not list, tried for real from inside a sandbox. Each test here either failed
before its fix (the finding it names) or pins a door found shut but not covered before.
"""

import base64
import os
import socket
import stat
import threading

import pytest

import conftest
from conftest import HOST, require_guard, sandbox_server
from test_sandbox import (PRELUDE, PY, REFUSED, area, managed, path_entry, py,  # noqa: F401
                          results, sandbox, sh, sh_argv, special, text, ws_policy)
from wsclient import file_uri

pytestmark = [pytest.mark.needs("x86_64", "sandbox"),
              pytest.mark.needs_programs("/bin/bash", "/bin/sh", PY)]

SANDBOX_UID = (64322, 64322)


def needs_network_access():
    """A non-root uexec (the suite's UEXEC_TEST_AS_UID) listening on TCP refuses
    sandboxes with network access: it has no listener guard (docs/SECURITY.md)."""
    if conftest.run_as():
        pytest.skip("a non-root uexec listening on TCP refuses sandboxes with network access "
                    "(no listener guard)")


def secret(path, data):
    """A 0600 file of the server's uid (root's, or the suite's non-root uexec's)."""
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, 0o600)
    if conftest.run_as():
        conftest.own(os.path.dirname(path), ids=conftest.run_as())


def _token_dir(area):
    """(dir, token file, token): a 0700 directory holding a fresh capability token."""
    d = os.path.join(area.base, "etc")
    os.makedirs(d, mode=0o700)
    token_file = os.path.join(d, "token")
    token = base64.b64encode(os.urandom(24)).decode()
    secret(token_file, token.encode() + b"\n")
    return d, token_file, token


# --------------------------------------------------------------------------
# finding: set-id files through O_TMPFILE

TMPFILE_CODE = r'''
O_TMPFILE = 0o20000000 | os.O_DIRECTORY
def plant(name, mode):
    fd = os.open(".", O_TMPFILE | os.O_RDWR, mode)
    if libc.linkat(-100, ("/proc/self/fd/%d" % fd).encode(), -100, name.encode(), 0x400) != 0:
        raise OSError(ctypes.get_errno(), "linkat")
t("suid", lambda: plant("t-suid", 0o4755))
t("sgid", lambda: plant("t-sgid", 0o2755))
t("plain", lambda: plant("t-plain", 0o755))
'''


@pytest.mark.parametrize("kind", ["default", "sandbox-uid"])
def test_setid_file_through_o_tmpfile_cannot_be_planted(server_factory, uniq, area, kind):
    """open(O_TMPFILE) carries no O_CREAT bit, so the seccomp rule against set-id modes
    at creation let it through: an unnamed file made with mode 4755, linked into the
    workspace through /proc/self/fd (linkat AT_SYMLINK_FOLLOW), stayed setuid-root on
    the host (with --sandbox-uid too: the root-owned workspace is idmapped to root),
    and a later write by host root (an unsandboxed fs/writeFile, which keeps the mode
    of an existing file and, with CAP_FSETID, the bit) gives it any content. Now
    refused with EPERM; an O_TMPFILE without a set-id bit still works."""
    srv = sandbox_server(server_factory, kind, SANDBOX_UID)
    c = srv.connect()
    run = py(c, uniq, TMPFILE_CODE, area.ws, ws_policy(area.ws))
    res = results(run)
    assert res.get("suid") == "EPERM" and res.get("sgid") == "EPERM", text(run)
    assert res.get("plain") == "ok", text(run)
    assert os.path.exists(os.path.join(area.ws, "t-plain"))
    for name in ("t-suid", "t-sgid"):
        p = os.path.join(area.ws, name)
        if not os.path.lexists(p):
            continue
        # what host root then writes into it keeps the bit
        c.call("fs/writeFile", {"path": file_uri(p),
                                "dataBase64": base64.b64encode(b"#!/bin/sh\nid\n").decode()})
        st = os.stat(p)
        assert not (st.st_mode & (stat.S_ISUID | stat.S_ISGID)), \
            "%s planted with mode %o, owner %d (%r)" % (name, st.st_mode, st.st_uid, text(run))


# Every call that sets a file mode, by raw syscall number (x86_64), with either set-id
# bit, and again with the upper 32 bits of every argument set (the kernel reads flags as
# an int and modes as umode_t: a rule comparing 64 bits would miss those); fchmodat2
# (452) and openat2 (437) by number, as libseccomp 2.5 names neither.
SETID_CODE = r'''
import struct
AT_FDCWD = -100
O_TMPFILE = 0o20000000 | os.O_DIRECTORY
UP = 0xffffffff << 32
def call(nr, *a):
    r = sc(nr, *a)
    if r != "ok":
        raise OSError(getattr(errno, r, 0), r)
    # the fd (open, openat, creat, openat2) leaks: the process exits at once
def plain(name):
    os.close(os.open(name, os.O_CREAT | os.O_WRONLY, 0o755))
    return name.encode()
def tmpfile(name, nr, flags_up, mode):
    fd = libc.syscall(ctypes.c_long(nr), *([] if nr == 2 else [ctypes.c_long(AT_FDCWD)]),
                      ctypes.c_char_p(b"."), ctypes.c_long(O_TMPFILE | os.O_RDWR | flags_up),
                      ctypes.c_long(mode))
    if fd < 0:
        raise OSError(ctypes.get_errno(), "open")
    if libc.linkat(AT_FDCWD, ("/proc/self/fd/%d" % fd).encode(), AT_FDCWD, name.encode(), 0x400):
        raise OSError(ctypes.get_errno(), "linkat")
def openat2(name, mode):
    how = ctypes.create_string_buffer(struct.pack("QQQ", os.O_CREAT | os.O_WRONLY, mode, 0), 24)
    call(437, AT_FDCWD, name.encode(), ctypes.addressof(how), 24)
def fchmod(name, mode):
    fd = os.open(plain(name), os.O_RDONLY)
    call(91, fd, mode)
for bit, b in ((0o4000, "suid"), (0o2000, "sgid")):
    for up, u in ((0, ""), (UP, "-up")):
        m, k = 0o755 | bit | up, b + u
        t("open_creat-" + k, lambda: call(2, ("f1-" + k).encode(), os.O_CREAT | os.O_WRONLY | up, m))
        t("openat_creat-" + k, lambda: call(257, AT_FDCWD, ("f2-" + k).encode(),
                                            os.O_CREAT | os.O_WRONLY | up, m))
        t("open_tmpfile-" + k, lambda: tmpfile("f3-" + k, 2, up, m))
        t("openat_tmpfile-" + k, lambda: tmpfile("f4-" + k, 257, up, m))
        t("openat2-" + k, lambda: openat2("f5-" + k, (0o755 | bit) + up))
        t("creat-" + k, lambda: call(85, ("f6-" + k).encode(), m))
        t("mknod-" + k, lambda: call(133, ("f7-" + k).encode(), 0o100000 | m, 0))
        t("mknodat-" + k, lambda: call(259, AT_FDCWD, ("f8-" + k).encode(), 0o100000 | m, 0))
        t("chmod-" + k, lambda: call(90, plain("f9-" + k), m))
        t("fchmod-" + k, lambda: fchmod("f10-" + k, m))
        t("fchmodat-" + k, lambda: call(268, AT_FDCWD, plain("f11-" + k), m))
        t("fchmodat2-" + k, lambda: call(452, AT_FDCWD, plain("f12-" + k), m, 0))
        t("os_chmod-" + k, lambda: os.chmod(plain("f13-" + k), 0o755 | bit))
        t("os_mknod-" + k, lambda: os.mknod("f14-" + k, 0o100755 | bit))
t("plain_chmod", lambda: call(90, plain("g1"), 0o700))
t("plain_openat2", lambda: openat2("g2", 0o644))
print("done", flush=True)
'''
SETID_CALLS = ("open_creat", "openat_creat", "open_tmpfile", "openat_tmpfile", "openat2",
               "creat", "mknod", "mknodat", "chmod", "fchmod", "fchmodat", "fchmodat2",
               "os_chmod", "os_mknod")


def setid_files(root):
    """Paths under root (not directories) that carry S_ISUID or S_ISGID."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        for n in filenames:
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            if st.st_mode & (stat.S_ISUID | stat.S_ISGID):
                found.append("%s %o uid %d" % (p, st.st_mode, st.st_uid))
    return found


@pytest.mark.parametrize("kind", ["default", "sandbox-uid"])
def test_setid_bits_cannot_be_planted_by_any_call(server_factory, uniq, area, kind):
    """Every way to give a file a set-id mode from inside a sandbox: open/openat with
    O_CREAT or O_TMPFILE (linked in through /proc/self/fd), openat2, creat, mknod,
    mknodat, chmod, fchmod, fchmodat, fchmodat2, for setuid and setgid, each also with
    the upper 32 bits of its flags and mode set. Each fails (EPERM; ENOSYS for openat2
    and fchmodat2, whose arguments seccomp cannot check, so that libc falls back to a
    checked call), calls without a set-id bit still work, and no file under the
    workspace carries either bit afterwards. The same code outside any sandbox plants
    them all (the check has teeth)."""
    srv = sandbox_server(server_factory, kind, SANDBOX_UID)
    c = srv.connect()
    run = py(c, uniq, SETID_CODE, area.ws, ws_policy(area.ws))
    res = results(run)
    assert "done" in text(run), text(run)
    want = {"openat2": "ENOSYS", "fchmodat2": "ENOSYS"}
    for call in SETID_CALLS:
        for k in ("suid", "sgid", "suid-up", "sgid-up"):
            assert res.get("%s-%s" % (call, k)) == want.get(call, "EPERM"), (call, k, text(run))
    # without a set-id bit: chmod works, openat2 still answers ENOSYS (libc then uses openat)
    assert res.get("plain_chmod") == "ok" and res.get("plain_openat2") == "ENOSYS", text(run)
    assert setid_files(area.base) == [], text(run)


# --------------------------------------------------------------------------
# finding: the server's own secret files

class Front:
    """A TCP forwarder to the server's port, as a TLS terminator in front of uexec is
    (README "TLS": stunnel's accept -> connect)."""

    def __init__(self, port):
        self.port_to = port
        self.lst = socket.socket()
        self.lst.bind(("127.0.0.1", 0))
        self.lst.listen(8)
        self.port = self.lst.getsockname()[1]
        conftest.accept_forever(self.lst, self._forward)

    def _forward(self, c):
        u = socket.create_connection(("127.0.0.1", self.port_to))
        threading.Thread(target=conftest.pipe_bytes, args=(c, u), daemon=True).start()
        threading.Thread(target=conftest.pipe_bytes, args=(u, c), daemon=True).start()

    def close(self):
        self.lst.close()


DRIVE_CODE = r'''
sys.path.insert(0, %r)
import wsclient
def steal():
    with open(%r) as f:
        return f.read().strip()
t("read", steal)
try:
    tok = steal()
    c = wsclient.connect("ws://127.0.0.1:%d/", extra_headers=[("Authorization", "Bearer " + tok)])
    c.start("esc", ["/bin/sh", "-c", "echo escaped > %s"], cwd="/", env={})
    c.collect("esc")
    print("drive escaped")
except OSError as e:
    print("drive", errno.errorcode.get(e.errno, e.errno))
'''


@pytest.mark.parametrize("kind", ["default", "abi0"])
def test_server_token_hidden_from_sandboxes(server_factory, uniq, area, kind):
    """The README's production setup keeps the capability token in a root 0600 file and
    may put a TLS terminator in front of a loopback uexec. A sandboxed uid 0 opens root's
    0600 files by mode alone, so a workspace-write command read the token and, with
    network access, drove the server through the terminator's port (the listener
    guard refuses only uexec's own ports): an unsandboxed root process wrote outside.
    The server's secret files (--ws-token-file, --ws-shared-secret-file, --tls-key) are
    now hidden from every sandbox with a filesystem view, the fs helper's included,
    at every Landlock level: `Permission denied`, also inside a writable root (where
    the mask cannot be renamed away either)."""
    secret_dir = os.path.join(area.base, "etc")
    os.makedirs(secret_dir, mode=0o700)
    token_file = os.path.join(secret_dir, "token")
    token = base64.b64encode(os.urandom(24)).decode()
    secret(token_file, token.encode() + b"\n")
    kw = {}
    if kind == "abi0":
        HOST.require("uexec-init")
        kw["landlock_abi_max"] = 0
    srv = server_factory("--ws-auth", "capability-token", "--ws-token-file", token_file, **kw)
    c = srv.connect(extra_headers=[("Authorization", "Bearer " + token)])
    escaped = os.path.join(area.out, "escaped")
    front = Front(srv.port)
    # a non-root uexec listening on TCP refuses network access: the read still fails
    net = "restricted" if conftest.run_as() else "enabled"
    try:
        run = py(c, uniq, DRIVE_CODE % (conftest.TESTS_DIR, token_file, front.port, escaped),
                 area.ws, ws_policy(area.ws, network=net))
    finally:
        front.close()
    assert not os.path.exists(escaped), "escaped through the front: %r" % text(run)
    assert results(run).get("read") == "EACCES", text(run)
    assert token not in text(run)
    # network restricted, read-only policy, and the sandboxed fs helper alike
    ro = {"permissions": {"type": "managed", "network": "restricted", "file_system": {
        "type": "restricted", "entries": [{"path": {"type": "special", "value": {
            "kind": "root"}}, "access": "read"}]}}, "windowsSandboxLevel": "disabled",
          "cwd": file_uri(area.ws)}
    out = text(sh(c, uniq, "cat %s; echo end" % token_file, area.ws, ro))
    assert "end" in out and token not in out and "Permission denied" in out, out
    r = c.call("fs/readFile", {"path": file_uri(token_file), "sandbox": ws_policy(area.ws)})
    assert "error" in r and token not in str(r), r
    assert open(token_file).read().strip() == token


def test_server_token_inside_a_writable_root_hidden_and_pinned(server_factory, uniq, area):
    """A token file inside a writable root (a careless layout): hidden as a `deny`
    file is there, and its directory cannot be renamed so that the next start would
    miss it."""
    d = os.path.join(area.ws, "conf")
    os.makedirs(d)
    token_file = os.path.join(d, "token")
    token = base64.b64encode(os.urandom(24)).decode()
    secret(token_file, token.encode() + b"\n")
    srv = server_factory("--ws-auth", "capability-token", "--ws-token-file", token_file)
    c = srv.connect(extra_headers=[("Authorization", "Bearer " + token)])
    out = text(sh(c, uniq, "cat conf/token; mv conf conf2; mv conf/token conf/t2; "
                  "cat conf2/token conf/t2; echo end", area.ws, ws_policy(area.ws)))
    assert "end" in out and token not in out, out
    assert "Permission denied" in out and "Device or resource busy" in out, out
    assert open(token_file).read().strip() == token


# --------------------------------------------------------------------------
# doors found shut, not covered before

def test_sandboxed_fs_requests_through_planted_symlinks(server, uniq, area):
    """A sandboxed command plants symlinks in the workspace to a file and a directory
    outside; the client's later sandboxed fs/* requests on those workspace paths
    (the fs helper runs under the same plan) write, copy, create, rename and remove
    nothing outside, and a recursive fs/remove takes the link, not its target."""
    c = server.connect()
    os.makedirs(os.path.join(area.out, "dir"))
    with open(os.path.join(area.out, "dir", "f"), "w") as f:
        f.write("original\n")
    with open(os.path.join(area.ws, "src"), "w") as f:
        f.write("evil\n")
    conftest.own(area.base)
    before = area.snapshot()
    sb = ws_policy(area.ws)
    out = text(sh(c, uniq, "ln -s %s l1 && ln -s %s l2 && mkdir d && ln -s %s d/l3 && echo end"
                  % (area.victim, area.out, os.path.join(area.out, "dir")), area.ws, sb))
    assert "end" in out, out
    ws = lambda p: file_uri(os.path.join(area.ws, p))  # noqa: E731
    data = base64.b64encode(b"evil\n").decode()
    calls = [("fs/writeFile", {"path": ws("l1"), "dataBase64": data}),
             ("fs/writeFile", {"path": ws("l2/new"), "dataBase64": data}),
             ("fs/writeFile", {"path": ws("d/l3/f"), "dataBase64": data}),
             ("fs/copy", {"sourcePath": ws("src"), "destinationPath": ws("l1"),
                          "recursive": False}),
             ("fs/copy", {"sourcePath": ws("src"), "destinationPath": ws("l2/copied"),
                          "recursive": False}),
             ("fs/createDirectory", {"path": ws("l2/newdir")}),
             ("fs/rename", {"sourcePath": ws("src"), "destinationPath": ws("l2/moved")}),
             ("fs/remove", {"path": ws("l2/victim.txt")}),
             ("fs/remove", {"path": ws("d/l3/f")})]
    answers = [c.call(m, dict(p, sandbox=sb)) for m, p in calls]
    for (m, p), a in zip(calls, answers):
        assert "error" in a, (m, p, a)
    assert c.call("fs/remove", {"path": ws("d"), "recursive": True, "sandbox": sb}).get(
        "result") == {}
    assert not os.path.lexists(os.path.join(area.ws, "d"))
    assert area.snapshot() == before, answers


LISTENER_CODE = r'''
def fastopen(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.sendto(b"GET /readyz HTTP/1.0\r\n\r\n", 0x20000000, ("127.0.0.1", port))  # MSG_FASTOPEN
    finally:
        s.close()
def mapped(port):
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(("::ffff:127.0.0.1", port))
    finally:
        s.close()
def mptcp(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)    # IPPROTO_MPTCP
    s.settimeout(5)
    try:
        s.connect(("127.0.0.1", port))
    finally:
        s.close()
t("fastopen_own", lambda: fastopen(%d))
t("mapped_own", lambda: mapped(%d))
t("mptcp_own", lambda: mptcp(%d))
t("fastopen_other", lambda: fastopen(%d))
t("mapped_other", lambda: mapped(%d))
t("mptcp_other", lambda: mptcp(%d))
'''


@pytest.mark.needs("listener-guard")
def test_listener_guard_holds_for_fastopen_and_mapped_addresses(server, uniq, area):
    """Network enabled: the server's port reached without connect(2) (TCP Fast Open,
    sendto with MSG_FASTOPEN), through an IPv4-mapped IPv6 address or over Multipath
    TCP is refused by the listener guard as connect is (the cgroup connect hooks run
    for each); another local port stays reachable all three ways."""
    needs_network_access()
    require_guard(server)
    c = server.connect()
    other = socket.socket()
    other.bind(("127.0.0.1", 0))
    other.listen(4)
    o = other.getsockname()[1]
    try:
        run = py(c, uniq, LISTENER_CODE % ((server.port,) * 3 + (o,) * 3), area.ws,
                 ws_policy(area.ws, network="enabled"))
    finally:
        other.close()
    res = results(run)
    assert res.get("fastopen_own") == "EPERM" and res.get("mapped_own") == "EPERM", text(run)
    assert res.get("fastopen_other") == "ok", text(run)
    if socket.has_ipv6:
        assert res.get("mapped_other") == "ok", text(run)
    # Multipath TCP, where the host has it (net.mptcp.enabled)
    if res.get("mptcp_other") == "ok":
        assert res.get("mptcp_own") == "EPERM", text(run)
    else:
        assert res.get("mptcp_other") in ("EPROTONOSUPPORT", "ENOPROTOOPT"), text(run)


FIFO_CODE = r'''
paths = %r
t("fifo", lambda: os.open(paths[0], os.O_WRONLY | os.O_NONBLOCK))
if len(sys.argv) > 1:
    dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    t("sock", lambda: dgram.sendmsg([b"x"], [], 0, paths[1]))
    t("stream", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).connect(paths[2]))
'''


def _root_only_ipc(area):
    """A root 0600 FIFO (with a reader, so an open for writing would succeed), datagram
    and stream socket outside the writable roots; returns (paths, readers)."""
    fifo = os.path.join(area.out, "ctl.fifo")
    dg = os.path.join(area.out, "ctl.dgram")
    st = os.path.join(area.out, "ctl.sock")
    os.mkfifo(fifo, 0o600)
    old = os.umask(0o177)
    try:
        d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        d.bind(dg)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(st)
        s.listen(4)
    finally:
        os.umask(old)
    d.setblocking(False)
    s.setblocking(False)
    r = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    return (fifo, dg, st), (r, d, s)


def _nothing_arrived(readers):
    r, d, s = readers
    try:
        got = [os.read(r, 10)]
    except BlockingIOError:
        got = []
    for f in (lambda: d.recv(10), lambda: s.accept()):
        try:
            got.append(f())
        except BlockingIOError:
            pass
    os.close(r)
    d.close()
    s.close()
    return not [g for g in got if g]


@pytest.mark.parametrize("kind", ["default", "sandbox-uid-abi0"])
def test_root_only_fifo_and_sockets_outside(server_factory, uniq, area, kind):
    """Read-only mounts do not stop opening a FIFO for writing nor sending to a socket
    file. A root 0600 FIFO outside the writable roots (a daemon's control pipe, as
    /run/initctl): Landlock's write right refuses it (ABI >= 2; the default here);
    with --sandbox-uid, at any level, the file mode does, and the root-only socket
    files too (with the network restricted, sendmsg to a pathname socket is otherwise
    open, as on the reference; docs/SECURITY.md "Open findings" for ABI 0-1 and for
    uid 0 with network access)."""
    if kind == "default" and HOST.landlock_level() < 2:
        pytest.skip("needs Landlock ABI >= 2 (write rights on FIFOs); level %d here"
                    % HOST.landlock_level())
    srv = sandbox_server(server_factory, kind, SANDBOX_UID)
    c = srv.connect()
    paths, readers = _root_only_ipc(area)
    sockets = kind.startswith("sandbox-uid")
    argv = [PY, "-c", PRELUDE + FIFO_CODE % (paths,)] + (["sockets"] if sockets else [])
    run = sh_argv(c, uniq, argv, area.ws, ws_policy(area.ws))
    res = results(run)
    assert res.get("fifo") == "EACCES", text(run)
    if sockets:
        assert res.get("sock") == "EACCES" and res.get("stream") == "EPERM", text(run)
        run = sh_argv(c, uniq, argv, area.ws, ws_policy(area.ws, network="enabled"))
        res = results(run)
        assert res.get("fifo") == "EACCES", text(run)
        assert res.get("sock") == "EACCES" and res.get("stream") == "EACCES", text(run)
    assert _nothing_arrived(readers), text(run)


# --------------------------------------------------------------------------
# finding: a 64-bit comparison of an int argument

def _vsock_missing():
    try:
        socket.socket(40, socket.SOCK_STREAM).close()   # AF_VSOCK
    except OSError as e:
        return "AF_VSOCK sockets: %s" % os.strerror(e.errno)
    return None


def test_vsock_refused_whatever_the_upper_bits(server, uniq, area):
    """Network enabled keeps AF_VSOCK (the guest's channel to its hypervisor host)
    refused. The rule compared socket's family as 64 bits while the kernel reads an
    int: AF_VSOCK | 1 << 32 passed the filter and made a VSOCK socket. Now the low 32
    bits are compared (nothing is connected anywhere: creating the socket is the
    proof)."""
    needs_network_access()
    why = _vsock_missing()
    if why:
        pytest.skip("needs AF_VSOCK on this host: " + why)
    c = server.connect()
    code = r'''
t("plain", lambda: sc(41, 40, 1, 0))
t("upper", lambda: sc(41, 40 | (1 << 32), 1, 0))
t("all_upper", lambda: sc(41, 40 | (0xffffffff << 32), 1, 0))
'''
    run = py(c, uniq, code, area.ws, ws_policy(area.ws, network="enabled"))
    assert results(run) == {"plain": "EPERM", "upper": "EPERM", "all_upper": "EPERM"}, text(run)


# --------------------------------------------------------------------------
# finding: uexec's host-wide lock

NETGUARD_LOCK = "/run/uexec-netguard.lock"   # sandbox/netguard.h NETGUARD_LOCK_PATH

LOCK_CODE = r'''
import fcntl, time
def grab():
    fd = os.open(%r, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd
t("flock", grab)
print("holding", flush=True)
time.sleep(60)
'''


@pytest.mark.needs("listener-guard")
def test_netguard_lock_out_of_reach(server_factory, uniq, area):
    """Every root uexec with the listener guard takes an exclusive flock on
    /run/uexec-netguard.lock (blocking) to join the host-wide port map at start.
    flock needs no write access: a sandboxed uid 0 opened the root 0600 file read-only
    through its read-only view, held the lock, and every uexec started meanwhile on
    the host hung at start (until the sandbox ended: 60 s here). The file is now
    hidden from every sandbox's view, and another server starts while the sandbox
    tries."""
    needs_network_access()
    srv = server_factory()
    require_guard(srv)
    assert os.path.exists(NETGUARD_LOCK)
    c = srv.connect()
    pid = uniq("lock")
    c.start(pid, [PY, "-c", PRELUDE + LOCK_CODE % NETGUARD_LOCK], cwd=area.ws,
            env={"PATH": "/usr/bin:/bin"}, sandbox=ws_policy(area.ws))
    run = c.collect_until_output(pid, b"holding", timeout=conftest.EVENT_TIMEOUT)
    try:
        # a server blocked on the lock does not print its URL (its start times out)
        second = server_factory()
        require_guard(second)
        c2 = second.connect()
        c2.start("t", ["/bin/true"], cwd="/", env={})
        assert c2.collect("t").exit_code == 0
    finally:
        c.call("process/terminate", {"processId": pid})
    assert "flock EACCES" in text(run), text(run)


def test_server_jwt_key_hidden_from_sandboxes(server_factory, uniq, area):
    """The same for the HS256 key of signed bearer tokens (--ws-shared-secret-file):
    with it a sandbox mints its own tokens. Hidden from processes and the fs helper."""
    import time
    from test_auth import SECRET, jwt
    d = os.path.join(area.base, "etc")
    os.makedirs(d, mode=0o700)
    key = os.path.join(d, "jwt.key")
    secret(key, SECRET + b"\n")
    srv = server_factory("--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", key)
    c = srv.connect(extra_headers=[("Authorization", "Bearer " + jwt(
        {"exp": int(time.time()) + 300}))])
    out = text(sh(c, uniq, "cat %s; echo end" % key, area.ws, ws_policy(area.ws)))
    assert "end" in out and SECRET.decode() not in out and "Permission denied" in out, out
    r = c.call("fs/readFile", {"path": file_uri(key), "sandbox": ws_policy(area.ws)})
    assert "error" in r and base64.b64encode(SECRET).decode()[:20] not in str(r), r


def test_rotated_token_and_audit_log_hidden(server_factory, uniq, area):
    """A token rotated into a new file by SIGHUP (a --config naming another
    ws-token-file) is hidden from the sandboxes started after the reload, and so is the
    audit log (0600: every session's command lines, whatever their sandbox), the one of
    the start and the one a reload names."""
    import signal
    d = os.path.join(area.base, "etc")
    os.makedirs(d, mode=0o700)
    toks = {}
    for n in ("old", "new"):
        toks[n] = base64.b64encode(os.urandom(24)).decode()
        secret(os.path.join(d, n), toks[n].encode() + b"\n")
    conf = os.path.join(d, "u.toml")
    audit = [os.path.join(d, "audit-1.jsonl"), os.path.join(d, "audit-2.jsonl")]

    def write(tok, log):
        with open(conf, "w") as f:
            f.write('ws-auth = "capability-token"\nws-token-file = "%s"\naudit-log = "%s"\n'
                    % (os.path.join(d, tok), log))
    write("old", audit[0])
    secret(conf, open(conf, "rb").read())
    srv = server_factory("--config", conf)
    c = srv.connect(extra_headers=[("Authorization", "Bearer " + toks["old"])])
    marker = "secret-argv-%d" % os.getpid()
    assert c.call("process/start", {"processId": "m", "argv": ["/bin/true", marker], "cwd": "/",
                                    "env": {}, "tty": False}).get("result") is not None
    c.collect("m")
    write("new", audit[1])
    srv.proc.send_signal(signal.SIGHUP)
    conftest.wait_until(lambda: b"Configuration reloaded" in srv.stderr(), what="the reload")
    out = text(sh(c, uniq, "cat %s %s %s %s; echo end" % (os.path.join(d, "old"),
                  os.path.join(d, "new"), audit[0], audit[1]), area.ws, ws_policy(area.ws)))
    assert "end" in out and out.count("Permission denied") == 4, out
    assert toks["old"] not in out and toks["new"] not in out and marker not in out, out
    # (the old file gets the lines queued before the reload, when the loop writes them)
    conftest.wait_until(lambda: marker in open(audit[0]).read(), what="the marker's audit line")


def test_unsandboxed_fs_requests_refuse_server_secrets(server_factory, uniq, area):
    """A sandboxed command cannot read the token, but it can leave a symlink to it in
    the workspace; the client reads files there without a sandbox (the Codex CLI's
    apply_patch does), which would hand the token to the model. Unsandboxed
    fs/readFile, fs/open (read) and fs/copy refuse the server's secret files, through a
    link or by their own path (EACCES, logged); other files are served as before."""
    d, token_file, token = _token_dir(area)
    srv = server_factory("--ws-auth", "capability-token", "--ws-token-file", token_file)
    c = srv.connect(extra_headers=[("Authorization", "Bearer " + token)])
    link = os.path.join(area.ws, "notes.txt")
    run = sh(c, uniq, "ln -s %s notes.txt && echo planted" % token_file, area.ws,
             ws_policy(area.ws))
    assert "planted" in text(run), text(run)
    wire_token = base64.b64encode(token.encode() + b"\n").decode()
    for path in (link, token_file):
        r = c.call("fs/readFile", {"path": file_uri(path)})
        assert "error" in r and "os error 13" in r["error"]["message"], r
        assert wire_token not in str(r)
        r = c.call("fs/open", {"handleId": "h-" + uniq("o"), "path": file_uri(path)})
        assert "error" in r and "os error 13" in r["error"]["message"], r
    dest = os.path.join(area.ws, "copied.txt")
    r = c.call("fs/copy", {"sourcePath": file_uri(token_file), "destinationPath": file_uri(dest),
                           "recursive": False})
    assert "error" in r and "os error 13" in r["error"]["message"], r
    assert not os.path.exists(dest) or token not in open(dest).read()
    # a link is copied as a link (as on the reference): reading the copy is refused too
    r = c.call("fs/copy", {"sourcePath": file_uri(link), "destinationPath": file_uri(dest + "2"),
                           "recursive": False})
    assert r.get("result") == {} and os.path.islink(dest + "2"), r
    r = c.call("fs/readFile", {"path": file_uri(dest + "2")})
    assert "error" in r and "os error 13" in r["error"]["message"], r
    assert "Refusing fs/readFile of %s: it is one of the server's own secret files" % link \
        in srv.stderr().decode(errors="replace")
    assert token not in srv.stderr().decode(errors="replace")
    # another file, and a link to it: served
    other = os.path.join(area.ws, "plain.txt")
    with open(other, "w") as f:
        f.write("plain\n")
    os.symlink(other, os.path.join(area.ws, "plain-link"))
    r = c.call("fs/readFile", {"path": file_uri(os.path.join(area.ws, "plain-link"))})
    assert base64.b64decode(r["result"]["dataBase64"]) == b"plain\n", r
    r = c.call("fs/copy", {"sourcePath": file_uri(other), "destinationPath": file_uri(dest),
                           "recursive": False})
    assert r.get("result") == {} and open(dest).read() == "plain\n", r


def _refused(r):
    return "error" in r and "os error 13" in r["error"]["message"]


def test_unsandboxed_fs_writes_refuse_server_secrets(server_factory, uniq, area):
    """The write side of the same link: a sandboxed command plants notes.txt -> the
    token file (and a directory link to the server's directory); the client's
    unsandboxed fs/writeFile, fs/open (replace), fs/copy (as destination) and
    fs/rename (as source or destination) through it, or by the secret's own path,
    truncated or replaced the token (fs/writeFile opened with O_TRUNC before any
    check), so that the next reload took a token the writer chose. Now each is
    refused with EACCES and logged, before anything changes: the token, the
    --config file (which decides what each reload loads) and the audit log keep
    their bytes; ordinary files are still written through links."""
    d, token_file, token = _token_dir(area)
    conf = os.path.join(d, "uexec.toml")
    audit = os.path.join(d, "audit.jsonl")
    secret(conf, ('ws-auth = "capability-token"\nws-token-file = "%s"\naudit-log = "%s"\n'
                  % (token_file, audit)).encode())
    srv = server_factory("--config", conf)
    c = srv.connect(extra_headers=[("Authorization", "Bearer " + token)])
    run = sh(c, uniq, "ln -s %s notes.txt && ln -s %s etc && ln -s %s log.txt && cat %s; "
             "echo planted" % (token_file, d, audit, conf), area.ws, ws_policy(area.ws))
    # the configuration is hidden from sandboxes as the token is
    assert "planted" in text(run) and "Permission denied" in text(run), text(run)
    assert "ws-token-file" not in text(run), text(run)
    before = {p: open(p, "rb").read() for p in (token_file, conf, audit)}
    evil = base64.b64encode(b"attacker-token\n").decode()
    ws = lambda p: file_uri(os.path.join(area.ws, p))  # noqa: E731
    src = os.path.join(area.ws, "src.txt")
    with open(src, "w") as f:
        f.write("attacker-token\n")
    conftest.own(area.ws)
    targets = [ws("notes.txt"), file_uri(token_file), ws("etc/token"), ws("etc/uexec.toml"),
               file_uri(conf), ws("log.txt")]
    answers = []
    for t in targets:
        answers.append(("fs/writeFile", t, c.call("fs/writeFile", {"path": t,
                                                                   "dataBase64": evil})))
        answers.append(("fs/open", t, c.call("fs/open", {"handleId": uniq("h"), "path": t,
                                                         "mode": "replace"})))
        answers.append(("fs/copy", t, c.call("fs/copy", {"sourcePath": file_uri(src),
                                                         "destinationPath": t,
                                                         "recursive": False})))
    # a rename onto the token through the directory link, or of the token out of it
    answers.append(("fs/rename", "onto", c.call("fs/rename", {
        "sourcePath": file_uri(src), "destinationPath": ws("etc/token")})))
    answers.append(("fs/rename", "out", c.call("fs/rename", {
        "sourcePath": ws("etc/token"), "destinationPath": ws("stolen")})))
    for m, t, r in answers:
        assert _refused(r), (m, t, r)
    for p, data in before.items():
        now = open(p, "rb").read()
        if p == audit:
            # the server appends to its audit log from its queue when it gets to it (the
            # line of the command above may land after `before` was read): kept, grown
            # only by the server's own lines
            assert now.startswith(data) and b"attacker-token" not in now, (p, now)
        else:
            assert now == data and os.path.getsize(p) == len(data), p
    assert not os.path.lexists(os.path.join(area.ws, "stolen"))
    log = srv.stderr().decode(errors="replace")
    for m in ("fs/writeFile", "fs/open"):
        assert "Refusing %s of %s: it is one of the server's own secret files" \
            % (m, os.path.join(area.ws, "notes.txt")) in log, log
    assert "Refusing fs/copy of %s to %s" % (src, os.path.join(area.ws, "notes.txt")) in log, log
    assert "Refusing fs/rename of %s to %s" % (src, os.path.join(area.ws, "etc/token")) in log
    assert token not in log and "attacker-token" not in log
    # the token still opens the door, and other files are written through links as before
    c2 = srv.connect(extra_headers=[("Authorization", "Bearer " + token)])
    other = os.path.join(area.ws, "plain.txt")
    os.symlink(other, os.path.join(area.ws, "plain-link"))
    r = c2.call("fs/writeFile", {"path": ws("plain-link"), "dataBase64": evil})
    assert r.get("result") == {} and open(other).read() == "attacker-token\n", r
    r = c2.call("fs/copy", {"sourcePath": file_uri(src), "destinationPath": ws("copied"),
                            "recursive": False})
    assert r.get("result") == {} and open(os.path.join(area.ws, "copied")).read() == \
        "attacker-token\n", r


def test_secret_rotated_by_rename_is_covered(server_factory, uniq, area):
    """The identities of the server's secret files are cached (taken at start and at
    each SIGHUP, not stat'ed per request; tests/unit/test-secrets.c) and stat'ed again
    at most once a second, by the first request that comes a second after the last
    pass: a token replaced by rename (a new inode) without a SIGHUP is refused through
    the planted link within that second, and one a SIGHUP names at once."""
    import signal
    import time
    d, token_file, token = _token_dir(area)
    conf = os.path.join(d, "u.toml")
    secret(conf, ('ws-auth = "capability-token"\nws-token-file = "%s"\n'
                  % token_file).encode())
    srv = server_factory("--config", conf)
    c = srv.connect(extra_headers=[("Authorization", "Bearer " + token)])
    link = os.path.join(area.ws, "notes.txt")
    os.symlink(token_file, link)
    assert _refused(c.call("fs/readFile", {"path": file_uri(link)}))

    def rotate(path, n):
        new = path + ".new"
        secret(new, ("rotated-%d\n" % n).encode())
        os.rename(new, path)
        return os.stat(path).st_ino

    for n in range(3):
        ino = rotate(token_file, n)
        rotated = time.monotonic()
        conftest.wait_until(lambda: _refused(c.call("fs/readFile", {"path": file_uri(link)})),
                            timeout=conftest.EVENT_TIMEOUT, interval=0.05,
                            what="the rotated token refused")
        # served at most during the second after the last pass (the request that refreshes
        # may itself come late on a loaded host: the bound is the server's, not this loop's)
        assert os.stat(token_file).st_ino == ino
        assert time.monotonic() - rotated < 30
    # a new file named by a reload is refused at once
    token2 = os.path.join(d, "token2")
    secret(token2, b"second\n")
    os.symlink(token2, os.path.join(area.ws, "notes2.txt"))
    with open(conf, "w") as f:
        f.write('ws-auth = "capability-token"\nws-token-file = "%s"\n' % token2)
    srv.proc.send_signal(signal.SIGHUP)
    conftest.wait_until(lambda: b"Configuration reloaded" in srv.stderr(), what="the reload")
    assert _refused(c.call("fs/readFile", {"path": file_uri(os.path.join(area.ws,
                                                                           "notes2.txt"))}))


def _setid_file(path, data=b"#!/bin/sh\nid\n", mode=0o6755):
    with open(path, "wb") as f:
        f.write(data)
    conftest.own(path)
    os.chmod(path, mode)
    assert stat.S_IMODE(os.stat(path).st_mode) == mode


def test_unsandboxed_writes_never_keep_setid_bits(server, uniq, area):
    """Host root writes with CAP_FSETID, so the kernel keeps an existing file's set-id
    bits on a write: a setuid-root file (however it came to the workspace) given other
    bytes by an unsandboxed fs/writeFile, fs/open (replace) + fs/writeBlock or fs/copy
    was a setuid-root program of the writer's choice. uexec clears S_ISUID and S_ISGID
    of a file before it rewrites it, and fs/copy never carries them over from the
    source (the reference keeps both: std::fs::write, std::fs::copy); the other
    permission bits stay."""
    c = server.connect()
    payload = base64.b64encode(b"#!/bin/sh\necho replaced\n").decode()
    mode = lambda p: stat.S_IMODE(os.stat(p).st_mode)  # noqa: E731
    w = os.path.join(area.ws, "w")
    _setid_file(w)
    r = c.call("fs/writeFile", {"path": file_uri(w), "dataBase64": payload})
    assert r.get("result") == {} and mode(w) == 0o755, (r, oct(mode(w)))
    assert open(w, "rb").read() == b"#!/bin/sh\necho replaced\n"
    # followSymlinks: false takes the same path
    w2 = os.path.join(area.ws, "w2")
    _setid_file(w2, mode=0o2750)
    r = c.call("fs/writeFile", {"path": file_uri(w2), "dataBase64": payload,
                                "followSymlinks": False})
    assert r.get("result") == {} and mode(w2) == 0o750, (r, oct(mode(w2)))
    o = os.path.join(area.ws, "o")
    _setid_file(o, mode=0o4711)
    h = uniq("h")
    r = c.call("fs/open", {"handleId": h, "path": file_uri(o), "mode": "replace"})
    assert r.get("result") == {"handleId": h}, r
    assert mode(o) == 0o711 and os.path.getsize(o) == 0
    r = c.call("fs/writeBlock", {"handleId": h, "offset": 0, "chunk": payload})
    assert r.get("result") is not None, r
    c.call("fs/close", {"handleId": h})
    assert mode(o) == 0o711 and open(o, "rb").read() == b"#!/bin/sh\necho replaced\n"
    # fs/copy: from a set-id source, to a new file and over an existing set-id one
    src = os.path.join(area.ws, "src")
    _setid_file(src, mode=0o6755)
    old = os.path.join(area.ws, "old")
    _setid_file(old, b"old\n", 0o4700)
    for dst in (os.path.join(area.ws, "new"), old):
        r = c.call("fs/copy", {"sourcePath": file_uri(src), "destinationPath": file_uri(dst),
                               "recursive": False})
        assert r.get("result") == {} and mode(dst) == 0o755, (dst, r, oct(mode(dst)))
        assert open(dst, "rb").read() == b"#!/bin/sh\nid\n"
    tree = os.path.join(area.ws, "tree")
    os.makedirs(tree)
    _setid_file(os.path.join(tree, "prog"), mode=0o4755)
    r = c.call("fs/copy", {"sourcePath": file_uri(tree), "destinationPath": file_uri(
        os.path.join(area.ws, "tree2")), "recursive": True})
    assert r.get("result") == {} and mode(os.path.join(area.ws, "tree2", "prog")) == 0o755, r
    assert mode(src) == 0o6755   # the source keeps its own
    # another owner's set-id file, which the sandboxed fs helper may write but not chmod:
    # written all the same, the truncation (no CAP_FSETID there) clearing the bit
    theirs = os.path.join(area.ws, "theirs")
    _setid_file(theirs, mode=0o4777)
    os.chown(theirs, conftest.NOBODY, conftest.NOBODY)
    os.chmod(theirs, 0o4777)
    r = c.call("fs/writeFile", {"path": file_uri(theirs), "dataBase64": payload,
                                "sandbox": ws_policy(area.ws)})
    assert r.get("result") == {} and mode(theirs) == 0o777, (r, oct(mode(theirs)))
    assert open(theirs, "rb").read() == b"#!/bin/sh\necho replaced\n"


# --------------------------------------------------------------------------
# finding: the empty directory masking a missing entry could be moved away

def test_missing_entry_mask_cannot_be_moved_away(server, uniq, area):
    """A `deny` (or `read`) entry that does not exist yet inside a writable root is
    masked by an empty read-only directory on its first missing component
    (`x/y` of `x/y/secret`), so that the command cannot create it. Its parent `x`
    was not pinned: `mv x x2` moved the mask along and the command created
    `x/y/secret` after all; and with a link left in the parent's place (`r` ->
    outside), uexec's removal of the mask when the process ended went through it
    and took an empty directory outside the writable roots (`outside/o`). Now the
    parents are pinned (EBUSY)."""
    os.makedirs(os.path.join(area.ws, "x"))
    os.makedirs(os.path.join(area.ws, "r"))
    os.makedirs(os.path.join(area.out, "o"))
    conftest.own(area.base)
    before = area.snapshot()
    sb = ws_policy(area.ws, extra=[path_entry(area.ws + "/x/y/secret", "deny"),
                                   path_entry(area.ws + "/r/o/file", "read")])
    out = text(sh(server.connect(), uniq,
                  "mv x x2 && mkdir -p x/y && echo planted > x/y/secret; "
                  "mv r r2 && ln -s %s r; echo end" % area.out, area.ws, sb))
    assert "end" in out, out
    for a, b in (("x", "x2"), ("r", "r2")):
        assert "mv: cannot move '%s' to '%s': Device or resource busy" % (a, b) in out, out
    assert not os.path.lexists(os.path.join(area.ws, "x/y/secret")), out
    assert area.snapshot() == before, out          # outside/o still there
    assert sorted(os.listdir(area.ws)) == ["r", "x"], (os.listdir(area.ws), out)


def test_mask_removal_never_follows_a_planted_link(server, uniq, area):
    """The same removal, with the link planted by another sandbox that may write the
    workspace's parent `p` (so the first one's pins do not bind it) but not `outside`:
    when the first process ends, uexec removes its mask through no symbolic link
    (openat2 RESOLVE_NO_SYMLINKS on the canonical path): the empty directory outside
    stays, the mask is left where its parent went (and logged)."""
    parent = os.path.join(area.base, "p")
    ws = os.path.join(parent, "ws")
    os.makedirs(os.path.join(ws, "x"))
    os.makedirs(os.path.join(area.out, "y"))
    conftest.own(area.base)
    c = server.connect()
    sb = ws_policy(ws, extra=[path_entry(ws + "/x/y/secret", "deny")])
    pid = uniq("holder")
    c.start(pid, ["/bin/sh", "-c", "echo ready; read line"], cwd=ws,
            env={"PATH": "/usr/bin:/bin"}, sandbox=sb, pipeStdin=True)
    run = c.collect_until_output(pid, b"ready", timeout=conftest.EVENT_TIMEOUT)
    out = text(sh(c, uniq, "mv ws/x ws/x2 && ln -s %s ws/x && rmdir %s/y; echo end"
                  % (area.out, area.out), parent, ws_policy(parent)))
    assert "end" in out and "Read-only file system" in out, out   # outside is not its own
    c.write(pid, b"\n", "w1")
    c.collect(pid, run=run)
    conftest.wait_until(lambda: b"Left the sandbox mount point" in server.stderr(),
                        what="uexec to leave the moved mask", timeout=conftest.EVENT_TIMEOUT)
    assert os.path.isdir(os.path.join(area.out, "y")), "uexec removed a directory outside"


# --------------------------------------------------------------------------
# more doors found shut, not covered before

SIGIO_CODE = r'''
import fcntl, time
V = %d
r, w = os.pipe()
t("setown", lambda: fcntl.fcntl(r, fcntl.F_SETOWN, V))
t("setsig", lambda: fcntl.fcntl(r, 10, 9))          # F_SETSIG SIGKILL
t("async", lambda: fcntl.fcntl(r, fcntl.F_SETFL, os.O_ASYNC | os.O_NONBLOCK))
os.write(w, b"x")
time.sleep(0.3)
print("done", flush=True)
'''


@pytest.mark.parametrize("policy", ["workspace", "full-write"])
@pytest.mark.parametrize("kind", ["default", "abi0"])
def test_sigio_to_a_host_process(server_factory, uniq, area, policy, kind):
    """Another way to signal than kill(2): F_SETOWN on a pipe with O_ASYNC and
    F_SETSIG SIGKILL. The kernel lets a uid 0 owner signal any process this way
    (sigio_perm asks no capability), so only the PID namespace (the process cannot
    name the victim) or, where the host's PID namespace is shared (full-disk write
    from ABI 6), Landlock's signal scoping stops it. A host process survives."""
    import subprocess
    srv = sandbox_server(server_factory, kind, SANDBOX_UID)
    c = srv.connect()
    full = {"permissions": {"type": "managed", "network": "restricted",
                            "file_system": {"type": "unrestricted"}},
            "windowsSandboxLevel": "disabled", "cwd": file_uri(area.ws)}
    victim = subprocess.Popen(["sleep", "60"])
    try:
        run = py(c, uniq, SIGIO_CODE % victim.pid, area.ws,
                 ws_policy(area.ws) if policy == "workspace" else full)
        assert "done" in text(run), text(run)
        assert victim.poll() is None, "SIGIO killed a host process: %r" % text(run)
    finally:
        victim.kill()
        victim.wait()


def test_dev_shm_private(server, uniq, area):
    """Each sandboxed process has a /dev/shm of its own (POSIX shared memory and
    semaphores work there): the host's files are not visible and nothing written
    inside reaches the host's (so no two sandboxes share one)."""
    host = "/dev/shm/uexec-rt-host-%d" % os.getpid()
    inner = "/dev/shm/uexec-rt-inner-%d" % os.getpid()
    if not os.path.isdir("/dev/shm"):
        pytest.skip("needs /dev/shm on this host")
    with open(host, "w") as f:
        f.write("host\n")
    try:
        c = server.connect()
        out = text(sh(c, uniq, "cat %s; echo inner > %s && echo wrote; echo end" % (host, inner),
                      area.ws, ws_policy(area.ws)))
        assert "end" in out and "wrote" in out and "host\n" not in out, out
        assert "No such file or directory" in out, out
        assert not os.path.exists(inner), out
    finally:
        os.unlink(host)
        if os.path.exists(inner):
            os.unlink(inner)


def test_secret_files_past_the_snapshot_fail_closed(server_factory, uniq, area):
    """The list of secret files only grows (a path once hidden stays hidden): a token
    rotated into a new file at each of 70 reloads. The unsandboxed fs check knows 64
    files at most; the newest come first (the token in use is always refused), and past
    64 every unsandboxed read is refused, with an error in the log, rather than letting
    the ones left out through (the check stopped at 16, oldest first, silently)."""
    import signal
    d = os.path.join(area.base, "etc")
    os.makedirs(d, mode=0o700)
    conf = os.path.join(d, "u.toml")
    other = os.path.join(area.ws, "plain.txt")
    with open(other, "w") as f:
        f.write("plain\n")
    conftest.own(area.base)

    def rotate(n):
        tok = "tok-%d-%s" % (n, base64.b64encode(os.urandom(12)).decode())
        secret(os.path.join(d, "t%d" % n), tok.encode() + b"\n")
        with open(conf, "w") as f:
            f.write('ws-auth = "capability-token"\nws-token-file = "%s"\n'
                    % os.path.join(d, "t%d" % n))
        secret(conf, open(conf, "rb").read())
        return tok

    tok = rotate(0)
    srv = server_factory("--config", conf)
    c = srv.connect(extra_headers=[("Authorization", "Bearer " + tok)])
    for n in range(1, 71):
        rotate(n)
        srv.proc.send_signal(signal.SIGHUP)
        conftest.wait_until(lambda: srv.stderr().count(b"Configuration reloaded") == n,
                            what="reload %d" % n)
        if n == 20:
            # past the old bound of 16: the newest token is still refused, others served
            r = c.call("fs/readFile", {"path": file_uri(os.path.join(d, "t20"))})
            assert "error" in r and "os error 13" in r["error"]["message"], r
            r = c.call("fs/readFile", {"path": file_uri(other)})
            assert base64.b64decode(r["result"]["dataBase64"]) == b"plain\n", r
    r = c.call("fs/readFile", {"path": file_uri(other)})
    assert "error" in r and "os error 13" in r["error"]["message"], r
    assert b"More than 64 of the server's secret files exist" in srv.stderr()


# --------------------------------------------------------------------------
# finding: the guarded port could be taken at another address

BIND_CODE = r'''
P = %d
def listen(fam, addr, port):
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(1)
    return s
keep = []
t("own_v6_loopback", lambda: keep.append(listen(socket.AF_INET6, "::1", P)))
t("own_v4_other", lambda: keep.append(listen(socket.AF_INET, "127.0.0.2", P)))
t("other_port", lambda: keep.append(listen(socket.AF_INET, "127.0.0.2", 0)))
'''


@pytest.mark.needs("listener-guard")
def test_guarded_port_cannot_be_taken_at_another_address(server, uniq, area):
    """Network enabled: uexec listens on 127.0.0.1:P; the sandbox listened on
    127.0.0.2:P and [::1]:P (no conflict for the kernel), so a client reaching the
    server as `localhost` (::1 first) talked to the sandbox and handed it its bearer
    token; a uexec restarting on the host could lose its port the same way. The
    listener guard refuses binding any guarded port (EPERM); other ports bind."""
    needs_network_access()
    require_guard(server)
    c = server.connect()
    run = py(c, uniq, BIND_CODE % server.port, area.ws, ws_policy(area.ws, network="enabled"))
    res = results(run)
    assert res.get("own_v4_other") == "EPERM", text(run)
    if HOST.missing("ipv6") is None:
        assert res.get("own_v6_loopback") == "EPERM", text(run)
    assert res.get("other_port") == "ok", text(run)


EPHEMERAL_CODE = r'''
import errno
P = %d
def fish(make, tries):
    """-> "taken" if a socket got port P, else "refused N" (EPERM count) or "never"."""
    refused = 0
    for _ in range(tries):
        s = make()
        try:
            port = s.getsockname()[1]
        except OSError as e:
            s.close()
            if e.errno != errno.EPERM:
                raise
            refused += 1
            continue
        s.close()
        if port == P:
            return "taken"
    return "refused%%d" %% refused if refused else "never"
def bound(fam, addr):
    def make():
        s = socket.socket(fam, socket.SOCK_STREAM)
        try:
            s.bind((addr, 0))
        except OSError:
            s.close()
            raise
        return s
    def wrapped():
        try:
            return make()
        except OSError as e:
            if e.errno != errno.EPERM:
                raise
            class Refused:
                def getsockname(self):
                    raise OSError(errno.EPERM, "refused")
                def close(self):
                    pass
            return Refused()
    return wrapped
def autobound():
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.listen(1)
    return s
print("v4_bind0", fish(bound(socket.AF_INET, "127.0.0.2"), TRIES))
if HAVE6:
    print("v6_bind0", fish(bound(socket.AF_INET6, "::1"), TRIES))
    print("v6_listen", fish(autobound, TRIES))
'''


@pytest.mark.needs("listener-guard")
def test_guarded_port_cannot_be_chosen_by_the_kernel(server, uniq, area):
    """The same through the kernel's choice: bind(port 0) at another address, and
    listen() on an unbound IPv6-only socket (bound by the kernel at [::], no bind hook
    runs), repeated until the ephemeral port that comes is uexec's (P is ephemeral
    itself: it listens on port 0). Before, both got P within a few thousand tries; now
    a bind that gets P is refused (EPERM from the post-bind hook) and the wildcard P is
    held by uexec, so the listen never gets it."""
    needs_network_access()
    require_guard(server)
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        lo, hi = map(int, f.read().split())
    if not lo <= server.port <= hi:
        pytest.skip("the server's port %d is outside the ephemeral range" % server.port)
    # bind(0) and listen() take even ports (connect() odd ones), P among them: each try
    # finds P with a chance of about 2 / (hi - lo), so these tries miss it with a chance
    # of e**-12 where nothing guards it
    tries = 12 * (hi - lo + 1) // 2
    have6 = HOST.missing("ipv6") is None
    code = "TRIES = %d\nHAVE6 = %r\n" % (tries, have6) + EPHEMERAL_CODE % server.port
    c = server.connect()
    run = py(c, uniq, code, area.ws, ws_policy(area.ws, network="enabled"), timeout=300)
    lines = dict(line.split() for line in run.stdout.decode().splitlines() if " " in line)
    assert run.exit_code == 0, text(run)
    assert lines["v4_bind0"] != "taken", text(run)
    if have6:
        assert lines["v6_bind0"] != "taken", text(run)
        assert lines["v6_listen"] != "taken", text(run)


def _setuid_root_program():
    for p in ("/usr/bin/passwd", "/usr/bin/su", "/bin/su", "/usr/bin/mount", "/bin/mount"):
        try:
            st = os.stat(p)
        except OSError:
            continue
        if st.st_uid == 0 and st.st_mode & stat.S_ISUID and stat.S_ISREG(st.st_mode):
            return p
    return None


def test_sandboxed_fs_copy_mints_no_setuid_copy(server, uniq, area):
    """fs/copy keeps the source's set-id bits where the copy keeps its owner (as
    `cp -p` by root). Under a sandbox the fs helper's seccomp filter refuses them
    (fchmod with a set-id mode), so copying a setuid-root program into the workspace,
    new or over an existing file, leaves no setuid-root file there."""
    src = _setuid_root_program()
    if not src:
        pytest.skip("needs a setuid-root program on this host (passwd, su, mount)")
    c = server.connect()
    open(os.path.join(area.ws, "existing"), "w").close()
    conftest.own(area.base)
    for name in ("new", "existing"):
        dst = os.path.join(area.ws, name)
        c.call("fs/copy", {"sourcePath": file_uri(src), "destinationPath": file_uri(dst),
                           "recursive": False, "sandbox": ws_policy(area.ws)})
        if os.path.exists(dst):
            st = os.stat(dst)
            assert not (st.st_mode & (stat.S_ISUID | stat.S_ISGID)), \
                "%s: mode %o owner %d" % (name, st.st_mode, st.st_uid)


# --------------------------------------------------------------------------
# finding: a refused process/start leaked its plan

def leak_checked_env():
    """The server's environment with LeakSanitizer on and its reports on stderr (where
    Server.check_stop looks), whatever the suite's ASAN_OPTIONS say (tests/sanitize.sh
    sends them to a log directory). A build without ASan ignores it."""
    opts = [o for o in os.environ.get("ASAN_OPTIONS", "").split(":")
            if o and not o.startswith(("detect_leaks=", "log_path="))]
    return dict(os.environ, ASAN_OPTIONS=":".join(opts + ["detect_leaks=1"]))


def glob_entry(pattern):
    return {"path": {"type": "glob_pattern", "pattern": pattern}, "access": "deny"}


def test_refused_starts_leak_nothing(server_factory, uniq, area):
    """A policy the planner refuses after it began the plan, repeated: refusals met deep
    in the builder after it made the masks of missing protected names (a protected name
    that is a symbolic link, a deny glob whose static prefix is `/`, a glob scan turned
    off), and root write with a deny entry and a deny glob from `/` (the masks of the
    root's own missing names made first; once refused outright, its plan freed without
    its cgroup mount list, ~300 bytes per request under LeakSanitizer). Every one is refused with the usual -32602 and runs nothing; the masks
    made for a refused start are gone from the workspace; and the server, stopped at the
    end (LeakSanitizer checks at exit on an ASan build), reports nothing."""
    srv = server_factory(env=leak_checked_env())
    c = srv.connect()
    linked = os.path.join(area.base, "linked")
    os.makedirs(linked)
    os.symlink(area.out, os.path.join(linked, ".aws"))   # the last protected name
    conftest.own(area.base)
    scan_off = ws_policy(area.ws, extra=[glob_entry(area.ws + "/*.env")])
    scan_off["permissions"]["file_system"]["glob_scan_max_depth"] = 0
    cases = [
        ("root-write glob from /", area.ws, sandbox(managed([special("root", "write"),
                                                            path_entry(area.out, "deny"),
                                                            glob_entry("/*/secrets/*.env")]))),
        ("protected link", linked, ws_policy(linked)),
        ("glob from /", area.ws, ws_policy(area.ws, extra=[glob_entry("/*/secrets/*.env")])),
        ("scan off", area.ws, scan_off),
    ]
    why = ["it is a symbolic link inside a writable root",
           "its static prefix is `/`",
           "glob_scan_max_depth 0 turns the scan off"]
    marker = os.path.join(area.out, "ran")
    for rnd in range(10):
        for name, cwd, sb in cases:
            reply = c.call("process/start", {"processId": uniq("refused"),
                                             "argv": ["/bin/sh", "-c", "touch " + marker],
                                             "cwd": file_uri(cwd), "env": {}, "tty": False,
                                             "sandbox": sb})
            assert reply.get("error") == REFUSED, (name, reply)
        if rnd == 0:
            # the log lines are rate limited: each reason once, from the first round
            log = srv.log()
            for w in why:
                assert w in log, (w, log)
    assert not os.path.exists(marker)
    assert area.leftovers() == [] and area.leftovers(linked) == [".aws"], \
        (os.listdir(area.ws), os.listdir(linked))
    srv.check_stop()


# --------------------------------------------------------------------------
# finding: a mount point made by one server, removed under another server's sandbox

@pytest.mark.parametrize("kind", ["default", "non-root"])
def test_mount_point_of_another_server_is_never_removed_under_a_sandbox(server_factory, uniq,
                                                                          area, kind):
    """Two uexec on one host, one workspace without .git: B's sandbox made the empty
    directory .git as its read-only mount point; A's sandbox started meanwhile bound
    that same directory. When B's process ended, B removed the directory, and removing
    a directory that is a mount point in another mount namespace is allowed: it
    detached A's read-only mount, and A's sandbox created a writable .git on the host
    (and wrote .git/pwned). Now the directory carries a mark and each server holds a
    shared lock on it while a sandbox of its uses it: B leaves it, A's process still
    sees it read-only, and A removes it once its process is gone. (A non-root uexec
    marks with a user. attribute, root with a trusted. one.)"""
    a, b = sandbox_server(server_factory, kind), sandbox_server(server_factory, kind)
    a.own(area.base)   # a non-root server's workspace is that uid's
    ca, cb = a.connect(), b.connect()
    sb = ws_policy(area.ws)
    git = os.path.join(area.ws, ".git")
    pb, pa = uniq("b"), uniq("a")
    cb.start(pb, ["/bin/bash", "-c", "read x"], cwd=area.ws, env={"PATH": "/usr/bin:/bin"},
             sandbox=sb, pipeStdin=True)
    conftest.wait_until(lambda: os.path.isdir(git), what="B's mount point")
    ca.start(pa, ["/bin/bash", "-c", "echo started; read x; mkdir .git/hooks; mkdir .git; "
                  "touch .git/pwned && echo WROTE"],
             cwd=area.ws, env={"PATH": "/usr/bin:/bin"}, sandbox=sb, pipeStdin=True)
    ca.collect_until_output(pa, "started")
    cb.write(pb, b"x\n", "w1")
    cb.collect(pb)
    # B has ended its process (closed): its release of the mount point is done
    assert os.path.isdir(git), "B removed the mount point A's sandbox uses"
    ca.write(pa, b"x\n", "w1")
    out = text(ca.collect(pa))
    assert "WROTE" not in out and "Read-only file system" in out, out
    assert not os.path.exists(os.path.join(git, "pwned"))
    conftest.wait_until(lambda: not os.path.lexists(git), what="A removing the mount point")
    assert not [n for n in os.listdir(area.ws) if n.startswith(".uexec-mount-")]


def test_two_servers_share_mount_points_without_failing_starts(server_factory, area):
    """The same race seen as failed starts: two servers starting sandboxes over one
    workspace in a loop. A plan saw the other server's mount point and bound it; the
    other server removed it meanwhile; the start failed with -32603 `sandbox setup
    failed at binding a read-only path: No such file or directory`. (Found when test
    files ran two at a time: the real client's policy makes /tmp writable.)"""
    servers = [server_factory(), server_factory()]
    sb = ws_policy(area.ws)
    errors = []

    def loop(srv, k):
        c = srv.connect()
        for i in range(60):
            r = c.call("process/start", {"processId": "p%d-%d" % (k, i), "argv": ["/bin/true"],
                                         "cwd": file_uri(area.ws), "env": {}, "tty": False,
                                         "sandbox": sb})
            if "error" in r:
                errors.append((k, i, r["error"]))
                return
            c.collect("p%d-%d" % (k, i))

    threads = [threading.Thread(target=loop, args=(s, k)) for k, s in enumerate(servers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    conftest.wait_until(lambda: not os.path.lexists(os.path.join(area.ws, ".git")),
                        what="the last server removing the mount point")
