# SPDX-License-Identifier: MIT
"""Wire parity with the reference exec-server 0.169.0 on edge cases the differential
test found (tests/reference/steps.py: envelope_keys_numbers, params_process, params_nested,
process_start_edges, fs_handle_errors, fs_nofollow). Each expectation is the reference's
answer, byte for byte in the error objects."""

import base64
import os

import pytest

from wsclient import file_uri

pytestmark = pytest.mark.needs_programs("/bin/true")

PARSE_PREFIX = "failed to parse websocket JSON-RPC message from exec-server websocket %s: "


def raw_call(c, text, rid):
    """Send raw text, wait for the reply with id rid (-1 for parse errors)."""
    c.send_raw(text)
    return c.wait_reply(rid)


def parse_error_detail(c, text):
    reply = raw_call(c, text, -1)
    assert set(reply) == {"error", "id"}
    assert reply["error"]["code"] == -32600
    prefix = PARSE_PREFIX % c.ws.local_addr
    assert reply["error"]["message"].startswith(prefix), reply["error"]["message"]
    return reply["error"]["message"][len(prefix):]


def still_open(c):
    assert c.result("environment/status", None) == {"status": "ready"}


# ---- envelope: repeated keys (the reference's map refuses them, first one in text order)

DUPLICATES = [
    ('{"id":41,"id":42,"method":"environment/status"}',
     "duplicate JSON object key `id` at line 1 column 13"),
    ('{"id":1,"method":"environment/status","params":{"a":1,"a":2}}',
     "duplicate JSON object key `a` at line 1 column 57"),
    ('{"id":2,"method":"process/read","params":{"processId":"x","afterSeq":1,"afterSeq":2}}',
     "duplicate JSON object key `afterSeq` at line 1 column 81"),
    ('{"id":5,"jsonrpc":"2.0","jsonrpc":"2.0","method":"environment/status"}',
     "duplicate JSON object key `jsonrpc` at line 1 column 33"),
    ('{"id":6,"method":"environment/status","params":{"a":1,"\\u0061":2}}',
     "duplicate JSON object key `a` at line 1 column 62"),
    ('{"id":7,"method":"environment/status","params":{"\\u0000":1,"\\u0000":2}}',
     "duplicate JSON object key `\u0000` at line 1 column 67"),
    # streaming: the repeat is found before the later syntax error
    ('{"id":8,"method":"environment/status","params":{"a":1,"a":2,}}',
     "duplicate JSON object key `a` at line 1 column 57"),
    ('{"id":9,"method":"environment/status","params":{"a":{"b":1},"a":[1,}}',
     "duplicate JSON object key `a` at line 1 column 63"),
    ('{"id":3,\n"env":{"A":"1",\n  "A":"2"}}', "duplicate JSON object key `A` at line 3 column 5"),
]


@pytest.mark.parametrize("text,detail", DUPLICATES, ids=range(len(DUPLICATES)))
def test_repeated_key_is_a_parse_error(sclient, text, detail):
    assert parse_error_detail(sclient, text) == detail
    still_open(sclient)


def test_keys_repeat_only_within_one_object(sclient):
    detail = parse_error_detail(sclient, '{"id":10,"method":"environment/status","params":'
                                         '{"a":{"b":1,"c":2},"b":1,"c":{"a":1,"a":2}}}')
    assert detail == "duplicate JSON object key `a` at line 1 column 87"
    # the same names in sibling and nested objects are no repeat
    reply = raw_call(sclient, '{"id":11,"method":"environment/status","params":'
                              '{"a":{"b":1,"c":2},"b":1,"c":{"a":1}}}', 11)
    assert reply["error"] == {"code": -32602, "message": "invalid type: map, expected unit"}


def test_repeated_env_name_starts_nothing(sclient, tmp_path):
    marker = tmp_path / "ran"
    text = ('{"id":4,"method":"process/start","params":{"processId":"dup-env","argv":'
            '["/bin/sh","-c","touch %s"],"cwd":"%s","env":{"A":"1","A":"2"},"tty":false}}'
            % (marker, file_uri(str(tmp_path))))
    assert parse_error_detail(sclient, text).startswith("duplicate JSON object key `A` at line 1")
    assert sclient.error("process/read", {"processId": "dup-env"}) == {
        "code": -32600, "message": "unknown process id dup-env"}
    assert not marker.exists()


