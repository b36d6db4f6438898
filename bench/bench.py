#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""uexec benchmark orchestrator (see bench/README.md; normally run through bench/run.sh).

Starts uexec and, when installed, the reference `codex exec-server`, runs every
scenario against both with the C load generator (uexec-loadgen), runs the
kernel-limit probes, prints one JSON line per metric and a comparison table,
and writes bench/results/<date>.jsonl.
"""
import argparse
import datetime
import json
import os
import platform
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
REF_DEFAULT = "/opt/uexec-ref/codex"
# The proxy scenario's reference: 0.171 (docs/netproxy-wire-notes.md was observed on it) when
# installed there, else --ref.
REF_PROXY_DEFAULT = "/opt/uexec-ref-171/codex"
SCENARIOS = ["kernel", "spawn", "latency", "rpc", "throughput", "echo", "rss", "relay", "cgroup", "proxy"]
ALIASES = {"cpu": "spawn", "exit": "latency", "firstout": "latency", "write": "echo"}
CLK_TCK = os.sysconf("SC_CLK_TCK")

# Table rows: metric name, label, better ("low"/"high"), target (op, value) or None,
# kernel-limit metric or None.
ROWS = [
    ("spawn_exited_1c_p50", "spawn->exited p50 (/bin/true, 1 conn)", "low", ("<=", 0.9), "kernel_spawn_wait_p50"),
    ("spawn_exited_1c_p99", "spawn->exited p99 (1 conn)", "low", None, None),
    ("spawn_exited_8c_p50", "spawn->exited p50 (8 conns)", "low", None, None),
    ("spawn_exited_8c_p99", "spawn->exited p99 (8 conns)", "low", None, None),
    ("spawn_per_sec_1c", "spawns/s (1 conn)", "high", (">=", 1000), "kernel_spawn_per_sec_1t"),
    ("spawn_per_sec_8c", "spawns/s (8 conns)", "high", (">=", 1700), "kernel_spawn_per_sec_8t"),
    ("spawn_reply_1c_p50", "process/start reply p50", "low", ("<=", 0.15), "kernel_spawn_call_p50"),
    ("spawn_reply_1c_p99", "process/start reply p99", "low", None, None),
    ("cpu_per_spawn", "server CPU per spawn", "low", ("<=", 0.15), "kernel_spawn_cpu"),
    ("storm_read_rtt_alone_p50", "process/read RTT p50, 1 conn alone (storm baseline)", "low", None, None),
    ("storm_read_rtt_alone_p99", "process/read RTT p99, 1 conn alone", "low", None, None),
    ("storm_4c_read_rtt_p50", "its process/read RTT p50 while 4 conns spawn", "low", None, None),
    ("storm_4c_read_rtt_p99", "its process/read RTT p99 while 4 conns spawn", "low", None, None),
    ("storm_4c_spawns_per_sec", "spawns/s of those 4 conns", "high", None, None),
    ("firstout_first_output_1c_p50", "start->first output p50 (echo)", "low", ("<=", 0.9), None),
    ("firstout_first_output_1c_p99", "start->first output p99", "low", None, None),
    ("exit_to_exited_p50", "child exit->process/exited p50", "low", ("<=", 0.25), None),
    ("exit_to_exited_p99", "child exit->process/exited p99", "low", None, None),
    ("output_to_notification_p50", "child write->process/output p50", "low", None, None),
    ("output_to_notification_p99", "child write->process/output p99", "low", ("<=", 0.2), None),
    ("rpc_read_rtt_1c_p50", "process/read RTT p50 (1 conn)", "low", None, "kernel_tcp_rtt_1c_p50"),
    ("rpc_read_rtt_1c_p99", "process/read RTT p99 (1 conn)", "low", None, None),
    ("rpc_read_per_sec_1c", "process/read req/s (1 conn)", "high", None, "kernel_tcp_rtt_per_sec_1c"),
    ("rpc_read_rtt_8c_p50", "process/read RTT p50 (8 conns)", "low", None, "kernel_tcp_rtt_8c_p50"),
    ("rpc_read_per_sec_8c", "process/read req/s (8 conns, C)", "high", (">=", 130000), "kernel_tcp_rtt_per_sec_8c"),
    ("cpu_per_rpc", "server CPU per process/read (8 conns)", "low", None, None),
    ("rpc_read_per_sec_8c_d16", "process/read req/s (8 conns x16 pipelined)", "high", None, None),
    ("throughput_pipe", "output throughput, pipe", "high", (">=", 700), "kernel_pipe_b64_tcp"),
    ("throughput_pty", "output throughput, PTY", "high", (">=", 95), "kernel_pty_b64_tcp"),
    ("cpu_per_mb_pipe", "server CPU per MB output, pipe", "low", None, None),
    ("cpu_per_mb_pty", "server CPU per MB output, PTY", "low", None, None),
    ("throughput_pipe_chunk_avg", "avg process/output chunk, pipe", "high", None, None),
    ("throughput_pty_chunk_avg", "avg process/output chunk, PTY", "high", None, None),
    ("write_echo_p50", "process/write->echo p50 (cat)", "low", ("<=", 0.1), None),
    ("write_echo_p99", "process/write->echo p99 (cat)", "low", None, None),
    ("write_reply_p50", "process/write reply p50", "low", None, None),
    ("rss_idle", "server RSS, idle", "low", ("<=", 4096), None),
    ("rss_idle_anon", "server RSS, idle, anonymous only", "low", None, None),
    ("rss_per_idle_conn", "RSS per idle connection", "low", ("<=", 12), None),
    ("rss_per_idle_proc", "RSS per idle process (sleep)", "low", ("<=", 4), None),
]
# The relay scenario (sc_relay): metric, label, unit scale note. Servers are tagged
# "<uexec|reference>-<direct|relay>"; the ratio printed is relay / direct as measured.
RELAY_ROWS = [
    ("rl_setup_p50", "channel setup p50 (direct: TCP+WS upgrade; relay: Noise msg1->msg2 incl. validate)"),
    ("rl_setup_p99", "channel setup p99"),
    ("rl_setup_wait_p50", "  of which msg1 sent -> msg2 received (executor, validate, rendezvous) p50"),
    ("rl_registry_connect_p50", "registry /connect round trip p50 (relay only)"),
    ("rl_connect_p50", "connect -> initialize reply p50 (relay: /connect + WS + Noise + init)"),
    ("rl_connect_p99", "connect -> initialize reply p99"),
    ("rl_rpc_rtt_p50", "process/read RTT p50 (1 conn)"),
    ("rl_rpc_rtt_p99", "process/read RTT p99 (1 conn)"),
    ("rl_rpc_per_sec", "process/read req/s (1 conn, closed loop)"),
    ("rl_spawn_reply_p50", "process/start reply p50 (/bin/true)"),
    ("rl_spawn_exited_p50", "spawn->exited p50 (/bin/true, 1 conn)"),
    ("rl_spawn_exited_p99", "spawn->exited p99"),
    ("rl_throughput", "output throughput, pipe"),
    ("rl_cpu_per_mb", "server CPU per MB output"),
    ("rl_client_cpu_per_mb", "client CPU per MB (uexec-relaybench)"),
    ("rl_rendezvous_cpu_per_mb", "rendezvous CPU per MB (uexec-rendezvous)"),
]
CRYPTO_ROWS = [
    ("noise_keygen", "keygen: X25519 + ML-KEM-768 pair"),
    ("noise_msg1_write", "msg1 write (harness)"),
    ("noise_msg1_read", "msg1 read (executor)"),
    ("noise_msg2_write", "msg2 write (executor)"),
    ("noise_msg2_read", "msg2 read (harness)"),
    ("noise_split_both", "split, both sides"),
    ("noise_handshake_executor", "one handshake, executor side (msg1 read + msg2 write + split)"),
    ("noise_handshake_harness", "one handshake, harness side (msg1 write + msg2 read + split)"),
    ("aesgcm_encrypt_60k", "AES-256-GCM seal, 60 KiB records"),
    ("aesgcm_decrypt_60k", "AES-256-GCM open, 60 KiB records"),
    ("aesgcm_encrypt_ms_per_mb", "AES-256-GCM seal CPU per MB of record"),
]
# uexec only: the per-process cgroup's cost (issue 15: at most 0.1 ms p50), sc_cgroup
CGROUP_MODES = [("off", ["--process-cgroups", "off"]), ("on", ["--process-cgroups", "on"]),
                ("limits", ["--process-cgroups", "on", "--process-pids-max", "4096",
                            "--process-memory-max", "8G"])]
CGROUP_ROWS = [
    ("spawn_exited_1c_p50", "spawn->exited p50 (/bin/true, 1 conn)", "ms"),
    ("spawn_exited_1c_p99", "spawn->exited p99", "ms"),
    ("spawn_reply_1c_p50", "process/start reply p50", "ms"),
    ("cpu_per_spawn", "server CPU per spawn", "ms"),
]

# The managed network proxy (sc_proxy, bench/proxybench.c): servers tagged
# "<uexec|reference>-<direct|proxy>"; direct is the same client straight to the origin.
PROXY_ROWS = [
    ("px_connect_p50", "connect p50 (proxy: TCP connect -> CONNECT's 200 read; direct: TCP connect)"),
    ("px_connect_p99", "connect p99"),
    ("px_get_p50", "HTTP GET p50, new connection each (proxy: absolute-form; 2-byte body)"),
    ("px_get_p99", "HTTP GET p99"),
    ("px_tput", "tunnel throughput origin->client, one stream (proxy: CONNECT)"),
    ("px_upload", "tunnel throughput client->origin, one stream"),
    ("px_cpu_per_connect", "server CPU per CONNECT (setup, 200, teardown)"),
    ("px_cpu_per_get", "server CPU per proxied GET"),
    ("px_cpu_per_mb", "server CPU per MB tunnelled, origin->client"),
    ("px_cpu_per_mb_up", "server CPU per MB tunnelled, client->origin"),
    ("px_client_cpu_per_mb", "client CPU per MB, origin->client (uexec-proxybench)"),
    ("px_decisions_per_get", "network/policyDecision notifications per GET"),
]

KERNEL_ROWS = [
    ("kernel_spawn_wait_p50", "posix_spawn+pidfd wait p50 (/bin/true)"),
    ("kernel_spawn_wait_p99", "posix_spawn+pidfd wait p99"),
    ("kernel_spawn_call_p50", "posix_spawn() call alone p50"),
    ("kernel_spawn_cpu", "posix_spawn+wait: spawner's own CPU per spawn"),
    ("kernel_spawn_per_sec_1t", "posix_spawn+pidfd wait /s, 1 thread"),
    ("kernel_spawn_per_sec_8t", "posix_spawn+pidfd wait /s, 8 threads"),
    ("kernel_pipe_read", "raw pipe read"),
    ("kernel_pty_read", "raw PTY read"),
    ("kernel_pipe_b64_tcp", "pipe read+base64+write TCP"),
    ("kernel_pty_b64_tcp", "PTY read+base64+write TCP"),
    ("kernel_tcp_rtt_1c_p50", "TCP 128 B ping-pong p50, 1 conn"),
    ("kernel_tcp_rtt_1c_p99", "TCP 128 B ping-pong p99, 1 conn"),
    ("kernel_tcp_rtt_per_sec_1c", "TCP ping-pong /s, 1 conn"),
    ("kernel_tcp_rtt_8c_p50", "TCP ping-pong p50, 8 conns"),
    ("kernel_tcp_rtt_per_sec_8c", "TCP ping-pong /s, 8 conns (1-thread poll server)"),
]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


class Proc:
    """A helper process that prints one line (its URL) first: the relay's rendezvous, registry, remote
    server, and (Server) the servers measured. want: what that line starts with (None: no line)."""

    def __init__(self, cmd, name, env=None, want=None, cwd="/var/tmp"):
        self.name = name
        self.errlog = tempfile.NamedTemporaryFile(prefix=f"uexec-bench-{name}-", suffix=".log", dir="/var/tmp",
                                                  delete=False)
        try:
            self.p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.errlog,
                                      env=env, cwd=cwd)
        except OSError:
            self.errlog.close()
            os.unlink(self.errlog.name)
            raise
        self.pid = self.p.pid
        self.line = ""
        if want:
            r, _, _ = select.select([self.p.stdout], [], [], 30)
            self.line = self.p.stdout.readline().decode().strip() if r else ""
            if not self.line.startswith(want):
                err = self.errtail()
                self.stop()
                raise RuntimeError(f"{name} did not print its URL: {self.line!r} ({err})")

    def errtail(self):
        try:
            with open(self.errlog.name, "rb") as f:
                return f.read()[-600:].decode(errors="replace")
        except OSError:
            return ""

    def cpu_ms(self):
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        # fields[0] is state (field 3): utime is field 14, stime field 15
        return (int(fields[11]) + int(fields[12])) * 1000.0 / CLK_TCK

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.errlog.close()
        try:
            os.unlink(self.errlog.name)
        except OSError:
            pass


class Server(Proc):
    """One server process listening on ws://127.0.0.1:<ephemeral>."""

    def __init__(self, kind, cfg, extra=(), ref=None):
        self.kind = kind
        self.home = None
        env = dict(os.environ)
        if kind == "uexec":
            cmd = [cfg.uexec, "--listen", "ws://127.0.0.1:0", "--log-level", "warning", *extra]
        else:
            # CODEX_HOME outside /tmp: the reference cannot create its helper aliases under /tmp.
            self.home = tempfile.mkdtemp(prefix="uexec-bench-codex-home-", dir="/var/tmp")
            env["CODEX_HOME"] = self.home
            cmd = [ref or cfg.ref, "exec-server", "--listen", "ws://127.0.0.1:0"]
        try:
            super().__init__(cmd, kind, env=env, want="ws://")
        except OSError:
            if self.home:
                shutil.rmtree(self.home, ignore_errors=True)
            raise
        self.url = self.line

    def rss_kb(self, field="VmRSS"):
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        raise RuntimeError(f"no {field} in /proc/{self.pid}/status")

    def stop(self):
        super().stop()
        if self.home:
            shutil.rmtree(self.home, ignore_errors=True)


