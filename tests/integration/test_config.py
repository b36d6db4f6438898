# SPDX-License-Identifier: MIT
"""--config FILE (issue 16 item 5): TOML whose keys are the long option names; the
command line overrides the file; unknown keys and wrong types are errors naming the
key; SIGHUP reads the file again (what may change at run time) without dropping
connections, and reopens the audit log."""

import json
import signal
import subprocess

import pytest

from conftest import UEXEC_BIN, wait_until

pytestmark = pytest.mark.needs_programs("/bin/sh", "/bin/echo", "/bin/sleep")

PATH_ENV = {"PATH": "/usr/bin:/bin"}


def write(path, text):
    path.write_text(text)
    return str(path)


def uexec(*args, timeout=20):
    return subprocess.run([UEXEC_BIN] + list(args), capture_output=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def test_file_applies_and_command_line_overrides(server_factory, tmp_path):
    conf = write(tmp_path / "uexec.toml",
                 '# operator settings\n'
                 'executor-version = "9.9.9-file"\n'
                 'max-processes = 1\n'
                 'log-level = "debug"\n')
    srv = server_factory("--config", conf, "--executor-version", "1.2.3-cli")
    c = srv.connect()
    # the command line wins
    assert c.init_result["environmentInfo"]["executorVersion"] == "1.2.3-cli"
    # the file applies where the command line says nothing
    c.start("one", ["/bin/sleep", "30"], env=PATH_ENV)
    err = c.error("process/start", c.start_params("two", argv=["/bin/echo"]))
    assert "at most 1 running processes" in err["message"], err
    assert b": debug: " in srv.stderr()       # log-level from the file


def test_boolean_flag_from_file(server_factory, tmp_path):
    conf = write(tmp_path / "u.toml", "no-sandbox = true\nlog-format = \"json\"\n")
    srv = server_factory("--config", conf)
    srv.connect()
    lines = [json.loads(x) for x in srv.stderr().splitlines() if x]
    assert any("disabled by --no-sandbox" in o["message"] for o in lines), lines


def test_false_boolean_leaves_the_flag_out(server_factory, tmp_path):
    conf = write(tmp_path / "u.toml", "no-sandbox = false\n")
    srv = server_factory("--config", conf)
    srv.connect()
    assert b"disabled by --no-sandbox" not in srv.stderr()


def test_file_value_out_of_range_names_the_option(tmp_path):
    conf = write(tmp_path / "u.toml", "max-json-depth = 2\n")
    p = uexec("--config", conf)
    assert p.returncode == 2
    assert b"invalid value '2' for --max-json-depth" in p.stderr


@pytest.mark.parametrize("text,key", [
    ("max-sesions = 4\n", "max-sesions"),
    ('listen = "ws://127.0.0.1:0"\n[extra]\nx = 1\n', "extra"),
    ("config = \"/etc/other.toml\"\n", "config"),
    ("help = true\n", "help"),
])
def test_unknown_key_is_an_error_naming_it(tmp_path, text, key):
    conf = write(tmp_path / "u.toml", text)
    p = uexec("--config", conf)
    assert p.returncode == 2
    assert ("unknown key '%s'" % key).encode() in p.stderr, p.stderr
    assert p.stdout == b""      # nothing listened


@pytest.mark.parametrize("text,key,want,got", [
    ('max-processes = "5"\n', "max-processes", "an integer", "a string"),
    ("listen = 8080\n", "listen", "a string", "an integer"),
    ('no-sandbox = "yes"\n', "no-sandbox", "a boolean", "a string"),
    ("resume-window-ms = 1.5\n", "resume-window-ms", "an integer", "a float"),
    ("executor-version = [1, 2]\n", "executor-version", "a string", "an array"),
])
def test_wrong_type_is_an_error_naming_key_and_type(tmp_path, text, key, want, got):
    conf = write(tmp_path / "u.toml", text)
    p = uexec("--config", conf)
    assert p.returncode == 2
    msg = "key '%s' must be %s, not %s" % (key, want, got)
    assert msg.encode() in p.stderr, p.stderr


def test_invalid_toml_and_missing_file(tmp_path):
    conf = write(tmp_path / "u.toml", "max-processes = \n")
    p = uexec("--config", conf)
    assert p.returncode == 2 and b"line 1, column" in p.stderr, p.stderr
    p = uexec("--config", str(tmp_path / "missing.toml"))
    assert p.returncode == 2 and b"cannot read config file" in p.stderr, p.stderr


def test_sighup_reloads_without_dropping_connections(server_factory, tmp_path):
    audit, rotated = tmp_path / "audit.jsonl", tmp_path / "audit.jsonl.1"
    path = tmp_path / "u.toml"
    write(path, 'audit-log = "%s"\nmax-processes = 5\n' % audit)
    srv = server_factory("--config", str(path))
    c = srv.connect()
    c.run("before", ["/bin/echo", "1"], env=PATH_ENV)
    wait_until(lambda: audit.exists() and audit.read_bytes().count(b"\n") >= 2,
               what="audit lines")
    # rotate the audit log, lower the process limit, change a restart-only option
    audit.rename(rotated)
    write(path, 'audit-log = "%s"\nmax-processes = 1\nmax-json-depth = 64\n'
          'log-level = "debug"\n' % audit)
    srv.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: b"Configuration reloaded" in srv.stderr(), what="the reload")
    assert srv.proc.poll() is None
    err = srv.stderr()
    assert b"max-json-depth (and any other option not listed as reloadable) takes a restart" \
        in err, err[-2000:]
    # same connection, new limit
    c.start("a", ["/bin/sleep", "30"], env=PATH_ENV)
    e = c.error("process/start", c.start_params("b", argv=["/bin/echo"]))
    assert "at most 1 running processes" in e["message"], e
    # the reopened audit log gets the new lines, the rotated one keeps the old
    wait_until(lambda: audit.exists() and b'"a"' in audit.read_bytes(), what="new audit file")
    assert b'"before"' in rotated.read_bytes() and b'"before"' not in audit.read_bytes()


