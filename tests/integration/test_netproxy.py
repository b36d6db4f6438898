# SPDX-License-Identifier: MIT
"""The managed network (issue 22, work in progress): process/start.networkProxy with
enforceManagedNetwork and a sandbox. The command runs in a network namespace of its own
whose only endpoints are the proxy's listeners (served by uexec's loop); the proxy
answers as the reference's does (docs/netproxy-wire-notes.md §6). Origins are HTTP
servers of this test on the host's loopback, reached by the proxy from the host."""
import http.server
import json
import os
import socket
import threading

import pytest

from test_sandbox import area, sh, text, ws_policy  # noqa: F401

pytestmark = [pytest.mark.needs("x86_64", "seccomp", "sandbox"),
              pytest.mark.needs_programs("/bin/bash", "/usr/bin/curl")]


def launch(domains=None, mode="full", local=False, socks=True):
    return {"proxy": {"enabled": True, "enableSocks5": socks, "enableSocks5Udp": True,
                      "allowUpstreamProxy": False, "dangerouslyAllowAllUnixSockets": False,
                      "mode": mode, "domains": domains, "unixSockets": None,
                      "allowLocalBinding": local},
            "environmentId": "remote", "executionId": "e1"}


class Origin(http.server.BaseHTTPRequestHandler):
    def answer(self):
        if (self.headers.get("Transfer-Encoding") or "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                body += self.rfile.read(size)
                self.rfile.readline()
        else:
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else b""
        seen = {"method": self.command, "path": self.path, "body": body.decode(),
                "proxy_auth": self.headers.get("Proxy-Authorization"),
                "connection": self.headers.get("Connection")}
        out = json.dumps(seen).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = do_HEAD = answer
    protocol_version = "HTTP/1.1"  # framed answers on a kept connection

    def log_message(self, *a):
        pass


@pytest.fixture
def origin():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Origin)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def run(sclient, uniq, area, script, **np):
    sb = ws_policy(area.ws, network="enabled")
    r = sh(sclient, uniq, script, area.ws, sb, networkProxy=launch(**np),
           enforceManagedNetwork=True)
    assert r.start_result["sandboxType"] == "linuxSeccomp"
    return r


def body_after_head(out):
    return out.split("\r\n\r\n", 1)[1] if "\r\n\r\n" in out else out


def test_env_names_the_proxies(sclient, uniq, area):
    r = run(sclient, uniq, area, "env | grep -ci proxy; echo $http_proxy $ALL_PROXY \"[$NO_PROXY]\"")
    lines = r.stdout.decode().split("\n")
    assert lines[0] == "33"   # 34 variables, CODEX_NETWORK_ALLOW_LOCAL_BINDING has no "proxy"
    assert lines[1] == "http://127.0.0.1:3128 socks5h://127.0.0.1:1080 []"


def test_allowed_request_is_forwarded(sclient, uniq, area, origin):
    r = run(sclient, uniq, area,
            "curl -sS -H 'Proxy-Authorization: Basic eDp5' -d hi http://127.0.0.1:%d/p?q=1" % origin,
            domains={"127.0.0.1": "allow"})
    seen = json.loads(r.stdout)
    assert seen == {"method": "POST", "path": "/p?q=1", "body": "hi", "proxy_auth": None,
                    "connection": "close"}, text(r)


def test_refusals_are_the_references(sclient, uniq, area, origin):
    r = run(sclient, uniq, area,
            "curl -sS -i http://denied.invalid/; echo '<>'; curl -sS -i http://127.0.0.1:%d/; "
            "echo '<>'; curl -sS -i http://blocked.test/" % origin,
            domains={"*.test": "allow", "blocked.test": "deny"})
    parts = r.stdout.decode().split("<>\n")
    assert parts[0].startswith("HTTP/1.1 403 Forbidden\r\ncontent-type: application/json\r\n"
                               "x-proxy-error: blocked-by-allowlist\r\ncontent-length: 177\r\n")
    assert body_after_head(parts[0]) == (
        '{"status":"blocked","host":"denied.invalid","reason":"not_allowed","decision":"deny",'
        '"source":"baseline_policy","protocol":"http","port":80,"message":"Domain not in allowlist."}')
    assert body_after_head(parts[1]) == (
        '{"status":"blocked","host":"127.0.0.1","reason":"not_allowed_local","decision":"deny",'
        '"source":"baseline_policy","protocol":"http","port":%d,"message":"Sandbox policy blocks '
        'local/private network addresses."}' % origin)
    assert "x-proxy-error: blocked-by-denylist" in parts[2]
    assert body_after_head(parts[2]).endswith('"reason":"denied","decision":"deny","source":'
                                              '"baseline_policy","protocol":"http","port":80,'
                                              '"message":"Domain denied by the sandbox policy."}')


# status line, content-type, x-proxy-error, content-length, date (fixed width), blank, body
REFUSED_CONNECT_LEN = 24 + 26 + 37 + 20 + 37 + 2 + 24


def test_connect_tunnel_and_its_refusal(sclient, uniq, area, origin):
    script = ("exec 3<>/dev/tcp/127.0.0.1/3128; printf 'CONNECT 127.0.0.1:%d HTTP/1.1\\r\\n\\r\\n"
              "GET /t HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n' >&3; cat <&3; "
              "echo '<>'; exec 4<>/dev/tcp/127.0.0.1/3128; printf 'CONNECT denied.invalid:443 "
              "HTTP/1.1\\r\\n\\r\\n' >&4; head -c %d <&4") % (origin, REFUSED_CONNECT_LEN)
    r = run(sclient, uniq, area, script, domains={"127.0.0.1": "allow"})
    ok, refused = r.stdout.decode().split("<>\n")
    assert ok.startswith("HTTP/1.1 200 OK\r\ndate: ")
    assert '"path": "/t"' in ok
    assert refused.startswith("HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\n"
                              "x-proxy-error: blocked-by-allowlist\r\ncontent-length: 24\r\n")
    assert refused.endswith("\r\n\r\nDomain not in allowlist.")