# ---- envelope: numbers beyond f64 are values; ids beyond 64 bits; method types

def test_number_beyond_f64_is_a_value(sclient):
    reply = raw_call(sclient, '{"id":11,"method":"environment/status","params":{"x":1e999}}', 11)
    assert reply["error"] == {"code": -32602, "message": "invalid type: map, expected unit"}
    reply = raw_call(sclient, '{"id":12,"method":"process/read","params":'
                              '{"processId":"x","afterSeq":1e400}}', 12)
    assert reply["error"] == {"code": -32602, "message": "invalid number"}
    reply = raw_call(sclient, '{"id":13,"method":"process/read","params":{"processId":"x",'
                              '"afterSeq":1%s}}' % ("0" * 400), 13)
    assert reply["error"] == {"code": -32602, "message": "invalid number"}
    reply = raw_call(sclient, '{"id":14,"method":"process/read","params":{"processId":-1e999}}',
                     14)
    assert reply["error"] == {"code": -32602, "message": "invalid type: number, expected a string"}
    assert parse_error_detail(sclient, '{"id":1e999,"method":"environment/status"}') == \
        "data did not match any variant of untagged enum RequestId"


ID_DETAILS = [
    ("-9223372036854775809",
     "invalid type: integer `-9223372036854775809` as i128, expected any value"),
    ("18446744073709551616",
     "invalid type: integer `18446744073709551616` as u128, expected any value"),
    ("340282366920938463463374607431768211455",
     "invalid type: integer `340282366920938463463374607431768211455` as u128, "
     "expected any value"),
    ("-170141183460469231731687303715884105728",
     "invalid type: integer `-170141183460469231731687303715884105728` as i128, "
     "expected any value"),
    # beyond 128 bits, and u64s from 2^63 (no i64): the enum's own message
    ("340282366920938463463374607431768211456",
     "data did not match any variant of untagged enum RequestId"),
    ("-170141183460469231731687303715884105729",
     "data did not match any variant of untagged enum RequestId"),
    ("18446744073709551615", "data did not match any variant of untagged enum RequestId"),
]


def test_request_id_beyond_64_bits(sclient):
    got = [(idtext, parse_error_detail(sclient, '{"method":"environment/status","id":%s}'
                                       % idtext)) for idtext, _ in ID_DETAILS]
    assert got == ID_DETAILS


@pytest.mark.parametrize("method,what", [("5", "number"), ("null", "null"),
                                         ("true", "boolean `true`"), ("[]", "sequence"),
                                         ("{}", "map")])
def test_method_of_the_wrong_type(sclient, method, what):
    assert parse_error_detail(sclient, '{"id":44,"method":%s}' % method) == \
        "invalid type: %s, expected a string" % what


def test_method_name_with_nul_is_unknown_and_quoted_whole(sclient):
    reply = raw_call(sclient, '{"id":23,"method":"environment/status\\u0000"}', 23)
    assert reply["error"] == {
        "code": -32601,
        "message": "exec-server stub does not implement `environment/status\u0000` yet"}
    reply = raw_call(sclient, '{"id":24,"method":"process\\u0000/start","params":{}}', 24)
    assert reply["error"]["message"] == \
        "exec-server stub does not implement `process\u0000/start` yet"


# ---- params decoding

@pytest.mark.parametrize("method,params,message", [
    ("process/read", ["x", 0, None, None, 1], "invalid length 5, expected fewer elements in array"),
    ("process/terminate", ["x", 1], "invalid length 2, expected fewer elements in array"),
    ("process/terminate", [], "invalid length 0, expected struct TerminateParams with 1 element"),
])
def test_positional_params(sclient, method, params, message):
    assert sclient.error(method, params) == {"code": -32602, "message": message}


def test_second_initialize_decodes_its_params_first(sclient):
    assert sclient.error("initialize", []) == {
        "code": -32602, "message": "invalid length 0, expected struct InitializeParams with 2 elements"}
    assert sclient.error("initialize", {}) == {"code": -32602,
                                               "message": "missing field `clientName`"}
    assert sclient.error("initialize", {"clientName": "x", "resumeSessionId": 5}) == {
        "code": -32602, "message": "invalid type: number, expected a string"}
    assert sclient.error("initialize", {"clientName": "x"}) == {
        "code": -32600, "message": "initialize may only be sent once per connection"}


