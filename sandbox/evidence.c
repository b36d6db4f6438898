/* SPDX-License-Identifier: MIT */
/* Denial evidence per sandboxed process tree: attribution, bounds, the decision (evidence.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "evidence.h"
#include "filter.h"
#include "hex.h"
#include "macro.h"
#include "sandbox.h"

#include "evidence-internal.h"

static unsigned hash32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	return x % HASH_SIZE;
}

static uint32_t read_sessionid(const char *pid_dir)
{
	char path[64], buf[32];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/sessionid", pid_dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	return (uint32_t)strtoul(buf, NULL, 10);
}

int sandbox_evidence_new(unsigned sources, struct sandbox_evidence **ret)
{
	struct sandbox_evidence *ev = calloc(1, sizeof(*ev));

	if (!ev)
		return -ENOMEM;
	ev->sources = sources;
	ev->own_ses = read_sessionid("/proc/self");
	*ret = ev;
	return 0;
}

void sandbox_evidence_free(struct sandbox_evidence *ev)
{
	if (!ev)
		return;
	for (unsigned i = 0; i < HASH_SIZE; i++)
		while (ev->by_pid[i])
			sandbox_evidence_untrack(ev, ev->by_pid[i]);
	free(ev);
}

unsigned sandbox_evidence_sources(const struct sandbox_evidence *ev)
{
	return ev ? ev->sources : 0;
}

static bool ses_valid(uint32_t ses)
{
	return ses != 0 && ses != UINT32_MAX;
}

struct sandbox_ev_tree *sandbox_evidence_track(struct sandbox_evidence *ev, pid_t pid)
{
	struct sandbox_ev_tree *t = calloc(1, sizeof(*t));
	char dir[32];

	if (!t)
		return NULL;
	t->pid = pid;
	snprintf(dir, sizeof(dir), "/proc/%d", (int)pid);
	t->ses = read_sessionid(dir);
	/* Still the server's session (the loginuid write failed or audit is off): none of its own. */
	if (!ses_valid(t->ses) || t->ses == ev->own_ses)
		t->ses = 0;
	t->pid_next = ev->by_pid[hash32((uint32_t)pid)];
	ev->by_pid[hash32((uint32_t)pid)] = t;
	if (t->ses) {
		t->ses_next = ev->by_ses[hash32(t->ses)];
		ev->by_ses[hash32(t->ses)] = t;
	}
	return t;
}

void sandbox_evidence_untrack(struct sandbox_evidence *ev, struct sandbox_ev_tree *t)
{
	struct sandbox_ev_tree **pp;

	if (!t)
		return;
	for (pp = &ev->by_pid[hash32((uint32_t)t->pid)]; *pp; pp = &(*pp)->pid_next)
		if (*pp == t) {
			*pp = t->pid_next;
			break;
		}
	if (t->ses)
		for (pp = &ev->by_ses[hash32(t->ses)]; *pp; pp = &(*pp)->ses_next)
			if (*pp == t) {
				*pp = t->ses_next;
				break;
			}
	for (unsigned i = 0; i < DOMAIN_CACHE; i++)
		if (ev->domains[i].t == t)
			ev->domains[i].t = NULL, ev->domains[i].domain = 0;
	free(t);
}

void sandbox_evidence_set_cgroup(struct sandbox_ev_tree *t, uint64_t cgroup_id)
{
	if (t)
		t->cgroup = cgroup_id;
}

void sandbox_evidence_set_filter(struct sandbox_ev_tree *t, const struct sock_fprog *prog)
{
	if (t)
		t->filter = prog;
}

uint64_t sandbox_evidence_cgroup(const struct sandbox_ev_tree *t)
{
	return t ? t->cgroup : 0;
}

void sandbox_evidence_reaped(struct sandbox_ev_tree *t)
{
	if (t)
		t->reaped = true;
}

static struct sandbox_ev_tree *by_pid(struct sandbox_evidence *ev, int32_t pid)
{
	if (pid <= 0)
		return NULL;
	for (struct sandbox_ev_tree *t = ev->by_pid[hash32((uint32_t)pid)]; t; t = t->pid_next)
		if (t->pid == pid && !t->reaped)
			return t;
	return NULL;
}

/* The parent of pid from /proc/PID/stat (after the last ')': state, then ppid), or -1. */
static int32_t proc_ppid(int32_t pid)
{
	char path[40], buf[512], *p;
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p || !p[1] || !p[2] || !p[3])
		return -1;
	return (int32_t)strtol(p + 4, NULL, 10);
}