def test_limited_mode(sclient, uniq, area, origin):
    r = run(sclient, uniq, area,
            "curl -sS http://127.0.0.1:%d/g; echo '<>'; curl -sS -d x http://127.0.0.1:%d/; "
            "echo '<>'; curl -sS -i -p http://127.0.0.1:%d/ 2>&1" % (origin, origin, origin),
            domains={"127.0.0.1": "allow"}, mode="limited")
    get, post, connect = r.stdout.decode().split("<>\n")
    assert json.loads(get)["method"] == "GET"
    assert post == ('{"status":"blocked","host":"127.0.0.1","reason":"method_not_allowed",'
                    '"decision":"deny","source":"mode_guard","protocol":"http","port":%d,'
                    '"message":"Method not allowed in limited mode."}' % origin)
    assert "x-proxy-error: blocked-by-mitm-required" in connect


def test_only_the_proxy_is_reachable(sclient, uniq, area, origin):
    """A direct connection bypassing the proxy: loopback has nothing but the proxy's
    listeners, every other address is unreachable; the host's origin is never reached."""
    r = run(sclient, uniq, area,
            "curl -sS --noproxy '*' http://127.0.0.1:%d/ 2>&1; echo rc=$?; "
            "python3 -c \"import socket; s=socket.socket(); print(s.connect_ex(('192.0.2.1', 80)))\"; "
            "ls /sys/class/net 2>/dev/null | wc -l" % origin,
            domains={"127.0.0.1": "allow"})
    out = r.stdout.decode()
    assert "Couldn't connect to server" in out and "rc=7" in out
    import errno
    assert "\n%d\n" % errno.ENETUNREACH in out


def test_allowlisted_name_resolving_to_a_private_address_is_refused(sclient, uniq, area, origin):
    """DNS rebinding: a name the policy allows only if public, resolved by the server, is
    refused when an answer is local (here a hosts-file name of the loopback)."""
    name = local_name()
    if not name:
        pytest.skip("no host name resolving to a local address here (the host's own name, "
                    "ip6-localhost)")
    r = run(sclient, uniq, area, "curl -sS http://%s:%d/" % (name, origin), domains={name: "allow"})
    assert r.stdout.decode() == (
        '{"status":"blocked","host":"%s","reason":"not_allowed_local","decision":"deny",'
        '"source":"baseline_policy","protocol":"http","port":%d,"message":"Sandbox policy blocks '
        'local/private network addresses."}' % (name, origin))


def test_bad_launch_is_refused_with_the_references_text(sclient, uniq, area):
    bad = launch()
    bad["proxy"]["enabled"] = False
    err = sclient.error("process/start", {"processId": uniq("np"), "argv": ["/bin/true"],
                                          "cwd": "file://" + area.ws, "env": {}, "tty": False,
                                          "networkProxy": bad})
    assert err == {"code": -32602, "message": "invalid network proxy config: executor-local "
                   "network proxy launch requires an enabled proxy"}


def test_socks5_connect(sclient, uniq, area, origin):
    r = run(sclient, uniq, area,
            "curl -sS --socks5-hostname 127.0.0.1:1080 http://127.0.0.1:%d/s; echo '<>'; "
            "curl -sS --socks5-hostname 127.0.0.1:1080 http://denied.invalid/ 2>&1; echo rc=$?"
            % origin, domains={"127.0.0.1": "allow"})
    ok, refused = r.stdout.decode().split("<>\n")
    assert json.loads(ok)["path"] == "/s"
    assert "rc=97" in refused and "(2)" in refused, refused   # reply 2: not allowed by ruleset


def test_socks5_off_and_limited(sclient, uniq, area, origin):
    r = run(sclient, uniq, area,
            "echo $ALL_PROXY; curl -sS --socks5-hostname 127.0.0.1:1080 http://127.0.0.1:%d/ 2>&1;"
            " echo rc=$?" % origin, domains={"127.0.0.1": "allow"}, socks=False)
    out = r.stdout.decode()
    assert out.startswith("http://127.0.0.1:3128\n") and "rc=7" in out, out
    r = run(sclient, uniq, area,
            "curl -sS --socks5-hostname 127.0.0.1:1080 http://127.0.0.1:%d/ 2>&1; echo rc=$?"
            % origin, domains={"127.0.0.1": "allow"}, mode="limited")
    assert "rc=97" in r.stdout.decode()


def test_unix_socket_header_is_unsupported(sclient, uniq, area, origin):
    r = run(sclient, uniq, area,
            "curl -sS -i -H 'x-unix-socket: /run/x.sock' http://127.0.0.1:%d/" % origin,
            domains={"127.0.0.1": "allow"})
    out = r.stdout.decode()
    assert out.startswith("HTTP/1.1 501 Not Implemented\r\ncontent-type: text/plain\r\n")
    assert out.endswith("\r\n\r\nunix sockets unsupported")


@pytest.mark.parametrize("form", ["no-sandbox", "not-enforced"])
def test_unenforced_proxy_listens_on_the_hosts_loopback(sclient, uniq, area, origin, form):
    """Without enforcement (no sandbox object, or enforceManagedNetwork false) the reference
    still starts the proxy and names it in the environment, on host ports of its own."""
    extra = {"networkProxy": launch(domains={"127.0.0.1": "allow"})}
    if form == "not-enforced":
        extra.update(sandbox=ws_policy(area.ws, network="enabled"), enforceManagedNetwork=False)
    pid = uniq("ue")
    sclient.start(pid, ["/bin/bash", "-c",
                        "echo $http_proxy; curl -sS http://127.0.0.1:%d/u; echo; "
                        "curl -sS http://denied.invalid/" % origin], cwd=area.ws, **extra)
    out = sclient.collect(pid).stdout.decode().split("\n")
    http_port = int(out[0].rsplit(":", 1)[1])
    assert out[0] == "http://127.0.0.1:%d" % http_port and http_port not in (3128, origin)
    assert json.loads(out[1])["path"] == "/u"
    assert json.loads(out[2])["reason"] == "not_allowed"
    # closed with the process: nothing listens there any more
    s = socket.socket()
    assert s.connect_ex(("127.0.0.1", http_port)) != 0
    s.close()


def decisions(client, pid, n):
    return [client.next_notification("network/policyDecision", 60,
                                     pred=lambda p: p.get("processId") == pid)["params"]
            for _ in range(n)]


