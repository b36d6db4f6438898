# SPDX-License-Identifier: MIT
"""Structured logs and the audit log (issue 16 item 4): --log-format json writes one
JSON object per line that parses back, with event names and fields on the important
lines and correct escaping of client-controlled strings; --audit-log writes one line
per process start and exit, never environment values."""

import json
import os
import re
import signal

import pytest

from conftest import run_once, wait_until
from wsclient import file_uri

pytestmark = pytest.mark.needs_programs("/bin/sh", "/bin/echo", "/bin/sleep")

PATH_ENV = {"PATH": "/usr/bin:/bin"}
TIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
KEYS = {"time", "level", "event", "session", "process", "message", "fields"}
# Every byte a client can put in a JSON string that a log line must escape, and more.
HOSTILE = ('q"uote \\back\\slash\nnew\rline\ttab \x00nul \x01\x1b[31mansi\x7f '
           '\u2028sep\u2029 é€𝄞 }{"],"event":"forged"')
SECRET = "s3cr3t-VALUE-that-must-not-be-logged"


def json_lines(data):
    out = []
    for raw in data.split(b"\n"):
        if not raw:
            continue
        # a line is one object: no raw control characters inside
        assert not re.search(rb"[\x00-\x1f]", raw), raw
        obj = json.loads(raw.decode("utf-8"))
        assert isinstance(obj, dict), raw
        out.append(obj)
    return out


def events(objs, name):
    return [o for o in objs if o["event"] == name]


def test_json_log_lines_parse_back(server_factory):
    srv = server_factory("--log-format", "json", "--log-level", "debug")
    c = srv.connect()
    sid = c.init_result["sessionId"]
    run = c.run("p1", ["/bin/sh", "-c", "exit 7"], env=PATH_ENV)
    assert run.exit_code == 7
    wait_until(lambda: b"process.exited" in srv.stderr(), what="the exit line")
    lines = json_lines(srv.stderr())
    assert lines
    for o in lines:
        assert KEYS <= set(o), o
        assert TIME_RE.match(o["time"]), o["time"]
        assert o["level"] in ("debug", "info", "notice", "warning", "error"), o
        assert isinstance(o["fields"], dict), o
    listening = events(lines, "server.listening")
    assert len(listening) == 1 and listening[0]["fields"]["url"] == srv.url
    opened = events(lines, "session.opened")
    assert [o["session"] for o in opened] == [sid]
    assert opened[0]["fields"]["client"] == c.ws.local_addr
    started = events(lines, "process.started")
    assert started[0]["session"] == sid and started[0]["process"] == "p1"
    assert started[0]["fields"]["pid"] > 0 and started[0]["fields"]["tty"] is False
    exited = events(lines, "process.exited")
    assert exited[0]["process"] == "p1" and exited[0]["fields"]["exitCode"] == 7
    assert exited[0]["fields"]["sandboxDenied"] is False
    limits = events(lines, "server.limits")
    assert limits[0]["fields"]["maxProcesses"] > 0 and "Limits:" in limits[0]["message"]
    # plain lines are objects too, with the event "log"
    assert any(o["event"] == "log" and o["fields"] == {} for o in lines)


def test_text_format_unchanged_by_default(server):
    c = server.connect()
    c.run("t", ["/bin/echo", "x"], env=PATH_ENV)
    err = server.stderr().decode()
    assert re.search(r"^uexec\[\d+\]: info: Listening on ws://", err, re.M), err
    assert not err.lstrip().startswith("{")


def test_hostile_strings_are_escaped(server_factory, tmp_path):
    audit = tmp_path / "audit.jsonl"
    srv = server_factory("--log-format", "json", "--log-level", "debug", "--audit-log", str(audit))
    c = srv.connect()
    pid = HOSTILE + "-id"
    arg = HOSTILE.replace("\x00", "")      # argv cannot hold NUL (exec), the processId can
    run = c.run(pid, ["/bin/echo", arg], env=PATH_ENV)
    assert run.exit_code == 0
    # a program that does not exist: its name goes into the spawn failure line
    bad = "/nonexistent/" + arg
    err = c.error("process/start", c.start_params("bad", argv=[bad], env=PATH_ENV))
    assert err["code"] == -32603
    wait_until(lambda: b"process.spawnFailed" in srv.stderr(), what="the spawn failure line")
    lines = json_lines(srv.stderr())
    started = events(lines, "process.started")
    assert [o["process"] for o in started] == [pid]     # NUL, quotes, newlines round-trip
    assert not events(lines, "forged")
    failed = events(lines, "process.spawnFailed")
    assert failed[0]["fields"]["program"] == bad
    wait_until(lambda: audit.read_bytes().count(b"\n") >= 3, what="the audit lines")
    recs = json_lines(audit.read_bytes())
    start = events(recs, "process.start")[0]
    assert start["process"] == pid and start["argv"] == ["/bin/echo", arg]
    assert events(recs, "process.startFailed")[0]["argv"] == [bad]


