/* SPDX-License-Identifier: MIT */
/*
 * GET /metrics: the server's counters (metrics.h), gauges counted at scrape
 * time, the per-method JSON-RPC counters (rpc_stats()) and the standard
 * process_* metrics, in the Prometheus text exposition format 0.0.4. Scrapes
 * are rare: the walks over connections, sessions and processes, and the
 * small procfs reads, happen here instead of on the hot path.
 */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "conn.h"
#include "proc.h"
#include "rpc.h"
#include "server.h"
#include "session.h"
#include "uexec.h"

struct out {
	struct buf *b;
	int err;
};

__attribute__((format(printf, 2, 3))) static void emit(struct out *o, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line)) {
		o->err = -EINVAL;
		return;
	}
	if (!o->err && buf_append(o->b, line, (size_t)n) < 0)
		o->err = -ENOMEM;
}

static void family(struct out *o, const char *name, const char *type, const char *help)
{
	emit(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void counter(struct out *o, const char *name, const char *help, uint64_t v)
{
	family(o, name, "counter", help);
	emit(o, "%s %" PRIu64 "\n", name, v);
}

static void gauge(struct out *o, const char *name, const char *help, uint64_t v)
{
	family(o, name, "gauge", help);
	emit(o, "%s %" PRIu64 "\n", name, v);
}

/* A label value: backslash, quote and newline escaped (exposition format). */
static void label_escape(const char *s, char *dst, size_t cap)
{
	size_t k = 0;

	for (; *s && k + 3 < cap; s++) {
		if (*s == '\\' || *s == '"' || *s == '\n') {
			dst[k++] = '\\';
			dst[k++] = *s == '\n' ? 'n' : *s;
		} else {
			dst[k++] = *s;
		}
	}
	dst[k] = '\0';
}

/* procfs statm: pages of virtual and resident memory. */
static int read_statm(uint64_t *ret_vm, uint64_t *ret_rss)
{
	char text[128];
	unsigned long long vm, rss;
	ssize_t n;
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	text[n] = '\0';
	if (sscanf(text, "%llu %llu", &vm, &rss) != 2)
		return -EIO;
	*ret_vm = vm * (uint64_t)sysconf(_SC_PAGESIZE);
	*ret_rss = rss * (uint64_t)sysconf(_SC_PAGESIZE);
	return 0;
}

static long count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own fd */
}

static void process_metrics(struct out *o, const struct server *s)
{
	struct rusage ru;
	struct rlimit rl;
	uint64_t vm = 0, rss = 0;
	long fds;

	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		family(o, "process_cpu_seconds_total", "counter",
		       "Total user and system CPU time spent in seconds.");
		emit(o, "process_cpu_seconds_total %.6f\n",
		     (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
			     (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	}
	if (read_statm(&vm, &rss) == 0) {
		gauge(o, "process_virtual_memory_bytes", "Virtual memory size in bytes.", vm);
		gauge(o, "process_resident_memory_bytes", "Resident memory size in bytes.", rss);
	}
	fds = count_fds();
	if (fds >= 0)
		gauge(o, "process_open_fds", "Number of open file descriptors.", (uint64_t)fds);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		gauge(o, "process_max_fds", "Maximum number of open file descriptors.",
		      (uint64_t)rl.rlim_cur);
	family(o, "process_start_time_seconds", "gauge",
	       "Start time of the process since unix epoch in seconds.");
	emit(o, "process_start_time_seconds %.3f\n", (double)s->metrics.start_time_ms / 1000.0);
}

static void rpc_metrics(struct out *o)
{
	size_t n;
	const struct rpc_method_stats *st = rpc_stats(&n);
	char name[128];

	family(o, "uexec_jsonrpc_requests_total", "counter",
	       "JSON-RPC requests received, by method ((unknown): a name no table has).");
	for (size_t i = 0; i < n; i++)
		if (st[i].name && st[i].requests) {
			label_escape(st[i].name, name, sizeof(name));
			emit(o, "uexec_jsonrpc_requests_total{method=\"%s\"} %" PRIu64 "\n", name,
			     st[i].requests);
		}
	family(o, "uexec_jsonrpc_errors_total", "counter",
	       "JSON-RPC error replies, by method and error code (code 0: other codes).");
	for (size_t i = 0; i < n; i++) {
		if (!st[i].name)
			continue;
		label_escape(st[i].name, name, sizeof(name));
		for (size_t k = 0; k < RPC_STATS_CODES; k++)
			if (st[i].errors[k].n)
				emit(o, "uexec_jsonrpc_errors_total{method=\"%s\",code=\"%d\"} %" PRIu64
					"\n", name, st[i].errors[k].code, st[i].errors[k].n);
	}
}

static void exit_histogram(struct out *o, const struct server_metrics *m)
{
	static const uint64_t bounds[SERVER_METRICS_N_EXIT_BUCKETS] = SERVER_METRICS_EXIT_BUCKETS_MS;
	uint64_t cum = 0;

	family(o, "uexec_process_exit_latency_seconds", "histogram",
	       "Time from a process's spawn to its exit as the server saw it.");
	for (size_t i = 0; i < SERVER_METRICS_N_EXIT_BUCKETS; i++) {
		cum += m->exit_buckets[i];
		emit(o, "uexec_process_exit_latency_seconds_bucket{le=\"%g\"} %" PRIu64 "\n",
		     (double)bounds[i] / 1000.0, cum);
	}
	emit(o, "uexec_process_exit_latency_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n", m->exits);
	emit(o, "uexec_process_exit_latency_seconds_sum %.3f\n", (double)m->exit_ms_sum / 1000.0);
	emit(o, "uexec_process_exit_latency_seconds_count %" PRIu64 "\n", m->exits);
}

/* A counter of struct server_metrics, in a table: its name, help and field. */
struct counter_def {
	const char *name, *help;
	size_t off;
};
#define COUNTER(name, help, field) { name, help, offsetof(struct server_metrics, field) }

static void counters(struct out *o, const struct server_metrics *m, const struct counter_def *d,
		     size_t n)
{
	for (size_t i = 0; i < n; i++)
		counter(o, d[i].name, d[i].help, *(const uint64_t *)((const char *)m + d[i].off));
}

/* One family whose samples differ by one label: values[i] has the value v[i]. */
static void labelled(struct out *o, const char *name, const char *type, const char *help,
		     const char *label, const char *const *values, const uint64_t *v, size_t n)
{
	family(o, name, type, help);
	for (size_t i = 0; i < n; i++)
		emit(o, "%s{%s=\"%s\"} %" PRIu64 "\n", name, label, values[i], v[i]);
}

/* The gauges counted at scrape time: walks over connections, sessions and processes. */
struct gauges {
	uint64_t conns[2];    /* websocket, other */
	uint64_t sessions[2]; /* attached, detached */
	uint64_t procs[3];    /* running, exited, closed */
	uint64_t queued, paused;
};

static void count_gauges(struct server *s, struct gauges *g)
{
	struct session *ss;
	struct conn *c;
	struct proc *p;

	list_for_each_entry(c, &s->conns, link) {
		if (c->state == CONN_DEAD)
			continue;
		g->conns[c->transport == CONN_WS ? 0 : 1]++;
		g->queued += c->out_bytes;
	}
	list_for_each_entry(ss, &s->sessions, link) {
		if (ss->expired)
			continue;
		g->sessions[ss->conn ? 0 : 1]++;
		list_for_each_entry(p, &ss->procs_list, link) {
			g->procs[p->closed ? 2 : p->exited ? 1 : 0]++;
			for (unsigned i = 0; i < p->n_streams; i++)
				if (p->streams[i].paused)
					g->paused++;
		}
	}
}

static void client_metrics(struct out *o, const struct server_metrics *m, const struct gauges *g)
{
	static const char *const transports[] = { "websocket", "other" };
	static const char *const session_states[] = { "attached", "detached" };
	static const struct counter_def conn_counters[] = {
		COUNTER("uexec_connections_accepted_total", "TCP connections accepted.",
			connections_accepted),
		COUNTER("uexec_websocket_upgrades_total", "WebSocket upgrades accepted (101).",
			ws_upgrades),
		COUNTER("uexec_http_responses_total",
			"HTTP requests answered without an upgrade (readyz, metrics, errors).",
			http_responses),
		COUNTER("uexec_auth_failures_total", "Requests refused with 401 by --ws-auth.",
			auth_failures),
	};
	static const struct counter_def session_counters[] = {
		COUNTER("uexec_sessions_created_total", "Sessions created by initialize.",
			sessions_created),
		COUNTER("uexec_sessions_resumed_total", "Sessions resumed by initialize.",
			sessions_resumed),
	};

	labelled(o, "uexec_connections", "gauge", "Client connections open, by transport.",
		 "transport", transports, g->conns, ELEMENTSOF(transports));
	counters(o, m, conn_counters, ELEMENTSOF(conn_counters));
	labelled(o, "uexec_sessions", "gauge", "Live sessions, by state.", "state", session_states,
		 g->sessions, ELEMENTSOF(session_states));
	counters(o, m, session_counters, ELEMENTSOF(session_counters));
}

static void process_counters(struct out *o, const struct server_metrics *m, const struct gauges *g)
{
	static const char *const states[] = { "running", "exited", "closed" };
	static const struct counter_def defs[] = {
		COUNTER("uexec_spawns_total", "Processes started.", spawns),
		COUNTER("uexec_spawn_failures_total",
			"process/start requests that failed to start one.", spawn_failures),
		COUNTER("uexec_sandboxed_spawns_total", "Processes started with a sandbox.",
			sandboxed_spawns),
		COUNTER("uexec_sandbox_denied_total", "Exits reported with sandboxDenied true.",
			sandbox_denied),
		COUNTER("uexec_process_oom_kills_total",
			"Processes whose exit reported oomKilled (their cgroup's memory limit was "
			"reached).",
			oom_kills),
		COUNTER("uexec_process_timeouts_total", "Processes killed by their timeoutMs.",
			timeouts),
	};

	labelled(o, "uexec_processes", "gauge",
		 "Processes held by live sessions, by state (running, exited, closed).", "state",
		 states, g->procs, ELEMENTSOF(states));
	counters(o, m, defs, ELEMENTSOF(defs));
	exit_histogram(o, m);
}

static void proxy_and_output_metrics(struct out *o, const struct server_metrics *m)
{
	static const char *const reasons[] = SERVER_METRICS_PROXY_REASONS;
	static const char *const directions[] = { "up", "down" };
	static const char *const streams[SERVER_METRICS_N_STREAMS] = { "stdout", "stderr", "pty" };
	static const struct counter_def defs[] = {
		COUNTER("uexec_network_proxy_connections_total",
			"Connections the managed network's proxies accepted from commands.",
			proxy_connections),
		COUNTER("uexec_network_proxy_allowed_total", "Destinations the proxies allowed.",
			proxy_allowed),
	};
	const uint64_t bytes[] = { m->proxy_bytes_up, m->proxy_bytes_down };

	counters(o, m, defs, ELEMENTSOF(defs));
	labelled(o, "uexec_network_proxy_refusals_total", "counter",
		 "Destinations or requests the proxies refused, by reason.", "reason", reasons,
		 m->proxy_refused, SERVER_METRICS_N_PROXY_REASONS);
	labelled(o, "uexec_network_proxy_bytes_total", "counter",
		 "Bytes the proxies relayed, by direction (up: to destinations).", "direction",
		 directions, bytes, ELEMENTSOF(directions));
	labelled(o, "uexec_output_bytes_total", "counter", "Process output read, by stream.",
		 "stream", streams, m->output_bytes, SERVER_METRICS_N_STREAMS);
}

/* The server's own memory and queues: output, in-flight charges, the audit log, the ring. */
static void loop_metrics(struct out *o, const struct server *s, const struct gauges *g)
{
	gauge(o, "uexec_queued_output_bytes", "Bytes queued for clients and not yet written.",
	      g->queued);
	gauge(o, "uexec_paused_output_streams",
	      "Process output streams not read because their client's queue passed "
	      "--max-queued-bytes (read again below half of it).",
	      g->paused);
	gauge(o, "uexec_inflight_bytes", "In-flight reply memory charged to connections.",
	      s->mem_total);
	counter(o, "uexec_audit_log_dropped_lines_total",
		"Audit log lines dropped: the queue was full (--audit-log-max-queued-bytes), a "
		"write failed (a full disk, a closed pipe) or the exit came first.",
		s->audit.dropped_lines);
	gauge(o, "uexec_audit_log_queued_bytes", "Audit log bytes queued and not yet written.",
	      s->audit.queued);
	counter(o, "uexec_provided_buffer_exhausted_total",
		"Reads that found no provided buffer free (ENOBUFS) and waited.",
		s->metrics.buf_exhausted);
	counter(o, "uexec_ring_submit_calls_total", "io_uring submissions (io_uring_enter).",
		s->ring.n_submit_calls);
	counter(o, "uexec_ring_sqes_submitted_total", "SQEs the kernel accepted.",
		s->ring.n_sqes_submitted);
}

int server_metrics_render(struct server *s, struct buf *b)
{
	struct out o = { b, 0 };
	struct gauges g = { 0 };

	count_gauges(s, &g);
	client_metrics(&o, &s->metrics, &g);
	process_counters(&o, &s->metrics, &g);
	proxy_and_output_metrics(&o, &s->metrics);
	rpc_metrics(&o);
	loop_metrics(&o, s, &g);
	process_metrics(&o, s);
	return o.err;
}
