# SPDX-License-Identifier: MIT
"""JSON-RPC envelope (PROTOCOL.md §3, §4)."""

import collections
import json

import pytest

import wsclient
from wsclient import ConnectionClosed

# the programs this module's processes run (skipped, with the names, where missing)
pytestmark = pytest.mark.needs_programs("/bin/true")

PARSE_PREFIX = "failed to parse websocket JSON-RPC message from exec-server websocket %s: "


def raw_reply(c, text, timeout=wsclient.DEFAULT_TIMEOUT):
    """Send raw text, return the next message (ordered dict) and its raw text."""
    c.ws.send_text(text)
    op, payload = c.ws.recv_message(timeout)
    return json.loads(payload, object_pairs_hook=collections.OrderedDict), payload.decode()


def parse_error(c, text):
    msg, _ = raw_reply(c, text)
    assert list(msg.keys()) == ["error", "id"]
    assert msg["id"] == -1
    assert msg["error"]["code"] == -32600
    assert set(msg["error"].keys()) == {"code", "message"}
    prefix = PARSE_PREFIX % c.ws.local_addr
    assert msg["error"]["message"].startswith(prefix), msg["error"]["message"]
    return msg["error"]["message"][len(prefix):]


def still_open(c):
    assert c.result("environment/status", None) == {"status": "ready"}


@pytest.mark.parametrize("idtext", ["1", "-7", "0", "9007199254740993", "9223372036854775807",
                                    "-9223372036854775808", '"s-1"', '""', '"\\u00e9 x"'])
def test_request_id_echoed_verbatim(sclient, idtext):
    """§3: integer (i64, negative, big) and string ids are echoed verbatim."""
    msg, raw = raw_reply(sclient, '{"id":%s,"method":"environment/status","params":null}' % idtext)
    assert msg["id"] == json.loads(idtext)
    if not idtext.startswith('"'):
        assert raw.startswith('{"id":%s,' % idtext)  # integers echoed digit for digit
    assert msg["result"] == {"status": "ready"}


@pytest.mark.parametrize("idtext", ["null", "1.5", "true", '{"a":1}', "[1]"])
def test_unparsable_request_id_gives_id_minus_one(sclient, idtext):
    """§3: null/float/bool/object ids -> id -1, -32600, RequestId detail."""
    detail = parse_error(sclient, '{"id":%s,"method":"environment/status"}' % idtext)
    assert detail == "data did not match any variant of untagged enum RequestId"
    still_open(sclient)


@pytest.mark.parametrize("idtext", ["9223372036854775808", "18446744073709551615"])
def test_out_of_range_request_id_gives_id_minus_one(sclient, idtext):
    """§3: integer ids >= 2^63 -> id -1 -32600 (detail may be the JSON parser's wording)."""
    parse_error(sclient, '{"id":%s,"method":"environment/status"}' % idtext)
    still_open(sclient)


def test_invalid_json_gives_id_minus_one(sclient):
    """§3: invalid JSON -> id -1 -32600 with the parse prefix; connection stays open."""
    parse_error(sclient, "{not json")
    still_open(sclient)


def test_truncated_json_gives_id_minus_one(sclient):
    """§3: truncated JSON -> id -1 -32600; connection stays open."""
    parse_error(sclient, '{"id":5,"method":"environment/status"')
    still_open(sclient)


def test_json_array_is_not_a_batch(sclient):
    """§3: a JSON array -> id -1 'expected a JSON-RPC object'."""
    assert parse_error(sclient, "[1,2,3]") == "expected a JSON-RPC object"
    still_open(sclient)


def test_batch_of_requests_rejected(sclient):
    """§3: no batch support, even for an array of valid requests."""
    detail = parse_error(sclient, '[{"id":1,"method":"environment/status"}]')
    assert detail == "expected a JSON-RPC object"
    still_open(sclient)


@pytest.mark.parametrize("text", ["42", '"str"', "null", "true"])
def test_non_object_gives_id_minus_one(sclient, text):
    """§3: a non-object JSON value -> id -1 -32600."""
    parse_error(sclient, text)
    still_open(sclient)


def test_id_only_object_missing_field_error(sclient):
    """§3: {"id":23} -> id -1 'missing field `error`'."""
    assert parse_error(sclient, '{"id":23}') == "missing field `error`"
    still_open(sclient)


