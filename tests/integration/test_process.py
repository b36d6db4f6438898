# SPDX-License-Identifier: MIT
"""process/start basics, notifications, PTY and process model
(PROTOCOL.md §6.6, §7, §8.2, §8.4, §8.5, §9)."""

import re

import pytest

from conftest import login_shell
from wsclient import file_uri, unb64

# the programs this module's processes run (skipped, with the names, where missing)
pytestmark = pytest.mark.needs_programs("/bin/bash", "/bin/cat", "/bin/ls", "/bin/sh", "/bin/true",
                                        "/usr/bin/env", "/usr/bin/tty", "stty", "readlink")

PATH_ENV = {"PATH": "/usr/bin:/bin"}
READ_KEYS = ["chunks", "nextSeq", "exited", "exitCode", "closed", "failure", "sandboxDenied"]


def sh(script):
    return ["/bin/sh", "-c", script]


def test_start_result_shape(sclient):
    """§6.6: result is {"processId","sandboxType":"none"} without a sandbox."""
    res = sclient.start("shape", ["/bin/true"])
    assert list(res.keys()) == ["processId", "sandboxType"]
    assert res == {"processId": "shape", "sandboxType": "none"}
    sclient.collect("shape")


def test_pipe_process_streams_exit_code_and_seq(sclient):
    """§7/§9.1: stdout/stderr chunks, exitCode 3, seq 1..n shared, closed last."""
    run = sclient.run("p1", sh("printf out1; printf err1 >&2; sleep 0.2; printf out2; exit 3"),
                      env=PATH_ENV)
    run.check_sequencing()
    assert run.stdout == b"out1out2"
    assert run.stderr == b"err1"
    assert run.exit_code == 3
    assert run.exited["sandboxDenied"] is False
    assert {p["stream"] for p in run.outputs} == {"stdout", "stderr"}


def test_notification_member_names_and_order(sclient):
    """§7.1-§7.3: exact members, in the reference order."""
    sclient.start("order", sh("echo hi"), env=PATH_ENV)
    sclient.collect("order")
    notes = [m for m in sclient.log if m.get("method", "").startswith("process/")
             and m["params"]["processId"] == "order"]
    assert notes, "no notifications logged"
    for m in notes:
        assert list(m.keys()) == ["method", "params"]
        keys = list(m["params"].keys())
        if m["method"] == "process/output":
            assert keys == ["processId", "seq", "stream", "chunk"]
        elif m["method"] == "process/exited":
            assert keys == ["processId", "seq", "exitCode", "sandboxDenied"]
        else:
            assert m["method"] == "process/closed"
            assert keys == ["processId", "seq"]


def test_start_reply_precedes_notifications(sclient):
    """§9.2: the process/start reply is sent before any notification of that process."""
    i = sclient.request("process/start", {"processId": "first", "argv": sh("echo x"),
                                          "cwd": "file:///tmp", "env": PATH_ENV, "tty": False})
    sclient.wait_reply(i)
    sclient.collect("first")
    reply_idx = next(n for n, m in enumerate(sclient.log) if m.get("id") == i)
    first_note = next(n for n, m in enumerate(sclient.log)
                      if "method" in m and m["params"].get("processId") == "first")
    assert reply_idx < first_note


def test_read_after_close_shape(sclient):
    """§6.7: read after close returns every member; nextSeq = closed.seq + 1."""
    run = sclient.run("rd", sh("printf out1; printf err1 >&2; exit 3"), env=PATH_ENV)
    res = sclient.read("rd")
    assert list(res.keys()) == READ_KEYS
    assert res["nextSeq"] == run.closed["seq"] + 1
    assert res["exited"] is True and res["closed"] is True
    assert res["exitCode"] == 3
    assert res["failure"] is None and res["sandboxDenied"] is False
    for ch in res["chunks"]:
        assert list(ch.keys()) == ["seq", "stream", "chunk"]
    assert [(c["seq"], c["stream"], c["chunk"]) for c in res["chunks"]] == \
        [(p["seq"], p["stream"], p["chunk"]) for p in run.outputs]


def test_silent_exit_consumes_two_seqs(sclient):
    """§9.2: a process without output gets exited seq 1 and closed seq 2."""
    run = sclient.run("silent", sh("exit 9"), env=PATH_ENV)
    assert run.methods == ["process/exited", "process/closed"]
    assert run.seqs == [1, 2]
    assert run.exit_code == 9
    res = sclient.read("silent")
    assert res["chunks"] == [] and res["nextSeq"] == 3


@pytest.mark.parametrize("tty", [False, True])
@pytest.mark.parametrize("script,code", [
    ("exit 0", 0), ("exit 255", 255), ("kill -KILL $$", 137), ("kill -TERM $$", 143),
    ("kill -INT $$", 130), ("kill -SEGV $$", 139), ("kill -HUP $$", 129)])
