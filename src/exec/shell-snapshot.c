/* SPDX-License-Identifier: MIT */
/*
 * Shell snapshots (shell-snapshot.h): the per-session cache of captured
 * states, the requests parked on a capture, and the decision for one
 * process/start. The capture runs in shell-snapshot-capture.c, the launch
 * that replays a snapshot is built in shell-snapshot-launch.c
 * (shell-snapshot-internal.h holds what the files share).
 *
 * A request that needs a capture is parked (an rpc_pending) and started
 * again, from the top, once the capture is over: whatever happened meanwhile
 * (a process of the same id, a draining server) is checked again, and the
 * second pass never parks, it takes what the cache holds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conn.h"
#include "environ.h"
#include "log.h"
#include "macro.h"
#include "params.h"
#include "rpc.h"
#include "server.h"
#include "session.h"
#include "shell-snapshot-internal.h"

static unsigned n_total; /* entries in the whole server (SNAP_MAX_TOTAL) */

static uint64_t now_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int snap_check_scope(json_t *snap, char *err, size_t size)
{
	size_t n = json_string_length(json_object_get(snap, "scopeId"));

	if (n == 0 || n > SNAP_MAX_SCOPE_BYTES) {
		snprintf(err, size, "shell snapshot scope must be non-empty and at most %d bytes",
			 SNAP_MAX_SCOPE_BYTES);
		return -EINVAL;
	}
	return 0;
}

int snap_check_shape(json_t *snap, char *err, size_t size)
{
	static const struct pfield req[] = {
		{ "scopeId", P_STRING, true, NULL },
		{ "shell", P_STRUCT, true, "struct ShellInfo" },
	};
	static const struct pfield shell[] = {
		{ "name", P_STRING, true, NULL },
		{ "path", P_STRING, true, NULL },
	};
	json_t *f[2];

	if (params_decode_nested(snap, "ShellSnapshotRequest", req, ELEMENTSOF(req), f, err, size) < 0 ||
	    params_decode_nested(f[1], "ShellInfo", shell, ELEMENTSOF(shell), f, err, size) < 0)
		return -EINVAL;
	return 0;
}

/* ---- the cache ---- */

static void waiter_free(struct snap_waiter *w)
{
	json_decref(w->params);
	free(w);
}

static void waiter_cancel(struct rpc_pending *pend)
{
	struct snap_waiter *w = container_of(pend, struct snap_waiter, pend);

	list_del(&w->link);
	rpc_pending_end(&w->pend);
	waiter_free(w);
}

/* The connection closed while its request was being started again: end it, free it later. */
static void waiter_cancel_waking(struct rpc_pending *pend)
{
	rpc_pending_end(pend);
}

/* Hands each parked request back to process/start (which will not park it again). */
static void entry_wake(struct snap_entry *e)
{
	struct list_head todo;

	list_init(&todo);
	list_splice_tail(&e->waiters, &todo);
	while (!list_empty(&todo)) {
		struct snap_waiter *w = list_first_entry(&todo, struct snap_waiter, link);
		json_t *id = json_incref(w->pend.id);

		list_del(&w->link);
		w->pend.cancel = waiter_cancel_waking;
		/* Replied while still pending: its errors count for process/start. */
		w->resume(w->pend.conn, id, w->params);
		if (w->pend.conn)
			rpc_pending_end(&w->pend);
		json_decref(id);
		waiter_free(w);
	}
}

static int entry_fill(struct snap_entry *e, struct snap_capture *cap, json_t *env_policy)
{
	struct snap_sections sec;
	char **env = NULL;
	int r;

	r = snap_parse_sections(cap->sh, (const char *)cap->buf, cap->len, cap->nonce, &sec);
	if (r < 0)
		return r;
	e->state = snap_render_state(cap->sh, &sec, &e->state_len);
	if (!e->state)
		return -ENOMEM;
	if (e->state_len + sec.len[SNAP_SEC_ENV] > SNAP_MAX_BYTES)
		return -E2BIG;
	r = snap_parse_env(sec.part[SNAP_SEC_ENV], sec.len[SNAP_SEC_ENV], &env);
	if (r >= 0)
		r = environ_filter_policy(env, env_policy, &e->env);
	environ_strv_free(env);
	if (r < 0)
		return r;
	e->memfd = -1;
	if (sec.fd_ok && cap->sh != SNAP_SH)
		return snap_state_memfd(cap->sh, e->state, e->state_len, &e->memfd);
	return 0;
}

