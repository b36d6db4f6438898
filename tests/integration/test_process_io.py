# SPDX-License-Identifier: MIT
"""process/read, process/write, process/signal, process/terminate
(PROTOCOL.md §6.7-§6.10, §8.2, §8.4, §9)."""

import os

import pytest

from conftest import pid_alive, wait_until
from wsclient import b64, unb64

# the programs this module's processes run (skipped, with the names, where missing)
pytestmark = pytest.mark.needs_programs("/bin/bash", "/bin/cat", "/bin/sh", "/bin/sleep", "/bin/true")

PATH_ENV = {"PATH": "/usr/bin:/bin"}


def sh(script):
    return ["/bin/sh", "-c", script]


def chunk_list(res):
    return [(c["seq"], len(unb64(c["chunk"]))) for c in res["chunks"]]


@pytest.fixture
def four_chunks(sclient):
    """A finished process with exactly four stdout chunks of 4, 6, 8, 2 bytes
    (seq 1-4), exited seq 5, closed seq 6. Output is paced by stdin so the
    chunks cannot coalesce."""
    pid = "four"
    sclient.start(pid, sh("read a; printf aaaa; read b; printf bbbbbb; read c; "
                          "printf cccccccc; read d; printf dd; read e"),
                  env=PATH_ENV, pipeStdin=True)
    for n, expect in enumerate([b"aaaa", b"bbbbbb", b"cccccccc", b"dd"]):
        sclient.write(pid, b"\n", "w%d" % n)
        m = sclient.next_notification("process/output",
                                      pred=lambda p: p["processId"] == pid)
        assert unb64(m["params"]["chunk"]) == expect
        assert m["params"]["seq"] == n + 1
    sclient.write(pid, b"\n", "exit")
    run = sclient.collect(pid)
    assert [p["seq"] for p in run.events] == [5, 6]
    return sclient, pid


# ---- process/read (§6.7)


@pytest.mark.parametrize("max_bytes,expect,next_seq", [
    (None, [1, 2, 3, 4], 7), (0, [1], 2), (1, [1], 2), (4, [1], 2), (5, [1], 2), (9, [1], 2),
    (10, [1, 2], 3), (11, [1, 2], 3), (18, [1, 2, 3], 4), (20, [1, 2, 3, 4], 5),
    (1000, [1, 2, 3, 4], 5)])
def test_read_max_bytes_rules(four_chunks, max_bytes, expect, next_seq):
    """§6.7: 4/6/8/2 example; first chunk always included; nextSeq depends on maxBytes."""
    c, pid = four_chunks
    p = {} if max_bytes is None else {"maxBytes": max_bytes}
    res = c.read(pid, **p)
    assert [s for s, _ in chunk_list(res)] == expect
    assert res["nextSeq"] == next_seq
    assert res["exited"] and res["closed"] and res["exitCode"] == 0


@pytest.mark.parametrize("after,max_bytes,expect,next_seq", [
    (2, 1, [3], 4), (2, None, [3, 4], 7), (4, None, [], 7), (5, None, [], 7), (6, None, [], 7),
    (99, None, [], 7), (4, 10, [], 7), (0, 10, [1, 2], 3)])
def test_read_after_seq(four_chunks, after, max_bytes, expect, next_seq):
    """§6.7: afterSeq filters; no chunk returned -> nextSeq is the process's next seq."""
    c, pid = four_chunks
    p = {"afterSeq": after}
    if max_bytes is not None:
        p["maxBytes"] = max_bytes
    res = c.read(pid, **p)
    assert [s for s, _ in chunk_list(res)] == expect
    assert res["nextSeq"] == next_seq


def test_read_null_optionals(four_chunks):
    """§6.7: null afterSeq/maxBytes/waitMs mean absent."""
    c, pid = four_chunks
    res = c.read(pid, afterSeq=None, maxBytes=None, waitMs=None)
    assert [s for s, _ in chunk_list(res)] == [1, 2, 3, 4]
    assert res["nextSeq"] == 7


