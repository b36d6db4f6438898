# SPDX-License-Identifier: MIT
"""Remote mode beyond the shared protocol cases (tests/relay/relay_cases.py): `forward
--connect`, an https:// registry with a wss:// rendezvous, credential hygiene, registry and
rendezvous behaviours (retries, re-registration, reconnects, a session resumed across a
physical reconnect), the command line's refusals, and the review findings of src/remote
(each test says which).

Same kit as tests/integration/test_relay.py: tests/relay/fake_relay.py as registry +
rendezvous, tests/relay/harness.py (over libnoise-shim.so) as the harness. Skipped as a whole
until `uexec --help` mentions --remote.
"""
import base64
import os
import re
import resource
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "relay"))

import harness as H  # noqa: E402
import wsclient  # noqa: E402
from conftest import HOST, UEXEC_BIN, accept_forever, uexec_has_remote, wait_until  # noqa: E402
from relay_cases import (ENV_ID, SANITIZER_MARKERS, SHELL_PATH, TOKEN, Relay,  # noqa: E402
                         rpc_stream, run_echo, shim_missing)


pytestmark = pytest.mark.skipif(not uexec_has_remote(),
                                reason="uexec --help does not mention --remote (remote mode "
                                "not built yet)")


def remote_argv(*extra):
    return lambda base, env_id: [UEXEC_BIN, "--remote", base, "--environment-id", env_id] + \
        list(extra)


def check_clean(r):
    """After r.stop(): the executor did not die and no sanitizer reported."""
    err = r.stderr_text()
    bad = [m for m in SANITIZER_MARKERS if m in err]
    assert not bad, "sanitizer report in uexec's stderr: %s\n%s" % (bad, err[-6000:])


@pytest.fixture
def relays(tmp_path):
    """make(argv_fn, **Relay kwargs) -> a started Relay; all are stopped and checked."""
    HOST.require("io_uring")
    why = shim_missing()
    if why:
        pytest.skip(why)
    made = []

    def make(argv_fn=None, sub="r", **kw):
        d = tmp_path / ("%s%d" % (sub, len(made)))
        d.mkdir()
        r = Relay(argv_fn or remote_argv(), str(d), **kw)
        made.append(r)
        return r

    yield make
    for r in made:
        alive = r.exe is None or r.exe.poll() is None
        rc = r.exe.returncode if r.exe is not None else None
        r.stop()
        check_clean(r)
        assert alive, "uexec died during the test (exit %s); stderr:\n%s" % (
            rc, r.stderr_text()[-3000:])


def _run(args, env, timeout=60):
    return subprocess.run([UEXEC_BIN] + list(args), env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def _clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("CODEX_API_KEY", "CODEX_ACCESS_TOKEN",
                        "CODEX_EXEC_SERVER_REMOTE_BEARER_TOKEN", "OPENAI_API_KEY")}
    env.update(extra)
    return env


def read_until_exited(rpc, pid, timeout=wsclient.DEFAULT_TIMEOUT):
    """process/read (long-polling) until exited: (stdout+stderr bytes, exit code)."""
    out = b""
    after = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        params = {"waitMs": 1000}
        if after is not None:
            params["afterSeq"] = after
        r = rpc.read(pid, **params)
        for c in r["chunks"]:
            out += base64.b64decode(c["chunk"])
        after = r["nextSeq"] - 1
        if r["exited"]:
            return out, r["exitCode"]
    raise AssertionError("process %s did not exit within %ss (output %r)" % (pid, timeout, out))


# ---------------------------------------------------------------------------
# forward --connect (RELAY.md §8)


@pytest.fixture
def forward(relays, server_factory):
    """A plain uexec listener and `uexec --remote … forward --connect ws://…` in front of it."""
    dest = server_factory()
    r = relays(remote_argv("forward", "--connect", dest.url))
    r.dest = dest
    return r


def test_forward_process_and_fs(forward):
    s, rpc = rpc_stream(forward)
    rpc.start("p1", ["/bin/sh", "-c", "echo fwd-out; echo fwd-err >&2; exit 3"],
              cwd=forward.work, env={"PATH": SHELL_PATH})
    out, code = read_until_exited(rpc, "p1")
    assert b"fwd-out\n" in out and b"fwd-err\n" in out, out
    assert code == 3
    path = os.path.join(forward.work, "f.bin")
    with open(path, "wb") as f:
        f.write(b"forwarded \x00\xff")
    assert rpc.fs_read_file(path) == b"forwarded \x00\xff"