def test_exit_codes(sclient, tty, script, code):
    """§8.5: exit status, or 128+signal when killed, for pipe and PTY children."""
    run = sclient.run("x", sh(script), env=PATH_ENV, tty=tty)
    run.check_sequencing()
    assert run.exit_code == code


def test_stdout_and_stderr_are_separate_streams(sclient):
    """§7.1: pipe children have separate stdout and stderr streams."""
    run = sclient.run("s", sh("for i in 1 2 3; do echo o$i; echo e$i >&2; done"), env=PATH_ENV)
    assert run.stdout == b"o1\no2\no3\n"
    assert run.stderr == b"e1\ne2\ne3\n"


def test_pty_stream_name_and_crlf(sclient):
    """§8.2: PTY output uses stream "pty", \\r\\n line ends, stderr merged."""
    run = sclient.run("t", sh("echo a; echo b >&2"), env=PATH_ENV, tty=True)
    run.check_sequencing()
    assert {p["stream"] for p in run.outputs} == {"pty"}
    assert run.pty == b"a\r\nb\r\n"


def test_pty_size_is_24x80(sclient):
    """§8.2: window size is fixed at 24 rows x 80 columns."""
    run = sclient.run("sz", sh("stty size"), env=PATH_ENV, tty=True)
    assert run.pty == b"24 80\r\n"


def test_pty_tty_is_dev_pts(sclient):
    """§8.2: the PTY is the controlling terminal; tty prints /dev/pts/N."""
    run = sclient.run("tt", ["/usr/bin/tty"], tty=True)
    assert re.fullmatch(rb"/dev/pts/\d+\r\n", run.pty), run.pty
    assert run.exit_code == 0


def test_pty_termios_defaults(sclient):
    """§8.2: termios defaults icanon isig echo onlcr icrnl, intr=^C eof=^D."""
    run = sclient.run("ta", sh("stty -a"), env=PATH_ENV, tty=True)
    out = run.pty.decode()
    for word in ("rows 24", "columns 80", "intr = ^C", "eof = ^D"):
        assert word in out, word
    flags = set(out.replace(";", " ").split())
    for flag in ("icanon", "isig", "iexten", "echo", "echoe", "echok", "echoctl", "echoke",
                 "icrnl", "ixon", "opost", "onlcr"):
        assert flag in flags, flag


def test_pty_fds_are_all_the_tty(sclient):
    """§8.2: stdin, stdout and stderr are the PTY slave."""
    run = sclient.run("fds", sh("readlink /proc/$$/fd/0 /proc/$$/fd/1 /proc/$$/fd/2"),
                      env=PATH_ENV, tty=True)
    lines = run.pty.decode().split("\r\n")[:3]
    assert len(set(lines)) == 1 and re.fullmatch(r"/dev/pts/\d+", lines[0]), lines


def test_pty_env_gets_login_shell(sclient):
    """§8.1/§8.2: PTY children get SHELL=<login shell> when env has no SHELL; no TERM."""
    run = sclient.run("pe", ["/usr/bin/env"], env={"FOO": "bar"}, tty=True)
    lines = set(run.pty.decode().split("\r\n")) - {""}
    assert lines == {"FOO=bar", "SHELL=%s" % login_shell()}


def test_pty_env_shell_from_env_wins(sclient):
    """§8.1: an explicit SHELL in env is kept."""
    run = sclient.run("pe2", ["/usr/bin/env"], env={"SHELL": "/bin/sh"}, tty=True)
    assert set(run.pty.decode().split("\r\n")) - {""} == {"SHELL=/bin/sh"}


def _stat_fields(text):
    # /proc/<pid>/stat: pid (comm) state ppid pgrp session tty_nr tpgid ...
    head, rest = text.rsplit(")", 1)
    f = rest.split()
    return {"pid": int(head.split()[0]), "pgrp": int(f[2]), "session": int(f[3]),
            "tty_nr": int(f[4]), "tpgid": int(f[5])}


@pytest.mark.parametrize("tty", [False, True])
def test_child_is_session_leader(sclient, tty):
    """§6.6/§8.4: pid == pgid == sid in both modes; the PTY is the controlling tty."""
    run = sclient.run("sl", ["/bin/cat", "/proc/self/stat"], tty=tty)
    st = _stat_fields((run.pty if tty else run.stdout).decode())
    assert st["pid"] == st["pgrp"] == st["session"], st
    if tty:
        assert st["tty_nr"] != 0 and st["tpgid"] == st["pid"], st
    else:
        assert st["tty_nr"] == 0, st


