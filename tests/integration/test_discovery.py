# SPDX-License-Identifier: MIT
"""capabilityRoots/discoverV1 and capabilities/discoverV2 (PROTOCOL.md §6.24; the reference
0.171.0's behaviour, probed: tests/reference/steps.py `discovery*` compares both servers).

V1 lists and reads what lies below client-chosen roots; V2 does it for the executor's own
locations ($CODEX_HOME/skills, $HOME/.agents/skills, /etc/codex/skills, the plugin cache) and
parses each SKILL.md's YAML front matter and agents/openai.yaml. Problems are warnings (V1:
the reference's detailed texts; V2: one summary line per location), never request errors."""

import json
import os
import pathlib
import shutil
import tempfile

import pytest

import conftest
from wsclient import file_uri

V1 = "capabilityRoots/discoverV1"
V2 = "capabilities/discoverV2"
WARN_METADATA = "some capability metadata could not be loaded; discovery may be incomplete"
WARN_LOCATIONS = "some capability locations could not be resolved; discovery may be incomplete"

no_system_skills = pytest.mark.skipif(os.path.exists("/etc/codex/skills"),
                                      reason="this machine has /etc/codex/skills")


def write(path, data):
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def skill(root, name, fm, body="body\n"):
    return write(pathlib.Path(root) / name / "SKILL.md", "---\n" + fm + "---\n" + body)


@pytest.fixture
def area():
    """base/home (HOME), base/codex (CODEX_HOME), base/r (a V1 root); outside /tmp, which a
    sandbox policy may treat specially."""
    base = pathlib.Path(tempfile.mkdtemp(dir="/var/tmp", prefix="uexec-disc-"))
    for d in ("home", "codex", "r"):
        (base / d).mkdir()
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def dclient(server_factory, area):
    env = {k: v for k, v in os.environ.items() if k not in ("CODEX_HOME", "HOME")}
    env.update(CODEX_HOME=str(area / "codex"), HOME=str(area / "home"))
    yield from conftest.connected(server_factory(env=env))


def v2(c, **extra):
    return c.result(V2, dict({"cwd": file_uri("/")}, **extra), timeout=60)


def by_name(res):
    return {s["name"]: s for s in res["skills"]}


# ---- capabilities/discoverV2 ----

@no_system_skills
def test_v2_skill_locations_and_shape(dclient, area):
    skill(area / "codex" / "skills", "alpha", "name: alpha\ndescription: Alpha skill.\n")
    skill(area / "codex" / "skills" / "group", "inner", "name: inner\ndescription: nested.\n")
    skill(area / "codex" / "skills" / ".system", "sys", "name: sys\ndescription: hidden dir.\n")
    skill(area / "home" / ".agents" / "skills", "u1", "name: u1\ndescription: user agent.\n")
    reply = dclient.call(V2, {"cwd": file_uri(area / "r")}, timeout=60)
    res = reply["result"]
    assert list(res) == ["plugins", "skills", "warnings"]
    assert res["plugins"] == [] and res["warnings"] == []
    home_root = {"id": "codex-home-skills", "path": file_uri(area / "codex" / "skills")}
    # Sorted by path within a location; $CODEX_HOME's before $HOME's.
    assert [s["name"] for s in res["skills"]] == ["sys", "alpha", "inner", "u1"]
    alpha = res["skills"][1]
    assert list(alpha) == ["name", "description", "shortDescription", "path", "discoveryRoot",
                           "dependencies", "policy"]
    assert alpha == {"name": "alpha", "description": "Alpha skill.", "shortDescription": None,
                     "path": file_uri(area / "codex" / "skills" / "alpha" / "SKILL.md"),
                     "discoveryRoot": home_root, "dependencies": None, "policy": None}
    assert res["skills"][3]["discoveryRoot"] == {
        "id": "user-agent-skills", "path": file_uri(area / "home" / ".agents" / "skills")}
    # The cwd is not a location: project skills there are not listed (V1 roots are for that).
    skill(area / "r" / ".agents" / "skills", "proj", "name: proj\ndescription: p.\n")
    assert "proj" not in by_name(v2(dclient, cwd=file_uri(area / "r")))


