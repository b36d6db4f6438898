/* SPDX-License-Identifier: MIT */
/* Shared helpers of the bench programs: latency samples and JSON-line output. */
#pragma once

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct samples {
	uint64_t *v;
	size_t n, cap;
};

static inline void samples_add(struct samples *s, uint64_t ns)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 1024;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		if (!s->v)
			abort();
	}
	s->v[s->n++] = ns;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Percentile (0..100) in milliseconds; sorts the samples. */
static inline double samples_pct_ms(struct samples *s, double pct)
{
	if (!s->n)
		return -1;
	qsort(s->v, s->n, sizeof(*s->v), cmp_u64);
	size_t i = (size_t)(pct / 100.0 * (double)(s->n - 1) + 0.5);
	if (i >= s->n)
		i = s->n - 1;
	return (double)s->v[i] / 1e6;
}

static inline void emit(const char *name, const char *unit, double value, unsigned long long iters)
{
	printf("{\"name\":\"%s\",\"unit\":\"%s\",\"value\":%.6g,\"iters\":%llu}\n", name, unit, value, iters);
	fflush(stdout);
}

/* Emits name_p50 and name_p99 in ms. */
static inline void emit_lat(const char *name, struct samples *s)
{
	char buf[160];
	if (!s->n)
		return;
	snprintf(buf, sizeof(buf), "%s_p50", name);
	emit(buf, "ms", samples_pct_ms(s, 50), s->n);
	snprintf(buf, sizeof(buf), "%s_p99", name);
	emit(buf, "ms", samples_pct_ms(s, 99), s->n);
}

static inline uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* "--key value" lookup in argv; returns def when absent. */
static inline const char *opt_str(int argc, char **argv, const char *key, const char *def)
{
	for (int i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], key) == 0)
			return argv[i + 1];
	return def;
}

static inline double opt_num(int argc, char **argv, const char *key, double def)
{
	const char *s = opt_str(argc, argv, key, NULL);
	return s ? strtod(s, NULL) : def;
}

static inline int opt_flag(int argc, char **argv, const char *key)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], key) == 0)
			return 1;
	return 0;
}
