"""Engine of the differential test: start servers, replay step scripts, normalise,
compare. The scripts themselves live in steps.py.

A script runs on one fresh WebSocket connection (a fresh session). Each step may
produce one *observation*; the observations of the reference and of uexec are
normalised and compared step by step. A step may list known, intentional
differences (KNOWN_DIFFS below) that are accepted when - and only when - the
difference has exactly that shape.
"""
import asyncio
import base64
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time

import websockets

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


# --------------------------------------------------------------------------- servers

def find_reference():
    cands = []
    if os.environ.get("UEXEC_REF_BIN"):
        cands.append(os.environ["UEXEC_REF_BIN"])
    d = os.environ.get("UEXEC_REF_DIR", "/opt/uexec-ref")
    cands += [os.path.join(d, "codex"),
              os.path.join(d, "node_modules/@openai/codex-linux-x64/vendor/"
                              "x86_64-unknown-linux-musl/bin/codex")]
    for c in cands:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.realpath(c)
    return None


def find_uexec():
    b = os.environ.get("UEXEC_BIN", os.path.join(ROOT, "build", "src", "uexec"))
    return b if os.path.isfile(b) and os.access(b, os.X_OK) else None


def base_dir():
    d = os.environ.get("UEXEC_DIFF_DIR",
                       os.path.join(os.path.expanduser("~"), ".cache", "uexec-diff"))
    if d == "/tmp" or d.startswith("/tmp/"):
        raise RuntimeError("UEXEC_DIFF_DIR must be outside /tmp (reference CODEX_HOME)")
    os.makedirs(d, exist_ok=True)
    return d


class Server:
    """A process that prints its ws:// URL as the first stdout line."""

    def __init__(self, name, argv, env, cwd, log):
        self.name = name
        self.log = log
        self.spec = (argv, env, cwd)
        self.restarts = 0
        self._start()

    def _start(self):
        argv, env, cwd = self.spec
        name, log = self.name, self.log
        err = open(log, "ab")
        self.p = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=err, start_new_session=True)
        line = [None]

        def rd():
            line[0] = self.p.stdout.readline().decode(errors="replace").strip()

        t = threading.Thread(target=rd, daemon=True)
        t.start()
        t.join(30)
        if not line[0] or not line[0].startswith("ws://"):
            self.stop()
            raise RuntimeError("%s did not print a ws:// URL (got %r); see %s"
                               % (name, line[0], log))
        self.url = line[0]
        threading.Thread(target=self.p.stdout.read, daemon=True).start()

    def alive(self):
        return self.p.poll() is None

    def ensure_running(self):
        """Restart after a crash so one crash does not fail every later script.
        Returns the exit status of the dead process, or None if it was alive."""
        if self.alive():
            return None
        rc = self.p.returncode
        self.restarts += 1
        self._start()
        return rc

    def stop(self):
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, signal.SIGTERM)
                self.p.wait(5)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.p.wait()


def server_env(home):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CODEX_") and k not in ("TMPDIR",)}
    env["CODEX_HOME"] = home
    return env


def start_servers(which=("ref", "uexec")):
    """-> dict name -> Server, plus the shared work dir. Both servers get the same
    environment and cwd so environmentInfo values are comparable."""
    bd = base_dir()
    work = os.path.join(bd, "work")
    home = os.path.join(bd, "codex-home")
    os.makedirs(work, exist_ok=True)
    os.makedirs(home, exist_ok=True)
    env = server_env(home)
    out = {}
    if "ref" in which:
        out["ref"] = Server("reference", [find_reference(), "exec-server", "--listen",
                                          "ws://127.0.0.1:0"], env, work,
                            os.path.join(bd, "ref.err"))
    if "uexec" in which:
        out["uexec"] = Server("uexec", [find_uexec(), "--listen", "ws://127.0.0.1:0"],
                              env, work, os.path.join(bd, "uexec.err"))
    return out, work


# --------------------------------------------------------------------------- client

