# SPDX-License-Identifier: MIT
"""Live upgrade of managed-network processes (issue 26, docs/UPGRADE.md "Managed-network
processes"): a process whose command reaches the network only through its proxy keeps
running across SIGUSR2, and its proxy with it: the listening sockets are handed over and
the proxy is made again from the networkProxy value it was started with, so that allowed
requests made after the upgrade are forwarded and denied ones are refused with the same
answer and the same network/policyDecision as before. A connection idle between requests
(keep-alive) is closed by the hand-over, as a server may close one; a CONNECT tunnel open
is waited for, and keeps the dry run with the exact reason when it does not end in time.
Credential masking keeps the dry run (its CA and credentials do not travel)."""

import json
import re
import socket
import time

import pytest

from conftest import children_of, settled_fd_count, wait_until
from test_netproxy import launch, origin  # noqa: F401  (origin: a fixture)
from test_sandbox import ENV, ws_policy
from test_upgrade import Launch, check_numbered, zombies

pytestmark = [pytest.mark.needs("x86_64"), pytest.mark.needs("sandbox"),
              pytest.mark.needs("network-sandbox"),
              pytest.mark.needs_programs("/bin/bash", "/usr/bin/python3", "/usr/bin/curl")]

# Runs in the process (its managed network: the proxy at 127.0.0.1:3128 of its namespace).
CLIENT = r'''
import os, socket, sys, time
port, go = int(sys.argv[1]), sys.argv[2]

def response(s):
    data = b""
    while b"\r\n\r\n" not in data:
        d = s.recv(65536)
        if not d:
            return None, b""
        data += d
    head, body = data.split(b"\r\n\r\n", 1)
    n = [int(l.split(b":")[1]) for l in head.split(b"\r\n")
         if l.lower().startswith(b"content-length:")]
    while n and len(body) < n[0]:
        body += s.recv(65536)
    return int(head.split(b" ")[1]), body

def get(url, s=None):
    s = s or socket.create_connection(("127.0.0.1", 3128), timeout=60)
    s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % url.encode())
    return s, response(s)

def requests(when):
    s, (code, body) = get("http://127.0.0.1:%d/%s" % (port, when))
    s.close()
    print("allowed", code, json.loads(body)["path"], flush=True)
    s, (code, body) = get("http://denied.invalid/%s" % when)
    s.close()
    print("denied", code, body.decode().strip()[:60], flush=True)

import json
requests("before")
# A keep-alive connection that has served a request, idle across the upgrade.
keep, (code, _) = get("http://127.0.0.1:%d/keep" % port)
print("keep", code, flush=True)
i = 0
while not os.path.exists(go):
    print(i, flush=True)
    i += 1
    time.sleep(0.01)
keep.settimeout(30)
try:
    print("keep-alive", "closed" if keep.recv(1) == b"" else "data", flush=True)
except OSError as e:
    print("keep-alive", "closed" if not isinstance(e, socket.timeout) else "open", flush=True)
requests("after")
print("end", flush=True)
sys.exit(7)
'''

TUNNEL = r'''
import os, socket, sys, time
port, go = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", 3128), timeout=60)
s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (port, port))
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(1)
print(head.split(b"\r\n")[0].decode(), flush=True)
while not os.path.exists(go):
    time.sleep(0.01)
s.sendall(b"GET /through HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
data = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    data += d
print(data.split(b"\r\n\r\n", 1)[1].decode(), flush=True)
# A new connection after the dry run: the proxy accepts again.
s = socket.create_connection(("127.0.0.1", 3128), timeout=60)
s.sendall(b"GET http://127.0.0.1:%d/again HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
          % port)
data = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    data += d
print(data.split(b"\r\n\r\n", 1)[1].decode(), flush=True)
sys.exit(3)
'''


@pytest.fixture
def ws(tmp_path):
    d = tmp_path / "ws"
    d.mkdir()
    return d


def start(c, pid, ws, script, *args, **np):
    c.start(pid, ["/usr/bin/python3", "-c", script] + [str(a) for a in args], cwd=str(ws),
            env=ENV, sandbox=ws_policy(str(ws), network="enabled"), enforceManagedNetwork=True,
            networkProxy=launch(**np))


