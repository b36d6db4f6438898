# SPDX-License-Identifier: MIT
"""environmentConfig/read (PROTOCOL.md §6.5; evidence p10_env.out, p05_schema.out).

Layers come from $CODEX_HOME/config.toml ("user") and /etc/codex ("system"); the
tests that compare whole results skip when this machine has /etc/codex files.
"""

import os
import socket

import pytest

import conftest
from wsclient import file_uri

METHOD = "environmentConfig/read"

P10_CONFIG = """\
[mcp_servers.demo]
command = "demo-server"
args = ["--x"]

[mcp_servers.demo.env]
TOKEN = "t"

[other]
key = 1
"""
P10_TOML = ('[mcp_servers.demo]\ncommand = "demo-server"\nargs = ["--x"]\n\n'
            '[mcp_servers.demo.env]\nTOKEN = "t"\n')

SYSTEM_FILES = ("/etc/codex/config.toml", "/etc/codex/requirements.toml")
no_system_layers = pytest.mark.skipif(any(os.path.exists(p) for p in SYSTEM_FILES),
                                      reason="this machine has /etc/codex configuration")


def host_name():
    return socket.gethostname().strip().rstrip(".").lower() or None


def server_env(**overrides):
    env = {k: v for k, v in os.environ.items() if k != "CODEX_HOME"}
    for k, v in overrides.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


@pytest.fixture
def home(tmp_path):
    """A CODEX_HOME directory holding the p10 config.toml."""
    d = tmp_path / "home2"
    d.mkdir()
    (d / "config.toml").write_text(P10_CONFIG)
    return d


@pytest.fixture
def project(tmp_path):
    d = tmp_path / "project"
    (d / "sub" / "dir").mkdir(parents=True)
    return d


@pytest.fixture
def cfg_client(server_factory, home):
    """Initialized client on a server whose CODEX_HOME is `home`."""
    yield from conftest.connected(server_factory(env=server_env(CODEX_HOME=str(home))))


def params(cwd, config=(("mcp_servers",),), requirements=(("mcp_servers",),)):
    return {"cwd": file_uri(cwd) if str(cwd).startswith("/") else cwd,
            "configPaths": [list(p) for p in config],
            "requirementsPaths": [list(p) for p in requirements]}


def user_layer(home, toml):
    real = os.path.realpath(home)
    return {"source": "user (%s/config.toml)" % real, "baseDir": file_uri(real), "toml": toml}


def expected(home, layers=(), req_layers=()):
    return {"userHomeDir": file_uri(os.environ["HOME"]),
            "codexHomeDir": file_uri(os.path.realpath(home)),
            "hostname": host_name(),
            "config": {"layers": list(layers), "cloudInsertionIndex": 0},
            "requirements": {"layers": list(req_layers), "cloudInsertionIndex": 0}}


def read(c, home, toml_text=None, **kw):
    """Writes config.toml (if given) and returns the config layers' toml strings."""
    if toml_text is not None:
        (home / "config.toml").write_text(toml_text)
    res = c.result(METHOD, params(home, **kw))
    return [layer["toml"] for layer in res["config"]["layers"]]


# ---------------------------------------------------------------------------
# capability and the p10 transcript


def test_capability_advertised(server):
    c = server.connect(initialize=False)
    info = c.initialize()["environmentInfo"]
    assert info["capabilities"]["environmentConfigRead"] is True
    assert server.connect().result("environment/info")["capabilities"]["environmentConfigRead"]


