# SPDX-License-Identifier: MIT
"""process/start: program lookup, cwd, parameter decoding and errors
(PROTOCOL.md §5.1, §6.6, §8.3; bad-param texts from p05_schema.out / p06_nested_schema.out)."""

import os
import stat

import pytest

from wsclient import file_uri

# the programs this module's processes run (skipped, with the names, where missing)
pytestmark = pytest.mark.needs_programs("/bin/echo", "/bin/pwd", "/bin/sh", "/bin/sleep", "/bin/true")

PATH_ENV = {"PATH": "/usr/bin:/bin"}
# 0.171's shapes: the io::Error's kind in data (spawnNotFound, spawnPermissionDenied, spawnFailed)
ENOENT = {"code": -32603, "data": {"kind": "spawnNotFound"},
          "message": "No such file or directory (os error 2)"}
EACCES = {"code": -32603, "data": {"kind": "spawnPermissionDenied"},
          "message": "Permission denied (os error 13)"}
ENOTDIR = {"code": -32603, "data": {"kind": "spawnFailed"}, "message": "Not a directory (os error 20)"}
RELATIVE = {"code": -32602, "message": "invalid URI: relative URL without a base"}


@pytest.fixture
def spawn_dir(tmp_path):
    """tmp/bin/hello.sh (executable), tmp/bin/noexec.sh (mode 0644), tmp/sub dir/."""
    b = tmp_path / "bin"
    b.mkdir()
    hello = b / "hello.sh"
    hello.write_text('#!/bin/sh\necho hello-from-script "$0"\n')
    hello.chmod(0o755)
    noexec = b / "noexec.sh"
    noexec.write_text("#!/bin/sh\necho no\n")
    noexec.chmod(0o644)
    (tmp_path / "sub dir").mkdir()
    return tmp_path


def params(pid="p", argv=("/bin/true",), cwd="file:///tmp", env=None, tty=False, **extra):
    p = {"processId": pid, "argv": list(argv), "cwd": cwd,
         "env": {} if env is None else env, "tty": tty}
    p.update(extra)
    return p


# ---- program lookup (§8.3)


def test_arg0_replaces_argv0(sclient):
    """§8.3: arg0 is what the child sees as $0; the program is still argv[0]."""
    run = sclient.run("a0", ["/bin/sh", "-c", "echo $0; tr '\\0' ' ' < /proc/$$/cmdline"],
                      env=PATH_ENV, arg0="custom-arg0")
    assert run.stdout.split(b"\n")[0] == b"custom-arg0"
    assert run.stdout.split(b"\n")[1].startswith(b"custom-arg0 -c ")


def test_arg0_null_keeps_argv0(sclient):
    """§6.6: arg0 null (as the real client sends) keeps argv[0]."""
    run = sclient.run("a1", ["/bin/sh", "-c", "echo $0"], arg0=None)
    assert run.stdout == b"/bin/sh\n"


@pytest.mark.parametrize("prog", ["./bin/hello.sh", "bin/hello.sh"])
def test_relative_program_resolved_against_cwd(sclient, spawn_dir, prog):
    """§8.3: argv[0] containing '/' is a path relative to cwd."""
    run = sclient.run("rel", [prog], cwd=str(spawn_dir))
    assert run.stdout == b"hello-from-script " + prog.encode() + b"\n"
    assert run.exit_code == 0


def test_bare_name_searched_in_child_path(sclient, spawn_dir):
    """§8.3: a bare name is searched in the child's PATH."""
    run = sclient.run("bare", ["hello.sh"], cwd=str(spawn_dir),
                      env={"PATH": str(spawn_dir / "bin")})
    assert run.stdout == b"hello-from-script " + str(spawn_dir / "bin/hello.sh").encode() + b"\n"


def test_bare_name_not_in_child_path(sclient, spawn_dir):
    """§8.3: not found in the child's PATH -> -32603 ENOENT."""
    err = sclient.error("process/start", params("nf", ["hello.sh"], file_uri(str(spawn_dir)),
                                                env={"PATH": "/nonexistent"}))
    assert err == ENOENT


