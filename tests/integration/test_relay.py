# SPDX-License-Identifier: MIT
"""Remote mode (RELAY.md): uexec --remote URL --environment-id ID registered at the fake
registry + rendezvous (tests/relay/fake_relay.py) and driven through the Noise harness
(tests/relay/harness.py, over build/tests/relay/libnoise-shim.so). The protocol cases live in
tests/relay/relay_cases.py and run unchanged against the reference executor in
tests/reference/test_relay_reference.py; the uexec-only ones (command line, secrets in the
log) are here.

Skipped as a whole until `uexec --help` mentions --remote (the executor lands separately).
"""
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "relay"))

from conftest import HOST, UEXEC_BIN, uexec_has_remote  # noqa: E402
from relay_cases import *  # noqa: E402,F401,F403
from relay_cases import ENV_ID, TOKEN, Relay, rpc_stream, run_echo  # noqa: E402


pytestmark = pytest.mark.skipif(not uexec_has_remote(),
                                reason="uexec --help does not mention --remote (remote mode "
                                "not built yet)")


@pytest.fixture
def executor_cmd():
    HOST.require("io_uring")
    return lambda base, env_id: [UEXEC_BIN, "--remote", base, "--environment-id", env_id]


def _run(args, env, timeout=60):
    return subprocess.run([UEXEC_BIN] + args, env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def test_no_credential_exits_1(tmp_path):
    """No CODEX_API_KEY: exit 1 with one line on stderr, before any request."""
    r = Relay(lambda b, e: [], str(tmp_path), start_executor=False)
    try:
        env = r.env(with_token=False)
        p = _run(["--remote", r.base, "--environment-id", ENV_ID], env)
        assert p.returncode == 1, (p.returncode, p.stderr)
        lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1, p.stderr
        assert not r.requests("register")
    finally:
        r.stop()


def test_remote_with_listen_is_refused(tmp_path):
    env = dict(os.environ, CODEX_API_KEY=TOKEN)
    p = _run(["--remote", "http://127.0.0.1:9", "--environment-id", ENV_ID,
              "--listen", "ws://127.0.0.1:0"], env)
    assert p.returncode != 0
    assert "--listen" in p.stderr or "--remote" in p.stderr, p.stderr


def test_remote_requires_environment_id(tmp_path):
    env = dict(os.environ, CODEX_API_KEY=TOKEN)
    p = _run(["--remote", "http://127.0.0.1:9"], env)
    assert p.returncode != 0
    assert "environment" in p.stderr.lower(), p.stderr


def test_secrets_stay_out_of_the_log(relay):
    """The registry token, the harness authorizations (accepted and refused) and private key
    material never reach uexec's stderr."""
    s, rpc = rpc_stream(relay)
    run_echo(relay, rpc, "p", "secret-check")
    relay.control(validate="false")
    h = relay.harness()
    bad = h.open_stream(wait=False)
    try:
        bad.wait_reset(60)
    except Exception:
        pass
    relay.control(validate="401")
    bad2 = h.open_stream(wait=False)
    try:
        bad2.next_frame(60)
    except Exception:
        pass
    err = relay.stderr_text()
    assert TOKEN not in err
    assert "SECRET123" not in err
    for a in relay.state()["authorizations"]:
        assert a["authorization"] not in err, "an authorization is in the log"
    # no base64 blob the size of a key or larger (public keys are not secret, but nothing
    # key-sized has a reason to be logged, and a private key would look just like it)
    blobs = re.findall(r"[A-Za-z0-9+/]{43,}={0,2}", err)
    assert not blobs, blobs[:3]
