# SPDX-License-Identifier: MIT
"""WebSocket framing, control frames and limits (PROTOCOL.md §1.3, §1.4)."""

import json
import struct

import pytest

import wsclient
from wsclient import (OP_BINARY, OP_CLOSE, OP_CONT, OP_PING, OP_PONG, OP_TEXT,
                      ConnectionClosed, WebSocket)

STATUS = '{"id":%d,"method":"environment/status","params":null}'


def status_reply(i):
    return {"id": i, "result": {"status": "ready"}}


def recv_json(ws, timeout=wsclient.DEFAULT_TIMEOUT):
    op, payload = ws.recv_message(timeout)
    assert op == OP_TEXT, "server must answer with text frames (§1.3)"
    return json.loads(payload)


@pytest.fixture
def ws(server):
    """Raw WebSocket with a completed handshake (initialize + initialized)."""
    w = server.ws()
    w.send_text('{"id":0,"method":"initialize","params":{"clientName":"framing"}}')
    assert "result" in recv_json(w)
    w.send_text('{"method":"initialized","params":{}}')
    yield w
    w.abort()


def assert_closed(ws, allowed_codes, timeout=wsclient.DEFAULT_TIMEOUT):
    """Server must close: either a Close frame with one of allowed_codes, or EOF."""
    how, code = ws.wait_closed(timeout)
    if how == "close":
        assert code in allowed_codes, "close code %r not in %r" % (code, allowed_codes)


def test_text_frame_request(ws):
    """§1.3: one JSON-RPC message per text frame."""
    ws.send_text(STATUS % 1)
    assert recv_json(ws) == status_reply(1)


def test_binary_frame_request_is_processed(ws):
    """§1.3: a binary frame with the same JSON is processed identically."""
    ws.send_binary(STATUS % 2)
    assert recv_json(ws) == status_reply(2)


def test_server_frames_unmasked_unfragmented_text(ws):
    """§1.3: server frames are unmasked, FIN set, text opcode."""
    ws.send_text(STATUS % 3)
    f = ws.recv_frame(20)
    assert f.opcode == OP_TEXT and f.fin and not f.masked and f.rsv == 0
    assert json.loads(f.payload) == status_reply(3)


def test_fragmented_message_with_interleaved_ping(ws):
    """§1.3/§1.4: fragments are reassembled; a ping between fragments is answered."""
    msg = (STATUS % 4).encode()
    a, b, c = msg[:10], msg[10:25], msg[25:]
    ws.send_frame(OP_TEXT, a, fin=False)
    ws.send_frame(OP_CONT, b, fin=False)
    ws.send_frame(OP_PING, b"ping-between-fragments")
    payload, others = ws.recv_pong(20)
    assert payload == b"ping-between-fragments"
    assert others == []
    ws.send_frame(OP_CONT, c, fin=True)
    assert recv_json(ws) == status_reply(4)


def test_fragmented_binary_message(ws):
    """§1.3: a fragmented binary message is reassembled too."""
    msg = (STATUS % 5).encode()
    ws.send_frame(OP_BINARY, msg[:1], fin=False)
    for i in range(1, len(msg) - 1):
        ws.send_frame(OP_CONT, msg[i:i + 1], fin=False)
    ws.send_frame(OP_CONT, msg[-1:], fin=True)
    assert recv_json(ws) == status_reply(5)


def test_ping_answered_with_same_payload(ws):
    """§1.4: client Ping -> Pong with the same payload."""
    ws.ping(b"hello-ping")
    payload, _ = ws.recv_pong(20)
    assert payload == b"hello-ping"


def test_empty_ping_answered(ws):
    """§1.4: an empty Ping gets an empty Pong."""
    ws.ping(b"")
    payload, _ = ws.recv_pong(20)
    assert payload == b""


def test_max_size_ping_answered(ws):
    """§1.4: a 125-byte Ping (largest legal control payload) is echoed."""
    ws.ping(b"x" * 125)
    payload, _ = ws.recv_pong(20)
    assert payload == b"x" * 125


def test_unsolicited_pong_ignored(ws):
    """§1.4: unsolicited Pongs are ignored."""
    ws.pong(b"unsolicited")
    ws.send_text(STATUS % 6)
    assert recv_json(ws) == status_reply(6)


def test_unmasked_client_frame_closes(ws):
    """§1.3: an unmasked client frame is a protocol violation -> close (1002) or EOF."""
    ws.send_frame(OP_TEXT, STATUS % 7, mask=False)
    assert_closed(ws, (1002,))