def test_object_without_method_or_result(sclient):
    """§3: an object with neither method nor result/error -> id -1 -32600."""
    parse_error(sclient, '{"foo":1}')
    still_open(sclient)


def test_jsonrpc_member_ignored(sclient):
    """§3: a "jsonrpc" member in requests is ignored (any value)."""
    msg, raw = raw_reply(sclient, '{"id":20,"method":"environment/status","jsonrpc":"1.0"}')
    assert msg == {"id": 20, "result": {"status": "ready"}}
    assert "jsonrpc" not in raw


def test_success_member_order_and_no_jsonrpc(sclient):
    """§3: success replies are {"id","result"} in that order, without "jsonrpc"."""
    msg, raw = raw_reply(sclient, '{"id":21,"method":"environment/status"}')
    assert list(msg.keys()) == ["id", "result"]
    assert raw == '{"id":21,"result":{"status":"ready"}}'


def test_error_member_order_and_shape(sclient):
    """§3/§4: errors are {"error":{"code","message"},"id"} without data."""
    msg, raw = raw_reply(sclient, '{"id":22,"method":"no/such/method","params":{}}')
    assert list(msg.keys()) == ["error", "id"]
    assert list(msg["error"].keys()) == ["code", "message"]
    assert raw == ('{"error":{"code":-32601,"message":"exec-server stub does not implement '
                   '`no/such/method` yet"},"id":22}')


def test_spawn_error_kind_member_order(sclient):
    """0.171: a process/start spawn error carries data.kind, between code and message."""
    msg, raw = raw_reply(sclient, '{"id":23,"method":"process/start","params":{"processId":'
                         '"kind-order","argv":["/definitely/not/here"],"cwd":"/tmp","env":{},'
                         '"tty":false}}')
    assert raw == ('{"error":{"code":-32603,"data":{"kind":"spawnNotFound"},"message":'
                   '"No such file or directory (os error 2)"},"id":23}')


# process/resize answers -32601 on the reference but is a uexec extension
# (test_process_ext.py); the other names stay unknown.
@pytest.mark.parametrize("method", ["no/such/method", "process/kill",
                                    "shutdown", "exec", "process/output", "process/exited",
                                    "process/closed", "initialized", "fs/move",
                                    "http/request/bodyDelta"])
def test_unknown_method(sclient, method):
    """§4/§6: unknown methods -> -32601 'exec-server stub does not implement `m` yet'."""
    err = sclient.error(method, {})
    assert err == {"code": -32601,
                   "message": "exec-server stub does not implement `%s` yet" % method}


def test_unknown_method_without_params(sclient):
    """§4: the -32601 text is independent of params."""
    err = sclient.error("bogus")
    assert err == {"code": -32601, "message": "exec-server stub does not implement `bogus` yet"}


@pytest.mark.parametrize("method", ["environment/info", "environment/status"])
@pytest.mark.parametrize("params", ["absent", None, {}])
def test_unit_params_accepted(sclient, method, params):
    """§3: params absent, null or {} are accepted for environment/info and status."""
    if params == "absent":
        reply = sclient.call(method)
    else:
        reply = sclient.call(method, params)
    assert "result" in reply, reply


@pytest.mark.parametrize("method", ["environment/info", "environment/status"])
def test_unit_params_nonempty_map_rejected(sclient, method):
    """§3: a non-empty object -> -32602 'invalid type: map, expected unit'."""
    assert sclient.error(method, {"x": 1}) == {"code": -32602,
                                               "message": "invalid type: map, expected unit"}


@pytest.mark.parametrize("method", ["environment/info", "environment/status"])
def test_unit_params_array_rejected(sclient, method):
    """§3: an array -> -32602 'invalid type: sequence, expected unit'."""
    assert sclient.error(method, []) == {"code": -32602,
                                         "message": "invalid type: sequence, expected unit"}


def test_positional_params_array_for_struct(sclient):
    """§3: arrays are positional struct fields (serde): process/read ["x"]."""
    assert sclient.error("process/read", ["x"]) == {
        "code": -32602, "message": "invalid length 1, expected struct ReadParams with 4 elements"}