struct sandbox_ev_tree *sandbox_ev_attribute(struct sandbox_evidence *ev,
					  const struct sandbox_denial_origin *o)
{
	struct sandbox_ev_tree *t = NULL;
	int32_t pid;

	if (ses_valid(o->ses) && o->ses != ev->own_ses) {
		for (t = ev->by_ses[hash32(o->ses)]; t; t = t->ses_next)
			if (t->ses == o->ses)
				return t;
	}
	if (o->cgroup)
		for (unsigned i = 0; i < HASH_SIZE; i++)
			for (t = ev->by_pid[i]; t; t = t->pid_next)
				if (t->cgroup == o->cgroup)
					return t;
	if (o->domain)
		for (unsigned i = 0; i < DOMAIN_CACHE; i++)
			if (ev->domains[i].domain == o->domain && ev->domains[i].t)
				return ev->domains[i].t;
	if ((t = by_pid(ev, o->pid)) || (t = by_pid(ev, o->ppid)))
		return t;
	/* A live descendant: its parent chain reaches a tracked child (bounded walk). */
	pid = o->ppid > 1 ? o->ppid : o->pid;
	for (int i = 0; i < PROC_WALK_MAX && pid > 1; i++) {
		pid = proc_ppid(pid);
		if ((t = by_pid(ev, pid)))
			return t;
	}
	return NULL;
}

static bool same_denial(const struct sandbox_denial *a, const struct sandbox_denial *b)
{
	return a->kind == b->kind && a->syscall == b->syscall && strcmp(a->object, b->object) == 0 &&
	       strcmp(a->access, b->access) == 0;
}

/* verdict: 1 decisive, 0 not, -1 the default rule for its kind. */
bool sandbox_ev_feed_tree(struct sandbox_evidence *ev, struct sandbox_ev_tree *t,
			const struct sandbox_denial *d, const struct sandbox_denial_origin *o,
			int verdict)
{
	if (o->domain) {
		bool cached = false;

		for (unsigned i = 0; i < DOMAIN_CACHE && !cached; i++)
			cached = ev->domains[i].domain == o->domain && ev->domains[i].t == t;
		if (!cached) {
			ev->domains[ev->domain_next].domain = o->domain;
			ev->domains[ev->domain_next].t = t;
			ev->domain_next = (ev->domain_next + 1) % DOMAIN_CACHE;
		}
	}
	bool decisive;

	t->total++;
	/*
	 * With the network restricted only AF_UNIX sockets exist, and libc
	 * probes nscd's socket with connect() in nearly every process (then
	 * reads /etc/passwd): a refused connect in an audit record (which has
	 * no address) is logged, not decisive; the tracer's record has the
	 * address and its verdict (connect_verdict). EPERM/EACCES alone:
	 * permission bits and capabilities fail so too.
	 */
	decisive = verdict >= 0 ? verdict :
		   !(d->kind == SANDBOX_DENIAL_SECCOMP && d->syscall == SYS_connect) &&
		   d->kind != SANDBOX_DENIAL_SYSCALL;
	if (decisive)
		t->decisive++;
	/* The first distinct ones: a loop repeating one denial keeps one entry. */
	for (size_t i = 0; i < t->n; i++)
		if (same_denial(&t->kept[i], d))
			return true;
	if (t->n < SANDBOX_EVIDENCE_KEEP) {
		t->kept[t->n] = *d;
		t->kept[t->n++].decisive = decisive;
	}
	return true;
}

bool sandbox_evidence_feed(struct sandbox_evidence *ev, const struct sandbox_denial *d,
			   const struct sandbox_denial_origin *o)
{
	struct sandbox_ev_tree *t = sandbox_ev_attribute(ev, o);

	if (!t) {
		sandbox_ev_orphan_audit(ev, d, o);
		return false;
	}
	return sandbox_ev_feed_tree(ev, t, d, o, -1);
}

void sandbox_evidence_mark_lost(struct sandbox_evidence *ev)
{
	for (unsigned i = 0; i < HASH_SIZE; i++)
		for (struct sandbox_ev_tree *t = ev->by_pid[i]; t; t = t->pid_next)
			t->lost = true;
}

/* ---- audit records ---- */

/*
 * The value of key in an audit record's text into out (NUL-terminated,
 * truncated): "quoted", or an unquoted token, which for untrusted strings
 * (hex: true) is the hex encoding audit uses for names with odd bytes.
 * Returns true if the key is present.
 */
