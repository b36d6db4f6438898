"""Integers in params as serde reads them: u64 up to 2^64 - 1, f64 beyond (issue 11)."""
import json

import pytest

import conftest
import wsclient
from wsclient import file_uri



def raw_reply(c, text):
    """Sends text as is; returns the reply (notifications in between are skipped)."""
    c.ws.send_text(text)
    while True:
        msg = json.loads(c.ws.recv_text(wsclient.DEFAULT_TIMEOUT))
        if "id" in msg:
            return msg


def test_after_seq_from_two_to_the_63_is_a_u64(sclient, uniq):
    """afterSeq 2^63 and 2^64 - 1 are valid u64s: nothing after them, no error."""
    pid = uniq()
    sclient.start(pid, ["/bin/echo", "hi"])
    for big in (2**63, 2**64 - 1):
        msg = raw_reply(sclient, '{"id":7,"method":"process/read","params":{"processId":"%s",'
                                 '"afterSeq":%d,"waitMs":0}}' % (pid, big))
        assert "error" not in msg, msg
        assert msg["result"]["chunks"] == [], msg


def test_max_bytes_u64_max_reads_like_a_large_limit(sclient, uniq):
    pid = uniq()
    sclient.start(pid, ["/bin/echo", "hello"])
    for _ in range(200):  # until every stream is closed, so both reads see the same
        plain = raw_reply(sclient, '{"id":8,"method":"process/read","params":{"processId":"%s",'
                                   '"waitMs":50}}' % pid)
        if plain["result"]["closed"]:
            break
    assert plain["result"]["closed"], plain
    limited = raw_reply(sclient, '{"id":8,"method":"process/read","params":{"processId":"%s",'
                                 '"maxBytes":1099511627776,"waitMs":0}}' % pid)
    big = raw_reply(sclient, '{"id":8,"method":"process/read","params":{"processId":"%s",'
                             '"maxBytes":18446744073709551615,"waitMs":0}}' % pid)
    assert "error" not in big, big
    assert big["result"] == limited["result"]
    assert big["result"]["chunks"] == plain["result"]["chunks"] != []


def test_beyond_u64_is_not_an_integer(sclient, uniq):
    """2^64 is read as an f64 (and -2^63 - 1 too): a type error, as for 1.5."""
    pid = uniq()
    sclient.start(pid, ["/bin/true"])
    want = raw_reply(sclient, '{"id":9,"method":"process/read","params":{"processId":"%s",'
                              '"afterSeq":1.5}}' % pid)["error"]
    for text in ("18446744073709551616", "-9223372036854775809", "1" + "0" * 30):
        msg = raw_reply(sclient, '{"id":9,"method":"process/read","params":{"processId":"%s",'
                                 '"afterSeq":%s}}' % (pid, text))
        assert msg["error"] == want, (text, msg)


def test_big_u64_in_a_string_field_is_a_number(sclient):
    """A big u64 where a string belongs gets the error of any other integer there."""
    want = raw_reply(sclient, '{"id":10,"method":"process/read","params":{"processId":5}}')
    msg = raw_reply(sclient, '{"id":10,"method":"process/read","params":{"processId":'
                             '9223372036854775808}}')
    assert msg["error"] == want["error"], msg


def test_negative_and_big_in_one_message_stay_apart(sclient, uniq):
    """-1 next to 2^64 - 1 (the same bits as a long long): -1 is still negative."""
    pid = uniq()
    sclient.start(pid, ["/bin/true"])
    msg = raw_reply(sclient, '{"id":11,"method":"process/read","params":{"processId":"%s",'
                             '"afterSeq":18446744073709551615,"maxBytes":-1}}' % pid)
    assert msg["error"]["code"] == -32602, msg


def test_big_request_id_is_refused(sclient):
    msg = raw_reply(sclient, '{"id":9223372036854775808,"method":"environment/status"}')
    assert msg["id"] == -1 and msg["error"]["code"] == -32600, msg


WALK_SANDBOX = {
    "permissions": {"type": "managed", "file_system": {"type": "restricted", "entries": [
        {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"}]},
        "network": "restricted"},
    "cwd": "file:///tmp", "windowsSandboxLevel": "disabled"}


@pytest.mark.parametrize("sandboxed", [False, True], ids=["direct", "fs-helper"])
def test_walk_limits_beyond_i64(sclient, tmp_path, sandboxed):
    """fs/walk limits of 2^64 - 1 are valid usizes, refused only by the walk's own
    maximums; also when the request is forwarded to the sandboxed fs helper (which
    gets them as i64::MAX), not as a decoding error."""
    if sandboxed:
        conftest.HOST.require("sandbox")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_bytes(b"x")
    top = 2**64 - 1
    sb = ',"sandbox":%s' % json.dumps(WALK_SANDBOX) if sandboxed else ""
    msg = raw_reply(sclient, '{"id":12,"method":"fs/walk","params":{"path":%s,"options":'
                             '{"maxDepth":%d,"maxDirectories":%d,"maxEntries":%d,'
                             '"followDirectorySymlinks":false}%s}}'
                    % (json.dumps(file_uri(str(tmp_path))), top, top, top, sb))
    assert msg["error"] == {"code": -32600, "message": "filesystem walk limits exceed maximums: "
                                                       "depth=64, directories=10000, entries=50000"}


@pytest.mark.parametrize("text", ["1.5", "-1", "1e3", "18446744073709551616", "-9223372036854775809"])
def test_numbers_that_are_no_u64(sclient, uniq, text):
    """As probed on the reference: every JSON number that is no u64 (negative, fractional,
    exponent form, beyond 2^64) gets -32602 "invalid number" for a u64 field."""
    pid = uniq()
    sclient.start(pid, ["/bin/true"])
    msg = raw_reply(sclient, '{"id":13,"method":"process/read","params":{"processId":"%s",'
                             '"afterSeq":%s}}' % (pid, text))
    assert msg["error"] == {"code": -32602, "message": "invalid number"}, msg


def test_walk_limit_beyond_u64_is_invalid_number(sclient, tmp_path):
    msg = raw_reply(sclient, '{"id":14,"method":"fs/walk","params":{"path":%s,"options":'
                             '{"maxDepth":18446744073709551616,"maxDirectories":1,'
                             '"maxEntries":1,"followDirectorySymlinks":false}}}'
                    % json.dumps(file_uri(str(tmp_path))))
    assert msg["error"] == {"code": -32602, "message": "invalid number"}, msg