class Conn:
    def __init__(self, ws):
        self.ws = ws
        self.responses = {}      # json(id) -> [msg]
        self.notes = []          # notifications in arrival order
        self.deltas_taken = {}   # requestId -> http/request/bodyDelta notes recorded already
        self.order = []          # ("resp", id) / ("note", method) arrival order
        self.closed = False
        self.close_code = None
        self.cond = asyncio.Condition()
        self.task = asyncio.ensure_future(self._reader())

    async def _reader(self):
        try:
            async for raw in self.ws:
                try:
                    m = json.loads(raw)
                except ValueError:
                    m = {"_unparsable": raw if isinstance(raw, str) else repr(raw)}
                async with self.cond:
                    if isinstance(m, dict) and "method" in m and "id" not in m:
                        self.notes.append(m)
                        self.order.append(("note", m.get("method")))
                    else:
                        k = json.dumps(m.get("id") if isinstance(m, dict) else None)
                        self.responses.setdefault(k, []).append(m)
                        self.order.append(("resp", m.get("id") if isinstance(m, dict) else None))
                    self.cond.notify_all()
        except websockets.ConnectionClosed:
            pass
        finally:
            async with self.cond:
                self.closed = True
                self.close_code = self.ws.close_code
                self.cond.notify_all()

    async def wait_for(self, pred, timeout):
        async with self.cond:
            try:
                await asyncio.wait_for(self.cond.wait_for(lambda: pred() or self.closed), timeout)
            except asyncio.TimeoutError:
                return False
            return pred()

    async def response(self, rid, timeout):
        k = json.dumps(rid)
        ok = await self.wait_for(lambda: bool(self.responses.get(k)), timeout)
        if not ok:
            return {"_no_response": "closed" if self.closed else "timeout"}
        return self.responses[k].pop(0)

    def proc_events(self, pid):
        return [n for n in self.notes if (n.get("params") or {}).get("processId") == pid
                and n.get("method") in ("process/output", "process/exited", "process/closed")]


def subst(obj, vars_):
    if isinstance(obj, str):
        for k, v in vars_.items():
            obj = obj.replace(k, v)
        return obj
    if isinstance(obj, list):
        return [subst(x, vars_) for x in obj]
    if isinstance(obj, dict):
        return {k: subst(v, vars_) for k, v in obj.items()}
    return obj


def summarize_deltas(ds):
    """Chunk-boundary-free summary of one streamed http/request body: the bytes, whether seq
    runs from 1 without gaps, the terminal delta (seq dropped: it counts the chunks)."""
    body = b"".join(base64.b64decode(d.get("deltaBase64", "")) for d in ds)
    last = dict(ds[-1]) if ds else None
    if last:
        last.pop("seq", None)
    return {"body": body.decode("latin1"), "seq_ok": [d.get("seq") for d in ds] ==
            list(range(1, len(ds) + 1)), "last": last,
            "done_count": sum(1 for d in ds if d.get("done"))}


def summarize_events(evs):
    """Chunk-boundary-free summary of one process's notifications."""
    streams = {}
    exited = []
    closed = 0
    seqs = []
    for n in evs:
        p = n["params"]
        seqs.append(p.get("seq"))
        if n["method"] == "process/output":
            streams.setdefault(p["stream"], b"")
            streams[p["stream"]] += base64.b64decode(p["chunk"])
        elif n["method"] == "process/exited":
            exited.append({"exitCode": p.get("exitCode"), "sandboxDenied": p.get("sandboxDenied")})
        else:
            closed += 1
    return {
        "output": {k: v.decode("utf-8", "replace") for k, v in sorted(streams.items())},
        "exited": exited,
        "closed": closed,
        "seq_contiguous_from_1": seqs == list(range(1, len(seqs) + 1)),
        "closed_last": bool(evs) and evs[-1]["method"] == "process/closed",
    }


def summarize_read(res):
    """process/read result without chunk boundaries."""
    if not isinstance(res, dict) or "result" not in res:
        return res
    r = dict(res["result"])
    streams = {}
    for c in r.pop("chunks", []):
        streams.setdefault(c["stream"], b"")
        streams[c["stream"]] += base64.b64decode(c["chunk"])
    r.pop("nextSeq", None)
    r["output"] = {k: v.decode("utf-8", "replace") for k, v in sorted(streams.items())}
    return {"result": r}


