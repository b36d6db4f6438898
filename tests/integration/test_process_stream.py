# SPDX-License-Identifier: MIT
"""Output streaming: ordering, retention, back-pressure, concurrency
(PROTOCOL.md §1.6, §6.7, §7.1, §9)."""

import time

import pytest

from conftest import bounded_server, pid_alive, wait_until
from wsclient import ProcRun, unb64

# the programs this module's processes run (skipped, with the names, where missing)
pytestmark = pytest.mark.needs_programs("/bin/cat", "/bin/echo", "/bin/sh", "/bin/sleep", "/bin/true",
                                        "head", "tr")

PATH_ENV = {"PATH": "/usr/bin:/bin"}
MiB = 1024 * 1024


def sh(script):
    return ["/bin/sh", "-c", script]


def pattern(lines):
    """Deterministic, non-periodic output of `seq -f %015.0f 1 lines` (16 bytes/line)."""
    return "".join("%015d\n" % i for i in range(1, lines + 1)).encode()


def test_exited_before_grandchild_output_then_closed(sclient, tmp_path):
    """§9.2: exited is published while a grandchild still holds stdout; its output
    follows with a higher seq and closed comes last (the `(sleep 1; echo grandchild) &`
    case, synchronised on a file instead of a timer)."""
    flag = tmp_path / "go"
    sclient.start("gc", sh("echo parent; (while [ ! -e %s ]; do sleep 0.02; done; "
                           "echo grandchild) & exit 0" % flag), env=PATH_ENV)
    run = sclient.collect("gc", until="process/exited")
    assert run.exit_code == 0
    assert run.closed is None
    flag.touch()
    run = sclient.collect("gc", run=run)
    run.check_sequencing()
    gc_seq = [p["seq"] for p in run.outputs if b"grandchild" in unb64(p["chunk"])]
    assert gc_seq and gc_seq[0] > run.exited["seq"]
    assert run.stdout == b"parent\ngrandchild\n"
    res = sclient.read("gc")
    assert res["nextSeq"] == run.closed["seq"] + 1
    assert b"".join(unb64(c["chunk"]) for c in res["chunks"]) == b"parent\ngrandchild\n"


def test_read_woken_by_exit_may_precede_closed(sclient, tmp_path):
    """§9.2: a process that exited but whose pipe is held open reads exited:true, closed:false."""
    flag = tmp_path / "go"
    sclient.start("hold", sh("(while [ ! -e %s ]; do sleep 0.02; done) & exit 7" % flag),
                  env=PATH_ENV)
    sclient.collect("hold", until="process/exited")
    res = sclient.read("hold")
    assert res["exited"] is True and res["exitCode"] == 7 and res["closed"] is False
    assert res["nextSeq"] == 2
    flag.touch()
    run = sclient.collect("hold")
    assert run.closed["seq"] == 2


def test_detached_grandchild_without_stdout_does_not_delay_closed(sclient, tmp_path):
    """§9.2: a grandchild with stdout/stderr redirected away does not hold the process open."""
    flag = tmp_path / "go"
    sclient.start("gc2", sh("echo parent; (i=0; while [ ! -e %s ] && [ $i -lt 3000 ]; do "
                            "sleep 0.02; i=$((i+1)); done >/dev/null 2>&1 &); exit 0" % flag),
                  env=PATH_ENV)
    try:
        run = sclient.collect("gc2", timeout=30)
    finally:
        flag.touch()
    run.check_sequencing()
    assert run.stdout == b"parent\n"


def test_one_mib_burst_contiguous(sclient):
    """§7.1/§9.1: a 1 MiB burst arrives completely, seqs contiguous, chunks non-empty."""
    run = sclient.run("burst", sh("head -c 1048576 /dev/zero"), env=PATH_ENV, timeout=60)
    run.check_sequencing()
    assert run.stdout == b"\0" * MiB
    assert run.exit_code == 0


def test_pty_burst_complete(sclient):
    """§7.1: a 256 KiB PTY burst arrives completely as stream pty."""
    run = sclient.run("ptyburst", sh("head -c 262144 /dev/zero | tr '\\000' a"), env=PATH_ENV,
                      tty=True, timeout=60)
    run.check_sequencing()
    assert run.pty == b"a" * 262144


