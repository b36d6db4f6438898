# SPDX-License-Identifier: MIT
"""Remote mode (/work/shared/spec/RELAY.md) tested from outside: one executor binary registered
at tests/relay/fake_relay.py, driven through tests/relay/harness.py. The test functions are
shared by tests/integration/test_relay.py (uexec) and tests/reference/test_relay_reference.py
(the reference `codex exec-server`): a module imports them with `from relay_cases import *`
and defines the `executor_cmd` fixture, a function (base_url, environment_id) -> argv.

Every negative case asserts both that the executor refused (a Reset for the stream, or the
physical connection closed) and that nothing ran: the request that would have run carries a
command appending to a marker file, which must stay absent (or keep its one line).
"""
import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness as H  # noqa: E402
import wsclient  # noqa: E402  (harness put tests/integration on sys.path)

# How long a case waits for an event (a reply, a reset, a reconnection, a process ending):
# generous for an ASan executor on a loaded machine; never a performance bound.
TIMEOUT = wsclient.DEFAULT_TIMEOUT

PYTHON = sys.executable
FAKE = os.path.join(HERE, "fake_relay.py")
ENV_ID = "env1"
TOKEN = "test-token-SECRET123"
SHELL_PATH = "/usr/local/bin:/usr/bin:/bin"
# what a sanitizer (ASan/UBSan/LSan/TSan build of the executor) writes on stderr
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                     "ERROR: ThreadSanitizer")


def shim_missing():
    p = H.shim_path()
    if not os.path.exists(p):
        return "the noise shim %s is not built (ninja -C build, or set UEXEC_NOISE_SHIM)" % p
    if H.shim_sanitized(p):
        return ("the noise shim %s is a sanitizer build that python cannot load; build the "
                "plain tree too (ninja -C build) or point UEXEC_NOISE_SHIM at it" % p)
    return None


class Relay:
    """fake_relay.py + one executor registered at it."""

    def __init__(self, argv_fn, tmp, env_extra=None, start_executor=True, relay_args=()):
        self.tmp = tmp
        self.relay_out = open(os.path.join(tmp, "relay.out"), "w+b")
        self.relay = subprocess.Popen([PYTHON, FAKE, "--port", "0"] + list(relay_args),
                                      stdout=subprocess.PIPE,
                                      stderr=open(os.path.join(tmp, "relay.err"), "wb"),
                                      stdin=subprocess.DEVNULL, start_new_session=True)
        self.base = self.relay.stdout.readline().decode().strip()
        assert re.match(r"https?://(127\.0\.0\.1|localhost):", self.base), self.base
        self.home = os.path.join(tmp, "home")
        os.makedirs(self.home, exist_ok=True)
        self.work = os.path.join(tmp, "work")
        os.makedirs(self.work, exist_ok=True)
        self.stderr_path = os.path.join(tmp, "executor.err")
        self.argv_fn = argv_fn
        self.exe = None
        self.env_extra = env_extra or {}
        if start_executor:
            self.start()

    def env(self, with_token=True):
        env = {k: v for k, v in os.environ.items()
               if k not in ("CODEX_API_KEY", "OPENAI_API_KEY", "CODEX_ACCESS_TOKEN", "RUST_LOG")}
        env.update({"HOME": self.home, "CODEX_HOME": self.home, "PATH": SHELL_PATH})
        if with_token:
            env["CODEX_API_KEY"] = TOKEN
        env.update(self.env_extra)
        return env

    def start(self):
        self._err = open(self.stderr_path, "ab")
        self.exe = subprocess.Popen(self.argv_fn(self.base, ENV_ID), env=self.env(),
                                    cwd=self.work, stdin=subprocess.DEVNULL,
                                    stdout=self._err, stderr=self._err, start_new_session=True)
        self.wait_connected()

    # -- the fake's log and knobs
    def log(self, since=0):
        with H.urlopen("%s/_log?since=%d" % (self.base, since)) as r:
            return json.loads(r.read())

    def state(self):
        with H.urlopen(self.base + "/_state") as r:
            return json.loads(r.read())

    def control(self, **knobs):
        req = urllib.request.Request(self.base + "/_control", data=json.dumps(knobs).encode(),
                                     method="POST", headers={"content-type": "application/json"})
        with H.urlopen(req) as r:
            return json.loads(r.read())

    def requests(self, op):
        return [e for e in self.log() if e.get("kind") == "http"
                and e["path"] == "/cloud/environment/%s/%s" % (ENV_ID, op)]

    def executor_opens(self):
        return [e for e in self.log() if e.get("kind") == "ws" and e["event"] == "open"
                and e["role"] == "executor"]

    def wait_connected(self, n=1, timeout=TIMEOUT):
        """Until the executor has opened its n-th rendezvous connection (and holds it)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.exe.poll() is not None:
                pytest.fail("executor exited with %s before connecting; stderr:\n%s"
                            % (self.exe.returncode, self.stderr_text()[-3000:]))
            st = self.state()
            if len(self.executor_opens()) >= n and any(r["executor_connected"]
                                                        for r in st["registrations"]):
                return
            time.sleep(0.05)
        pytest.fail("executor did not connect to the fake rendezvous within %.0fs; stderr:\n%s"
                    % (timeout, self.stderr_text()[-3000:]))

    def stderr_text(self):
        try:
            with open(self.stderr_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def sanitizer_reports(self):
        """Sanitizer report headers in the executor's stderr (a sanitized build; none else)."""
        err = self.stderr_text()
        return [m for m in SANITIZER_MARKERS if m in err]

    def harness(self, **kw):
        return H.Harness(self.base, ENV_ID, **kw)

    def marker(self, name="marker"):
        return os.path.join(self.work, name)

    def stop(self):
        for p in (self.exe, self.relay):
            if p is None or p.poll() is not None:
                continue
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            except ProcessLookupError:
                pass