async def run_script(url, script, vars_):
    """Run one script against url; returns a list of (step label, observation)."""
    obs = []
    ws = await websockets.connect(url, compression=None, max_size=None, ping_interval=None,
                                  close_timeout=2, open_timeout=10)
    c = Conn(ws)
    next_id = [1000]
    try:
        if script.get("handshake", True):
            await ws.send(json.dumps({"id": 0, "method": "initialize",
                                      "params": {"clientName": "uexec-diff"}}))
            r = await c.response(0, 10)
            if "result" not in r:
                return [("handshake", {"_handshake_failed": r})]
            await ws.send(json.dumps({"method": "initialized", "params": {}}))
        for st in script["steps"]:
            st = subst(st, vars_)
            op = st["op"]
            label = st.get("label") or op
            to = st.get("timeout", 10)
            if op == "req":
                rid = st.get("id")
                if rid is None:
                    next_id[0] += 1
                    rid = next_id[0]
                msg = {"id": rid, "method": st["method"]}
                if "params" in st:
                    msg["params"] = st["params"]
                await ws.send(json.dumps(msg))
                if st.get("nowait"):
                    continue
                r = await c.response(rid, to)
                if st.get("summarize") == "read":
                    r = summarize_read(r)
                elif st.get("summarize") == "output":   # racy flags dropped
                    r = summarize_read(r)
                    r = {"output": r["result"]["output"]} if "result" in r else r
                obs.append((label, r))
            elif op == "await":          # response of an earlier nowait request
                r = await c.response(st["id"], to)
                obs.append((label, r))
            elif op == "notify":
                await ws.send(json.dumps({"method": st["method"], "params": st.get("params")}))
            elif op == "raw":
                await ws.send(st["text"])
                if "expect_id" in st:
                    obs.append((label, await c.response(st["expect_id"], to)))
            elif op == "quiet":          # nothing may arrive for `secs`
                n0 = len(c.order)
                await asyncio.sleep(st.get("secs", 0.3))
                obs.append((label, {"frames": c.order[n0:], "closed": c.closed}))
            elif op == "sleep":
                await asyncio.sleep(st["secs"])
            elif op == "wait_output":    # until concatenated output contains text
                pid, text = st["pid"], st["text"]

                def has():
                    s = summarize_events(c.proc_events(pid))["output"]
                    return any(text in v for v in s.values())
                ok = await c.wait_for(has, to)
                obs.append((label, {"seen": ok}))
            elif op == "collect":        # until process/closed
                pid = st["pid"]
                await c.wait_for(lambda: any(n["method"] == "process/closed"
                                             for n in c.proc_events(pid)), to)
                evs = c.proc_events(pid)
                if st.get("exact"):
                    obs.append((label, [n["params"] for n in evs]))
                else:
                    obs.append((label, summarize_events(evs)))
            elif op == "expect_closed":
                await c.wait_for(lambda: False, to)
                obs.append((label, {"closed_by_server": c.closed}))
            elif op == "close":          # client Close frame
                try:
                    await asyncio.wait_for(ws.close(), to)
                except asyncio.TimeoutError:
                    pass
                await c.wait_for(lambda: False, 0.5)
                obs.append((label, {"closed": c.closed, "close_code": ws.close_code}))
            elif op == "body_deltas":    # http/request/bodyDelta of one requestId, to the last
                rid = st["request_id"]

                # the deltas after the ones an earlier body_deltas step of rid took
                seen = c.deltas_taken.get(rid, 0)

                def deltas():
                    return [n["params"] for n in c.notes if n.get("method") ==
                            "http/request/bodyDelta" and n.get("params", {}).get("requestId") ==
                            rid][seen:]
                await c.wait_for(lambda: any(d.get("done") for d in deltas()), to)
                ds = deltas()
                ds = ds[:next((i + 1 for i, d in enumerate(ds) if d.get("done")), len(ds))]
                c.deltas_taken[rid] = seen + len(ds)
                obs.append((label, summarize_deltas(ds)))
            elif op == "order":          # arrival order of responses for the given ids
                ids = st["ids"]
                await c.wait_for(lambda: all(json.dumps(i) in c.responses for i in ids), to)
                seen = [i for kind, i in c.order if kind == "resp" and i in ids]
                obs.append((label, {"order": seen}))
            else:
                raise ValueError("unknown op %r" % op)
    finally:
        c.task.cancel()
        try:
            await asyncio.wait_for(ws.close(), 2)
        except Exception:
            pass
    return obs


# --------------------------------------------------------------------------- normalise

UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
PEER_RE = re.compile(r"(failed to parse websocket JSON-RPC message from exec-server websocket )"
                     r"\S+?:\d+: ")
ARG0_RE = re.compile(r"[^\s:\"]*/tmp/arg0-linux/codex-arg0[A-Za-z0-9]+")
CODEXPATH_RE = re.compile(r"[^\s:\"]*/vendor/[^/\s:\"]+/codex-path")


