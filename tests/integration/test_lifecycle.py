# SPDX-License-Identifier: MIT
"""Connection lifecycle, initialize and environment/* (PROTOCOL.md §2.1, §6.1-§6.4)."""

import os
import re

import pytest

import conftest
from conftest import REFERENCE_CAPABILITIES, login_shell
from wsclient import file_uri

UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
ENV_INFO_KEYS = ["shell", "executorVersion", "providerId", "cwd", "userHomeDir", "platformOs",
                 "prependPathDirs", "temporaryDirectories", "tempDir", "capabilities"]
KNOWN_CAPABILITIES = set(REFERENCE_CAPABILITIES)
# uexec's own extensions (README "Protocol extensions", test_process_ext.py)
UEXEC_CAPABILITIES = {"uexecPtyResize", "uexecCloseStdin", "uexecProcessTimeout",
                      "uexecProcessList", "uexecDenialEvidence", "uexecFsRename",
                      "uexecFsWatch", "uexecProcessCgroup", "uexecProcessLimitPids",
                      "uexecProcessLimitMemory", "uexecProcessLimitCpu"}

# (method, params, family) for the gating tests; fs/http/config families included
# because the gate comes before the method is executed.
GATED = [
    ("process/start", {"processId": "x", "argv": ["/bin/true"], "cwd": "file:///tmp",
                       "env": {}, "tty": False}, "exec"),
    ("process/read", {"processId": "x"}, "exec"),
    ("process/write", {"processId": "x", "chunk": "", "writeId": "w"}, "exec"),
    ("process/signal", {"processId": "x", "signal": "interrupt"}, "exec"),
    ("process/terminate", {"processId": "x"}, "exec"),
    ("environment/info", None, "environment info"),
    ("environment/status", None, "environment status"),
]
GATED_OTHER_FAMILIES = [
    ("fs/getMetadata", {"path": "file:///tmp"}, "filesystem"),
    ("environmentConfig/read", {"cwd": "file:///tmp", "configPaths": [["x"]],
                                "requirementsPaths": []}, "environment config"),
    ("http/request", {"method": "GET", "url": "http://127.0.0.1:1/", "requestId": "r"}, "http"),
]


@pytest.fixture
def fresh(shared_server):
    yield from conftest.connected(shared_server, initialize=False)


@pytest.mark.parametrize("method,params,family", GATED)
def test_method_before_initialize(fresh, method, params, family):
    """§2.1: any method before initialize -> -32600 'client must call initialize ...'."""
    assert fresh.error(method, params) == {
        "code": -32600,
        "message": "client must call initialize before using %s methods" % family}


@pytest.mark.parametrize("method,params,family", GATED)
def test_method_before_initialized(fresh, method, params, family):
    """§2.1: after initialize but before initialized -> 'client must send initialized ...'."""
    fresh.initialize(initialized=False)
    assert fresh.error(method, params) == {
        "code": -32600,
        "message": "client must send initialized before using %s methods" % family}


@pytest.mark.parametrize("method,params,family", GATED_OTHER_FAMILIES)
def test_other_families_gated_before_initialize(fresh, method, params, family):
    """§2.1: filesystem / environment config / http families are gated too."""
    assert fresh.error(method, params) == {
        "code": -32600,
        "message": "client must call initialize before using %s methods" % family}


def test_gating_errors_keep_connection_open(fresh):
    """§2.1: gating errors leave the connection usable."""
    for _ in range(3):
        assert fresh.error("environment/status", None)["code"] == -32600
    fresh.initialize()
    assert fresh.result("environment/status", None) == {"status": "ready"}


def test_unknown_method_before_initialize(fresh):
    """§2.1/§4: an unknown method before initialize still gets an error reply."""
    reply = fresh.call("no/such", {})
    assert reply["error"]["code"] in (-32601, -32600)


def test_second_initialize_rejected(fresh):
    """§2.1: a second initialize -> -32600 'initialize may only be sent once per connection'."""
    fresh.initialize(initialized=False)
    assert fresh.error("initialize", {"clientName": "again"}) == {
        "code": -32600, "message": "initialize may only be sent once per connection"}
    fresh.notify("initialized", {})
    assert fresh.error("initialize", {"clientName": "again"}) == {
        "code": -32600, "message": "initialize may only be sent once per connection"}
    assert fresh.result("environment/status", None) == {"status": "ready"}


def test_initialized_repeated_is_ignored(fresh):
    """§2.1/§6.2: initialized may be sent more than once, with any params."""
    fresh.initialize(initialized=False)
    fresh.notify("initialized", None)
    fresh.notify("initialized", {"x": 1})
    fresh.notify("initialized")
    assert fresh.result("environment/status", None) == {"status": "ready"}


def test_initialized_before_initialize_closes(fresh):
    """§2.1: initialized before initialize closes the connection."""
    fresh.notify("initialized", {})
    how, _ = fresh.ws.wait_closed()
    assert how in ("close", "eof")


def test_initialize_missing_client_name(fresh):
    """§6.1: initialize {} -> -32602 missing field `clientName`."""
    assert fresh.error("initialize", {}) == {"code": -32602,
                                             "message": "missing field `clientName`"}


def test_initialize_null_params(fresh):
    """§6.1: initialize with params null -> -32602 'invalid type: null, expected struct InitializeParams'."""
    assert fresh.error("initialize", None) == {
        "code": -32602, "message": "invalid type: null, expected struct InitializeParams"}