class ProxiedProcess:
    """A `sleep` started with process/start.networkProxy (not enforced: the proxy listens on the
    host's 127.0.0.1); .proxy is the HTTP_PROXY it printed. The control connection is drained by a
    thread while the load runs (the server sends a network/policyDecision per request)."""

    def __init__(self, srv):
        import threading
        sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
        from wsclient import RpcClient, Timeout, WebSocket
        self.Timeout = Timeout
        self.c = RpcClient(WebSocket.connect(srv.url), keep_log=False)
        self.c.initialize("uexec-bench")
        launch = {"proxy": {"enabled": True, "enableSocks5": True, "enableSocks5Udp": False,
                            "allowUpstreamProxy": False, "dangerouslyAllowAllUnixSockets": False,
                            "mode": "full", "domains": {"127.0.0.1": "allow"}, "unixSockets": None,
                            "allowLocalBinding": False},
                  "environmentId": "remote", "executionId": "bench-proxy"}
        # the domain entry is what lets the host-loopback origin through ("*" and allowLocalBinding do not)
        self.c.start("px", ["/bin/sh", "-c", 'echo "$HTTP_PROXY"; exec sleep 600'], cwd="/var/tmp",
                     networkProxy=launch)
        out = self.c.collect_until_output("px", "\n", timeout=15).data().decode().strip()
        if not out.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"the proxied command printed HTTP_PROXY={out!r}")
        self.proxy = out[len("http://"):]
        self.messages = self.decisions = 0
        self.stopping = False
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self):
        while not self.stopping:
            try:
                text = self.c.t.recv_text(0.2)
            except self.Timeout:
                continue
            except Exception:
                return
            self.messages += 1
            if '"network/policyDecision"' in text:
                self.decisions += 1

    def close(self):
        self.stopping = True
        self.thread.join(5)
        try:
            self.c.result("process/terminate", {"processId": "px"}, timeout=10)
            self.c.t.close()
        except Exception:
            pass