def test_unknown_params_members_ignored(sclient):
    """§3: unknown members inside params are ignored."""
    err = sclient.error("process/read", {"processId": "nope", "bogusField": 1})
    assert err == {"code": -32600, "message": "unknown process id nope"}


def test_nul_in_unknown_top_level_key_ignored(sclient):
    """§3: "\\u0000" in an object key is an ordinary character to serde; an
    unknown member with one is ignored, not a parse error (jansson alone
    refuses such keys)."""
    msg, _ = raw_reply(sclient, '{"id":1,"method":"environment/status","\\u0000":0,'
                                '"a\\u0000\\u0000b\\\\u0000":2,"\\ue000":3}')
    assert msg == {"id": 1, "result": {"status": "ready"}}
    still_open(sclient)


def test_nul_key_never_matches_a_field(sclient):
    """A key "method\\u0000" is not "method": the message has only an id, which
    serde classifies as a response missing `error`."""
    assert parse_error(sclient, '{"id":5,"method\\u0000":"environment/status"}') == \
        "missing field `error`"
    # "path\\u0000" is unknown and ignored whichever side of "path" it is.
    for text in ('{"path\\u0000":"file:///nonexistent","path":"file:///etc"}',
                 '{"path":"file:///etc","path\\u0000":"file:///nonexistent"}'):
        msg, _ = raw_reply(sclient, '{"id":9,"method":"fs/getMetadata","params":%s}' % text)
        assert msg["result"]["isDirectory"] is True, msg
    # Unit params with such a key are still a non-empty map.
    msg, _ = raw_reply(sclient, '{"id":4,"method":"environment/status","params":{"x\\u0000":1}}')
    assert msg["error"] == {"code": -32602, "message": "invalid type: map, expected unit"}


def test_nul_in_env_key_refused_like_a_nul_in_a_value(sclient):
    """An env name holding NUL cannot reach execve: the reference answers
    -32603 "data provided contains a nul byte", for `env` and envPolicy.set."""
    for env, extra in (('{"A\\u0000B":"x"}', ""),
                       ('{}', ',"envPolicy":{"inherit":"all","ignoreDefaultExcludes":true,'
                              '"exclude":[],"set":{"X\\u0000":"1"},"includeOnly":[]}')):
        msg, _ = raw_reply(sclient, '{"id":2,"method":"process/start","params":{"processId":"n",'
                                    '"argv":["/bin/true"],"cwd":"file:///tmp","env":%s,'
                                    '"tty":false,"arg0":null%s}}' % (env, extra))
        assert msg["error"] == {"code": -32603, "data": {"kind": "spawnFailed"},
                             "message": "data provided contains a nul byte"}
    assert sclient.error("process/read", {"processId": "n"})["code"] == -32600


def test_nul_in_open_mode_is_an_unknown_variant(sclient):
    """fs/open mode "read\\u0000" is not "read"; the error echoes the NUL."""
    for mode in ('"read\\u0000"', '{"replace\\u0000x":null}'):
        msg, _ = raw_reply(sclient, '{"id":3,"method":"fs/open","params":{"handleId":"h",'
                                    '"path":"file:///etc/hostname","mode":%s}}' % mode)
        want = "read\0" if mode.startswith('"') else "replace\0x"
        assert msg["error"] == {"code": -32602, "message": "unknown variant `%s`, expected "
                                                           "`read` or `replace`" % want}


def test_duplicate_ids_both_answered(sclient):
    """§3: duplicate in-flight ids are not checked; both requests get an answer."""
    sclient.request("environment/status", None, id=77)
    sclient.request("environment/info", None, id=77)
    a = sclient.wait_reply(77)
    b = sclient.wait_reply(77)
    results = [a["result"], b["result"]]
    assert {"status": "ready"} in results
    assert any("executorVersion" in r for r in results)


def test_pipelined_requests_answered_by_id(sclient):
    """§1.6: pipelined requests are all answered; replies matched by id."""
    ids = [sclient.request("environment/status", None) for _ in range(20)]
    ids.append(sclient.request("process/read", {"processId": "zz"}))
    for i in ids[:-1]:
        assert sclient.wait_reply(i)["result"] == {"status": "ready"}
    assert sclient.wait_reply(ids[-1])["error"]["code"] == -32600