def test_rsv1_without_extension_closes(ws):
    """§1.3: RSV bits without a negotiated extension -> close (1002) or EOF."""
    ws.send_frame(OP_TEXT, STATUS % 8, rsv=4)
    assert_closed(ws, (1002,))


@pytest.mark.parametrize("rsv", [1, 2])
def test_rsv2_rsv3_closes(ws, rsv):
    """§1.3: RSV2/RSV3 set -> close (1002) or EOF."""
    ws.send_frame(OP_TEXT, STATUS % 9, rsv=rsv)
    assert_closed(ws, (1002,))


def test_invalid_utf8_text_closes(ws):
    """§1.3: invalid UTF-8 in a text frame -> close (1007) or EOF."""
    ws.send_frame(OP_TEXT, b'{"id":10,"method":"environment/status","x":"\xff\xfe"}')
    assert_closed(ws, (1007,))


def test_invalid_utf8_split_across_fragments_closes(ws):
    """§1.3: invalid UTF-8 detected after reassembly -> close (1007) or EOF."""
    ws.send_frame(OP_TEXT, b'{"id":11,"x":"\xc3', fin=False)
    ws.send_frame(OP_CONT, b'("}', fin=True)
    assert_closed(ws, (1007,))


def test_valid_utf8_split_across_fragments_accepted(ws):
    """§1.3: a multi-byte character split between fragments is fine."""
    msg = '{"id":12,"method":"environment/status","params":null,"x":"\u00e9"}'.encode()
    cut = msg.index(b"\xc3") + 1
    ws.send_frame(OP_TEXT, msg[:cut], fin=False)
    ws.send_frame(OP_CONT, msg[cut:], fin=True)
    assert recv_json(ws) == status_reply(12)


@pytest.mark.parametrize("opcode", [3, 7, 0xB, 0xF])
def test_unknown_opcode_closes(ws, opcode):
    """§1.3: an unknown opcode -> close (1002) or EOF."""
    ws.send_frame(opcode, b"x")
    assert_closed(ws, (1002,))


def test_control_frame_over_125_closes(ws):
    """§1.3: a control frame with payload > 125 bytes -> close (1002) or EOF."""
    ws.send_frame(OP_PING, b"p" * 126)
    assert_closed(ws, (1002,))


def test_fragmented_control_frame_closes(ws):
    """RFC 6455 §5.5 (§1.3 protocol violation): a control frame without FIN -> close."""
    ws.send_frame(OP_PING, b"abc", fin=False)
    assert_closed(ws, (1002,))


def test_continuation_without_start_closes(ws):
    """RFC 6455 §5.4 (§1.3 protocol violation): a stray continuation frame -> close."""
    ws.send_frame(OP_CONT, STATUS % 13, fin=True)
    assert_closed(ws, (1002,))


def test_new_data_frame_inside_fragmented_message_closes(ws):
    """RFC 6455 §5.4: a text frame while a fragmented message is open -> close."""
    ws.send_frame(OP_TEXT, b'{"id":14,', fin=False)
    ws.send_frame(OP_TEXT, STATUS % 14, fin=True)
    assert_closed(ws, (1002,))


def test_client_close_is_echoed(ws):
    """§1.4 (uexec): a client Close frame is answered with a Close frame, then TCP close."""
    ws.send_close(1000, b"bye")
    how, code = ws.wait_closed(20)
    assert how == "close", "uexec must echo the Close frame"
    assert code == 1000


def test_client_close_without_code_is_echoed(ws):
    """§1.4 (uexec): an empty Close frame is also answered with a Close frame."""
    ws.send_close(None)
    how, code = ws.wait_closed(20)
    assert how == "close"
    assert code in (None, 1000, 1005)


def test_close_frame_with_bad_length_payload(ws):
    """RFC 6455 §5.5.1: a 1-byte Close payload is a protocol error -> close (1002) or EOF."""
    ws.send_frame(OP_CLOSE, b"\x03")
    assert_closed(ws, (1002,))


def test_server_pings_periodically_and_does_not_need_pongs(server_factory):
    """§1.4: server sends empty Pings at --ping-interval-ms; no Pong is required.
    uexec: as long as something arrives before the third (test_abuse.py checks the close)."""
    srv = server_factory("--ping-interval-ms", "200")
    c = srv.connect()
    ws = c.ws
    ws.auto_pong = False
    # wait for 2 pings without answering them
    got = 0
    while got < 2:
        f = ws.recv_frame()
        if f.opcode == OP_PING:
            assert f.payload == b""
            got += 1
    assert c.result("environment/status", None) == {"status": "ready"}
    ws.abort()