def start_params(pid, tmp_path, **extra):
    p = {"processId": pid, "argv": ["/bin/true"], "cwd": file_uri(str(tmp_path)), "env": {},
         "tty": False}
    p.update(extra)
    return p


@pytest.mark.parametrize("field", ["pipeStdin", "enforceManagedNetwork"])
def test_default_bools_refuse_null(sclient, tmp_path, uniq, field):
    """#[serde(default)] bool: absent is false, null is a type error."""
    assert sclient.error("process/start", start_params(uniq(), tmp_path, **{field: None})) == {
        "code": -32602, "message": "invalid type: null, expected a boolean"}


@pytest.mark.parametrize("field,struct,n", [
    ("envPolicy", "ExecEnvPolicy", 5), ("sandbox", "WireFileSystemSandboxContext", 10)])
def test_nested_struct_as_empty_sequence(sclient, tmp_path, uniq, field, struct, n):
    assert sclient.error("process/start", start_params(uniq(), tmp_path, **{field: []})) == {
        "code": -32602,
        "message": "invalid length 0, expected struct %s with %d elements" % (struct, n)}


@pytest.mark.parametrize("field", ["metadata", "managedNetwork"])
def test_all_default_struct_as_empty_sequence_is_accepted(sclient, tmp_path, uniq, field):
    pid = uniq()
    assert sclient.result("process/start", start_params(pid, tmp_path, **{field: []})) == {
        "processId": pid, "sandboxType": "none"}
    assert sclient.collect(pid).exit_code == 0


def test_fs_sandbox_as_empty_sequence(sclient, tmp_path):
    assert sclient.error("fs/readFile", {"path": file_uri(str(tmp_path)), "sandbox": []}) == {
        "code": -32602,
        "message": "invalid length 0, expected struct WireFileSystemSandboxContext with 10 elements"}


SIGNAL_FORMS = [
    ({}, "invalid value: map, expected map with a single key"),
    ({"a": None, "b": None}, "invalid value: map, expected map with a single key"),
    ({"foo": None}, "unknown variant `foo`, expected `interrupt`"),
    ({"interrupt": {}}, "invalid type: map, expected unit"),
    ({"interrupt": 1}, "invalid type: number, expected unit"),
    ("inter\u0000rupt", "unknown variant `inter\u0000rupt`, expected `interrupt`"),
    (None, "invalid type: null, expected string or map"),
]


def test_signal_enum_forms(sclient):
    got = [(signal, sclient.error("process/signal", {"processId": "n", "signal": signal}))
           for signal, _ in SIGNAL_FORMS]
    assert got == [(signal, {"code": -32602, "message": m}) for signal, m in SIGNAL_FORMS]


def test_signal_map_form_interrupts(sclient, tmp_path, uniq):
    pid = uniq()
    sclient.result("process/start", start_params(
        pid, tmp_path, argv=["/bin/sh", "-c", "trap 'exit 7' INT; echo ready; "
                                             "while :; do sleep 0.05; done"],
        env={"PATH": "/usr/bin:/bin"}))
    sclient.next_notification("process/output", pred=lambda p: p["processId"] == pid)
    assert sclient.result("process/signal", {"processId": pid,
                                             "signal": {"interrupt": None}}) == {}
    assert sclient.collect(pid).exit_code == 7


def test_open_mode_enum_forms(sclient, tmp_path):
    forms = [({}, "invalid value: map, expected map with a single key"),
             ({"a": None, "b": None}, "invalid value: map, expected map with a single key"),
             ({"foo": None}, "unknown variant `foo`, expected `read` or `replace`")]
    got = [(mode, sclient.error("fs/open", {"handleId": "m", "mode": mode,
                                            "path": file_uri(str(tmp_path / "x"))}))
           for mode, _ in forms]
    assert got == [(mode, {"code": -32602, "message": m}) for mode, m in forms]


def test_watch_missing_requires_missing(sclient):
    assert sclient.error("fs/watchMissing", {"watchId": 7}) == {
        "code": -32602, "message": "missing field `missing`"}
    assert sclient.error("fs/watchMissing", {"watchId": 8, "missing": None}) == {
        "code": -32602, "message": "invalid type: null, expected a sequence"}
    # neither registered an id: a later, lower id still installs a watch
    assert sclient.result("fs/watchMissing", {"watchId": 1, "missing": ["file:///nonexistent-"
                                                                        "uexec-parity"]}) == {
        "watching": True}