def test_client_response_closes_connection(sclient):
    """§3: a response sent by the client closes the connection (no reply)."""
    sclient.ws.send_text('{"id":5,"result":{}}')
    how, code = sclient.ws.wait_closed(20)
    assert how in ("close", "eof")


def test_client_error_response_closes_connection(sclient):
    """§3: an error response sent by the client closes the connection too."""
    sclient.ws.send_text('{"id":5,"error":{"code":1,"message":"x"}}')
    how, code = sclient.ws.wait_closed(20)
    assert how in ("close", "eof")


@pytest.mark.parametrize("method", ["bogus/notification", "process/output", "environment/status"])
def test_stray_notification_closes_connection(sclient, method):
    """§2.1/§3: a client notification other than initialized closes the connection."""
    sclient.notify(method, {})
    how, code = sclient.ws.wait_closed(20)
    assert how in ("close", "eof")


def test_max_json_depth_exceeded_is_error_and_connection_stays_open(server_factory):
    """§3 (uexec --max-json-depth): too-deep JSON -> -32600 (id -1 or the request id)."""
    srv = server_factory("--max-json-depth", "16")
    c = srv.connect()
    deep = "[" * 40 + "]" * 40
    c.ws.send_text('{"id":9,"method":"environment/status","params":%s}' % deep)
    op, payload = c.ws.recv_message(20)
    msg = json.loads(payload)
    assert msg["id"] in (-1, 9)
    assert msg["error"]["code"] == -32600
    assert c.result("environment/status", None) == {"status": "ready"}
    c.ws.abort()


def test_json_within_depth_limit_ok(server_factory):
    """§3 (uexec --max-json-depth): nesting below the limit is parsed normally."""
    srv = server_factory("--max-json-depth", "16")
    c = srv.connect()
    nested = {"a": {"b": {"c": {"d": 1}}}}
    err = c.error("process/read", {"processId": "nope", "extra": nested})
    assert err == {"code": -32600, "message": "unknown process id nope"}
    c.ws.abort()


def test_huge_integer_in_params_handled(sclient):
    """§6.7/§3: afterSeq beyond u64 is an error reply (params error or parse error), not a crash."""
    sclient.ws.send_text('{"id":31,"method":"process/read","params":'
                         '{"processId":"x","afterSeq":1000000000000000000000000000000}}')
    op, payload = sclient.ws.recv_message(20)
    msg = json.loads(payload)
    assert msg["id"] in (31, -1)
    assert msg["error"]["code"] in (-32602, -32600)
    still_open(sclient)


def test_nul_in_process_id_is_part_of_the_id(sclient):
    """§5.3: processIds "a\u0000b" and "a\u0000c" are distinct ids."""
    for pid in ("a\u0000b", "a\u0000c"):
        assert sclient.start(pid, ["/bin/true"])["processId"] == pid
        assert sclient.collect(pid).exit_code == 0
    assert sclient.terminate("a") == {"running": False}


def test_nul_and_escapes_echoed_in_error_message(sclient):
    """§3/§6.7: the id is echoed intact in 'unknown process id <id>' (NUL, surrogate pairs)."""
    err = sclient.error("process/read", {"processId": "a\u0000b\U0001F600"})
    assert err["code"] == -32600
    assert err["message"] == "unknown process id a\u0000b\U0001F600"


def test_long_process_id_echoed_in_error_message(sclient):
    """§5.3/§6.7: a 5000-character processId is echoed completely in the error message."""
    pid = "p" * 5000
    assert sclient.error("process/read", {"processId": pid}) == {
        "code": -32600, "message": "unknown process id " + pid}


def test_connection_survives_many_parse_errors(sclient):
    """§3: parse errors never close the connection."""
    for _ in range(20):
        parse_error(sclient, "}")
    still_open(sclient)


def test_notification_after_close_detection(sclient):
    """§3: after a stray notification the server does not answer further requests."""
    sclient.notify("bogus", {})
    before = len(sclient.ws.data_frames)
    try:
        sclient.ws.send_text('{"id":99,"method":"environment/status"}')
    except ConnectionClosed:
        pass
    how, _ = sclient.ws.wait_closed(20)
    assert how in ("close", "eof")
    assert len(sclient.ws.data_frames) == before
