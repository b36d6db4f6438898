#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Issue 16's benchmark: the cost of --ws-auth on connection setup and of the
metrics counters on the spawn path.

    /usr/bin/python3 bench/auth.py [--bindir build-release/bench] [--uexec build-release/src/uexec]
                                   [--baseline OTHER/uexec] [--rounds 5] [--iters 2000]

* auth_check_*: bench/auth-bench.c `check`, ws_auth_check() in process (ns/op).
* auth_connect_upgrade_p50/p99 per mode (none, capability-token, signed-bearer-token, and
  tls: --listen wss:// without auth, a full TLS handshake per connection, P-256 certificate):
  TCP connect + upgrade -> 101, against a fresh uexec per mode, rounds interleaved so
  that machine noise hits every mode alike; the median of the rounds' p50s is reported.
* spawn_exited_1c_p50 and cpu_per_spawn of --uexec against --baseline (a build without
  the counters, e.g. the commit before them), same interleaving: the counters' cost.

Prints one JSON line per metric and a short table; nothing is asserted.
"""

import argparse
import base64
import hashlib
import hmac
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TOKEN = "cap-token-6f1d2a9c7e"
SECRET = b"0123456789abcdef0123456789abcdef-bench"


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def make_jwt():
    h = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    p = b64url(json.dumps({"iss": "bench", "aud": ["x", "devbox"],
                           "exp": int(time.time()) + 3600}).encode())
    return h + "." + p + "." + b64url(hmac.new(SECRET, (h + "." + p).encode(),
                                               hashlib.sha256).digest())


class Uexec:
    def __init__(self, binary, *args, listen="ws://127.0.0.1:0"):
        self.p = subprocess.Popen([binary, "--listen", listen, "--log-level",
                                   "warning", *args], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                                  cwd="/var/tmp")
        self.url = self.p.stdout.readline().decode().strip()
        if not self.url.startswith(("ws://", "wss://")):
            raise RuntimeError("uexec did not start: %r" % self.url)
        self.url = self.url.replace("wss://", "ws://")  # auth-bench takes TLS from --tls

    def cpu_ms(self):
        with open("/proc/%d/stat" % self.p.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")

    def stop(self):
        self.p.terminate()
        self.p.wait(30)
        self.p.stdout.close()


def run_json(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError("%s failed: %s" % (cmd[0], out.stderr[-600:]))
    metrics = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    return {m["name"]: m for m in metrics}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bindir", default=os.path.join(ROOT, "build-release", "bench"))
    ap.add_argument("--uexec", default=os.path.join(ROOT, "build-release", "src", "uexec"))
    ap.add_argument("--baseline", help="a uexec without the metrics counters (spawn comparison)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--spawn-iters", type=int, default=400)
    a = ap.parse_args()
    a.uexec = os.path.abspath(a.uexec)     # the servers run in /var/tmp
    a.baseline = a.baseline and os.path.abspath(a.baseline)
    bench = os.path.join(a.bindir, "auth-bench")
    lines = []

    res = run_json([bench, "check"])
    lines += res.values()

    d = tempfile.mkdtemp(prefix="uexec-auth-bench-", dir="/var/tmp")
    tok, key = os.path.join(d, "token"), os.path.join(d, "key")
    with open(tok, "w") as f:
        f.write(TOKEN)
    with open(key, "wb") as f:
        f.write(SECRET)
    cert, key_pem = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", "/CN=bench",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key_pem, "-out", cert],
                   check=True, capture_output=True)
    modes = {
        "none": ([], "Authorization: Bearer " + TOKEN),  # the header is sent, and ignored
        "capability": (["--ws-auth", "capability-token", "--ws-token-file", tok],
                       "Authorization: Bearer " + TOKEN),
        "jwt": (["--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", key,
                 "--ws-issuer", "bench", "--ws-audience", "devbox"],
                "Authorization: Bearer " + make_jwt()),
        "tls": (["--tls-cert", cert, "--tls-key", key_pem], "Authorization: Bearer " + TOKEN),
    }
    p50 = {m: [] for m in modes}
    p99 = {m: [] for m in modes}
    for _ in range(a.rounds):
        for mode, (args, header) in modes.items():
            tls = mode == "tls"
            srv = Uexec(a.uexec, *args, listen="wss://127.0.0.1:0" if tls else "ws://127.0.0.1:0")
            try:
                r = run_json([bench, "connect", "--url", srv.url, "--header", header,
                              "--iters", str(a.iters)] + (["--tls", cert] if tls else []))
            finally:
                srv.stop()
            p50[mode].append(r["auth_connect_upgrade_p50"]["value"])
            p99[mode].append(r["auth_connect_upgrade_p99"]["value"])
    for mode in modes:
        lines.append({"name": "auth_connect_upgrade_%s_p50" % mode, "unit": "ms",
                      "value": statistics.median(p50[mode]), "runs": p50[mode]})
        lines.append({"name": "auth_connect_upgrade_%s_p99" % mode, "unit": "ms",
                      "value": statistics.median(p99[mode]), "runs": p99[mode]})

    if a.baseline:
        loadgen = os.path.join(a.bindir, "uexec-loadgen")
        spawn = {"branch": ([], []), "baseline": ([], [])}
        for _ in range(a.rounds):
            for name, binary in (("branch", a.uexec), ("baseline", a.baseline)):
                srv = Uexec(binary)
                try:
                    c0 = srv.cpu_ms()
                    r = run_json([loadgen, "spawn", "--url", srv.url, "--conns", "1", "--iters",
                                  str(a.spawn_iters), "--seconds", "20", "--warmup", "20"])
                    c1 = srv.cpu_ms()
                finally:
                    srv.stop()
                n = r["spawn_per_sec_1c"]["iters"] + 20
                spawn[name][0].append(r["spawn_exited_1c_p50"]["value"])
                spawn[name][1].append((c1 - c0) / n)
        for name, (lat, cpu) in spawn.items():
            lines.append({"name": "spawn_exited_1c_p50_%s" % name, "unit": "ms",
                          "value": statistics.median(lat), "runs": lat})
            lines.append({"name": "cpu_per_spawn_%s" % name, "unit": "ms",
                          "value": statistics.median(cpu), "runs": cpu})

    for m in lines:
        print(json.dumps(m))
    print("", file=sys.stderr)
    for m in lines:
        runs = m.get("runs")
        spread = " (runs %s)" % ", ".join("%.4g" % x for x in runs) if runs else ""
        print("%-40s %10.4g %s%s" % (m["name"], m["value"], m["unit"], spread), file=sys.stderr)


if __name__ == "__main__":
    main()
