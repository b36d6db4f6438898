# SPDX-License-Identifier: MIT
"""--config FILE (issue 16 item 5): TOML whose keys are the long option names; the
command line overrides the file; unknown keys and wrong types are errors naming the
key; SIGHUP reads the file again (what may change at run time) without dropping
connections, and reopens the audit log."""

import json
import os
import re
import signal

import pytest

from conftest import StdioServer, run_once, wait_until

pytestmark = pytest.mark.needs_programs("/bin/sh", "/bin/echo", "/bin/sleep")

PATH_ENV = {"PATH": "/usr/bin:/bin"}


def write(path, text):
    path.write_text(text)
    return str(path)


uexec = run_once   # a start expected to end (here: refused), output captured


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


def refused_as_wrong_type(tmp_path, text, key, want, got):
    """A file whose key has the wrong type: exit 2, naming the key, the type wanted and given."""
    conf = write(tmp_path / "u.toml", text)
    p = uexec("--config", conf)
    assert p.returncode == 2
    msg = "key '%s' must be %s, not %s" % (key, want, got)
    assert msg.encode() in p.stderr, p.stderr


@pytest.mark.parametrize("text,key,want,got", [
    ('max-processes = "5"\n', "max-processes", "an integer", "a string"),
    ("listen = 8080\n", "listen", "a string", "an integer"),
    ('no-sandbox = "yes"\n', "no-sandbox", "a boolean", "a string"),
    ("resume-window-ms = 1.5\n", "resume-window-ms", "an integer", "a float"),
    ("executor-version = [1, 2]\n", "executor-version", "a string", "an array"),
])
def test_wrong_type_is_an_error_naming_key_and_type(tmp_path, text, key, want, got):
    refused_as_wrong_type(tmp_path, text, key, want, got)


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


# ---- every option, with the TOML type it naturally takes

# A valid value for every option of `uexec --help`, as an operator would write it.
NATURAL = {
    "listen": '"ws://127.0.0.1:0"',
    "executor-version": '"1.2.3"',
    "log-level": '"debug"',
    "log-format": '"json"',
    "audit-log": '"-"',
    "audit-log-max-queued-bytes": "4194304",
    "no-sandbox": "true",
    "resume-window-ms": "60000",
    "max-sessions": "16",
    "max-connections": "16",
    "max-processes": "16",
    "max-frame-bytes": "1048576",
    "max-message-bytes": "1048576",
    "max-json-depth": "64",
    "max-queued-bytes": "1048576",
    "max-inflight-bytes-per-conn": "16777216",
    "max-inflight-bytes": "67108864",
    "ping-interval-ms": "30000",
    "handshake-timeout-ms": "10000",
    "sandbox-max-ptys": "64",
    "sandbox-uid": "65534",
    "drain-timeout-ms": "30000",
    "http-max-response-bytes": "67108864",
    "remote": '"https://relay.example/"',
    "environment-id": '"env-1"',
    "name": '"devbox"',
    "use-agent-identity-auth": "true",
    "enable-audit": "true",
    "denial-evidence": '"none"',
    "process-cgroups": "false",
    "process-pids-max": "4096",
    "process-memory-max": '"512M"',
    "process-cpu-max": "0.5",
    "ws-auth": '"signed-bearer-token"',
    "ws-token-file": '"/etc/uexec/token"',
    "ws-token-sha256": '"%s"' % ("ab" * 32),
    "ws-shared-secret-file": '"/etc/uexec/secret"',
    "ws-issuer": '"iss-1"',
    "ws-audience": '"aud-1"',
    "ws-max-clock-skew-seconds": "30",
    "allow-unauthenticated": "true",
    "tls-cert": '"/etc/uexec/cert.pem"',
    "tls-key": '"/etc/uexec/key.pem"',
}
# Other natural spellings of the options that take more than one type.
MORE_NATURAL = [
    ("process-memory-max", "536870912"),
    ("process-memory-max", '"8G"'),
    ("process-cpu-max", "2"),
    ("process-cpu-max", "1.25"),
    ("process-cpu-max", '"0.5"'),
    ("process-cgroups", "true"),
    ("process-cgroups", '"off"'),
    ("denial-evidence", '"auto"'),
    ("enable-audit", "false"),
]


def help_options():
    out = uexec("--help").stdout.decode()
    names = set(re.findall(r"^\s+--([a-z0-9-]+)", out, re.M))
    return names - {"config", "help", "version"}


def test_every_option_is_known_to_the_test():
    """A new option must get a natural value above (and so be checked below)."""
    assert help_options() == set(NATURAL), help_options() ^ set(NATURAL)


