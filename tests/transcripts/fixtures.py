"""Reconstructed fixtures of the fs probes (p07_fs.out, p09_watch.out).

The probes created files outside the protocol before (and, for p09, while) they sent
their frames; none of that was recorded. What is rebuilt here is inferred from the
transcripts themselves (sizes, dataBase64 contents, directory listings, walk results,
metadata replies, the probe's own printed checks) and from PROTOCOL.md §6.11-§6.22.
Everything lives under <root>/root/es-scratch (the replayer maps the probe's paths there).

* SECTION_SETUP[(file, section)](root): state the probe prepared just before that
  section (p07 sections share one tree and depend on their predecessors, as in the
  recording, which used one connection for all of them).
* ACTIONS[(file, section)]: [(anchor, offset, description, fn)]: filesystem changes the
  p09 probe made while its watches were registered; run at the recorded time of the
  anchor frame + offset (anchor: substring of the recorded frame text, optionally
  prefixed "N:" for its N-th occurrence in the section).
"""
import base64
import os
import random
import re
import shutil
import subprocess

SCRATCH = "/root/es-scratch"

# (file, section, request id) -> reason: steps whose precondition cannot be built here
UNAVAILABLE = {}

# a.txt's mtime, set by the probe (modifiedAtMs 1700000001250 in the paths section)
A_TXT_MTIME = 1700000001.25
FIXED_MTIMES_MS = {1700000001250}

BIG_BIN_SIZE = 3145851          # "big.bin: 3145851 bytes, sha ok: True"
SPARSE_1TB = 1 << 40


def _p(root, rel):
    return os.path.join(root + SCRATCH, rel)