def test_read_paging_with_next_seq(four_chunks):
    """§6.7: paging with afterSeq = nextSeq - 1 visits every chunk exactly once."""
    c, pid = four_chunks
    seen, after = [], 0
    for _ in range(10):
        res = c.read(pid, afterSeq=after, maxBytes=7)
        if not res["chunks"]:
            break
        seen += [s for s, _ in chunk_list(res)]
        after = res["nextSeq"] - 1
    assert seen == [1, 2, 3, 4]


def test_read_running_process_without_output(sclient):
    """§6.7: a running silent process: no chunks, nextSeq 1, exitCode null."""
    sclient.start("run", ["/bin/sleep", "30"])
    res = sclient.read("run")
    assert res == {"chunks": [], "nextSeq": 1, "exited": False, "exitCode": None,
                   "closed": False, "failure": None, "sandboxDenied": False}
    sclient.terminate("run")


def test_long_poll_woken_by_output(sclient):
    """§6.7: a long poll returns when a new chunk arrives."""
    sclient.start("lp", sh("sleep 0.3; echo late; sleep 30"), env=PATH_ENV)
    res = sclient.read("lp", timeout=25, waitMs=20000)
    assert [unb64(c["chunk"]) for c in res["chunks"]] == [b"late\n"]
    assert res["nextSeq"] == 2 and res["exited"] is False
    sclient.terminate("lp")


def test_long_poll_woken_by_exit(sclient):
    """§6.7: a long poll returns when the process exits (no output)."""
    sclient.start("lpx", sh("sleep 0.3; exit 5"), env=PATH_ENV)
    res = sclient.read("lpx", timeout=25, waitMs=20000)
    assert res["chunks"] == []
    assert res["exited"] is True and res["exitCode"] == 5
    assert res["nextSeq"] in (2, 3)   # closed may or may not have been published yet


def test_long_poll_after_closed_returns_immediately(sclient):
    """§6.7: after closed a poll with a large afterSeq returns at once."""
    sclient.run("lpc", ["/bin/true"])
    res = sclient.read("lpc", timeout=10, afterSeq=100, waitMs=60000)
    assert res["chunks"] == [] and res["closed"] is True and res["nextSeq"] == 3


def test_long_poll_times_out(sclient):
    """§6.7: waitMs elapses -> empty result, process still running."""
    sclient.start("lpt", ["/bin/sleep", "30"])
    res = sclient.read("lpt", timeout=20, waitMs=200)
    assert res["chunks"] == [] and res["exited"] is False and res["nextSeq"] == 1
    sclient.terminate("lpt")


def test_long_poll_returns_existing_chunks_immediately(sclient):
    """§6.7: chunks already retained are returned without waiting."""
    sclient.start("lpe", sh("echo now; sleep 30"), env=PATH_ENV)
    sclient.next_notification("process/output", pred=lambda p: p["processId"] == "lpe")
    res = sclient.read("lpe", timeout=10, waitMs=60000)
    assert [unb64(c["chunk"]) for c in res["chunks"]] == [b"now\n"]
    sclient.terminate("lpe")


def test_read_unknown_process(sclient):
    """§6.7: unknown process -> -32600 'unknown process id <id>'."""
    assert sclient.error("process/read", {"processId": "nope"}) == {
        "code": -32600, "message": "unknown process id nope"}


def test_read_negative_after_seq(sclient):
    """§6.7: negative afterSeq -> -32602 'invalid number'."""
    sclient.run("neg", ["/bin/true"])
    assert sclient.error("process/read", {"processId": "neg", "afterSeq": -1}) == {
        "code": -32602, "message": "invalid number"}


@pytest.mark.parametrize("field,value,message", [
    ("processId", True, "invalid type: boolean `true`, expected a string"),
    ("afterSeq", True, "invalid type: boolean `true`, expected u64"),
    ("maxBytes", True, "invalid type: boolean `true`, expected usize"),
    ("waitMs", True, "invalid type: boolean `true`, expected u64"),
])
def test_read_bad_param_types(sclient, field, value, message):
    """p05_schema: process/read type errors."""
    p = {"processId": "x"}
    p[field] = value
    assert sclient.error("process/read", p) == {"code": -32602, "message": message}


