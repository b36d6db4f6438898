/* SPDX-License-Identifier: MIT */
/*
 * The live upgrade's state blob at scale (docs/UPGRADE.md, "Limits and
 * measurement"): the part of the upgrade pause that the blob costs, for N
 * processes each retaining B bytes of output in chunks of C bytes plus K
 * connections with Q bytes of unsent output. Phases timed per round:
 * build (the writer, as SERIALIZE does from live objects), store (into a
 * sealed memfd), parse (mmap + upgrade_state_parse, as RESTORE does), copy
 * (every chunk and queue copied out of the mapping, as adopting does).
 * Prints one JSON line per phase with p50 and p99 over the rounds.
 *
 * usage: upgrade-state-bench [N=1000] [B=1048576] [C=4096] [K=100] [Q=65536] [ROUNDS=20]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "state.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static unsigned long arg(int argc, char **argv, int i, unsigned long def)
{
	return argc > i ? strtoul(argv[i], NULL, 10) : def;
}

static void build(struct upgrade_writer *w, unsigned long n, unsigned long b, unsigned long c,
		  unsigned long k, unsigned long q, const uint8_t *data)
{
	/* collect.c's estimate: bytes held plus a few hundred per record. */
	size_t hint = 65536 + n * (512 + b + (b / c + 1) * UPGRADE_CHUNK_HEADER_LEN) + k * (512 + q);
	char sid[37];

	if (upgrade_writer_init_memfd(w, UPGRADE_STATE_VERSION, hint) < 0) {
		perror("memfd");
		exit(1);
	}
	upgrade_writer_begin(w, UPGRADE_REC_SERVER);
	upgrade_writer_str(w, UPGRADE_SERVER_VERSION, "bench");
	upgrade_writer_u64(w, UPGRADE_SERVER_START_MS, 1);
	upgrade_writer_u64(w, UPGRADE_SERVER_UPGRADES, 0);
	upgrade_writer_end(w);
	/* One session per connection, processes spread over them. */
	for (unsigned long s = 0; s < k; s++) {
		snprintf(sid, sizeof(sid), "%08x-0000-4000-8000-000000000000", (unsigned)(s & 0xffffffffu));
		upgrade_writer_begin(w, UPGRADE_REC_SESSION);
		upgrade_writer_str(w, UPGRADE_SESSION_ID, sid);
		upgrade_writer_u64(w, UPGRADE_SESSION_EXPIRY_NS, 0);
		upgrade_writer_end(w);
	}
	for (unsigned long p = 0; p < n; p++) {
		char id[32];
		uint64_t seq = 1;

		snprintf(id, sizeof(id), "proc-%lu", p);
		upgrade_writer_begin(w, UPGRADE_REC_PROC);
		upgrade_writer_ref(w, UPGRADE_PROC_SESSION, 1 + (uint32_t)(p % k));
		upgrade_writer_bytes(w, UPGRADE_PROC_ID, id, strlen(id));
		upgrade_writer_u64(w, UPGRADE_PROC_PID, 1000 + p);
		upgrade_writer_fd(w, UPGRADE_PROC_OUT_FD, (int)(1000 + 2 * p));
		upgrade_writer_fd(w, UPGRADE_PROC_ERR_FD, (int)(1001 + 2 * p));
		upgrade_writer_u64(w, UPGRADE_PROC_NEXT_SEQ, 1 + (b + c - 1) / c);
		upgrade_writer_chunks_begin(w, UPGRADE_PROC_RETAINED);
		for (unsigned long off = 0; off < b; off += c)
			upgrade_writer_chunk(w, seq++, 0, data, (uint32_t)(b - off < c ? b - off : c));
		upgrade_writer_chunks_end(w);
		upgrade_writer_end(w);
	}
	for (unsigned long s = 0; s < k; s++) {
		upgrade_writer_begin(w, UPGRADE_REC_CONN);
		upgrade_writer_u64(w, UPGRADE_CONN_TRANSPORT, UPGRADE_CONN_WS);
		upgrade_writer_fd(w, UPGRADE_CONN_FD_IN, (int)(100 + s));
		upgrade_writer_ref(w, UPGRADE_CONN_SESSION, 1 + (uint32_t)s);
		if (q)
			upgrade_writer_bytes(w, UPGRADE_CONN_OUTPUT, data, q);
		upgrade_writer_end(w);
	}
	if (upgrade_writer_finish(w) < 0) {
		fprintf(stderr, "writer failed\n");
		exit(1);
	}
}

