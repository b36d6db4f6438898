/* SPDX-License-Identifier: MIT */
/*
 * Counters for GET /metrics (src/main/metrics.c renders them). Plain
 * integers bumped by the single-threaded loop where the event happens: no
 * atomics, no lookups. Gauges (connections, sessions, processes by state,
 * queued bytes) are not kept here: the renderer counts them when scraped.
 */
#pragma once

#include <stdint.h>

/* Upper bounds (ms) of the spawn -> exit latency histogram's buckets (+Inf is implied). */
#define SERVER_METRICS_EXIT_BUCKETS_MS                                                         \
	{ 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000, 3600000 }
#define SERVER_METRICS_N_EXIT_BUCKETS 15

enum {
	SERVER_METRICS_STDOUT,
	SERVER_METRICS_STDERR,
	SERVER_METRICS_PTY,
	SERVER_METRICS_N_STREAMS,
};

/* Reasons a proxy refuses (uexec_network_proxy_refusals_total{reason}), the reference's names. */
#define SERVER_METRICS_PROXY_REASONS                                                        \
	{ "not_allowed", "not_allowed_local", "denied", "method_not_allowed", "mitm_required", \
	  "unix_socket_unsupported" }
#define SERVER_METRICS_N_PROXY_REASONS 6

struct server_metrics {
	uint64_t start_time_ms;         /* CLOCK_REALTIME at start */
	uint64_t connections_accepted;  /* TCP connections accepted */
	uint64_t ws_upgrades;           /* WebSocket upgrades answered 101 */
	uint64_t http_responses;        /* other HTTP requests answered (and closed) */
	uint64_t auth_failures;         /* 401s */
	uint64_t sessions_created;
	uint64_t sessions_resumed;
	uint64_t spawns;                /* processes started */
	uint64_t spawn_failures;        /* process/start that failed to start a process */
	uint64_t sandboxed_spawns;      /* of spawns, with a restricting sandbox */
	uint64_t sandbox_denied;        /* exits judged sandboxDenied */
	uint64_t oom_kills;             /* exits reported oomKilled (memory limit reached) */
	uint64_t timeouts;              /* processes killed by their timeoutMs */
	uint64_t exits;                 /* observed in the histogram below */
	uint64_t exit_buckets[SERVER_METRICS_N_EXIT_BUCKETS]; /* not cumulative */
	uint64_t exit_ms_sum;
	uint64_t output_bytes[SERVER_METRICS_N_STREAMS];
	uint64_t buf_exhausted;         /* reads that found no provided buffer (-ENOBUFS) */
	/* The managed network's proxies (src/netproxy) */
	uint64_t proxy_connections;     /* client connections accepted */
	uint64_t proxy_allowed;         /* destinations allowed */
	uint64_t proxy_refused[SERVER_METRICS_N_PROXY_REASONS]; /* by reason */
	uint64_t proxy_bytes_up, proxy_bytes_down; /* to destinations, back to commands */
};

/* A process exited ms after its spawn. */
static inline void server_metrics_exit(struct server_metrics *m, uint64_t ms)
{
	static const uint64_t bounds[SERVER_METRICS_N_EXIT_BUCKETS] = SERVER_METRICS_EXIT_BUCKETS_MS;
	unsigned i = 0;

	while (i < SERVER_METRICS_N_EXIT_BUCKETS && ms > bounds[i])
		i++;
	if (i < SERVER_METRICS_N_EXIT_BUCKETS)
		m->exit_buckets[i]++;
	m->exits++;
	m->exit_ms_sum += ms;
}
