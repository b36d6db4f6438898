# SPDX-License-Identifier: MIT
"""Child environment construction: env, envPolicy, metadata (PROTOCOL.md §8.1, §6.6)."""

import os

import pytest

import conftest
from conftest import Server

# the programs this module's processes run (skipped, with the names, where missing)
pytestmark = pytest.mark.needs_programs("/usr/bin/env")

# The server runs with exactly this environment (mirrors p17_envpolicy.out).
SERVER_ENV = {
    "API_KEY": "k", "AWS_SECRET_ACCESS_KEY": "s", "CODEX_PERMISSION_PROFILE": "prof",
    "CODEX_VERSION": "server-side", "CREDENTIALS_FILE": "/c", "GITHUB_TOKEN": "t",
    "HOME": "/root", "LANG": "C.UTF-8", "LOGNAME": "root", "MY_SECRET": "m",
    "NOT_SENSITIVE": "n", "PASSWORD": "pw", "PATH": "/usr/local/bin:/usr/bin:/bin",
    "PLAIN_OTHER": "o", "PLAIN_VAR": "p", "SHELL": "/bin/bash", "TERM": "xterm-256color",
    "TMPDIR": "/tmp", "USER": "root", "my_lower_token": "l",
}
CORE = {"HOME", "LANG", "LOGNAME", "PATH", "SHELL", "TMPDIR", "USER"}
DEFAULT_EXCLUDED = {"API_KEY", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "MY_SECRET",
                    "my_lower_token"}
THREAD = "01a2018a-14ae-7dd2-8762-967295022059"