@pytest.mark.parametrize("key,value", sorted(NATURAL.items()) + MORE_NATURAL)
def test_every_option_takes_its_natural_type(tmp_path, key, value):
    """The file's key is accepted with its natural TOML type and its value passes the
    option's own parser: the only complaint is the unknown option that follows it on the
    command line (which stops the server before anything starts)."""
    conf = write(tmp_path / "u.toml", "%s = %s\n" % (key, value))
    p = uexec("--config", conf, "--no-such-option")
    assert p.returncode == 2
    err = p.stderr.decode()
    assert "unrecognized option '--no-such-option'" in err, err
    assert "config file" not in err and "invalid" not in err, err
    assert p.stdout == b""


@pytest.mark.parametrize("text,key,want,got", [
    ("process-memory-max = 0.5\n", "process-memory-max", "a string or an integer", "a float"),
    ("process-cpu-max = true\n", "process-cpu-max", "a string, an integer or a float",
     "a boolean"),
    ("process-cpu-max = nan\n", "process-cpu-max", "a string, an integer or a float",
     "a float that is not finite"),
    ("process-cgroups = 1\n", "process-cgroups", "a string or a boolean", "an integer"),
    ('ws-max-clock-skew-seconds = "30"\n', "ws-max-clock-skew-seconds", "an integer",
     "a string"),
    ('drain-timeout-ms = "5s"\n', "drain-timeout-ms", "an integer", "a string"),
    ('enable-audit = "yes"\n', "enable-audit", "a boolean", "a string"),
    ('audit-log-max-queued-bytes = "1M"\n', "audit-log-max-queued-bytes", "an integer",
     "a string"),
])
def test_new_options_wrong_type(tmp_path, text, key, want, got):
    refused_as_wrong_type(tmp_path, text, key, want, got)


def test_float_value_checked_by_the_option(tmp_path):
    conf = write(tmp_path / "u.toml", "process-cpu-max = 0.001\n")
    p = uexec("--config", conf)
    assert p.returncode == 2
    assert b"invalid value '0.001' for --process-cpu-max" in p.stderr, p.stderr


@pytest.mark.parametrize("lines,want", [
    (['process-cpu-max = 0.5', 'process-memory-max = "512M"', 'process-pids-max = 300'],
     {"cpuMaxMillicpu": 500, "memoryMaxBytes": 512 << 20, "pidsMax": 300}),
    (['process-cpu-max = 2', 'process-memory-max = 536870912'],
     {"cpuMaxMillicpu": 2000, "memoryMaxBytes": 512 << 20}),
    (['process-cpu-max = 0.3'], {"cpuMaxMillicpu": 300}),   # not 299: the float's shortest form
    (['process-cpu-max = "1.25"', 'process-memory-max = "1G"'],
     {"cpuMaxMillicpu": 1250, "memoryMaxBytes": 1 << 30}),
])
def test_limits_from_the_file_apply(server_factory, tmp_path, lines, want):
    """The limits set in the file are those the process's cgroup gets (the audit log's
    start line, itself set in the file, says which)."""
    from test_process_cgroup import needs_limit
    needs_limit("pids", "memory", "cpu")
    audit = tmp_path / "audit.jsonl"
    conf = write(tmp_path / "u.toml", "\n".join(lines + ['audit-log = "%s"' % audit]) + "\n")
    srv = server_factory("--config", conf)
    c = srv.connect()
    assert c.run("p", ["/bin/echo", "x"], env=PATH_ENV).exit_code == 0
    wait_until(lambda: audit.exists() and b"process.start" in audit.read_bytes(),
               what="the audit line")
    start = [json.loads(x) for x in audit.read_bytes().splitlines()
             if b'"process.start"' in x][0]
    assert start["limits"] == want, start


@pytest.mark.parametrize("value,on", [("false", False), ('"off"', False), ("true", True)])
def test_process_cgroups_boolean(server_factory, tmp_path, value, on):
    from test_process_cgroup import cgroup_why
    if on and cgroup_why():
        pytest.skip(cgroup_why())
    conf = write(tmp_path / "u.toml", "process-cgroups = %s\n" % value)
    srv = server_factory("--config", conf)
    c = srv.connect()
    assert c.init_result["environmentInfo"]["capabilities"]["uexecProcessCgroup"] is on


def test_jwt_auth_from_the_file(server_factory, tmp_path):
    """--ws-auth and its options from the file, the skew as an integer: a token expired
    45 s ago passes with ws-max-clock-skew-seconds = 60 (the default 30 would refuse it),
    one expired 90 s ago does not; the wrong audience and no token are refused."""
    import time
    from test_auth import SECRET, assert_101, assert_401, jwt, upgrade
    secret = tmp_path / "secret"
    secret.write_bytes(SECRET)
    secret.chmod(0o600)
    conf = write(tmp_path / "u.toml",
                 'ws-auth = "signed-bearer-token"\n'
                 'ws-shared-secret-file = "%s"\n'
                 'ws-issuer = "iss-1"\n'
                 'ws-audience = "aud-1"\n'
                 'ws-max-clock-skew-seconds = 60\n' % secret)
    srv = server_factory("--config", conf)
    now = int(time.time())
    ok = {"iss": "iss-1", "aud": "aud-1"}
    assert_101(upgrade(srv, "Bearer " + jwt(dict(ok, exp=now - 45))))
    assert_401(upgrade(srv, "Bearer " + jwt(dict(ok, exp=now - 90))), "expired websocket jwt")
    assert_401(upgrade(srv, "Bearer " + jwt(dict(ok, aud="x", exp=now + 60))),
               "websocket jwt audience mismatch")
    assert_401(upgrade(srv, None), "missing websocket bearer token")


EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "dist",
                       "uexec.toml.example")
# The operator-facing options the example must show (the remote-mode ones and
# executor-version are for other deployments; --help documents them).
EXAMPLE_KEYS = {k for k in NATURAL if k.startswith(("ws-", "tls-", "process-"))} | {
    "allow-unauthenticated", "denial-evidence", "enable-audit", "drain-timeout-ms", "listen",
    "http-max-response-bytes",
    "log-format", "log-level", "audit-log", "audit-log-max-queued-bytes", "no-sandbox",
    "max-sessions", "max-processes"}


def example_settings():
    """(key, value, commented) of every `key = value` line of the example."""
    out = []
    with open(EXAMPLE) as f:
        for line in f:
            m = re.match(r"^(# )?([a-z0-9-]+) = (\S+)", line)
            if m:
                out.append((m.group(2), m.group(3), bool(m.group(1))))
    return out


def test_example_documents_the_options():
    keys = {k for k, _, _ in example_settings()}
    assert EXAMPLE_KEYS <= keys, EXAMPLE_KEYS - keys
    assert keys <= set(NATURAL), keys - set(NATURAL)


@pytest.mark.parametrize("key,value", [(k, v) for k, v, _ in example_settings()
                                       if not v.startswith('"<')])
def test_example_values_are_accepted(tmp_path, key, value):
    """Each line of the example, uncommented, has the right type and a valid value."""
    conf = write(tmp_path / "u.toml", "%s = %s\n" % (key, value))
    p = uexec("--config", conf, "--no-such-option")
    err = p.stderr.decode()
    assert p.returncode == 2 and "unrecognized option '--no-such-option'" in err, err
    assert "config file" not in err and "invalid" not in err, err


def test_example_as_shipped_loads(tmp_path):
    p = uexec("--config", EXAMPLE, "--no-such-option")
    err = p.stderr.decode()
    assert p.returncode == 2 and "unrecognized option '--no-such-option'" in err, err
    assert "config file" not in err and "invalid" not in err, err


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
    path = tmp_path / "u.toml"
    write(path, "max-processes = 5\n")
    with StdioServer(tmp_path / "stderr", "--config", str(path)) as srv:
        c = srv.client()
        c.initialize()
        write(path, 'audit-log = "-"\nmax-processes = 5\n')
        srv.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: b"Configuration reloaded" in srv.stderr(), what="the reload")
        # an audit line on stdout is no JSON-RPC message: the client refuses it
        run = c.run("p", ["/bin/echo", "hi"], env=PATH_ENV)
        assert run.stdout == b"hi\n"
        assert b"--audit-log - writes to stdout" in srv.stderr()
        assert srv.end_input() == 0
        rest = srv.transport._buf + srv.proc.stdout.read()
    # every stdout line is a JSON-RPC message, none an audit line
    assert b"process.start" not in rest
    for m in c.log:
        assert "jsonrpc" in m or "id" in m or "method" in m, m
        assert m.get("event") is None, m


def test_sighup_turning_the_handshake_deadline_off_closes_no_handshake(server_factory, tmp_path):
    """handshake-timeout-ms = 0 means no deadline: after a reload to 0, a connection that
    was handshaking is not closed by the timer armed before (it used to be, at once)."""
    import socket
    from wsclient import upgrade_request
    path = tmp_path / "u.toml"
    write(path, "handshake-timeout-ms = 1500\n")
    srv = server_factory("--config", str(path))
    s = socket.create_connection((srv.host, srv.port), timeout=60)
    try:
        write(path, "handshake-timeout-ms = 0\n")
        srv.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: b"Configuration reloaded" in srv.stderr(), what="the reload")
        # Past the old deadline, by an event: a process timeout armed later than it and
        # longer, on the same loop, fires after it (timers fire in the order they expire);
        # its process is reported timed out only after it was killed.
        c = srv.connect()
        run = c.run("later", ["/bin/sleep", "1000"], timeoutMs=2500)
        assert run.exited["timedOut"] is True
        c.ws.abort()
        req, _ = upgrade_request(srv.host, srv.port)
        s.sendall(req)
        head = s.recv(4096)
        assert head.startswith(b"HTTP/1.1 101 "), (head, srv.stderr()[-1000:])
    finally:
        s.close()
    assert b"no WebSocket upgrade within" not in srv.stderr()