def test_every_decision_is_notified(sclient, uniq, area, origin):
    """network/policyDecision (always on, as the reference's): members in its order."""
    pid = uniq("pd")
    sclient.start(pid, ["/bin/bash", "-c",
                        "curl -sS -o /dev/null http://127.0.0.1:%d/; "
                        "curl -sS -o /dev/null http://denied.invalid/; "
                        "curl -sS -o /dev/null -d x http://127.0.0.1:%d/" % (origin, origin)],
                  cwd=area.ws, sandbox=ws_policy(area.ws, network="enabled"),
                  enforceManagedNetwork=True,
                  networkProxy=launch(domains={"127.0.0.1": "allow"}, mode="limited"))
    sclient.collect(pid)
    got = decisions(sclient, pid, 4)
    for d in got:
        assert list(d) == ["processId", "timestamp", "scope", "decision", "source", "reason",
                           "protocol", "host", "port", "method", "client", "policyOverride"]
        assert d["timestamp"].endswith("Z") and d["client"].startswith("127.0.0.1:")
        assert d["policyOverride"] is False and d["protocol"] == "http"
    assert [(d["scope"], d["decision"], d["source"], d["reason"], d["host"], d["method"])
            for d in got] == [
        ("domain", "allow", "baseline_policy", "allow", "127.0.0.1", "GET"),
        ("domain", "deny", "baseline_policy", "not_allowed", "denied.invalid", "GET"),
        ("domain", "allow", "baseline_policy", "allow", "127.0.0.1", "POST"),
        ("non_domain", "deny", "mode_guard", "method_not_allowed", "127.0.0.1", "POST")]
    assert got[0]["port"] == origin and got[1]["port"] == 80


def test_audit_log_has_one_line_per_decision(server_factory, tmp_path, area, origin):
    from conftest import wait_until
    audit = tmp_path / "audit.jsonl"
    srv = server_factory("--audit-log", str(audit))
    c = srv.connect()
    c.start("al", ["/bin/bash", "-c",
                   "curl -sS -o /dev/null -H \"Authorization: Bearer $TOK\" "
                   "http://127.0.0.1:%d/; curl -sS -o /dev/null http://denied.invalid/" % origin],
            cwd=area.ws, sandbox=ws_policy(area.ws, network="enabled"), env={"TOK": "s3cr3t-tok"},
            enforceManagedNetwork=True, networkProxy=launch(domains={"127.0.0.1": "allow"}))
    c.collect("al")

    def lines():
        return [json.loads(x) for x in audit.read_bytes().splitlines()
                if b'"network.decision"' in x]
    wait_until(lambda: len(lines()) >= 2, what="2 network.decision lines")
    got = [{k: r[k] for k in ("process", "protocol", "host", "port", "decision", "reason",
                               "source", "method")} for r in lines()]
    assert got == [
        {"process": "al", "protocol": "http", "host": "127.0.0.1", "port": origin,
         "decision": "allow", "reason": "allow", "source": "baseline_policy", "method": "GET"},
        {"process": "al", "protocol": "http", "host": "denied.invalid", "port": 80,
         "decision": "deny", "reason": "not_allowed", "source": "baseline_policy", "method": "GET"}]
    assert b"s3cr3t-tok" not in audit.read_bytes() and b"s3cr3t-tok" not in srv.stderr()
    c.close()


def test_metrics_count_connections_refusals_and_bytes(server, area, origin):
    from test_metrics import scrape, v
    c = server.connect()
    _, before = scrape(server)
    c.start("me", ["/bin/bash", "-c",
                   "curl -sS -o /dev/null http://127.0.0.1:%d/; curl -sS -o /dev/null "
                   "http://denied.invalid/; curl -sS -o /dev/null http://10.1.2.3/" % origin],
            cwd=area.ws, sandbox=ws_policy(area.ws, network="enabled"),
            enforceManagedNetwork=True, networkProxy=launch(domains={"127.0.0.1": "allow"}))
    c.collect("me")
    _, after = scrape(server)

    def d(name, **labels):
        return v(after, name, **labels) - v(before, name, **labels)
    assert d("uexec_network_proxy_connections_total") == 3
    assert d("uexec_network_proxy_allowed_total") == 1
    assert d("uexec_network_proxy_refusals_total", reason="not_allowed") == 1
    assert d("uexec_network_proxy_refusals_total", reason="not_allowed_local") == 1
    assert d("uexec_network_proxy_bytes_total", direction="up") > 50
    assert d("uexec_network_proxy_bytes_total", direction="down") > 50
    c.close()


def test_chunked_body_is_forwarded_and_nothing_after_it(sclient, uniq, area, origin):
    """A chunked body reaches the origin whole; the connection is kept (HTTP/1.1) and a
    request the client pipelines behind it is the next request, judged on its own (here
    refused, and with Connection: close the last), never bytes for the first upstream."""
    script = ("exec 3<>/dev/tcp/127.0.0.1/3128; printf 'POST http://127.0.0.1:%d/c HTTP/1.1\\r\\n"
              "Host: 127.0.0.1:%d\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n5\\r\\nhello\\r\\n"
              "6\\r\\n world\\r\\n0\\r\\n\\r\\nGET http://denied.invalid/ HTTP/1.1\\r\\n"
              "Host: denied.invalid\\r\\nConnection: close\\r\\n\\r\\n' >&3; cat <&3") % (origin, origin)
    r = run(sclient, uniq, area, script, domains={"127.0.0.1": "allow"})
    out = r.stdout.decode()
    assert out.startswith("HTTP/1.0 200 OK") or out.startswith("HTTP/1.1 200 OK"), out
    head, rest = out.split("\r\n\r\n", 1)
    length = int([l for l in head.split("\r\n") if l.lower().startswith("content-length:")][0]
                 .split(":")[1])
    assert "connection:" not in head.lower(), head
    seen = json.loads(rest[:length])
    assert seen["method"] == "POST" and seen["body"] == "hello world" and seen["path"] == "/c"
    second = rest[length:]
    assert second.startswith("HTTP/1.1 403 Forbidden\r\n"), second
    assert json.loads(body_after_head(second))["reason"] == "not_allowed"


