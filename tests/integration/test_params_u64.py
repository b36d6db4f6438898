"""Integers in params as serde reads them: u64 up to 2^64 - 1, f64 beyond (issue 11)."""
import json



def raw_reply(c, text):
    """Sends text as is; returns the reply (notifications in between are skipped)."""
    c.ws.send_text(text)
    while True:
        msg = json.loads(c.ws.recv_text(10))
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