@no_system_skills
def test_v2_front_matter_variants(dclient, area):
    s = area / "codex" / "skills"
    skill(s, "quoted", 'name: "  a   b  "\ndescription: \'many   spaces\'\n')
    skill(s, "block", "name: block\ndescription: |\n  line one\n  line two\n")
    skill(s, "folded", "name: folded\ndescription: >-\n  fold one\n  fold two\n")
    skill(s, "anchor", "description: &x anchored\nname: *x\n")
    skill(s, "repair", "name: repair\ndescription: Build for AWS: ECS # comment\n")
    skill(s, "short", "name: short\ndescription: Long.\nmetadata:\n  short-description: Short.\n")
    skill(s, "flowmeta", "name: flowmeta\ndescription: d\nmetadata: {short-description: flow}\n")
    skill(s, "number", "name: number\ndescription: 42\n")
    skill(s, "tagged", "name: !!str ~\ndescription: d\n")
    skill(s, "noname", "description: Named after its directory.\n")
    skill(s, "crlf", "").write_bytes(b"---\r\nname: crlf\r\ndescription: crlf desc\r\n---\r\n")
    skill(s, "unicode", 'name: unicode\ndescription: "x\\u00a0y\\u2003z"\n')
    skill(s, "nul", 'name: nul\ndescription: "a\\0b"\n')
    res = v2(dclient)
    got = {n: (x["description"], x["shortDescription"]) for n, x in by_name(res).items()}
    assert got == {
        "a b": ("many spaces", None), "block": ("line one line two", None),
        "folded": ("fold one fold two", None), "anchored": ("anchored", None),
        "repair": ("Build for AWS: ECS", None), "short": ("Long.", "Short."),
        "flowmeta": ("d", "flow"), "number": ("42", None), "~": ("d", None),
        "noname": ("Named after its directory.", None), "crlf": ("crlf desc", None),
        "unicode": ("x y z", None), "nul": ("a\u0000b", None)}
    assert res["warnings"] == []


@no_system_skills
def test_v2_invalid_skills_become_one_warning(dclient, area):
    s = area / "codex" / "skills"
    skill(s, "ok", "name: ok\ndescription: fine\n")
    write(s / "nofm" / "SKILL.md", "no front matter\n")
    skill(s, "nodesc", "name: nodesc\n")
    skill(s, "emptydesc", 'name: emptydesc\ndescription: ""\n')
    skill(s, "long", "name: %s\ndescription: d\n" % ("n" * 65))
    skill(s, "list", "- a\n- b\n")
    skill(s, "dup", "name: a\nname: b\ndescription: d\n")
    skill(s, "badmeta", "name: badmeta\ndescription: d\nmetadata: str\n")
    write(s / "noclose" / "SKILL.md", "---\nname: noclose\ndescription: x\n")
    write(s / "latin1" / "SKILL.md", b"---\nname: latin1\ndescription: caf\xe9\n---\n")
    skill(s, "sixtyfour", "name: %s\ndescription: d\n" % ("n" * 64))
    res = v2(dclient)
    assert sorted(by_name(res)) == ["n" * 64, "ok"]
    assert res["warnings"] == [WARN_METADATA]


@no_system_skills
def test_v2_openai_yaml_dependencies_and_policy(dclient, area):
    s = area / "codex" / "skills"
    skill(s, "deps", "name: deps\ndescription: d\n")
    write(s / "deps" / "agents" / "openai.yaml",
          "interface:\n  display_name: D\ndependencies:\n  tools:\n"
          "    - type: mcp\n      value: srv\n      description: a   server\n"
          "      transport: stdio\n      oauth:\n        callback_port: 8123\n"
          "    - type: env_var\n"  # no value: dropped
          "policy:\n  allow_implicit_invocation: false\n  products: [codex, CHATGPT]\n")
    skill(s, "badmeta", "name: badmeta\ndescription: d\n")
    write(s / "badmeta" / "agents" / "openai.yaml", "policy:\n  products: [nosuch]\n")
    res = by_name(v2(dclient))
    assert res["deps"]["dependencies"] == {"tools": [{
        "type": "mcp", "value": "srv", "description": "a server", "transport": "stdio",
        "command": None, "url": None, "oauthCallbackPort": 8123}]}
    assert res["deps"]["policy"] == {"allowImplicitInvocation": False,
                                     "products": ["codex", "chatgpt"]}
    # A file that does not decode is ignored as a whole; the skill stays.
    assert res["badmeta"]["dependencies"] is None and res["badmeta"]["policy"] is None