def test_read_missing_process_id(sclient):
    """p01: process/read {} -> missing field `processId`."""
    assert sclient.error("process/read", {}) == {"code": -32602,
                                                "message": "missing field `processId`"}


# ---- process/write (§6.8)


def test_write_to_pipe_stdin(sclient):
    """§6.8: pipeStdin process accepts writes; bytes reach the child."""
    sclient.start("cat", ["/bin/cat"], pipeStdin=True)
    assert sclient.write("cat", b"abc\n", "a") == {"status": "accepted"}
    run = sclient.collect_until_output("cat", b"abc\n")
    assert run.stdout == b"abc\n"
    sclient.terminate("cat")


def test_write_dedup_by_write_id(sclient):
    """§6.8: writeIds a,a,b,a,c,b write only a,b,c (all answered accepted)."""
    sclient.start("dd", ["/bin/cat"], pipeStdin=True)
    for n, wid in enumerate(["a", "a", "b", "a", "c", "b"], 1):
        assert sclient.write("dd", b"%d\n" % n, wid) == {"status": "accepted"}
    sclient.write("dd", b"end\n", "z")
    run = sclient.collect_until_output("dd", b"end\n")
    assert run.stdout == b"1\n3\n5\nend\n"
    sclient.terminate("dd")


def test_write_dedup_is_per_process(sclient):
    """§6.8: writeIds are remembered per process."""
    sclient.start("w1", ["/bin/cat"], pipeStdin=True)
    sclient.start("w2", ["/bin/cat"], pipeStdin=True)
    sclient.write("w1", b"one\n", "1")
    sclient.write("w2", b"two\n", "1")
    assert sclient.collect_until_output("w1", b"one\n").stdout == b"one\n"
    assert sclient.collect_until_output("w2", b"two\n").stdout == b"two\n"
    sclient.terminate("w1")
    sclient.terminate("w2")


def test_write_empty_chunk_does_not_close_stdin(sclient):
    """§6.8: an empty chunk is accepted, writes nothing, does not send EOF."""
    sclient.start("eof", sh("cat; echo got-eof"), env=PATH_ENV, pipeStdin=True)
    assert sclient.write("eof", b"", "e1") == {"status": "accepted"}
    sclient.write("eof", b"more\n", "e2")
    run = sclient.collect_until_output("eof", b"more\n")
    assert b"got-eof" not in run.stdout
    assert sclient.read("eof")["exited"] is False
    sclient.terminate("eof")


def test_write_without_pipe_stdin_is_stdin_closed(sclient):
    """§6.8: pipe process without pipeStdin -> {"status":"stdinClosed"}."""
    sclient.start("nc", ["/bin/sleep", "30"])
    assert sclient.write("nc", b"x", "w") == {"status": "stdinClosed"}
    sclient.terminate("nc")


def test_write_unknown_process(sclient):
    """§6.8: unknown processId -> {"status":"unknownProcess"} (a result)."""
    assert sclient.write("nope", b"x", "w") == {"status": "unknownProcess"}


def test_write_after_exit_pipe_stdin_is_error(sclient):
    """§6.8: pipeStdin process that has exited -> -32603 'failed to write to process stdin'."""
    sclient.start("gone", ["/bin/cat"], pipeStdin=True)
    sclient.terminate("gone")
    sclient.collect("gone")
    err = sclient.error("process/write", {"processId": "gone", "chunk": b64("late"),
                                          "writeId": "late"})
    assert err == {"code": -32603, "message": "failed to write to process stdin"}


def test_write_after_child_closed_stdin_accepted(sclient):
    """§6.8: child closed its stdin but is running -> accepted (data discarded)."""
    sclient.start("ci", sh("exec 0<&-; echo closed; sleep 30"), env=PATH_ENV, pipeStdin=True)
    sclient.collect_until_output("ci", b"closed\n")
    assert sclient.write("ci", b"x", "x1") == {"status": "accepted"}
    sclient.terminate("ci")