def test_sighup_with_a_broken_file_keeps_the_configuration(server_factory, tmp_path):
    path = tmp_path / "u.toml"
    write(path, "max-processes = 1\n")
    srv = server_factory("--config", str(path))
    c = srv.connect()
    write(path, "max-processes = 1\nnot-an-option = true\n")
    srv.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: b"Reloading the configuration failed" in srv.stderr(), what="the failure")
    assert b"unknown key 'not-an-option'" in srv.stderr()
    assert srv.proc.poll() is None
    c.start("a", ["/bin/sleep", "30"], env=PATH_ENV)
    e = c.error("process/start", c.start_params("b", argv=["/bin/echo"]))
    assert "at most 1 running processes" in e["message"], e


def _upgrade_status(srv, token):
    from wsclient import http_exchange, upgrade_request
    req, _ = upgrade_request(srv.host, srv.port,
                             extra_headers=[("Authorization", "Bearer " + token)])
    return http_exchange(srv.host, srv.port, req)[0]


def test_sighup_reads_the_auth_files_the_new_configuration_names(server_factory, tmp_path):
    """A token rotated into a new file: after SIGHUP the new token opens the listener and
    the old one is refused (the reload used to re-read the start-up file and report success,
    leaving the revoked token valid)."""
    old, new = tmp_path / "token-old", tmp_path / "token-new"
    old.write_text("old-token-0f3c9a\n")
    new.write_text("new-token-7d21be\n")
    path = tmp_path / "u.toml"
    write(path, 'ws-auth = "capability-token"\nws-token-file = "%s"\n' % old)
    srv = server_factory("--config", str(path))
    assert _upgrade_status(srv, "old-token-0f3c9a") == "HTTP/1.1 101 Switching Protocols"
    write(path, 'ws-auth = "capability-token"\nws-token-file = "%s"\n' % new)
    srv.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: b"Configuration reloaded" in srv.stderr(), what="the reload")
    assert _upgrade_status(srv, "new-token-7d21be") == "HTTP/1.1 101 Switching Protocols"
    assert _upgrade_status(srv, "old-token-0f3c9a") == "HTTP/1.1 401 Unauthorized"
    # another kind of auth is not a reload's business: kept, and said so
    secret = tmp_path / "secret"
    secret.write_bytes(b"s" * 40)
    write(path, 'ws-auth = "signed-bearer-token"\nws-shared-secret-file = "%s"\n' % secret)
    srv.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: srv.stderr().count(b"Configuration reloaded") >= 2, what="2nd reload")
    assert b"ws-auth (and any other option not listed as reloadable) takes a restart" \
        in srv.stderr()
    assert _upgrade_status(srv, "old-token-0f3c9a") == "HTTP/1.1 401 Unauthorized"
    assert _upgrade_status(srv, "new-token-7d21be") == "HTTP/1.1 101 Switching Protocols"


def test_sighup_never_points_the_audit_log_at_the_stdio_protocol(tmp_path):
    """--listen stdio refuses --audit-log - at start; a reload must refuse it too, or
    audit lines land in the JSON-RPC stream on stdout."""
    from wsclient import RpcClient, StdioTransport
    path = tmp_path / "u.toml"
    write(path, "max-processes = 5\n")
    err = open(tmp_path / "stderr", "wb")
    proc = subprocess.Popen([UEXEC_BIN, "--listen", "stdio", "--config", str(path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
    try:
        t = StdioTransport(proc)
        c = RpcClient(t)
        c.initialize()
        write(path, 'audit-log = "-"\nmax-processes = 5\n')
        proc.send_signal(signal.SIGHUP)
        wait_until(lambda: b"Configuration reloaded" in (tmp_path / "stderr").read_bytes(),
                   what="the reload")
        # an audit line on stdout is no JSON-RPC message: the client refuses it
        run = c.run("p", ["/bin/echo", "hi"], env=PATH_ENV)
        assert run.stdout == b"hi\n"
        assert b"--audit-log - writes to stdout" in (tmp_path / "stderr").read_bytes()
        proc.stdin.close()
        assert proc.wait(20) == 0
        rest = t._buf + proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        err.close()
    # every stdout line is a JSON-RPC message, none an audit line
    assert b"process.start" not in rest
    for m in c.log:
        assert "jsonrpc" in m or "id" in m or "method" in m, m
        assert m.get("event") is None, m


def test_sighup_turning_the_handshake_deadline_off_closes_no_handshake(server_factory, tmp_path):
    """handshake-timeout-ms = 0 means no deadline: after a reload to 0, a connection that
    was handshaking is not closed by the timer armed before (it used to be, at once)."""
    import socket
    import time
    from wsclient import http_exchange, upgrade_request
    path = tmp_path / "u.toml"
    write(path, "handshake-timeout-ms = 1500\n")
    srv = server_factory("--config", str(path))
    s = socket.create_connection((srv.host, srv.port), timeout=10)
    try:
        write(path, "handshake-timeout-ms = 0\n")
        srv.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: b"Configuration reloaded" in srv.stderr(), what="the reload")
        time.sleep(2.5)      # past the old deadline
        req, _ = upgrade_request(srv.host, srv.port)
        s.sendall(req)
        head = s.recv(4096)
        assert head.startswith(b"HTTP/1.1 101 "), (head, srv.stderr()[-1000:])
    finally:
        s.close()
    assert b"no WebSocket upgrade within" not in srv.stderr()
