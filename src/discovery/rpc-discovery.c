/* SPDX-License-Identifier: MIT */
/*
 * capabilityRoots/discoverV1 and capabilities/discoverV2 (PROTOCOL.md §6.24):
 * parameter decoding with the reference's texts, then the scan as one
 * worker-pool job (roots.c, skills.c).
 *
 * `sandbox`: a root (V1) or request (V2) whose sandbox restricts anything is
 * scanned by the sandboxed fs helper (fs-sandbox.h) running this very code
 * under that sandbox, so that what the sandbox cannot read becomes a warning
 * or a root error exactly as an unreadable path does. V1 roots sharing one
 * sandbox share a helper; unsandboxed roots are scanned by the worker; the
 * reply keeps the request's root order.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "discovery.h"
#include "env.h"
#include "file-uri.h"
#include "fs-sandbox.h"
#include "fs.h"
#include "log.h"
#include "macro.h"
#include "params.h"
#include "rpc.h"
#include "server.h"
#include "worker.h"

#define MAX_PENDING_JOBS 256     /* as the fs tree jobs: bound the worker queue */
#define DISC_ESTIMATE (1u << 20) /* charged until the reply is serialised */

struct disc_root {
	json_t *id;   /* the client's string */
	char *path; /* native */
	char *uri;
	json_t *sandbox; /* restricting sandbox (its helper group), or NULL */
	json_t *result;  /* CapabilityRootDiscovery */
};

struct disc_group {
	struct disc_req *req;
	json_t *sandbox;
	size_t *idx; /* the roots it scans */
	size_t n;
};

struct disc_req {
	struct work work;
	struct rpc_pending pend;
	struct conn_mem mem;
	bool orphaned, v2;
	unsigned parts; /* the worker job and helpers still out */
	/* V1 */
	struct disc_root *roots;
	size_t n_roots;
	struct disc_group *groups;
	size_t n_groups;
	/* V2 */
	char *codex_home, *user_home;
	char *env[3];
	struct disc_ctx ctx;
	/* outcome */
	json_t *result;    /* V2, or a relayed helper result */
	json_t *error;     /* a helper's error reply, relayed */
	bool helper_failed;
	char *text;        /* the serialised result (worker) */
};

static void req_free(struct disc_req *r)
{
	conn_mem_done(&r->mem);
	for (size_t i = 0; i < r->n_roots; i++) {
		json_decref(r->roots[i].id);
		free(r->roots[i].path);
		free(r->roots[i].uri);
		json_decref(r->roots[i].sandbox);
		json_decref(r->roots[i].result);
	}
	free(r->roots);
	for (size_t i = 0; i < r->n_groups; i++)
		free(r->groups[i].idx);
	free(r->groups);
	free(r->codex_home);
	free(r->user_home);
	for (size_t i = 0; i < ELEMENTSOF(r->env); i++)
		free(r->env[i]);
	json_decref(r->result);
	json_decref(r->error);
	free(r->text);
	free(r);
}

/* The V1 result in request order (loop thread or worker). */
static json_t *v1_result(struct disc_req *r)
{
	json_t *roots = json_array(), *res = json_object();

	for (size_t i = 0; i < r->n_roots; i++)
		json_array_append(roots, r->roots[i].result ? r->roots[i].result : json_null());
	json_object_set_new(res, "roots", roots);
	return res;
}

/* Every part is back: reply (loop thread). */
static void req_finish(struct disc_req *r)
{
	struct conn *c = r->pend.conn;
	json_t *id = r->pend.id;

	if (r->orphaned) {
		req_free(r);
		return;
	}
	if (r->error) {
		json_t *e = json_object_get(r->error, "error");

		rpc_reply_error(c, id, (int)json_integer_value(json_object_get(e, "code")), "%s",
				json_string_value(json_object_get(e, "message")) ?: "");
	} else if (r->helper_failed) {
		rpc_reply_error(c, id, RPC_INTERNAL_ERROR, "sandboxed filesystem helper failed");
	} else if (r->text) {
		rpc_reply_serialized(c, id, r->text, strlen(r->text));
	} else if (r->v2 && r->result) {
		rpc_reply(c, id, json_incref(r->result));
	} else if (!r->v2) {
		for (size_t i = 0; i < r->n_roots; i++)
			if (!r->roots[i].result) {
				rpc_reply_errno_internal(c, id, ENOMEM);
				goto out;
			}
		rpc_reply(c, id, v1_result(r));
	} else {
		rpc_reply_errno_internal(c, id, ENOMEM);
	}
out:
	rpc_pending_end(&r->pend);
	req_free(r);
}