@pytest.mark.parametrize("params,message", [
    ({"clientName": True}, "invalid type: boolean `true`, expected a string"),
    ({"clientName": 5}, "invalid type: number, expected a string"),
    ({"clientName": "x", "resumeSessionId": True}, "invalid type: boolean `true`, expected a string"),
])
def test_initialize_bad_param_types(fresh, params, message):
    """§6.1/p05: serde-style type errors for initialize params."""
    assert fresh.error("initialize", params) == {"code": -32602, "message": message}


def test_failed_initialize_does_not_count(fresh):
    """§2.1: a rejected initialize can be followed by a successful one."""
    fresh.error("initialize", {})
    fresh.error("initialize", None)
    res = fresh.initialize()
    assert UUID4.match(res["sessionId"])


@pytest.mark.parametrize("name", ["", "codex-environment", "x" * 5000, "\u00e9\u2713"])
def test_initialize_any_client_name(fresh, name):
    """§6.1: clientName may be any string, including empty and long ones."""
    res = fresh.initialize(client_name=name)
    assert UUID4.match(res["sessionId"])


def test_initialize_extra_members_and_null_resume(fresh):
    """§6.1/§3: resumeSessionId null and unknown members are accepted (real-client form)."""
    res = fresh.result("initialize", {"clientName": "codex-environment",
                                      "resumeSessionId": None, "extra": 1})
    assert UUID4.match(res["sessionId"])


def test_initialize_result_shape(fresh):
    """§6.1: result is {sessionId, environmentInfo} with every field in order."""
    res = fresh.result("initialize", {"clientName": "shape"})
    assert list(res.keys()) == ["sessionId", "environmentInfo"]
    assert UUID4.match(res["sessionId"]), res["sessionId"]
    info = res["environmentInfo"]
    assert list(info.keys()) == ENV_INFO_KEYS
    assert list(info["shell"].keys()) == ["name", "path"]
    assert isinstance(info["shell"]["name"], str) and info["shell"]["name"]
    assert info["shell"]["path"].startswith("/")
    assert isinstance(info["executorVersion"], str) and info["executorVersion"]
    assert re.match(r"^sha256:[0-9a-f]{64}$", info["providerId"]), info["providerId"]
    assert info["cwd"].startswith("file:///")
    assert info["userHomeDir"].startswith("file:///")
    assert info["platformOs"] == "linux"
    assert isinstance(info["prependPathDirs"], list)
    assert all(u.startswith("file:///") for u in info["prependPathDirs"])
    assert isinstance(info["temporaryDirectories"], list)
    assert info["tempDir"].startswith("file:///")
    caps = info["capabilities"]
    assert isinstance(caps, dict)
    known = KNOWN_CAPABILITIES | UEXEC_CAPABILITIES
    assert set(caps) <= known, set(caps) - known
    assert all(isinstance(v, bool) for v in caps.values())


def test_session_ids_are_unique(shared_server):
    """§2.2: every new session gets a fresh random UUID."""
    ids = set()
    for _ in range(5):
        c = shared_server.connect(initialize=False)
        ids.add(c.initialize()["sessionId"])
        c.ws.abort()
    assert len(ids) == 5


def test_environment_info_equals_initialize_environment_info(fresh):
    """§6.3: environment/info returns exactly initialize.environmentInfo."""
    res = fresh.initialize()
    for params in ("absent", None, {}):
        got = fresh.result("environment/info") if params == "absent" else \
            fresh.result("environment/info", params)
        assert got == res["environmentInfo"]
        assert list(got.keys()) == ENV_INFO_KEYS


def test_environment_status_ready(fresh):
    """§6.4: environment/status -> {"status":"ready"}."""
    fresh.initialize()
    assert fresh.result("environment/status", None) == {"status": "ready"}
    assert fresh.result("environment/status") == {"status": "ready"}


def test_environment_info_reflects_server_environment(server_factory, tmp_path):
    """§6.1: cwd, userHomeDir, temporaryDirectories, tempDir come from the server's cwd/HOME/TMPDIR; SHELL is ignored."""
    home = tmp_path / "home dir"
    tmpd = tmp_path / "tmpdir"
    cwd = tmp_path / "cwd"
    for d in (home, tmpd, cwd):
        d.mkdir()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "TMPDIR": str(tmpd), "SHELL": "/bin/not-a-real-shell"}
    srv = server_factory(env=env, cwd=str(cwd))
    c = srv.connect()
    info = c.init_result["environmentInfo"]
    assert info["cwd"] == file_uri(str(cwd))
    assert info["userHomeDir"] == file_uri(str(home))
    assert info["userHomeDir"].endswith("/home%20dir")
    assert info["temporaryDirectories"] == [file_uri(str(tmpd))]
    assert info["tempDir"] == file_uri(str(tmpd))
    shell = login_shell()
    assert info["shell"]["path"] == shell
    assert info["shell"]["name"] == os.path.basename(shell)
    c.ws.abort()


def test_environment_info_without_tmpdir(server_factory, tmp_path):
    """§6.1: TMPDIR unset -> temporaryDirectories [] and tempDir file:///tmp."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    srv = server_factory(env=env)
    c = srv.connect()
    info = c.init_result["environmentInfo"]
    assert info["temporaryDirectories"] == []
    assert info["tempDir"] == "file:///tmp"
    c.ws.abort()


def test_provider_id_stable_across_restarts(server_factory, tmp_path):
    """§6.1: providerId is identical across server restarts (and environments)."""
    a = server_factory()
    ca = a.connect()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    b = server_factory(env=env, cwd=str(tmp_path))
    cb = b.connect()
    assert ca.init_result["environmentInfo"]["providerId"] == \
        cb.init_result["environmentInfo"]["providerId"]
    ca.ws.abort()
    cb.ws.abort()
