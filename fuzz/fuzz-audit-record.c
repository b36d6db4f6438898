/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: audit records as the denial evidence store reads them
 * (sandbox/evidence.h). Audit text is formatted by the kernel, but its
 * values come from elsewhere: a sandboxed process picks its comm, exe and the
 * paths in its records, and other processes on the host produce records too.
 * The input is a list of records, one per line, each led by a byte choosing
 * its type (SYSCALL, EOE, SECCOMP, Landlock access and domain, a user
 * record); a tree tracks this process, so that records naming it (or its
 * parent) are attributed. Invariants: bounded denials, every kept string
 * terminated inside its field, nothing read past a record (ASan).
 */
#include <string.h>
#include <unistd.h>

#include "evidence.h"
#include "fuzz.h"

static const unsigned types[] = { 1300, 1320, 1326, 1423, 1424, 1121 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sandbox_evidence *ev;
	struct sandbox_ev_tree *t;
	const struct sandbox_denial *d;
	uint64_t total = 0;
	size_t n = 0, off = 0;

	if (size > 1 << 16)
		return 0;
	FUZZ_CHECK(sandbox_evidence_new(SANDBOX_EVIDENCE_AUDIT, &ev) == 0);
	t = sandbox_evidence_track(ev, getpid());
	FUZZ_CHECK(t != NULL);
	while (off < size) {
		const uint8_t *nl = memchr(data + off, '\n', size - off);
		size_t end = nl ? (size_t)(nl - data) : size;
		unsigned type = types[data[off] % (sizeof(types) / sizeof(types[0]))];
		/* each record in a buffer of its own size: ASan sees any read past it */
		size_t len = end > off ? end - off - 1 : 0;
		char *rec;
		uint32_t seq;

		rec = malloc(len ? len : 1);
		FUZZ_CHECK(rec != NULL);
		if (len)
			memcpy(rec, data + off + 1, len);
		(void)sandbox_audit_is_barrier(type, rec, len, getpid(), &seq);
		sandbox_evidence_feed_audit(ev, type, rec, len);
		free(rec);
		off = end + 1;
	}
	sandbox_evidence_flush(ev);
	d = sandbox_evidence_denials(t, &n, &total);
	FUZZ_CHECK(n <= SANDBOX_EVIDENCE_KEEP && n <= total);
	for (size_t i = 0; i < n; i++) {
		FUZZ_CHECK(strnlen(d[i].object, sizeof(d[i].object)) < sizeof(d[i].object));
		FUZZ_CHECK(strnlen(d[i].access, sizeof(d[i].access)) < sizeof(d[i].access));
		FUZZ_CHECK(strnlen(d[i].comm, sizeof(d[i].comm)) < sizeof(d[i].comm));
		FUZZ_CHECK(d[i].kind <= SANDBOX_DENIAL_MOUNT);
	}
	sandbox_evidence_untrack(ev, t);
	sandbox_evidence_free(ev);
	return 0;
}
