# SPDX-License-Identifier: MIT
"""uexec's modules (issue 25 item 1): the libraries only rare paths or the start need are
in modules, not in uexec's own dependencies: OpenSSL (uexec-openssl.so, on first need),
libbpf (uexec-bpf.so, for the tracer's load, then closed), libstdc++ (uexec-toml.so). An
idle server maps none of them."""

import os
import shutil
import subprocess

import pytest

from conftest import HOST, UEXEC_BIN

ENV = {"PATH": "/usr/bin:/bin"}
RARE = ("libssl.so", "libcrypto.so", "libbpf.so", "libelf", "libstdc++",
        "uexec-openssl", "uexec-bpf", "uexec-toml")


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
    """After start (the tracer is loaded where the host allows) and after an unsandboxed and a sandboxed process (where the host has
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