static bool field(const char *s, size_t len, const char *key, char *out, size_t outsz, bool hex)
{
	size_t kl = strlen(key);

	for (size_t i = 0; i + kl + 1 <= len; i++) {
		size_t j, o = 0;

		if ((i > 0 && s[i - 1] != ' ') || memcmp(s + i, key, kl) != 0 || s[i + kl] != '=')
			continue;
		j = i + kl + 1;
		if (j < len && s[j] == '"') {
			for (j++; j < len && s[j] != '"'; j++)
				if (o + 1 < outsz)
					out[o++] = s[j];
			out[o] = 0;
			return true;
		}
		size_t start = j;
		bool all_hex = true;

		while (j < len && s[j] != ' ' && s[j] != '\n' && s[j] != 0) {
			if (unhexchar((unsigned char)s[j]) < 0)
				all_hex = false;
			j++;
		}
		if (hex && all_hex && (j - start) % 2 == 0 && j > start) {
			for (size_t k = start; k + 1 < j && o + 1 < outsz; k += 2)
				out[o++] = (char)(unhexchar((unsigned char)s[k]) << 4 | unhexchar((unsigned char)s[k + 1]));
		} else {
			for (size_t k = start; k < j && o + 1 < outsz; k++)
				out[o++] = s[k];
		}
		out[o] = 0;
		return true;
	}
	if (outsz)
		out[0] = 0;
	return false;
}

static bool field_num(const char *s, size_t len, const char *key, int base, long long *ret)
{
	char buf[32], *end;

	if (!field(s, len, key, buf, sizeof(buf), false) || !buf[0])
		return false;
	errno = 0;
	*ret = strtoll(buf, &end, base);
	if (errno || *end)
		return false;
	return true;
}

/* "audit(1795658672.492:4): rest" -> serial 4 and rest. Returns false if malformed. */
static bool audit_header(const char **s, size_t *len, uint64_t *serial)
{
	const char *p = *s, *end = *s + *len, *colon = NULL;
	uint64_t v = 0;

	if (*len < 8 || memcmp(p, "audit(", 6) != 0)
		return false;
	for (p += 6; p < end && *p != ')'; p++)
		if (*p == ':')
			colon = p;
	/* No ')' in the record: nothing follows the header (and no serial to trust). */
	if (!colon || p == end)
		return false;
	/* The serial, digits up to the ')' (the text is not NUL-terminated). */
	for (const char *q = colon + 1; q < p && *q >= '0' && *q <= '9'; q++)
		v = v * 10 + (uint64_t)(*q - '0');
	*serial = v;
	p++; /* ')' */
	if (p < end && *p == ':')
		p++;
	while (p < end && *p == ' ')
		p++;
	*len = (size_t)(end - p);
	*s = p;
	return true;
}

static struct pending *pending_find(struct sandbox_evidence *ev, uint64_t serial)
{
	for (unsigned i = 0; i < PENDING; i++)
		if (ev->pend[i].used && ev->pend[i].serial == serial)
			return &ev->pend[i];
	return NULL;
}

static void pending_finish(struct sandbox_evidence *ev, struct pending *p)
{
	if (!p->o.pid && p->creator)
		p->o.pid = p->creator;
	p->d.pid = p->o.pid;
	(void)sandbox_evidence_feed(ev, &p->d, &p->o);
	p->used = false;
}

static struct pending *pending_new(struct sandbox_evidence *ev, uint64_t serial)
{
	struct pending *oldest = NULL;

	for (unsigned i = 0; i < PENDING; i++) {
		if (!ev->pend[i].used) {
			memset(&ev->pend[i], 0, sizeof(ev->pend[i]));
			ev->pend[i].used = true;
			ev->pend[i].serial = serial;
			return &ev->pend[i];
		}
		if (!oldest || ev->pend[i].serial < oldest->serial)
			oldest = &ev->pend[i];
	}
	/* Table full: the oldest event's SYSCALL record is not coming; feed it with what it has. */
	pending_finish(ev, oldest);
	memset(oldest, 0, sizeof(*oldest));
	oldest->used = true;
	oldest->serial = serial;
	return oldest;
}

static void landlock_access(const char *s, size_t len, struct sandbox_denial *d,
			    struct sandbox_denial_origin *o)
{
	char dom[32], addr[64], port[16];
	long long v;