def test_retention_keeps_last_mib_with_seq_gap(sclient):
    """§9.3: after >1 MiB of output process/read returns only the last <=1 MiB."""
    lines = 3 * MiB // 16
    run = sclient.run("ret", sh("seq -f %%015.0f 1 %d" % lines), env=PATH_ENV, timeout=60)
    run.check_sequencing()
    full = pattern(lines)
    assert run.stdout == full
    res = sclient.read("ret")
    chunks = res["chunks"]
    data = b"".join(unb64(c["chunk"]) for c in chunks)
    max_chunk = max(len(unb64(p["chunk"])) for p in run.outputs)
    assert len(data) <= MiB
    assert len(data) > MiB - max_chunk, "retains much less than 1 MiB"
    assert full.endswith(data)
    seqs = [c["seq"] for c in chunks]
    assert seqs == sorted(seqs) and seqs[0] > 1, "oldest chunks must be gone (seq gap)"
    assert seqs[-1] == run.outputs[-1]["seq"]
    assert res["failure"] is None and res["exited"] and res["closed"]
    assert res["nextSeq"] == run.closed["seq"] + 1
    # the same window with maxBytes: nextSeq = last returned seq + 1
    res2 = sclient.read("ret", afterSeq=0, maxBytes=100000000)
    assert res2["chunks"] == chunks and res2["nextSeq"] == seqs[-1] + 1


def _written(pid):
    """Bytes pid has written so far (/proc/PID/io wchar), or None once it is gone."""
    try:
        with open("/proc/%d/io" % pid) as f:
            return int([ln for ln in f if ln.startswith("wchar:")][0].split()[1])
    except (OSError, IndexError):
        return None


def _stalled_or_ended(pid, total):
    """True once pid has ended, or stopped writing (the same count for a whole second)
    short of total bytes; polled, so a slow machine only makes it take longer."""
    first = _written(pid)
    time.sleep(0.5)
    second = _written(pid)
    time.sleep(0.5)
    third = _written(pid)
    if not pid_alive(pid) or third is None:
        return True
    return first == second == third and third < total


def _lossless(server, total_lines, check_backpressure):
    c = server.connect(keep_log=False)
    c.start("big", sh("echo $$; exec seq -f %%015.0f 1 %d" % total_lines), env=PATH_ENV)
    run = c.collect_until_output("big", b"\n")
    child = int(run.stdout.split(b"\n", 1)[0])
    # The client stops reading its socket until the producer cannot go on: it blocks on
    # its full pipe once the server stopped reading it (or, for a small total, it may
    # have written everything into what the server queues).
    wait_until(lambda: _stalled_or_ended(child, 16 * total_lines), interval=0,
               what="the producer to stall while the client does not read")
    if check_backpressure:
        assert pid_alive(child), "producer finished while the client was not reading: " \
                                 "output is not back-pressured (§1.6)"
    run = c.collect("big", run=run, timeout=180)
    run.check_sequencing()
    out = run.stdout
    head, _, body = out.partition(b"\n")
    assert head == str(child).encode()
    expected = pattern(total_lines)
    assert len(body) == len(expected)
    assert body == expected
    assert run.exit_code == 0
    c.ws.abort()


