# SPDX-License-Identifier: MIT
"""process/start's shellSnapshot (capability shellSnapshotV2; docs/ARCHITECTURE.md "Shell
snapshots"): a login shell's state captured once per scope, replayed before `<shell> -lc`
commands, as 0.171.0 does."""

import json
import os
import time

import pytest

from conftest import HOST, fd_count, settled_fd_count, wait_until
from wsclient import file_uri

pytestmark = pytest.mark.needs_programs("/bin/bash", "/bin/sh", "/usr/bin/env")

BASH = "/bin/bash"

PROFILE = r"""
alias snapalias='echo alias-works'
snapfunc() { echo "func-works $1"; }
export SNAPVAR=from-profile
export PATH="$PATH:/opt/snap-extra"
shopt -s extglob
set -o noclobber
echo x >> "$HOME/captures"
echo profile-noise
echo profile-noise-err >&2
"""
BASHRC = r"""
rcfunc() { echo rc-works; }
"""


@pytest.fixture
def home(tmp_path):
    h = tmp_path / "home"
    h.mkdir()
    (h / ".bash_profile").write_text(PROFILE)
    (h / ".bashrc").write_text(BASHRC)
    return h


def env_of(home, **kw):
    e = {"PATH": "/usr/bin:/bin", "HOME": str(home)}
    e.update(kw)
    return e


def snap(scope="scope-1", name="bash", path=BASH):
    return {"scopeId": scope, "shell": {"name": name, "path": path}}


def captures(home):
    try:
        return (home / "captures").read_text().count("x")
    except FileNotFoundError:
        return 0


_n = [0]


def run(c, home, cmd, shell_snapshot=None, argv=None, cwd=None, timeout=None, **extra):
    _n[0] += 1
    pid = "snap-%d" % _n[0]
    if shell_snapshot is not None:
        extra["shellSnapshot"] = shell_snapshot
    kw = {"timeout": timeout} if timeout else {}
    return c.run(pid, argv or [BASH, "-lc", cmd], cwd=cwd or str(home), env=extra.pop("env", None)
                 or env_of(home), **extra, **kw)


def test_advertised(client):
    caps = client.result("environment/info", {})["capabilities"]
    assert caps["shellSnapshotV2"] is True


def test_command_sees_the_login_state(client, home):
    cmd = ("tr '\\0' '\\n' </proc/$$/cmdline; echo ==; snapfunc a; rcfunc; alias; echo V=$SNAPVAR;"
           " echo P=$PATH; shopt extglob; set -o | grep noclobber;"
           # no pipeline while ls looks: the shell would hold its pipes
           " ls /proc/$$/fd >| \"$HOME/fds\"; sort -n \"$HOME/fds\" | tr '\\n' ' '")
    r = run(client, home, cmd, snap())
    assert r.exit_code == 0, r.data()
    argv, out = r.stdout.decode().split("==\n", 1)
    ctx = r.data().decode(errors="replace")
    # The reference's launch: -pc and a restore script before the command, from fd 16.
    assert argv.split("\n")[:4] == [
        BASH, "-pc", "set +o privileged",
        "if ! . /dev/fd/16 >/dev/null; then printf 'failed to restore shell snapshot\\n' >&2; fi"], ctx
    assert argv.split("\n", 4)[4].startswith("tr "), ctx
    lines = out.split("\n")
    assert "func-works a" in lines and "rc-works" in lines, ctx
    assert "alias snapalias='echo alias-works'" in lines
    assert "V=from-profile" in lines
    # The request's own variables win over the captured ones.
    assert "P=/usr/bin:/bin" in lines
    assert any(l.startswith("extglob") and l.endswith("on") for l in lines)
    assert any(l.startswith("noclobber") and l.endswith("on") for l in lines)
    # The snapshot's reader is closed before the command runs; the profile is not re-read.
    assert lines[-1].split() == ["0", "1", "2"], ctx
    assert b"profile-noise" not in r.data(), ctx
    assert captures(home) == 1


