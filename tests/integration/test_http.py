# SPDX-License-Identifier: MIT
"""HTTP upgrade handling (PROTOCOL.md §1.2)."""

import base64
import os

import pytest

from wsclient import accept_key, headers_dict, http_exchange, upgrade_request

TEXT_PLAIN = "text/plain; charset=utf-8"


def exchange(server, request):
    return http_exchange(server.host, server.port, request)


def upgrade(server, **kw):
    req, key = upgrade_request(server.host, server.port, **kw)
    status, headers, body = exchange(server, req)
    return status, headers, body, key


def test_good_upgrade_status_and_headers(shared_server):
    """§1.2: 101 with exactly connection/upgrade/sec-websocket-accept/date, lower-case names."""
    status, headers, body, key = upgrade(shared_server)
    assert status == "HTTP/1.1 101 Switching Protocols"
    names = [n for n, _ in headers]
    assert names == ["connection", "upgrade", "sec-websocket-accept", "date"]
    hd = headers_dict(headers)
    assert hd["connection"] == "upgrade"
    assert hd["upgrade"] == "websocket"
    assert hd["sec-websocket-accept"] == accept_key(key)
    # RFC 1123 date, e.g. "Sun, 22 Nov 2026 04:54:26 GMT"
    assert hd["date"].endswith(" GMT") and len(hd["date"].split()) == 6


def test_upgrade_ignores_subprotocol_offer(shared_server):
    """§1.2: no subprotocol is selected even if offered."""
    status, headers, _, _ = upgrade(shared_server,
                                    extra_headers=[("Sec-WebSocket-Protocol", "chat, superchat")])
    assert status == "HTTP/1.1 101 Switching Protocols"
    assert "sec-websocket-protocol" not in headers_dict(headers)


def test_upgrade_never_accepts_permessage_deflate(shared_server):
    """§1.2: no extension is ever accepted."""
    status, headers, _, _ = upgrade(
        shared_server,
        extra_headers=[("Sec-WebSocket-Extensions", "permessage-deflate; client_max_window_bits")])
    assert status == "HTTP/1.1 101 Switching Protocols"
    assert "sec-websocket-extensions" not in headers_dict(headers)


def test_query_string_on_root_is_ignored(shared_server):
    """§1.2: a query string on / reaches the normal upgrade handling."""
    status, _, _, _ = upgrade(shared_server, path="/?token=abc")
    assert status == "HTTP/1.1 101 Switching Protocols"


def _error_response(status, headers, body, code_line, text):
    assert status == code_line
    hd = headers_dict(headers)
    assert body == text.encode()
    assert hd.get("content-type") == TEXT_PLAIN
    assert int(hd["content-length"]) == len(text.encode())


def test_missing_connection_upgrade_is_400(shared_server):
    """§1.2: GET / without Connection: upgrade -> 400 with the exact body."""
    req, _ = upgrade_request(shared_server.host, shared_server.port, omit=("Connection",))
    _error_response(*exchange(shared_server, req), "HTTP/1.1 400 Bad Request",
                    "Connection header did not include 'upgrade'")


def test_plain_get_is_400(shared_server):
    """§1.2: a plain GET / (no upgrade headers at all) -> 400."""
    req = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    _error_response(*exchange(shared_server, req), "HTTP/1.1 400 Bad Request",
                    "Connection header did not include 'upgrade'")


def test_missing_key_is_400(shared_server):
    """§1.2: no Sec-WebSocket-Key -> 400."""
    req, _ = upgrade_request(shared_server.host, shared_server.port, omit=("Sec-WebSocket-Key",))
    _error_response(*exchange(shared_server, req), "HTTP/1.1 400 Bad Request",
                    "`Sec-WebSocket-Key` header missing")


def test_version_8_is_400(shared_server):
    """§1.2: Sec-WebSocket-Version: 8 -> 400."""
    req, _ = upgrade_request(shared_server.host, shared_server.port, version="8")
    _error_response(*exchange(shared_server, req), "HTTP/1.1 400 Bad Request",
                    "`Sec-WebSocket-Version` header did not include '13'")


def test_origin_header_is_403(shared_server):
    """§1.2: any Origin header -> 403 Forbidden."""
    status, _, _, _ = upgrade(shared_server, extra_headers=[("Origin", "http://example.com")])
    assert status == "HTTP/1.1 403 Forbidden"


@pytest.mark.parametrize("path", ["/ws", "/some/path?x=1", "/healthz"])
def test_other_paths_are_404_with_empty_body(shared_server, path):
    """§1.2: paths other than / (and /readyz) -> 404, empty body."""
    status, headers, body, _ = upgrade(shared_server, path=path)
    assert status == "HTTP/1.1 404 Not Found"
    assert body == b""


def test_post_is_405(shared_server):
    """§1.2: POST / -> 405 with the exact body."""
    req, _ = upgrade_request(shared_server.host, shared_server.port, method="POST")
    _error_response(*exchange(shared_server, req), "HTTP/1.1 405 Method Not Allowed",
                    "Request method must be `GET`")


def test_http10_upgrade_is_426(shared_server):
    """§1.2: HTTP/1.0 upgrade -> 'HTTP/1.0 426 Upgrade Required'."""
    req, _ = upgrade_request(shared_server.host, shared_server.port, http_version="HTTP/1.0")
    _error_response(*exchange(shared_server, req), "HTTP/1.0 426 Upgrade Required",
                    "WebSocket request couldn't be upgraded since no upgrade state was present")


def test_readyz_plain_get_is_200(shared_server):
    """§1.2: GET /readyz -> 200 OK, empty body."""
    status, headers, body = exchange(shared_server, b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == "HTTP/1.1 200 OK"
    assert body == b""
    assert headers_dict(headers).get("content-length", "0") == "0"


def test_readyz_with_upgrade_headers_is_200(shared_server):
    """§1.2: /readyz answers 200 even with upgrade headers."""
    status, _, body, _ = upgrade(shared_server, path="/readyz")
    assert status == "HTTP/1.1 200 OK"
    assert body == b""


def test_unparsable_request_line_is_400_connection_close(shared_server):
    """§1.2: garbage request line -> 400, connection: close, empty body."""
    status, headers, body = exchange(shared_server, b"THIS IS NOT HTTP\r\n\r\n")
    assert status == "HTTP/1.1 400 Bad Request"
    assert headers_dict(headers).get("connection") == "close"
    assert body == b""


def test_server_survives_bad_requests(shared_server):
    """§1.2: after a series of refused requests a normal upgrade still works."""
    for raw in (b"\x00\x01\x02\r\n\r\n", b"GET / HTTP/1.1\r\n\r\n",
                b"GET /readyz HTTP/1.1\r\n\r\n"):
        exchange(shared_server, raw)
    c = shared_server.connect()
    assert c.result("environment/status", None) == {"status": "ready"}
    c.ws.abort()


def test_upgrade_accept_key_for_fixed_key(shared_server):
    """§1.2/RFC 6455: sec-websocket-accept is SHA-1/base64 of key+GUID."""
    key = base64.b64encode(os.urandom(16)).decode()
    status, headers, _, _ = upgrade(shared_server, key=key)
    assert headers_dict(headers)["sec-websocket-accept"] == accept_key(key)