@no_system_skills
def test_v2_installed_plugins(dclient, area):
    cache = area / "codex" / "plugins" / "cache" / "mk"
    for ver in ("1.9.0", "1.10.0", "1.10.0-rc.1"):
        write(cache / "alpha" / ver / ".codex-plugin" / "plugin.json",
              json.dumps({"name": "alpha-ns", "interface": {"displayName": "Alpha"}}))
        skill(cache / "alpha" / ver / "skills", "s1", "name: s1\ndescription: v%s\n" % ver)
    write(cache / "alpha" / ".codex-remote-plugin-install.json",
          '{"schema_version": 1, "remote_plugin_id": "  rp-1  "}')
    write(cache / "beta" / "local" / ".claude-plugin" / "plugin.json", "{}")
    write(cache / "beta" / "9.0.0" / ".claude-plugin" / "plugin.json", "{}")
    (cache / "nomani" / "1.0.0").mkdir(parents=True)
    res = v2(dclient)
    assert [p["id"] for p in res["plugins"]] == ["alpha@mk", "beta@mk"]
    alpha, beta = res["plugins"]
    assert list(alpha) == ["id", "displayName", "remotePluginId", "version", "root", "files",
                           "skills"]
    root = cache / "alpha" / "1.10.0"
    assert alpha["displayName"] == "Alpha" and alpha["remotePluginId"] == "rp-1"
    assert alpha["version"] == "1.10.0" and alpha["root"] == file_uri(root)
    assert alpha["files"]["manifest"]["path"] == file_uri(root / ".codex-plugin" / "plugin.json")
    assert alpha["skills"] == [{
        "name": "alpha-ns:s1", "description": "v1.10.0", "shortDescription": None,
        "path": file_uri(root / "skills" / "s1" / "SKILL.md"), "dependencies": None,
        "policy": None}]
    # "local" wins; a manifest without a name takes its directory's (the version's) name.
    assert beta["version"] == "local" and beta["displayName"] == "local"
    # The plugin without a readable manifest is left out, with the summary warning.
    assert res["warnings"] == [WARN_METADATA]
    write(cache / "alpha" / ".codex-remote-plugin-install.json", '{"schema_version": 2}')
    res = v2(dclient)
    assert res["plugins"][0]["remotePluginId"] is None
    assert res["warnings"] == [WARN_LOCATIONS, WARN_METADATA]


def test_v2_params(dclient):
    def err(params):
        return dclient.error(V2, params)

    assert err(None) == {"code": -32602,
                         "message": "invalid type: null, expected struct DiscoverV2CapabilitiesRequest"}
    assert err({}) == {"code": -32602, "message": "missing field `cwd`"}
    assert err({"cwd": 1}) == {"code": -32602, "message": "invalid type: number, expected a string"}
    assert err({"cwd": "rel"})["message"] == "invalid URI: relative URL without a base"
    assert err({"cwd": "file:///", "sandbox": True}) == {
        "code": -32602,
        "message": "invalid type: boolean `true`, expected struct FileSystemSandboxContext"}
    assert err({"cwd": "file:///", "sandbox": {}}) == {"code": -32602,
                                                       "message": "missing field `permissions`"}
    # serde's sequence form: the sandbox has a default, the cwd is unused (any host).
    assert "skills" in dclient.result(V2, ["file:///x"])
    assert "skills" in dclient.result(V2, {"cwd": "file://remote/x"})


# ---- capabilityRoots/discoverV1 ----

