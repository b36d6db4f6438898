"""Fixtures for the differential test (tests/reference). Not part of the default
suite: everything skips cleanly when the reference codex binary (installed by
scripts/install-reference.sh), the uexec binary or python websockets is absent."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="session")
def servers():
    pytest.importorskip("websockets", reason="python3 websockets not installed "
                        "(use /usr/bin/python3)")
    import diffharness
    if not diffharness.find_reference():
        pytest.skip("reference codex exec-server not installed "
                    "(run scripts/install-reference.sh or set UEXEC_REF_BIN)")
    if not diffharness.find_uexec():
        pytest.skip("uexec binary not found (build it: ninja -C build, or set UEXEC_BIN)")
    srv, work = diffharness.start_servers()
    yield srv, work
    for s in srv.values():
        s.stop()


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes more than ~10 s (test_relay_reference.py)")