# ---- process/start spawn errors (0.171: with data.kind, as the reference 0.171.0 sends them)

def test_nul_in_argv_or_arg0(sclient, tmp_path, uniq):
    for extra in ({"argv": ["/bin/true", "a\u0000b"]}, {"arg0": "a\u0000b"}):
        assert sclient.error("process/start", start_params(uniq(), tmp_path, **extra)) == {
            "code": -32603, "data": {"kind": "spawnFailed"}, "message": "nul byte found in provided data"}
    # a NUL in the environment keeps its own wording
    assert sclient.error("process/start", start_params(uniq(), tmp_path,
                                                       env={"A": "x\u0000y"})) == {
        "code": -32603, "data": {"kind": "spawnFailed"}, "message": "data provided contains a nul byte"}


@pytest.mark.parametrize("tty,kind", [(False, "pipe"), (True, "PTY")])
def test_empty_program(sclient, tmp_path, uniq, tty, kind):
    assert sclient.error("process/start", start_params(uniq(), tmp_path, argv=[""], tty=tty)) == {
        "code": -32603, "data": {"kind": "spawnFailed"}, "message": "missing program for %s spawn" % kind}


# ---- fs/open handles

def b64(data):
    return base64.b64encode(data).decode()


def test_read_block_len_and_write_block_chunk_are_required(sclient, tmp_path):
    (tmp_path / "f").write_bytes(b"hello")
    sclient.result("fs/open", {"handleId": "r", "path": file_uri(str(tmp_path / "f"))})
    assert sclient.error("fs/readBlock", {"handleId": "r", "offset": 0}) == {
        "code": -32602, "message": "missing field `len`"}
    assert sclient.error("fs/readBlock", {"handleId": "r", "offset": 0, "len": None}) == {
        "code": -32602, "message": "invalid type: null, expected usize"}
    sclient.result("fs/open", {"handleId": "w", "path": file_uri(str(tmp_path / "o")),
                               "mode": "replace"})
    assert sclient.error("fs/writeBlock", {"handleId": "w", "offset": 0}) == {
        "code": -32602, "message": "missing field `chunk`"}
    assert sclient.error("fs/writeBlock", {"handleId": "w", "offset": 0, "chunk": None}) == {
        "code": -32602, "message": "invalid type: null, expected a string"}


def test_write_block_checks_the_block_before_the_handle(sclient, tmp_path):
    limit = "file write block length must be between 1 and 1048576"
    rng = "file write range exceeds the signed 64-bit file offset limit"
    for hid in ("none", "w"):
        if hid == "w":
            sclient.result("fs/open", {"handleId": "w", "path": file_uri(str(tmp_path / "o")),
                                       "mode": "replace"})
        assert sclient.error("fs/writeBlock", {"handleId": hid, "offset": 0, "chunk": ""}) == {
            "code": -32600, "message": limit}
        assert sclient.error("fs/writeBlock", {"handleId": hid, "offset": 2**63 - 1,
                                               "chunk": b64(b"x")}) == {
            "code": -32600, "message": rng}
        assert sclient.error("fs/writeBlock", {"handleId": hid, "offset": 2**63 - 2,
                                               "chunk": b64(b"xy")}) == {
            "code": -32600, "message": rng}
        assert sclient.error("fs/writeBlock", {"handleId": hid, "offset": 0,
                                               "chunk": b64(b"x" * (1048576 + 1))}) == {
            "code": -32600, "message": limit}
    # the handle survived those refusals
    assert sclient.result("fs/writeBlock", {"handleId": "w", "offset": 0,
                                            "chunk": b64(b"ok")}) == {}
    assert (tmp_path / "o").read_bytes() == b"ok"


@pytest.mark.parametrize("offset", [2**63 - 1, 2**63, 2**64 - 1])
def test_read_block_offset_beyond_loff_t(sclient, tmp_path, offset):
    """pread's EINVAL (-32600, Rust's InvalidInput), never data from the file position."""
    (tmp_path / "f").write_bytes(b"hello")
    sclient.result("fs/open", {"handleId": "r", "path": file_uri(str(tmp_path / "f"))})
    assert sclient.error("fs/readBlock", {"handleId": "r", "offset": offset, "len": 1}) == {
        "code": -32600, "message": "Invalid argument (os error 22)"}