static void part_done(struct disc_req *r)
{
	if (--r->parts == 0)
		req_finish(r);
}

static void req_cancel(struct rpc_pending *p)
{
	struct disc_req *r = container_of(p, struct disc_req, pend);

	/* Workers and helpers may still run: the last part frees it. */
	rpc_pending_end(&r->pend);
	r->orphaned = true;
}

/* ---- the worker job ---- */

static void job_run(struct work *w)
{
	struct disc_req *r = container_of(w, struct disc_req, work);

	if (r->v2) {
		r->result = disc_v2_discover(&r->ctx, r->codex_home, r->user_home);
	} else {
		for (size_t i = 0; i < r->n_roots; i++)
			if (!r->roots[i].sandbox && !r->roots[i].result)
				r->roots[i].result = disc_root_discover(&r->ctx, r->roots[i].id,
									r->roots[i].path, r->roots[i].uri);
	}
	/* Serialised off the loop when nothing else will add to it (megabytes of contents). */
	if (r->v2 && r->result) {
		r->text = json_dumps(r->result, JSON_COMPACT);
	} else if (!r->v2 && r->n_groups == 0) {
		json_t *res = v1_result(r);

		r->text = json_dumps(res, JSON_COMPACT);
		json_decref(res);
	}
}

static void job_done(struct work *w)
{
	struct disc_req *r = container_of(w, struct disc_req, work);

	if (r->ctx.secret_refused)
		/* Logged here: the worker threads do not log. Never the contents. */
		log_warning("Capability discovery met one of the server's own secret files (token, "
			    "key, audit log or configuration) and did not read it");
	part_done(r);
}

/* ---- helpers (sandboxed roots) ---- */

static void group_done(void *arg, json_t *reply)
{
	struct disc_group *g = arg;
	struct disc_req *r = g->req;
	json_t *res = reply ? json_object_get(reply, "result") : NULL;
	json_t *roots = r->v2 ? NULL : json_object_get(res, "roots");

	if (reply && json_object_get(reply, "error")) {
		if (!r->error)
			r->error = json_incref(reply);
	} else if (r->v2 && json_is_object(res)) {
		r->result = json_incref(res);
	} else if (!r->v2 && json_array_size(roots) == g->n) {
		for (size_t i = 0; i < g->n; i++)
			r->roots[g->idx[i]].result = json_incref(json_array_get(roots, i));
	} else {
		r->helper_failed = true;
	}
	part_done(r);
}

/* Starts one helper per distinct sandbox; returns 0 or -errno (none started then). */
static int start_group(struct conn *c, struct disc_req *r, struct disc_group *g)
{
	json_t *params, *roots;
	int k;

	if (r->v2) {
		params = json_pack("{s:s}", "cwd", "file:///");
	} else {
		roots = json_array();
		for (size_t i = 0; i < g->n; i++)
			json_array_append_new(roots, json_pack("{s:O,s:s}", "id", r->roots[g->idx[i]].id,
							       "path", r->roots[g->idx[i]].uri));
		params = json_pack("{s:o}", "roots", roots);
	}
	if (!params)
		return -ENOMEM;
	r->parts++;
	k = fs_sandbox_call(c, r->v2 ? "capabilities/discoverV2" : "capabilityRoots/discoverV1",
			    params, g->sandbox, r->v2 ? r->env : NULL, group_done, g);
	json_decref(params);
	if (k < 0)
		r->parts--;
	return k;
}

/* Queues the worker part (when it has something to do) and the helpers. */
static void req_start(struct conn *c, json_t *id, struct disc_req *r, bool worker_part)
{
	rpc_pending_start(&r->pend, c, id, req_cancel);
	conn_mem_set(&r->mem, DISC_ESTIMATE);
	r->parts = 1; /* held while starting, so that no early helper finishes the request */
	for (size_t i = 0; i < r->n_groups; i++)
		if (start_group(c, r, &r->groups[i]) < 0)
			r->helper_failed = true;
	if (worker_part) {
		r->parts++;
		r->work.run = job_run;
		r->work.done = job_done;
		worker_submit(c->srv, &r->work);
	}
	part_done(r);
}

static struct disc_req *req_new(struct conn *c, json_t *id)
{
	struct disc_req *r;