def _write(path, data, mode=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(path, "wb") as f:
        f.write(data)
    if mode is not None:
        os.chmod(path, mode)


def _sparse(path, size):
    with open(path, "wb") as f:
        f.truncate(size)


def _symlink(target, path):
    if os.path.lexists(path):
        os.unlink(path)
    os.symlink(target, path)


def _chattr(path, flag):
    try:
        r = subprocess.run(["chattr", flag, path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return r.returncode == 0
    except OSError:
        return False


def _chmod_dirs(path):
    for dirpath, dirnames, _ in os.walk(path):
        for d in dirnames:
            full = os.path.join(dirpath, d)
            if not os.path.islink(full):
                try:
                    os.chmod(full, 0o755)
                except OSError:
                    pass


def _unlock_tree(path):
    """Clears the immutable flag below path and gives its directories search
    permission back. Each can hide the other (chattr -R cannot enter a 000
    directory, chmod cannot change an immutable one), so chmod runs on both
    sides of chattr."""
    _chmod_dirs(path)
    subprocess.run(["chattr", "-R", "-i", path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _chmod_dirs(path)


def _rmtree(path):
    """rm -rf that also clears the immutable flag and restores search permissions."""
    if not os.path.lexists(path):
        return
    if os.path.isdir(path) and not os.path.islink(path):
        _unlock_tree(path)
        shutil.rmtree(path, ignore_errors=True)
    else:
        _chattr(path, "-i")
        os.unlink(path)


def cleanup(root):
    """Undo what shutil.rmtree cannot (immutable files)."""
    base = root + SCRATCH
    if os.path.isdir(base):
        _unlock_tree(base)


# --------------------------------------------------------------------------
# p07_fs.out


def _recorded_b64_prefix(spec, req_id):
    """The visible (truncated) dataBase64 prefix of a recorded reply in p07."""
    path = os.path.join(spec, "probes", "p07_fs.out")
    pat = re.compile(r'<< \{"id":%d,"result":\{"(?:dataBase64|chunk)":"([A-Za-z0-9+/=]*)' % req_id)
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            m = pat.search(line)
            if m:
                s = m.group(1)
                return s[: len(s) // 4 * 4]
    return ""


def big_bin_content(spec):
    """big.bin: its first ~1.1 KiB are visible in the recorded fs/readFile reply
    (id 46) and fs/readBlock reply (id 141); the rest is unknown (random on the
    probe host), filled here with deterministic pseudo-random bytes."""
    head = max((base64.b64decode(_recorded_b64_prefix(spec, i)) for i in (46, 141)), key=len)
    rng = random.Random(3145851)
    rest = bytes(rng.getrandbits(8) for _ in range(min(4096, BIG_BIN_SIZE - len(head))))
    # cheap bulk fill: repeat a 4 KiB random block
    body = (rest * (BIG_BIN_SIZE // max(1, len(rest)) + 1))[: BIG_BIN_SIZE - len(head)]
    return head + body


def p07_base(root, spec):
    """The probe's tree at the start of p07 (state before the `paths` section).

    Names and types: the `readdir` listing (id 98) minus what the earlier sections
    created through the protocol (big-w.bin, e.txt, new.txt, cd1, cd3, cd4), and
    `nope`, which is the target the fs/writeFile through `dangling` created (id 66).
    Contents/sizes: a.txt "hello\\n" (6 bytes, readFile id 37, mtime 1700000001.25),
    bin.dat bytes 0..255 (id 38), empty.txt "" (id 39), `with space.txt` "sp" (id 44),
    unicodé.txt 1 byte (id 8), dir/x.txt "x" (native id 15), dir/sub/y.txt (cp-dir
    tree), empty/ (id 99), link-a -> a.txt, link-dir -> dir, dangling -> nope
    (canonicalize ids 28/29/31, metadata ids 84-86), fifo (ids 53/88), immutable.txt
    (chattr +i: EPERM ids 67/114), sparse-1tb (1 TiB, id 47), big.bin (3145851 bytes),
    .hidden, .hiddendir/, bad-\\xff\\xfe.bin (readdir listing: a non-UTF-8 name).
    Unknown contents (.hidden, unicodé.txt, y.txt, immutable.txt, .hiddendir's
    children, bad-*.bin) are invented with the recorded sizes where known.
    /root/es-scratch/dl: sub/ and a dangling symlink (appended `dl` run of `native`).
    """
    fs = _p(root, "fs")
    _rmtree(fs)
    os.makedirs(fs)
    _write(fs + "/a.txt", "hello\n")
    os.utime(fs + "/a.txt", (A_TXT_MTIME, A_TXT_MTIME))
    _write(fs + "/bin.dat", bytes(range(256)))
    _write(fs + "/empty.txt", b"")
    _write(fs + "/with space.txt", "sp")
    _write(fs + "/unicodé.txt", "u")
    _write(fs + "/.hidden", "hidden\n")
    _write(fs + "/.hiddendir/inner.txt", "inner\n")
    _write(fs + "/dir/x.txt", "x")
    _write(fs + "/dir/sub/y.txt", "y")
    os.makedirs(fs + "/empty")
    _symlink("a.txt", fs + "/link-a")
    _symlink("dir", fs + "/link-dir")
    _symlink("nope", fs + "/dangling")
    os.mkfifo(fs + "/fifo")
    _write(fs + "/immutable.txt", "immutable\n")
    if not _chattr(fs + "/immutable.txt", "+i"):
        why = "immutable file: chattr +i not supported here"
        UNAVAILABLE[("p07", "write", 67)] = why
        UNAVAILABLE[("p07", "remove", 114)] = why
    if os.geteuid() != 0:
        UNAVAILABLE[("p07", "write", 68)] = "/proc/version write as non-root fails with EACCES, not EIO"
    _sparse(fs + "/sparse-1tb", SPARSE_1TB)
    _write(os.fsencode(fs) + b"/bad-\xff\xfe.bin", b"bad\n")
    _write(fs + "/big.bin", big_bin_content(spec))
    dl = _p(root, "dl")
    _rmtree(dl)
    os.makedirs(dl + "/sub")
    _symlink("gone-target", dl + "/dangling")


def p07_remove(root, spec):
    """rm/: file, full2/ and full/ and full3/ (non-empty), emptyd/ (empty),
    link-to-dir -> a directory with an inner file ("target kept=True inner kept=True")."""
    rm = _p(root, "fs/rm")
    _rmtree(rm)
    _write(rm + "/file", "f\n")
    _write(rm + "/full/f", "f\n")
    _write(rm + "/full/sub/g", "g\n")
    _write(rm + "/full2/f", "f\n")
    _write(rm + "/full3/f", "f\n")
    _write(rm + "/full3/sub/g", "g\n")
    os.makedirs(rm + "/emptyd")
    _write(rm + "/target/inner", "inner\n")
    _symlink("target", rm + "/link-to-dir")


def p07_copy(root, spec):
    """cp-exist.txt exists before id 116 (overwritten with a.txt's 9 bytes);
    cpl/ holds a symlink ("symlink inside copied dir kept as link")."""
    fs = _p(root, "fs")
    _write(fs + "/cp-exist.txt", "an older and longer content\n")
    _write(fs + "/cpl/f.txt", "f\n")
    _symlink("f.txt", fs + "/cpl/ln")


def p07_walksum(root, spec):
    """w/: the tree of the `base` summary (.hid/inner/f, a/b/c/d/deep.txt, noperm/)
    plus link-a -> a (listed only with followDirectorySymlinks, not descended)."""
    w = _p(root, "fs/w")
    _rmtree(w)
    _write(w + "/.hid/inner/f", "f\n")
    _write(w + "/a/b/c/d/deep.txt", "deep\n")
    os.makedirs(w + "/noperm")
    if os.geteuid() == 0:
        os.chmod(w + "/noperm", 0)   # the probe ran as root: still readable
    _symlink("a", w + "/link-a")


def p07_limit(root, spec):
    fs = _p(root, "fs")
    for n in (1073741824, 629145600, 536870913, 536870912, 268435457):
        _sparse(fs + "/sparse-%d" % n, n)


def p07_native(root, spec):
    """Run separately, on a fresh tree: a.txt is "hello\\n" again (id 14), dir/x.txt "x"
    (id 15); plus pct%41.txt "literal-percent" (ids 11/12)."""
    p07_base(root, spec)
    _write(_p(root, "fs") + "/pct%41.txt", "literal-percent")


# --------------------------------------------------------------------------
# p09_watch.out


def p09_base(root, spec):
    """watch/: `exists` (a missing-list member of watches 4/5 and the present path of
    6/7), `pres` (present path deleted, watch 30), `pres2/` (a directory a file is
    created in, watch 31). Everything else the probe watched was missing."""
    w = _p(root, "watch")
    _rmtree(w)
    os.makedirs(w)
    _write(w + "/exists", "e\n")
    _write(w + "/pres", "p\n")
    os.makedirs(w + "/pres2")


_LISTENERS = {}


def _listen_forever(port):
    """A loopback TCP listener that accepts and closes (the probe's `net-enabled`
    target), one per port for the whole run."""
    import socket
    import threading
    if port in _LISTENERS:
        return
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(8)
    _LISTENERS[port] = s

    def loop():
        while True:
            try:
                c, _ = s.accept()
            except OSError:
                return
            c.close()
    threading.Thread(target=loop, daemon=True).start()


def p11_proc(root, spec):
    """sbx/work (the workspace, with .git, no .agents) holding inside.txt "inside\\n"
    (ro-read), sbx/outside holding existing.txt "outside\\n" (ww-read-outside), and a
    listener on 127.0.0.1:8801 that ww-net must not reach and net-enabled does."""
    sbx = _p(root, "sbx")
    _rmtree(sbx)
    os.makedirs(sbx + "/work/.git")
    os.makedirs(sbx + "/outside")
    _write(sbx + "/work/inside.txt", "inside\n")
    _write(sbx + "/outside/existing.txt", "outside\n")
    _listen_forever(8801)


def touch(*rels):
    def fn(root):
        for rel in rels:
            path = _p(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "ab"):
                pass
    return fn


def mkdir(*rels):
    def fn(root):
        for rel in rels:
            os.makedirs(_p(root, rel), exist_ok=True)
    return fn


def rm(*rels):
    def fn(root):
        for rel in rels:
            path = _p(root, rel)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            elif os.path.lexists(path):
                os.unlink(path)
    return fn


def seq(*fns):
    def fn(root):
        for f in fns:
            f(root)
    return fn


def append(rel, data):
    def fn(root):
        with open(_p(root, rel), "ab") as f:
            f.write(data)
    return fn


def many(root):
    mkdir("watch/many")(root)
    for i in range(200):
        touch("watch/many/%d" % i)(root)


SECTION_SETUP = {
    ("p07", "paths"): p07_base,
    ("p07", "remove"): p07_remove,
    ("p07", "copy"): p07_copy,
    ("p07", "walksum"): p07_walksum,
    ("p07", "limit"): p07_limit,
    ("p07", "native"): p07_native,
    ("p09", "basic"): p09_base,
    ("p09", "nested"): p09_base,
    ("p09", "server"): p09_base,
    ("p09", "resume"): p09_base,
    ("p09", "semantics"): p09_base,
    ("p09", "twoconn"): p09_base,
    ("p11", "proc"): p11_proc,
}

# p07 sections share one tree (and in the recording one connection): running one
# needs its predecessors. `native` ran separately on a fresh tree.
STATEFUL = {"p07": ["paths", "read", "write", "mkdir", "metadata", "readdir", "remove", "copy",
                    "stream", "walk", "walksum", "limit"]}

# Anchors: a substring of the recorded frame (send or recv); "N:" prefix = N-th match.
ACTIONS = {
    ("p09", "basic"): [
        # after the registrations: 1..6 were replaced by later ids, the active watch is
        # the last successful one (id 12, watchId 2^64-1 on `max`)
        ('"invalid number"', 0.05, "create a (watched by 1 and 2)", touch("watch/a")),
        ('"invalid number"', 10.05, "remove a and create it again", seq(rm("watch/a"), touch("watch/a"))),
        ('"invalid number"', 13.05, "delete exists", rm("watch/exists")),
        ('"watchId":18446744073709551615}}', -0.01, "create zero / max", touch("watch/zero", "watch/max")),
    ],
    ("p09", "nested"): [
        ('{"id":2,"result"', 0.001, "create p (ancestor of p/q/r)", mkdir("watch/p")),
        ('"watchId":11}}', 0.01, "create p/q", mkdir("watch/p/q")),
        ('"watchId":11}}', 2.01, "create p/q/r", mkdir("watch/p/q/r")),
        ('{"id":3,"result"', 0.0005, "create+delete blink within 10 ms",
         seq(touch("watch/blink"), rm("watch/blink"))),
        ('{"id":5,"result"', 0.001, "create m1 (watch 13 kept)", touch("watch/m1")),
        ('"watchId":13}}', 0.05, "create m2 (the ignored re-registration)", touch("watch/m2")),
        ('{"id":7,"result"', 0.001, "create m3 (watch 14 kept)", touch("watch/m3")),
        ('{"id":8,"result"', 0.001, "create m4", touch("watch/m4")),
        ('"watchId":15}}', 0.05, "write into m4", append("watch/m4", b"more\n")),
        ('{"id":208,"result"', 0.001, "create many/0..199", many),
    ],
    ("p09", "resume"): [
        ('2:{"method":"initialized"', 0.01, "create after-close", touch("watch/after-close")),
    ],
    ("p09", "semantics"): [
        ('{"id":3,"result"', 0.001, "create a10 (replaced watch 10)", touch("watch/a10")),
        ('"watchId":11}}', -0.002, "create b11", touch("watch/b11")),
        ('{"id":5,"result"', 0.001, "create d15 (ignored watch 15)", touch("watch/d15")),
        ('"watchId":20}}', -0.002, "create c20", touch("watch/c20")),
        ('{"id":6,"result"', 0.001, "create e20 (ignored re-registration of 20)", touch("watch/e20")),
        ('{"id":7,"result"', 0.0005, "delete pres", rm("watch/pres")),
        ('{"id":8,"result"', 0.001, "create a file inside pres2", touch("watch/pres2/inside")),
        ('{"id":9,"result"', 0.001, "create a sibling of target32", touch("watch/sibling32")),
        ('{"id":11,"result"', 0.2, "create lat0", touch("watch/lat0")),
        ('{"id":12,"result"', 0.2, "create lat1", touch("watch/lat1")),
        ('{"id":13,"result"', 0.2, "create lat2", touch("watch/lat2")),
        ('{"id":14,"result"', 0.2, "create lat3", touch("watch/lat3")),
        ('{"id":15,"result"', 0.2, "create lat4", touch("watch/lat4")),
    ],
    ("p09", "twoconn"): [
        ('2:{"id":2,"result"', 0.002, "create x1 (watch 1 of the first connection)", touch("watch/x1")),
        ('2:{"id":2,"result"', 1.04, "create x2 (watch 1 of the second connection)", touch("watch/x2")),
    ],
}


# Conn assignment of p09 twoconn: the two connections' frames are interleaved with
# per-connection clocks; the parser's time-reset heuristics cannot tell them apart.
# (kind, connection) per event, in transcript order.
TWOCONN_LAYOUT = ["A", "A", "A", "B", "B", "B", "A", "A", "B", "B", "A", "B", "A", "B"]