@no_system_layers
def test_p10_transcript(cfg_client, home, project, tmp_path):
    c = cfg_client
    want = expected(home, [user_layer(home, P10_TOML)])
    # id 2, 3: the mcp_servers subtree, whatever the cwd below the project
    assert c.result(METHOD, params(project)) == want
    assert c.result(METHOD, params(project / "sub" / "dir")) == want
    # id 4: no path at all
    err = c.error(METHOD, params(project, config=(), requirements=()))
    assert err == {"code": -32602, "message": "at least one config or requirements path is required"}
    # id 5: requirementsPaths is required
    err = c.error(METHOD, {"cwd": file_uri(project),
                           "configPaths": [["mcp_servers", "demo", "command"], ["other"]]})
    assert err == {"code": -32602, "message": "missing field `requirementsPaths`"}
    # id 6: empty key path
    err = c.error(METHOD, params(project, config=((),), requirements=((),)))
    assert err == {"code": -32602, "message": "TOML paths must contain at least one key segment"}
    # id 7: nothing matches -> no layer
    assert c.result(METHOD, params(project, config=(("no_such_key",),),
                                   requirements=(("allowed_sandbox_modes",),))) == expected(home)
    # id 8: a cwd that does not exist is fine
    assert c.result(METHOD, params(tmp_path / "missing-dir")) == want
    # id 9: the reference refuses a native path ("invalid URI: relative URL without a
    # base"); uexec accepts native absolute paths, so the missing field is reported
    err = c.error(METHOD, {"cwd": str(project), "configPaths": [["mcp_servers"]]})
    assert err == {"code": -32602, "message": "missing field `requirementsPaths`"}


def test_result_member_order(cfg_client, home):
    reply = cfg_client.call(METHOD, params(home))
    res = reply["result"]
    assert list(res) == ["userHomeDir", "codexHomeDir", "hostname", "config", "requirements"]
    assert list(res["config"]) == ["layers", "cloudInsertionIndex"]
    assert list(res["config"]["layers"][0]) == ["source", "baseDir", "toml"]


# ---------------------------------------------------------------------------
# projection


@no_system_layers
def test_nested_paths(cfg_client, home):
    c = cfg_client
    assert read(c, home, config=(("mcp_servers", "demo", "command"), ("other",))) == [
        '[mcp_servers.demo]\ncommand = "demo-server"\n\n[other]\nkey = 1\n']
    assert read(c, home, config=(("mcp_servers", "demo", "env", "TOKEN"),)) == [
        '[mcp_servers.demo.env]\nTOKEN = "t"\n']
    assert read(c, home, config=(("other", "key"),)) == ["[other]\nkey = 1\n"]
    # a prefix selects the whole subtree, whatever else is asked below it
    assert read(c, home, config=(("mcp_servers", "demo", "args"), ("mcp_servers",))) == [P10_TOML]
    # requirements paths do not select config
    assert read(c, home, config=(), requirements=(("mcp_servers",),)) == []


@no_system_layers
def test_partial_match_keeps_empty_tables(cfg_client, home):
    # only an empty *root* drops the layer; an empty nested table is kept
    assert read(cfg_client, home, config=(("other", "nope"),)) == ["[other]\n"]
    assert read(cfg_client, home, config=(("nope", "x"),)) == []


@no_system_layers
def test_non_table_ancestor_kept_whole(cfg_client, home):
    assert read(cfg_client, home, "mcp_servers = 5\n",
                config=(("mcp_servers", "demo", "command"),)) == ["mcp_servers = 5\n"]
    text = '[[mcp_servers]]\nname = "a"\n[[mcp_servers]]\nname = "b"\n'
    assert read(cfg_client, home, text, config=(("mcp_servers", "a"),)) == [
        '[[mcp_servers]]\nname = "a"\n\n[[mcp_servers]]\nname = "b"\n']


@no_system_layers
def test_file_is_reread_every_call(cfg_client, home):
    assert read(cfg_client, home, config=(("other",),)) == ["[other]\nkey = 1\n"]
    assert read(cfg_client, home, "[other]\nkey = 2\n", config=(("other",),)) == [
        "[other]\nkey = 2\n"]
    (home / "config.toml").unlink()
    assert read(cfg_client, home, config=(("other",),)) == []


# ---------------------------------------------------------------------------
# serialisation (the Rust `toml` crate's to_string, document order kept)


