# SPDX-License-Identifier: MIT
"""Live upgrade (issue 26): a second SIGUSR2 during an upgrade is refused with a log
line, also when it arrives during the hand-over itself (between the old binary's execve
and the new one's signal handling: SIGUSR2 stays blocked and pending across the
execve), instead of starting a second upgrade once the first is over."""

import os

import pytest

from conftest import UEXEC_BIN, wait_until
from test_upgrade import PATH_ENV, Launch

pytestmark = pytest.mark.needs_programs("/bin/sh")


def test_sigusr2_during_the_handover_is_refused(server_factory, tmp_path):
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    marker = tmp_path / "in-exec"
    lu = Launch(server_factory, tmp_path, handover=True)
    pid = lu.srv.pid
    # The 'new binary' is held back once exec'd with the state: the old binary is gone,
    # the new one has not started; the second signal arrives then.
    lu.replace('if [ -n "$UEXEC_UPGRADE_STATE_FD" ]; then : > "%s"; read x < "%s"; fi\n'
               'exec "%s" "$@"\n' % (marker, fifo, os.path.realpath(UEXEC_BIN)))
    lu.usr2()
    wait_until(marker.exists, what="the new binary started")
    lu.usr2()
    with open(fifo, "w") as f:
        f.write("go\n")
    lu.wait_log("Received SIGUSR2 during the hand-over: upgrade refused, an upgrade is "
                "already in progress")
    # One upgrade, and the server serves after it: a process started and its exit code.
    c = lu.srv.connect()
    c.start("p", ["/bin/sh", "-c", "echo after; exit 4"], env=PATH_ENV)
    run = c.collect("p")
    assert run.stdout == b"after\n" and run.exit_code == 4
    err = lu.srv.stderr()
    assert err.count(b"Upgrade: took over from uexec ") == 1, lu.srv.stderr_tail()
    assert err.count(b"Received SIGUSR2: checking whether") == 1, lu.srv.stderr_tail()
    assert lu.srv.pid == pid and lu.srv.proc.poll() is None


def test_sigusr2_right_after_the_upgrade_is_a_new_one(server_factory, tmp_path):
    """The new binary refuses a pending SIGUSR2 before it logs that it took over: one
    sent as soon as that line is seen (a script upgrading twice in a row) is a new
    upgrade, several times over."""
    lu = Launch(server_factory, tmp_path, handover=True)
    for n in range(1, 6):
        lu.usr2()
        lu.wait_log("Upgrade: took over from uexec ", count=n)
    assert b"upgrade refused" not in lu.srv.stderr(), lu.srv.stderr_tail()
    c = lu.srv.connect()
    c.start("p", ["/bin/sh", "-c", "exit 3"], env=PATH_ENV)
    assert c.collect("p").exit_code == 3
