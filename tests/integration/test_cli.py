# SPDX-License-Identifier: MIT
"""Command line: --help, --listen forms, stdio transport (PROTOCOL.md §1.1)."""

import json
import os
import subprocess

import pytest

from conftest import UEXEC_BIN, SANITIZER_MARKERS
from wsclient import RpcClient, StdioTransport, unb64

# a uexec that serves (not only parses its command line) needs io_uring
needs_server = pytest.mark.needs("io_uring")
runs_sh = pytest.mark.needs_programs("/bin/sh", "/bin/cat")

FLAGS = ["--listen", "--resume-window-ms", "--max-sessions", "--max-processes",
         "--max-message-bytes", "--max-frame-bytes", "--max-json-depth", "--ping-interval-ms",
         "--log-level", "--sandbox-max-ptys"]


def run_bin(*args, timeout=20, input=None):
    if not os.access(UEXEC_BIN, os.X_OK):
        pytest.fail("uexec binary not found: %s" % UEXEC_BIN)
    return subprocess.run([UEXEC_BIN, *args], capture_output=True, timeout=timeout, input=input)


def test_help_lists_every_flag():
    """CLI: --help prints usage naming every flag and exits 0."""
    r = run_bin("--help")
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
    r = run_bin("--listen", url)
    assert r.returncode == 1
    assert message in r.stderr.decode()
    assert r.stdout == b""


def test_unknown_flag_fails():
    """CLI: an unknown flag is an error (non-zero exit)."""
    r = run_bin("--definitely-not-a-flag")
    assert r.returncode != 0


def _stdio_server(tmp_path, listen="stdio"):
    err = open(tmp_path / "stdio.stderr", "wb")
    proc = subprocess.Popen([UEXEC_BIN, "--listen", listen], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=err)
    return proc, err


@needs_server
@runs_sh
@pytest.mark.parametrize("listen", ["stdio", "stdio://"])
def test_stdio_round_trip_and_exit_on_eof(tmp_path, listen):
    """§1.1: --listen stdio speaks newline-delimited JSON; exits 0 at stdin EOF."""
    if not os.access(UEXEC_BIN, os.X_OK):
        pytest.fail("uexec binary not found: %s" % UEXEC_BIN)
    proc, err = _stdio_server(tmp_path, listen)
    try:
        c = RpcClient(StdioTransport(proc))
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
        proc.stdin.close()
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        err.close()
    stderr = (tmp_path / "stdio.stderr").read_bytes()
    assert not any(m in stderr for m in SANITIZER_MARKERS), stderr[-2000:]


@needs_server
@runs_sh
def test_stdio_stdout_is_only_json(tmp_path):
    """§1.1: in stdio mode every stdout line is one JSON message (logs go to stderr)."""
    if not os.access(UEXEC_BIN, os.X_OK):
        pytest.fail("uexec binary not found: %s" % UEXEC_BIN)
    err = open(tmp_path / "stderr", "wb")
    proc = subprocess.Popen([UEXEC_BIN, "--listen", "stdio", "--log-level", "debug"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
    try:
        t = StdioTransport(proc)
        c = RpcClient(t)
        c.initialize()
        assert c.result("environment/status", None) == {"status": "ready"}
        proc.stdin.close()
        assert proc.wait(20) == 0
        rest = t._buf + proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        err.close()
    assert rest.strip() == b""
    assert [m.get("id") for m in c.log] == [1, 2]


@needs_server
@runs_sh
def test_stdio_input_before_eof_is_processed(tmp_path):
    """§1.1: lines already received when stdin reaches EOF are still answered before exit 0."""
    if not os.access(UEXEC_BIN, os.X_OK):
        pytest.fail("uexec binary not found: %s" % UEXEC_BIN)
    reqs = [{"id": 1, "method": "initialize", "params": {"clientName": "x"}},
            {"method": "initialized", "params": {}},
            {"id": 2, "method": "environment/status", "params": None}]
    data = "".join(json.dumps(r) + "\n" for r in reqs).encode()
    r = subprocess.run([UEXEC_BIN, "--listen", "stdio"], input=data,
                       capture_output=True, timeout=20)
    assert r.returncode == 0
    msgs = [json.loads(l) for l in r.stdout.split(b"\n") if l]
    assert [m.get("id") for m in msgs] == [1, 2]
    assert msgs[1] == {"id": 2, "result": {"status": "ready"}}


@needs_server
@runs_sh
def test_stdio_process_output_before_eof(tmp_path):
    """§1.1: notifications are streamed on stdout in stdio mode."""
    if not os.access(UEXEC_BIN, os.X_OK):
        pytest.fail("uexec binary not found: %s" % UEXEC_BIN)
    proc, err = _stdio_server(tmp_path)
    try:
        c = RpcClient(StdioTransport(proc))
        c.initialize()
        c.start("cat", ["/bin/cat"], pipeStdin=True)
        c.write("cat", b"via-stdio\n", "1")
        m = c.next_notification("process/output")
        assert unb64(m["params"]["chunk"]) == b"via-stdio\n"
        assert c.terminate("cat") == {"running": True}
        assert c.collect("cat").exit_code == 137
        proc.stdin.close()
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        err.close()