def test_write_to_pty_after_exit_accepted(sclient):
    """§6.8/§8.2: writes to a PTY process after exit are accepted."""
    sclient.run("pe", sh("exit 0"), env=PATH_ENV, tty=True)
    assert sclient.write("pe", b"x", "x") == {"status": "accepted"}


def test_write_id_missing(sclient):
    """§6.8: writeId missing -> -32602 missing field `writeId`."""
    assert sclient.error("process/write", {"processId": "x", "chunk": "eA=="}) == {
        "code": -32602, "message": "missing field `writeId`"}


def test_write_id_empty(sclient):
    """§6.8: writeId "" -> -32602 'writeId must not be empty'."""
    sclient.start("we", ["/bin/cat"], pipeStdin=True)
    assert sclient.error("process/write", {"processId": "we", "chunk": "eA==",
                                           "writeId": ""}) == {
        "code": -32602, "message": "writeId must not be empty"}
    sclient.terminate("we")


@pytest.mark.parametrize("chunk,message", [
    ("!!notbase64", "Invalid symbol 33, offset 0."),
    ("aGVsbG8", "Invalid padding"),
    ("a", "Invalid input length: 1"),
])
def test_write_bad_base64(sclient, chunk, message):
    """§5.2/§6.8: strict base64; errors are -32602 with the decoder's text."""
    sclient.start("b64", ["/bin/cat"], pipeStdin=True)
    assert sclient.error("process/write", {"processId": "b64", "chunk": chunk,
                                           "writeId": "q"}) == {"code": -32602,
                                                                "message": message}
    sclient.terminate("b64")


@pytest.mark.parametrize("field", ["processId", "chunk", "writeId"])
def test_write_bad_param_types(sclient, field):
    """p05_schema: process/write members must be strings."""
    p = {"processId": "x", "chunk": "", "writeId": "w"}
    p[field] = True
    assert sclient.error("process/write", p) == {
        "code": -32602, "message": "invalid type: boolean `true`, expected a string"}


def test_large_write_round_trip(sclient):
    """§6.8: a 4 MiB write to cat comes back intact."""
    data = bytes(range(256)) * (4 * 1024 * 4) + b"<<END-OF-DATA>>"
    sclient.start("big", ["/bin/cat"], pipeStdin=True)
    assert sclient.write("big", data, "big") == {"status": "accepted"}
    run = sclient.collect_until_output("big", b"<<END-OF-DATA>>", timeout=60)
    assert len(run.stdout) == len(data)
    assert run.stdout == data
    sclient.terminate("big")


def test_pty_write_echo(sclient):
    """§8.2: PTY input is echoed ("hello\\r\\n") before the program's output."""
    sclient.start("pw", sh("read line; echo got:$line"), env=PATH_ENV, tty=True)
    assert sclient.write("pw", b"hello\n", "w-1") == {"status": "accepted"}
    run = sclient.collect("pw")
    assert run.pty == b"hello\r\ngot:hello\r\n"


def test_pty_with_pipe_stdin_writes_to_master(sclient):
    """§8.2: pipeStdin is irrelevant for PTYs."""
    sclient.start("pb", sh("read x; echo got:$x"), env=PATH_ENV, tty=True, pipeStdin=True)
    sclient.write("pb", b"v\n", "b1")
    assert sclient.collect("pb").pty == b"v\r\ngot:v\r\n"


def test_pty_ctrl_c_interrupts(sclient):
    """§6.8/§8.2: writing \\x03 to a PTY raises SIGINT (echoed as ^C)."""
    sclient.start("cc", sh("trap 'echo got-sigint; exit 4' INT; echo ready; "
                           "while :; do sleep 0.05; done"), env=PATH_ENV, tty=True)
    run = sclient.collect_until_output("cc", b"ready\r\n")
    sclient.write("cc", b"\x03", "c1")
    run = sclient.collect("cc", run=run)
    assert run.pty == b"ready\r\n^Cgot-sigint\r\n"
    assert run.exit_code == 4


def test_pty_ctrl_d_is_eof(sclient):
    """§6.8/§8.2: \\x04 at line start ends cat."""
    sclient.start("cd", sh("cat; echo after-cat"), env=PATH_ENV, tty=True)
    sclient.write("cd", b"abc\n\x04", "d1")
    run = sclient.collect("cd")
    assert run.pty == b"abc\r\nabc\r\nafter-cat\r\n"
    assert run.exit_code == 0