def test_keep_alive_serves_requests_in_turn(sclient, uniq, area, origin):
    """One client connection, several forwarded requests (the reference keeps it alive):
    each response whole and in order; HTTP/1.0 ends it."""
    script = ("unset NO_PROXY no_proxy; "
              "curl -sS http://127.0.0.1:%d/a http://127.0.0.1:%d/b -w '\\n%%{num_connects}\\n'; "
              "curl -sS -0 -i http://127.0.0.1:%d/c" % (origin, origin, origin))
    r = run(sclient, uniq, area, script, domains={"127.0.0.1": "allow"})
    out = r.stdout.decode().split("\n")
    # per transfer: the body, then how many connections it opened (0: reused)
    assert json.loads(out[0])["path"] == "/a" and out[1] == "1", out
    assert json.loads(out[2])["path"] == "/b" and out[3] == "0", out
    # HTTP/1.0: answered, and the connection ends with it (curl would wait otherwise)
    assert json.loads(body_after_head("\n".join(out[4:])))["path"] == "/c", out


def test_content_length_and_chunked_together_are_refused(sclient, uniq, area, origin):
    script = ("exec 3<>/dev/tcp/127.0.0.1/3128; printf 'POST http://127.0.0.1:%d/ HTTP/1.1\\r\\n"
              "Host: 127.0.0.1:%d\\r\\nContent-Length: 3\\r\\nTransfer-Encoding: chunked\\r\\n"
              "\\r\\n0\\r\\n\\r\\n' >&3; cat <&3") % (origin, origin)
    r = run(sclient, uniq, area, script, domains={"127.0.0.1": "allow"})
    assert r.stdout.decode().startswith("HTTP/1.1 400 Bad Request\r\n")


def test_partial_head_is_closed_at_its_deadline(sclient, uniq, area):
    """A client that never finishes its request head (or SOCKS5 handshake) is closed after
    the head deadline (30 s, as the reference's header read timeout)."""
    r = run(sclient, uniq, area,
            "exec 3<>/dev/tcp/127.0.0.1/3128; printf 'GET http://x/ HTTP/1.1\\r\\nHost: x' >&3; "
            "exec 4<>/dev/tcp/127.0.0.1/1080; printf '\\005' >&4; "
            "cat <&3; echo http-closed; cat <&4; echo socks-closed", domains={"x": "allow"})
    assert r.stdout.decode() == "http-closed\nsocks-closed\n"


@pytest.mark.parametrize("sb", [{"type": "disabled"}, {"type": "external", "network": "enabled"},
                                "approved-root-write", "restricted-network"])
def test_enforced_with_any_sandbox_object(sclient, uniq, area, origin, sb):
    """enforceManagedNetwork with a `disabled` or `external` sandbox, an approved
    command's root write with a denied path (a view whose root is writable), or a
    workspace-write policy whose network is `restricted` (the reference's proxy is
    reachable then too): still a namespace holding only the proxy (the reference's B1/B3
    cases)."""
    from test_sandbox import managed, path_entry, sandbox, special
    if sb == "approved-root-write":
        sb = managed([special("root", "write"), path_entry(area.out, "deny")], network="enabled")
    elif sb == "restricted-network":
        sb = ws_policy(area.ws, network="restricted")["permissions"]
    pid = uniq("ds")
    res = sclient.start(pid, ["/bin/bash", "-c",
                              "curl -sS --noproxy '*' http://127.0.0.1:%d/ 2>&1; echo rc=$?; "
                              "curl -sS http://127.0.0.1:%d/d" % (origin, origin)],
                        cwd=area.ws, sandbox=sandbox(sb), enforceManagedNetwork=True,
                        networkProxy=launch(domains={"127.0.0.1": "allow"}))
    assert res["sandboxType"] == "linuxSeccomp"
    run = sclient.collect(pid)
    out = run.stdout.decode().split("\n")
    assert out[0].endswith("Couldn't connect to server") and out[1] == "rc=7", out
    assert json.loads(out[2])["path"] == "/d", out


UNIX_PROBE = r'''
import socket, sys
def try_(what, f):
    try:
        f()
        print(what, "ok")
    except OSError as e:
        print(what, e.errno)
def stream():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    s.sendall(b"escaped")
    s.close()
def dgram_pair():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.sendto(b"escaped", sys.argv[2])
try_("stream", stream)
try_("dgram-pair", dgram_pair)
try_("raw-pair", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_RAW))
def stream_pair():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    a.sendall(b"x")
    assert b.recv(1) == b"x"
try_("stream-pair", stream_pair)
try_("netlink", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0))
try_("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0))
try_("inet6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_STREAM))
'''


@pytest.mark.parametrize("allow_all", [False, True])
def test_host_unix_sockets_are_not_a_way_around_the_proxy(sclient, uniq, area, allow_all):
    """A pathname unix socket outside the roots (a daemon's: /run/docker.sock) is reached
    through the filesystem, not the namespace: a managed command must not connect to one
    (stream) or send to one (datagram, through a socketpair's member), and gets no other
    socket family than IP; dangerouslyAllowAllUnixSockets gives unix sockets back."""
    import errno
    stream_path = os.path.join(area.out, "egress.sock")
    dgram_path = os.path.join(area.out, "egress-dgram.sock")
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind(stream_path)
    ls.listen(4)
    ds = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    ds.bind(dgram_path)
    os.chmod(stream_path, 0o777)
    os.chmod(dgram_path, 0o777)
    try:
        sb = ws_policy(area.ws, network="enabled")
        np = launch(domains={"x": "allow"})
        np["proxy"]["dangerouslyAllowAllUnixSockets"] = allow_all
        r = sh(sclient, uniq, "python3 -c '%s' %s %s" % (UNIX_PROBE.replace("'", "'\\''"),
                                                           stream_path, dgram_path),
               area.ws, sb, networkProxy=np, enforceManagedNetwork=True)
        got = dict(line.split(" ", 1) for line in r.stdout.decode().split("\n") if line)
        eperm = str(errno.EPERM)
        expect = {"stream": "ok" if allow_all else eperm,
                  "dgram-pair": "ok" if allow_all else eperm,
                  "raw-pair": "ok" if allow_all else eperm,
                  "stream-pair": "ok", "netlink": eperm, "packet": eperm, "inet6": "ok"}
        assert got == expect, r.stderr
        ls.settimeout(0)
        ds.settimeout(0)
        if allow_all:
            c, _ = ls.accept()
            assert c.recv(16) == b"escaped"
            c.close()
            assert ds.recv(16) == b"escaped"
        else:
            with pytest.raises(BlockingIOError):
                ls.accept()
            with pytest.raises(BlockingIOError):
                ds.recv(16)
    finally:
        ls.close()
        ds.close()