def test_failed_read_block_drops_the_handle(sclient, tmp_path):
    (tmp_path / "f").write_bytes(b"hello")
    uri = file_uri(str(tmp_path / "f"))
    sclient.result("fs/open", {"handleId": "r", "path": uri})
    sclient.error("fs/readBlock", {"handleId": "r", "offset": 2**63 - 1, "len": 1})
    assert sclient.error("fs/readBlock", {"handleId": "r", "offset": 0, "len": 1}) == {
        "code": -32004, "message": "unknown file handle `r`"}
    # its id is free again
    assert sclient.result("fs/open", {"handleId": "r", "path": uri}) == {"handleId": "r"}
    assert sclient.result("fs/readBlock", {"handleId": "r", "offset": 0, "len": 2}) == {
        "chunk": b64(b"he"), "eof": False}
    # a read on a replace handle (EBADF) drops it too; a refused write does not
    sclient.result("fs/open", {"handleId": "w", "path": file_uri(str(tmp_path / "o")),
                               "mode": "replace"})
    assert sclient.error("fs/readBlock", {"handleId": "w", "offset": 0, "len": 1}) == {
        "code": -32603, "message": "Bad file descriptor (os error 9)"}
    assert sclient.error("fs/writeBlock", {"handleId": "w", "offset": 0, "chunk": b64(b"x")}) == {
        "code": -32004, "message": "unknown file handle `w`"}
    assert sclient.error("fs/writeBlock", {"handleId": "r", "offset": 0, "chunk": b64(b"x")}) == {
        "code": -32603, "message": "Bad file descriptor (os error 9)"}
    assert sclient.result("fs/readBlock", {"handleId": "r", "offset": 0, "len": 1}) == {
        "chunk": b64(b"h"), "eof": False}


# ---- followSymlinks: false walks the directories without following

@pytest.fixture
def linked(tmp_path):
    (tmp_path / "ld").mkdir()
    (tmp_path / "ld" / "q").write_bytes(b"q\n")
    os.symlink("ld", tmp_path / "lk")
    (tmp_path / "f").write_bytes(b"file\n")
    return tmp_path


def test_nofollow_symlink_among_the_directories_is_enotdir(sclient, linked):
    via = file_uri(str(linked / "lk" / "q"))
    enotdir = {"code": -32603, "message": "Not a directory (os error 20)"}
    assert sclient.error("fs/readFile", {"path": via, "followSymlinks": False}) == enotdir
    assert sclient.error("fs/writeFile", {"path": via, "dataBase64": "",
                                          "followSymlinks": False}) == enotdir
    assert sclient.error("fs/getMetadata", {"path": via, "followSymlinks": False}) == enotdir
    assert sclient.error("fs/createDirectory", {"path": file_uri(str(linked / "lk" / "new")),
                                                "followSymlinks": False}) == enotdir
    assert sclient.error("fs/remove", {"path": via, "followSymlinks": False,
                                       "recursive": False}) == enotdir
    assert (linked / "ld" / "q").read_bytes() == b"q\n"      # neither truncated nor removed
    assert not (linked / "ld" / "new").exists()
    # following, the same paths work
    assert sclient.result("fs/readFile", {"path": via}) == {"dataBase64": b64(b"q\n")}


def test_nofollow_non_regular_file(sclient, linked):
    msg = {"code": -32600, "message": "path is not a regular file"}
    assert sclient.error("fs/readFile", {"path": file_uri(str(linked / "ld")),
                                         "followSymlinks": False}) == msg
    assert sclient.error("fs/readFile", {"path": "file:///dev/null",
                                         "followSymlinks": False}) == msg
    assert sclient.error("fs/writeFile", {"path": "file:///dev/null", "dataBase64": "",
                                          "followSymlinks": False}) == msg
    # following, the texts stay the reference's other wording
    assert sclient.error("fs/readFile", {"path": file_uri(str(linked / "ld"))}) == {
        "code": -32600, "message": "path `%s` is not a file" % (linked / "ld")}