	field(s, len, "domain", dom, sizeof(dom), false);
	o->domain = strtoull(dom, NULL, 16);
	field(s, len, "blockers", d->access, sizeof(d->access), false);
	d->kind = strncmp(d->access, "net.", 4) == 0     ? SANDBOX_DENIAL_NET
		  : strncmp(d->access, "scope.", 6) == 0 ? SANDBOX_DENIAL_SCOPE
							 : SANDBOX_DENIAL_FS;
	d->syscall = -1;
	if (field(s, len, "path", d->object, sizeof(d->object), true))
		return;
	if (field(s, len, "daddr", addr, sizeof(addr), false) ||
	    field(s, len, "saddr", addr, sizeof(addr), false)) {
		if (!field(s, len, "dest", port, sizeof(port), false))
			field(s, len, "src", port, sizeof(port), false);
		snprintf(d->object, sizeof(d->object), "%s:%s", addr, port);
	} else if (field(s, len, "dest", port, sizeof(port), false) ||
		   field(s, len, "src", port, sizeof(port), false)) {
		snprintf(d->object, sizeof(d->object), "port %s", port);
	} else if (field_num(s, len, "opid", 10, &v)) {
		snprintf(d->object, sizeof(d->object), "pid %lld", v);
	}
}

static void syscall_origin(const char *s, size_t len, struct sandbox_denial_origin *o,
			   struct sandbox_denial *d)
{
	long long v;

	if (field_num(s, len, "pid", 10, &v))
		o->pid = (int32_t)v;
	if (field_num(s, len, "ppid", 10, &v))
		o->ppid = (int32_t)v;
	if (field_num(s, len, "ses", 10, &v))
		o->ses = (uint32_t)v;
	if (d) {
		if (field_num(s, len, "syscall", 10, &v))
			d->syscall = (int32_t)v;
		if (field_num(s, len, "exit", 10, &v) && v < 0 && v > -4096)
			d->err = (int32_t)-v;
		field(s, len, "comm", d->comm, sizeof(d->comm), true);
	}
}

/*
 * seccomp rules whose errno is ENOSYS make libc fall back to an older call
 * (filter.c: clone3, openat2, fchmodat2): not denials.
 */
static bool seccomp_fallback(long long nr)
{
#ifdef SYS_clone3
	if (nr == SYS_clone3)
		return true;
#endif
#ifdef SYS_openat2
	if (nr == SYS_openat2)
		return true;
#endif
	return nr == 452; /* fchmodat2 */
}

void sandbox_evidence_feed_audit(struct sandbox_evidence *ev, unsigned type, const char *text,
				 size_t len)
{
	uint64_t serial;
	struct pending *p;

	if (!audit_header(&text, &len, &serial))
		return;
	switch (type) {
	case AUDIT_LANDLOCK_ACCESS:
		p = pending_find(ev, serial);
		if (!p)
			p = pending_new(ev, serial);
		else if (p->d.access[0])
			pending_finish(ev, p), p = pending_new(ev, serial); /* a second denial, same event */
		landlock_access(text, len, &p->d, &p->o);
		break;
	case AUDIT_LANDLOCK_DOMAIN: {
		long long v;

		p = pending_find(ev, serial);
		if (p && field_num(text, len, "pid", 10, &v))
			p->creator = (int32_t)v;
		break;
	}
	case AUDIT_SYSCALL:
		p = pending_find(ev, serial);
		if (p && !p->have_syscall) {
			syscall_origin(text, len, &p->o, &p->d);
			p->have_syscall = true;
			pending_finish(ev, p);
		}
		break;
	case AUDIT_EOE:
		p = pending_find(ev, serial);
		if (p)
			pending_finish(ev, p);
		break;
	case AUDIT_SECCOMP: {
		struct sandbox_denial d = { .kind = SANDBOX_DENIAL_SECCOMP, .syscall = -1 };
		struct sandbox_denial_origin o = { 0 };
		long long v, code = 0;

		if (!field_num(text, len, "syscall", 10, &v) || seccomp_fallback(v))
			break;
		d.syscall = (int32_t)v;
		syscall_origin(text, len, &o, NULL);
		field(text, len, "comm", d.comm, sizeof(d.comm), true);
		(void)field_num(text, len, "code", 16, &code);
		/* code: the action (SECCOMP_RET_ERRNO 0x00050000, KILL_PROCESS 0x80000000, ...). */
		snprintf(d.access, sizeof(d.access), "%s",
			 (code & 0xffff0000LL) == 0x50000 ? "errno"
			 : (code & 0xffff0000LL) == 0x30000 ? "trap"
			 : (code & 0xffff0000LL) == 0 || (code & 0xffff0000LL) == 0x80000000LL ? "kill"
											: "action");
		d.pid = o.pid;
		(void)sandbox_evidence_feed(ev, &d, &o);
		break;
	}
	default:
		break;
	}
}

void sandbox_evidence_flush(struct sandbox_evidence *ev)
{
	for (unsigned i = 0; i < PENDING; i++)
		if (ev->pend[i].used)
			pending_finish(ev, &ev->pend[i]);
}