/* A capture is over: the entry holds a snapshot, or a failure to retry later. */
void snap_entry_captured(struct snap_entry *e, struct snap_capture *cap)
{
	/* The key is [scope, shell, path, cwd, envPolicy, sandbox]: the policy filters the env. */
	json_t *key = json_loads(e->key, 0, NULL);
	int r = -EBADMSG;

	if (!cap->failed && key)
		r = entry_fill(e, cap, json_array_get(key, 4));
	json_decref(key);
	if (r >= 0) {
		e->status = E_READY;
	} else {
		struct log_ctx ctx = { .session = e->ss->id };
		struct log_field lf[] = { LOG_INT("attempt", e->attempts), LOG_INT("status", cap->status),
					  LOG_INT("bytes", cap->len) };

		free(e->state);
		e->state = NULL;
		e->state_len = 0;
		environ_strv_free(e->env);
		e->env = NULL;
		e->memfd = safe_close(e->memfd);
		e->status = E_FAILED;
		e->retry_at_ms = now_ms() + SNAP_RETRY_MS;
		log_event_ratelimited(LOG_INFO, "shellSnapshot.captureFailed", &ctx, lf, ELEMENTSOF(lf),
				      "Session %s: shell snapshot capture failed (attempt %u, status %d, "
				      "%zu bytes): its commands run without one",
				      e->ss->id, e->attempts, cap->status, cap->len);
	}
	entry_wake(e);
}

static void entry_free(struct snap_entry *e)
{
	struct snap_waiter *w, *n;

	list_for_each_entry_safe(w, n, &e->waiters, link)
		waiter_cancel(&w->pend);
	if (e->cap && e->cap->srv->stopping) {
		e->cap->e = NULL; /* snap_shutdown() reaps it */
	} else if (e->cap) {
		/* Killed; it frees itself once its ops are over. */
		e->cap->e = NULL;
		e->cap->failed = true;
		snap_capture_step(e->cap);
	}
	list_del(&e->link);
	n_total--;
	free(e->key);
	free(e->state);
	safe_close(e->memfd);
	environ_strv_free(e->env);
	free(e);
}

void snap_session_free(struct session *ss)
{
	while (!list_empty(&ss->snapshots))
		entry_free(list_first_entry(&ss->snapshots, struct snap_entry, link));
}

/*
 * Room for one more entry: the least recently used one that no capture
 * holds goes. Returns false when every entry is busy capturing.
 */
static bool make_room(struct session *ss)
{
	struct snap_entry *e;
	unsigned n = 0;

	list_for_each_entry(e, &ss->snapshots, link)
		n++;
	if (n < SNAP_MAX_ENTRIES && n_total < SNAP_MAX_TOTAL)
		return true;
	list_for_each_entry(e, &ss->snapshots, link)
		if (e->status != E_CAPTURING) {
			entry_free(e);
			return true;
		}
	return false;
}

/* What identifies a snapshot: the scope, the shell, and what the capture ran under. */
static char *make_key(const struct snap_start *st)
{
	json_t *shell = json_object_get(st->snap, "shell"), *a;
	char *k;

	a = json_pack("[OOOOOO]", json_object_get(st->snap, "scopeId"), json_object_get(shell, "name"),
		      json_object_get(shell, "path"), st->cwd ? st->cwd : json_null(),
		      st->env_policy ? st->env_policy : json_null(),
		      st->sandbox ? st->sandbox : json_null());
	if (!a)
		return NULL;
	k = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	json_decref(a);
	return k;
}

static int park(struct conn *c, json_t *id, struct snap_entry *e, json_t *params, snap_resume_fn resume)
{
	struct snap_waiter *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->params = json_incref(params);
	w->resume = resume;
	list_add_tail(&w->link, &e->waiters);
	rpc_pending_start(&w->pend, c, id, waiter_cancel);
	return 0;
}

static bool str_is(json_t *v, const char *s)
{
	return json_is_string(v) && json_string_length(v) == strlen(s) && strcmp(json_string_value(v), s) == 0;
}

/* One process/start's part in the decision, borrowed from snap_prepare's arguments. */
struct snap_req {
	struct conn *c;
	json_t *id;
	const struct snap_start *st;
	const struct spawn_args *sa;
	snap_resume_fn resume;
};

/*
 * The shell of a launch that can be snapshotted: only `<shell.path> -lc
 * <command> [args]` (SNAP_NONE: anything else runs as it is), of a shell
 * that has a capture script (else SNAP_ERROR, replied).
 */
static enum snap_result launch_shell(const struct snap_req *q, enum snap_shell *ret)
{
	static const char *const names[] = { [SNAP_BASH] = "bash", [SNAP_ZSH] = "zsh", [SNAP_SH] = "sh" };
	const struct snap_start *st = q->st;
	json_t *shell = json_object_get(st->snap, "shell"), *name = json_object_get(shell, "name");
	json_t *path = json_object_get(shell, "path");
	size_t i;