def test_bare_name_without_child_path_uses_server_path(sclient):
    """§8.3: without PATH in the child env, the server's PATH is used (env with env {})."""
    run = sclient.run("envbare", ["env"], env={})
    assert run.exit_code == 0
    assert run.stdout == b""


def test_missing_program(sclient):
    """§6.6: a missing program -> -32603 'No such file or directory (os error 2)'."""
    assert sclient.error("process/start", params("m", ["/definitely/not/here"])) == ENOENT


def test_unknown_bare_program(sclient):
    """§6.6: an unknown bare name -> -32603 ENOENT."""
    assert sclient.error("process/start", params("m2", ["no-such-program-xyz"],
                                                 env=PATH_ENV)) == ENOENT


def test_program_not_executable(sclient, spawn_dir):
    """§6.6: a non-executable program -> -32603 EACCES."""
    err = sclient.error("process/start", params("ne", [str(spawn_dir / "bin/noexec.sh")]))
    assert err == EACCES


def test_program_is_directory(sclient, spawn_dir):
    """§6.6: a directory as program -> -32603 EACCES."""
    err = sclient.error("process/start", params("dir", [str(spawn_dir / "bin")]))
    assert err == EACCES


def test_program_path_through_file(sclient, spawn_dir):
    """§6.6: a program path through a regular file -> -32603 ENOTDIR."""
    err = sclient.error("process/start", params("nd", [str(spawn_dir / "bin/hello.sh/x")]))
    assert err == ENOTDIR


def test_failed_spawn_does_not_take_the_id(sclient):
    """§6.6: after a failed spawn the processId can still be used."""
    assert sclient.error("process/start", params("again", ["/nope"])) == ENOENT
    assert sclient.start("again", ["/bin/true"])["processId"] == "again"
    assert sclient.collect("again").exit_code == 0


def test_failed_spawn_emits_no_notifications(sclient):
    """§6.6: a failed spawn produces no process notifications."""
    sclient.error("process/start", params("ghost", ["/nope"]))
    sclient.run("marker", ["/bin/true"])
    assert not any(m.get("params", {}).get("processId") == "ghost"
                   for m in sclient.log if "method" in m)


# ---- cwd (§5.1, §6.6)


def cwd_of(c, cwd, pid):
    run = c.run(pid, ["/bin/pwd"], cwd=cwd)
    assert run.exit_code == 0
    return run.stdout.decode().rstrip("\n")


def test_cwd_file_uri(sclient, spawn_dir):
    """§6.6: cwd as a file: URI."""
    assert cwd_of(sclient, file_uri(str(spawn_dir)), "c1") == str(spawn_dir)


def test_cwd_native_absolute_path(sclient, spawn_dir):
    """uexec difference 1: a native absolute cwd is accepted like a file: URI."""
    res = sclient.result("process/start", params("c2", ["/bin/pwd"], str(spawn_dir)))
    assert res == {"processId": "c2", "sandboxType": "none"}
    assert sclient.collect("c2").stdout == str(spawn_dir).encode() + b"\n"


def test_cwd_native_path_with_space(sclient, spawn_dir):
    """uexec difference 1: native paths are taken literally (no percent-decoding)."""
    d = spawn_dir / "sub dir"
    assert cwd_of(sclient, str(d), "c3") == str(d)


@pytest.mark.parametrize("form", ["file://localhost{p}", "file:{p}", "FILE://{p}",
                                  "file://{p}/", "file://{p}//", "file://{p}/bin/..",
                                  "file://{p}/./bin/../"])
def test_cwd_uri_spellings(sclient, spawn_dir, form):
    """§5.1: accepted spellings, trailing slashes and dot segments name the same directory."""
    assert cwd_of(sclient, form.format(p=str(spawn_dir)), "cs") == str(spawn_dir)


def test_cwd_percent_decoding(sclient, spawn_dir):
    """§5.1: percent-encoded characters in cwd URIs are decoded."""
    uri = "file://" + str(spawn_dir) + "/sub%20dir"
    assert cwd_of(sclient, uri, "pct") == str(spawn_dir / "sub dir")


def test_cwd_missing(sclient):
    """§6.6: a missing cwd -> -32603 ENOENT."""
    assert sclient.error("process/start", params("cm", cwd="file:///no/such/dir")) == ENOENT