def test_captured_once_per_scope(server, home):
    c = server.connect()
    for _ in range(3):
        assert run(c, home, "snapfunc b", snap()).stdout == b"func-works b\n"
    assert captures(home) == 1
    # Another scope, another cwd: captures of their own.
    assert run(c, home, "snapfunc c", snap("scope-2")).stdout == b"func-works c\n"
    assert captures(home) == 2
    assert run(c, home, "snapfunc d", snap("scope-2"), cwd="/").stdout == b"func-works d\n"
    assert captures(home) == 3
    # Another session does not share the first one's cache.
    other = server.connect()
    assert run(other, home, "snapfunc e", snap()).stdout == b"func-works e\n"
    assert captures(home) == 4


def test_concurrent_starts_share_one_capture(client, home):
    with open(home / ".bash_profile", "a") as f:
        f.write("sleep 0.3\n")
    ids = []
    for i in range(3):
        ids.append(client.request("process/start", {
            "processId": "cc-%d" % i, "argv": [BASH, "-lc", "snapfunc %d" % i],
            "cwd": file_uri(str(home)), "env": env_of(home), "tty": False,
            "shellSnapshot": snap()}))
    for i, rid in enumerate(ids):
        assert "result" in client.wait_reply(rid), client.replies
        run_ = client.collect("cc-%d" % i)
        assert run_.stdout == b"func-works %d\n" % i
    assert captures(home) == 1


def test_other_argv_runs_as_asked(client, home):
    # Not `<shell.path> -lc ...`: no snapshot, the profile runs as usual.
    r = run(client, home, "snapfunc e", snap(), argv=[BASH, "-c", "echo plain"])
    assert r.stdout == b"plain\n"
    r = run(client, home, "", snap(path="/usr/bin/bash"))
    assert b"profile-noise" in r.stdout
    assert captures(home) == 1  # that one's own -l run, not a capture
    r = run(client, home, "", snap(name="fish"), argv=["/bin/echo", "hi"])
    assert r.stdout == b"hi\n"


@pytest.mark.parametrize("shell_snapshot, argv, message", [
    ({"scopeId": "", "shell": {"name": "bash", "path": BASH}}, None,
     "shell snapshot scope must be non-empty and at most 256 bytes"),
    ({"scopeId": "", "shell": {"name": "bash", "path": BASH}}, ["/bin/echo"],
     "shell snapshot scope must be non-empty and at most 256 bytes"),
    ({"scopeId": "x" * 257, "shell": {"name": "bash", "path": BASH}}, None,
     "shell snapshot scope must be non-empty and at most 256 bytes"),
    ({"scopeId": "s", "shell": {"name": "fish", "path": BASH}}, None,
     "shell snapshots are unsupported for shell `fish`"),
    ({"scopeId": "s", "shell": {"name": "Bash", "path": BASH}}, None,
     "shell snapshots are unsupported for shell `Bash`"),
    ({"scopeId": 5, "shell": {"name": "bash", "path": BASH}}, None,
     "invalid type: number, expected a string"),
    ({"shell": {"name": "bash", "path": BASH}}, None, "missing field `scopeId`"),
    ({"scopeId": "s"}, None, "missing field `shell`"),
    ({"scopeId": "s", "shell": True}, None, "invalid type: boolean `true`, expected struct ShellInfo"),
    ({"scopeId": "s", "shell": {"path": BASH}}, None, "missing field `name`"),
    ({"scopeId": "s", "shell": {"name": "bash", "path": 1}}, None,
     "invalid type: number, expected a string"),
    (True, None, "invalid type: boolean `true`, expected struct ShellSnapshotRequest"),
])
def test_bad_params(client, home, shell_snapshot, argv, message):
    params = {"processId": "bad", "argv": argv or [BASH, "-lc", "true"], "cwd": file_uri(str(home)),
              "env": env_of(home), "tty": False, "shellSnapshot": shell_snapshot}
    err = client.error("process/start", params)
    assert err == {"code": -32602, "message": message}
    assert captures(home) == 0


def test_scope_of_256_bytes_is_accepted(client, home):
    assert run(client, home, "snapfunc f", snap("é" * 128)).stdout == b"func-works f\n"