# ---- process/signal (§6.9)


def test_signal_interrupt_pipe(sclient):
    """§6.9: interrupt delivers SIGINT; result {}."""
    sclient.start("i1", sh("trap 'echo got-int; exit 5' INT; echo ready; "
                           "while :; do sleep 0.05; done"), env=PATH_ENV)
    run = sclient.collect_until_output("i1", b"ready\n")
    assert sclient.result("process/signal", {"processId": "i1", "signal": "interrupt"}) == {}
    run = sclient.collect("i1", run=run)
    assert run.stdout == b"ready\ngot-int\n" and run.exit_code == 5


def test_signal_interrupt_pty(sclient):
    """§6.9: interrupt works for PTY processes too."""
    sclient.start("i2", ["/bin/bash", "-c", "trap 'echo got-int; exit 6' INT; echo ready; "
                         "while :; do sleep 0.05; done"], env=PATH_ENV, tty=True)
    run = sclient.collect_until_output("i2", b"ready\r\n")
    assert sclient.result("process/signal", {"processId": "i2", "signal": "interrupt"}) == {}
    run = sclient.collect("i2", run=run)
    assert run.exit_code == 6 and run.pty.endswith(b"got-int\r\n")


def test_signal_goes_to_process_group(sclient):
    """§6.9/§8.4: SIGINT goes to the whole group (foreground child sees it too)."""
    sclient.start("grp", sh("trap 'echo parent-int' INT; sh -c 'trap \"echo child-int; exit 3\" "
                            "INT; echo child-ready; while :; do sleep 0.05; done'; "
                            "echo parent-after-child rc=$?"), env=PATH_ENV)
    run = sclient.collect_until_output("grp", b"child-ready\n")
    sclient.result("process/signal", {"processId": "grp", "signal": "interrupt"})
    run = sclient.collect("grp", run=run)
    out = run.stdout
    assert b"child-int\n" in out and b"parent-int\n" in out
    assert out.endswith(b"parent-after-child rc=3\n")
    assert run.exit_code == 0


def test_signal_ignored_by_process(sclient):
    """§6.9: a process ignoring SIGINT keeps running."""
    sclient.start("ign", sh("trap '' INT; echo ready; read x; echo survived"), env=PATH_ENV,
                  pipeStdin=True)
    run = sclient.collect_until_output("ign", b"ready\n")
    sclient.result("process/signal", {"processId": "ign", "signal": "interrupt"})
    sclient.write("ign", b"go\n", "g")
    run = sclient.collect("ign", run=run)
    assert run.stdout == b"ready\nsurvived\n" and run.exit_code == 0


@pytest.mark.parametrize("name", ["Interrupt", "INT", "SIGINT", "terminate", "kill", "hangup",
                                  "bogus"])
def test_signal_unknown_variant(sclient, name):
    """§6.9: only "interrupt" is accepted."""
    assert sclient.error("process/signal", {"processId": "x", "signal": name}) == {
        "code": -32602, "message": "unknown variant `%s`, expected `interrupt`" % name}


@pytest.mark.parametrize("value,message", [
    (2, "invalid type: number, expected string or map"),
    (True, "invalid type: boolean `true`, expected string or map"),
])
def test_signal_wrong_type(sclient, value, message):
    """§6.9/p05: a non-string signal -> -32602."""
    assert sclient.error("process/signal", {"processId": "x", "signal": value}) == {
        "code": -32602, "message": message}


def test_signal_unknown_or_finished_process(sclient):
    """§6.9: {} for unknown and finished processes."""
    assert sclient.result("process/signal", {"processId": "unknown", "signal": "interrupt"}) == {}
    sclient.run("fin", ["/bin/true"])
    assert sclient.result("process/signal", {"processId": "fin", "signal": "interrupt"}) == {}