def test_cwd_missing_native(sclient):
    """§6.6 + uexec difference 1: a missing native cwd -> -32603 ENOENT."""
    assert sclient.error("process/start", params("cmn", cwd="/no/such/dir")) == ENOENT


def test_cwd_is_a_file(sclient, spawn_dir):
    """§6.6: cwd that is a file -> -32603 ENOTDIR."""
    err = sclient.error("process/start", params("cf", cwd=file_uri(str(spawn_dir / "bin/hello.sh"))))
    assert err == ENOTDIR


@pytest.mark.parametrize("cwd", ["relative/dir", "~/x", ""])
def test_cwd_relative_rejected(sclient, cwd):
    """§5.1: relative strings are not URIs -> -32602 'invalid URI: relative URL without a base'."""
    assert sclient.error("process/start", params("cr", cwd=cwd)) == RELATIVE


def test_cwd_remote_host_rejected(sclient):
    """§5.1/§6.6: file://server/share -> -32602 cwd host message."""
    assert sclient.error("process/start", params("ch", cwd="file://server/share")) == {
        "code": -32602,
        "message": "cwd URI `file://server/share` is not valid on this exec-server host: "
                   "'file://server/share' is invalid on 'linux'"}


@pytest.mark.parametrize("cwd,message", [
    ("http://example.com/tmp", "unsupported path URI scheme `http`"),
    ("file:///tmp?x=1", "query parameters are not allowed in path URIs"),
    ("file:///tmp#frag", "fragments are not allowed in path URIs"),
])
def test_cwd_uri_errors(sclient, cwd, message):
    """§5.1: scheme, query and fragment errors are -32602."""
    assert sclient.error("process/start", params("cu", cwd=cwd)) == {"code": -32602,
                                                                   "message": message}


# ---- ids and required fields


def test_duplicate_process_id_while_running(sclient):
    """§6.6: a running processId -> -32600 'process <id> already exists'."""
    sclient.start("d1", ["/bin/sleep", "30"])
    assert sclient.error("process/start", params("d1")) == {
        "code": -32600, "message": "process d1 already exists"}
    sclient.terminate("d1")


def test_duplicate_process_id_after_exit(sclient):
    """§6.6: a finished process keeps its id."""
    sclient.run("d2", ["/bin/true"])
    for _ in range(2):
        assert sclient.error("process/start", params("d2")) == {
            "code": -32600, "message": "process d2 already exists"}
    assert sclient.read("d2")["exited"] is True


def test_empty_argv(sclient):
    """§6.6: argv [] -> -32602 'argv must not be empty'."""
    assert sclient.error("process/start", params("e", [])) == {
        "code": -32602, "message": "argv must not be empty"}


@pytest.mark.parametrize("field", ["processId", "argv", "env", "tty"])
def test_required_fields(sclient, field):
    """§6.6: processId, argv, env and tty are required."""
    p = params("rq")
    del p[field]
    assert sclient.error("process/start", p) == {"code": -32602,
                                                "message": "missing field `%s`" % field}


def test_cwd_is_required(sclient):
    """§6.6: cwd is required like processId, argv, env and tty: the reference 0.169.0
    answers a start without it with -32602 `missing field `cwd`` (p05_schema.out's
    "optional" was an artefact of a probe that stopped at argv) and null with a type
    error (tests/reference/steps.py params_process)."""
    p = params("nocwd", ["/bin/pwd"])
    del p["cwd"]
    assert sclient.error("process/start", p) == {"code": -32602,
                                                "message": "missing field `cwd`"}
    p["cwd"] = None
    assert sclient.error("process/start", p) == {
        "code": -32602, "message": "invalid type: null, expected a string"}


def test_missing_params_entirely(sclient):
    """p02: process/start {} -> missing field `processId`."""
    assert sclient.error("process/start", {}) == {"code": -32602,
                                                 "message": "missing field `processId`"}


def test_optional_fields_null_or_absent(sclient):
    """§6.6: optional members accept null; pipeStdin/arg0 may be omitted."""
    p = params("opt", ["/bin/true"], envPolicy=None, metadata=None, sandbox=None,
               managedNetwork=None, networkProxy=None, shellSnapshot=None,
               enforceManagedNetwork=False, arg0=None)
    assert sclient.result("process/start", p) == {"processId": "opt", "sandboxType": "none"}
    assert sclient.collect("opt").exit_code == 0