@pytest.fixture
def executor_kind():
    """"uexec" or "reference"; the importing module may override it."""
    return "uexec"


@pytest.fixture
def relay(executor_cmd, tmp_path):
    why = shim_missing()
    if why:
        pytest.skip(why)
    r = Relay(executor_cmd, str(tmp_path))
    yield r
    alive = r.exe.poll() is None
    r.stop()
    assert alive, "the executor died during the test (exit %s); stderr:\n%s" % (
        r.exe.returncode, r.stderr_text()[-3000:])
    # after stop(): LeakSanitizer reports at exit
    reports = r.sanitizer_reports()
    assert not reports, "sanitizer report in the executor's stderr: %s\n%s" % (
        reports, r.stderr_text()[-6000:])


# ---------------------------------------------------------------------------
# helpers


def start_params(relay, process_id, argv):
    return {"processId": process_id, "argv": argv, "cwd": wsclient.file_uri(relay.work),
            "env": {"PATH": SHELL_PATH}, "tty": False}


def marker_cmd(relay, name="marker"):
    return ["/bin/sh", "-c", "echo ran >> '%s'" % relay.marker(name)]


def msg(obj):
    return json.dumps(obj, separators=(",", ":")).encode()


INIT = msg({"id": 1, "method": "initialize", "params": {"clientName": "relay-tests"}})
INITIALIZED = msg({"method": "initialized", "params": {}})


def start_msg(relay, name="marker", id=2, process_id="m"):
    return msg({"id": id, "method": "process/start",
                "params": start_params(relay, process_id, marker_cmd(relay, name))})


def refused(stream, timeout=TIMEOUT):
    """'reset' (a Reset came for the stream) or 'closed' (the physical connection ended)."""
    try:
        stream.wait_reset(timeout)
        return "reset"
    except (wsclient.ConnectionClosed, OSError):
        return "closed"
    except wsclient.Timeout:
        pytest.fail("the executor neither reset stream %s nor closed the connection within "
                    "%.0fs (frames seen: %r)" % (stream.stream_id, timeout,
                                                 [f.kind for f in stream.seen]))