def test_signal_missing_fields(sclient):
    """p02/p05: process/signal requires processId and signal."""
    assert sclient.error("process/signal", {}) == {"code": -32602,
                                                  "message": "missing field `processId`"}
    assert sclient.error("process/signal", {"processId": "x"}) == {
        "code": -32602, "message": "missing field `signal`"}


# ---- process/terminate (§6.10)


def test_terminate_running(sclient):
    """§6.10: running:true, then exited 137 and closed."""
    sclient.start("k1", sh("trap 'echo got-term; exit 42' TERM; echo ready; "
                           "while :; do sleep 0.05; done"), env=PATH_ENV)
    run = sclient.collect_until_output("k1", b"ready\n")
    assert sclient.terminate("k1") == {"running": True}
    run = sclient.collect("k1", run=run)
    run.check_sequencing()
    assert run.exit_code == 137
    assert b"got-term" not in run.stdout
    assert sclient.terminate("k1") == {"running": False}


def test_terminate_kills_trapping_shell(sclient):
    """§6.10: SIGKILL kills a shell that traps TERM INT HUP."""
    sclient.start("k2", sh("trap '' TERM INT HUP; echo ready; while :; do sleep 0.05; done"),
                  env=PATH_ENV)
    sclient.collect_until_output("k2", b"ready\n")
    assert sclient.terminate("k2") == {"running": True}
    assert sclient.collect("k2").exit_code == 137


def test_terminate_pty(sclient):
    """§6.10: terminate works for PTY processes (137)."""
    sclient.start("kp", ["/bin/sleep", "30"], tty=True)
    assert sclient.terminate("kp") == {"running": True}
    assert sclient.collect("kp").exit_code == 137


def test_terminate_unknown_and_finished(sclient):
    """§6.10: running:false for unknown ids and finished processes."""
    assert sclient.terminate("never") == {"running": False}
    sclient.run("done", ["/bin/true"])
    assert sclient.terminate("done") == {"running": False}


def test_terminate_kills_background_grandchild(sclient):
    """§6.10: the whole group dies, including a background grandchild."""
    sclient.start("tg", sh("sleep 1000 & echo $!; wait"), env=PATH_ENV)
    run = sclient.collect_until_output("tg", b"\n")
    gpid = int(run.stdout.split()[0])
    assert pid_alive(gpid)
    assert sclient.terminate("tg") == {"running": True}
    run = sclient.collect("tg", run=run)
    assert run.exit_code == 137
    wait_until(lambda: not pid_alive(gpid), what="grandchild %d to die" % gpid)


def test_terminate_missing_process_id(sclient):
    """p02: process/terminate {} -> missing field `processId`."""
    assert sclient.error("process/terminate", {}) == {"code": -32602,
                                                     "message": "missing field `processId`"}


def test_terminate_pid_gone(sclient):
    """§6.10: after terminate the child pid no longer exists."""
    sclient.start("kpid", sh("echo $$; exec sleep 1000"), env=PATH_ENV)
    run = sclient.collect_until_output("kpid", b"\n")
    pid = int(run.stdout.split()[0])
    sclient.terminate("kpid")
    sclient.collect("kpid", run=run)
    wait_until(lambda: not pid_alive(pid), what="child to die")
    assert not os.path.exists("/proc/%d" % pid) or not pid_alive(pid)


def test_terminate_while_write_is_blocked(sclient):
    """§6.8/§6.10: a write blocked on a full stdin pipe gets a reply once the process is
    terminated, and the connection keeps working."""
    sclient.start("blk", ["/bin/sleep", "30"], pipeStdin=True)
    w = sclient.request("process/write", {"processId": "blk", "chunk": b64(b"z" * (1 << 20)),
                                          "writeId": "big"})
    t = sclient.request("process/terminate", {"processId": "blk"})
    assert sclient.wait_reply(t)["result"] == {"running": True}
    reply = sclient.wait_reply(w, timeout=20)
    assert reply.get("result") == {"status": "accepted"} or reply.get("error") == {
        "code": -32603, "message": "failed to write to process stdin"}, reply
    assert sclient.collect("blk").exit_code == 137
    assert sclient.result("environment/status", None) == {"status": "ready"}