# ---- size limits (uexec flags; reference: 16 MiB frame / 64 MiB message)


def padded_request(i, total):
    """A request whose text is exactly `total` bytes (answered with an error reply)."""
    base = '{"id":%d,"method":"process/read","params":{"processId":"%s"}}'
    pad = total - len(base % (i, ""))
    return base % (i, "x" * pad)


def test_frame_under_max_frame_bytes_accepted(server_factory):
    """§1.3: a frame below --max-frame-bytes is processed."""
    srv = server_factory("--max-frame-bytes", "65536")
    c = srv.connect()
    c.ws.send_text(padded_request(50, 60000))
    reply = c.wait_reply(50)
    assert reply["error"]["code"] == -32600  # unknown process id xxxx...
    c.ws.abort()


def test_frame_over_max_frame_bytes_closes(server_factory):
    """§1.3: a single frame over --max-frame-bytes -> close (1009) or EOF."""
    srv = server_factory("--max-frame-bytes", "65536")
    ws = srv.ws()
    try:
        ws.send_text(padded_request(51, 70000))
    except ConnectionClosed:
        pass
    assert_closed(ws, (1009,))
    # the server is still alive
    c = srv.connect()
    assert c.result("environment/status", None) == {"status": "ready"}
    c.ws.abort()


def test_frame_header_announcing_huge_length_closes(server_factory):
    """§1.3: a frame header announcing more than --max-frame-bytes closes without waiting for the payload."""
    srv = server_factory("--max-frame-bytes", "65536")
    ws = srv.ws()
    ws.send_raw(ws.build_frame(OP_TEXT, b"{", length=1 << 40))
    assert_closed(ws, (1009,))


def test_fragmented_message_under_max_message_bytes_accepted(server_factory):
    """§1.3: a fragmented message below --max-message-bytes is reassembled and processed."""
    srv = server_factory("--max-frame-bytes", "65536", "--max-message-bytes", "131072")
    c = srv.connect()
    data = padded_request(60, 120000).encode()
    parts = [data[i:i + 40000] for i in range(0, len(data), 40000)]
    for n, p in enumerate(parts):
        c.ws.send_frame(OP_TEXT if n == 0 else OP_CONT, p, fin=(n == len(parts) - 1))
    reply = c.wait_reply(60)
    assert reply["error"]["code"] == -32600
    c.ws.abort()


def test_fragmented_message_over_max_message_bytes_closes(server_factory):
    """§1.3: a reassembled message over --max-message-bytes -> close (1009) or EOF."""
    srv = server_factory("--max-frame-bytes", "65536", "--max-message-bytes", "131072")
    ws = srv.ws()
    data = padded_request(61, 200000).encode()
    parts = [data[i:i + 50000] for i in range(0, len(data), 50000)]
    try:
        for n, p in enumerate(parts):
            ws.send_frame(OP_TEXT if n == 0 else OP_CONT, p, fin=(n == len(parts) - 1))
    except ConnectionClosed:
        pass
    assert_closed(ws, (1009,))


def test_close_code_payload_is_two_bytes_plus_reason(ws):
    """§1.4 (uexec): the echoed Close frame carries a valid status code."""
    ws.send_close(4000, b"custom")
    f = None
    while True:
        f = ws.recv_frame()
        if f.opcode == OP_CLOSE:
            break
    assert len(f.payload) >= 2
    code = struct.unpack("!H", f.payload[:2])[0]
    assert code in (4000, 1000)


def test_websocket_after_close_no_more_replies(ws):
    """§1.4: requests sent after our Close frame are not answered."""
    before = len(ws.data_frames)
    ws.send_close(1000)
    try:
        ws.send_text(STATUS % 70)
    except ConnectionClosed:
        pass
    how, _ = ws.wait_closed(20)
    assert how in ("close", "eof")
    assert len(ws.data_frames) == before


def test_raw_websocket_connect_helper(server):
    """Sanity: the raw client completes a handshake and exchanges a message before initialize."""
    ws = WebSocket.connect(server.url)
    ws.send_text(STATUS % 1)
    reply = recv_json(ws)
    assert reply["error"]["code"] == -32600
    ws.abort()


@pytest.mark.slow
def test_default_ping_interval(server):
    """§1.4: with default flags the server pings an idle connection about every 30 s."""
    c = server.connect()
    f = c.ws.recv_frame(45)
    while f.opcode != OP_PING:
        f = c.ws.recv_frame(45)
    assert f.payload == b""
    assert c.result("environment/status", None) == {"status": "ready"}
    c.ws.abort()