def test_text_format_lines_cannot_be_forged(server_factory):
    """The text log prints client strings (a processId) inside messages: a newline in one
    must not start a line of its own that looks like the server's."""
    srv = server_factory("--log-level", "debug")
    c = srv.connect()
    pid = "t\nuexec[1]: error: FORGED\r\x1b[2K"
    assert c.run(pid, ["/bin/echo", "x"], env=PATH_ENV).exit_code == 0
    wait_until(lambda: b"exited with 0" in srv.stderr(), what="the exit line")
    err = srv.stderr().decode()
    assert not re.search(r"^uexec\[1\]: error: FORGED", err, re.M), err[-2000:]
    assert "\x1b" not in err and "\r" not in err
    # the id is still readable, escaped
    assert "t\\nuexec[1]: error: FORGED\\r\\x1b[2K" in err, err[-2000:]
    for line in err.splitlines():
        assert line.startswith("uexec["), line


def test_audit_log_content(server_factory, tmp_path):
    audit = tmp_path / "audit.jsonl"
    srv = server_factory("--audit-log", str(audit))
    c = srv.connect()
    sid = c.init_result["sessionId"]
    env = dict(PATH_ENV, API_TOKEN=SECRET)
    run = c.run("a1", ["/bin/sh", "-c", "sleep 0.3; echo $API_TOKEN >/dev/null; exit 5"],
                cwd=str(tmp_path), env=env)
    assert run.exit_code == 5
    c.run("a2", ["/bin/sh", "-c", "kill -9 $$"], env=env)
    wait_until(lambda: audit.read_bytes().count(b"\n") >= 4, what="4 audit lines")
    data = audit.read_bytes()
    assert SECRET.encode() not in data
    assert SECRET.encode() not in srv.stderr()
    recs = json_lines(data)
    for r in recs:
        assert TIME_RE.match(r["time"]) and r["session"] == sid, r
        assert "env" not in r and "environment" not in r
    start = [r for r in recs if r["event"] == "process.start" and r["process"] == "a1"][0]
    assert start["client"] == c.ws.local_addr
    assert start["argv"] == ["/bin/sh", "-c", "sleep 0.3; echo $API_TOKEN >/dev/null; exit 5"]
    assert start["argc"] == 3
    assert start["cwd"] == str(tmp_path)
    assert start["tty"] is False
    assert start["sandbox"] == {"type": "none"}
    assert start["pid"] > 0
    assert "limits" not in start   # the server sets none, the request asked for none
    exit1 = [r for r in recs if r["event"] == "process.exit" and r["process"] == "a1"][0]
    assert exit1["exitCode"] == 5 and exit1["signal"] == 0 and exit1["pid"] == start["pid"]
    assert 250 <= exit1["durationMs"] < 20000
    assert exit1["sandboxDenied"] is False
    assert "oomKilled" not in exit1   # no memory limit: as on process/exited
    exit2 = [r for r in recs if r["event"] == "process.exit" and r["process"] == "a2"][0]
    assert exit2["exitCode"] == 137 and exit2["signal"] == signal.SIGKILL
    # the order of events
    order = [(r["event"], r["process"]) for r in recs]
    assert order.index(("process.start", "a1")) < order.index(("process.exit", "a1"))