def test_nofollow_create_directory_on_a_non_directory(sclient, linked):
    enotdir = {"code": -32603, "message": "Not a directory (os error 20)"}
    for name in ("f", "lk"):
        assert sclient.error("fs/createDirectory", {"path": file_uri(str(linked / name)),
                                                    "followSymlinks": False}) == enotdir
    assert sclient.result("fs/createDirectory", {"path": file_uri(str(linked / "ld")),
                                                 "followSymlinks": False}) == {}
    assert sclient.result("fs/createDirectory", {"path": file_uri(str(linked / "n1" / "n2")),
                                                 "followSymlinks": False}) == {}
    assert (linked / "n1" / "n2").is_dir()
    assert sclient.error("fs/createDirectory", {"path": file_uri(str(linked / "f"))}) == {
        "code": -32603, "message": "File exists (os error 17)"}


# ---- tty:true starts resolve like the reference's PTY library (portable-pty)

@pytest.fixture
def ptree(tmp_path):
    (tmp_path / "bin" / "dirprog").mkdir(parents=True)
    (tmp_path / "bin" / "noexec").write_bytes(b"x")
    tool = tmp_path / "bin" / "tool"
    tool.write_bytes(b"#!/bin/sh\necho tool-ran\n")
    tool.chmod(0o755)
    return tmp_path


def pty_start(c, pid, argv, env, cwd):
    return c.call("process/start", {"processId": pid, "argv": argv, "cwd": file_uri(str(cwd)),
                                    "env": env, "tty": True})


@pytest.mark.needs_programs("/bin/sh")
def test_pty_program_lookup_texts(sclient, ptree, uniq):
    b = str(ptree / "bin")
    cases = [
        (["./bin/dirprog"], {}, "Unable to spawn %s/./bin/dirprog because it is a directory"
         % ptree),
        (["./bin/noexec"], {}, "Unable to spawn %s/./bin/noexec because it is not executable"
         % ptree),
        (["./bin/missing"], {}, "Unable to spawn %s/./bin/missing because it does not exist"
         % ptree),
        (["nope-prog"], {}, "Unable to spawn nope-prog because:\nUnable to resolve the PATH"),
        (["sh"], {}, "Unable to spawn sh because:\nUnable to resolve the PATH"),
        (["noexec"], {"PATH": b}, "Unable to spawn noexec because:\n%s/noexec exists but is not "
         "executable.\nNo viable candidates found in PATH \"%s\"" % (b, b)),
        (["dirprog"], {"PATH": b + ":/nonexist"}, "Unable to spawn dirprog because:\n%s/dirprog "
         "exists but is a directory.\nNo viable candidates found in PATH \"%s:/nonexist\""
         % (b, b)),
        (["bin/tool"], {"PATH": "/usr/bin"},
         "Unable to spawn bin/tool because:\nNo viable candidates found in PATH \"/usr/bin\""),
        (["x"], {"PATH": "a\"b\\c\td"},
         "Unable to spawn x because:\nNo viable candidates found in PATH \"a\\\"b\\\\c\\td\""),
    ]
    got = [(argv, pty_start(sclient, uniq(), argv, env, ptree).get("error"))
           for argv, env, _ in cases]
    assert got == [(argv, {"code": -32603, "data": {"kind": "spawnFailed"}, "message": m})
                   for argv, _, m in cases]
    # and what it finds: relative PATH entries and names are joined to the directory
    for argv, env in ((["tool"], {"PATH": "bin"}), (["tool"], {"PATH": ":bin"}),
                      (["bin/tool"], {"PATH": ""}), (["./bin/tool"], {})):
        pid = uniq()
        assert pty_start(sclient, pid, argv, env, ptree)["result"]["processId"] == pid
        run = sclient.collect(pid)
        assert (run.exit_code, run.pty) == (0, b"tool-ran\r\n")
    # pipes keep std::process::Command's lookup
    assert sclient.error("process/start", {"processId": uniq(), "argv": ["noexec"],
                                           "cwd": file_uri(str(ptree)), "env": {"PATH": b},
                                           "tty": False}) == {
        "code": -32603, "data": {"kind": "spawnPermissionDenied"},
        "message": "Permission denied (os error 13)"}