def test_posix_sh_replays_through_the_environment(client, home):
    (home / ".profile").write_text("alias shalias='echo sh-alias'\nset -o noclobber\n"
                                   "export SHVAR=from-sh-profile\necho x >> \"$HOME/captures\"\n")
    cmd = ("tr '\\0' '\\n' </proc/$$/cmdline; echo ==; alias; set -o | grep noclobber;"
           " echo V=$SHVAR; env | grep -c __CODEX_SHELL_SNAPSHOT_STATE")
    r = run(client, home, cmd, snap(name="sh", path="/bin/sh"), argv=["/bin/sh", "-lc", cmd])
    argv, out = r.stdout.decode().split("==\n", 1)
    assert argv.split("\n")[:3] == ["/bin/sh", "-c",
                                    'if ! eval "unset __CODEX_SHELL_SNAPSHOT_STATE_0']
    # As 0.171.0: sh's aliases are not kept (its capture drops them).
    assert "shalias" not in out
    assert any(l.split() == ["noclobber", "on"] for l in out.split("\n"))
    assert "V=from-sh-profile" in out
    # The state variables are gone before the command runs.
    assert out.rstrip().endswith("0")
    assert captures(home) == 1


def test_tty_command(client, home):
    r = run(client, home, "snapfunc t", snap(), tty=True)
    assert b"func-works t" in r.pty


def test_failed_capture_falls_back_then_retries(client, home):
    (home / ".bashrc").write_text("echo x >> \"$HOME/captures\"\nexit 3\n")
    r = run(client, home, "tr '\\0' ' ' </proc/$$/cmdline; echo; snapfunc g", snap())
    # The command runs as asked: -lc, the profile read by the command's own shell.
    assert r.stdout.split(b"\n")[1] == b"/bin/bash -lc tr '\\0' ' ' </proc/$$/cmdline; echo; snapfunc g "
    assert b"func-works g" in r.stdout
    # The capture read the profile and .bashrc, then the command's own shell the profile.
    assert captures(home) == 3
    run(client, home, "true", snap())
    assert captures(home) == 4  # within the retry delay: no capture
    for total in (7, 10):
        time.sleep(1.1)  # the retry delay (SNAP_RETRY_MS) is a duration, not an event
        run(client, home, "true", snap())
        assert captures(home) == total  # attempts 2 and 3
    time.sleep(1.1)
    run(client, home, "true", snap())
    assert captures(home) == 11  # three attempts were all: the command's profile only


def test_oversized_snapshot_falls_back(client, home):
    (home / ".bashrc").write_text("big() {\n" + "  echo %s\n" % ("y" * 1000) * 600 + "}\n")
    r = run(client, home, "tr '\\0' ' ' </proc/$$/cmdline; echo; type big >/dev/null 2>&1; echo $?", snap())
    assert b"/bin/bash -lc " in r.stdout
    assert r.stdout.endswith(b"\n1\n")  # no snapshot: the function of .bashrc is unknown


def test_capture_timeout_kills_the_capture(client, home):
    marker = "%d.7" % (40 + os.getpid() % 50)
    (home / ".bashrc").write_text("sleep %s\n" % marker)
    t0 = time.monotonic()
    r = run(client, home, "tr '\\0' ' ' </proc/$$/cmdline; echo", snap(), timeout=120)
    assert time.monotonic() - t0 >= 9.5  # SNAP_TIMEOUT_MS
    assert b"/bin/bash -lc " in r.stdout

    def sleeper_gone():
        for d in os.listdir("/proc"):
            try:
                with open("/proc/%s/cmdline" % d, "rb") as f:
                    if f.read() == b"sleep\0" + marker.encode() + b"\0":
                        return False
            except OSError:
                pass
        return True
    wait_until(sleeper_gone, what="the capture's process group killed")