	if (worker_pending(c->srv) > MAX_PENDING_JOBS) {
		rpc_reply_error(c, id, RPC_INTERNAL_ERROR,
				"server busy: too many filesystem operations in progress");
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		rpc_reply_errno_internal(c, id, ENOMEM);
		return NULL;
	}
	conn_mem_init(&r->mem, c);
	r->ctx.secrets = *server_secret_ids(c->srv); /* the worker reads its own copy */
	r->ctx.total_limit = (size_t)MAX(c->srv->cfg.max_inflight_bytes_per_conn, DISC_MAX_BUNDLE_BYTES);
	return r;
}

/* ---- capabilityRoots/discoverV1 ---- */

static int add_to_group(struct disc_req *r, size_t i)
{
	struct disc_group *g = NULL;
	size_t *idx;

	for (size_t k = 0; k < r->n_groups; k++)
		if (json_equal(r->groups[k].sandbox, r->roots[i].sandbox))
			g = &r->groups[k];
	if (!g) {
		g = &r->groups[r->n_groups++];
		g->req = r;
		g->sandbox = r->roots[i].sandbox;
	}
	idx = realloc(g->idx, (g->n + 1) * sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	g->idx = idx;
	g->idx[g->n++] = i;
	return 0;
}

/* A root that fails before any scan: {"id","path",...,"error":text}. */
static json_t *root_error(json_t *id, const char *uri, const char *text)
{
	return json_pack("{s:O,s:s,s:n,s:[],s:[],s:[],s:s}", "id", id, "path", uri, "plugin",
			 "skills", "namespaceManifests", "warnings", "error", text);
}

/* Decodes roots[i] into r->roots[i]; replies and returns false on error. */
static bool decode_root(struct conn *c, json_t *id, json_t *v, struct disc_root *dr)
{
	static const struct pfield fields[] = {
		{ "id", P_STRING, true, NULL },
		{ "path", P_STRING, true, NULL },
		{ "sandbox", P_STRUCT, false, "struct WireFileSystemSandboxContext" },
	};
	json_t *f[ELEMENTSOF(fields)];
	char err[512], *msg = NULL, *text = NULL;
	int k;

	if (!json_is_object(v) && !json_is_array(v)) {
		params_struct_error(v, "struct WireCapabilityRootDiscoverRequest", err, sizeof(err));
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", err);
		return false;
	}
	if (params_decode_nested(v, "WireCapabilityRootDiscoverRequest", fields, ELEMENTSOF(fields),
				 f, err, sizeof(err)) < 0) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", err);
		return false;
	}
	k = file_uri_to_pathn(json_string_value(f[1]), json_string_length(f[1]), true, &dr->path, &msg);
	if (k == -EREMOTE) {
		/* Decodes, but cannot be inspected here: the root's error, as the reference has it. */
		const char *q = strchr(msg, '\''), *e = q ? strchr(q + 1, '\'') : NULL;

		dr->uri = e ? strndup(q + 1, (size_t)(e - q - 1)) : strdup(json_string_value(f[1]));
		if (dr->uri && asprintf(&text, "failed to inspect capability root %s: %s", dr->uri, msg) >= 0)
			dr->result = root_error(f[0], dr->uri, text);
		free(text);
		free(msg);
		if (!dr->result) {
			rpc_reply_errno_internal(c, id, ENOMEM);
			return false;
		}
	} else if (k < 0) {
		if (k == -ENOMEM)
			rpc_reply_errno_internal(c, id, ENOMEM);
		else
			rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", msg);
		free(msg);
		return false;
	}
	k = fs_sandbox_check(c, id, f[2]);
	if (k < 0)
		return false;
	/* A copy: params (and f[0]) belong to the request, which is freed after dispatch. */
	dr->id = json_copy(f[0]);
	if (!dr->uri)
		dr->uri = file_uri_from_path(dr->path);
	if (k > 0 && !dr->result)
		dr->sandbox = json_incref(f[2]);
	if (!dr->id || !dr->uri) {
		rpc_reply_errno_internal(c, id, ENOMEM);
		return false;
	}
	return true;
}