def test_forward_two_concurrent_streams(forward):
    h = forward.harness()
    a, ra = rpc_stream(forward, h)
    b, rb = rpc_stream(forward, h)
    for rpc, pid in ((ra, "a"), (rb, "b")):
        rpc.start(pid, ["/bin/sh", "-c", "sleep 0.3; echo out-%s" % pid], cwd=forward.work,
                  env={"PATH": SHELL_PATH})
    for rpc, pid in ((rb, "b"), (ra, "a")):
        run = rpc.collect(pid)
        assert run.stdout == ("out-%s\n" % pid).encode()


def test_forward_large_messages_both_ways(forward):
    """8 MiB each way: the harness's fs/writeFile (an ~11 MiB message, more than one 8 MiB
    continuation frame towards the destination) and the destination's fs/readFile answer."""
    s, rpc = rpc_stream(forward)
    data = os.urandom(8 << 20)
    path = os.path.join(forward.work, "big.bin")
    r = rpc.call("fs/writeFile", {"path": wsclient.file_uri(path),
                                  "dataBase64": base64.b64encode(data).decode()}, timeout=60)
    assert "result" in r, r
    with open(path, "rb") as f:
        assert f.read() == data
    r = rpc.call("fs/readFile", {"path": wsclient.file_uri(path)}, timeout=60)
    assert base64.b64decode(r["result"]["dataBase64"]) == data
    # and the stream still answers
    run_echo(forward, rpc, "after", "after-8mib")


def test_forward_destination_gone_resets_stream(forward):
    s, rpc = rpc_stream(forward)
    run_echo(forward, rpc, "p", "before")
    forward.dest.proc.kill()
    forward.dest.proc.wait()
    forward.dest.terminate()
    s.wait_reset(20)
    # the forwarder itself is fine: a new stream is refused by the destination (gone), reset
    s2 = forward.harness().open_stream()
    rpc2 = s2.rpc()
    rpc2.send_obj({"id": 1, "method": "initialize", "params": {"clientName": "x"}})
    s2.wait_reset(30)


@pytest.mark.parametrize("args,needle", [
    (["forward"], "--connect"),
    (["forward", "--connect", "http://127.0.0.1:1/"], "ws://"),
    (["forward", "--connect", "tcp://127.0.0.1:1"], "ws://"),
])
def test_forward_usage_errors(args, needle):
    env = _clean_env(CODEX_API_KEY=TOKEN)
    p = _run(["--remote", "http://127.0.0.1:9", "--environment-id", ENV_ID] + args, env)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert needle in p.stderr, p.stderr


# ---------------------------------------------------------------------------
# https:// registry, wss:// rendezvous


def _openssl():
    exe = shutil.which("openssl")
    if not exe:
        pytest.skip("needs the openssl command line tool to make a throwaway CA")
    return exe