def test_sandboxed_command_reads_its_snapshot(client, home, tmp_path):
    HOST.require("sandbox")
    work = tmp_path / "work"
    work.mkdir()
    os.chmod(tmp_path, 0o755)
    w = file_uri(str(work))
    sandbox = {"permissions": {"type": "managed", "file_system": {"type": "restricted", "entries": [
        {"path": {"type": "special", "value": {"kind": "minimal"}}, "access": "read"},
        {"path": {"type": "path", "path": file_uri(str(home))}, "access": "read"},
        {"path": {"type": "special", "value": {"kind": "project_roots"}}, "access": "write"}]},
        "network": "restricted"},
        "cwd": w, "policyContext": {"cwd": w, "workspaceRoots": [w]}, "workspaceRoots": [w],
        "userHomeDir": file_uri(str(home)), "windowsSandboxLevel": "disabled"}
    r = run(client, home, 'echo "$BASH_EXECUTION_STRING" | head -2; snapfunc s; echo V=$SNAPVAR;'
            ' echo > "$HOME/escape" 2>/dev/null || echo confined', snap(), cwd=str(work),
            sandbox=sandbox)
    lines = r.stdout.decode().split("\n")
    assert lines[1] == ("if ! . /dev/fd/16 >/dev/null; then printf 'failed to restore shell "
                        "snapshot\\n' >&2; fi"), r.data()
    assert lines[2:5] == ["func-works s", "V=from-profile", "confined"]
    assert not (home / "escape").exists()


def test_no_files_and_no_leaked_fds(server_factory, home, tmp_path):
    tmpdir = tmp_path / "server-tmp"
    tmpdir.mkdir()
    env = dict(os.environ, TMPDIR=str(tmpdir))
    s = server_factory("--resume-window-ms", "200", env=env)
    base = settled_fd_count(s.proc.pid)
    c = s.connect()
    for k in range(3):
        assert run(c, home, "snapfunc n", snap("scope-%d" % k)).stdout == b"func-works n\n"
    (home / ".bashrc").write_text("exit 3\n")
    run(c, home, "true", snap("failing"))
    assert os.listdir(tmpdir) == []
    c.ws.close()
    # The session expires, its snapshots (sealed memfds) go with it.
    wait_until(lambda: fd_count(s.proc.pid) <= base, what="the server's fds back to %d" % base)
    assert os.listdir(tmpdir) == []


def _sleeper(marker):
    """pids of `sleep <marker>` processes."""
    out = []
    for d in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                if f.read() == b"sleep\0" + marker.encode() + b"\0":
                    out.append(int(d))
        except (OSError, ValueError):
            pass
    return out


@pytest.mark.parametrize("how", ["connection-closes", "server-stops"])
def test_capture_in_flight_is_killed(server_factory, home, how):
    marker = "%d.3" % (60 + os.getpid() % 50 + (how == "server-stops"))
    (home / ".bashrc").write_text("sleep %s\n" % marker)
    s = server_factory("--resume-window-ms", "100")
    base = settled_fd_count(s.proc.pid)
    c = s.connect()
    c.request("process/start", {"processId": "parked", "argv": [BASH, "-lc", "true"],
                                "cwd": file_uri(str(home)), "env": env_of(home), "tty": False,
                                "shellSnapshot": snap()})
    wait_until(lambda: _sleeper(marker), what="the capture running")
    if how == "connection-closes":
        # The parked request goes with its connection; the capture with the session.
        c.ws.close()
        wait_until(lambda: not _sleeper(marker), what="the capture killed")
        wait_until(lambda: fd_count(s.proc.pid) <= base, what="the server's fds back to %d" % base)
    else:
        s.check_stop()  # no sanitizer report, a clean exit
        wait_until(lambda: not _sleeper(marker), what="the capture killed")