def decisions(c, pid, n):
    got = [c.next_notification("network/policyDecision", 60,
                               pred=lambda p: p.get("processId") == pid)["params"]
           for _ in range(n)]
    return [(d["scope"], d["decision"], d["source"], d["reason"], d["protocol"], d["host"],
             d["method"]) for d in got]


def test_managed_network_process_is_handed_over(server_factory, tmp_path, ws, origin):
    """A managed-network process across a real upgrade: adopted with its proxy (its
    listening sockets handed over, the proxy made again from its networkProxy value), its
    requests after the upgrade allowed and denied exactly as before (the same answers,
    the same network/policyDecision notifications), its keep-alive connection idle across
    the upgrade closed (it had answered a request, nothing was buffered), its output whole,
    once and in order, its real exit code; then no fd, child or zombie left."""
    go = tmp_path / "go"
    lu = Launch(server_factory, tmp_path, handover=True)
    pid = lu.srv.pid
    c = lu.srv.connect()
    fds = settled_fd_count(pid)
    start(c, "a", ws, CLIENT, origin, go, domains={"127.0.0.1": "allow"})
    run = c.collect_until_output("a", b"\n3\n")
    before = decisions(c, "a", 3)
    lu.usr2()
    lu.wait_log("Upgrade: took over from uexec ")
    err = lu.srv.stderr()
    assert b"Upgrade: no hand-over (" not in err, lu.srv.stderr_tail()
    assert re.search(rb"\(1 sessions, 1 processes, 1 connections\)", err), lu.srv.stderr_tail()
    assert lu.srv.pid == pid
    run = c.collect_until_output("a", b"\n%d\n" % (int(run.stdout.split()[-1]) + 10), run=run)
    go.touch()
    run = c.collect("a", run=run)
    after = decisions(c, "a", 2)
    lines = run.stdout.decode().split("\n")
    assert lines[:3] == ["allowed 200 /before", lines[1], "keep 200"], lines[:3]
    assert lines[1].startswith("denied 403 "), lines[1]
    n = [i for i, line in enumerate(lines) if line.startswith("keep-alive")]
    assert len(n) == 1 and lines[n[0]] == "keep-alive closed", lines[-6:]
    # the counter: whole, once and in order across the upgrade
    assert lines[3:n[0]] == [str(i) for i in range(n[0] - 3)], "output lost or out of order"
    assert lines[n[0] + 1:] == ["allowed 200 /after", lines[1].replace("before", "after"),
                                "end", ""], lines[n[0]:]
    assert run.exit_code == 7, run.stderr
    run.check_sequencing()
    allow = ("domain", "allow", "baseline_policy", "allow", "http", "127.0.0.1", "GET")
    deny = ("domain", "deny", "baseline_policy", "not_allowed", "http", "denied.invalid", "GET")
    assert before == [allow, deny, allow] and after == [allow, deny], (before, after)
    wait_until(lambda: settled_fd_count(pid) == fds, what="the fds of before")
    assert zombies(pid) == [] and children_of(pid) == {}


def test_open_tunnel_keeps_the_dry_run(server_factory, tmp_path, ws, origin):
    """A CONNECT tunnel cannot move: QUIESCE waits for it up to its deadline, then the
    upgrade keeps the dry run with the exact reason and the tunnel goes on untouched
    (nothing the client sent is lost); once it has ended, the next SIGUSR2 hands over."""
    go = tmp_path / "go"
    lu = Launch(server_factory, tmp_path, handover=True)
    pid = lu.srv.pid
    c = lu.srv.connect()
    fds = settled_fd_count(pid)
    start(c, "t", ws, TUNNEL, origin, go, domains={"127.0.0.1": "allow"})
    run = c.collect_until_output("t", b"HTTP/1.1 200 OK\n")
    lu.usr2()
    lu.wait_log("Upgrade: no hand-over (")
    assert b"Upgrade: no hand-over (a managed network's CONNECT tunnel is open)" in \
        lu.srv.stderr(), lu.srv.stderr_tail()
    go.touch()
    run = c.collect("t", run=run)
    out = run.stdout.decode().split("\n")
    assert out[0] == "HTTP/1.1 200 OK", out
    assert json.loads(out[1])["path"] == "/through", out
    assert json.loads(out[2])["path"] == "/again" and out[3:] == [""], out
    assert run.exit_code == 3
    run.check_sequencing()
    # Closed: nothing of it is left; the next upgrade goes through.
    lu.usr2()
    lu.wait_log("Upgrade: took over from uexec ")
    assert lu.srv.pid == pid
    wait_until(lambda: settled_fd_count(pid) == fds, what="the fds of before")
    assert zombies(pid) == [] and children_of(pid) == {}


