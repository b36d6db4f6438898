# SPDX-License-Identifier: MIT
"""Remote mode against the reference `codex exec-server --remote URL --environment-id ID`:
the relay cases of tests/relay/relay_cases.py (shared with tests/integration/test_relay.py),
which validates the fake relay and the test harness, and settles RELAY.md's open points
(msg2 token order: test_msg2_order_kem_first; prologue length prefixes: u64).

Not in the default suite (tests/reference); skips when the reference binary or the noise
shim (ninja -C build) is missing. Run:
    /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/reference/test_relay_reference.py
"""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "relay"))

import diffharness  # noqa: E402
from relay_cases import *  # noqa: E402,F401,F403


@pytest.fixture
def executor_cmd():
    ref = diffharness.find_reference()
    if not ref:
        pytest.skip("reference codex exec-server not installed "
                    "(run scripts/install-reference.sh or set UEXEC_REF_BIN)")
    return lambda base, env_id: [ref, "exec-server", "--remote", base, "--environment-id", env_id]


@pytest.fixture
def executor_kind():
    return "reference"