def test_captures_at_once_are_bounded(server_factory, home, tmp_path):
    """16 captures run at once in the server (SNAP_MAX_CAPTURES): beyond, a command runs as
    asked, at once, and no 17th capture starts."""
    marker = "%d.9" % (70 + os.getpid() % 50)
    (home / ".bashrc").write_text("sleep %s\n" % marker)
    home2 = tmp_path / "home2"
    home2.mkdir()
    (home2 / ".bash_profile").write_text(PROFILE)
    s = server_factory("--resume-window-ms", "100")
    a = s.connect()
    for k in range(16):
        a.request("process/start", {"processId": "slow-%d" % k, "argv": [BASH, "-lc", "true"],
                                    "cwd": file_uri(str(home)), "env": env_of(home),
                                    "tty": False, "shellSnapshot": snap("s%d" % k)})
    wait_until(lambda: len(_sleeper(marker)) == 16, what="16 captures running")
    b = s.connect()
    r = run(b, home2, "tr '\\0' ' ' </proc/$$/cmdline; echo", snap("other"), env=env_of(home2))
    assert b"/bin/bash -lc " in r.stdout  # ran as asked, its profile read by its own shell
    assert captures(home2) == 1
    assert len(_sleeper(marker)) == 16
    a.ws.close()
    wait_until(lambda: not _sleeper(marker), what="the captures killed with their session")


def test_zsh(client, home):
    HOST.require_programs("zsh")
    zsh = HOST.program("zsh")
    (home / ".zprofile").write_text("echo x >> \"$HOME/captures\"\nalias zalias='echo z'\n"
                                    "zfunc() { echo \"zfunc-works $1\"; }\nexport ZVAR=from-zprofile\n"
                                    "setopt noclobber\necho zprofile-noise\n")
    (home / ".zshrc").write_text("zrcfunc() { echo zrc-works; }\n")
    cmd = ("print -rl -- ${(0)\"$(</proc/$$/cmdline)\"}; echo '=='; zfunc a; zrcfunc; alias zalias;"
           " echo V=$ZVAR; setopt | grep -x noclobber; ls /proc/$$/fd | grep -cx 16")
    for _ in range(2):
        r = run(client, home, cmd, snap(name="zsh", path=zsh), argv=[zsh, "-lc", cmd])
        argv, out = r.stdout.decode().split("==\n", 1)
        assert argv.split("\n")[:3] == [zsh, "-fc", "setopt RCS"], r.data()
        assert out.split("\n") == ["zfunc-works a", "zrc-works", "zalias='echo z'",
                                   "V=from-zprofile", "noclobber", "0", ""], r.data()
    assert captures(home) == 1


def test_snapshot_prepared_before_the_process_id_is_checked(client, home):
    """As 0.171.0: a duplicate id's start still captures (and a bad shell name is that error)."""
    client.start("dup", ["/bin/sleep", "30"], env={})
    base = {"processId": "dup", "argv": [BASH, "-lc", "true"], "cwd": file_uri(str(home)),
            "env": env_of(home), "tty": False}
    assert client.error("process/start", dict(base, shellSnapshot=snap(name="fish"))) == {
        "code": -32602, "message": "shell snapshots are unsupported for shell `fish`"}
    assert client.error("process/start", dict(base, shellSnapshot=snap())) == {
        "code": -32600, "message": "process dup already exists"}
    assert captures(home) == 1
    client.result("process/terminate", {"processId": "dup"})


def test_capture_in_the_audit_log(server_factory, home, tmp_path):
    audit = tmp_path / "audit.jsonl"
    s = server_factory("--audit-log", str(audit))
    c = s.connect()
    assert run(c, home, "snapfunc q", snap(), env=env_of(home, API_TOKEN="s3cr3t-value")).stdout == \
        b"func-works q\n"

    def lines():
        return [json.loads(l) for l in audit.read_text().splitlines() if l.strip()]
    wait_until(lambda: any(r["event"] == "process.exit" for r in lines()), what="the audit lines")
    recs = lines()
    cap = [r for r in recs if r["event"] == "shellSnapshot.capture"]
    assert len(cap) == 1, recs
    assert cap[0]["session"] == c.init_result["sessionId"] and cap[0]["program"] == BASH
    assert cap[0]["cwd"] == str(home) and cap[0]["sandboxed"] is False and cap[0]["pid"] > 0
    events = [r["event"] for r in recs]
    assert events.index("shellSnapshot.capture") < events.index("process.start")
    assert b"s3cr3t-value" not in audit.read_bytes()