def test_v1_root_files(dclient, area):
    r = area / "r"
    man = write(r / ".codex-plugin" / "plugin.json",
                '{"name":"p1","mcpServers":"./m.json","apps":"../x.json"}')
    write(r / "m.json", '{"m":1}')
    write(r / "skills" / "s1" / "SKILL.md", "S1")
    write(r / "skills" / "s1" / "agents" / "openai.yaml", "meta: 1\n")
    write(r / "sub dir" / ".claude-plugin" / "plugin.json", '{"name":"sub"}')
    write(r / "sub dir" / "skills" / "s3" / "SKILL.md", "S3")
    write(r / "a" / "b" / "c" / "d" / "e" / "f" / "g" / "SKILL.md", "too deep")
    write(r / "a" / "b" / "c" / "d" / "e" / "SKILL.md", "deep enough")
    write(r / "skills" / "bad" / "SKILL.md", b"\xff\xfe")
    write(r / "skills" / "big" / "SKILL.md", b"a" * (1024 * 1024 + 1))
    # Links to directories are followed, each directory read once: breadth-first in name order,
    # "link" (a link to skills/) comes first, and skills/ itself is then skipped.
    os.symlink(r / "skills", r / "link")
    res = dclient.result(V1, {"roots": [{"id": "r1", "path": file_uri(r)}]}, timeout=60)
    (root,) = res["roots"]
    assert list(root) == ["id", "path", "plugin", "skills", "namespaceManifests", "warnings",
                          "error"]
    assert root["id"] == "r1" and root["path"] == file_uri(r) and root["error"] is None
    assert root["plugin"] == {
        "manifest": {"path": file_uri(man), "contents": man.read_text()},
        "mcpConfig": {"path": file_uri(r / "m.json"), "contents": '{"m":1}'},
        "appsConfig": None}
    assert [s["instructions"]["path"] for s in root["skills"]] == [
        file_uri(r / "a/b/c/d/e/SKILL.md"), file_uri(r / "link/s1/SKILL.md"),
        file_uri(r / "sub dir/skills/s3/SKILL.md")]
    assert "%20" in root["skills"][2]["instructions"]["path"]
    assert root["skills"][1] == {
        "instructions": {"path": file_uri(r / "link/s1/SKILL.md"), "contents": "S1"},
        "metadata": {"path": file_uri(r / "link/s1/agents/openai.yaml"), "contents": "meta: 1\n"}}
    assert [m["path"] for m in root["namespaceManifests"]] == [
        file_uri(man), file_uri(r / "sub dir" / ".claude-plugin" / "plugin.json")]
    assert root["warnings"] == [
        "ignoring apps in %s: path must start with `./`" % file_uri(man),
        "capability file %s is not UTF-8: invalid utf-8 sequence of 1 bytes from index 0"
        % file_uri(r / "link/bad/SKILL.md"),
        "capability file %s exceeds the 1048576-byte limit" % file_uri(r / "link/big/SKILL.md")]


def test_v1_root_errors_and_order(dclient, area):
    f = write(area / "r" / "file.txt", "x")
    res = dclient.result(V1, {"roots": [
        {"id": "a", "path": file_uri(area / "missing")},
        {"id": "a", "path": file_uri(f)},
        {"id": "c", "path": "file://remote/x"},
        {"id": "d", "path": file_uri(area / "r")}]})
    errors = [r["error"] for r in res["roots"]]
    assert errors == [
        "failed to inspect capability root %s: No such file or directory (os error 2)"
        % file_uri(area / "missing"),
        "capability root %s is not a directory" % file_uri(f),
        "failed to inspect capability root file://remote/x: 'file://remote/x' is invalid on 'linux'",
        None]
    assert [r["id"] for r in res["roots"]] == ["a", "a", "c", "d"]
    assert dclient.result(V1, {"roots": []}) == {"roots": []}


def test_v1_traversal_limit(dclient, area):
    r = area / "r"
    for i in range(2100):
        (r / ("d%04d" % i)).mkdir()
    write(r / "d0000" / "SKILL.md", "early")
    write(r / "d2099" / "SKILL.md", "late")
    (root,) = dclient.result(V1, {"roots": [{"id": "r", "path": file_uri(r)}]}, timeout=60)["roots"]
    assert [s["instructions"]["contents"] for s in root["skills"]] == ["early"]
    assert root["warnings"] == ["capability scan reached its traversal limit (root: %s)"
                                % file_uri(r)]


