# SPDX-License-Identifier: MIT
"""Command line: --help, --listen forms, stdio transport (PROTOCOL.md §1.1)."""

import fcntl
import json
import os
import re

import pytest

from conftest import StdioServer, children_of, pid_alive, run_once, wait_until
from wsclient import unb64

# a uexec that serves (not only parses its command line) needs io_uring
needs_server = pytest.mark.needs("io_uring")
runs_sh = pytest.mark.needs_programs("/bin/sh", "/bin/cat")

FLAGS = ["--listen", "--resume-window-ms", "--max-sessions", "--max-processes",
         "--max-message-bytes", "--max-frame-bytes", "--max-json-depth", "--ping-interval-ms",
         "--log-level", "--sandbox-max-ptys"]


def test_help_lists_every_flag():
    """CLI: --help prints usage naming every flag and exits 0."""
    r = run_once("--help")
    assert r.returncode == 0
    text = (r.stdout + r.stderr).decode()
    for flag in FLAGS:
        assert flag in text, flag


@pytest.mark.parametrize("url,message", [
    ("ws://localhost:8822",
     "invalid websocket --listen URL `ws://localhost:8822`; expected `ws://IP:PORT`"),
    ("wss://127.0.0.1:8822",
     "unsupported --listen URL `wss://127.0.0.1:8822`; expected `ws://IP:PORT` or `stdio`"),
    ("http://127.0.0.1:8822",
     "unsupported --listen URL `http://127.0.0.1:8822`; expected `ws://IP:PORT` or `stdio`"),
    ("127.0.0.1:8822",
     "unsupported --listen URL `127.0.0.1:8822`; expected `ws://IP:PORT` or `stdio`"),
])
def test_bad_listen_urls_exit_1(url, message):
    """§1.1: unsupported --listen values exit 1 with the reference message on stderr."""
    r = run_once("--listen", url)
    assert r.returncode == 1
    assert message in r.stderr.decode()
    assert r.stdout == b""


def test_unknown_flag_fails():
    """CLI: an unknown flag is an error (non-zero exit)."""
    r = run_once("--definitely-not-a-flag")
    assert r.returncode != 0


@needs_server
@runs_sh
@pytest.mark.parametrize("listen", ["stdio", "stdio://"])
def test_stdio_round_trip_and_exit_on_eof(tmp_path, listen):
    """§1.1: --listen stdio speaks newline-delimited JSON; exits 0 at stdin EOF."""
    with StdioServer(tmp_path / "stdio.stderr", listen=listen) as srv:
        c = srv.client()
        res = c.initialize("stdio-test")
        assert set(res) == {"sessionId", "environmentInfo"}
        assert c.result("environment/status", None) == {"status": "ready"}
        assert c.start("s", ["/bin/sh", "-c", "echo hi"], env={}) == {
            "processId": "s", "sandboxType": "none"}
        run = c.collect("s")
        run.check_sequencing()
        assert run.stdout == b"hi\n" and run.exit_code == 0
        # parse errors are answered with id -1 over stdio too
        c.send_raw("{not json")
        reply = c.wait_reply(-1)
        assert reply["error"]["code"] == -32600
        assert srv.end_input() == 0
    assert not srv.sanitizer_problems(), srv.stderr()[-2000:]


@needs_server
@runs_sh
def test_stdio_stdout_is_only_json(tmp_path):
    """§1.1: in stdio mode every stdout line is one JSON message (logs go to stderr)."""
    with StdioServer(tmp_path / "stderr", "--log-level", "debug") as srv:
        c = srv.client()
        c.initialize()
        assert c.result("environment/status", None) == {"status": "ready"}
        assert srv.end_input() == 0
        rest = srv.transport._buf + srv.proc.stdout.read()
    assert rest.strip() == b""
    assert [m.get("id") for m in c.log] == [1, 2]


@needs_server
@runs_sh
def test_stdio_input_before_eof_is_processed(tmp_path):
    """§1.1: lines already received when stdin reaches EOF are still answered before exit 0."""
    reqs = [{"id": 1, "method": "initialize", "params": {"clientName": "x"}},
            {"method": "initialized", "params": {}},
            {"id": 2, "method": "environment/status", "params": None}]
    data = "".join(json.dumps(r) + "\n" for r in reqs).encode()
    r = run_once("--listen", "stdio", input=data)
    assert r.returncode == 0
    msgs = [json.loads(l) for l in r.stdout.split(b"\n") if l]
    assert [m.get("id") for m in msgs] == [1, 2]
    assert msgs[1] == {"id": 2, "result": {"status": "ready"}}


