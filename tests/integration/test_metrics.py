# SPDX-License-Identifier: MIT
"""GET /metrics (issue 16 item 3): Prometheus text format 0.0.4, checked with a real
parser (Debian's python3-prometheus-client), and values that move when processes run."""

import os
import time

import pytest

from conftest import wait_until
from wsclient import headers_dict, http_exchange

prometheus_parser = pytest.importorskip(
    "prometheus_client.parser", reason="needs python3-prometheus-client (scripts/deps.sh)")


def scrape(server, auth=None):
    req = "GET /metrics HTTP/1.1\r\nHost: x\r\n"
    if auth:
        req += "Authorization: %s\r\n" % auth
    status, headers, body = http_exchange(server.host, server.port, (req + "\r\n").encode())
    assert status == "HTTP/1.1 200 OK", (status, body)
    assert headers_dict(headers)["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert int(headers_dict(headers)["content-length"]) == len(body)
    families = list(prometheus_parser.text_string_to_metric_families(body.decode()))
    samples = {}
    types = {}
    for fam in families:
        types[fam.name] = fam.type
        for s in fam.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            assert key not in samples, "duplicate sample %r" % (key,)
            samples[key] = s.value
    return types, samples


def v(samples, name, **labels):
    return samples[(name, tuple(sorted(labels.items())))]


def test_format_and_families(server):
    types, s = scrape(server)
    expected = {
        "uexec_connections": "gauge", "uexec_connections_accepted": "counter",
        "uexec_websocket_upgrades": "counter", "uexec_auth_failures": "counter",
        "uexec_sessions": "gauge", "uexec_sessions_created": "counter",
        "uexec_processes": "gauge", "uexec_spawns": "counter", "uexec_spawn_failures": "counter",
        "uexec_sandboxed_spawns": "counter", "uexec_sandbox_denied": "counter",
        "uexec_process_oom_kills": "counter", "uexec_process_timeouts": "counter",
        "uexec_process_exit_latency_seconds": "histogram", "uexec_output_bytes": "counter",
        "uexec_jsonrpc_requests": "counter", "uexec_jsonrpc_errors": "counter",
        "uexec_queued_output_bytes": "gauge", "uexec_paused_output_streams": "gauge",
        "uexec_audit_log_dropped_lines": "counter", "uexec_audit_log_queued_bytes": "gauge",
        "uexec_provided_buffer_exhausted": "counter",
        "uexec_ring_submit_calls": "counter", "uexec_ring_sqes_submitted": "counter",
        "process_cpu_seconds": "counter", "process_resident_memory_bytes": "gauge",
        "process_open_fds": "gauge", "process_start_time_seconds": "gauge",
    }
    for name, t in expected.items():
        assert types.get(name) == t, (name, types.get(name))
    # the standard process metrics describe this very process
    assert 0 < v(s, "process_resident_memory_bytes") < 4 << 30
    # (the scrape's own socket was open then, and is closed or closing now)
    assert abs(v(s, "process_open_fds") - len(os.listdir("/proc/%d/fd" % server.pid))) <= 1
    assert abs(v(s, "process_start_time_seconds") - time.time()) < 120
    assert v(s, "uexec_ring_sqes_submitted_total") > 0
    # this scrape's own connection is open while the page is built
    assert v(s, "uexec_connections", transport="websocket") >= 1
    # histogram buckets are cumulative and end with +Inf == count
    buckets = sorted((float(dict(k[1])["le"]), val) for k, val in s.items()
                     if k[0] == "uexec_process_exit_latency_seconds_bucket")
    assert buckets[-1][0] == float("inf")
    assert [b[1] for b in buckets] == sorted(b[1] for b in buckets)
    assert buckets[-1][1] == v(s, "uexec_process_exit_latency_seconds_count")


def test_values_move_when_a_process_runs(server):
    _, before = scrape(server)
    c = server.connect()
    run = c.run("m1", ["/bin/sh", "-c", "printf hello-metrics; printf err >&2; sleep 0.05"])
    assert run.stdout == b"hello-metrics" and run.exit_code == 0
    c.error("no/suchMethod", {})
    err = c.error("process/start", c.start_params("m2", ["/nonexistent/prog"]))
    _, s = scrape(server)

    def delta(name, **labels):
        return v(s, name, **labels) - before.get((name, tuple(sorted(labels.items()))), 0)

    assert delta("uexec_spawns_total") == 1
    assert delta("uexec_spawn_failures_total") == 1
    assert delta("uexec_sandboxed_spawns_total") == 0
    assert delta("uexec_sessions_created_total") == 1
    assert v(s, "uexec_sessions", state="attached") == 1
    assert v(s, "uexec_processes", state="closed") == 1   # m1, kept by its session
    assert v(s, "uexec_processes", state="running") == 0
    assert delta("uexec_output_bytes_total", stream="stdout") == len(b"hello-metrics")
    assert delta("uexec_output_bytes_total", stream="stderr") == len(b"err")
    assert delta("uexec_process_exit_latency_seconds_count") == 1
    assert delta("uexec_process_exit_latency_seconds_sum") >= 0.05
    assert v(s, "uexec_process_exit_latency_seconds_bucket", le="0.025") == 0  # slept 50 ms
    assert delta("uexec_process_exit_latency_seconds_bucket", le="+Inf") == 1
    assert delta("uexec_websocket_upgrades_total") == 1
    assert delta("uexec_jsonrpc_requests_total", method="initialize") == 1
    assert delta("uexec_jsonrpc_requests_total", method="process/start") == 2
    assert delta("uexec_jsonrpc_requests_total", method="(unknown)") == 1
    assert delta("uexec_jsonrpc_errors_total", method="(unknown)", code="-32601") == 1
    assert delta("uexec_jsonrpc_errors_total", method="process/start",
                 code=str(err["code"])) == 1
    assert delta("uexec_ring_submit_calls_total") > 0

    # the connection goes: its session is detached (kept for the resume window)
    c.close()
    s = wait_until(lambda: [s for _, s in [scrape(server)]
                            if v(s, "uexec_sessions", state="detached") == 1],
                   what="the session to show as detached")[0]
    assert v(s, "uexec_sessions", state="attached") == 0


def test_running_process_and_queued_bytes(server):
    c = server.connect()
    c.start("r1", ["/bin/sleep", "30"])
    _, s = scrape(server)
    assert v(s, "uexec_processes", state="running") == 1
    assert v(s, "uexec_queued_output_bytes") >= 0
    assert v(s, "uexec_paused_output_streams") == 0
    c.terminate("r1")
    c.collect("r1")
    _, s = scrape(server)
    assert v(s, "uexec_processes", state="running") == 0
    assert v(s, "uexec_processes", state="closed") == 1


@pytest.mark.needs("sandbox")
def test_sandboxed_spawn_and_denial_counted(server, tmp_path):
    c = server.connect()
    sb = {"permissions": {"type": "managed",
                          "file_system": {"type": "restricted", "entries": [
                              {"path": {"type": "special", "value": {"kind": "root"}},
                               "access": "read"}]},
                          "network": "restricted"},
          "windowsSandboxLevel": "disabled"}
    target = tmp_path / "denied.txt"
    c.start("s1", ["/bin/sh", "-c", "echo x > %s" % target], cwd=str(tmp_path), sandbox=sb)
    run = c.collect("s1")
    assert run.exited["sandboxDenied"] is True and not target.exists()
    _, s = scrape(server)
    assert v(s, "uexec_sandboxed_spawns_total") == 1
    assert v(s, "uexec_sandbox_denied_total") == 1


def test_timeouts_and_oom_kills_counted(server):
    """uexec_process_timeouts_total moves when timeoutMs kills a process, and
    uexec_process_oom_kills_total when a memory limit does (where the host has one)."""
    from test_process_cgroup import limit_where, needs_cgroups
    _, before = scrape(server)
    c = server.connect()
    run = c.run("t1", ["/bin/sleep", "30"], timeoutMs=200)
    assert run.exited["timedOut"] is True
    run = c.run("t2", ["/bin/true"], timeoutMs=30000)   # in time: not counted
    assert run.exited["timedOut"] is False
    _, s = scrape(server)
    assert v(s, "uexec_process_timeouts_total") - \
        before[("uexec_process_timeouts_total", ())] == 1
    assert v(s, "uexec_process_oom_kills_total") == before[("uexec_process_oom_kills_total", ())]
    needs_cgroups()
    if not limit_where("memory"):
        pytest.skip("no memory controller available (cgroup v2 or v1)")
    run = c.run("o1", ["/usr/bin/python3", "-c", "b = bytearray(4 << 30)"],
                env={"PATH": "/usr/bin:/bin"}, limits={"memoryMaxBytes": 64 << 20})
    assert run.exited["oomKilled"] is True, run.exited
    run = c.run("o2", ["/bin/true"], limits={"memoryMaxBytes": 64 << 20})
    assert run.exited["oomKilled"] is False
    _, s2 = scrape(server)
    assert v(s2, "uexec_process_oom_kills_total") - v(s, "uexec_process_oom_kills_total") == 1
    assert v(s2, "uexec_process_timeouts_total") == v(s, "uexec_process_timeouts_total")


def test_metrics_route_methods(server):
    status = http_exchange(server.host, server.port,
                           b"POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n")[0]
    assert status == "HTTP/1.1 405 Method Not Allowed"
    status = http_exchange(server.host, server.port,
                           b"GET /metrics HTTP/1.1\r\nHost: x\r\nOrigin: http://x\r\n\r\n")[0]
    assert status == "HTTP/1.1 403 Forbidden"