def test_v1_params(dclient):
    def err(params):
        return dclient.error(V1, params)

    assert err(None)["message"] == \
        "invalid type: null, expected struct WireCapabilityRootsDiscoverParams"
    assert err({})["message"] == "missing field `roots`"
    assert err({"roots": {}})["message"] == "invalid type: map, expected a sequence"
    assert err({"roots": [1]})["message"] == \
        "invalid type: number, expected struct WireCapabilityRootDiscoverRequest"
    assert err({"roots": [{"id": "r"}]})["message"] == "missing field `path`"
    assert err({"roots": [{"id": "r", "path": True}]})["message"] == \
        "invalid type: boolean `true`, expected a string"
    assert err({"roots": [["r", "file:///x"]]})["message"] == \
        "invalid length 2, expected struct WireCapabilityRootDiscoverRequest with 3 elements"
    assert err({"roots": [{"id": "r", "path": "file:///", "sandbox": True}]})["message"] == \
        "invalid type: boolean `true`, expected struct WireFileSystemSandboxContext"
    assert err({"roots": [{"id": "x", "path": "file:///"}] * 129}) == {
        "code": -32600, "message": "capability root discovery accepts at most 128 roots"}


def test_v1_closed_connection_mid_scan(server_factory, area):
    """A client that leaves while its scan runs: the job finishes into nothing, the server
    keeps serving."""
    for i in range(300):
        write(area / "r" / ("d%03d" % i) / "SKILL.md", "x" * 1000)
    s = server_factory()
    c = s.connect()
    c.request(V1, {"roots": [{"id": "r", "path": file_uri(area / "r")}] * 8})
    c.ws.abort()
    c2 = s.connect()
    (root,) = c2.result(V1, {"roots": [{"id": "r", "path": file_uri(area / "r")}]},
                        timeout=60)["roots"]
    assert len(root["skills"]) == 300


# ---- sandbox ----

def _sandbox(cwd, deny=()):
    w = file_uri(cwd)
    entries = [{"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"}]
    entries += [{"path": {"type": "path", "path": file_uri(d)}, "access": "deny"} for d in deny]
    return {"permissions": {"type": "managed", "file_system": {"type": "restricted",
                                                               "entries": entries},
                            "network": "restricted"},
            "cwd": w, "windowsSandboxLevel": "disabled"}


@pytest.mark.needs("sandbox")
def test_v1_sandbox_denials_are_warnings(dclient, area):
    r = area / "r"
    write(r / "skills" / "ok" / "SKILL.md", "ok")
    write(r / "secret" / "skills" / "hid" / "SKILL.md", "hid")
    write(r / "skills" / "den" / "SKILL.md", "den")
    sb = _sandbox(r, deny=[r / "secret", r / "skills" / "den" / "SKILL.md"])
    res = dclient.result(V1, {"roots": [{"id": "x\u0000", "path": file_uri(r), "sandbox": sb},
                                        {"id": "y", "path": file_uri(r)}]}, timeout=60)
    sandboxed, plain = res["roots"]
    assert sandboxed["id"] == "x\u0000"  # the client's string, NUL and all, through the helper
    assert [s["instructions"]["contents"] for s in sandboxed["skills"]] == ["ok"]
    assert sandboxed["warnings"] == [
        "failed to scan capability path %s: Permission denied (os error 13)" % file_uri(r / "secret"),
        "failed to read capability file %s: Permission denied (os error 13)"
        % file_uri(r / "skills" / "den" / "SKILL.md")]
    assert sandboxed["error"] is None
    # The unsandboxed root of the same request sees everything.
    assert [s["instructions"]["contents"] for s in plain["skills"]] == ["hid", "den", "ok"]
    # A denied root: its scan fails, a warning, not an error.
    (root,) = dclient.result(V1, {"roots": [{"id": "x", "path": file_uri(r),
                                             "sandbox": _sandbox(r, deny=[r])}]},
                             timeout=60)["roots"]
    assert root["skills"] == [] and root["error"] is None
    assert root["warnings"][0] == ("failed to scan capability path %s: Permission denied "
                                   "(os error 13)" % file_uri(r))


@pytest.mark.needs("sandbox")
@no_system_skills
def test_v2_sandbox(dclient, area):
    s = area / "codex" / "skills"
    skill(s, "a", "name: a\ndescription: d\n")
    assert [x["name"] for x in v2(dclient, sandbox=_sandbox(area / "r"))["skills"]] == ["a"]
    res = v2(dclient, sandbox=_sandbox(area / "r", deny=[s]))
    assert res == {"plugins": [], "skills": [], "warnings": [WARN_METADATA]}
    # The whole Codex home out of reach: nothing to find, nothing to warn about.
    res = v2(dclient, sandbox=_sandbox(area / "r", deny=[area / "codex"]))
    assert res == {"plugins": [], "skills": [], "warnings": []}