# ---- review: network/policyRequest (docs/netproxy-wire-notes.md §9.2)

def review_start(sclient, uniq, area, script, timeout_ms=20000, **np):
    """Starts script with review on; returns its process id (the caller answers)."""
    pid = uniq("rv")
    launch_ = launch(**np)
    launch_["policyDecisionTimeoutMs"] = timeout_ms
    from test_sandbox import start
    # allowLocalBinding puts 127.0.0.1 in NO_PROXY: these requests must go through the proxy
    script = "unset NO_PROXY no_proxy; " + script
    _, res = start(sclient, lambda prefix="p": pid, ["/bin/bash", "-c", script], area.ws,
                   ws_policy(area.ws, network="enabled"), networkProxy=launch_,
                   enforceManagedNetwork=True)
    assert res["sandboxType"] == "linuxSeccomp"
    return pid


def review_decisions(sclient, pid):
    return [n["params"] for n in sclient.drain_notifications()
            if n["method"] == "network/policyDecision" and n["params"]["processId"] == pid]


@pytest.mark.parametrize("answer", ["allow", "deny", "ask", "error", "bad-reason", "garbage"])
def test_review_round_trip(sclient, uniq, area, origin, answer):
    """A target not in the allowlist is asked about; the client's answer decides, as the
    reference's: allow forwards (policyOverride), deny/ask refuse with the client's reason,
    an error or an answer that does not decode refuses as not_allowed."""
    pid = review_start(sclient, uniq, area, "curl -sS -i http://127.0.0.1:%d/r" % origin,
                       domains={"x.invalid": "allow"}, local=True)
    req = sclient.next_server_request()
    assert req["method"] == "network/policyRequest" and isinstance(req["id"], int)
    assert req["params"] == {"processId": pid, "request": {"protocol": "http", "host": "127.0.0.1",
                                                           "port": origin}}
    reply = {"allow": {"result": {"decision": {"type": "allow"}}},
             "deny": {"result": {"decision": {"type": "deny", "reason": "nope"}}},
             "ask": {"result": {"decision": {"type": "ask", "reason": "later"}}},
             "error": {"error": {"code": -32000, "message": "no"}},
             "bad-reason": {"result": {"decision": {"type": "deny", "reason": "bad\u0001ctl"}}},
             "garbage": {"result": {"decision": {"type": "bogus"}}}}[answer]
    sclient.send_obj(dict(id=req["id"], **reply))
    run = sclient.collect(pid)
    out = run.stdout.decode()
    seen = review_decisions(sclient, pid)
    if answer == "allow":
        assert json.loads(body_after_head(out))["path"] == "/r"
        assert [(d["decision"], d["source"], d["reason"], d["policyOverride"]) for d in seen] == \
            [("allow", "decider", "not_allowed", True)]
        return
    reason, decision = {"deny": ("nope", "deny"), "ask": ("later", "ask")}.get(
        answer, ("not_allowed", "deny"))
    header, message = (("blocked-by-policy", "Request blocked by network policy.")
                       if answer in ("deny", "ask") else
                       ("blocked-by-allowlist", "Domain not in allowlist."))
    assert out.startswith("HTTP/1.1 403 Forbidden\r\n") and "x-proxy-error: %s\r\n" % header in out
    assert body_after_head(out) == (
        '{"status":"blocked","host":"127.0.0.1","reason":"%s","decision":"%s","source":"decider",'
        '"protocol":"http","port":%d,"message":"%s"}' % (reason, decision, origin, message))
    assert [(d["decision"], d["source"], d["reason"], d["policyOverride"]) for d in seen] == \
        [(decision, "decider", reason, False)]


def test_review_connect_and_socks_and_no_caching(sclient, uniq, area, origin):
    """CONNECT and SOCKS5 ask too (https_connect, socks5_tcp); two questions about the same
    host are two requests (no caching); listed and denied hosts are never asked."""
    script = ("curl -sS -o /dev/null -w '%%{http_connect}\\n' -p -x http://127.0.0.1:3128 "
              "http://127.0.0.1:%d/a; "
              "curl -sS --socks5-hostname 127.0.0.1:1080 http://127.0.0.1:%d/b; echo; "
              "curl -sS http://denied.invalid/; echo; "
              "curl -sS -o /dev/null -w '%%{http_code}\\n' http://127.0.0.1:%d/c" % (origin, origin, origin))
    pid = review_start(sclient, uniq, area, script, domains={"x.invalid": "allow",
                                                             "denied.invalid": "deny"}, local=True)
    asked = []
    for answer in ({"type": "deny", "reason": "no-tunnel"}, {"type": "allow"},
                   {"type": "deny", "reason": "again"}):
        req = sclient.next_server_request()
        asked.append(req["params"]["request"])
        sclient.send_obj({"id": req["id"], "result": {"decision": answer}})
    out = sclient.collect(pid).stdout.decode().split("\n")
    assert asked == [{"protocol": "https_connect", "host": "127.0.0.1", "port": origin},
                     {"protocol": "socks5_tcp", "host": "127.0.0.1", "port": origin},
                     {"protocol": "http", "host": "127.0.0.1", "port": origin}]
    assert out[0] == "403"
    assert json.loads(out[1])["path"] == "/b", out
    assert json.loads(out[2])["reason"] == "denied"
    assert out[3] == "403"
    assert not sclient.server_requests


def test_review_unanswered_is_refused_after_timeout_plus_5s(sclient, uniq, area, origin):
    """No answer: refused as not_allowed once the timeout and the reference's 5 s margin
    have passed (not before); a late answer is then ignored and the connection stays."""
    import time
    pid = review_start(sclient, uniq, area, "curl -sS http://127.0.0.1:%d/" % origin,
                       timeout_ms=200, domains={"x.invalid": "allow"}, local=True)
    req = sclient.next_server_request()
    t0 = time.monotonic()
    run = sclient.collect(pid)
    waited = time.monotonic() - t0
    assert json.loads(run.stdout.decode())["reason"] == "not_allowed"
    assert waited >= 5.0, waited
    sclient.send_obj({"id": req["id"], "result": {"decision": {"type": "allow"}}})
    assert sclient.result("process/list", {}) is not None