def run_json(cmd, timeout=600):
    """Runs a bench program; returns its JSON lines as dicts."""
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.decode()[-800:]}")
    if r.stderr.strip():
        log(r.stderr.decode().strip())
    return [json.loads(line) for line in r.stdout.decode().splitlines() if line.startswith("{")]


class Bench:
    def __init__(self, cfg):
        self.cfg = cfg
        self.loadgen = os.path.join(cfg.bindir, "uexec-loadgen")
        self.child = os.path.join(cfg.bindir, "uexec-bench-child")
        q = cfg.quick
        self.p = {
            "spawn_iters": 1000 if q else 3000,
            "spawn_secs": 2 if q else 4,
            "rpc_secs": 1 if q else 3,
            "bytes": (64 if q else 256) * 1024 * 1024,
            "echo_iters": 500 if q else 2000,
            "echo_secs": 3 if q else 5,
            "lat_iters": 200 if q else 500,
            "idle_n": 200 if q else 500,
        }

    def lg(self, srv, *args, timeout=600):
        return run_json([self.loadgen, args[0], "--url", srv.url, *[str(a) for a in args[1:]]], timeout)

    # ---- scenarios: each returns a list of metric dicts ----

    def sc_spawn(self, kind):
        p, out = self.p, []
        srv = Server(kind, self.cfg)
        try:
            c0 = srv.cpu_ms()
            res = self.lg(srv, "spawn", "--conns", 1, "--iters", p["spawn_iters"], "--seconds", p["spawn_secs"],
                          "--warmup", 20)
            c1 = srv.cpu_ms()
            n = next(m["iters"] for m in res if m["name"] == "spawn_per_sec_1c") + 20
            out += res
            out.append({"name": "cpu_per_spawn", "unit": "ms", "value": (c1 - c0) / n, "iters": n})
            out += self.lg(srv, "spawn", "--conns", 8, "--iters", p["spawn_iters"], "--seconds", p["spawn_secs"],
                           "--warmup", 5)
            # another connection's process/read during a spawn storm (issue 25 item 2)
            out += self.lg(srv, "storm", "--conns", 4, "--seconds", p["rpc_secs"])
        finally:
            srv.stop()
        return out

    def sc_cgroup(self, kind):
        """Spawn with per-process cgroups off, on, and on with pids + memory limits (on a
        hybrid host those are v1 directories the child enters before exec)."""
        if kind != "uexec":
            return []
        p, out = self.p, []
        # each run starts with another mode: the first server of a run measured slower here
        self.cg_runs = getattr(self, "cg_runs", -1) + 1
        k = self.cg_runs % len(CGROUP_MODES)
        for mode, extra in CGROUP_MODES[k:] + CGROUP_MODES[:k]:
            srv = Server(kind, self.cfg, extra)
            try:
                c0 = srv.cpu_ms()
                res = self.lg(srv, "spawn", "--conns", 1, "--iters", p["spawn_iters"],
                              "--seconds", p["spawn_secs"], "--warmup", 20)
                c1 = srv.cpu_ms()
            finally:
                srv.stop()
            n = next(m["iters"] for m in res if m["name"] == "spawn_per_sec_1c") + 20
            res.append({"name": "cpu_per_spawn", "unit": "ms", "value": (c1 - c0) / n, "iters": n})
            for m in res:
                out.append(dict(m, name="cg_%s_%s" % (mode, m["name"])))
        return out

    def sc_latency(self, kind):
        p, out = self.p, []
        srv = Server(kind, self.cfg)
        try:
            res = self.lg(srv, "spawn", "--name", "firstout", "--argv", "/bin/echo,hello", "--conns", 1,
                          "--iters", p["lat_iters"], "--seconds", p["spawn_secs"], "--warmup", 10)
            out += [m for m in res if "first_output" in m["name"]]
            out += self.lg(srv, "exitlat", "--child", self.child, "--iters", p["lat_iters"],
                           "--seconds", p["spawn_secs"] * 2)
            out += self.lg(srv, "outlat", "--child", self.child, "--procs", 2 if self.cfg.quick else 5,
                           "--lines", 200, "--interval-us", 1000)
        finally:
            srv.stop()
        return out

    def sc_rpc(self, kind):
        p, out = self.p, []
        srv = Server(kind, self.cfg)
        try:
            out += self.lg(srv, "rpc", "--conns", 1, "--seconds", p["rpc_secs"])
            c0 = srv.cpu_ms()
            res = self.lg(srv, "rpc", "--conns", 8, "--seconds", p["rpc_secs"])
            c1 = srv.cpu_ms()
            n = next(m["value"] for m in res if m["name"] == "_requests_total")
            out += res
            out.append({"name": "cpu_per_rpc", "unit": "us", "value": (c1 - c0) * 1000 / n, "iters": n})
            out += self.lg(srv, "rpc", "--conns", 8, "--depth", 16, "--seconds", p["rpc_secs"])
        finally:
            srv.stop()
        return [m for m in out if not m["name"].startswith("_")]

    def sc_throughput(self, kind):
        out = []
        for tty in (False, True):
            srv = Server(kind, self.cfg)
            try:
                args = ["throughput", "--child", self.child, "--bytes", self.p["bytes"]]
                c0 = srv.cpu_ms()
                out += self.lg(srv, *(args + (["--tty"] if tty else [])))
                c1 = srv.cpu_ms()
                mb = self.p["bytes"] / 1e6
                out.append({"name": "cpu_per_mb_" + ("pty" if tty else "pipe"), "unit": "ms",
                            "value": (c1 - c0) / mb, "iters": int(mb)})
            finally:
                srv.stop()
        return out

    def sc_echo(self, kind):
        srv = Server(kind, self.cfg)
        try:
            return self.lg(srv, "echo", "--iters", self.p["echo_iters"], "--seconds", self.p["echo_secs"])
        finally:
            srv.stop()

    def _hold(self, srv, args, n):
        """Runs an idle/idleproc load generator, returns the server RSS once it is ready."""
        lg = subprocess.Popen([self.loadgen, *args, "--url", srv.url], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            r, _, _ = select.select([lg.stdout], [], [], 300)
            line = lg.stdout.readline().decode().strip() if r else ""
            if line != "ready":
                raise RuntimeError(f"{args[0]} not ready: {lg.stderr.read().decode()[-500:] if lg.poll() is not None else 'timeout'}")
            time.sleep(1.0)
            rss = srv.rss_kb()
        finally:
            lg.stdin.close()
            try:
                lg.wait(120)
            except subprocess.TimeoutExpired:
                lg.kill()
                lg.wait()
        return rss

    def sc_rss(self, kind):
        n, out = self.p["idle_n"], []
        # uexec's defaults allow 256 sessions; one connection is one session here.
        extra = ("--max-sessions", "4096", "--max-connections", "4096") if kind == "uexec" else ()
        srv = Server(kind, self.cfg, extra)
        try:
            time.sleep(0.5)
            r0 = srv.rss_kb()
            out.append({"name": "rss_idle", "unit": "KB", "value": r0, "iters": 1})
            out.append({"name": "rss_idle_anon", "unit": "KB", "value": srv.rss_kb("RssAnon"), "iters": 1})
            r1 = self._hold(srv, ["idle", "--conns", str(n)], n)
            out.append({"name": "rss_per_idle_conn", "unit": "KB", "value": (r1 - r0) / n, "iters": n})
        finally:
            srv.stop()
        srv = Server(kind, self.cfg, extra)
        try:
            time.sleep(0.5)
            r0 = srv.rss_kb()
            r1 = self._hold(srv, ["idleproc", "--procs", str(n), "--sleep", "300"], n)
            out.append({"name": "rss_per_idle_proc", "unit": "KB", "value": (r1 - r0) / n, "iters": n})
        finally:
            srv.stop()
        return out

    # ---- relay vs direct (bench/relaybench.c, bench/rendezvous.c, tests/relay/fake_relay.py)

    def _relay_client(self, target, scenario, *args, cpu=()):
        """Runs uexec-relaybench; for throughput, the CPU of the procs in cpu is read between its
        "start" and "end" lines. Returns its metric dicts."""
        cmd = [os.path.join(self.cfg.bindir, "uexec-relaybench"), scenario, *target, *[str(a) for a in args]]
        if scenario != "throughput":
            return run_json(cmd)
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, c0, c1 = [], None, None
        for raw in p.stdout:
            line = raw.decode().strip()
            if line == "start":
                c0 = [x.cpu_ms() for _, x in cpu]
            elif line == "end":
                c1 = [x.cpu_ms() for _, x in cpu]
            elif line.startswith("{"):
                out.append(json.loads(line))
        err = p.stderr.read().decode()
        if p.wait() != 0 or c0 is None or c1 is None:
            raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {err[-800:]}")
        mb = self.p["bytes"] / 1e6
        for (name, _), a, b in zip(cpu, c0, c1):
            out.append({"name": name, "unit": "ms", "value": (b - a) / mb, "iters": int(mb)})
        return out

    def _relay_scenarios(self, target, cpu):
        p, out = self.p, []
        out += self._relay_client(target, "handshake", "--iters", 20 if self.cfg.quick else 50)
        out += self._relay_client(target, "rpc", "--seconds", p["rpc_secs"])
        out += self._relay_client(target, "spawn", "--iters", p["spawn_iters"], "--seconds", p["spawn_secs"])
        out += self._relay_client(target, "throughput", "--child", self.child, "--bytes", p["bytes"], cpu=cpu)
        return out

    def sc_relay(self, kind):
        out = []
        if kind == "uexec":
            # the pure crypto cost, in process (no server): tagged "crypto"
            nb = os.path.join(self.cfg.bindir, "noise-bench")
            for m in run_json([nb, "--iters", "50" if self.cfg.quick else "200",
                               "--mb", "64" if self.cfg.quick else "256"]):
                m["server"] = "crypto"
                out.append(m)
        # direct: the server listening on ws://127.0.0.1:0
        srv = Server(kind, self.cfg)
        try:
            res = self._relay_scenarios(["--url", srv.url], [("rl_cpu_per_mb", srv)])
        finally:
            srv.stop()
        for m in res:
            m["server"] = kind + "-direct"
        out += res
        # relay: C rendezvous, the Python fake as the registry only, the server in remote mode
        env_id = "bench"
        procs = []
        home = tempfile.mkdtemp(prefix="uexec-bench-remote-home-", dir="/var/tmp")
        try:
            rv = Proc([os.path.join(self.cfg.bindir, "uexec-rendezvous")], "rendezvous", want="ws://")
            procs.append(rv)
            reg = Proc(["/usr/bin/python3", os.path.join(ROOT, "tests", "relay", "fake_relay.py"), "--port", "0",
                        "--rendezvous-base", rv.line], "registry", want="http://")
            procs.append(reg)
            env = {k: v for k, v in os.environ.items()
                   if k not in ("CODEX_API_KEY", "OPENAI_API_KEY", "CODEX_ACCESS_TOKEN", "RUST_LOG")}
            env.update(CODEX_API_KEY="bench-executor-key", HOME=home, CODEX_HOME=home)
            if kind == "uexec":
                cmd = [self.cfg.uexec, "--remote", reg.line, "--environment-id", env_id, "--log-level", "warning"]
            else:
                cmd = [self.cfg.ref, "exec-server", "--remote", reg.line, "--environment-id", env_id]
            srv = Proc(cmd, kind + "-remote", env=env)
            procs.append(srv)
            deadline = time.time() + 30
            while True:  # registered and the rendezvous WebSocket up
                import urllib.request
                with urllib.request.urlopen(reg.line + "/_state", timeout=5) as r:
                    st = json.load(r)
                if any(x["environment_id"] == env_id for x in st["registrations"]):
                    time.sleep(0.3)  # the executor's upgrade to the C rendezvous follows the register reply
                    break
                if srv.p.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"{kind} --remote did not register: {srv.errtail()}")
                time.sleep(0.1)
            res = self._relay_scenarios(["--registry", reg.line, "--environment-id", env_id],
                                        [("rl_cpu_per_mb", srv), ("rl_rendezvous_cpu_per_mb", rv)])
        finally:
            for x in reversed(procs):
                x.stop()
            shutil.rmtree(home, ignore_errors=True)
        for m in res:
            m["server"] = kind + "-relay"
        out += res
        return out

    # ---- the managed network proxy vs direct (bench/proxybench.c)

    def sc_proxy(self, kind):
        """One server, one origin, one proxied `sleep`; each measurement direct then through the
        proxy, alternating, so that both see the same host load."""
        p, q = self.p, self.cfg.quick
        pb = os.path.join(self.cfg.bindir, "uexec-proxybench")
        iters, secs = (500, 2) if q else (3000, 5)
        out, procs, srv, px = [], [], None, None
        try:
            origin = Proc([pb, "origin"], "origin", want="tcp://")
            procs.append(origin)
            port = origin.line.rsplit(":", 1)[1]
            srv = Server(kind, self.cfg, ref=self.cfg.proxy_ref if kind == "reference" else None)
            px = ProxiedProcess(srv)
            log(f"bench: proxy: {kind} proxy {px.proxy}, origin {origin.line}")
            runs = [("connect", ["--iters", iters, "--seconds", secs, "--warmup", 50], "px_cpu_per_connect"),
                    ("get", ["--iters", iters, "--seconds", secs, "--warmup", 50], "px_cpu_per_get"),
                    ("tput", ["--bytes", p["bytes"]], "px_cpu_per_mb"),
                    ("upload", ["--bytes", p["bytes"]], "px_cpu_per_mb_up")]
            for mode, args, cpu_name in runs:
                for via in ("direct", "proxy"):
                    cmd = [pb, mode, "--origin", port, *[str(a) for a in args]]
                    if via == "proxy":
                        cmd += ["--proxy", px.proxy]
                    c0, d0 = srv.cpu_ms(), px.decisions
                    res = run_json(cmd, timeout=300)
                    c1 = srv.cpu_ms()
                    time.sleep(0.2)  # the last notifications
                    d1 = px.decisions
                    if via == "proxy":
                        if mode in ("connect", "get"):
                            n = next(m["value"] for m in res if m["name"].startswith("_count_"))
                            res.append({"name": cpu_name, "unit": "us", "value": (c1 - c0) * 1000 / n,
                                        "iters": int(n)})
                            if mode == "get":
                                res.append({"name": "px_decisions_per_get", "unit": "n",
                                            "value": (d1 - d0) / n, "iters": int(n)})
                        else:
                            mb = p["bytes"] / 1e6
                            res.append({"name": cpu_name, "unit": "ms", "value": (c1 - c0) / mb,
                                        "iters": int(mb)})
                    for m in res:
                        if not m["name"].startswith("_"):
                            out.append(dict(m, server=f"{kind}-{via}"))
        finally:
            if px:
                px.close()
            if srv:
                srv.stop()
            for x in procs:
                x.stop()
        return out

    def sc_kernel(self):
        b, out = self.cfg.bindir, []
        out += run_json([os.path.join(b, "kernel-spawn"), "--seconds", "1" if self.cfg.quick else "2"])
        kp = os.path.join(b, "kernel-pipe")
        nbytes = str(self.p["bytes"])
        for args in (["raw"], ["raw", "--pty"], ["b64tcp"], ["b64tcp", "--pty"]):
            out += run_json([kp, *args, "--bytes", nbytes])
        for c in ("1", "8"):
            out += run_json([os.path.join(b, "kernel-rtt"), "--conns", c, "--seconds", "1" if self.cfg.quick else "2"])
        return out


