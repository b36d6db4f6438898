# SPDX-License-Identifier: MIT
"""A root uexec that cannot make its listener guard (no cgroup2 mount here: the
server is started in a mount namespace of its own where every cgroup2 mount is
gone) fails closed: sandboxes with network access are refused, since they could
connect to the server's port and start unsandboxed processes; with --ws-auth
they run, and reaching the port without the token gets them a 401 (the token
file is hidden from them). docs/SECURITY.md "Network enabled reaches other
local services"."""
import os
import re

import pytest

from conftest import HOST
from test_sandbox import ENV, PY, ws_policy

pytestmark = [pytest.mark.needs("x86_64", "root", "sandbox", "uexec-init"),
              pytest.mark.needs_programs("unshare", "umount", "sh")]

# Drops every cgroup2 mount of a private mount namespace, then runs the server.
NO_CGROUP2 = ("for m in $(awk '$0 ~ / - cgroup2 / {print $5}' /proc/self/mountinfo | sort -r); "
              "do umount -l \"$m\" || exit 97; done; exec \"$@\"")

REFUSED = {"code": -32602, "message": "sandbox intent cannot be enforced on this executor"}

# From inside the sandbox: the token file, then an HTTP upgrade to the server's port
# without a token (the status line is printed).
PROBE = r'''
import socket, sys
try:
    open(sys.argv[1]).read()
    print("token=readable")
except OSError as e:
    print("token=%s" % type(e).__name__)
s = socket.create_connection(("127.0.0.1", int(sys.argv[2])), timeout=60)
s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
          b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
print("status=" + s.recv(4096).split(b"\r\n")[0].decode())
'''


def guardless(server_factory, *args):
    """A uexec whose guard cannot be made; skips where the mount namespace cannot be had."""
    launcher = [HOST.program("unshare"), "-m", "--propagation", "private",
                HOST.program("sh"), "-c", NO_CGROUP2, "sh"]
    srv = server_factory(*args, launcher=launcher)
    log = srv.stderr().decode(errors="replace")
    if "Listener guard unavailable" not in log:
        pytest.skip("the guard was made anyway (or the server has none): %s"
                    % [l for l in log.splitlines() if "guard" in l.lower()])
    return srv


def test_network_sandbox_refused_without_guard_or_auth(server_factory, tmp_path, monkeypatch):
    ws = str(tmp_path)
    srv = guardless(server_factory)
    log = srv.stderr().decode(errors="replace")
    assert re.search(r"Listener guard unavailable \(.*\): sandboxed processes with network "
                     r"access are refused \(they could connect to port \d+", log), log
    c = srv.connect()
    err = c.error("process/start", {"processId": "net", "argv": ["/bin/true"],
                                    "cwd": "file://" + ws, "env": ENV, "tty": False,
                                    "sandbox": ws_policy(ws, network="enabled")})
    assert err == REFUSED
    assert "network access needs the listener guard (unavailable: " in \
        srv.stderr().decode(errors="replace")
    # restricted network and unsandboxed processes still run
    c.start("restricted", ["/bin/sh", "-c", "echo ok"], cwd=ws, env=ENV, sandbox=ws_policy(ws))
    assert c.collect("restricted", 30).stdout == b"ok\n"
    c.start("plain", ["/bin/sh", "-c", "echo ok"], cwd=ws, env=ENV)
    assert c.collect("plain", 30).stdout == b"ok\n"
    c.ws.abort()
    assert srv.terminate() == 0


def test_network_sandbox_runs_behind_ws_auth(server_factory, tmp_path):
    ws = str(tmp_path / "ws")
    os.makedirs(ws)
    token = tmp_path / "token"
    token.write_text("guardless-token-3b7e9d")
    token.chmod(0o600)
    srv = guardless(server_factory, "--ws-auth", "capability-token",
                    "--ws-token-file", str(token))
    log = srv.stderr().decode(errors="replace")
    assert "--ws-auth turns them away (the token is out of their reach)" in log, log
    c = srv.connect(extra_headers=[("Authorization", "Bearer guardless-token-3b7e9d")])
    c.start("net", [PY, "-c", PROBE, str(token), str(srv.port)], cwd=ws, env=ENV,
            sandbox=ws_policy(ws, network="enabled"))
    run = c.collect("net", 30)
    out = run.stdout.decode(errors="replace")
    assert run.exit_code == 0, (out, run.stderr)
    assert "token=readable" not in out and "token=" in out, out
    assert "status=HTTP/1.1 401" in out, out
    c.ws.abort()
    assert srv.terminate() == 0