def test_lossless_output_with_paused_reader(server_factory):
    """§1.6: 8 MiB with a client that stops reading until the producer stalls (or ends):
    every byte, in order."""
    _lossless(bounded_server(server_factory), 8 * MiB // 16, check_backpressure=False)


def test_backpressure_64mib_paused_reader(server_factory):
    """§1.6: a 64 MiB producer blocks (stops writing, alive, far short of its total)
    while the client does not read; afterwards all 67 108 864 bytes arrive in order."""
    _lossless(bounded_server(server_factory), 64 * MiB // 16, check_backpressure=True)


def test_long_poll_does_not_block_environment_status(sclient):
    """uexec difference 2: a pending process/read long poll does not delay environment/status."""
    sclient.start("slow", ["/bin/sleep", "30"])
    r = sclient.request("process/read", {"processId": "slow", "waitMs": 20000})
    s = sclient.request("environment/status", None)
    assert sclient.wait_reply(s)["result"] == {"status": "ready"}
    # sent before s: had it returned at once, its reply would have come first
    assert not sclient.has_reply(r), "long poll returned early"
    assert sclient.terminate("slow") == {"running": True}
    res = sclient.wait_reply(r)["result"]
    assert res["exited"] is True and res["exitCode"] == 137


def test_long_poll_does_not_block_write(sclient):
    """uexec difference 2: a process/write sent during a long poll on the same process is
    answered, and its output wakes the poll."""
    sclient.start("cat", ["/bin/cat"], pipeStdin=True)
    r = sclient.request("process/read", {"processId": "cat", "waitMs": 20000})
    w = sclient.request("process/write", {"processId": "cat", "chunk": "eAo=", "writeId": "1"})
    assert sclient.wait_reply(w)["result"] == {"status": "accepted"}
    res = sclient.wait_reply(r)["result"]
    assert [unb64(ch["chunk"]) for ch in res["chunks"]] == [b"x\n"]
    sclient.terminate("cat")


def test_notifications_flow_during_long_poll(sclient):
    """§1.6: notifications of other processes are sent while a long poll is pending."""
    sclient.start("quiet", ["/bin/sleep", "30"])
    r = sclient.request("process/read", {"processId": "quiet", "waitMs": 20000})
    sclient.start("chatty", sh("echo hi"), env=PATH_ENV)
    run = sclient.collect("chatty")
    assert run.stdout == b"hi\n"
    assert not sclient.has_reply(r)
    sclient.terminate("quiet")
    sclient.wait_reply(r)


def test_two_long_polls_on_one_connection(sclient):
    """uexec difference 2: two long polls on different processes are independent."""
    sclient.start("a", ["/bin/cat"], pipeStdin=True)
    sclient.start("b", ["/bin/cat"], pipeStdin=True)
    ra = sclient.request("process/read", {"processId": "a", "waitMs": 20000})
    rb = sclient.request("process/read", {"processId": "b", "waitMs": 20000})
    sclient.write("b", b"bee\n", "1")
    res_b = sclient.wait_reply(rb)["result"]
    assert unb64(res_b["chunks"][0]["chunk"]) == b"bee\n"
    assert not sclient.has_reply(ra)
    sclient.write("a", b"ay\n", "1")
    res_a = sclient.wait_reply(ra)["result"]
    assert unb64(res_a["chunks"][0]["chunk"]) == b"ay\n"
    sclient.terminate("a")
    sclient.terminate("b")


def test_many_concurrent_processes(sclient):
    """§6.6/§9.2: 30 pipelined starts all run; per-process seq order holds while interleaved."""
    n = 30
    ids = {}
    for i in range(n):
        ids["m%d" % i] = sclient.request("process/start", {
            "processId": "m%d" % i, "argv": ["/bin/sh", "-c", "sleep 0.2; echo $0; echo e >&2",
                                             "m%d" % i],
            "cwd": "file:///tmp", "env": PATH_ENV, "tty": False})
    for pid, rid in ids.items():
        assert sclient.wait_reply(rid)["result"] == {"processId": pid, "sandboxType": "none"}
    for pid in ids:
        run = sclient.collect(pid, timeout=60)
        run.check_sequencing()
        assert run.stdout == pid.encode() + b"\n" and run.stderr == b"e\n"


def test_sequential_processes_keep_working(sclient):
    """§6.6: many short processes in one session all get their ids and events."""
    for i in range(40):
        run = sclient.run("seq%d" % i, ["/bin/echo", str(i)])
        assert run.stdout == b"%d\n" % i
    assert sclient.read("seq0")["closed"] is True


def test_procrun_sequencing_helper_rejects_gaps():
    """Self-test of ProcRun.check_sequencing."""
    r = ProcRun("x")
    r.add("process/output", {"seq": 1, "chunk": "eA=="})
    r.add("process/exited", {"seq": 3})
    r.add("process/closed", {"seq": 4})
    with pytest.raises(AssertionError):
        r.check_sequencing()


def test_300_concurrent_processes(server_factory):
    """§6.6 (p12 many): 300 concurrent `sleep 1` processes all run and close."""
    c = bounded_server(server_factory).connect(keep_log=False)
    ids = [c.request("process/start", {"processId": "c%d" % i, "argv": ["/bin/sleep", "1"],
                                       "cwd": "file:///tmp", "env": {}, "tty": False})
           for i in range(300)]
    for rid in ids:
        assert "result" in c.wait_reply(rid)
    for i in range(300):
        run = c.collect("c%d" % i)
        assert run.exit_code == 0
    c.ws.abort()


def test_1000_sequential_processes_keep_ids(server_factory):
    """§9.3 (p12 reuse): after 1000 later processes the first one is still readable and its id taken."""
    c = bounded_server(server_factory).connect(keep_log=False)
    c.run("first", ["/bin/echo", "first"])
    for i in range(1000):
        c.run("n%d" % i, ["/bin/true"])
    res = c.read("first")
    assert b"".join(unb64(ch["chunk"]) for ch in res["chunks"]) == b"first\n"
    assert c.error("process/start", c.start_params("first"))["message"] == \
        "process first already exists"
    c.ws.abort()


@pytest.mark.slow
def test_long_poll_20s_is_honoured(sclient):
    """§6.7: waitMs 20000 on a silent process returns an empty result (after the wait)."""
    sclient.start("silent", ["/bin/sleep", "60"])
    t0 = time.monotonic()
    res = sclient.read("silent", timeout=60, waitMs=20000)
    assert res["chunks"] == [] and res["exited"] is False
    assert time.monotonic() - t0 >= 19.0
    sclient.terminate("silent")