SERIAL_IN = r'''
zeta = 1
alpha = "x"
[b.c.d]
x = 1
[a]
y = 2
z.w = 3
inline = { q = 1, p = [1, 2.5, "s"], e = {} }
[[b.arr]]
n = 1
[[b.arr]]
[b.arr.sub]
m = 2
[b]
direct = true
mixed = [{a = 1}, 2]
empty = []
'''
SERIAL_OUT = '''\
zeta = 1
alpha = "x"

[b]
direct = true
mixed = [{ a = 1 }, 2]
empty = []

[b.c.d]
x = 1

[[b.arr]]
n = 1

[[b.arr]]

[b.arr.sub]
m = 2

[a]
y = 2

[a.z]
w = 3

[a.inline]
q = 1
p = [1, 2.5, "s"]

[a.inline.e]
'''


@no_system_layers
def test_serialise_tables_and_order(cfg_client, home):
    assert read(cfg_client, home, SERIAL_IN, config=(("zeta",), ("alpha",), ("b",), ("a",))) == [
        SERIAL_OUT]


@no_system_layers
def test_serialise_strings_keys_numbers(cfg_client, home):
    src = r'''
s1 = "plain"
s2 = "it's"
s3 = 'C:\path'
s4 = "a \"q\" b"
s5 = "line1\nline2"
s6 = "tab\there"
s7 = "ctl\u0001x"
s8 = "both ' and \""
s10 = "back\\slash 'sq'"
s11 = "crlf\r\nx"
"key with space" = 1
"k'q" = 2
'k"d' = 3
"" = 5
"é" = 7
f1 = 1.0
f2 = 0.1
f3 = 1e22
f4 = -1.5e-7
f5 = -inf
f6 = nan
f7 = -0.0
i1 = 0x1F
d1 = 1979-05-27T07:32:00Z
d2 = 1979-05-27T00:32:00.999999-07:00
d3 = 1979-05-27 07:32:00
d4 = 1979-05-27
d5 = 07:32:00.5
'''
    want = '''\
s1 = "plain"
s2 = "it's"
s3 = 'C:\\path'
s4 = 'a "q" b'
s5 = """
line1
line2"""
s6 = "tab\\there"
s7 = "ctl\\u0001x"
s8 = """both ' and """"
s10 = \'\'\'back\\slash 'sq\'\'\'\'
s11 = """
crlf\\r
x"""
"key with space" = 1
"k'q" = 2
'k"d' = 3
"" = 5
"é" = 7
f1 = 1.0
f2 = 0.1
f3 = 10000000000000000000000.0
f4 = -0.00000015
f5 = -inf
f6 = nan
f7 = -0.0
i1 = 31
d1 = 1979-05-27T07:32:00Z
d2 = 1979-05-27T00:32:00.999999-07:00
d3 = 1979-05-27T07:32:00
d4 = 1979-05-27
d5 = 07:32:00.5
'''
    top = [k for k in ("s1 s2 s3 s4 s5 s6 s7 s8 s10 s11 f1 f2 f3 f4 f5 f6 f7 i1 "
                       "d1 d2 d3 d4 d5").split()]
    paths = [(k,) for k in top] + [("key with space",), ("k'q",), ('k"d',), ("",), ("é",)]
    # keep document order: ask in file order is irrelevant, order comes from the file
    assert read(cfg_client, home, src, config=tuple(paths)) == [want]


# ---------------------------------------------------------------------------
# files: missing, invalid, too large, CODEX_HOME resolution


@no_system_layers
def test_missing_file_no_layer(server_factory, tmp_path):
    empty = tmp_path / "empty-home"
    empty.mkdir()
    c = server_factory(env=server_env(CODEX_HOME=str(empty))).connect()
    assert c.result(METHOD, params(tmp_path)) == expected(empty)


def test_invalid_toml_is_internal_error(cfg_client, home):
    (home / "config.toml").write_text("[mcp_servers\ncommand = 1\n")
    err = cfg_client.error(METHOD, params(home))
    assert err["code"] == -32603
    prefix = "failed to load executor-local config: %s/config.toml:1:" % os.path.realpath(home)
    assert err["message"].startswith(prefix), err
    # the same file is parsed even when no config path is asked for
    err = cfg_client.error(METHOD, params(home, config=(), requirements=(("x",),)))
    assert err["code"] == -32603