@pytest.mark.needs_programs("/bin/sh")
def test_pty_cwd_that_is_no_directory_falls_back_to_home(sclient, ptree, uniq):
    for cwd in (ptree / "missing", ptree / "bin" / "tool"):
        pid = uniq()
        assert "result" in pty_start(sclient, pid, ["/bin/sh", "-c", "pwd"],
                                     {"HOME": str(ptree / "bin")}, cwd)
        run = sclient.collect(pid)
        assert (run.exit_code, run.pty) == (0, (str(ptree / "bin") + "\r\n").encode())
    # HOME that is a file: the start fails where the child changes into it
    assert pty_start(sclient, uniq(), ["/bin/sh", "-c", "pwd"],
                     {"HOME": str(ptree / "bin" / "noexec")}, ptree / "missing")["error"] == {
        "code": -32603, "data": {"kind": "spawnFailed"}, "message": "Not a directory (os error 20)"}
    # pipes still refuse a missing cwd
    assert sclient.error("process/start", {"processId": uniq(), "argv": ["/bin/true"],
                                           "cwd": file_uri(str(ptree / "missing")), "env": {},
                                           "tty": False}) == {
        "code": -32603, "data": {"kind": "spawnNotFound"},
        "message": "No such file or directory (os error 2)"}


# ---- file: URIs

def test_uri_with_a_nul_is_refused_not_cut(sclient, tmp_path, uniq):
    """A "\\u0000" inside the URI string is percent-encoded, then refused like %00; the
    cwd of process/start was cut at the NUL (and the process ran elsewhere)."""
    (tmp_path / "a").mkdir()
    uri = file_uri(str(tmp_path / "a")) + "\u0000b"
    enc = file_uri(str(tmp_path / "a")) + "%00b"
    msg = {"code": -32602, "message": "'%s' is invalid on 'linux'" % enc}
    assert sclient.error("fs/getMetadata", {"path": uri}) == msg
    assert sclient.error("process/start", {"processId": uniq(), "argv": ["/bin/true"],
                                           "cwd": uri, "env": {}, "tty": False}) == msg
    # at both ends it is trimmed like any C0 control
    assert sclient.result("fs/getMetadata", {"path": "\u0000" + file_uri(str(tmp_path / "a"))
                                             + "\u0000"})["isDirectory"] is True


def test_uri_drive_letters(sclient, uniq):
    for uri, shown in (("file:///C:/x", "file:///C:/x"), ("file:///c:", "file:///C:"),
                       ("file://C:/x", "file:///C:/x"), ("file:///a/../C:", "file:///C:")):
        assert sclient.error("fs/getMetadata", {"path": uri}) == {
            "code": -32600, "message": "'%s' is invalid on 'linux'" % shown}
    assert sclient.error("process/start", {"processId": uniq(), "argv": ["/bin/true"],
                                           "cwd": "file:///C:/x", "env": {}, "tty": False}) == {
        "code": -32602, "message": "cwd URI `file:///C:/x` is not valid on this exec-server "
                                   "host: 'file:///C:/x' is invalid on 'linux'"}
    # "C|" is a plain name, never popped by ".." (uexec read it as "C:" and popped it)
    assert sclient.error("fs/getMetadata", {"path": "file:///C|/.."}) == {
        "code": -32004, "message": "No such file or directory (os error 2)"}


def test_uri_hosts(sclient, uniq):
    idn = {"code": -32602, "message": "invalid URI: invalid international domain name"}
    for uri in ("file://ho st/x", "file://host:80/x", "file://user@host/x", "file://h%00/x"):
        assert sclient.error("fs/getMetadata", {"path": uri}) == idn
    for uri, shown in (("file://1.2.3/x", "file://1.2.0.3/x"),
                       ("file://0x7f.1/x", "file://127.0.0.1/x")):
        assert sclient.error("fs/getMetadata", {"path": uri}) == {
            "code": -32600, "message": "'%s' is invalid on 'linux'" % shown}
    assert sclient.error("fs/getMetadata", {"path": "file://999.1.1.1/x"}) == {
        "code": -32602, "message": "invalid URI: invalid IPv4 address"}
    assert sclient.error("process/start", {"processId": uniq(), "argv": ["/bin/true"],
                                           "cwd": "file://1.2.3/x", "env": {}, "tty": False}) == {
        "code": -32602, "message": "cwd URI `file://1.2.0.3/x` is not valid on this exec-server "
                                   "host: 'file://1.2.0.3/x' is invalid on 'linux'"}
