/* SPDX-License-Identifier: MIT */
/*
 * Denial evidence: the BPF tracer's records (sandbox_evidence_feed_bpf), and
 * the records of every source that no tracked tree attributes yet, kept a
 * while for the tree that is about to be tracked (sandbox_evidence_claim()).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>

#include "evidence-internal.h"
#include "filter.h"
#include "macro.h"

/* A name for the log and process/exited: printable ASCII, the rest as '?'. */
static void printable(char *out, size_t outsz, const char *prefix, const uint8_t *p, size_t n)
{
	size_t o = strlen(prefix);

	snprintf(out, outsz, "%s", prefix);
	for (size_t i = 0; i < n && p[i] && o + 1 < outsz; i++)
		out[o++] = p[i] >= 0x20 && p[i] < 0x7f ? (char)p[i] : '?';
	out[o < outsz ? o : outsz - 1] = 0;
}

/*
 * A refused connect()'s address: its text in d->object, and whether the
 * refusal kept the program from a socket that is there (1), would have
 * failed anyway (0: an unnamed address, a unix path with no socket), or
 * cannot be told (-1: a relative path, the probe budget spent).
 */
static int connect_verdict(struct sandbox_ev_tree *t, struct sandbox_denial *d, const uint8_t *a,
			   size_t len)
{
	sa_family_t fam;

	if (len < sizeof(fam))
		return 0;
	memcpy(&fam, a, sizeof(fam));
	if (fam == AF_UNIX) {
		const uint8_t *path = a + offsetof(struct sockaddr_un, sun_path);
		size_t plen = len - offsetof(struct sockaddr_un, sun_path);
		char name[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
		struct stat st;

		if (len <= offsetof(struct sockaddr_un, sun_path))
			return 0; /* unnamed */
		if (path[0] == 0) {
			/* Abstract: a name the program meant to reach; nothing to look up from here. */
			printable(d->object, sizeof(d->object), "@", path + 1, plen - 1);
			return 1;
		}
		if (plen > sizeof(name) - 1)
			plen = sizeof(name) - 1;
		memcpy(name, path, plen);
		name[plen] = 0;
		printable(d->object, sizeof(d->object), "", (const uint8_t *)name, plen);
		if (name[0] != '/' || t->probes >= SANDBOX_EVIDENCE_PROBES)
			return -1;
		t->probes++;
		return lstat(name, &st) == 0 && S_ISSOCK(st.st_mode);
	}
	if (fam == AF_INET && len >= sizeof(struct sockaddr_in)) {
		struct sockaddr_in sin;
		char ip[INET_ADDRSTRLEN];

		memcpy(&sin, a, sizeof(sin));
		inet_ntop(AF_INET, &sin.sin_addr, ip, sizeof(ip));
		snprintf(d->object, sizeof(d->object), "%s:%u", ip, ntohs(sin.sin_port));
	} else if (fam == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		struct sockaddr_in6 sin6;
		char ip[INET6_ADDRSTRLEN];

		memcpy(&sin6, a, sizeof(sin6));
		inet_ntop(AF_INET6, &sin6.sin6_addr, ip, sizeof(ip));
		snprintf(d->object, sizeof(d->object), "[%s]:%u", ip, ntohs(sin6.sin6_port));
	} else {
		snprintf(d->object, sizeof(d->object), "family %u", (unsigned)fam);
	}
	return 1;
}

bool sandbox_evidence_feed_bpf(struct sandbox_evidence *ev, uint32_t tgid, uint64_t cgroup_id,
			       int32_t syscall_nr, int32_t err, const char *comm, const void *addr,
			       size_t addr_len, const uint64_t *args, unsigned nargs)
{
	bool refusal = err == -EACCES || err == -EPERM;
	struct sandbox_denial d = { .kind = !err ? SANDBOX_DENIAL_FS : refusal ? SANDBOX_DENIAL_SYSCALL
				    : SANDBOX_DENIAL_MOUNT,
				    .pid = (int32_t)tgid, .syscall = syscall_nr, .err = -err };
	struct sandbox_denial_origin o = { .pid = (int32_t)tgid, .cgroup = cgroup_id };
	struct sandbox_ev_tree *t = sandbox_ev_attribute(ev, &o);
	int verdict = -1;

	if (!t) {
		sandbox_ev_orphan_bpf(ev, tgid, cgroup_id, syscall_nr, err, comm, addr, addr_len, args,
				    nargs);
		return false;
	}
	snprintf(d.access, sizeof(d.access), "%s",
		 err == -EROFS ? "erofs" : err == -EXDEV ? "exdev" : err == -EACCES ? "eacces"
		 : err == -EPERM ? "eperm" : err ? "errno" : "landlock");
	snprintf(d.comm, sizeof(d.comm), "%s", comm ? comm : "");
	if (refusal && syscall_nr == SYS_connect && addr && addr_len) {
		verdict = connect_verdict(t, &d, addr, addr_len);
		if (verdict < 0) {
			t->lost = true; /* cannot tell: the heuristic, unless something else decides */
			verdict = 0;
		}
		snprintf(d.access, sizeof(d.access), "connect.%s", err == -EACCES ? "eacces" : "eperm");
	} else if (err == -EPERM && t->filter && nargs &&
		   sandbox_seccomp_refuses(t->filter, syscall_nr, args, nargs, EPERM)) {
		/* the tree's own filter refuses this very call: its EPERM */
		verdict = 1;
		d.kind = SANDBOX_DENIAL_SECCOMP;
		snprintf(d.access, sizeof(d.access), "errno");
	} else if (err == -EPERM && sandbox_seccomp_always_refused(syscall_nr)) {
		verdict = 1; /* only the sandbox refuses this call so */
		d.kind = SANDBOX_DENIAL_SECCOMP;
	} else if (refusal) {
		t->ambiguous++; /* permission bits, a capability, or a sandbox rule: cannot tell */
	}
	return sandbox_ev_feed_tree(ev, t, &d, &o, verdict);
}

/* ---- records no tree claimed yet ---- */

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static struct evidence_orphan *orphan_slot(struct sandbox_evidence *ev)
{
	struct evidence_orphan *o = &ev->orphans[ev->orphan_next];

	ev->orphan_next = (ev->orphan_next + 1) % ORPHANS;
	memset(o, 0, sizeof(*o));
	o->used = true;
	o->at_ms = mono_ms();
	return o;
}

void sandbox_ev_orphan_audit(struct sandbox_evidence *ev, const struct sandbox_denial *d,
			   const struct sandbox_denial_origin *o)
{
	struct evidence_orphan *k;

	if (ev->replaying)
		return;
	k = orphan_slot(ev);
	k->d = *d;
	k->o = *o;
}

void sandbox_ev_orphan_bpf(struct sandbox_evidence *ev, uint32_t tgid, uint64_t cgroup_id,
			 int32_t syscall_nr, int32_t err, const char *comm, const void *addr,
			 size_t addr_len, const uint64_t *args, unsigned nargs)
{
	struct evidence_orphan *k;

	if (ev->replaying)
		return;
	k = orphan_slot(ev);
	k->bpf = true;
	k->o.pid = (int32_t)tgid;
	k->o.cgroup = cgroup_id;
	k->syscall_nr = syscall_nr;
	k->err = err;
	snprintf(k->comm, sizeof(k->comm), "%s", comm ? comm : "");
	if (addr && addr_len <= sizeof(k->addr)) {
		memcpy(k->addr, addr, addr_len);
		k->addr_len = addr_len;
	}
	k->nargs = nargs < ELEMENTSOF(k->args) ? nargs : (unsigned)ELEMENTSOF(k->args);
	if (args)
		memcpy(k->args, args, k->nargs * sizeof(*args));
}

/* Whether t is who the record names (not the /proc walk: a claim must stay cheap). */
static bool orphan_of(const struct evidence_orphan *k, const struct sandbox_ev_tree *t)
{
	return (k->o.pid > 0 && (k->o.pid == t->pid || k->o.ppid == t->pid)) ||
	       (t->ses && k->o.ses == t->ses) || (t->cgroup && k->o.cgroup == t->cgroup);
}

void sandbox_evidence_claim(struct sandbox_evidence *ev, struct sandbox_ev_tree *t)
{
	uint64_t now = mono_ms();

	if (!ev || !t)
		return;
	ev->replaying = true;
	for (unsigned i = 0; i < ORPHANS; i++) {
		struct evidence_orphan *k = &ev->orphans[(ev->orphan_next + i) % ORPHANS];

		if (!k->used)
			continue;
		if (now - k->at_ms > ORPHAN_MS) {
			k->used = false;
			continue;
		}
		if (!orphan_of(k, t))
			continue;
		k->used = false;
		if (k->bpf)
			(void)sandbox_evidence_feed_bpf(ev, (uint32_t)k->o.pid, k->o.cgroup, k->syscall_nr,
							k->err, k->comm, k->addr_len ? k->addr : NULL,
							k->addr_len, k->args, k->nargs);
		else
			(void)sandbox_ev_feed_tree(ev, t, &k->d, &k->o, -1);
	}
	ev->replaying = false;
}