static void rpc_discover_v1(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "roots", P_ANY, true, NULL },
	};
	json_t *f[ELEMENTSOF(fields)], *v;
	struct disc_req *r;
	bool unsandboxed = false;
	char err[512];
	size_t i;

	if (!params_decode_or_reply(c, id, params, "WireCapabilityRootsDiscoverParams", fields,
				    ELEMENTSOF(fields), f))
		return;
	if (!json_is_array(f[0])) {
		params_type_error(f[0] ? f[0] : json_null(), "a sequence", err, sizeof(err));
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", err);
		return;
	}
	r = req_new(c, id);
	if (!r)
		return;
	r->roots = calloc(json_array_size(f[0]) + 1, sizeof(*r->roots));
	r->groups = calloc(json_array_size(f[0]) + 1, sizeof(*r->groups));
	if (!r->roots || !r->groups) {
		req_free(r);
		rpc_reply_errno_internal(c, id, ENOMEM);
		return;
	}
	json_array_foreach(f[0], i, v) {
		r->n_roots++;
		if (!decode_root(c, id, v, &r->roots[i])) {
			req_free(r);
			return;
		}
	}
	if (r->n_roots > DISC_MAX_ROOTS) {
		req_free(r);
		rpc_reply_error(c, id, RPC_INVALID_REQUEST,
				"capability root discovery accepts at most %d roots", DISC_MAX_ROOTS);
		return;
	}
	for (i = 0; i < r->n_roots; i++) {
		if (r->roots[i].result)
			continue; /* decided already */
		if (!r->roots[i].sandbox)
			unsandboxed = true;
		else if (add_to_group(r, i) < 0) {
			req_free(r);
			rpc_reply_errno_internal(c, id, ENOMEM);
			return;
		}
	}
	req_start(c, id, r, unsandboxed || r->n_roots == 0);
}

/* ---- capabilities/discoverV2 ---- */

/* "NAME=value", malloc'd, or NULL. */
static char *env_entry(const char *name, const char *value)
{
	char *s;

	return asprintf(&s, "%s=%s", name, value) < 0 ? NULL : s;
}

static void rpc_discover_v2(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "cwd", P_STRING, true, NULL },
		{ "sandbox", P_STRUCT, false, "struct FileSystemSandboxContext", true },
	};
	json_t *f[ELEMENTSOF(fields)];
	_cleanup_free_ char *cwd = NULL, *msg = NULL;
	struct disc_req *r;
	int k;

	if (!params_decode_or_reply(c, id, params, "DiscoverV2CapabilitiesRequest", fields,
				    ELEMENTSOF(fields), f))
		return;
	/* The cwd is checked (as a URI, any host), not used: the locations are the executor's own. */
	k = file_uri_to_pathn(json_string_value(f[0]), json_string_length(f[0]), true, &cwd, &msg);
	if (k == -ENOMEM || (k < 0 && k != -EREMOTE)) {
		if (k == -ENOMEM)
			rpc_reply_errno_internal(c, id, ENOMEM);
		else
			rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", msg);
		return;
	}
	free(TAKE_PTR(msg));
	k = fs_sandbox_check(c, id, f[1]);
	if (k < 0)
		return;
	r = req_new(c, id);
	if (!r)
		return;
	r->v2 = true;
	/*
	 * A Codex home that cannot be found has no skills to offer, nor a user
	 * without a home directory (no passwd entry, no $HOME).
	 */
	if (env_find_codex_home(&r->codex_home, &msg) == -ENOMEM) {
		req_free(r);
		rpc_reply_errno_internal(c, id, ENOMEM);
		return;
	}
	r->user_home = env_home_dir();
	if (k > 0) {
		/*
		 * The helper's environment has neither: the executor's are passed on,
		 * $CODEX_HOME as set (the helper resolves it as the server did, under
		 * the sandbox), $HOME as found.
		 */
		const char *ch = getenv("CODEX_HOME");
		size_t n = 0;
		bool oom = false;

		r->groups = calloc(1, sizeof(*r->groups));
		if (ch && *ch)
			oom |= !(r->env[n++] = env_entry("CODEX_HOME", ch));
		if (r->user_home)
			oom |= !(r->env[n++] = env_entry("HOME", r->user_home));
		if (!r->groups || oom) {
			req_free(r);
			rpc_reply_errno_internal(c, id, ENOMEM);
			return;
		}
		r->groups[0] = (struct disc_group){ .req = r, .sandbox = f[1] };
		r->n_groups = 1;
	}
	req_start(c, id, r, k == 0);
}

static const struct rpc_method discovery_methods[] = {
	{ "capabilityRoots/discoverV1", "filesystem", rpc_discover_v1, NULL },
	{ "capabilities/discoverV2", "filesystem", rpc_discover_v2, NULL },
};

int discovery_methods_register(void)
{
	return rpc_methods_register(discovery_methods, ELEMENTSOF(discovery_methods));
}