def test_invalid_utf8_is_internal_error(cfg_client, home):
    (home / "config.toml").write_bytes(b'a = "\xff"\n')
    err = cfg_client.error(METHOD, params(home))
    assert err == {"code": -32603, "message":
                   "failed to load executor-local config: Failed to read config file "
                   "%s/config.toml: stream did not contain valid UTF-8" % os.path.realpath(home)}


def test_config_toml_directory(cfg_client, home):
    (home / "config.toml").unlink()
    (home / "config.toml").mkdir()
    err = cfg_client.error(METHOD, params(home))
    assert err == {"code": -32603, "message":
                   "failed to load executor-local config: Failed to read config file "
                   "%s/config.toml: Is a directory (os error 21)" % os.path.realpath(home)}


@no_system_layers
def test_oversized_file_ignored(cfg_client, home):
    big = "[other]\nkey = 1\n" + "# padding\n" * (1024 * 1024 // 10 + 1)
    assert read(cfg_client, home, big, config=(("other",),)) == []
    assert read(cfg_client, home, "[other]\nkey = 3\n", config=(("other",),)) == [
        "[other]\nkey = 3\n"]


def test_codex_home_missing(server_factory, tmp_path):
    missing = str(tmp_path / "nope")
    c = server_factory(env=server_env(CODEX_HOME=missing)).connect()
    err = c.error(METHOD, params(tmp_path))
    assert err == {"code": -32603, "message": "failed to find Codex home: CODEX_HOME points "
                   "to \"%s\", but that path does not exist" % missing}


def test_codex_home_not_a_directory(server_factory, tmp_path):
    f = tmp_path / "file"
    f.write_text("")
    c = server_factory(env=server_env(CODEX_HOME=str(f))).connect()
    err = c.error(METHOD, params(tmp_path))
    assert err == {"code": -32603, "message": "failed to find Codex home: CODEX_HOME points "
                   "to \"%s\", but that path is not a directory" % f}


@no_system_layers
def test_codex_home_canonicalised(server_factory, home, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(home)
    c = server_factory(env=server_env(CODEX_HOME=str(link) + "/")).connect()
    res = c.result(METHOD, params(tmp_path))
    assert res == expected(home, [user_layer(home, P10_TOML)])


@no_system_layers
def test_codex_home_defaults_to_home_dot_codex(server_factory, tmp_path):
    h = tmp_path / "userhome"
    (h / ".codex").mkdir(parents=True)
    (h / ".codex" / "config.toml").write_text(P10_CONFIG)
    c = server_factory(env=server_env(HOME=str(h), CODEX_HOME="")).connect()
    res = c.result(METHOD, params(tmp_path))
    assert res["userHomeDir"] == file_uri(h)
    assert res["codexHomeDir"] == file_uri(h / ".codex")
    assert res["config"]["layers"] == [
        {"source": "user (%s/.codex/config.toml)" % h, "baseDir": file_uri(h / ".codex"),
         "toml": P10_TOML}]


# ---------------------------------------------------------------------------
# parameter errors


@pytest.mark.parametrize("p, message", [
    ({"cwd": "file:///tmp", "configPaths": [], "requirementsPaths": []},
     "at least one config or requirements path is required"),
    ({"cwd": "file:///tmp", "configPaths": [["a"]], "requirementsPaths": [[]]},
     "TOML paths must contain at least one key segment"),
    ({"cwd": "file:///tmp", "configPaths": [["a"]]}, "missing field `requirementsPaths`"),
    ({"cwd": "file:///tmp", "requirementsPaths": [["a"]]}, "missing field `configPaths`"),
    ({"configPaths": [["a"]], "requirementsPaths": [["a"]]}, "missing field `cwd`"),
    ({}, "missing field `cwd`"),
    ({"cwd": True, "configPaths": [["a"]], "requirementsPaths": []},
     "invalid type: boolean `true`, expected a string"),
    ({"cwd": "file:///tmp", "configPaths": False, "requirementsPaths": []},
     "invalid type: boolean `false`, expected a sequence"),
    ({"cwd": "file:///tmp", "configPaths": [], "requirementsPaths": True},
     "invalid type: boolean `true`, expected a sequence"),
    ({"cwd": "file:///tmp", "configPaths": [True], "requirementsPaths": []},
     "invalid type: boolean `true`, expected a sequence"),
    ({"cwd": "file:///tmp", "configPaths": [["a", False]], "requirementsPaths": []},
     "invalid type: boolean `false`, expected a string"),
    ({"cwd": "file:///tmp", "configPaths": None, "requirementsPaths": []},
     "invalid type: null, expected a sequence"),
    # fields are decoded in the order sent
    ({"configPaths": True, "cwd": "/tmp"}, "invalid type: boolean `true`, expected a sequence"),
    ({"cwd": "/tmp", "configPaths": True}, "invalid type: boolean `true`, expected a sequence"),
    ({"cwd": "relative/x", "configPaths": [["a"]], "requirementsPaths": []},
     "invalid URI: relative URL without a base"),
    ({"cwd": "http://x/y", "configPaths": [["a"]], "requirementsPaths": []},
     "unsupported path URI scheme `http`"),
    ({"cwd": "file:///tmp?q", "configPaths": [["a"]], "requirementsPaths": []},
     "query parameters are not allowed in path URIs"),
    # %00 is refused while decoding, before the key-path checks
    ({"cwd": "file:///tmp/a%00b", "configPaths": [], "requirementsPaths": []},
     "'file:///tmp/a%00b' is invalid on 'linux'"),
    # the host check comes after the key-path checks
    ({"cwd": "file://otherhost/x", "configPaths": [], "requirementsPaths": []},
     "at least one config or requirements path is required"),
    ({"cwd": "file://otherhost/x", "configPaths": [["a"]], "requirementsPaths": []},
     "'file://otherhost/x' is invalid on 'linux'"),
    # selector limits
    ({"cwd": "file:///tmp", "configPaths": [[str(i)] for i in range(40)],
      "requirementsPaths": [[str(i)] for i in range(25)]},
     "at most 64 TOML selectors are allowed"),
    ({"cwd": "file:///tmp", "configPaths": [["x"] * 33], "requirementsPaths": []},
     "TOML paths may contain at most 32 key segments"),
    ({"cwd": "file:///tmp", "configPaths": [["x" * 40000], ["y" * 30000]],
      "requirementsPaths": []},
     "TOML selector input may contain at most 65536 bytes"),
])
def test_param_errors(cfg_client, p, message):
    assert cfg_client.error(METHOD, p) == {"code": -32602, "message": message}


def test_params_not_an_object(cfg_client):
    err = cfg_client.error(METHOD, None)
    assert err["code"] == -32602
    err = cfg_client.error(METHOD)
    assert err["code"] == -32602
    # positional form, like serde's visit_seq
    res = cfg_client.result(METHOD, ["file:///tmp", [["other"]], []])
    assert res["config"]["layers"][-1]["toml"] == "[other]\nkey = 1\n"


def test_limits_at_the_edge_accepted(cfg_client):
    p = {"cwd": "file:///tmp", "configPaths": [[str(i)] for i in range(32)],
         "requirementsPaths": [["x"] * 32] + [[str(i)] for i in range(31)]}
    assert "config" in cfg_client.result(METHOD, p)


def test_requires_handshake(server_factory, home):
    s = server_factory(env=server_env(CODEX_HOME=str(home)))
    c = s.connect(initialize=False)
    assert c.error(METHOD, params(home)) == {
        "code": -32600,
        "message": "client must call initialize before using environment config methods"}


def test_deeply_nested_keys_refused(cfg_client, home):
    # toml++ recurses per nesting level: a 200k-segment dotted key must not crash the server
    (home / "config.toml").write_text(".".join(["a"] * 200000) + " = 1\n")
    err = cfg_client.error(METHOD, params(home))
    assert err["code"] == -32603
    assert err["message"].endswith("keys are nested more than 256 levels deep"), err
    (home / "config.toml").write_text("[" + ".".join(["a"] * 50000) + "]\n")
    assert cfg_client.error(METHOD, params(home))["code"] == -32603
    # still serving
    assert read(cfg_client, home, P10_CONFIG, config=(("other",),))[-1] == "[other]\nkey = 1\n"
