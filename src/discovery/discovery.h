/* SPDX-License-Identifier: MIT */
/*
 * Capability discovery (PROTOCOL.md §6.24): capabilityRoots/discoverV1 lists
 * and reads the capability files below client-chosen roots (SKILL.md, plugin
 * manifests, MCP and Apps configs, agents/openai.yaml); capabilities/discoverV2
 * does the same for the executor's own skill and plugin locations and parses
 * the skills' front matter.
 *
 * The scans are blocking directory walks and reads: they run as worker-pool
 * jobs (worker.h), never on the loop. Everything here that runs in a worker
 * touches only its own data; warnings are formatted there too (strerror_r
 * through rpc_os_error is thread-safe).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "secrets.h"

/* The reference's bounds (capability_discovery.rs). */
#define DISC_MAX_ROOTS 128
#define DISC_MAX_DEPTH 6
#define DISC_MAX_DIRECTORIES 2000
#define DISC_MAX_ENTRIES 20000
#define DISC_MAX_FILE_BYTES (1024u * 1024u)
#define DISC_MAX_BUNDLE_BYTES (16u * 1024u * 1024u)

/* What a scan carries besides its paths (the worker's own copy). */
struct disc_ctx {
	/*
	 * The server's secret files (secrets.h): never read, as fs/readFile never
	 * reads them, whatever link in a scanned tree leads there.
	 */
	struct secret_ids secrets;
	bool secret_refused; /* one was met: logged on the loop thread */
	/*
	 * File contents one request may hold, all roots together (V1's bounds
	 * alone allow 128 x 16 MiB): the connection's in-flight budget.
	 */
	size_t total_limit, total;
};

/*
 * One root's V1 discovery, in a worker thread: the CapabilityRootDiscovery
 * object {"id","path","plugin","skills","namespaceManifests","warnings","error"}
 * for the native directory path (uri: its URI as echoed; id: the client's
 * string, NULs and all, borrowed). NULL on OOM.
 */
json_t *disc_root_discover(struct disc_ctx *ctx, json_t *id, const char *path, const char *uri);

/*
 * capabilities/discoverV2's result for the executor's locations, in a worker
 * thread: codex_home (canonical, may be NULL when it could not be found) and
 * user_home (may be NULL). NULL on OOM.
 */
json_t *disc_v2_discover(struct disc_ctx *ctx, const char *codex_home, const char *user_home);

/* Module registration (server start). Returns 0 or -errno. */
int discovery_methods_register(void);
