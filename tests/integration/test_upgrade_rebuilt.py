# SPDX-License-Identifier: MIT
"""Live upgrade (issue 26) to a binary built apart: SIGUSR2 hands a running workload
to another build of uexec (compiled separately, other flags: the plain build and the
ASan one) and back again, in the same pid, with the client's pipe and PTY output whole,
once and in order across both hand-overs.

The other build is named by UEXEC_UPGRADE_OTHER_BIN (tests/sanitize.sh sets it to the
plain build's uexec when it runs the suite on the ASan one); without it the test skips."""

import os

import pytest

from conftest import UEXEC_BIN, settled_fd_count
from test_upgrade import PATH_ENV, Launch, counter_script, finish_counters

pytestmark = pytest.mark.needs_programs("/bin/sh", "/bin/sleep")


def other_build():
    other = os.environ.get("UEXEC_UPGRADE_OTHER_BIN")
    if not other:
        pytest.skip("UEXEC_UPGRADE_OTHER_BIN names no other build of uexec (tests/sanitize.sh "
                    "sets it to the plain build for the ASan pass)")
    if not os.access(other, os.X_OK):
        pytest.skip("UEXEC_UPGRADE_OTHER_BIN=%s is not an executable" % other)
    if os.path.realpath(other) == os.path.realpath(UEXEC_BIN):
        pytest.skip("UEXEC_UPGRADE_OTHER_BIN is the binary under test")
    return os.path.realpath(other)


def repoint(lu, target):
    """The start path now names target, as a package upgrade replaces the file."""
    os.symlink(target, lu.path + ".new")
    os.replace(lu.path + ".new", lu.path)


def test_upgrade_to_another_build_and_back(server_factory, tmp_path):
    other = other_build()
    go = tmp_path / "go"
    lu = Launch(server_factory, tmp_path, handover=True)
    pid = lu.srv.pid
    fds = settled_fd_count(pid)
    c = lu.srv.connect()
    c.start("out", ["/bin/sh", "-c", counter_script(go)], env=PATH_ENV)
    c.start("tty", ["/bin/sh", "-c", counter_script(go)], env=PATH_ENV, tty=True)
    run = c.collect_until_output("out", b"\n3\n")
    for n, target in enumerate((other, os.path.realpath(UEXEC_BIN)), 1):
        repoint(lu, target)
        lu.usr2()
        lu.wait_log("Upgrade: took over from uexec ", count=n)
        assert b"(1 sessions, 2 processes, 1 connections)" in lu.srv.stderr(), \
            lu.srv.stderr_tail()
        assert lu.srv.pid == pid
        assert os.path.realpath("/proc/%d/exe" % pid) == target
        # the same connection, its counter going on under the new build
        last = int(run.stdout.split()[-1])
        run = c.collect_until_output("out", b"\n%d\n" % (last + 10), run=run)
    finish_counters(c, go, run)
    c.close()
    # every process gone, its fds with it: the server is back to its own
    assert settled_fd_count(pid) == fds