def git_commit():
    try:
        return subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True,
                              text=True, timeout=10).stdout.strip() or "unknown"
    except Exception:
        return "unknown"


def machine_facts():
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem = f.readline().split()[1]
    return {"cpu": cpu, "cores": os.cpu_count(), "mem_mb": int(mem) // 1024, "kernel": platform.release(),
            "loadavg": open("/proc/loadavg").read().split()[:3]}


def fmt(v, unit):
    if v is None:
        return "-"
    if unit == "ms":
        return f"{v:.3f}" if v < 10 else f"{v:.1f}"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.2f}"


def medians_and_units(lines):
    """{(server, name): value} and {name: unit} of a run's lines."""
    return ({(l["server"], l["name"]): l["value"] for l in lines},
            {l["name"]: l["unit"] for l in lines})


def ratio_text(a, b):
    """b / a with two decimals, or "-" where that means nothing."""
    return f"{b / a:.2f}" if a and b and a > 0 else "-"


def better_ratio(u, r, better):
    if u is None or r is None or u <= 0 or r <= 0:
        return None
    return u / r if better == "high" else r / u


def make_relay_table(lines):
    """Direct vs relay (sc_relay): value per mode and relay/direct, uexec and the reference; crypto."""
    med, units = medians_and_units(lines)
    if not any(k[0].endswith("-relay") or k[0] == "crypto" for k in med):
        return ""
    hdr = (f"{'relay vs direct (relay/direct: >1 = relay slower for times/CPU, <1 for rates)':<84} {'unit':<5} "
           f"{'direct':>9} {'relay':>9} {'ratio':>7} {'ref dir':>9} {'ref rel':>9} {'ratio':>7}")
    out = [hdr, "-" * len(hdr)]

    for name, label in RELAY_ROWS:
        vals = [med.get((s, name)) for s in ("uexec-direct", "uexec-relay", "reference-direct", "reference-relay")]
        if all(v is None for v in vals):
            continue
        u = units.get(name, "")
        ud, ur, rd, rr = vals
        out.append(f"{label:<84} {u:<5} {fmt(ud, u):>9} {fmt(ur, u):>9} {ratio_text(ud, ur):>7} "
                   f"{fmt(rd, u):>9} {fmt(rr, u):>9} {ratio_text(rd, rr):>7}")
    ud, ur = med.get(("uexec-direct", "rl_cpu_per_mb")), med.get(("uexec-relay", "rl_cpu_per_mb"))
    rd, rr = med.get(("reference-direct", "rl_cpu_per_mb")), med.get(("reference-relay", "rl_cpu_per_mb"))
    if ud is not None and ur is not None:
        out.append(f"{'server CPU per MB added by the relay (relay - direct)':<84} {'ms':<5} {'':>9} "
                   f"{fmt(ur - ud, 'ms'):>9} {'':>7} {'':>9} "
                   f"{(fmt(rr - rd, 'ms') if rd is not None and rr is not None else '-'):>9}")
    crows = [(n, l) for n, l in CRYPTO_ROWS if ("crypto", n) in med]
    if crows:
        out.append("")
        out.append("Noise crypto in process (bench/noise-bench.c, src/remote/codec; no I/O)")
        for n, l in crows:
            out.append(f"  {l:<62} {units[n]:<5} {fmt(med[('crypto', n)], units[n]):>10}")
    return "\n".join(out)


