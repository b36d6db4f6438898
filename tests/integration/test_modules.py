# SPDX-License-Identifier: MIT
"""uexec's modules (issue 25 item 1): the libraries only rare paths or the start need are
in modules, not in uexec's own dependencies: OpenSSL (uexec-openssl.so, on first need),
libseccomp (uexec-seccomp.so, for the start-up probe, then closed), libbpf
(uexec-bpf.so, for the tracer's load, then closed), libstdc++ (uexec-toml.so). An idle
server maps none of them. Without the seccomp module the sandbox is refused, with the
path in the log."""

import os
import shutil
import subprocess

import pytest

from conftest import EVENT_TIMEOUT, HOST, UEXEC_BIN

ENV = {"PATH": "/usr/bin:/bin"}
RARE = ("libssl.so", "libcrypto.so", "libseccomp.so", "libbpf.so", "libelf", "libstdc++",
        "uexec-openssl", "uexec-seccomp", "uexec-bpf", "uexec-toml")


def mapped(pid):
    with open("/proc/%d/maps" % pid) as f:
        return {os.path.basename(line.split()[5]) for line in f if len(line.split()) > 5}


def needed(path):
    readelf = shutil.which("readelf")
    if not readelf:
        pytest.skip("readelf (binutils) is not installed")
    out = subprocess.run([readelf, "-d", path], capture_output=True, check=True,
                         timeout=60).stdout.decode()
    return [line.split("[")[1].split("]")[0] for line in out.splitlines() if "(NEEDED)" in line]


def test_uexec_links_none_of_the_modules_libraries():
    got = [n for n in needed(UEXEC_BIN) if n.startswith(RARE)]
    assert got == [], got


def test_idle_server_maps_none_of_them(server_factory, tmp_path):
    """After start (the probe built the seccomp programs, the tracer is loaded where the
    host allows) and after an unsandboxed and a sandboxed process (where the host has
    sandboxes), none of the modules or their libraries is mapped (a sanitizer runtime's
    own libstdc++ aside)."""
    srv = server_factory()
    c = srv.connect()
    assert c.run("p1", ["/bin/true"], env=ENV).exit_code == 0
    if HOST.missing("sandbox") is None:
        from test_sandbox import ws_policy
        ws = str(tmp_path)
        r = c.run("p2", ["/bin/true"], cwd=ws, env=ENV, sandbox=ws_policy(ws))
        assert r.exit_code == 0
    names = mapped(srv.pid)
    asan = any(n.startswith(("libasan", "libubsan")) for n in names)
    got = sorted(n for n in names if n.startswith(RARE) and not (asan and "stdc++" in n))
    assert got == [], got


@pytest.mark.needs("sandbox", "uexec-init")
def test_sandbox_refused_without_the_seccomp_module(tmp_path):
    """A copy of uexec with uexec-init but not uexec-seccomp.so: the start-up log names
    where the module was looked for and that sandboxed processes are refused. Skips when
    the module is installed where the copy looks next."""
    d = tmp_path / "lone"
    d.mkdir()
    for name in ("uexec", "uexec-init"):
        shutil.copy2(os.path.join(os.path.dirname(UEXEC_BIN), name), d / name)
    p = subprocess.run([str(d / "uexec"), "--listen", "stdio"], stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=EVENT_TIMEOUT)
    err = p.stderr.decode(errors="replace")
    assert p.returncode == 0, err
    if "Sandbox ready" in err:
        pytest.skip("an installed uexec-seccomp.so is found by a uexec outside the build tree")
    assert "Cannot build the sandbox's seccomp filters: uexec-seccomp.so is neither next to " \
        "the uexec binary nor in " in err, err
    assert "/uexec-seccomp.so: No such file or directory)" in err, err
    assert "Sandboxed processes will be refused: this host lacks seccomp filters (their " \
        "builder, the module uexec-seccomp.so, cannot be loaded)" in err, err