def normalize(obj, vars_):
    if isinstance(obj, str):
        s = UUID_RE.sub("<uuid>", obj)
        s = PEER_RE.sub(r"\1<peer>: ", s)
        s = ARG0_RE.sub("<arg0-dir>", s)
        s = CODEXPATH_RE.sub("<codex-path>", s)
        return s
    if isinstance(obj, list):
        return [normalize(x, vars_) for x in obj]
    if isinstance(obj, tuple):
        return [normalize(x, vars_) for x in obj]
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if k in ("executorVersion", "providerId", "sessionId", "createdAtMs"):
                out[k] = "<%s>" % k
            elif k == "prependPathDirs":
                out[k] = "<dirs>"
            elif k == "capabilities" and isinstance(v, dict):
                out[k] = "<capabilities>"     # compared separately (check_capabilities)
            else:
                out[k] = normalize(v, vars_)
        return out
    return obj


def find_capabilities(obj):
    if isinstance(obj, dict):
        if isinstance(obj.get("capabilities"), dict):
            return obj["capabilities"]
        for v in obj.values():
            c = find_capabilities(v)
            if c is not None:
                return c
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            c = find_capabilities(v)
            if c is not None:
                return c
    return None


# Flags of the newest reference uexec follows (executorVersion) that an older one lacks.
NEWER_CAPABILITIES = {"networkProxyTransparentTcp"}


def check_capabilities(ref_obs, ux_obs):
    """Loose comparison: uexec advertises only implemented features, so its keys
    must be a subset of the reference's (plus its own extensions, named uexec*,
    README "Protocol extensions") and every value a boolean."""
    rc, uc = find_capabilities(ref_obs), find_capabilities(ux_obs)
    if rc is None and uc is None:
        return None
    if rc is None or uc is None:
        return "capabilities present on one side only"
    extra = set(k for k in uc if not k.startswith("uexec")) - set(rc) - NEWER_CAPABILITIES
    if extra:
        return "uexec advertises unknown capabilities %s" % sorted(extra)
    # every flag of the reference is there (false where the feature is not built)
    missing = set(rc) - set(uc)
    if missing:
        return "uexec lacks the reference's capabilities %s" % sorted(missing)
    bad = [k for k, v in uc.items() if not isinstance(v, bool)]
    if bad:
        return "non-boolean capability values %s" % bad
    return None


# --------------------------------------------------------------------------- known diffs

def _is_err(o, code=None, msg=None):
    return isinstance(o, dict) and isinstance(o.get("error"), dict) and \
        (code is None or o["error"].get("code") == code) and \
        (msg is None or o["error"].get("message") == msg)


def _real(o):
    """a genuine observation (not a missing step / client exception)"""
    return not (isinstance(o, dict) and ("_missing" in o or "_exception" in o
                                         or "_no_response" in o))


KNOWN_DIFFS = {
    # uexec accepts native absolute paths where the reference wants file: URIs
    "native-path": lambda r, u: _is_err(r, -32602, "invalid URI: relative URL without a base")
    and not _is_err(u, -32602, "invalid URI: relative URL without a base"),
    # uexec echoes the client's Close frame (clean 1000); the reference drops TCP (1006)
    "close-echo": lambda r, u: isinstance(r, dict) and isinstance(u, dict)
    and r.get("closed") and u.get("closed"),
    # uexec does not serialise the requests of one connection
    "no-serialise": lambda r, u: isinstance(u, dict) and "order" in u
    and sorted(map(str, r.get("order", []))) == sorted(map(str, u["order"])),
    # uexec refuses sandbox objects that ask for restrictions until its sandbox lands
    "sandbox-refused": lambda r, u: _is_err(
        u, -32602, "sandbox intent cannot be enforced on this executor"),
    # a killed PTY child: the reference reports exitCode 1, uexec 128 + signal as for pipes
    # (PROTOCOL.md §8.5 and the issue ask for 128 + signal in both modes)
    "pty-signal-exit": lambda r, u: isinstance(r, dict) and isinstance(u, dict)
    and [e.get("exitCode") for e in r.get("exited", [])] == [1]
    and [e.get("exitCode") for e in u.get("exited", [])] == [137]
    and {k: v for k, v in r.items() if k != "exited"} == {k: v for k, v in u.items() if k != "exited"},
    # a uexec extension method (README "Protocol extensions") that the reference does not know
    "uexec-extension": lambda r, u: _is_err(r, -32601) and not _is_err(u, -32601),
    # fs/remove with followSymlinks:false and recursive (the default) removes the tree through
    # directory fds without following any symlink; the reference refuses the combination
    # (README "Protocol notes", docs/ARCHITECTURE.md "Where uexec deliberately differs")
    "remove-nofollow-recursive": lambda r, u: _is_err(
        r, -32603, "recursive no-follow removal is unsupported")
    and isinstance(u, dict) and (u.get("result") == {} or _is_err(u, -32004)),
    # managedNetwork.transparentTcp is 0.171's: 0.169 ignores the member (and then finds the
    # disabled proxy); uexec follows 0.171 and refuses it first
    "transparent-tcp-0171": lambda r, u: _is_err(
        r, -32602, "invalid network proxy config: executor-local network proxy launch requires "
        "an enabled proxy")
    and _is_err(u, -32602, "transparent TCP requires an executor-local managed proxy"),
    # a deadline before the response head: the reference races two timers (its HTTP
    # client's, "error sending request for url (…)", and an outer one, "route-aware request
    # timed out") and answers either; uexec always the first
    "http-timeout-race": lambda r, u: _is_err(r, -32603) and _is_err(u, -32603)
    and r["error"]["message"] in ("http/request failed: route-aware request timed out",
                                  u["error"]["message"])
    and u["error"]["message"].startswith("http/request failed: error sending request for url ("),
    # the follow-up of a refused sandboxed start (nothing to collect on uexec)
    "sandbox-refused-followup": lambda r, u: isinstance(u, dict) and u.get("exited") == []
    and u.get("closed") == 0 and u.get("output") == {},
}