def make_proxy_table(lines):
    """Direct vs through the managed proxy (sc_proxy), uexec and the reference."""
    med, units = medians_and_units(lines)
    if not any(k[0].endswith("-proxy") for k in med):
        return ""
    spread = {l["name"]: (min(l["runs"]), max(l["runs"])) for l in lines
              if l["server"] == "uexec-proxy" and "runs" in l}
    better = {"px_tput": "high", "px_upload": "high"}
    NO_X = ("px_client_cpu_per_mb", "px_decisions_per_get")
    hdr = (f"{'managed proxy vs direct (ratio = proxy/direct)':<78} {'unit':<5} {'direct':>9} {'proxy':>9} "
           f"{'(runs min-max)':>17} {'ratio':>7} {'ref dir':>9} {'ref prx':>9} {'ratio':>7} {'x better':>9}")
    out = [hdr, "-" * len(hdr)]

    for name, label in PROXY_ROWS:
        vals = [med.get((s, name)) for s in ("uexec-direct", "uexec-proxy", "reference-direct", "reference-proxy")]
        if all(v is None for v in vals):
            continue
        u = units.get(name, "")
        ud, up, rd, rp = vals
        sp = spread.get(name)
        spstr = f"{fmt(sp[0], u)}-{fmt(sp[1], u)}" if sp else ""
        # x better: uexec's proxied figure against the reference's (not for the client's CPU or counts)
        xb = better_ratio(up, rp, better.get(name, "low")) if name not in NO_X else None
        out.append(f"{label:<78} {u:<5} {fmt(ud, u):>9} {fmt(up, u):>9} {spstr:>17} {ratio_text(ud, up):>7} "
                   f"{fmt(rd, u):>9} {fmt(rp, u):>9} {ratio_text(rd, rp):>7} {(f'{xb:.1f}x' if xb else '-'):>9}")
    return "\n".join(out)