def test_capabilities_advertised(dclient):
    caps = dclient.init_result["environmentInfo"]["capabilities"]
    assert caps["capabilityDiscoveryV2"] is True and caps["capabilityDiscoverySandbox"] is True


def test_server_secrets_are_not_read(server_factory, area):
    """A link in a scanned tree to the server's own token file (a sandboxed command can
    plant one): discovery does not read it, as fs/readFile does not; a warning says
    Permission denied and the server logs the refusal (never the contents)."""
    import base64
    d = area / "etc"
    d.mkdir(mode=0o700)
    token = base64.b64encode(os.urandom(24)).decode()
    tok = write(d / "token", token + "\n")
    tok.chmod(0o600)
    s = server_factory("--ws-auth", "capability-token", "--ws-token-file", str(tok))
    c = s.connect(extra_headers=[("Authorization", "Bearer " + token)])
    r = area / "r"
    write(r / ".codex-plugin" / "plugin.json", "{}")
    os.symlink(tok, r / ".mcp.json")
    skill_dir = r / "skills" / "s"
    skill_dir.mkdir(parents=True)
    os.symlink(tok, skill_dir / "SKILL.md")  # a link to a file: not listed by the walk
    write(r / "skills" / "t" / "SKILL.md", "t")
    (r / "skills" / "t" / "agents").mkdir()
    os.symlink(tok, r / "skills" / "t" / "agents" / "openai.yaml")
    (root,) = c.result(V1, {"roots": [{"id": "r", "path": file_uri(r)}]})["roots"]
    assert root["plugin"]["mcpConfig"] is None
    assert root["warnings"] == [
        "failed to read capability file %s: Permission denied (os error 13)" % file_uri(p)
        for p in (r / ".mcp.json", r / "skills" / "t" / "agents" / "openai.yaml")]
    assert [(x["instructions"]["contents"], x["metadata"]) for x in root["skills"]] == [("t", None)]
    assert token not in json.dumps(root)
    assert b"did not read it" in s.stderr() and token.encode() not in s.stderr()


def test_v1_request_memory_bound(server_factory, area):
    """128 roots of 16 MiB each are within the reference's bounds (2 GiB of contents):
    uexec holds at most the connection's in-flight budget (--max-inflight-bytes-per-conn,
    here at its 1 MiB minimum, so the 16 MiB floor) of file contents per request; the
    roots past it get a warning instead of their files."""
    write(area / "r" / "skills" / "s" / "SKILL.md", "x" * 900000)
    s = server_factory("--max-inflight-bytes-per-conn", str(1 << 20))
    c = s.connect()
    roots = c.result(V1, {"roots": [{"id": str(i), "path": file_uri(area / "r")}
                                    for i in range(20)]}, timeout=60)["roots"]
    assert [len(r["skills"]) for r in roots] == [1] * 18 + [0, 0]
    assert all(r["warnings"] == [] for r in roots[:18])
    assert roots[18]["warnings"] == [
        "capability discovery request exceeds the %d-byte limit of this server" % (16 << 20)]


@no_system_skills
@pytest.mark.parametrize("sandboxed", [False, pytest.param(True, marks=pytest.mark.needs("sandbox"))])
def test_v2_codex_home_default(server_factory, area, sandboxed):
    """Without CODEX_HOME the Codex home is $HOME/.codex, for the sandboxed helper too (it
    gets the server's HOME, having none of its own)."""
    env = {k: v for k, v in os.environ.items() if k not in ("CODEX_HOME", "HOME")}
    env["HOME"] = str(area / "home")
    skill(area / "home" / ".codex" / "skills", "dflt", "name: dflt\ndescription: d\n")
    c = server_factory(env=env).connect()
    extra = {"sandbox": _sandbox(area / "r")} if sandboxed else {}
    res = v2(c, **extra)
    assert [(s["name"], s["discoveryRoot"]["id"]) for s in res["skills"]] == [
        ("dflt", "codex-home-skills")]
    assert res["skills"][0]["discoveryRoot"]["path"] == file_uri(area / "home" / ".codex" / "skills")