def test_audit_log_sandbox_summary(server_factory, tmp_path, host):
    host.require("sandbox")
    audit = tmp_path / "audit.jsonl"
    srv = server_factory("--audit-log", str(audit))
    c = srv.connect()
    root = {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"}
    work = {"path": {"type": "path", "path": file_uri(str(tmp_path))}, "access": "write"}
    sandbox = {"permissions": {"type": "managed", "file_system": {"type": "restricted",
                                                                  "entries": [root, work]},
                               "network": "restricted"},
               "windowsSandboxLevel": "disabled"}
    run = c.run("sb", ["/bin/echo", "hi"], env=PATH_ENV, cwd=str(tmp_path), sandbox=sandbox)
    assert run.exit_code == 0, run.data()
    wait_until(lambda: audit.read_bytes().count(b"\n") >= 2, what="the audit lines")
    start = events(json_lines(audit.read_bytes()), "process.start")[0]
    sb = start["sandbox"]
    assert sb["type"] == "restricted" and sb["restrictFs"] is True and sb["network"] is False
    assert str(tmp_path) in sb["writableRoots"]


def test_audit_log_to_stdout_after_the_url(server_factory):
    srv = server_factory("--audit-log", "-")
    c = srv.connect()
    c.run("o", ["/bin/echo", "x"], env=PATH_ENV)
    wait_until(lambda: open(srv.stdout_path, "rb").read().count(b"\n") >= 3, what="audit lines")
    first, rest = open(srv.stdout_path, "rb").read().split(b"\n", 1)
    assert first.decode() == srv.url
    assert [r["event"] for r in json_lines(rest)] == ["process.start", "process.exit"]


def test_audit_log_unwritable_path_fails_start(tmp_path):
    p = run_once("--audit-log", str(tmp_path / "no" / "such" / "dir" / "a.log"))
    assert p.returncode == 1
    assert b"Cannot open the audit log" in p.stderr


def test_argv_is_capped_in_the_audit_log(server_factory, tmp_path):
    audit = tmp_path / "audit.jsonl"
    srv = server_factory("--audit-log", str(audit))
    c = srv.connect()
    big = ["x" * 1000] * 200          # 200 kB of argv
    c.run("big", ["/bin/echo"] + big, env=PATH_ENV)
    wait_until(lambda: audit.read_bytes().count(b"\n") >= 2, what="the audit lines")
    start = events(json_lines(audit.read_bytes()), "process.start")[0]
    assert start["argc"] == 201 and start["argvTruncated"] is True
    assert 0 < len(start["argv"]) < 201 and sum(map(len, start["argv"])) <= 65536
    assert os.path.getsize(audit) < 100000


def test_argv_cap_counts_empty_arguments(server_factory, tmp_path):
    """The cap bounds the line, not only the bytes of the strings: 200000 empty arguments
    (a 600 kB request) used to make a 600 kB audit line."""
    audit = tmp_path / "audit.jsonl"
    srv = server_factory("--audit-log", str(audit))
    c = srv.connect()
    c.run("empty", ["/bin/true"] + [""] * 200000, env=PATH_ENV)
    wait_until(lambda: audit.read_bytes().count(b"\n") >= 2, what="the audit lines")
    start = events(json_lines(audit.read_bytes()), "process.start")[0]
    assert start["argc"] == 200001 and start["argvTruncated"] is True
    assert os.path.getsize(audit) < 100000


def test_sighup_reopens_the_audit_log_without_a_config_file(server_factory, tmp_path):
    """Log rotation: move the file away, SIGHUP, the next lines go to a new file."""
    audit, rotated = tmp_path / "audit.jsonl", tmp_path / "audit.jsonl.1"
    srv = server_factory("--audit-log", str(audit))
    c = srv.connect()
    c.run("one", ["/bin/echo", "1"], env=PATH_ENV)
    wait_until(lambda: audit.read_bytes().count(b"\n") >= 2, what="the first lines")
    audit.rename(rotated)
    srv.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: audit.exists(), what="the audit log to be reopened")
    c.run("two", ["/bin/echo", "2"], env=PATH_ENV)     # same connection
    wait_until(lambda: audit.read_bytes().count(b"\n") >= 2, what="lines in the new file")
    assert [r["process"] for r in json_lines(audit.read_bytes())] == ["two", "two"]
    assert [r["process"] for r in json_lines(rotated.read_bytes())] == ["one", "one"]
    assert oct(os.stat(audit).st_mode & 0o777) == "0o600"


def test_audit_to_stdout_is_refused_with_stdio_transport():
    p = run_once("--listen", "stdio", "--audit-log", "-")
    assert p.returncode == 1 and p.stdout == b""
    assert b"--listen stdio uses for the protocol" in p.stderr


def test_audit_log_limits_and_oom(server_factory, tmp_path):
    """The start line carries the limits the process's cgroup enforces (the server's
    defaults, lowered by the request); the exit line of a process with a memory limit
    says whether it was OOM-killed, as process/exited does."""
    from test_process_cgroup import needs_limit
    needs_limit("pids", "memory")
    audit = tmp_path / "audit.jsonl"
    srv = server_factory("--audit-log", str(audit), "--process-pids-max", "512")
    c = srv.connect()
    run = c.run("plain", ["/bin/echo", "x"], env=PATH_ENV)
    assert run.exit_code == 0
    run = c.run("oom", ["/usr/bin/python3", "-c", "b = bytearray(4 << 30); print('alive')"],
                env=PATH_ENV, limits={"memoryMaxBytes": 64 << 20, "pidsMax": 64})
    assert run.exited["oomKilled"] is True and run.exit_code == 137, run.exited
    run = c.run("fits", ["/bin/true"], env=PATH_ENV, limits={"memoryMaxBytes": 64 << 20})
    assert run.exited["oomKilled"] is False
    wait_until(lambda: audit.read_bytes().count(b"\n") >= 6, what="6 audit lines")
    recs = json_lines(audit.read_bytes())

    def rec(event, process):
        return [r for r in recs if r["event"] == event and r["process"] == process][0]

    assert rec("process.start", "plain")["limits"] == {"pidsMax": 512}
    assert "oomKilled" not in rec("process.exit", "plain")   # no memory limit
    assert rec("process.start", "oom")["limits"] == {"pidsMax": 64,
                                                     "memoryMaxBytes": 64 << 20}
    ex = rec("process.exit", "oom")
    assert ex["oomKilled"] is True and ex["exitCode"] == 137 and ex["signal"] == 9
    assert rec("process.start", "fits")["limits"] == {"pidsMax": 512,
                                                      "memoryMaxBytes": 64 << 20}
    assert rec("process.exit", "fits")["oomKilled"] is False