def _spawn_kind_0171(r, u):
    """0.169's spawn error (no data) against uexec's 0.171 one (data.kind): equal but that."""
    if not (_is_err(r) and _is_err(u)) or "data" in r["error"]:
        return False
    ue = dict(u["error"])
    data = ue.pop("data", None)
    return (isinstance(data, dict) and data.get("kind") in
            ("spawnNotFound", "spawnPermissionDenied", "spawnFailed")
            and ue == r["error"] and {k: v for k, v in u.items() if k != "error"}
            == {k: v for k, v in r.items() if k != "error"})


_DECODE_ERROR = "error decoding response body"


def _echo_without_ae(raw):
    """An echo fixture's body (JSON with the request's headers) without accept-encoding."""
    try:
        j = json.loads(raw)
    except ValueError:
        return raw
    if isinstance(j, dict) and isinstance(j.get("headers"), list):
        j["headers"] = [h for h in j["headers"] if not (isinstance(h, list) and h
                                                        and h[0] == "accept-encoding")]
        return json.dumps(j, sort_keys=True)
    return raw


def _http_coding_0171(r, u):
    """0.169's http/request client neither asks for a content coding nor decodes one; 0.171's
    (and uexec's) sends `accept-encoding: zstd,gzip` and decodes gzip/zstd bodies, leaving
    content-encoding and content-length out. Equal but that (the fixture's echo then lists
    one header more, so its content-length differs)."""
    import gzip
    if not isinstance(r, dict) or not isinstance(u, dict):
        return False
    if isinstance(r.get("result"), dict) and "headers" in r["result"]:
        rr = r["result"]
        coded = any(h.get("name") == "content-encoding" and h.get("value") == "gzip"
                    for h in rr["headers"])
        body = base64.b64decode(rr.get("bodyBase64") or "")
        if coded and body:
            try:
                body = gzip.decompress(body)
            except (OSError, EOFError):
                return _is_err(u, -32603, "failed to read http/request response body: "
                               + _DECODE_ERROR)
        ur = u.get("result")
        if not isinstance(ur, dict) or ur.get("status") != rr.get("status"):
            return False
        drop = {"content-length", "content-encoding"} if coded else {"content-length"}
        if [h for h in rr["headers"] if h.get("name") not in drop] != \
                [h for h in ur.get("headers", []) if h.get("name") != "content-length"]:
            return False
        return _echo_without_ae(body) == _echo_without_ae(
            base64.b64decode(ur.get("bodyBase64") or ""))
    if "seq_ok" in r and "seq_ok" in u:          # a body_deltas summary
        rb, ub = r["body"].encode("latin1"), u["body"].encode("latin1")
        rl, ul = r.get("last") or {}, u.get("last") or {}
        if r["seq_ok"] != u["seq_ok"] or r["done_count"] != u["done_count"]:
            return False
        try:
            return gzip.decompress(rb) == ub and rl == ul
        except (OSError, EOFError):
            # not gzip although the answer said so: 0.171 fails the stream
            return bool(rb) and ub == b"" and rl.get("error") is None and \
                ul.get("error") == _DECODE_ERROR
    return False


