/* SPDX-License-Identifier: MIT */
/*
 * What a managed process's exit reports beyond its status (proc.c,
 * publish_exited): the sandbox denials of its tree, the sandboxDenied
 * decision over its retained output, and the audit log's process.exit line.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "evidence.h"
#include "log.h"
#include "proc-internal.h"
#include "proc.h"
#include "sandbox.h"

/* Joins the retained chunks of the given streams (-1: all) for the denial heuristic. */
static char *retained_text(struct proc *p, int stream, size_t *ret_len)
{
	struct proc_chunk *ch;
	size_t n = 0;
	char *buf;

	list_for_each_entry(ch, &p->chunks, link)
		if (stream < 0 || ch->stream == stream || (stream == STREAM_STDOUT && ch->stream == STREAM_PTY))
			n += ch->len;
	buf = malloc(n + 1);
	if (!buf)
		return NULL;
	n = 0;
	list_for_each_entry(ch, &p->chunks, link)
		if (stream < 0 || ch->stream == stream || (stream == STREAM_STDOUT && ch->stream == STREAM_PTY)) {
			memcpy(buf + n, ch->data, ch->len);
			n += ch->len;
		}
	*ret_len = n;
	return buf;
}

/* Logs the denials of p's tree (info) and returns them as process/exited's additive member. */
json_t *proc_denials_json(struct proc *p)
{
	size_t n;
	uint64_t total;
	const struct sandbox_denial *d = sandbox_evidence_denials(p->ev_wait.tree, &n, &total);
	json_t *a;

	if (!n)
		return NULL;
	a = json_array();
	for (size_t i = 0; a && i < n; i++) {
		json_t *o;

		log_info("Process '%s' (pid %d): sandbox denied %s %s%s%s (syscall %d, %s pid %d)",
			 p->id, (int)p->pid, sandbox_denial_kind_name(d[i].kind), d[i].access,
			 d[i].object[0] ? " on " : "", d[i].object, d[i].syscall,
			 d[i].comm[0] ? d[i].comm : "?", d[i].pid);
		/* Only those that count (not libc's refused nscd connect): clients see the reason. */
		if (!d[i].decisive)
			continue;
		o = json_object();
		json_object_set_new(o, "kind", json_string(sandbox_denial_kind_name(d[i].kind)));
		json_object_set_new(o, "access", json_string(d[i].access));
		if (d[i].object[0]) {
			json_t *s = json_string(d[i].object);

			if (!s) { /* not UTF-8: bytes >= 0x80 shown as '?' */
				char tmp[sizeof(d[i].object)];
				size_t k;

				for (k = 0; d[i].object[k]; k++)
					tmp[k] = (unsigned char)d[i].object[k] < 0x80 ? d[i].object[k] : '?';
				tmp[k] = 0;
				s = json_string(tmp);
			}
			json_object_set_new(o, "object", s);
		}
		json_object_set_new(o, "syscall", d[i].syscall >= 0 ? json_integer(d[i].syscall) : json_null());
		if (d[i].err)
			json_object_set_new(o, "errno", json_integer(d[i].err));
		json_object_set_new(o, "pid", json_integer(d[i].pid));
		json_array_append_new(a, o);
	}
	if (json_array_size(a) == 0) {
		json_decref(a);
		a = NULL;
	}
	if (total > n)
		log_info("Process '%s' (pid %d): %" PRIu64 " denials in all (%zu distinct kept)", p->id,
			 (int)p->pid, total, n);
	return a;
}

bool proc_classify_denial(struct proc *p)
{
	char *texts[3] = { NULL, NULL, NULL };
	size_t lens[3] = { 0, 0, 0 };
	bool denied;

	/* stdout (with pty), stderr, and everything in order, as the reference reads them. */
	texts[0] = retained_text(p, STREAM_STDOUT, &lens[0]);
	texts[1] = retained_text(p, STREAM_STDERR, &lens[1]);
	texts[2] = retained_text(p, -1, &lens[2]);
	if (p->ev_wait.tree) {
		const char *basis;

		denied = sandbox_evidence_decide(exec_evidence_store(), p->ev_wait.tree, p->exit_code,
						 (const char *const *)texts, lens,
						 texts[0] && texts[1] && texts[2] ? 3 : 0, &basis);
		log_debug("Process '%s': sandboxDenied %s (%s)", p->id, denied ? "true" : "false", basis);
	} else {
		denied = sandbox_likely_denied(p->exit_code, (const char *const *)texts, lens,
					       texts[0] && texts[1] && texts[2] ? 3 : 0);
	}
	for (int i = 0; i < 3; i++)
		free(texts[i]);
	return denied;
}

/* The audit log's process.exit line (log.h). */
void proc_audit_exit(const struct proc *p)
{
	struct timespec ts;
	uint64_t now;
	struct log_field fl[9];
	size_t n = 0;

	if (!log_audit_enabled())
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	fl[n++] = LOG_STR("session", p->sess->id);
	fl[n++] = LOG_STRN("process", p->id, p->id_len);
	fl[n++] = LOG_INT("pid", p->pid);
	fl[n++] = LOG_INT("exitCode", p->exit_code);
	fl[n++] = LOG_INT("signal", p->term_signal);
	fl[n++] = LOG_INT("durationMs", now > p->started_at_ms ? now - p->started_at_ms : 0);
	fl[n++] = LOG_BOOL("sandboxDenied", p->sandbox_denied);
	fl[n++] = LOG_BOOL("timedOut", p->timed_out);
	if (p->has_cg && p->cg.memory_limited)
		fl[n++] = LOG_BOOL("oomKilled", p->oom_killed); /* as on process/exited */
	log_audit("process.exit", fl, n);
}
