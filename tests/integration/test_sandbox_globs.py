# SPDX-License-Identifier: MIT
"""Deny globs (issue 13 item 4, SANDBOX.md §3.3 step 6, docs/SECURITY.md "Deny globs").

A `glob_pattern` deny entry is expanded when the process starts, as the reference
expands it with `rg --files --hidden --no-ignore --glob G -- ROOT`: each regular file
it matches then is hidden (an empty mode-000 file mounted over it: reads and writes
EACCES, no rename or removal), non-matches stay as the policy says, and a file created
after the start is not hidden (as the reference's bubblewrap). What cannot be enforced
is refused, naming the pattern: a static prefix of `/`, a scan turned off
(glob_scan_max_depth 0), more than 8192 matches, a tree over the scan's entry or depth
limits (not a hang), full-disk write.
"""

import base64
import os
import subprocess

import pytest

import conftest
from conftest import HOST
from test_sandbox import (EACCES, EROFS, PY, REFUSED, area, sandbox, sh, special, text,  # noqa: F401
                          ws_policy)
from wsclient import file_uri

pytestmark = [pytest.mark.needs("x86_64", "sandbox"),
              pytest.mark.needs_programs("/bin/bash", "/bin/sh", PY)]

EBUSY = "Device or resource busy"
MAX_MATCHES = 8192          # sandbox/glob.h SANDBOX_GLOB_MAX_MATCHES
MAX_ENTRIES = 262144        # SANDBOX_GLOB_MAX_ENTRIES
MAX_DEPTH = 64              # SANDBOX_GLOB_MAX_DEPTH


def glob(pattern):
    return {"path": {"type": "glob_pattern", "pattern": pattern}, "access": "deny"}


