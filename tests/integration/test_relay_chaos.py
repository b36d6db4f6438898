# SPDX-License-Identifier: MIT
"""Chaos soak through the relay (marked slow): uexec --remote behind the fake registry +
rendezvous, three harness threads for UEXEC_CHAOS_SECONDS (default 20) doing random
actions on Noise streams: whole runs checked, floods whose stream is reset or whose
physical connection is dropped mid-way, two streams on one connection, processes left
running when the stream goes. Afterwards the executor is alive, has no child and the fds
it started with, still serves a stream, and exits without a sanitizer report (the relay
fixture). UEXEC_CHAOS_SEED replays the actions."""

import os
import random
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "relay"))

from conftest import (HOST, UEXEC_BIN, children_of, fd_count, settled_fd_count, start_workers,  # noqa: E402
                      uexec_has_remote, wait_until)
from relay_cases import SHELL_PATH, relay, rpc_stream, run_echo  # noqa: E402,F401

pytestmark = [pytest.mark.slow,
              pytest.mark.needs_programs("/bin/sh", "/usr/bin/head", "/bin/sleep")]
THREADS = 3


@pytest.fixture
def executor_cmd():
    HOST.require("io_uring")
    if not uexec_has_remote():
        pytest.skip("uexec --help does not mention --remote")
    return lambda base, env_id: [UEXEC_BIN, "--remote", base, "--environment-id", env_id,
                                 "--resume-window-ms", "300"]


def drop(s, rnd):
    """Ends a stream by a Reset, or its whole physical connection."""
    if rnd.random() < 0.5:
        s.close()
        s.phys.close()
    else:
        s.phys.abort()


def act_run(relay, h, rnd, tag):
    s, rpc = rpc_stream(relay, h)
    run_echo(relay, rpc, tag, "w%d" % rnd.getrandbits(32))
    drop(s, rnd)


def act_flood_drop(relay, h, rnd, tag):
    s, rpc = rpc_stream(relay, h)
    rpc.start(tag, ["/usr/bin/head", "-c", str(rnd.choice([1 << 16, 1 << 20, 8 << 20])),
                    "/dev/zero"], cwd=relay.work, env={"PATH": SHELL_PATH})
    for _ in range(rnd.randint(0, 6)):
        if rpc.next_notification()["method"] == "process/closed":
            break
    drop(s, rnd)


def act_two_streams(relay, h, rnd, tag):
    phys = h.physical()
    a, ra = rpc_stream(relay, h, phys, bundle=phys.bundle)
    b, rb = rpc_stream(relay, h, phys)
    for rpc, pid in ((ra, tag + "a"), (rb, tag + "b")):
        rpc.start(pid, ["/bin/sh", "-c", "echo out-%s" % pid], cwd=relay.work,
                  env={"PATH": SHELL_PATH})
    for rpc, pid in ((rb, tag + "b"), (ra, tag + "a")):
        run = rpc.collect(pid)
        assert run.stdout == ("out-%s\n" % pid).encode() and run.exit_code == 0
    a.close()
    phys.abort()


def act_left_running(relay, h, rnd, tag):
    """Processes still running when the stream goes: the resume window ends them."""
    s, rpc = rpc_stream(relay, h)
    for i in range(rnd.randint(1, 4)):
        rpc.start("%s-%d" % (tag, i), ["/bin/sleep", "30"], cwd=relay.work,
                  env={"PATH": SHELL_PATH})
    drop(s, rnd)


def act_fs(relay, h, rnd, tag):
    s, rpc = rpc_stream(relay, h)
    data = os.urandom(rnd.randint(0, 200 * 1024))
    path = os.path.join(relay.work, tag)
    assert "result" in rpc.fs_write_file(path, data)
    assert rpc.fs_read_file(path) == data
    os.unlink(path)
    drop(s, rnd)


ACTIONS = [act_run, act_flood_drop, act_two_streams, act_left_running, act_fs]


def test_relay_chaos_soak(relay):
    seconds = float(os.environ.get("UEXEC_CHAOS_SECONDS", "20"))
    seed = int(os.environ.get("UEXEC_CHAOS_SEED", str(random.randrange(1 << 32))))
    pid = relay.exe.pid
    h = relay.harness()
    act_run(relay, h, random.Random(0), "warm")
    wait_until(lambda: not children_of(pid), what="the warm-up process to go")
    base = settled_fd_count(pid, 1.0)   # what the warm-up left closing is closed
    deadline = time.monotonic() + seconds
    harnesses = [relay.harness() for _ in range(THREADS)]
    errors, counts, threads = start_workers(
        THREADS, deadline, seed, ACTIONS,
        lambda k, act, rnd, tag: act(relay, harnesses[k], rnd, tag))
    for t in threads:
        t.join(seconds + 120)
    assert not any(t.is_alive() for t in threads), "a worker hung (seed %d)" % seed
    assert not errors, "seed %d: %s" % (seed, errors)
    print("seed %d, actions: %s" % (seed, counts))
    assert relay.exe.poll() is None, "the executor died"
    wait_until(lambda: not children_of(pid),
               what="no children (left: %r)" % children_of(pid))
    s, rpc = rpc_stream(relay, h)
    run_echo(relay, rpc, "after", "still-here")
    s.close()
    s.phys.close()
    wait_until(lambda: fd_count(pid) == base,
               what="the executor's fds of the start (%d)" % base)