def test_credential_masking_process_is_not_handed_over(server_factory, tmp_path, ws):
    """A managed network that masks credentials trusts the server's interception CA and
    holds the broker's real credentials: neither travels (the key is never written
    anywhere), so such a process keeps the dry run at once with its own reason, and goes
    on untouched."""
    go = tmp_path / "go"
    lu = Launch(server_factory, tmp_path, handover=True)
    c = lu.srv.connect()
    np = launch(domains={"127.0.0.1": "allow"})
    np["proxy"]["credentialMasking"] = True
    c.start("m", ["/bin/bash", "-c", "i=0; while [ ! -e %s ]; do echo $i; i=$((i+1)); "
                  "sleep 0.01; done; echo end; exit 7" % go], cwd=str(ws), env=ENV,
            sandbox=ws_policy(str(ws), network="enabled"), networkProxy=np,
            enforceManagedNetwork=True)
    run = c.collect_until_output("m", b"\n3\n")
    lu.usr2()
    lu.wait_log("Upgrade: no hand-over (")
    assert (b"Upgrade: no hand-over (a process whose managed network masks credentials (its "
            b"interception CA and credentials are not handed over))" in lu.srv.stderr()), \
        lu.srv.stderr_tail()
    run = c.collect_until_output("m", b"\n%d\n" % (int(run.stdout.split()[-1]) + 10), run=run)
    go.touch()
    run = c.collect("m", run=run)
    check_numbered(run.stdout)
    assert run.exit_code == 7
    run.check_sequencing()


def test_unenforced_proxy_on_host_ports_is_handed_over(server_factory, tmp_path, ws, origin):
    """Without enforcement the proxy listens on host loopback ports of its own, named in
    the command's environment: the same ports serve after the upgrade, HTTP and SOCKS5
    (its listener handed over too), with the policy of the start; closed with the process,
    nothing listens there any more."""
    go = tmp_path / "go"
    lu = Launch(server_factory, tmp_path, handover=True)
    pid = lu.srv.pid
    c = lu.srv.connect()
    fds = settled_fd_count(pid)
    req = ("curl -sS http://127.0.0.1:{o}/{w}-http; echo; curl -sS -x \"$ALL_PROXY\" "
           "http://127.0.0.1:{o}/{w}-socks; echo; curl -sS http://denied.invalid/{w}; echo; ")
    c.start("u", ["/bin/bash", "-c", "echo $http_proxy $ALL_PROXY; " +
                  req.format(o=origin, w="before") +
                  "while [ ! -e %s ]; do sleep 0.01; done; " % go +
                  req.format(o=origin, w="after") + "exit 5"],
            cwd=str(ws), env=ENV, networkProxy=launch(domains={"127.0.0.1": "allow"}))
    run = c.collect_until_output("u", b"not_allowed")
    lu.usr2()
    lu.wait_log("Upgrade: took over from uexec ")
    assert b"Upgrade: no hand-over (" not in lu.srv.stderr(), lu.srv.stderr_tail()
    go.touch()
    run = c.collect("u", run=run)
    out = run.stdout.decode().split("\n")
    http_url, socks_url = out[0].split()
    assert socks_url.startswith("socks5h://127.0.0.1:"), out[0]
    for i, when in ((1, "before"), (4, "after")):
        assert json.loads(out[i])["path"] == "/%s-http" % when, out
        assert json.loads(out[i + 1])["path"] == "/%s-socks" % when, out
        assert json.loads(out[i + 2])["reason"] == "not_allowed", out
    assert run.exit_code == 5, run.stderr
    for url in (http_url, socks_url):
        s = socket.socket()
        assert s.connect_ex(("127.0.0.1", int(url.rsplit(":", 1)[1]))) != 0, url
        s.close()
    wait_until(lambda: settled_fd_count(pid) == fds, what="the fds of before")
    assert zombies(pid) == [] and children_of(pid) == {}


SLOW = r'''
import socket, sys
port = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", 3128), timeout=60)
s.sendall(b"GET http://127.0.0.1:%d/slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % port)
data = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    data += d
print(data.split(b"\r\n")[0].decode(), len(data.split(b"\r\n\r\n", 1)[1]), flush=True)
'''