/* ---- queries and the decision ---- */

const struct sandbox_denial *sandbox_evidence_denials(const struct sandbox_ev_tree *t, size_t *ret_n,
						      uint64_t *ret_total)
{
	*ret_n = t ? t->n : 0;
	if (ret_total)
		*ret_total = t ? t->total : 0;
	return t ? t->kept : NULL;
}

bool sandbox_evidence_complete(const struct sandbox_ev_tree *t)
{
	return t && (t->ses || t->cgroup) && !t->lost;
}

void sandbox_evidence_set_incomplete(struct sandbox_ev_tree *t)
{
	if (t)
		t->lost = true;
}

uint64_t sandbox_evidence_decisive(const struct sandbox_ev_tree *t)
{
	return t ? t->decisive : 0;
}

void sandbox_evidence_carry(struct sandbox_ev_tree *t, uint64_t decisive)
{
	if (!t)
		return;
	/* Counted, not kept: the denials listed at exit are the new binary's. */
	t->decisive += decisive;
	t->total += decisive;
	/* What the tree did between QUIESCE and the new sources reached no reader. */
	t->lost = true;
}

uint64_t sandbox_evidence_ambiguous(const struct sandbox_ev_tree *t)
{
	return t ? t->ambiguous : 0;
}

void sandbox_evidence_carry_whole(struct sandbox_ev_tree *t, uint64_t decisive,
				  uint64_t ambiguous, bool lost, bool gap)
{
	if (!t)
		return;
	t->decisive += decisive;
	t->total += decisive;
	t->ambiguous += ambiguous;
	if (lost || gap)
		t->lost = true;
}

void sandbox_evidence_keep(struct sandbox_ev_tree *t, const struct sandbox_denial *d)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		if (same_denial(&t->kept[i], d))
			return;
	if (t->n < SANDBOX_EVIDENCE_KEEP)
		t->kept[t->n++] = *d;
}

static bool mentions_erofs(const char *const *texts, const size_t *lens, size_t n)
{
	static const char needle[] = "read-only file system";

	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k + sizeof(needle) - 1 <= lens[i]; k++)
			if (strncasecmp(texts[i] + k, needle, sizeof(needle) - 1) == 0)
				return true;
	return false;
}

bool sandbox_evidence_decide(const struct sandbox_evidence *ev, const struct sandbox_ev_tree *t,
			     int exit_code, const char *const *texts, const size_t *lens, size_t n,
			     const char **ret_basis)
{
	const char *basis;
	bool r, audit_ok, bpf_ok;

	/* What covered this tree: its own audit session, its watched cgroup. */
	audit_ok = ev && t && (ev->sources & SANDBOX_EVIDENCE_AUDIT) && t->ses;
	bpf_ok = ev && t && (ev->sources & SANDBOX_EVIDENCE_BPF) && t->cgroup;
	if (!ev || !ev->sources || !t) {
		basis = "heuristic (no evidence source)";
		r = sandbox_likely_denied(exit_code, texts, lens, n);
	} else if (exit_code == 0) {
		basis = "exit 0";
		r = false;
	} else if (t->decisive > 0) {
		basis = "evidence";
		r = true;
	} else if (!sandbox_evidence_complete(t)) {
		basis = "heuristic (evidence incomplete)";
		r = sandbox_likely_denied(exit_code, texts, lens, n);
	} else if (audit_ok && bpf_ok) {
		basis = "no evidence";
		r = false;
	} else if (bpf_ok) {
		/* bpf alone: seccomp's EPERM and Landlock's EACCES look like permission bits. */
		basis = t->ambiguous ? "heuristic (bpf: EPERM/EACCES of unknown cause)" :
				       "no evidence (bpf: no unexplained refusal)";
		r = t->ambiguous ? sandbox_likely_denied(exit_code, texts, lens, n) : false;
	} else if (audit_ok) {
		/* Audit alone: a read-only mount refuses before any LSM hook, leaving no record. */
		basis = "no evidence (audit: EROFS text only)";
		r = mentions_erofs(texts, lens, n);
	} else {
		basis = "heuristic (no source covers this tree)";
		r = sandbox_likely_denied(exit_code, texts, lens, n);
	}
	if (ret_basis)
		*ret_basis = basis;
	return r;
}

const char *sandbox_denial_kind_name(enum sandbox_denial_kind k)
{
	static const char *const names[] = { "fs", "net", "scope", "seccomp", "mount", "syscall" };

	return (unsigned)k < ELEMENTSOF(names) ? names[k] : "unknown";
}