def make_files(base, rels, content=None):
    for rel in rels:
        p = os.path.join(base, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(content or ("data of %s\n" % rel))
    conftest.own(base)


def start_error(client, uniq, ws, sb):
    return client.call("process/start", {"processId": uniq("glob"), "argv": ["/bin/true"],
                                         "cwd": file_uri(ws), "env": {}, "tty": False,
                                         "sandbox": sb})


# keys/sub/k3.pem: `<ws>/keys/*.{pem,key}` scans <ws>/keys with the glob `*.{pem,key}`, which
# has no slash, so it matches the name at any depth (ripgrep's --glob, as the reference)
MATCHING = ("a.env", ".env", "sub/b.env", "sub/deep/c.env", "keys/k1.pem", "keys/k2.key",
            "keys/sub/k3.pem")
NOT_MATCHING = ("keep.txt", "a.env.bak", "sub/notes.md", "keys/k4.pem.txt", "keys/readme")


@pytest.mark.parametrize("server_kind", ["default", "abi0", "abi4", "sandbox-uid", "non-root"])
def test_matches_hidden_non_matches_not(server_factory, uniq, area, server_kind):
    """`**/*.env` (relative: resolved against the cwd) and an absolute `{pem,key}`
    alternation: every match reads and writes EACCES and cannot be renamed or removed
    (EBUSY); non-matches read and write as the policy says; outside the writable root
    a match is hidden too; a matching file created after the start is not (the
    reference's semantics); nothing changes on the host."""
    srv = conftest.sandbox_server(server_factory, server_kind)
    c = srv.connect()
    make_files(area.ws, MATCHING + NOT_MATCHING)
    make_files(area.out, ("out.env", "out.txt"))
    srv.own(area.base)   # the trees are the sandbox's uid's, so that only the sandbox refuses
    sb = ws_policy(area.ws, extra=[glob("**/*.env"), glob(area.ws + "/keys/*.{pem,key}"),
                                   glob(area.out + "/*.env")])
    before = {p: open(os.path.join(area.ws, p)).read() for p in MATCHING + NOT_MATCHING}
    script = "".join(
        "cat {p} >/dev/null && echo R:{p}=ok; echo x >> {p} && echo W:{p}=ok; ".format(p=p)
        for p in MATCHING + NOT_MATCHING)
    script += ("mv a.env moved.env; rm -f sub/b.env; cat %s/out.env; cat %s/out.txt; "
               "echo new > late.env; cat late.env; echo end" % (area.out, area.out))
    run = sh(c, uniq, script, area.ws, sb)
    out = text(run)
    assert "end" in out, out
    for p in MATCHING:
        assert "cat: %s: %s" % (p, EACCES) in out and "%s: %s" % (p, EACCES) in out, (p, out)
        assert "R:%s=ok" % p not in out and "W:%s=ok" % p not in out, (p, out)
    for p in NOT_MATCHING:
        assert "R:%s=ok" % p in out and "W:%s=ok" % p in out, (p, out)
    assert "mv: cannot move 'a.env' to 'moved.env': " + EBUSY in out, out
    assert "rm: cannot remove 'sub/b.env': " + EBUSY in out, out
    assert "cat: %s/out.env: %s" % (area.out, EACCES) in out, out
    assert "data of out.txt\n" in out, out
    assert "new\n" in out, out                     # created after the start: not hidden
    for p in MATCHING:
        with open(os.path.join(area.ws, p)) as f:
            assert f.read() == before[p], p
    for p in NOT_MATCHING:
        with open(os.path.join(area.ws, p)) as f:
            assert f.read() == before[p] + "x\n", p
    # no mount point or synthetic file left on the host
    assert not os.path.exists(os.path.join(area.ws, "moved.env"))
    assert sorted(os.listdir(area.ws)) == sorted(
        [".env", "a.env", "a.env.bak", "keep.txt", "keys", "late.env", "sub"])


def test_matches_under_read_only_binds(sclient, uniq, area):
    """A match under a protected `.git` or a `read` entry inside the writable root (each a
    read-only bind mounted before the masks of its phase) is hidden too; the start
    does not fail on the mount order."""
    make_files(area.ws, (".git/config", "config", "ro/config", "ro/other"))
    sb = ws_policy(area.ws, extra=[glob("**/config"),
                                   {"path": {"type": "path", "path": file_uri(area.ws + "/ro")},
                                    "access": "read"}])
    run = sh(sclient, uniq, "cat .git/config config ro/config ro/other; echo end", area.ws, sb)
    out = text(run)
    for p in (".git/config", "config", "ro/config"):
        assert "cat: %s: %s" % (p, EACCES) in out, (p, out)
    assert "data of ro/other\nend" in out, out


def test_fs_helper_honours_deny_globs(sclient, area):
    """fs/readFile, fs/writeFile and fs/open under the same sandbox: a match is refused
    (EACCES; writeFile's truncating open meets the read-only mask first: EROFS, as for a
    denied path), a non-match served."""
    make_files(area.ws, ("s.env", "ok.txt"))
    sb = ws_policy(area.ws, extra=[glob("*.env")])
    for method, params, want in (
            ("fs/readFile", {}, "Permission denied (os error 13)"),
            ("fs/writeFile", {"dataBase64": base64.b64encode(b"w").decode()},
             "Read-only file system (os error 30)"),
            ("fs/open", {"handleId": "h1"}, "Permission denied (os error 13)")):
        err = sclient.call(method, dict(params, path=file_uri(os.path.join(area.ws, "s.env")),
                                        sandbox=sb))["error"]
        assert err["message"] == want, (method, err)
    got = sclient.result("fs/readFile", {"path": file_uri(os.path.join(area.ws, "ok.txt")),
                                         "sandbox": sb})
    assert base64.b64decode(got["dataBase64"]) == b"data of ok.txt\n"
    with open(os.path.join(area.ws, "s.env")) as f:
        assert f.read() == "data of s.env\n"


@pytest.mark.parametrize("case", ["root-prefix", "bare-root", "scan-off", "root-write"])
def test_unenforceable_patterns_refused(server, uniq, area, case):
    """Refused (-32602, nothing runs), the log naming the pattern and why."""
    c = server.connect()
    if case == "root-prefix":
        pattern, sb = "/*/secrets/*.env", ws_policy(area.ws, extra=[glob("/*/secrets/*.env")])
        why = "its static prefix is `/`"
    elif case == "bare-root":
        pattern, sb = "/**", ws_policy(area.ws, extra=[glob("/**")])
        why = "its static prefix is `/`"
    elif case == "scan-off":
        pattern = area.ws + "/*.env"
        sb = ws_policy(area.ws, extra=[glob(pattern)])
        sb["permissions"]["file_system"]["glob_scan_max_depth"] = 0
        why = "glob_scan_max_depth 0 turns the scan off"
    else:
        # a root write with deny globs is enforced (test_sandbox_rootwrite.py); from `/` not
        pattern = "/*/secrets/*.env"
        sb = sandbox({"type": "managed", "file_system": {"type": "restricted", "entries": [
            special("root", "write"), glob(pattern)]}, "network": "restricted"})
        why = "its static prefix is `/`"
    marker = os.path.join(area.ws, "ran")
    reply = c.call("process/start", {"processId": uniq("glob"),
                                     "argv": ["/bin/sh", "-c", "touch " + marker],
                                     "cwd": file_uri(area.ws), "env": {}, "tty": False,
                                     "sandbox": sb})
    assert reply.get("error") == REFUSED, reply
    log = server.log()
    assert why in log, log
    assert "deny glob `%s`: " % pattern in log, log
    assert not os.path.exists(marker)


def test_match_limit(server, uniq, area):
    """More than 8192 matching files: refused, not silently truncated."""
    big = os.path.join(area.ws, "big")
    os.makedirs(big)
    subprocess.run("seq -f 'f%%.0f.env' 1 %d | xargs touch" % (MAX_MATCHES + 1), shell=True,
                   cwd=big, check=True)
    c = server.connect()
    assert start_error(c, uniq, area.ws, ws_policy(area.ws, extra=[glob("big/*.env")])) \
        .get("error") == REFUSED
    assert ("deny glob `%s/big/*.env`: matched more than 8192 files" % area.ws) in server.log()
    # exactly at the limit: enforced
    os.unlink(os.path.join(big, "f1.env"))
    run = sh(c, uniq, "cat big/f2.env; echo rc=$?", area.ws,
             ws_policy(area.ws, extra=[glob("big/*.env")]))
    assert "big/f2.env: " + EACCES in text(run) and "rc=1" in text(run), text(run)


def test_depth_limit_and_glob_scan_max_depth(server, uniq, area):
    """A tree deeper than 64 directories below the scan's root: refused (the scan could
    not check it all) unless glob_scan_max_depth bounds the scan, which then hides what
    it reaches and, as the reference, not what lies deeper."""
    deep = area.ws
    for i in range(MAX_DEPTH + 1):
        deep = os.path.join(deep, "d")
    os.makedirs(deep)
    make_files(area.ws, ("top.env", "d/d/two.env", "d/d/d/three.env"))
    c = server.connect()
    assert start_error(c, uniq, area.ws, ws_policy(area.ws, extra=[glob("**/*.env")])) \
        .get("error") == REFUSED
    assert "is deeper than 64 directories below %s" % area.ws in server.log()
    sb = ws_policy(area.ws, extra=[glob("**/*.env")])
    sb["permissions"]["file_system"]["glob_scan_max_depth"] = 3   # rg --max-depth 3
    run = sh(c, uniq, "cat top.env d/d/two.env d/d/d/three.env", area.ws, sb)
    out = text(run)
    assert "cat: top.env: " + EACCES in out and "cat: d/d/two.env: " + EACCES in out, out
    assert "data of d/d/d/three.env" in out, out


@pytest.mark.slow
def test_huge_tree_hits_the_entry_limit(server, uniq, area):
    """A pattern over a tree of more than 262144 entries: refused with the limit named,
    not a hang; the server keeps serving."""
    tree = os.path.join(area.ws, "tree")
    os.makedirs(tree)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m,nr_inodes=400000", "tmpfs", tree],
                      capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        for i in range(3):
            d = os.path.join(tree, "d%d" % i)
            os.makedirs(d)
            subprocess.run("seq -f 'f%%.0f' 1 %d | xargs touch" % (MAX_ENTRIES // 3 + 10),
                           shell=True, cwd=d, check=True)
        c = server.connect()
        # not a hang: the refusal comes within the RPC deadline (no bound on how soon)
        reply = start_error(c, uniq, area.ws, ws_policy(area.ws, extra=[glob("tree/**/*.env")]))
        assert reply.get("error") == REFUSED, reply
        assert ("deny glob `%s/tree/**/*.env`: scanning %s/tree passed 262144 entries (the limit)"
                % (area.ws, area.ws)) in server.log()
        run = sh(c, uniq, "echo alive", area.ws, ws_policy(area.ws))
        assert "alive" in text(run)
    finally:
        subprocess.run(["umount", "-l", tree], check=False)