@pytest.fixture
def slow_origin():
    """An origin that answers /slow (200 KiB) only once the test says so."""
    import http.server
    import threading
    got, release = threading.Event(), threading.Event()

    class Slow(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            got.set()
            release.wait(60)
            body = b"x" * (200 * 1024)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_address[1], got, release
    release.set()
    srv.shutdown()
    srv.server_close()


def test_request_in_flight_is_waited_for(server_factory, tmp_path, ws, slow_origin):
    """A request being forwarded when SIGUSR2 comes is a transient wait: QUIESCE lets the
    proxy finish it (the origin answers only once QUIESCE has begun), then the hand-over
    goes on; the client gets the whole answer, and its exit is reported after."""
    port, got, release = slow_origin
    lu = Launch(server_factory, tmp_path, handover=True)
    c = lu.srv.connect()
    start(c, "s", ws, SLOW, port, domains={"127.0.0.1": "allow"})
    assert got.wait(30), "the request did not reach the origin"
    lu.usr2()
    lu.wait_log("can take over (")
    # The origin holds its answer a while into QUIESCE (not a wait for an event: the
    # request is kept in flight on purpose), so QUIESCE has to wait for it.
    time.sleep(0.3)
    release.set()
    lu.wait_log("Upgrade: took over from uexec ")
    err = lu.srv.stderr()
    assert b"Upgrade: no hand-over (" not in err, lu.srv.stderr_tail()
    us = [int(u) for u in re.findall(rb"Upgrade: quiesced in (\d+) us", err)]
    # (A QUIESCE with nothing to wait for takes a few ms; the log line is seen a little
    # before QUIESCE's clock starts, hence half the hold.)
    assert len(us) == 1 and us[0] >= 150000, (us, lu.srv.stderr_tail())
    run = c.collect("s")
    assert run.stdout == b"HTTP/1.1 200 OK %d\n" % (200 * 1024), run.stdout[:200]
    assert run.exit_code == 0, run.stderr
    run.check_sequencing()


SOCKS = r'''
import os, socket, struct, sys, time
port, go, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.create_connection(("127.0.0.1", 1080), timeout=60)
s.sendall(b"\x05\x01\x00")
assert s.recv(2) == b"\x05\x00"
if mode == "stream":
    s.sendall(b"\x05\x01\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack(">H", port))
else:  # UDP ASSOCIATE: the association lives as long as this control connection
    s.sendall(b"\x05\x03\x00\x01" + b"\x00" * 6)
reply = b""
while len(reply) < 10:
    reply += s.recv(10 - len(reply))
print("socks", mode, reply[1], flush=True)
while not os.path.exists(go):
    time.sleep(0.01)
if mode == "stream":
    s.sendall(b"GET /through HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
    print(data.split(b"\r\n\r\n", 1)[1].decode(), flush=True)
else:
    s.close()
    print("closed", flush=True)
'''


@pytest.mark.parametrize("mode,reason", [
    ("stream", "a managed network's SOCKS5 stream is open"),
    ("udp", "a managed network's SOCKS5 UDP association is open")])
def test_socks5_stream_or_association_keeps_the_dry_run(server_factory, tmp_path, ws, origin,
                                                       mode, reason):
    """A SOCKS5 stream, or a UDP association (its control connection), open across
    SIGUSR2 is waited for, then keeps the dry run with its exact reason; it goes on
    untouched after."""
    go = tmp_path / "go"
    lu = Launch(server_factory, tmp_path, handover=True)
    c = lu.srv.connect()
    start(c, "x", ws, SOCKS, origin, go, mode, domains={"127.0.0.1": "allow"})
    run = c.collect_until_output("x", b"socks %s 0\n" % mode.encode())
    lu.usr2()
    lu.wait_log("Upgrade: no hand-over (")
    assert b"Upgrade: no hand-over (%s)" % reason.encode() in lu.srv.stderr(), \
        lu.srv.stderr_tail()
    go.touch()
    run = c.collect("x", run=run)
    out = run.stdout.decode().split("\n")
    if mode == "stream":
        assert json.loads(out[1])["path"] == "/through", out
    else:
        assert out[1] == "closed", out
    assert run.exit_code == 0, run.stderr
    run.check_sequencing()