@pytest.fixture
def env_server(tmp_path_factory):
    """Function-scoped so that a server crash in one test does not cascade."""
    env = dict(SERVER_ENV)
    # keep whatever the binary itself needs to start (sanitizer options, library path)
    for k in ("LD_LIBRARY_PATH", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    yield from conftest.checked(Server((), env=env, cwd="/tmp",
                                       logdir=str(tmp_path_factory.mktemp("logs"))))


@pytest.fixture
def ec(env_server):
    yield from conftest.connected(env_server)


_n = [0]


def child_env(c, env=None, policy="absent", tty=False, **extra):
    """Run /usr/bin/env -0 and return the child's environment as a dict."""
    _n[0] += 1
    pid = "env-%d" % _n[0]
    if policy != "absent":
        extra["envPolicy"] = policy
    run = c.run(pid, ["/usr/bin/env", "-0"], env=env or {}, tty=tty, **extra)
    assert run.exit_code == 0, run.data()
    out = run.data()
    if tty:
        out = out.replace(b"\r\n", b"\n")
    result = {}
    for item in out.split(b"\0"):
        if item:
            k, _, v = item.decode().partition("=")
            result[k] = v
    return result


def policy(inherit="all", ignore=True, exclude=(), set_=None, include=()):
    return {"inherit": inherit, "ignoreDefaultExcludes": ignore, "exclude": list(exclude),
            "set": dict(set_ or {}), "includeOnly": list(include)}


def assert_path_inherited(env):
    # the server may put its own directories in front (prependPathDirs, §8.1)
    assert env["PATH"].endswith(SERVER_ENV["PATH"]), env["PATH"]


# ---- without envPolicy


def test_env_is_exact_without_policy(ec):
    """§8.1: without envPolicy the child environment is exactly env."""
    assert child_env(ec, {"FOO": "bar"}) == {"FOO": "bar"}


def test_empty_env_gives_empty_environment(ec):
    """§8.1: env {} -> the child sees no variables at all (no PATH)."""
    run = ec.run("empty", ["/usr/bin/env"], env={})
    assert run.data() == b""
    assert run.methods == ["process/exited", "process/closed"]


def test_env_policy_null_is_exact_env(ec):
    """§8.1: envPolicy null behaves like no envPolicy."""
    assert child_env(ec, {"A": "1"}, policy=None) == {"A": "1"}


def test_env_values_verbatim(ec):
    """§8.1: values are passed byte-for-byte (spaces, '=', unicode, empty)."""
    env = {"A": "x y", "B": "k=v=w", "C": "\u00e9\u2713", "D": ""}
    assert child_env(ec, env) == env


def test_env_empty_name_dropped(ec):
    """§8.1: a variable with an empty name is dropped."""
    assert child_env(ec, {"": "x", "A": "1"}) == {"A": "1"}


def test_env_name_with_equals(ec):
    """§8.1: names are not validated: "A=B": "x" becomes A=B=x."""
    assert child_env(ec, {"A=B": "x"}) == {"A": "B=x"}


def test_env_nul_in_value_is_internal_error(ec):
    """§6.6/§8.1: a NUL byte in an env value -> -32603 'data provided contains a nul byte'."""
    err = ec.error("process/start", ec.start_params("nul", env={"A": "x\u0000y"}))
    assert err == {"code": -32603, "data": {"kind": "spawnFailed"},
                             "message": "data provided contains a nul byte"}


def test_env_null_value_rejected(ec):
    """§6.6: env values must be strings: null -> -32602."""
    err = ec.error("process/start", ec.start_params("nv", env={"A": None}))
    assert err == {"code": -32602, "message": "invalid type: null, expected a string"}


def test_env_integer_value_rejected(ec):
    """§6.6: an integer env value -> -32602 'invalid type: number, expected a string'
    (numbers are worded "number", as recorded for clientName: 5 in p18)."""
    err = ec.error("process/start", ec.start_params("iv", env={"A": 1}))
    assert err == {"code": -32602, "message": "invalid type: number, expected a string"}


# ---- envPolicy


def test_inherit_all_ignore_default_excludes(ec):
    """§8.1: inherit all + ignoreDefaultExcludes -> the whole server environment."""
    env = child_env(ec, policy=policy())
    for k, v in SERVER_ENV.items():
        assert k in env, k
        if k != "PATH":
            assert env[k] == v, k
    assert_path_inherited(env)


def test_inherit_all_default_excludes(ec):
    """§8.1: default excludes drop *KEY*/*SECRET*/*TOKEN* case-insensitively."""
    env = child_env(ec, policy=policy(ignore=False))
    for k in DEFAULT_EXCLUDED:
        assert k not in env, k
    for k in set(SERVER_ENV) - DEFAULT_EXCLUDED:
        assert k in env, k
    assert env["PASSWORD"] == "pw" and env["CREDENTIALS_FILE"] == "/c"


@pytest.mark.parametrize("ignore", [True, False])
def test_inherit_core(ec, ignore):
    """§8.1: inherit core -> only HOME LANG LOGNAME PATH SHELL TMPDIR USER."""
    env = child_env(ec, policy=policy("core", ignore))
    assert set(env) == CORE
    assert env["HOME"] == "/root" and env["USER"] == "root"
    assert_path_inherited(env)


def test_inherit_none(ec):
    """§8.1: inherit none -> nothing inherited."""
    assert child_env(ec, policy=policy("none")) == {}


def test_inherit_none_set_then_env(ec):
    """§8.1: set inserts variables; env is applied last and wins."""
    env = child_env(ec, {"A": "env"}, policy=policy("none", set_={"A": "set", "S": "set"}))
    assert env == {"A": "env", "S": "set"}


def test_exclude_glob(ec):
    """§8.1: exclude patterns are globs."""
    env = child_env(ec, policy=policy(exclude=["PLAIN_*"]))
    assert "PLAIN_VAR" not in env and "PLAIN_OTHER" not in env
    assert "NOT_SENSITIVE" in env and "API_KEY" in env


def test_exclude_case_insensitive(ec):
    """§8.1: exclude matches case-insensitively (plain_var drops PLAIN_VAR)."""
    env = child_env(ec, policy=policy(exclude=["plain_var"]))
    assert "PLAIN_VAR" not in env and env["PLAIN_OTHER"] == "o"


def test_exclude_exact_name(ec):
    """§8.1: an exact exclude drops just that name."""
    env = child_env(ec, policy=policy(exclude=["PLAIN_VAR"]))
    assert "PLAIN_VAR" not in env and "PLAIN_OTHER" in env


def test_include_only(ec):
    """§8.1: includeOnly keeps only matching names."""
    env = child_env(ec, policy=policy(include=["PATH", "PLAIN_*"]))
    assert set(env) == {"PATH", "PLAIN_OTHER", "PLAIN_VAR"}
    assert_path_inherited(env)


def test_include_only_does_not_filter_env(ec):
    """§8.1: env entries are not filtered by includeOnly."""
    env = child_env(ec, {"A": "env"}, policy=policy(include=["PATH"]))
    assert set(env) == {"A", "PATH"} and env["A"] == "env"


def test_include_only_filters_set(ec):
    """§8.1: includeOnly also removes variables added by set."""
    env = child_env(ec, policy=policy(set_={"X": "1"}, include=["PATH"]))
    assert set(env) == {"PATH"}


def test_env_overrides_set(ec):
    """§8.1: env wins over set."""
    env = child_env(ec, {"PLAIN_VAR": "from-env"}, policy=policy(set_={"PLAIN_VAR": "from-set"}))
    assert env["PLAIN_VAR"] == "from-env"


def test_env_not_filtered_by_exclude(ec):
    """§8.1: env entries are not filtered by exclude."""
    env = child_env(ec, {"PLAIN_VAR": "from-env"}, policy=policy(exclude=["PLAIN_VAR"]))
    assert env["PLAIN_VAR"] == "from-env"


def test_set_applied_after_exclude(ec):
    """§8.1: set is applied after exclude."""
    env = child_env(ec, policy=policy(exclude=["PLAIN_VAR"], set_={"PLAIN_VAR": "from-set"}))
    assert env["PLAIN_VAR"] == "from-set"


def test_set_overrides_inherited(ec):
    """§8.1: set overrides an inherited value."""
    env = child_env(ec, policy=policy(set_={"PLAIN_VAR": "from-set"}))
    assert env["PLAIN_VAR"] == "from-set"


def test_real_client_policy(ec):
    """§8.1/§10.2: the real client's policy: excluded CODEX_VERSION comes back from env."""
    pol = policy(exclude=["CODEX_PERMISSION_PROFILE", "CODEX_VERSION",
                          "CODEX_APPLY_PATCH_PRESERVE_LINE_ENDINGS",
                          "CODEX_PLUGIN_METRICS_OUTPUT"])
    env = child_env(ec, {"CODEX_VERSION": "0.169.0", "TERM": "dumb", "NO_COLOR": "1"},
                    policy=pol)
    assert env["CODEX_VERSION"] == "0.169.0"
    assert env["TERM"] == "dumb" and env["NO_COLOR"] == "1"
    assert "CODEX_PERMISSION_PROFILE" not in env
    assert env["API_KEY"] == "k"
    assert_path_inherited(env)


def test_real_client_policy_pty(ec):
    """§8.1: the same policy on a PTY child."""
    pol = policy(exclude=["CODEX_PERMISSION_PROFILE", "CODEX_VERSION"])
    env = child_env(ec, {"TERM": "dumb"}, policy=pol, tty=True)
    assert env["TERM"] == "dumb" and env["SHELL"] == "/bin/bash"
    assert "CODEX_VERSION" not in env and "CODEX_PERMISSION_PROFILE" not in env


def test_bare_program_uses_inherited_path(ec):
    """§8.3: with envPolicy the inherited PATH finds bare program names."""
    run = ec.run("bare", ["env"], env={}, envPolicy=policy("core"))
    assert run.exit_code == 0 and b"PATH=" in run.stdout


@pytest.mark.parametrize("missing", ["inherit", "ignoreDefaultExcludes", "exclude", "set",
                                     "includeOnly"])
def test_env_policy_members_required(ec, missing):
    """§8.1: all five envPolicy members are required."""
    pol = policy()
    del pol[missing]
    err = ec.error("process/start", ec.start_params("mp", envPolicy=pol))
    assert err == {"code": -32602, "message": "missing field `%s`" % missing}


def test_env_policy_unknown_inherit_variant(ec):
    """§6.6/p06: unknown inherit value -> serde unknown-variant text."""
    err = ec.error("process/start", ec.start_params("uv", envPolicy=policy("zzz")))
    assert err == {"code": -32602,
                   "message": "unknown variant `zzz`, expected one of `core`, `all`, `none`"}


def test_env_policy_inherit_wrong_type(ec):
    """p06: inherit true -> 'invalid type: boolean `true`, expected string or map'."""
    pol = policy()
    pol["inherit"] = True
    err = ec.error("process/start", ec.start_params("wt", envPolicy=pol))
    assert err == {"code": -32602,
                   "message": "invalid type: boolean `true`, expected string or map"}


# ---- metadata


def test_metadata_exported(ec):
    """§6.6/§8.1: metadata threadId/toolCallId -> CODEX_THREAD_ID/CODEX_TOOL_CALL_ID."""
    env = child_env(ec, metadata={"threadId": THREAD, "toolCallId": "c", "extra": 1})
    assert env == {"CODEX_THREAD_ID": THREAD, "CODEX_TOOL_CALL_ID": "c"}


def test_metadata_only_tool_call_id(ec):
    """§6.6: both metadata members are optional (toolCallId alone)."""
    assert child_env(ec, metadata={"toolCallId": "c"}) == {"CODEX_TOOL_CALL_ID": "c"}


def test_metadata_only_thread_id(ec):
    """§6.6: threadId alone."""
    assert child_env(ec, metadata={"threadId": THREAD}) == {"CODEX_THREAD_ID": THREAD}


@pytest.mark.parametrize("md", [{}, None])
def test_metadata_empty_or_null(ec, md):
    """§6.6: metadata {} / null exports nothing."""
    assert child_env(ec, metadata=md) == {}


def test_metadata_with_env_policy(ec):
    """§8.1: metadata variables are also exported with envPolicy none."""
    env = child_env(ec, policy=policy("none"), metadata={"threadId": THREAD, "toolCallId": "t"})
    assert env == {"CODEX_THREAD_ID": THREAD, "CODEX_TOOL_CALL_ID": "t"}


def test_metadata_bad_thread_id(ec):
    """§6.6: a non-UUID threadId -> -32602 uuid parse text."""
    err = ec.error("process/start", ec.start_params("bt", metadata={"threadId": "thread-1"}))
    assert err == {"code": -32602, "message":
                   "invalid character: expected an optional prefix of `urn:uuid:` followed by "
                   "[0-9a-fA-F-], found `t` at 1"}


@pytest.mark.parametrize("field", ["threadId", "toolCallId"])
def test_metadata_wrong_types(ec, field):
    """p06: metadata members must be strings."""
    err = ec.error("process/start", ec.start_params("mt", metadata={field: True}))
    assert err == {"code": -32602, "message": "invalid type: boolean `true`, expected a string"}