def test_review_reply_to_an_unknown_id_drops_the_connection(sclient, uniq, area):
    """A reply to an id the server never issued ends the connection without a Close frame
    (the reference's), with or without a question outstanding."""
    from wsclient import ConnectionClosed
    sclient.send_obj({"id": 777, "result": {"decision": {"type": "allow"}}})
    with pytest.raises(ConnectionClosed) as e:
        sclient.pump(10)
    assert e.value.code is None


def test_review_without_a_client_refuses_at_once(shared_server, uniq, area, origin):
    """No connection attached (closed, not resumed): nobody to ask, refused at once as
    not_allowed; after a resume the next question goes to the new connection (ids from 1)."""
    c1 = shared_server.connect(initialize=False)
    session = c1.initialize()["sessionId"]
    go1, go2, first = (os.path.join(area.ws, n) for n in ("go1", "go2", "first"))
    # waits for the test's files (an event), not for time
    pid = review_start(c1, uniq, area,
                       "while [ ! -e go1 ]; do sleep 0.05; done; "
                       "curl -sS http://127.0.0.1:%d/one > first; mv first first.done; "
                       "while [ ! -e go2 ]; do sleep 0.05; done; "
                       "curl -sS http://127.0.0.1:%d/two" % (origin, origin),
                       domains={"x.invalid": "allow"}, local=True)
    c1.t.abort()
    import time
    t0 = time.monotonic()
    open(go1, "w").close()
    deadline = t0 + 60
    while not os.path.exists(first + ".done"):
        # refused at once: far sooner than the question's 25 s deadline
        assert time.monotonic() < deadline, "the first request never ended"
        time.sleep(0.05)
    assert json.loads(open(first + ".done").read())["reason"] == "not_allowed"
    assert time.monotonic() - t0 < 20, "refused only at the question's deadline"
    c2 = shared_server.connect(initialize=False)
    c2.initialize(resume=session)
    open(go2, "w").close()
    req = c2.next_server_request()
    assert req["id"] == 1 and req["params"]["request"]["port"] == origin
    c2.send_obj({"id": 1, "result": {"decision": {"type": "allow"}}})
    run = c2.collect(pid)
    assert json.loads(run.stdout.decode()).get("path") == "/two", (run.stdout, run.stderr)
    c2.t.abort()


# ---- allowUpstreamProxy: the server's own HTTP_PROXY/HTTPS_PROXY (netproxy-semantics-notes §4)