BAD_TYPES = [
    ("processId", True, "invalid type: boolean `true`, expected a string"),
    ("argv", True, "invalid type: boolean `true`, expected a sequence"),
    ("argv", False, "invalid type: boolean `false`, expected a sequence"),
    ("arg0", True, "invalid type: boolean `true`, expected a string"),
    ("cwd", True, "invalid type: boolean `true`, expected a string"),
    ("enforceManagedNetwork", "not-a-bool", 'invalid type: string "not-a-bool", expected a boolean'),
    ("env", True, "invalid type: boolean `true`, expected a map"),
    ("envPolicy", True, "invalid type: boolean `true`, expected struct ExecEnvPolicy"),
    ("managedNetwork", True,
     "invalid type: boolean `true`, expected struct ManagedNetworkSandboxContext"),
    ("metadata", True, "invalid type: boolean `true`, expected struct ExecMetadata"),
    ("networkProxy", True,
     "invalid type: boolean `true`, expected struct RemoteNetworkProxyLaunchConfig"),
    ("pipeStdin", "not-a-bool", 'invalid type: string "not-a-bool", expected a boolean'),
    ("sandbox", True, "invalid type: boolean `true`, expected struct WireFileSystemSandboxContext"),
    ("shellSnapshot", True, "invalid type: boolean `true`, expected struct ShellSnapshotRequest"),
    ("tty", "not-a-bool", 'invalid type: string "not-a-bool", expected a boolean'),
]


@pytest.mark.parametrize("field,value,message", BAD_TYPES, ids=[f"{b[0]}-{b[1]}" for b in BAD_TYPES])
def test_bad_param_types(sclient, field, value, message):
    """p05_schema: serde-style type errors for process/start members."""
    p = params("bt")
    p[field] = value
    assert sclient.error("process/start", p) == {"code": -32602, "message": message}


def test_argv_element_wrong_type(sclient):
    """§6.6: argv elements must be strings ("number" wording as recorded in p18/p13)."""
    err = sclient.error("process/start", params("ae", ["/bin/echo", 5]))
    assert err == {"code": -32602, "message": "invalid type: number, expected a string"}


def test_managed_network_members(sclient):
    """p06: managedNetwork member types."""
    err = sclient.error("process/start",
                        params("mn", managedNetwork={"allowLocalBinding": "zzz-not-valid"}))
    assert err == {"code": -32602,
                   "message": 'invalid type: string "zzz-not-valid", expected a boolean'}


# ---- sandbox (uexec difference 3)