def make_table(lines, facts):
    """The comparison table of aggregated metric lines (as written to results/*.jsonl)."""
    med, units = medians_and_units(lines)
    spread = {l["name"]: (min(l["runs"]), max(l["runs"])) for l in lines if l["server"] == "uexec" and "runs" in l}
    hdr = (f"{'metric':<44} {'unit':<5} {'uexec':>10} {'(runs min-max)':>17} {'reference':>10} {'x better':>9} "
           f"{'kernel':>10} {'% limit':>8} {'target':>9}  met")
    out = [hdr, "-" * len(hdr)]
    if not any(("uexec", n) in med or ("reference", n) in med for n, *_ in ROWS):
        out = []  # e.g. --only relay/proxy: only their own tables
    for name, label, better, target, kname in ROWS:
        u, r = med.get(("uexec", name)), med.get(("reference", name))
        if u is None and r is None:
            continue
        unit = units.get(name, "")
        k = med.get(("kernel", kname)) if kname else None
        ratio = better_ratio(u, r, better)
        pct = better_ratio(u, k, better)
        sp = spread.get(name)
        spstr = f"{fmt(sp[0], unit)}-{fmt(sp[1], unit)}" if sp else ""
        tstr, met = "", ""
        if target and u is not None:
            op, tv = target
            tstr = f"{op}{fmt(tv, unit)}"
            met = "yes" if (u <= tv if op == "<=" else u >= tv) else "NO"
        out.append(f"{label:<44} {unit:<5} {fmt(u, unit):>10} {spstr:>17} {fmt(r, unit):>10} "
                   f"{(f'{ratio:.1f}x' if ratio else '-'):>9} {fmt(k, unit) if k is not None else '-':>10} "
                   f"{(f'{pct * 100:.0f}%' if pct else '-'):>8} {tstr:>9}  {met}")
    rt = make_relay_table(lines)
    if rt:
        out.append("")
        out.append(rt)
    pt = make_proxy_table(lines)
    if pt:
        out.append("")
        out.append(pt)
    crows = [(n, l, u) for n, l, u in CGROUP_ROWS if ("uexec", "cg_off_" + n) in med]
    if crows:
        out.append("")
        out.append("per-process cgroups (uexec --process-cgroups off / on / on with "
                   "--process-pids-max and --process-memory-max)")
        out.append(f"  {'metric':<40} {'unit':<5} {'off':>9} {'on':>9} {'limits':>9} {'on-off':>9} "
                   f"{'limits-off':>10}")
        for n, l, u in crows:
            v = [med.get(("uexec", "cg_%s_%s" % (m, n))) for m, _ in CGROUP_MODES]
            d = ["%9.3f" % (x - v[0]) if x is not None and v[0] is not None else "%9s" % "-"
                 for x in v[1:]]
            out.append(f"  {l:<40} {u:<5} " + " ".join("%9.3f" % x if x is not None else "%9s" % "-"
                                                      for x in v) + f" {d[0]} {d[1]:>10}")

    krows = [(n, l) for n, l in KERNEL_ROWS if ("kernel", n) in med]
    if krows:
        out.append("")
        out.append("kernel limits on this machine (bench/k*.c)")
        for n, l in krows:
            out.append(f"  {l:<50} {units[n]:<5} {fmt(med[('kernel', n)], units[n]):>10}")
    out.append("")
    runs = facts.get("runs", {})
    nice = facts.get("nice")
    out.append(f"commit {facts.get('commit')}, kernel {facts.get('kernel')}, {facts.get('cpu')} x{facts.get('cores')}, "
               f"loadavg before {' '.join(facts.get('loadavg', []))} after {' '.join(facts.get('loadavg_after', []))}, "
               f"median of {runs.get('uexec')}/{runs.get('reference')}/{runs.get('kernel')} runs "
               f"(uexec/reference/kernel; rss: 1){f', nice {nice}' if nice else ''}, {facts.get('seconds')} s")
    if facts.get("reference"):
        out.append("reference: " + "; ".join(f"{v} ({k})" for k, v in facts["reference"].items()))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer iterations, 64 MiB throughput, 200 idle conns/procs")
    ap.add_argument("--no-reference", action="store_true", help="skip the reference codex exec-server")
    ap.add_argument("--no-kernel", action="store_true", help="skip the kernel-limit probes")
    ap.add_argument("--only", default="", help="comma list of: " + ",".join(SCENARIOS) + " (cpu=spawn)")
    ap.add_argument("--repeat", type=int, default=0, help="runs per scenario, median reported (default 5 for uexec, at most 3 for the reference and the kernel probes; quick 1)")
    ap.add_argument("--uexec", default=os.path.join(ROOT, "build-release", "src", "uexec"))
    ap.add_argument("--ref", default=REF_DEFAULT)
    ap.add_argument("--proxy-ref", default="",
                    help=f"reference for the proxy scenario (default {REF_PROXY_DEFAULT} when installed, else --ref)")
    ap.add_argument("--bindir", default=os.path.join(ROOT, "build-release", "bench"))
    ap.add_argument("--nice", type=int, default=0,
                    help="run servers and clients at this nice value (negative: less disturbed by other load)")
    ap.add_argument("--commit", default="", help="commit recorded in the results (default: git describe --dirty)")
    ap.add_argument("--no-save", action="store_true", help="do not write bench/results/<date>.jsonl")
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    ap.add_argument("--table", metavar="FILE.jsonl", help="only re-print the table of a results file")
    cfg = ap.parse_args()
    if cfg.table:
        with open(cfg.table) as f:
            rows = [json.loads(x) for x in f if x.strip()]
        meta = next((r["meta"] for r in rows if "meta" in r), {})
        if "runs" not in meta:
            meta["runs"] = {"uexec": meta.get("repeat"), "reference": min(meta.get("repeat", 3), 3),
                            "kernel": min(meta.get("repeat", 3), 3)}
        print(make_table([r for r in rows if "name" in r], meta))
        return
    cfg.uexec, cfg.ref, cfg.bindir = (os.path.abspath(x) for x in (cfg.uexec, cfg.ref, cfg.bindir))
    if not cfg.proxy_ref:
        cfg.proxy_ref = REF_PROXY_DEFAULT if os.access(REF_PROXY_DEFAULT, os.X_OK) else cfg.ref
    cfg.proxy_ref = os.path.abspath(cfg.proxy_ref)
    repeat = cfg.repeat or (1 if cfg.quick else 5)
    # The reference is 10-1000x off and slow to drive: at most 3 runs; kernel probes 3.
    max_runs = {"reference": min(repeat, 3), "kernel": min(repeat, 3), "uexec": repeat}
    if cfg.nice:
        os.nice(cfg.nice)
    only = [ALIASES.get(s, s) for s in cfg.only.split(",") if s] or SCENARIOS
    for s in only:
        if s not in SCENARIOS:
            ap.error(f"unknown scenario {s}")
    if cfg.no_kernel and "kernel" in only:
        only.remove("kernel")
    servers = ["uexec"]

    def ref_for(sc):
        return cfg.proxy_ref if sc == "proxy" else cfg.ref

    if not cfg.no_reference:
        if any(os.access(ref_for(s), os.X_OK) for s in only):
            servers.append("reference")
        for r in sorted({ref_for(s) for s in only if not os.access(ref_for(s), os.X_OK)}):
            log(f"bench: reference {r} not installed (scripts/install-reference.sh): uexec only"
                + (" for " + ",".join(s for s in only if ref_for(s) == r) if "reference" in servers else ""))

    commit, kernel = cfg.commit or git_commit(), platform.release()
    facts = machine_facts()
    started = time.time()
    b = Bench(cfg)
    raw = {}  # (server, name) -> [values], plus unit/iters
    failures = []
    meta = {}
    for rep in range(repeat):
        for sc in only:
            if sc == "rss" and rep > 0:
                continue  # memory figures do not move with CPU noise: one run
            targets = ["kernel"] if sc == "kernel" else servers
            for kind in targets:
                if rep >= max_runs[kind]:
                    continue
                if kind == "reference" and not os.access(ref_for(sc), os.X_OK):
                    continue
                t0 = time.time()
                try:
                    res = b.sc_kernel() if kind == "kernel" else getattr(b, "sc_" + sc)(kind)
                except Exception as e:  # keep going: one failing scenario must not lose the rest
                    log(f"bench: {sc} on {kind} failed: {e}")
                    failures.append(f"{sc}/{kind}")
                    continue
                log(f"bench: run {rep + 1}/{repeat} {sc:<10} {kind:<9} {time.time() - t0:6.1f}s")
                for m in res:
                    key = (m.get("server", kind), m["name"])
                    raw.setdefault(key, []).append(m["value"])
                    meta[key] = (m["unit"], meta.get(key, (None, 0))[1] + int(m["iters"]))

    lines = []
    for (kind, name), vals in raw.items():
        unit, iters = meta[(kind, name)]
        line = {"name": name, "unit": unit, "value": round(statistics.median(vals), 6), "iters": iters,
                "server": kind, "commit": commit, "kernel": kernel}
        if len(vals) > 1:
            line["runs"] = [round(v, 6) for v in vals]
        lines.append(line)
        print(json.dumps(line), flush=True)
    facts["loadavg_after"] = open("/proc/loadavg").read().split()[:3]
    facts["seconds"] = round(time.time() - started, 1)

    facts.update(commit=commit, argv=sys.argv[1:], repeat=repeat, nice=cfg.nice,
                 runs={k: v for k, v in max_runs.items()})
    if "reference" in servers:
        facts["reference"] = {}
        for sc in only:
            r = ref_for(sc)
            if sc != "kernel" and os.access(r, os.X_OK) and r not in facts["reference"]:
                try:
                    v = subprocess.run([r, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
                except Exception:
                    v = "?"
                facts["reference"][r] = v
    table = make_table(lines, facts)
    print(table)

    if not cfg.no_save:
        os.makedirs(cfg.results, exist_ok=True)
        stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H%M%S")
        path = os.path.join(cfg.results, f"{stamp}.jsonl")
        with open(path, "w") as f:
            f.write(json.dumps({"meta": facts}) + "\n")
            for l in lines:
                f.write(json.dumps(l) + "\n")
        with open(os.path.join(cfg.results, f"{stamp}.txt"), "w") as f:
            f.write(table + "\n")
        log(f"bench: wrote {path}")
    if failures:
        log("bench: FAILED: " + ", ".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