@needs_server
@runs_sh
def test_stdio_process_output_before_eof(tmp_path):
    """§1.1: notifications are streamed on stdout in stdio mode."""
    with StdioServer(tmp_path / "stdio.stderr") as srv:
        c = srv.client()
        c.initialize()
        c.start("cat", ["/bin/cat"], pipeStdin=True)
        c.write("cat", b"via-stdio\n", "1")
        m = c.next_notification("process/output")
        assert unb64(m["params"]["chunk"]) == b"via-stdio\n"
        assert c.terminate("cat") == {"running": True}
        assert c.collect("cat").exit_code == 137
        assert srv.end_input() == 0


@needs_server
@runs_sh
@pytest.mark.needs_programs("/usr/bin/yes")
def test_stdio_exits_at_eof_when_stdout_is_never_read(tmp_path):
    """stdin reaches EOF while the parent no longer reads stdout (full pipe, output queued):
    the server flushes what it can, and when nothing moved for three ping intervals it
    exits anyway, with its processes killed (before, it waited on the pipe for ever and
    kept the flooding process running)."""
    with StdioServer(tmp_path / "stderr", "--ping-interval-ms", "200") as srv:
        c = srv.client()
        c.initialize()
        c.start("y", ["/bin/sh", "-c", "read go; exec /usr/bin/yes flood"],
                env={"PATH": "/usr/bin:/bin"}, pipeStdin=True)
        pid = c.result("process/list", {})["processes"][0]["pid"]
        c.write("y", b"go\n", "1")
        # Not the pipe's fill level (pages written in part leave slack): the child's own
        # count. What it wrote, less its 64 KiB pipe, the server read; the messages made of
        # it are a third larger, so past 512 KiB they exceed our 64 KiB pipe many times
        # over: output is queued, and stays queued (nobody reads).
        fd = srv.proc.stdout.fileno()
        size = fcntl.fcntl(fd, 1032)  # F_GETPIPE_SZ

        def written():
            with open("/proc/%d/io" % pid) as f:
                return int(re.search(r"^wchar: (\d+)$", f.read(), re.M).group(1))

        wait_until(lambda: written() > 8 * size + (512 << 10),
                   what="the flood to outgrow the server's stdout pipe")
        assert pid_alive(pid)
        assert srv.end_input() == 0
        wait_until(lambda: not pid_alive(pid), what="the flooding process to be killed")
    stderr = srv.stderr()
    assert b"stopped reading while closing" in stderr, stderr[-2000:]
    assert not srv.sanitizer_problems(), stderr[-2000:]


def pipe_fds(pid):
    """How many pipes process pid holds open."""
    n = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            n += os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("pipe:")
        except OSError:
            pass
    return n


@needs_server
@runs_sh
@pytest.mark.needs_programs("/usr/bin/head")
def test_stdio_slow_reader_at_eof_gets_everything(tmp_path):
    """The other side of the rule above: a parent that closed stdin and reads stdout
    slowly, slower than the ping ticks, still gets every byte queued at the end of
    input (partial writes to its pipe count as progress) and the server exits 0 once
    all is out."""
    import time
    with StdioServer(tmp_path / "stderr", "--ping-interval-ms", "100") as srv:
        proc, t = srv.proc, srv.transport
        c = srv.client()
        c.initialize()
        n = 2 << 20
        base_pipes = pipe_fds(proc.pid)
        c.start("h", ["/usr/bin/head", "-c", str(n), "/dev/zero"],
                env={"PATH": "/usr/bin:/bin"})
        # all of it produced and queued in the server before stdin closes: what is queued
        # at the end of input is delivered, what comes later is not. head's exit is not
        # enough (the server may not have read its pipe to the end yet): the server closes
        # the pipes once it read them to their end, so its pipe fds are back to before.
        wait_until(lambda: not children_of(proc.pid) and pipe_fds(proc.pid) == base_pipes,
                   what="head to finish and the server to read all of its output")
        proc.stdin.close()
        os.set_blocking(proc.stdout.fileno(), True)
        data = t._buf
        while True:
            chunk = os.read(proc.stdout.fileno(), 32768)
            if not chunk:
                break
            data += chunk
            time.sleep(0.05)  # 640 KiB/s: the 2.7 MB of messages take ~4 s, 40 ticks
        assert proc.wait(60) == 0
    msgs = [json.loads(line) for line in data.split(b"\n") if line]
    got = b"".join(unb64(m["params"]["chunk"]) for m in msgs
                   if m.get("method") == "process/output")
    assert len(got) == n and set(got) == {0}
    assert [m["method"] for m in msgs if m.get("method", "").startswith("process/")][-1] == \
        "process/closed"
    assert b"stopped reading while closing" not in srv.stderr()