def processes_naming(text):
    """pids of the processes whose command line holds text."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/cmdline" % d, "rb") as f:
                    if text.encode() in f.read():
                        out.append(int(d))
            except OSError:
                pass
    return out


def marker_settled(relay, name="marker"):
    """Returns once a marker command the executor may have started for what was sent
    before has done its write. Ordered, not timed: the executor handles the frames of its
    rendezvous connection in order, so a command run on a new stream now (its reply, its
    process's end) comes after it started anything sent before; a marker command started
    then runs (its command line names the marker) until it has written. Knobs that would
    refuse the new stream are reset first. (What is left to chance: the fake relay
    forwarding the new stream's frames ahead of the old one's, and a command started but
    not yet exec'd when looked for; both far shorter than the new stream's round trip.)"""
    relay.control(validate="ok", validate_delay_ms=0)
    s, rpc = rpc_stream(relay)
    run_echo(relay, rpc, "after-" + name, "ordered")
    wait_until_gone = time.monotonic() + TIMEOUT
    while processes_naming(relay.marker(name)):
        assert time.monotonic() < wait_until_gone, "a marker command never ended"
        time.sleep(0.05)
    s.close()


def assert_not_ran(relay, name="marker"):
    marker_settled(relay, name)
    assert not os.path.exists(relay.marker(name)), "the refused request ran anyway"


def rpc_stream(relay, h=None, phys=None, **kw):
    h = h or relay.harness()
    s = h.open_stream(phys, **kw)
    rpc = s.rpc()
    rpc.initialize()
    return s, rpc


def run_echo(relay, rpc, pid, text):
    rpc.start(pid, ["echo", text], cwd=relay.work, env={"PATH": SHELL_PATH})
    run = rpc.collect(pid, timeout=TIMEOUT)
    assert run.stdout == (text + "\n").encode(), run.stdout
    assert run.exit_code == 0
    return run


# ---------------------------------------------------------------------------
# what works


def test_register_request(relay):
    """§7.1: register carries the bearer token, the security profile and a public key JSON."""
    reg = relay.requests("register")
    assert reg, "no register request"
    e = reg[0]
    assert e["headers"].get("authorization") == "Bearer " + TOKEN
    assert e["body"]["security_profile"] == "noise_hybrid_ik_v1"
    key = e["body"]["executor_public_key"]
    assert set(key) == {"suite", "x25519_public_key", "mlkem768_public_key"}
    assert key["suite"] == "Noise_hybridIK_X25519+MLKEM768_AESGCM_SHA256"
    assert len(base64.b64decode(key["x25519_public_key"])) == 32
    assert len(base64.b64decode(key["mlkem768_public_key"])) == 1184
    # §7.5: no Authorization on the rendezvous upgrade
    ups = [x for x in relay.log() if x.get("upgrade") and x["path"].endswith("/executor")]
    assert ups and "authorization" not in ups[0]["headers"]


def test_initialize_process_read(relay):
    """§4.1-§4.4: handshake (msg2 empty), initialize, process/start, process/read until exited;
    validate was asked about this harness key and authorization."""
    h = relay.harness()
    s, rpc = rpc_stream(relay, h)
    rpc.start("p1", ["echo", "hi"], cwd=relay.work, env={"PATH": SHELL_PATH})
    out = b""
    after = 0
    for _ in range(50):
        r = rpc.read("p1", afterSeq=after, waitMs=1000) if after else rpc.read("p1", waitMs=1000)
        for c in r["chunks"]:
            out += base64.b64decode(c["chunk"])
        after = r["nextSeq"] - 1
        if r["exited"]:
            break
    assert r["exited"] and r["exitCode"] == 0, r
    assert out == b"hi\n"
    val = relay.requests("validate")
    assert len(val) == 1, val
    body = val[0]["body"]
    assert body["harness_public_key"] == h.kp.public_json()
    assert body["harness_key_authorization"] == s.bundle["harness_key_authorization"]
    assert body["executor_registration_id"] == s.bundle["executor_registration_id"]
    assert val[0]["headers"].get("authorization") == "Bearer " + TOKEN


def test_two_concurrent_streams(relay):
    """§1: streams multiplexed on one physical harness connection, plus one on its own."""
    h = relay.harness()
    phys = h.physical()
    a, ra = rpc_stream(relay, h, phys, bundle=phys.bundle)
    b, rb = rpc_stream(relay, h, phys)
    c, rc = rpc_stream(relay, h)
    for rpc, pid in ((ra, "a"), (rb, "b"), (rc, "c")):
        rpc.start(pid, ["/bin/sh", "-c", "sleep 0.3; echo out-%s" % pid], cwd=relay.work,
                  env={"PATH": SHELL_PATH})
    for rpc, pid in ((rc, "c"), (rb, "b"), (ra, "a")):
        run = rpc.collect(pid, timeout=TIMEOUT)
        assert run.stdout == ("out-%s\n" % pid).encode()


def test_fs_read_file(relay):
    s, rpc = rpc_stream(relay)
    path = os.path.join(relay.work, "file.txt")
    with open(path, "wb") as f:
        f.write(b"remote file \x00\xff")
    assert rpc.fs_read_file(path) == b"remote file \x00\xff"


def test_large_message_spans_records(relay):
    """§4.3: a message over 60 KiB goes in several records both ways."""
    s, rpc = rpc_stream(relay)
    data = os.urandom(200 * 1024)
    path = os.path.join(relay.work, "big.bin")
    r = rpc.fs_write_file(path, data)
    assert "result" in r, r
    assert rpc.fs_read_file(path) == data
    assert s.send_seq >= 4 and s.recv_next >= 4


def test_reorder_within_window(relay):
    """§5.1: records that arrive out of order within the window are put back in order."""
    h = relay.harness()
    s = h.open_stream()
    recs = [s.encrypt(r) for r in s.records(INIT) + s.records(INITIALIZED)
            + s.records(start_msg(relay))]
    for seq in (2, 1, 0):
        s.send_data(seq, recs[seq])
    s.send_seq = 3
    rpc = s.rpc()
    rpc.next_id = 10
    assert json.loads(s.recv_message())["id"] == 1
    assert json.loads(s.recv_message())["id"] == 2
    deadline = time.monotonic() + TIMEOUT
    while not os.path.exists(relay.marker()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert os.path.exists(relay.marker())


def test_duplicate_record_dropped(relay):
    """§5.1: a second copy of a record (same seq) is dropped silently: it does not run twice
    and the stream goes on."""
    h = relay.harness()
    s = h.open_stream()
    recs = [s.encrypt(r) for r in s.records(INIT) + s.records(INITIALIZED)
            + s.records(start_msg(relay))]
    for seq, ct in enumerate(recs):
        s.send_data(seq, ct)
    s.send_data(2, recs[2])
    s.send_seq = 3
    rpc = s.rpc()
    rpc.next_id = 10
    rpc.wait_reply(1)
    rpc.wait_reply(2)
    # the marker command's reply came; wait for it to end before reading its file
    assert rpc.collect("m", timeout=TIMEOUT).exit_code == 0
    run_echo(relay, rpc, "after", "still-alive")
    with open(relay.marker()) as f:
        assert f.read() == "ran\n"


# ---------------------------------------------------------------------------
# handshake refusals


def _assert_validate_refused(relay, knob):
    relay.control(validate=knob)
    h = relay.harness()
    s = h.open_stream(wait=False)
    assert refused(s) in ("reset", "closed")
    assert relay.requests("validate"), "the executor did not ask the registry"
    s.send_data(0, b"\x00" * 64)   # whatever follows must not run either
    assert_not_ran(relay)


def test_validate_false(relay):
    """§4.2 step 7: {"valid": false} -> Reset."""
    _assert_validate_refused(relay, "false")


AUTH_REJECTED = b"codex-registry-authentication-rejected/v1"


def test_validate_401(relay):
    """The registry refusing the executor's own credential (401) is told to the harness: the
    reference completes the handshake with msg2 payload AUTH_REJECTED (not in RELAY.md; found
    against the reference), and the stream is not activated: Data after it is reset and
    nothing runs (uexec does the same)."""
    relay.control(validate="401")
    h = relay.harness()
    s = h.open_stream(wait=False)
    try:
        s.finish_handshake()
        pytest.fail("the handshake completed with an empty msg2 payload after validate 401")
    except H.NoiseError:
        assert s.msg2_payload == AUTH_REJECTED, s.msg2_payload
        s.t = s.hs.split()
        for m in (INIT, INITIALIZED, start_msg(relay)):
            s.send_message(m)
        assert refused(s) in ("reset", "closed")
    assert_not_ran(relay)


def test_validate_403(relay):
    _assert_validate_refused(relay, "403")


def test_validate_500(relay):
    _assert_validate_refused(relay, "500")


def test_validate_garbage(relay):
    _assert_validate_refused(relay, "garbage")


@pytest.mark.slow
def test_validate_timeout(relay):
    """§4.2 step 6-7: validation is bounded by 10 s: the stream is reset at the executor's
    timeout (not before), long before the registry's answer (90 s) would have come."""
    relay.control(validate_delay_ms=90000)
    h = relay.harness()
    t0 = time.monotonic()
    s = h.open_stream(wait=False)
    assert refused(s, timeout=75) == "reset"
    assert time.monotonic() - t0 > 8.0


def test_slow_validate_does_not_block_others(relay):
    """§4.2 step 6: the physical loop keeps serving other streams during a validation:
    another stream's command runs from start to end while the registry is still holding
    the validation it was asked for (its answer comes 6 s after the request, within the
    executor's 10 s bound; the fake's log says when it was asked and whether it answered)."""
    s1, rpc1 = rpc_stream(relay)
    relay.control(validate_delay_ms=6000)
    h = relay.harness()
    slow = h.open_stream(wait=False)
    deadline = time.monotonic() + TIMEOUT
    while not relay.requests("validate")[1:]:     # the first was s1's
        assert time.monotonic() < deadline, "the executor never asked to validate"
        time.sleep(0.05)
    run_echo(relay, rpc1, "busy", "not-blocked")
    pending = relay.requests("validate")[1]
    assert "status" not in pending, "answered before the other stream's command ended: " \
        "cannot tell (the machine took 6 s for it?)"
    slow.finish_handshake(timeout=TIMEOUT)


def test_validate_keeps_its_registry_connection(relay, executor_kind):
    """The validate calls of successive streams share one keep-alive connection to the
    registry (a round trip each, no TCP or TLS handshake on the channel's setup path);
    a registration has its own connection, closed after its answer."""
    if executor_kind == "reference":
        pytest.skip("uexec's connection reuse")
    h = relay.harness()
    for _ in range(3):
        h.open_stream()
    vs = relay.requests("validate")
    assert len(vs) == 3 and all(v.get("status") == 200 for v in vs), vs
    assert len({v["http_conn"] for v in vs}) == 1, [(v["http_conn"], v["nth"]) for v in vs]
    assert [v["nth"] for v in vs] == [1, 2, 3]
    assert "connection" not in vs[0]["headers"], vs[0]["headers"]
    reg = relay.requests("register")[0]
    assert reg["headers"].get("connection") == "close"
    assert reg["http_conn"] not in {v["http_conn"] for v in vs}


def test_validate_on_a_dropped_kept_connection_runs_again(relay, executor_kind):
    """A registry may close an idle keep-alive connection as it is reused: the validate
    that found it closed (no answer byte) runs once more on a new connection, and the
    stream opens."""
    if executor_kind == "reference":
        pytest.skip("uexec's connection reuse")
    h = relay.harness()
    h.open_stream()                       # its validate leaves a kept connection
    relay.control(validate_drop_kept=1)
    h.open_stream()                       # ... which the fake closes on this one's request
    drops = [e for e in relay.log() if e.get("kind") == "http_drop"]
    assert len(drops) == 1, drops
    vs = relay.requests("validate")
    assert len(vs) == 2 and all(v.get("status") == 200 for v in vs), vs
    assert vs[1]["http_conn"] != drops[0]["http_conn"] and vs[1]["nth"] == 1


def test_oversize_authorization(relay):
    """§4.2 step 5: an authorization over 4096 bytes -> Reset, no validation."""
    h = relay.harness()
    s = h.open_stream(wait=False, authorization="a" * 4097)
    assert refused(s) in ("reset", "closed")
    assert not relay.requests("validate")
    assert_not_ran(relay)


def test_authorization_4096_is_fine(relay):
    """The limit is inclusive: 4096 bytes reach the registry (which refuses this one)."""
    h = relay.harness()
    s = h.open_stream(wait=False, authorization="a" * 4096)
    assert refused(s) == "reset"
    val = relay.requests("validate")
    assert val and val[0]["body"]["harness_key_authorization"] == "a" * 4096


def test_wrong_prologue(relay):
    """§6.4: a handshake bound to another registration fails msg1 -> Reset, no validation."""
    h = relay.harness()
    s = h.open_stream(wait=False, prologue_registration="reg-someone-else")
    assert refused(s) in ("reset", "closed")
    assert not relay.requests("validate")


def test_prologue_lengths_are_u64(relay):
    """The prologue's part() lengths are 8-byte big-endian (upstream noise_channel_prologue and
    the reference executor), not the u32 of RELAY.md §6.4: a u32 prologue fails msg1."""
    h = relay.harness()
    s = h.open_stream(wait=False, prologue_width=4)
    assert refused(s) in ("reset", "closed")
    assert not relay.requests("validate")
    rpc_stream(relay)


def test_msg2_order_kem_first(relay):
    """§6.1: msg2 is `ekem, skem, e, ee, se` (settled against the reference executor); a harness
    expecting the older order fails to read it."""
    h = relay.harness(order=H.MSG2_KEM_LAST)
    s = h.open_stream(wait=False)
    with pytest.raises(H.NoiseError):
        s.finish_handshake()
    rpc_stream(relay)   # KEM-first works


def test_data_before_handshake(relay):
    """§4.2: Data for a stream without a handshake -> Reset; nothing runs."""
    h = relay.harness()
    s = h.open_stream(handshake=False, bundle=h.connect_bundle())
    s.send_frame(s.frame("resume", next_seq=0))
    s.send_data(0, b"\x00" * 40)
    assert refused(s) in ("reset", "closed")
    assert_not_ran(relay)


def test_data_during_pending_handshake(relay):
    """§4.2: Data while the validation is pending -> Reset; the handshake never completes:
    a second stream on the same physical connection completes its handshake and, once the
    registry's answer to the first stream's validation (if the executor asked for one) is
    due, a command; no msg2 for the first came before that (the executor sends on its
    connection in order; see marker_settled() for what the fake relay's forwarding leaves
    to chance)."""
    relay.control(validate_delay_ms=1500)
    h = relay.harness()
    s = h.open_stream(wait=False)
    s.send_data(0, b"\x00" * 40)
    how = refused(s)
    assert how in ("reset", "closed")
    if how == "closed":
        return   # the physical connection is gone, and any msg2 with it
    relay.control(validate_delay_ms=0)
    s2, rpc2 = rpc_stream(relay, h, s.phys)
    asked = relay.requests("validate")
    if len(asked) > 1:   # the first stream's came first (before its reset, or before s2's)
        time.sleep(max(0.0, asked[0]["t"] + 1.5 - time.time()))   # the fake's answer is due
    run_echo(relay, rpc2, "p", "after-pending")
    late = list(s.phys.queues[s.stream_id])
    assert not any(f.kind == "handshake" for f in s.seen + late), [f.kind for f in s.seen + late]


def test_second_handshake_on_active_stream(relay):
    """§4.2 step 1: a handshake for an active stream -> Reset."""
    h = relay.harness()
    s, rpc = rpc_stream(relay, h)
    n_seen = len(s.seen)
    hs = H.Handshake(h.kp, s.bundle["executor_public_key"],
                     H.prologue(ENV_ID, s.bundle["executor_registration_id"], s.stream_id))
    s.send_frame(s.frame("handshake", payload=hs.write(s.bundle["harness_key_authorization"]
                                                       .encode())))
    assert refused(s) in ("reset", "closed")
    # the new handshake did not take over: no second msg2
    assert not any(f.kind == "handshake" for f in s.seen[n_seen:])


# ---------------------------------------------------------------------------
# transport refusals


def _handshaken(relay):
    h = relay.harness()
    s = h.open_stream()
    return s


def test_tampered_record(relay):
    """§4.3: a record that does not authenticate -> Reset; nothing runs."""
    s = _handshaken(relay)
    recs = [s.encrypt(r) for r in s.records(INIT) + s.records(INITIALIZED)
            + s.records(start_msg(relay))]
    bad = bytearray(recs[0])
    bad[5] ^= 0x01
    s.send_data(0, bytes(bad))
    for seq in (1, 2):
        s.send_data(seq, recs[seq])
    assert refused(s) in ("reset", "closed")
    assert_not_ran(relay)


def test_replayed_record_new_seq(relay):
    """§4.4: a record replayed under the next seq fails to decrypt (its nonce is spent) ->
    Reset; the replayed request does not run twice."""
    s = _handshaken(relay)
    recs = [s.encrypt(r) for r in s.records(INIT) + s.records(INITIALIZED)
            + s.records(start_msg(relay))]
    for seq, ct in enumerate(recs):
        s.send_data(seq, ct)
    s.send_seq = 3
    rpc = s.rpc()
    rpc.wait_reply(2)
    deadline = time.monotonic() + TIMEOUT
    while not os.path.exists(relay.marker()) and time.monotonic() < deadline:
        time.sleep(0.05)
    s.send_data(3, recs[2])
    assert refused(s) in ("reset", "closed")
    marker_settled(relay)
    with open(relay.marker()) as f:
        assert f.read() == "ran\n"


def test_reorder_beyond_window(relay):
    """§5.1: a record more than 64 ahead -> Reset; nothing runs."""
    s = _handshaken(relay)
    ct = s.encrypt(s.records(start_msg(relay))[0])
    s.send_data(66, ct)
    assert refused(s) in ("reset", "closed")
    assert_not_ran(relay)


def test_too_many_buffered_records(relay):
    """§5.1: at most 64 buffered records: seq 0 withheld, 1..64 buffered, 65 is one too many
    (distance 65 is also past the window); the stream is reset and nothing runs."""
    s = _handshaken(relay)
    for seq in range(1, 66):
        s.send_data(seq, s.encrypt(b"\x00\x00\x00\x02{}"))
    assert refused(s) in ("reset", "closed")
    assert_not_ran(relay)


def test_harness_reset_ends_stream(relay):
    """§4.2: a Reset from the harness drops the stream. Data sent on it afterwards is
    answered with a Reset and never reaches a JSON-RPC connection (the process/start it
    carried never runs); the stream's connection has ended (its session, which no other
    stream could resume while the stream lived, is resumable); a new stream works."""
    h = relay.harness()
    s = h.open_stream()
    rpc = s.rpc()
    sid = rpc.initialize()["sessionId"]
    # while the stream lives, another stream cannot take its session
    other = h.open_stream()
    err = other.rpc().error("initialize", {"clientName": "t", "resumeSessionId": sid})
    assert err["code"] == -32010, err
    seen = len(s.seen)
    s.close()
    marker = os.path.join(relay.work, "ran-after-reset")
    s.send_message(json.dumps({"id": 99, "method": "process/start",
                               "params": start_params(relay, "late",
                                                      ["/bin/sh", "-c", "touch " + marker])}))
    s.wait_reset(30)
    assert not [f for f in s.seen[seen:] if f.kind == "data"], "the dropped stream was answered"
    # the executor reads a physical connection in order: by the Reset above, the reset
    # stream's connection is gone; resuming its session from another physical connection
    # races only with that connection's detach, so try until it succeeds
    deadline = time.monotonic() + 30
    while True:
        s3 = h.open_stream()
        rpc3 = s3.rpc()
        reply = rpc3.call("initialize", {"clientName": "t", "resumeSessionId": sid})
        if "result" in reply:
            break
        assert reply["error"]["code"] == -32010, reply
        s3.close()
        assert time.monotonic() < deadline, "the reset stream's session stayed attached"
        time.sleep(0.05)
    assert reply["result"]["sessionId"] == sid, reply
    rpc3.notify("initialized", {})
    run_echo(relay, rpc3, "p", "after-reset")
    assert not os.path.exists(marker), "a request sent on the reset stream ran"


# ---------------------------------------------------------------------------
# limits


def test_failed_handshakes_close_physical_connection(relay, executor_kind):
    """§4.2: after 8 charged handshake failures on one physical connection the executor closes
    it; it then connects again (the fake's log shows a second rendezvous connection)."""
    if executor_kind == "reference":
        pytest.skip("the reference (0.169.0) does not close the connection: 20 failures in a "
                    "row are all reset ('pausing Noise relay handshakes after repeated "
                    "failures' in its strings); RELAY.md §4.2 follows a newer revision")
    h = relay.harness()
    phys = h.physical()
    outcomes = []
    for i in range(12):
        s = h.open_stream(phys, bundle=phys.bundle, wait=False,
                          prologue_registration="reg-wrong-%d" % i)
        try:
            s.wait_reset(TIMEOUT)
            outcomes.append("reset")
        except (wsclient.ConnectionClosed, OSError):
            outcomes.append("closed")
            break
        except wsclient.Timeout:
            outcomes.append("timeout")
            break
    assert outcomes[-1] == "closed", outcomes
    assert outcomes.count("reset") == 8, outcomes
    ex_close = [e for e in relay.log() if e.get("kind") == "ws" and e["role"] == "executor"
                and e["event"] == "close"]
    assert ex_close, "the executor's rendezvous connection did not end"
    relay.wait_connected(n=2)
    s2, rpc2 = rpc_stream(relay)
    run_echo(relay, rpc2, "p", "reconnected")


def test_stream_limit_128(relay):
    """§4.2 step 3/8: 128 active streams per physical connection; the 129th gets a Reset and
    the first 128 still work."""
    h = relay.harness()
    bundle = h.connect_bundle()
    physs = [h.physical(bundle) for _ in range(4)]
    streams = []
    for i in range(128):
        streams.append(h.open_stream(physs[i % 4], bundle=bundle))
    extra = h.open_stream(physs[0], bundle=bundle, wait=False)
    assert refused(extra) == "reset"
    rpc = streams[127].rpc()
    rpc.initialize()
    run_echo(relay, rpc, "p", "still-128")
    # one ends: a new one fits again, once the executor has handled the end (on another
    # physical connection nothing orders the two: try until it fits)
    streams[0].close()
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            s, rpc2 = rpc_stream(relay, h)
            break
        except H.StreamReset:
            assert time.monotonic() < deadline, "no room after a stream ended"
            time.sleep(0.05)
    run_echo(relay, rpc2, "q", "129-after-one-left")


def test_harness_disconnect_mid_output(relay):
    """A harness that vanishes while output streams: the executor stays healthy (a new stream
    works). (That the process does not stay for ever, the session's resume window being
    long by default, test_relay.py checks with a short one.)"""
    s, rpc = rpc_stream(relay)
    rpc.start("flood", ["/bin/sh", "-c", "while :; do echo flood-flood-flood-flood; done"],
              cwd=relay.work, env={"PATH": SHELL_PATH})
    rpc.collect_until_output("flood", "flood-flood", timeout=TIMEOUT)
    s.phys.abort()
    s2, rpc2 = rpc_stream(relay)
    run_echo(relay, rpc2, "p", "healthy")


def test_executor_reconnects_after_drop(relay):
    """§7.5 step 3-4: the rendezvous drops the executor; it connects again (after ~1 s) with
    the same registration, and new streams work."""
    relay.control(drop_executor="abort")
    relay.wait_connected(n=2)
    assert len(relay.requests("register")) == 1
    s, rpc = rpc_stream(relay)
    run_echo(relay, rpc, "p", "after-drop")


@pytest.mark.slow
def test_keepalive_ping_and_pong_timeout(relay):
    """§4.5: the executor pings its rendezvous connection every 30 s (empty payload); with no
    Pong for 60 s it drops the connection ("pong_timeout") and connects again."""
    relay.control(ignore_pings=True)
    t0 = time.monotonic()
    relay.wait_connected(n=2, timeout=120)
    elapsed = time.monotonic() - t0
    pings = [e for e in relay.log() if e.get("kind") == "ws" and e["event"] == "ping"
             and e["role"] == "executor"]
    assert pings and all(e["len"] == 0 for e in pings)
    assert 85 <= elapsed, elapsed      # not before (the wait above bounds it from above)
    relay.control(ignore_pings=False)
    s, rpc = rpc_stream(relay)
    run_echo(relay, rpc, "p", "after-pong-timeout")


def test_upgrade_refused_reregisters(relay):
    """§7.5 step 5: a 4xx on the rendezvous upgrade makes the executor register again."""
    relay.control(refuse_upgrades=1, drop_executor="close")
    relay.wait_connected(n=2)
    regs = relay.requests("register")
    assert len(regs) == 2, [r["status"] for r in regs]
    assert regs[0]["body"]["executor_public_key"] == regs[1]["body"]["executor_public_key"], \
        "§6.3: the identity is reused"
    s, rpc = rpc_stream(relay)
    run_echo(relay, rpc, "p", "after-reregister")


# ---------------------------------------------------------------------------
# registration


def test_registration_conflict_retried(tmp_path, executor_cmd, executor_kind):
    why = shim_missing()
    if why:
        pytest.skip(why)
    """§7.1: 503 registration_conflict is retried (jittered 500-750 ms, then 1-1.5 s...)."""
    r = Relay(executor_cmd, str(tmp_path), start_executor=False)
    try:
        r.control(register_conflicts=2)
        r.start()
        regs = r.requests("register")
        assert [e["status"] for e in regs] == [503, 503, 200]
        s, rpc = rpc_stream(r)
        run_echo(r, rpc, "p", "after-conflicts")
    finally:
        r.stop()
    assert not r.sanitizer_reports(), r.stderr_text()[-6000:]


def test_register_401_is_fatal(tmp_path, executor_cmd, executor_kind):
    """§7.1: any other register failure is not retried: uexec exits non-zero."""
    r = Relay(executor_cmd, str(tmp_path), start_executor=False)
    try:
        r.control(register_fail={"status": 401, "count": -1})
        p = subprocess.run(executor_cmd(r.base, ENV_ID), env=r.env(), capture_output=True,
                           text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
        assert p.returncode != 0
        assert len(r.requests("register")) == 1
        if executor_kind == "uexec":
            assert TOKEN not in p.stderr
        assert not [m for m in SANITIZER_MARKERS if m in p.stderr], p.stderr
    finally:
        r.stop()