WORKSPACE_WRITE = {
    "permissions": {"type": "managed",
                    "file_system": {"type": "restricted", "entries": [
                        {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"},
                        {"path": {"type": "special", "value": {"kind": "project_roots"}},
                         "access": "write"},
                        {"path": {"type": "special", "value": {"kind": "slash_tmp"}},
                         "access": "write"}]},
                    "network": "restricted"},
    "cwd": "file:///tmp", "workspaceRoots": ["file:///tmp"],
    "windowsSandboxLevel": "disabled", "windowsSandboxProxySettingsMode": "reconcile",
    "useLegacyLandlock": False}
NOT_ENFORCEABLE = {"code": -32602, "message": "sandbox intent cannot be enforced on this executor"}


def test_sandbox_without_restriction_runs(sclient):
    """§5.4 + uexec difference 3: permissions.type "disabled" asks for no restriction and runs."""
    sb = {"permissions": {"type": "disabled"}, "windowsSandboxLevel": "disabled"}
    res = sclient.result("process/start", params("sdis", ["/bin/echo", "ok"], sandbox=sb))
    assert res["processId"] == "sdis" and res["sandboxType"] in ("none", "linuxSeccomp")
    run = sclient.collect("sdis")
    assert run.stdout == b"ok\n" and run.exit_code == 0


def test_sandbox_null_runs_unsandboxed(sclient):
    """§6.6: sandbox null -> sandboxType none, runs normally."""
    res = sclient.result("process/start", params("sn", ["/bin/echo", "ok"], sandbox=None))
    assert res == {"processId": "sn", "sandboxType": "none"}
    run = sclient.collect("sn")
    assert run.stdout == b"ok\n" and run.exited["sandboxDenied"] is False


@pytest.fixture
def nosandbox(server_factory):
    """A server started with --no-sandbox: every restricting sandbox is refused (fail closed)."""
    return server_factory("--no-sandbox").connect()


def test_sandbox_workspace_write_refused_without_sandbox(nosandbox):
    """fail closed: a restricting sandbox the server cannot enforce is refused with -32602."""
    assert nosandbox.error("process/start", params("sw", sandbox=WORKSPACE_WRITE)) == \
        NOT_ENFORCEABLE


def test_sandbox_refused_spawns_nothing(nosandbox, tmp_path):
    """fail closed: the refused process never runs and its id stays free."""
    marker = tmp_path / "ran"
    p = params("sx", ["/bin/sh", "-c", "echo > %s" % marker], sandbox=WORKSPACE_WRITE)
    assert nosandbox.error("process/start", p) == NOT_ENFORCEABLE
    assert not marker.exists()
    assert nosandbox.start("sx", ["/bin/true"])["processId"] == "sx"
    nosandbox.collect("sx")


def test_sandbox_network_only_restriction_refused(nosandbox):
    """fail closed: a network restriction alone is also refused."""
    sb = dict(WORKSPACE_WRITE)
    sb["permissions"] = {"type": "managed", "file_system": {"type": "unrestricted"},
                         "network": "restricted"}
    assert nosandbox.error("process/start", params("snr", sandbox=sb)) == NOT_ENFORCEABLE


def test_sandbox_tty_refused(nosandbox):
    """fail closed: refusal applies to PTY processes too."""
    assert nosandbox.error("process/start", params("st", tty=True, sandbox=WORKSPACE_WRITE)) \
        == NOT_ENFORCEABLE


def test_sandbox_disabled_still_runs_without_sandbox(nosandbox):
    """permissions "disabled" restricts nothing, so it runs even with --no-sandbox."""
    sb = {"permissions": {"type": "disabled"}, "windowsSandboxLevel": "disabled"}
    res = nosandbox.result("process/start", params("nd", ["/bin/echo", "ok"], sandbox=sb))
    assert res == {"processId": "nd", "sandboxType": "linuxSeccomp"}
    assert nosandbox.collect("nd").stdout == b"ok\n"


@pytest.mark.parametrize("sandbox,message", [
    ({}, "missing field `permissions`"),
    ({"permissions": {}, "windowsSandboxLevel": "disabled"}, "missing field `type`"),
    ({"permissions": 1, "windowsSandboxLevel": "disabled"},
     "invalid type: integer `1`, expected internally tagged enum ExecPermissionProfile"),
    ({"permissions": {"type": "zzz"}, "windowsSandboxLevel": "disabled"},
     "unknown variant `zzz`, expected one of `managed`, `disabled`, `external`"),
    ({"permissions": {"type": "disabled"}, "windowsSandboxLevel": "zzz"},
     "unknown variant `zzz`, expected one of `disabled`, `restricted-token`, `elevated`, `mxc`"),
])
def test_sandbox_decoding_errors(sclient, sandbox, message):
    """§5.4/p06: an invalid sandbox object -> -32602 with the decoding message."""
    assert sclient.error("process/start", params("sd", sandbox=sandbox)) == {
        "code": -32602, "message": message}


def test_sandbox_missing_windows_level(sclient):
    """§6.6: windowsSandboxLevel is required."""
    sb = dict(WORKSPACE_WRITE)
    del sb["windowsSandboxLevel"]
    assert sclient.error("process/start", params("sl", sandbox=sb)) == {
        "code": -32602, "message": "missing field `windowsSandboxLevel`"}


def test_executable_bit_sanity(spawn_dir):
    """Fixture sanity: hello.sh is executable, noexec.sh is not."""
    assert os.stat(spawn_dir / "bin/hello.sh").st_mode & stat.S_IXUSR
    assert not os.stat(spawn_dir / "bin/noexec.sh").st_mode & stat.S_IXUSR