/*
 * Copies every chunk and queue out, as adopting them into the new server's
 * objects would (one allocation each). The copies are summed so that the
 * compiler cannot drop them.
 */
static volatile uint64_t sink;

static uint64_t copy_out(const struct upgrade_state *st)
{
	uint64_t bytes = 0;

	for (uint32_t i = 0; i < st->n_recs; i++) {
		const struct upgrade_field *f;
		struct upgrade_chunk ch;
		size_t off = 0;
		void *m;

		if (st->recs[i].kind == UPGRADE_REC_PROC) {
			f = upgrade_rec_field(st, i, UPGRADE_PROC_RETAINED);
			while (f && upgrade_chunks_next(f, &off, &ch)) {
				m = malloc(ch.len);
				memcpy(m, ch.data, ch.len);
				sink += ((volatile uint8_t *)m)[ch.len - 1];
				bytes += ch.len;
				free(m);
			}
		} else if (st->recs[i].kind == UPGRADE_REC_CONN) {
			f = upgrade_rec_field(st, i, UPGRADE_CONN_OUTPUT);
			if (f) {
				m = malloc(f->len);
				memcpy(m, f->val, f->len);
				sink += f->len ? ((volatile uint8_t *)m)[f->len - 1] : 0;
				bytes += f->len;
				free(m);
			}
		}
	}
	return bytes;
}

int main(int argc, char **argv)
{
	unsigned long n = arg(argc, argv, 1, 1000), b = arg(argc, argv, 2, 1 << 20),
		      c = arg(argc, argv, 3, 4096), k = arg(argc, argv, 4, 100),
		      q = arg(argc, argv, 5, 65536), rounds = arg(argc, argv, 6, 20);
	static const char *names[] = { "build", "store", "parse", "copy", "total" };
	uint64_t *t[5], size = 0;
	struct upgrade_limits lim;
	uint8_t *data;

	if (!n || !c || !k || !rounds || c > UINT32_MAX || b > (1ul << 20)) {
		fprintf(stderr, "usage: %s [N] [B<=1MiB] [C] [K>0] [Q] [ROUNDS]\n", argv[0]);
		return 2;
	}
	data = malloc(c > q ? c : q);
	memset(data, 'x', c > q ? c : q);
	for (int i = 0; i < 5; i++)
		t[i] = calloc(rounds, sizeof(uint64_t));
	upgrade_limits_default(&lim);
	for (unsigned long r = 0; r < rounds; r++) {
		struct upgrade_writer w;
		struct upgrade_state st;
		char err[256];
		uint64_t t0 = now_ns(), t1, t2, t3, t4;
		int fd;
		void *map;

		build(&w, n, b, c, k, q, data);
		t1 = now_ns();
		size = w.b.len;
		fd = upgrade_writer_seal(&w);
		upgrade_writer_done(&w);
		if (fd < 0) {
			fprintf(stderr, "seal: %s\n", strerror(-fd));
			return 1;
		}
		t2 = now_ns();
		map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (map == MAP_FAILED ||
		    upgrade_state_parse(map, size, &lim, &st, err, sizeof(err)) < 0) {
			fprintf(stderr, "parse: %s\n", map == MAP_FAILED ? strerror(errno) : err);
			return 1;
		}
		t3 = now_ns();
		if (copy_out(&st) < n * b)
			return 1;
		t4 = now_ns();
		upgrade_state_done(&st);
		munmap(map, size);
		close(fd);
		t[0][r] = t1 - t0;
		t[1][r] = t2 - t1;
		t[2][r] = t3 - t2;
		t[3][r] = t4 - t3;
		t[4][r] = t4 - t0;
	}
	for (int i = 0; i < 5; i++) {
		qsort(t[i], rounds, sizeof(uint64_t), cmp_u64);
		printf("{\"name\":\"upgrade_state_%s\",\"unit\":\"ms\",\"p50\":%.2f,\"p99\":%.2f,"
		       "\"rounds\":%lu,\"processes\":%lu,\"retained_bytes\":%lu,\"chunk_bytes\":%lu,"
		       "\"connections\":%lu,\"queued_bytes\":%lu,\"blob_bytes\":%llu}\n",
		       names[i], t[i][rounds / 2] / 1e6, t[i][(rounds * 99) / 100] / 1e6, rounds, n, b,
		       c, k, q, (unsigned long long)size);
		free(t[i]);
	}
	free(data);
	return 0;
}