def make_ca(d, name):
    """A CA and a server certificate for 127.0.0.1 / localhost signed by it, in d."""
    openssl = _openssl()
    d = str(d)
    run = lambda *a: subprocess.run([openssl] + list(a), check=True, capture_output=True,
                                    cwd=d, timeout=60)
    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=%s" % name,
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=localhost")
    with open(os.path.join(d, "ext.cnf"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
                "extendedKeyUsage=serverAuth\n")
    run("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "srv.pem", "-days", "2", "-extfile", "ext.cnf")
    return {k: os.path.join(d, v) for k, v in
            (("ca", "ca.pem"), ("cert", "srv.pem"), ("key", "srv.key"))}


@pytest.fixture
def tls_certs(tmp_path):
    a = tmp_path / "ca-a"
    b = tmp_path / "ca-b"
    a.mkdir()
    b.mkdir()
    return make_ca(a, "uexec-test-ca-a"), make_ca(b, "uexec-test-ca-b")


@pytest.fixture
def harness_tls():
    old = H.SSL_CONTEXT
    yield lambda ca: setattr(H, "SSL_CONTEXT", ssl.create_default_context(cafile=ca))
    H.SSL_CONTEXT = old


def test_tls_registry_and_rendezvous(relays, tls_certs, harness_tls):
    ca, _ = tls_certs
    harness_tls(ca["ca"])
    r = relays(relay_args=["--tls-cert", ca["cert"], "--tls-key", ca["key"]],
               env_extra={"SSL_CERT_FILE": ca["ca"], "SSL_CERT_DIR": "/nonexistent"})
    assert r.base.startswith("https://127.0.0.1:")
    opens = r.executor_opens()
    assert opens, "no executor rendezvous connection"
    regs = r.requests("register")
    assert len(regs) == 1 and regs[0]["status"] == 200
    s, rpc = rpc_stream(r)
    assert s.bundle["url"].startswith("wss://")
    run_echo(r, rpc, "p", "over-tls")
    assert r.requests("validate"), "validate did not go through the https registry"


def test_tls_registry_by_name(relays, tls_certs, harness_tls):
    """https://localhost: the certificate is checked by name, SNI sent."""
    ca, _ = tls_certs
    harness_tls(ca["ca"])
    r = relays(relay_args=["--tls-cert", ca["cert"], "--tls-key", ca["key"],
                           "--url-host", "localhost"],
               env_extra={"SSL_CERT_FILE": ca["ca"], "SSL_CERT_DIR": "/nonexistent"})
    assert r.base.startswith("https://localhost:")
    s, rpc = rpc_stream(r)
    run_echo(r, rpc, "p", "over-tls-by-name")


def test_tls_untrusted_registry_refused(relays, tls_certs, harness_tls):
    """SSL_CERT_FILE names another CA: registration fails before any byte of the request (no
    Authorization in clear, nothing the fake could log), exit 1 with one line."""
    ca, other = tls_certs
    harness_tls(ca["ca"])
    r = relays(relay_args=["--tls-cert", ca["cert"], "--tls-key", ca["key"]],
               start_executor=False)
    env = r.env()
    env.update({"SSL_CERT_FILE": other["ca"], "SSL_CERT_DIR": "/nonexistent"})
    p = subprocess.run([UEXEC_BIN, "--remote", r.base, "--environment-id", ENV_ID], env=env,
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 1, (p.returncode, p.stderr)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    errs = [ln for ln in lines if ln.startswith("Error:")]
    assert len(errs) == 1, p.stderr
    assert errs[0].startswith("Error: environment registry request failed"), errs
    assert re.search(r"certificate|verif", errs[0], re.I), errs
    assert TOKEN not in p.stderr
    assert not [m for m in SANITIZER_MARKERS if m in p.stderr], p.stderr
    assert not [e for e in r.log() if e.get("kind") == "http"], \
        "the fake saw an HTTP request: something was sent past a failed verification"


# ---------------------------------------------------------------------------
# credential hygiene

INHERIT_ALL = {"inherit": "all", "ignoreDefaultExcludes": True, "exclude": [], "set": {},
               "includeOnly": []}
BEARER = "bearer-SECRET456-token"


@pytest.mark.parametrize("var,value", [("CODEX_API_KEY", TOKEN),
                                       ("CODEX_EXEC_SERVER_REMOTE_BEARER_TOKEN", BEARER)],
                         ids=["api-key", "bearer"])  # not the value: PYTEST_CURRENT_TEST
def test_credential_not_inherited_nor_in_environ(relays, var, value):
    def argv(base, env_id):
        return [UEXEC_BIN, "--remote", base, "--environment-id", env_id, "--log-level", "debug"]

    r = relays(argv, start_executor=False)
    # the Relay puts CODEX_API_KEY in; for the bearer case take it out again
    extra = {var: value, "UEXEC_TEST_CANARY": "canary-visible"}
    r.env_extra = extra
    if var != "CODEX_API_KEY":
        orig_env = r.env

        def env(with_token=True):
            e = orig_env(with_token=False)
            e.update(extra)
            return e
        r.env = env
    r.start()
    s, rpc = rpc_stream(r)
    rpc.start("env", ["/usr/bin/env"], cwd=r.work, env={}, envPolicy=INHERIT_ALL)
    run = rpc.collect("env")
    out = run.stdout
    assert b"UEXEC_TEST_CANARY=canary-visible" in out, "envPolicy inherit=all did not inherit"
    for name in (b"CODEX_API_KEY", b"CODEX_EXEC_SERVER_REMOTE_BEARER_TOKEN"):
        assert name + b"=" not in out, out
    assert value.encode() not in out
    with open("/proc/%d/environ" % r.exe.pid, "rb") as f:
        environ = f.read()
    assert value.encode() not in environ, "the credential is still in /proc/PID/environ"
    assert b"UEXEC_TEST_CANARY=canary-visible" in environ
    # the registry got it, the log did not (debug level), nor the harness authorization
    assert r.requests("register")[0]["headers"]["authorization"] == "Bearer " + value
    err = r.stderr_text()
    assert value not in err
    assert value.split("-")[1] not in err  # no fragment ("SECRET123"/"SECRET456") either
    for a in r.state()["authorizations"]:
        assert a["authorization"] not in err


def test_agent_identity_credential(relays):
    """--use-agent-identity-auth: CODEX_ACCESS_TOKEN is the bearer and leaves the environment."""
    r = relays(remote_argv("--use-agent-identity-auth"), start_executor=False,
               env_extra={"CODEX_ACCESS_TOKEN": "access-SECRET789"})
    r.start()
    assert r.requests("register")[0]["headers"]["authorization"] == "Bearer access-SECRET789"
    s, rpc = rpc_stream(r)
    rpc.start("env", ["/usr/bin/env"], cwd=r.work, env={}, envPolicy=INHERIT_ALL)
    out = rpc.collect("env").stdout
    assert b"SECRET789" not in out
    with open("/proc/%d/environ" % r.exe.pid, "rb") as f:
        assert b"SECRET789" not in f.read()


# ---------------------------------------------------------------------------
# registry and rendezvous behaviours (RELAY.md §7)


def test_registration_conflicts_spacing(relays):
    """§7.1: two 503 registration_conflict, then success on the third try, at least 500 ms
    apart (jittered; no upper bound asserted)."""
    r = relays(start_executor=False)
    r.control(register_conflicts=2)
    r.start()
    regs = r.requests("register")
    assert [e["status"] for e in regs] == [503, 503, 200], regs
    gaps = [b["t"] - a["t"] for a, b in zip(regs, regs[1:])]
    assert all(g >= 0.5 for g in gaps), gaps
    s, rpc = rpc_stream(r)
    run_echo(r, rpc, "p", "after-conflicts")


def test_register_401_exit_1_one_line(relays):
    r = relays(start_executor=False)
    r.control(register_fail={"status": 401, "count": -1})
    p = subprocess.run(remote_argv()(r.base, ENV_ID), env=r.env(), capture_output=True,
                       text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 1, (p.returncode, p.stderr)
    errs = [ln for ln in p.stderr.splitlines() if ln.startswith("Error:")]
    assert len(errs) == 1, p.stderr
    assert errs[0].startswith("Error: environment registry request failed"), errs
    assert TOKEN not in p.stderr
    assert len(r.requests("register")) == 1
    assert not [m for m in SANITIZER_MARKERS if m in p.stderr], p.stderr


def test_first_upgrade_refused_registers_again(relays):
    """§7.5 step 5: the rendezvous answers the very first upgrade with 403: uexec registers
    again, with the same executor public key, and then serves."""
    r = relays(start_executor=False)
    r.control(refuse_upgrades=1)
    r.start()
    regs = r.requests("register")
    assert len(regs) == 2, [e["status"] for e in regs]
    assert regs[0]["body"]["executor_public_key"] == regs[1]["body"]["executor_public_key"]
    refused = [e for e in r.log() if e.get("upgrade") and e.get("status") == 403]
    assert len(refused) == 1
    s, rpc = rpc_stream(r)
    run_echo(r, rpc, "p", "after-403")


@pytest.mark.parametrize("how", ["close", "abort"])
def test_link_dropped_reconnects_without_registering(relays, how):
    r = relays()
    s, rpc = rpc_stream(r)
    run_echo(r, rpc, "p", "before-drop")
    r.control(drop_executor=how)
    r.wait_connected(n=2)
    assert len(r.requests("register")) == 1
    s2, rpc2 = rpc_stream(r)
    run_echo(r, rpc2, "q", "after-drop-%s" % how)


def test_session_survives_physical_reconnect(relays):
    """A stream's session detaches when the physical link drops; a stream on the new link
    resumes it (initialize {resumeSessionId}) and reads the process's later output and exit."""
    r = relays()
    h = r.harness()
    a = h.open_stream()
    ra = a.rpc()
    res = ra.initialize()
    sid = res["sessionId"]
    ra.start("long", ["/bin/sh", "-c", "echo early; sleep 2; echo late-marker; exit 7"],
             cwd=r.work, env={"PATH": SHELL_PATH})
    ra.collect_until_output("long", "early")
    r.control(drop_executor="abort")
    r.wait_connected(n=2)
    b = h.open_stream()
    rb = b.rpc()
    res2 = rb.initialize(resume=sid)
    assert res2["sessionId"] == sid
    out, code = read_until_exited(rb, "long")
    assert b"late-marker\n" in out, out
    assert code == 7


# ---------------------------------------------------------------------------
# command line


def test_remote_with_listen_exit_2():
    p = _run(["--remote", "http://127.0.0.1:9", "--environment-id", ENV_ID, "--listen",
              "ws://127.0.0.1:0"], _clean_env(CODEX_API_KEY=TOKEN))
    assert p.returncode == 2, (p.returncode, p.stderr)


@pytest.mark.parametrize("args", [["--environment-id", ENV_ID], ["--name", "n"],
                                  ["--use-agent-identity-auth"],
                                  ["forward", "--connect", "ws://127.0.0.1:1"]])
def test_remote_only_flags_without_remote_exit_2(args):
    p = _run(args, _clean_env(CODEX_API_KEY=TOKEN))
    assert p.returncode == 2, (p.returncode, p.stderr)


def test_agent_identity_without_access_token_exit_1():
    p = _run(["--remote", "http://127.0.0.1:9", "--environment-id", ENV_ID,
              "--use-agent-identity-auth"], _clean_env(CODEX_API_KEY=TOKEN))
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert p.stderr.strip() == ("Error: CODEX_ACCESS_TOKEN is required when "
                                "--use-agent-identity-auth is set"), p.stderr


@pytest.mark.parametrize("url", ["https://registry.example.net", "http://registry.example.net",
                                 "http://openai.com", "https://openai.com.evil.example",
                                 "http://10.1.2.3:8080"])
def test_api_key_to_foreign_host_exit_1(url):
    """RELAY.md §7.6: an API key goes only to https:// openai.com / openai.org or loopback;
    refused before any connection (nothing listens on these)."""
    p = _run(["--remote", url, "--environment-id", ENV_ID], _clean_env(CODEX_API_KEY=TOKEN))
    assert p.returncode == 1, (p.returncode, p.stderr)
    errs = [ln for ln in p.stderr.splitlines() if ln.startswith("Error:")]
    assert len(errs) == 1 and "API-key" in errs[0], p.stderr
    assert TOKEN not in p.stderr


# ---------------------------------------------------------------------------
# review findings of src/remote (each was a crash or a hang before its fix)


def test_connection_ended_from_below_resets_stream(relays):
    """A carried connection that ends on its own (here: a message length of 0, which conn.c
    answers by closing it) must reset the stream, not crash: conn.c's carrier_ended() cleared
    c->carrier_owner before calling the owner's ended(), which then dereferenced NULL
    (src/remote/link/stream.c carrier_ended). The same path ends every forwarded stream whose
    destination goes away."""
    r = relays()
    s, rpc = rpc_stream(r)
    s.send_data(s.send_seq, s.encrypt(b"\0\0\0\0"))
    s.send_seq += 1
    s.wait_reset()
    assert r.exe.poll() is None, "uexec died: %s" % r.stderr_text()[-2000:]
    # (and it serves on: a crash after the reset would fail the next stream)
    s2, rpc2 = rpc_stream(r)
    run_echo(r, rpc2, "p", "after-bad-length")


def test_requests_resumed_by_output_drain(relays):
    """A stream whose output passed --max-queued-bytes holds its requests back; when the
    relay drains it (stream.c stream_send_one -> conn_out_advance) the held requests run at
    once and their answers call carrier_flush(), which puts the stream back on the link's
    ready list while remote_stream_pump() is about to add it again: a node added twice
    corrupts the list (the pump then spins on a stream it cannot unlink, or meets a freed
    one). Many cheap requests while a 16 MiB file drains make that happen."""
    r = relays(remote_argv("--max-queued-bytes", "65536"))
    s, rpc = rpc_stream(r)
    path = os.path.join(r.work, "big16.bin")
    with open(path, "wb") as f:
        f.write(os.urandom(16 << 20))
    rpc.send_obj({"id": 1000, "method": "fs/readFile",
                  "params": {"path": wsclient.file_uri(path)}})
    n = 0
    t_end = time.monotonic() + 3
    while time.monotonic() < t_end:
        rpc.send_obj({"id": 2000 + n, "method": "no/such-method", "params": {}})
        n += 1
        time.sleep(0.01)
    r_big = rpc.wait_reply(1000, timeout=60)
    assert len(base64.b64decode(r_big["result"]["dataBase64"])) == 16 << 20
    for i in range(n):
        assert "error" in rpc.wait_reply(2000 + i)
    # uexec still serves (the pump is not spinning), on this stream and on a new one
    run_echo(r, rpc, "p", "still-serving")
    s2, rpc2 = rpc_stream(r)
    run_echo(r, rpc2, "q", "new-stream")


class StuckDestination:
    """A WebSocket 'exec-server' that completes the upgrade, then never reads again."""

    def __init__(self):
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(8)
        self.url = "ws://127.0.0.1:%d" % self.lsock.getsockname()[1]
        self.conns = []
        self.got_head = False   # an upgrade was answered
        accept_forever(self.lsock, self._serve)

    def _serve(self, c):
        self.conns.append(c)
        head = b""
        while b"\r\n\r\n" not in head:
            d = c.recv(1)  # byte by byte: nothing past the head is taken from the kernel
            if not d:
                break
            head += d
        key = [ln.split(b":", 1)[1].strip() for ln in head.split(b"\r\n")
               if ln.lower().startswith(b"sec-websocket-key:")][0].decode()
        c.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                   "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n"
                   % wsclient.accept_key(key)).encode())
        self.got_head = True

    def close(self):
        self.lsock.close()
        for c in self.conns:
            c.close()


def _sanitized(pid):
    """ASan (tests/sanitize.sh) keeps freed memory in quarantine: RSS says nothing there."""
    with open("/proc/%d/maps" % pid) as f:
        return "libasan" in f.read()


def _rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for ln in f:
            if ln.startswith("VmRSS:"):
                return int(ln.split()[1])
    return 0


def test_forward_slow_destination_bounds_memory(relays):
    """A harness that keeps sending to a destination that does not read must not grow
    uexec's memory without bound: 96 MiB sent, at most 48 MiB more resident. With
    --max-message-bytes 8 MiB the bound is the destination's queue (--max-queued-bytes,
    8 MiB, then the stream pauses) + the stream's waiting input (--max-message-bytes + 4 +
    8 MiB, then it is reset) + one message in flight; without backpressure it grew by 104 MiB."""
    dest = StuckDestination()
    try:
        r = relays(lambda base, env_id: [UEXEC_BIN, "--max-message-bytes", str(8 << 20),
                                         "--remote", base, "--environment-id", env_id,
                                         "forward", "--connect", dest.url])
        s = r.harness().open_stream()
        s.send_message(b'{"id":1,"method":"initialize","params":{"clientName":"x"}}')
        # the baseline once uexec connected to the destination and forwarded initialize
        wait_until(lambda: dest.got_head, what="uexec to reach the destination")
        before = _rss_kib(r.exe.pid)
        blob = b'{"id":2,"method":"x","params":"' + b"a" * (4 << 20) + b'"}'
        peak = before
        for _ in range(24):
            try:
                s.send_message(blob)
            except (wsclient.ConnectionClosed, OSError):
                break
            peak = max(peak, _rss_kib(r.exe.pid))
        # uexec has taken what it will of the input once it resets the stream (its waiting
        # input over the bound), or the connection ended
        try:
            s.wait_reset()
        except (wsclient.ConnectionClosed, OSError):
            pass
        peak = max(peak, _rss_kib(r.exe.pid))
        if _sanitized(r.exe.pid):
            # The sends above still ran through ASan; only the RSS bound means nothing there.
            pytest.skip("ASan keeps freed memory in quarantine: RSS says nothing under it")
        assert peak - before < 48 * 1024, "uexec grew by %d MiB" % ((peak - before) // 1024)
    finally:
        dest.close()


def test_harness_gone_mid_output_process_ends_with_its_session(relays):
    """The other half of relay_cases.test_harness_disconnect_mid_output: a harness that
    vanishes while its process floods leaves the process's session detached; with a short
    resume window (500 ms) the process is killed when it ends, not left for ever, and the
    executor goes on serving."""
    from conftest import pid_alive
    r = relays(remote_argv("--resume-window-ms", "500"))
    s, rpc = rpc_stream(r)
    rpc.start("flood", ["/bin/sh", "-c", "echo $$; while :; do echo flood-flood-flood-flood; done"],
              cwd=r.work, env={"PATH": SHELL_PATH})
    run = rpc.collect_until_output("flood", "flood-flood")
    pid = int(run.stdout.split(b"\n", 1)[0])
    s.phys.abort()
    wait_until(lambda: not pid_alive(pid), what="the flooding process to end with its session")
    s2, rpc2 = rpc_stream(r)
    run_echo(r, rpc2, "p", "healthy")