	if (json_array_size(st->argv) < 3 || !json_equal(json_array_get(st->argv, 0), path) ||
	    !str_is(json_array_get(st->argv, 1), "-lc"))
		return SNAP_NONE;
	for (i = 0; i < ELEMENTSOF(names) && !str_is(name, names[i]); i++)
		;
	if (i == ELEMENTSOF(names)) {
		rpc_reply_error_quoted(q->c, q->id, RPC_INVALID_PARAMS,
				       "shell snapshots are unsupported for shell `", name, "`");
		return SNAP_ERROR;
	}
	*ret = (enum snap_shell)i;
	return SNAP_APPLY;
}

/*
 * A cached key: its snapshot applied when ready; else the request parked
 * on its capture, started again first after a failure (when the attempts
 * and the retry delay allow).
 */
static enum snap_result use_entry(struct snap_entry *e, const struct snap_req *q, bool may_park,
				  struct snap_launch *ret)
{
	int r;

	/* Most recently used last. */
	list_del(&e->link);
	list_add_tail(&e->link, &e->ss->snapshots);
	if (e->status == E_READY) {
		r = snap_build_launch(e, q->st, q->sa, ret);
		if (r < 0) {
			snap_launch_done(ret);
			return SNAP_NONE;
		}
		return SNAP_APPLY;
	}
	if (!may_park)
		return SNAP_NONE;
	if (e->status == E_FAILED) {
		if (e->attempts >= SNAP_MAX_ATTEMPTS || now_ms() < e->retry_at_ms)
			return SNAP_NONE;
		e->attempts++;
		r = snap_capture_start(e, q->c, json_object_get(q->st->params, "processId"), q->sa);
		if (r == -EBUSY)
			e->attempts--; /* too many captures at once: not this key's fault */
		if (r < 0) {
			e->retry_at_ms = now_ms() + SNAP_RETRY_MS;
			return SNAP_NONE;
		}
		e->status = E_CAPTURING;
	}
	return park(q->c, q->id, e, q->st->params, q->resume) < 0 ? SNAP_NONE : SNAP_PARKED;
}

/* A key not cached: a new entry (key taken over), its capture started, the request parked. */
static enum snap_result new_entry(struct session *ss, char *key, enum snap_shell sh,
				  const struct snap_req *q)
{
	struct snap_entry *e;
	int r;

	if (!make_room(ss)) {
		free(key);
		return SNAP_NONE;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		free(key);
		return SNAP_NONE;
	}
	e->ss = ss;
	e->key = key;
	e->sh = sh;
	e->memfd = -1;
	e->attempts = 1;
	e->status = E_CAPTURING;
	list_init(&e->waiters);
	list_add_tail(&e->link, &ss->snapshots);
	n_total++;
	r = snap_capture_start(e, q->c, json_object_get(q->st->params, "processId"), q->sa);
	if (r == -EBUSY) {
		/* Too many captures at once: this command runs as asked, a later one captures. */
		entry_free(e);
		return SNAP_NONE;
	}
	if (r < 0) {
		/* Cannot even start (the program is missing?): the command itself will say so. */
		e->status = E_FAILED;
		e->retry_at_ms = now_ms() + SNAP_RETRY_MS;
		return SNAP_NONE;
	}
	if (park(q->c, q->id, e, q->st->params, q->resume) < 0)
		return SNAP_NONE;
	return SNAP_PARKED;
}

enum snap_result snap_prepare(struct conn *c, json_t *id, const struct snap_start *st,
			      const struct spawn_args *sa, bool may_park, snap_resume_fn resume,
			      struct snap_launch *ret)
{
	const struct snap_req q = { .c = c, .id = id, .st = st, .sa = sa, .resume = resume };
	struct session *ss = c->sess;
	enum snap_shell sh = SNAP_BASH;
	enum snap_result res;
	struct snap_entry *e;
	char *key;

	res = launch_shell(&q, &sh);
	if (res != SNAP_APPLY)
		return res;
	key = make_key(st);
	if (!key || strlen(key) > SNAP_MAX_KEY_BYTES) {
		free(key);
		return SNAP_NONE;
	}
	list_for_each_entry(e, &ss->snapshots, link)
		if (strcmp(e->key, key) == 0) {
			free(key);
			return use_entry(e, &q, may_park, ret);
		}
	if (!may_park) {
		free(key);
		return SNAP_NONE;
	}
	return new_entry(ss, key, sh, &q);
}
