# SPDX-License-Identifier: MIT
"""The TOML module (src/toml/, issue 25 item 1): uexec's C++ (the --config parser and
environmentConfig/read's TOML filter) lives in uexec-toml.so, loaded on first use, so
that an idle server maps neither the module nor libstdc++. The --config file loads it
at start and at each SIGHUP and unloads it after; environmentConfig/read keeps it.
Without the module, --config fails at start and environmentConfig/read answers
-32603, both naming where it was looked for."""

import os
import shutil
import signal
import subprocess

import pytest

from conftest import UEXEC_BIN, wait_until
from wsclient import file_uri

METHOD = "environmentConfig/read"
MODULE = "uexec-toml.so"
CXX_LIBS = ("libstdc++", "libtomlplusplus", MODULE)


def mapped(pid):
    with open("/proc/%d/maps" % pid) as f:
        return {os.path.basename(line.split()[5]) for line in f if len(line.split()) > 5}


def linked():
    """The libraries uexec itself loads (a sanitizer runtime may bring libstdc++)."""
    ldd = shutil.which("ldd")
    if not ldd:
        return set()
    out = subprocess.run([ldd, UEXEC_BIN], capture_output=True, timeout=60).stdout.decode()
    return {os.path.basename(os.path.realpath(line.split("=>")[1].split()[0]))
            for line in out.splitlines() if "=>" in line and "/" in line.split("=>")[1]}


def cxx_mapped(pid):
    names = mapped(pid) - linked()
    return sorted(n for n in names if any(n.startswith(lib) for lib in CXX_LIBS))


def needed(path):
    readelf = shutil.which("readelf")
    if not readelf:
        pytest.skip("readelf (binutils) is not installed")
    out = subprocess.run([readelf, "-d", path], capture_output=True, check=True,
                         timeout=60).stdout.decode()
    return [line.split("[")[1].split("]")[0] for line in out.splitlines() if "(NEEDED)" in line]


def codex_home(tmp_path, text='model = "m"\n'):
    d = tmp_path / "codex-home"
    d.mkdir()
    (d / "config.toml").write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "CODEX_HOME"}
    env["CODEX_HOME"] = str(d)
    return d, env


def params(cwd):
    return {"cwd": file_uri(str(cwd)), "configPaths": [["model"]], "requirementsPaths": [["x"]]}


def user_tomls(res):
    return [layer["toml"] for layer in res["config"]["layers"] if layer["source"].startswith("user")]


def test_uexec_does_not_link_cxx():
    libs = needed(UEXEC_BIN)
    assert not [n for n in libs if n.startswith(("libstdc++", "libtomlplusplus"))], libs
    assert os.path.isfile(os.path.join(os.path.dirname(UEXEC_BIN), MODULE))


def test_idle_server_with_config_maps_no_cxx_until_a_config_read(server_factory, tmp_path):
    home, env = codex_home(tmp_path)
    conf = tmp_path / "u.toml"
    conf.write_text('max-processes = 7\n')
    srv = server_factory("--config", str(conf), env=env)
    c = srv.connect()
    pid = srv.proc.pid
    # the file was parsed (the module loaded) and the module unloaded again
    assert cxx_mapped(pid) == []
    # SIGHUP parses the file again: loaded and unloaded once more
    srv.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: b"Configuration reloaded" in srv.stderr(), what="the reload")
    assert cxx_mapped(pid) == []
    # the first environmentConfig/read loads it for good
    res = c.result(METHOD, params(home))
    assert user_tomls(res) == ['model = "m"\n']
    assert MODULE in mapped(pid)
    srv.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: srv.stderr().count(b"Configuration reloaded") >= 2, what="a second reload")
    assert MODULE in mapped(pid)
    assert user_tomls(c.result(METHOD, params(home))) == ['model = "m"\n']


def test_config_read_without_a_file_loads_nothing(server_factory, tmp_path):
    home = tmp_path / "empty-home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "CODEX_HOME"}
    env["CODEX_HOME"] = str(home)
    srv = server_factory(env=env)
    res = srv.connect().result(METHOD, params(home))
    assert user_tomls(res) == []
    if not any(os.path.exists(p) for p in ("/etc/codex/config.toml", "/etc/codex/requirements.toml")):
        assert MODULE not in mapped(srv.proc.pid)


@pytest.fixture
def lone_uexec(tmp_path):
    """A copy of uexec in a directory without the module. Skips when the module is
    installed where the copy looks next (the install dir is compiled in)."""
    d = tmp_path / "lone"
    d.mkdir()
    exe = d / "uexec"
    shutil.copy2(UEXEC_BIN, exe)
    conf = tmp_path / "probe.toml"
    conf.write_text('max-processes = 3\n')
    p = subprocess.run([str(exe), "--config", str(conf), "--version"], capture_output=True,
                       stdin=subprocess.DEVNULL, timeout=60)
    if p.returncode == 0:
        pytest.skip("an installed %s is found by a uexec outside the build tree" % MODULE)
    return exe


def test_config_without_the_module_fails_at_start_naming_the_path(lone_uexec, tmp_path):
    conf = tmp_path / "u.toml"
    conf.write_text('max-processes = 3\n')
    p = subprocess.run([str(lone_uexec), "--config", str(conf), "--listen", "ws://127.0.0.1:0"],
                       capture_output=True, stdin=subprocess.DEVNULL, timeout=60)
    err = p.stderr.decode()
    assert p.returncode == 2, err
    assert "config file %s: cannot load the TOML module: %s is neither next to the uexec " \
        "binary nor in " % (conf, MODULE) in err, err
    assert "/%s: No such file or directory" % MODULE in err, err
    assert "warning" not in err, err       # one message, the error
    assert p.stdout == b""


def test_config_read_without_the_module_is_an_internal_error(server_factory, lone_uexec,
                                                             tmp_path):
    home, env = codex_home(tmp_path)
    launcher = ["/bin/sh", "-c", 'shift; exec "$0" "$@"', str(lone_uexec)]
    srv = server_factory(env=env, launcher=launcher)
    c = srv.connect()
    err = c.error(METHOD, params(home))
    assert err["code"] == -32603, err
    assert err["message"].startswith("failed to load executor-local config: cannot load the "
                                     "TOML module: %s is neither next to the uexec binary" % MODULE), err
    # the server goes on serving
    assert c.result("environment/info")["capabilities"]["environmentConfigRead"] is True
    # and said so at start
    assert b"/%s (No such file or directory): environmentConfig/read of an existing config " \
        b"file will fail" % MODULE.encode() in srv.stderr(), srv.stderr_tail()


def test_module_replaced_after_start_is_not_loaded(server_factory, tmp_path):
    """The module is found at start and loaded through the fd opened then (as uexec-init
    is executed): a file renamed over it later (a sandbox that can write the binary's
    directory, a package upgrade) is never loaded."""
    home, env = codex_home(tmp_path)
    d = tmp_path / "copy"
    d.mkdir()
    for name in ("uexec", MODULE):
        shutil.copy2(os.path.join(os.path.dirname(UEXEC_BIN), name), d / name)
    launcher = ["/bin/sh", "-c", 'shift; exec "$0" "$@"', str(d / "uexec")]
    srv = server_factory(env=env, launcher=launcher)
    c = srv.connect()
    planted = d / "planted.so"
    planted.write_bytes(b"not an ELF file\n")
    os.rename(planted, d / MODULE)
    assert user_tomls(c.result(METHOD, params(home))) == ['model = "m"\n']