# Accepted on every step: uexec follows the newest reference (0.171) where 0.169 differs.
KNOWN_ALWAYS = {"spawn-kind-0171": _spawn_kind_0171, "http-coding-0171": _http_coding_0171}


def compare(script, ref_obs, ux_obs):
    """-> list of (label, status, detail); status in PASS / FAIL / KNOWN."""
    out = []
    steps_with_obs = [s for s in script["steps"] if _produces_obs(s)]
    if script.get("handshake", True) is not False:
        pass
    n = max(len(ref_obs), len(ux_obs))
    for i in range(n):
        st = steps_with_obs[i] if i < len(steps_with_obs) else {}
        lr, r = ref_obs[i] if i < len(ref_obs) else ("?", {"_missing": True})
        lu, u = ux_obs[i] if i < len(ux_obs) else ("?", {"_missing": True})
        label = lr if lr != "?" else lu
        cap = check_capabilities(r, u)
        nr, nu = normalize(r, {}), normalize(u, {})
        if cap:
            out.append((label, "FAIL", cap))
            continue
        if nr == nu:
            out.append((label, "PASS", ""))
            continue
        allowed = [k for k in st.get("allow", []) if _real(u) and KNOWN_DIFFS[k](r, u)]
        allowed += [k for k, f in KNOWN_ALWAYS.items() if _real(u) and f(nr, nu)]
        if allowed:
            out.append((label, "KNOWN", allowed[0]))
        else:
            out.append((label, "FAIL", "ref=%s\n        uexec=%s"
                        % (json.dumps(nr, sort_keys=True)[:1200],
                           json.dumps(nu, sort_keys=True)[:1200])))
    return out


def _produces_obs(st):
    op = st["op"]
    if op == "req":
        return not st.get("nowait")
    if op == "raw":
        return "expect_id" in st
    return op in ("await", "quiet", "wait_output", "collect", "expect_closed", "close", "order",
                  "body_deltas")


def script_vars(work):
    # The servers' shared CODEX_HOME (start_servers): discovery scripts put skills there.
    base = http_fixture_url()
    home = os.path.join(os.path.dirname(work), "codex-home")
    return {"$CWDURI": "file://" + work, "$CWDPATH": work,
            "$CODEXHOMEURI": "file://" + home, "$CODEXHOMEPATH": home,
            "$HTTPURL": base, "$HTTPADDR": base[len("http://"):],
            "$HTTPPORT": base.rsplit(":", 1)[1]}


def write_files(files, vars_):
    """{path: str/bytes} with $VARS substituted in the paths, written before a script."""
    for path, data in files.items():
        path = subst(path, vars_)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
# --------------------------------------------------------------------------- http fixture

_HTTP_FIXTURE = []


def http_fixture_url():
    """Base URL ("http://127.0.0.1:PORT") of a local HTTP server both executors reach, for
    http/request scripts; started once per run, in a thread of the harness. Its answers are
    deterministic (no Date or Server header)."""
    if not _HTTP_FIXTURE:
        import http_fixture
        _HTTP_FIXTURE.append(http_fixture.start())
    return _HTTP_FIXTURE[0]


def run_both(servers, work, script):
    vars_ = script_vars(work)
    res = {}
    for name in ("ref", "uexec"):
        rc = servers[name].ensure_running()
        if rc is not None:
            res.setdefault("_restarted", []).append((name, rc))
        if "files" in script:
            # State a server reads once (the reference caches capability discovery and
            # refreshes it on its own schedule): written afresh before each server's run
            # (the script may clean up after itself), the server then restarted.
            for d in script.get("clean", []):
                shutil.rmtree(subst(d, vars_), ignore_errors=True)
            write_files(script["files"], vars_)
            servers[name].stop()
            servers[name]._start()
        try:
            res[name] = asyncio.run(run_script(servers[name].url, script, vars_))
        except Exception as e:  # connection refused, server crash...
            res[name] = [("_error", {"_exception": repr(e)})]
    time.sleep(0.2)  # a crash while tearing the connection down
    res["_crashed"] = [n for n in ("ref", "uexec") if not servers[n].alive()]
    return res
