# SPDX-License-Identifier: MIT
"""Live upgrade under load (issue 26, "Done when"): several attached WebSocket clients,
each with processes printing as fast as they can (stdout and stderr of pipes, a PTY),
and a detached session, handed over three times in a row while the output flows: every
stream arrives whole, in order and once, each process's seqs run from 1 without a gap,
the exit codes are the real ones, the pid stays, and no process, zombie or fd is left
over once the clients are done."""

import re

import pytest

from conftest import children_of, settled_fd_count, wait_until
from test_upgrade import PATH_ENV, Launch, chunk_bytes, counter_script, read_all

pytestmark = pytest.mark.needs_programs("/bin/sh")

CLIENTS = 4
UPGRADES = 3


def flood(go, code):
    """Numbered lines on stdout (and 'e<N>' on stderr) until go exists, then 'end'."""
    return ("i=0; while [ ! -e %s ]; do echo $i; echo e$i >&2; i=$((i+1)); done; echo end; "
            "exit %d" % (go, code))


def last_number(run):
    nums = re.findall(rb"(\d+)\r?\n", run.data())
    return int(nums[-1]) if nums else 0


def check_pipes(run, code):
    out = run.stdout.split(b"\n")
    assert out[-2:] == [b"end", b""], out[-3:]
    assert out[:-2] == [b"%d" % i for i in range(len(out) - 2)], "stdout lost or reordered"
    err = run.stderr.split(b"\n")
    assert err[-1] == b"" and err[:-1] == [b"e%d" % i for i in range(len(err) - 1)], \
        "stderr lost or reordered"
    assert run.exit_code == code
    run.check_sequencing()


def check_pty(run, code):
    lines = run.pty.split(b"\r\n")
    assert lines[-2:] == [b"end", b""], lines[-3:]
    nums = [ln for ln in lines[:-2] if not ln.startswith(b"e")]
    errs = [ln for ln in lines[:-2] if ln.startswith(b"e")]
    assert nums == [b"%d" % i for i in range(len(nums))], "PTY output lost or reordered"
    assert errs == [b"e%d" % i for i in range(len(errs))], "PTY output lost or reordered"
    assert run.exit_code == code
    run.check_sequencing()


def test_upgrades_under_load_lose_nothing(server_factory, tmp_path):
    go = tmp_path / "go"
    lu = Launch(server_factory, tmp_path, handover=True)
    pid = lu.srv.pid
    fds = settled_fd_count(pid)
    # A detached session: its processes print on while nobody reads them.
    d = lu.srv.connect()
    d.start("d-out", ["/bin/sh", "-c", counter_script(go)], env=PATH_ENV)
    d.start("d-tty", ["/bin/sh", "-c", counter_script(go)], env=PATH_ENV, tty=True)
    detached = d.init_result["sessionId"]
    d.collect_until_output("d-out", b"\n3\n")
    d.ws.abort()
    lu.wait_log("detached from")
    clients, runs = [], []
    for n in range(CLIENTS):
        c = lu.srv.connect()
        c.start("pipes", ["/bin/sh", "-c", flood(go, n)], env=PATH_ENV)
        c.start("tty", ["/bin/sh", "-c", flood(go, 20 + n)], env=PATH_ENV, tty=True)
        clients.append(c)
        runs.append({"pipes": c.collect_until_output("pipes", b"\n10\n"),
                     "tty": c.collect_until_output("tty", b"\n10\r\n")})
    for u in range(1, UPGRADES + 1):
        lu.usr2()
        lu.wait_log("Upgrade: took over from uexec ", count=u)
        # 1 + CLIENTS sessions (the detached one), 2 processes each, every client kept
        assert ("(%d sessions, %d processes, %d connections)"
                % (1 + CLIENTS, 2 * (1 + CLIENTS), CLIENTS)).encode() in lu.srv.stderr(), \
            lu.srv.stderr_tail()
        # every client reads on under the new binary before the next upgrade
        for c, r in zip(clients, runs):
            for name in r:
                r[name] = c.collect_until_output(
                    name, b"\n%d" % (last_number(r[name]) + 20), run=r[name])
    assert lu.srv.pid == pid and b"Upgrade: no hand-over (" not in lu.srv.stderr()
    go.touch()
    for n, (c, r) in enumerate(zip(clients, runs)):
        check_pipes(c.collect("pipes", run=r["pipes"]), n)
        check_pty(c.collect("tty", run=r["tty"]), 20 + n)
        c.close()
    # the detached session resumed: everything its processes printed, from seq 1
    r = lu.srv.connect(initialize=False)
    assert r.initialize(resume=detached)["sessionId"] == detached
    for name in ("d-out", "d-tty"):
        chunks, res = read_all(r, name)
        assert [ch["seq"] for ch in chunks] == list(range(1, len(chunks) + 1)), name
        assert res["exitCode"] == 7, res
        lines = chunk_bytes(chunks).replace(b"\r\n", b"\n").split(b"\n")
        assert lines[-2:] == [b"end", b""], lines[-3:]
        assert lines[:-2] == [b"%d" % i for i in range(len(lines) - 2)], name
    r.close()
    wait_until(lambda: not children_of(pid), what="every child of the server gone")
    assert settled_fd_count(pid) == fds