class Upstream:
    """A corporate proxy stand-in on the host's loopback: records what it is asked and answers
    itself (it plays the target too): absolute-form requests get their request line back as
    JSON; CONNECT opens a tunnel in which one request gets its path back; `refuse.test` is
    refused with 403."""

    def __init__(self):
        import socketserver
        self.seen = []
        up = self

        class H(socketserver.StreamRequestHandler):
            def head(self):
                lines = []
                while True:
                    line = self.rfile.readline()
                    if line in (b"\r\n", b"\n", b""):
                        return lines
                    lines.append(line.decode().rstrip("\r\n"))

            def answer(self, body):
                out = json.dumps(body).encode()
                self.wfile.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n"
                                 b"connection: close\r\n\r\n%s" % (len(out), out))

            def handle(self):
                lines = self.head()
                if not lines:
                    return
                hdrs = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:]}
                up.seen.append((lines[0], hdrs.get("proxy-authorization")))
                if lines[0].startswith("CONNECT "):
                    if "refuse.test" in lines[0]:
                        self.wfile.write(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n")
                        return
                    self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    inner = self.head()
                    self.answer({"tunnel": lines[0], "inner": inner[0] if inner else ""})
                else:
                    self.answer({"line": lines[0]})

        class S(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.srv = S(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


@pytest.fixture
def upstream():
    u = Upstream()
    yield u
    u.close()


def upstream_client(server_factory, upstream):
    url = "http://user:p%%40ss@127.0.0.1:%d" % upstream.port
    env = dict(os.environ, HTTP_PROXY=url, HTTPS_PROXY=url)
    for k in ("http_proxy", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        env.pop(k, None)
    return server_factory(env=env).connect()


def upstream_launch(local, **kw):
    np = launch(local=local, **kw)
    np["proxy"]["allowUpstreamProxy"] = True
    return np


def test_upstream_proxy_carries_plain_requests_and_tunnels(server_factory, upstream, uniq, area,
                                                           origin):
    """Plain requests reach the upstream proxy in absolute form with its credential (from the
    server's URL, never the client's); CONNECT and SOCKS5 go through its tunnel; a
    non-public literal target goes direct; a tunnel it refuses is a 502."""
    c = upstream_client(server_factory, upstream)
    script = ("unset NO_PROXY no_proxy; "
              "curl -sS -H 'Proxy-Authorization: Basic Y2xpZW50OnNlY3JldA==' http://origin.test/x; echo; "
              "curl -sS -p -x http://127.0.0.1:3128 http://origin.test:8080/y; echo; "
              "curl -sS --socks5-hostname 127.0.0.1:1080 http://origin.test/z; echo; "
              "curl -sS http://127.0.0.1:%d/direct; echo; "
              "curl -sS -o /dev/null -w '%%{http_connect}\\n' -p -x http://127.0.0.1:3128 "
              "http://refuse.test/" % origin)
    r = sh(c, uniq, script, area.ws, ws_policy(area.ws, network="enabled"),
           networkProxy=upstream_launch(True, domains={"origin.test": "allow",
                                                       "refuse.test": "allow",
                                                       "127.0.0.1": "allow"}),
           enforceManagedNetwork=True)
    out = r.stdout.decode().split("\n")
    assert json.loads(out[0]) == {"line": "GET http://origin.test:80/x HTTP/1.1"}, out
    assert json.loads(out[1]) == {"tunnel": "CONNECT origin.test:8080 HTTP/1.1",
                                  "inner": "GET /y HTTP/1.1"}
    assert json.loads(out[2]) == {"tunnel": "CONNECT origin.test:80 HTTP/1.1",
                                  "inner": "GET /z HTTP/1.1"}
    assert json.loads(out[3])["path"] == "/direct"
    assert out[4] == "502"
    auth = "Basic dXNlcjpwQHNz"  # user:p@ss
    assert upstream.seen == [("GET http://origin.test:80/x HTTP/1.1", auth),
                             ("CONNECT origin.test:8080 HTTP/1.1", auth),
                             ("CONNECT origin.test:80 HTTP/1.1", auth),
                             ("CONNECT refuse.test:80 HTTP/1.1", auth)]


def test_upstream_proxy_keeps_the_policy_time_lookup(server_factory, upstream, uniq, area):
    """Through an upstream proxy the connection never resolves the target, so an allowed name
    is looked up on its own: one that does not resolve, or resolves to a local address, is
    refused (not_allowed_local) and the upstream proxy is never asked."""
    c = upstream_client(server_factory, upstream)
    r = sh(c, uniq, "curl -sS http://nothing.invalid/; echo; "
                    "curl -sS --socks5-hostname 127.0.0.1:1080 http://nothing.invalid/; echo rc=$?",
           area.ws, ws_policy(area.ws, network="enabled"),
           networkProxy=upstream_launch(False, domains={"nothing.invalid": "allow"}),
           enforceManagedNetwork=True)
    out = r.stdout.decode().split("\n")
    assert json.loads(out[0])["reason"] == "not_allowed_local"
    assert out[1] == "rc=97"  # curl: the SOCKS5 proxy refused (reply 2)
    assert upstream.seen == []


def py(script, *args):
    """A bash command running script with python3 (in the sandbox)."""
    return "python3 -c '%s' %s" % (script.replace("'", "'\\''"), " ".join(str(a) for a in args))


SOCKS_CONNECT = r'''
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", 1080))
s.sendall(b"\x05\x01\x00")
assert s.recv(2) == b"\x05\x00"
s.sendall(b"\x05\x01\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack(">H", int(sys.argv[1])))
r = b""
while len(r) < 10:
    r += s.recv(10 - len(r))
print(r.hex())
s.sendall(b"GET /r HTTP/1.0\r\nHost: x\r\n\r\n")
out = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    out += b
print(out.split(b"\r\n\r\n", 1)[1].decode())
'''


def test_socks5_connect_reply_names_the_outbound_socket(sclient, uniq, area, origin):
    """The success reply carries the local address and port of the proxy's outbound
    socket (the reference's `05 00 00 01 7f000001 dd62`), not zeros."""
    r = run(sclient, uniq, area, py(SOCKS_CONNECT, origin), domains={"127.0.0.1": "allow"})
    reply, body = r.stdout.decode().split("\n", 1)
    assert reply.startswith("05000001"), text(r)
    addr, port = bytes.fromhex(reply[8:16]), int(reply[16:20], 16)
    assert socket.inet_ntoa(addr) == "127.0.0.1" and port not in (0, origin)
    assert json.loads(body)["path"] == "/r"


class UdpEcho:
    """Echoes datagrams on the host's loopback (127.0.0.1, and ::1 on the same port when
    there is IPv6), prefixed with "echo:"."""

    def __init__(self):
        self.socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM)]
        self.socks[0].bind(("127.0.0.1", 0))
        self.port = self.socks[0].getsockname()[1]
        try:
            s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
            s6.bind(("::1", self.port))
            self.socks.append(s6)
        except OSError:
            pass
        self.got = []
        self.threads = [threading.Thread(target=self.serve, args=(s,), daemon=True)
                        for s in self.socks]
        for t in self.threads:
            t.start()

    def serve(self, s):
        while True:
            try:
                data, src = s.recvfrom(65536)
            except OSError:
                return
            self.got.append(data)
            s.sendto(b"echo:" + data, src)

    def close(self):
        for s in self.socks:
            s.close()


@pytest.fixture
def udp_echo():
    e = UdpEcho()
    yield e
    e.close()


# argv: the destination (an IPv4 literal or a name), its port, then the payloads to send.
# Prints the association's reply, then per datagram its reply (hex, SOCKS header included)
# or "none", then "eof" when the control connection was closed (else "open").
SOCKS_UDP = r'''
import socket, struct, sys
def recvn(s, n):
    b = b""
    while len(b) < n:
        k = s.recv(n - len(b))
        if not k:
            break
        b += k
    return b
dest, port = sys.argv[1], int(sys.argv[2])
c = socket.create_connection(("127.0.0.1", 1080))
c.sendall(b"\x05\x01\x00")
assert recvn(c, 2) == b"\x05\x00"
c.sendall(b"\x05\x03\x00\x01\x00\x00\x00\x00\x00\x00")
r = recvn(c, 10)
print(r.hex())
if r[1] != 0:
    sys.exit(0)
relay = (socket.inet_ntoa(r[4:8]), struct.unpack(">H", r[8:10])[0])
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(3)
try:
    addr = b"\x01" + socket.inet_aton(dest)
except OSError:
    addr = b"\x03" + bytes([len(dest)]) + dest.encode()
for payload in sys.argv[3:]:
    u.sendto(b"\x00\x00\x00" + addr + struct.pack(">H", port) + payload.encode(), relay)
    try:
        print(u.recvfrom(65536)[0].hex())
    except socket.timeout:
        print("none")
c.settimeout(3)
try:
    print("eof" if c.recv(1) == b"" else "data")
except socket.timeout:
    print("open")
'''


def udp_reply(payload, port, ip="127.0.0.1"):
    return (b"\x00\x00\x00\x01" + socket.inet_aton(ip) + port.to_bytes(2, "big") + b"echo:"
            + payload).hex()


def test_socks5_udp_associate_relays_both_ways(sclient, uniq, area, udp_echo):
    """UDP ASSOCIATE: the reply names the relay (127.0.0.1:1080 in the namespace); a
    datagram to an allowed destination reaches it and its answer comes back with the
    SOCKS header naming the source; the association stays open."""
    r = run(sclient, uniq, area, py(SOCKS_UDP, "127.0.0.1", udp_echo.port, "ping", "pong"),
            domains={"127.0.0.1": "allow"})
    out = r.stdout.decode().split("\n")
    assert out[:4] == ["050000017f000001" + "%04x" % 1080, udp_reply(b"ping", udp_echo.port),
                       udp_reply(b"pong", udp_echo.port), "open"], text(r)
    assert udp_echo.got == [b"ping", b"pong"]


def test_socks5_udp_refused_destination_ends_the_association(sclient, uniq, area, udp_echo):
    r = run(sclient, uniq, area, py(SOCKS_UDP, "denied.invalid", 53, "q"),
            domains={"127.0.0.1": "allow"})
    assert r.stdout.decode().split("\n")[1:3] == ["none", "eof"], text(r)
    # a local literal the policy does not name explicitly: not_allowed_local
    r = run(sclient, uniq, area, py(SOCKS_UDP, "127.0.0.1", udp_echo.port, "q"),
            domains={"*.example.com": "allow"})
    assert r.stdout.decode().split("\n")[1:3] == ["none", "eof"], text(r)
    assert udp_echo.got == []


def test_socks5_udp_limited_mode_refuses(sclient, uniq, area, udp_echo):
    r = run(sclient, uniq, area, py(SOCKS_UDP, "127.0.0.1", udp_echo.port, "q"),
            domains={"127.0.0.1": "allow"}, mode="limited")
    assert r.stdout.decode().split("\n")[1:3] == ["none", "eof"], text(r)
    assert udp_echo.got == []


def test_socks5_udp_disabled_is_command_not_supported(sclient, uniq, area, udp_echo):
    sb = ws_policy(area.ws, network="enabled")
    np = launch(domains={"127.0.0.1": "allow"})
    np["proxy"]["enableSocks5Udp"] = False
    r = sh(sclient, uniq, py(SOCKS_UDP, "127.0.0.1", udp_echo.port, "q"), area.ws, sb,
           networkProxy=np, enforceManagedNetwork=True)
    assert r.stdout.decode() == "05070001000000000000\n", text(r)


def test_socks5_udp_one_decision_per_destination(sclient, uniq, area, udp_echo):
    """Decisions (protocol socks5_udp) once per new destination, not per datagram."""
    pid = uniq("ud")
    sclient.start(pid, ["/bin/bash", "-c",
                        py(SOCKS_UDP, "127.0.0.1", udp_echo.port, "a", "b", "c") + "; " +
                        py(SOCKS_UDP, "denied.invalid", 53, "d")],
                  cwd=area.ws, sandbox=ws_policy(area.ws, network="enabled"),
                  enforceManagedNetwork=True, networkProxy=launch(domains={"127.0.0.1": "allow"}))
    out = sclient.collect(pid).stdout.decode().split("\n")
    assert out[4] == "open" and out[7] == "eof", out
    got = decisions(sclient, pid, 2)
    assert [(d["protocol"], d["scope"], d["decision"], d["reason"], d["host"], d["port"])
            for d in got] == [
        ("socks5_udp", "domain", "allow", "allow", "127.0.0.1", udp_echo.port),
        ("socks5_udp", "domain", "deny", "not_allowed", "denied.invalid", 53)]
    assert "method" not in got[0] and got[0]["client"].startswith("127.0.0.1:")


def local_name():
    """A name (not "localhost") the host resolves to a local address, or None."""
    import ipaddress
    for cand in (socket.gethostname(), "ip6-localhost", "ip6-loopback"):
        try:
            addrs = {a[4][0] for a in socket.getaddrinfo(cand, 80)}
        except (socket.gaierror, UnicodeError):
            continue
        if cand != "localhost" and any(not ipaddress.ip_address(a.split("%")[0]).is_global
                                       for a in addrs):
            return cand.lower().rstrip(".")
    return None


def test_socks5_udp_allowlisted_name_resolving_locally_is_refused(sclient, uniq, area, udp_echo):
    """DNS rebinding for datagrams: the name is resolved by the server (worker pool) and
    refused when an answer is local."""
    name = local_name()
    if not name:
        pytest.skip("no host name resolving to a local address here")
    r = run(sclient, uniq, area, py(SOCKS_UDP, name, udp_echo.port, "q"), domains={name: "allow"})
    assert r.stdout.decode().split("\n")[1:3] == ["none", "eof"], text(r)
    assert udp_echo.got == []


def test_socks5_udp_name_with_allow_local_binding(sclient, uniq, area, udp_echo):
    """allowLocalBinding: "localhost" is resolved by the server and used; the reply names
    the address it came from (127.0.0.1 or ::1)."""
    r = run(sclient, uniq, area, py(SOCKS_UDP, "localhost", udp_echo.port, "hi"),
            domains={"localhost": "allow"}, local=True)
    out = r.stdout.decode().split("\n")
    assert out[2] == "open", text(r)
    assert out[1] in (udp_reply(b"hi", udp_echo.port),
                      ("00000004" + "00" * 15 + "01" + "%04x" % udp_echo.port) + b"echo:hi".hex())
    assert udp_echo.got == [b"hi"]


def test_socks5_udp_unenforced_relay_on_the_hosts_loopback(sclient, uniq, area, udp_echo):
    """Without enforcement the relay is a host loopback socket the reply names."""
    script = SOCKS_UDP.replace('("127.0.0.1", 1080)', '("127.0.0.1", int(__import__("os")'
                               '.environ["ALL_PROXY"].rsplit(":", 1)[1]))')
    pid = uniq("uu")
    sclient.start(pid, ["/bin/bash", "-c", py(script, "127.0.0.1", udp_echo.port, "x")],
                  cwd=area.ws, networkProxy=launch(domains={"127.0.0.1": "allow"}))
    out = sclient.collect(pid).stdout.decode().split("\n")
    assert out[0].startswith("050000017f000001") and out[0] != "050000017f000001" + "%04x" % 1080
    assert out[1:3] == [udp_reply(b"x", udp_echo.port), "open"], out


def test_socks5_udp_metrics_count_bytes_and_decisions(server, area, udp_echo):
    from test_metrics import scrape, v
    c = server.connect()
    _, before = scrape(server)
    c.start("mu", ["/bin/bash", "-c", py(SOCKS_UDP, "127.0.0.1", udp_echo.port, "x" * 100)],
            cwd=area.ws, sandbox=ws_policy(area.ws, network="enabled"),
            enforceManagedNetwork=True, networkProxy=launch(domains={"127.0.0.1": "allow"}))
    assert c.collect("mu").stdout.decode().split("\n")[2] == "open"
    _, after = scrape(server)

    def d(name, **labels):
        return v(after, name, **labels) - v(before, name, **labels)
    assert d("uexec_network_proxy_allowed_total") == 1
    assert d("uexec_network_proxy_bytes_total", direction="up") == 100
    assert d("uexec_network_proxy_bytes_total", direction="down") == 105
    c.close()