def test_pipe_mode_fds(sclient):
    """§8.3: pipe mode: fd 0 = /dev/null, 1 and 2 separate pipes, nothing else inherited."""
    run = sclient.run("pf", ["/bin/ls", "-l", "/proc/self/fd/"])
    fds = {}
    for line in run.stdout.decode().splitlines():
        if " -> " in line:
            left, target = line.split(" -> ", 1)
            fds[int(left.split()[-1])] = target
    assert fds[0] == "/dev/null"
    assert fds[1].startswith("pipe:") and fds[2].startswith("pipe:")
    assert fds[1] != fds[2]
    # fd 3 is ls's own handle on /proc/<pid>/fd
    extra = {n: t for n, t in fds.items() if n > 2 and not t.startswith("/proc/")}
    assert extra == {}, "inherited fds: %r" % extra


def test_pipe_stdin_fd_is_pipe(sclient):
    """§8.3: with pipeStdin fd 0 is a pipe."""
    run = sclient.run("ps", sh("readlink /proc/$$/fd/0"), env=PATH_ENV, pipeStdin=True)
    assert run.stdout.startswith(b"pipe:")


def test_stdin_is_dev_null_without_pipe_stdin(sclient):
    """§8.3: without pipeStdin, reading stdin gives EOF at once."""
    run = sclient.run("dn", sh("if read x; then echo read:$x; else echo eof; fi"), env=PATH_ENV)
    assert run.stdout == b"eof\n"


def test_process_ids_any_string(sclient):
    """§5.3: processId may be any string (empty, long, unicode, newline)."""
    for pid in ["", "x" * 5000, "proze\u00df-\u2713 /x\n"]:
        assert sclient.start(pid, ["/bin/true"]) == {"processId": pid, "sandboxType": "none"}
        run = sclient.collect(pid)
        assert run.exit_code == 0
        assert sclient.read(pid)["nextSeq"] == 3


def test_real_client_process_start(sclient, tmp_path):
    """§6.6/§10.2: the real client's danger-full-access process/start is accepted as sent."""
    params = {
        "processId": "38716-9a7975a0-7b65-435c-85fd-0a295a401ac9",
        "metadata": {"threadId": "01a2018e-ac6a-7483-abc1-f0dac5a48fec",
                     "toolCallId": "call_644d6515b5c843ed"},
        "argv": ["/bin/bash", "-lc", "echo hello-from-remote-n17273492; pwd"],
        "cwd": file_uri(str(tmp_path)),
        "envPolicy": {"inherit": "all", "ignoreDefaultExcludes": True,
                      "exclude": ["CODEX_PERMISSION_PROFILE", "CODEX_VERSION",
                                  "CODEX_APPLY_PATCH_PRESERVE_LINE_ENDINGS",
                                  "CODEX_PLUGIN_METRICS_OUTPUT"],
                      "set": {}, "includeOnly": []},
        "env": {"PAGER": "cat", "COLORTERM": "", "TERM": "dumb", "NO_COLOR": "1",
                "LC_ALL": "C.UTF-8", "CODEX_CI": "1", "CODEX_VERSION": "0.169.0",
                "CODEX_THREAD_ID": "01a2018e-ac6a-7483-abc1-f0dac5a48fec"},
        "tty": False, "pipeStdin": False, "arg0": None, "sandbox": None,
        "enforceManagedNetwork": False, "managedNetwork": None}
    res = sclient.result("process/start", params)
    assert res == {"processId": params["processId"], "sandboxType": "none"}
    run = sclient.collect(params["processId"])
    run.check_sequencing()
    assert run.stdout == b"hello-from-remote-n17273492\n" + str(tmp_path).encode() + b"\n"
    assert run.exit_code == 0
    # the real client terminates every process after process/closed
    assert sclient.terminate(params["processId"]) == {"running": False}


def test_real_client_tty_process_with_write(sclient, tmp_path):
    """§6.8/§10.2: the real client's interactive tty flow (write "1", read echo + output)."""
    pid = "6227-6b101b3b-64d5-473b-a1a4-a36d9c577941"
    sclient.start(pid, ["/bin/bash", "-c", "read line; echo got-$line"], cwd=str(tmp_path),
                  env={"TERM": "dumb"}, tty=True, pipeStdin=False, arg0=None, sandbox=None)
    assert sclient.write(pid, b"n02162670\n", "1") == {"status": "accepted"}
    run = sclient.collect(pid)
    assert run.pty == b"n02162670\r\ngot-n02162670\r\n"
    assert run.exit_code == 0


def test_output_chunks_decode_as_standard_base64(sclient):
    """§5.2/§7.1: chunks are standard padded base64 of the raw bytes (binary safe)."""
    run = sclient.run("bin", sh("printf '\\000\\001\\377\\376abc'"), env=PATH_ENV)
    for p in run.outputs:
        assert len(p["chunk"]) % 4 == 0
        unb64(p["chunk"])
    assert run.stdout == b"\x00\x01\xff\xfeabc"
