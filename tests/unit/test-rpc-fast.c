/* SPDX-License-Identifier: MIT */
/*
 * The JSON hot path (proto/jsonrpc-fast.c, src/rpc/rpc-fast.c,
 * src/exec/rpc-process-fast.c, proc-wire.c) answers byte for byte as the
 * general path (jrpc_parse, params decoding, jansson replies): every frame of
 * the jsonrpc fuzz corpora, and generated process requests in the shapes a
 * client may send (whitespace, key order, escapes, duplicate keys, big and
 * odd numbers, unknown fields, wrong types, unknown processes, every
 * fixture's state), go through both paths against the same processes
 * (fuzz/fast-diff.c); the replies, notifications, signals, stdin bytes and
 * counters must be equal. And the hot path must actually take the common
 * requests (the real client's shapes).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fast-diff.h"
#include "jsonrpc-fast.h"
#include "tests.h"

#define CODEX_ID "69986-8b64557e-1d85-4ba5-97c3-976fe09ad5fb"

static bool inited;

static void init(void)
{
	if (!inited)
		fast_diff_init();
	inited = true;
}

/* One frame through both paths; returns whether the hot path took it. */
static bool check1(const char *frame)
{
	size_t len = strlen(frame);
	unsigned taken = 0;

	if (!fast_diff_run(&frame, &len, 1, &taken))
		tests_fail(__FILE__, __LINE__, "paths differ for %s", frame);
	return taken == 1;
}

static unsigned checkn(const char *const *frames, size_t n)
{
	size_t lens[8];
	unsigned taken = 0;

	for (size_t i = 0; i < n; i++)
		lens[i] = strlen(frames[i]);
	if (!fast_diff_run(frames, lens, n, &taken))
		tests_fail(__FILE__, __LINE__, "paths differ for the sequence starting %s", frames[0]);
	return taken;
}

TEST(decoder_subset)
{
	struct jrpc_fast_req r;
	static const char *const taken[] = {
		"{\"id\":1,\"method\":\"process/read\",\"params\":{\"processId\":\"p\"}}",
		" {\n\t\"params\" : { \"processId\" : \"p\" , \"afterSeq\" : null } ,\"method\":\"m\",\"id\":\"x\"}\r\n",
		"{\"jsonrpc\":\"2.0\",\"id\":-7,\"method\":\"m\",\"params\":{}}",
		"{\"id\":999999999999999999,\"method\":\"m\",\"params\":{\"a\":true,\"b\":false,\"c\":0}}",
	};
	static const char *const declined[] = {
		"{\"id\":1,\"method\":\"m\"}",                                  /* no params */
		"{\"id\":1,\"method\":\"m\",\"params\":[]}",                    /* params not an object */
		"{\"id\":1,\"method\":\"m\",\"params\":{\"a\":{}}}",            /* nested */
		"{\"id\":1,\"method\":\"m\",\"params\":{\"a\":1,\"a\":2}}",     /* repeated key */
		"{\"id\":1,\"id\":2,\"method\":\"m\",\"params\":{}}",           /* repeated key */
		"{\"id\":1,\"method\":\"m\",\"params\":{},\"x\":1}",            /* unknown member */
		"{\"id\":1,\"method\":\"m\",\"params\":{\"a\":\"\\n\"}}",       /* an escape */
		"{\"id\":1,\"method\":\"m\",\"params\":{\"a\":\"\xc3\xa9\"}}",  /* not ASCII */
		"{\"id\":1,\"method\":\"m\",\"params\":{\"\\u0061\":1}}",       /* escaped key */
		"{\"id\":1,\"method\":\"m\",\"params\":{\"a\":-1}}",            /* negative */
		"{\"id\":1,\"method\":\"m\",\"params\":{\"a\":1.0}}",           /* float */
		"{\"id\":1,\"method\":\"m\",\"params\":{\"a\":1e2}}",           /* exponent */
		"{\"id\":1,\"method\":\"m\",\"params\":{\"a\":01}}",            /* leading zero */
		"{\"id\":1,\"method\":\"m\",\"params\":{\"a\":1234567890123456789}}", /* 19 digits */
		"{\"id\":-0,\"method\":\"m\",\"params\":{}}",                   /* -0 */
		"{\"id\":1.5,\"method\":\"m\",\"params\":{}}",
		"{\"id\":null,\"method\":\"m\",\"params\":{}}",
		"{\"method\":\"m\",\"params\":{}}",                             /* a notification */
		"{\"id\":1,\"method\":\"m\",\"params\":{}} x",                  /* trailing bytes */
		"{\"id\":1,\"method\":\"m\",\"params\":{},}",                   /* trailing comma */
		"\xef\xbb\xbf{\"id\":1,\"method\":\"m\",\"params\":{}}",        /* a BOM */
		"{\"id\":1,\"method\":\"m\",\"params\":{\"a\":tru}}",
		"{\"id\":1,\"method\":\"m\",\"params\":{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,\"i\":9}}",
		"{\"id\":1,\"method\":\"m\",\"params\":{\"a\":1}",
	};

	for (size_t i = 0; i < sizeof(taken) / sizeof(taken[0]); i++) {
		if (!jrpc_fast_parse(taken[i], strlen(taken[i]), 128, &r))
			tests_fail(__FILE__, __LINE__, "declined: %s", taken[i]);
		ASSERT_TRUE(!jrpc_fast_parse(taken[i], strlen(taken[i]), 2, &r));
	}
	for (size_t i = 0; i < sizeof(declined) / sizeof(declined[0]); i++)
		if (jrpc_fast_parse(declined[i], strlen(declined[i]), 128, &r))
			tests_fail(__FILE__, __LINE__, "taken: %s", declined[i]);

	ASSERT_TRUE(jrpc_fast_parse(taken[1], strlen(taken[1]), 3, &r));
	ASSERT_TRUE(r.id_is_string);
	ASSERT_EQ(3, r.id_json_len);
	ASSERT_MEMEQ("\"x\"", r.id_json, 3);
	ASSERT_EQ(2, r.n_params);
	ASSERT_EQ(JRPC_FAST_NULL, jrpc_fast_param(&r, "afterSeq")->type);
	ASSERT_TRUE(jrpc_fast_parse(taken[2], strlen(taken[2]), 3, &r));
	ASSERT_EQ(-7, r.id_int);
	ASSERT_EQ(2, r.id_json_len);
	ASSERT_MEMEQ("-7", r.id_json, 2);
	ASSERT_TRUE(jrpc_fast_parse(taken[3], strlen(taken[3]), 3, &r));
	ASSERT_EQ(999999999999999999LL, r.id_int);
	ASSERT_EQ(JRPC_FAST_TRUE, jrpc_fast_param(&r, "a")->type);
	ASSERT_EQ(JRPC_FAST_FALSE, jrpc_fast_param(&r, "b")->type);
	ASSERT_EQ(JRPC_FAST_UINT, jrpc_fast_param(&r, "c")->type);
	ASSERT_TRUE(jrpc_fast_param(&r, "d") == NULL);
}

/* Every file of a corpus directory, as one frame, then split at NULs (the fuzz target's form). */
static unsigned corpus(const char *dir, unsigned *ret_files)
{
	struct dirent **ents;
	unsigned taken_total = 0;
	int n = scandir(dir, &ents, NULL, alphasort);

	if (n < 0)
		tests_fail(__FILE__, __LINE__, "cannot read %s", dir);
	*ret_files = 0;
	for (int i = 0; i < n; i++) {
		char path[4096], *data = NULL;
		const char *frames[4];
		size_t lens[4], len = 0, nf = 0, start = 0;
		unsigned taken = 0;
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
		if (ents[i]->d_name[0] == '.' || !(f = fopen(path, "rbe"))) {
			free(ents[i]);
			continue;
		}
		free(ents[i]);
		if (fseek(f, 0, SEEK_END) == 0 && ftell(f) >= 0) {
			len = (size_t)ftell(f);
			rewind(f);
			data = malloc(len + 1);
			if (data && fread(data, 1, len, f) != len) {
				free(data);
				data = NULL;
			}
		}
		fclose(f);
		if (!data)
			continue;
		/* As a whole frame (the jsonrpc corpus' form). */
		frames[0] = data;
		lens[0] = len;
		if (!fast_diff_run(frames, lens, 1, &taken))
			tests_fail(__FILE__, __LINE__, "paths differ for %s", path);
		taken_total += taken;
		/* Split at NULs, up to four frames (fuzz-jsonrpc-fast's form). */
		for (size_t k = 0; k <= len && nf < 4; k++)
			if (k == len || data[k] == 0) {
				frames[nf] = data + start;
				lens[nf++] = k - start;
				start = k + 1;
			}
		if (nf > 1 && !fast_diff_run(frames, lens, nf, &taken))
			tests_fail(__FILE__, __LINE__, "paths differ for %s (split)", path);
		if (nf > 1)
			taken_total += taken;
		free(data);
		(*ret_files)++;
	}
	free(ents);
	return taken_total;
}

TEST(corpus_jsonrpc)
{
	unsigned files;

	init();
	corpus(FUZZ_CORPUS_DIR "/jsonrpc", &files);
	printf("# %u files of fuzz/corpus/jsonrpc: both paths agree\n", files);
	ASSERT_TRUE(files > 100);
}

TEST(corpus_jsonrpc_fast)
{
	unsigned files, taken;

	init();
	taken = corpus(FUZZ_CORPUS_DIR "/jsonrpc-fast", &files);
	printf("# %u files of fuzz/corpus/jsonrpc-fast, %u frames taken by the hot path: both paths agree\n",
	       files, taken);
	ASSERT_TRUE(files >= 20);
	ASSERT_TRUE(taken >= 10);
}

/* ---- generated requests ---- */

static const char *const pids[] = {
	"\"proc-1\"", "\"" CODEX_ID "\"", "\"nostdin\"", "\"done\"", "\"a/b c\"", "\"\"",
	"\"missing\"", "\"\\u00e9\\n\\\"\"", "\"nu\\u0000l\"", "\"proc\\u002d1\"", "\"\\u0070roc-1\"",
	"1", "null", "[\"proc-1\"]",
};

static const char *const read_params[] = {
	"", ",\"afterSeq\":0", ",\"afterSeq\":2", ",\"afterSeq\":null", ",\"afterSeq\":4",
	",\"afterSeq\":99", ",\"maxBytes\":0", ",\"maxBytes\":9", ",\"maxBytes\":10",
	",\"maxBytes\":18", ",\"maxBytes\":20", ",\"maxBytes\":null", ",\"waitMs\":0",
	",\"waitMs\":50", ",\"afterSeq\":4,\"waitMs\":1000", ",\"afterSeq\":9,\"waitMs\":5,\"maxBytes\":1",
	",\"waitMs\":null,\"afterSeq\":1,\"maxBytes\":7", ",\"afterSeq\":-1", ",\"afterSeq\":1.0",
	",\"afterSeq\":\"1\"", ",\"afterSeq\":18446744073709551615", ",\"afterSeq\":9223372036854775808",
	",\"afterSeq\":9223372036854775807", ",\"afterSeq\":99999999999999999999",
	",\"afterSeq\":1e2", ",\"afterSeq\":-0", ",\"maxBytes\":true", ",\"unknown\":1",
	",\"afterSeq\":1,\"afterSeq\":2", ",\"waitMs\":{}", ",\"maxBytes\":[]",
	",\"afterSeq\":123456789012345678", ",\"processId\":\"proc-1\"",
};

static const char *const write_params[] = {
	",\"chunk\":\"aGk=\",\"writeId\":\"1\"", ",\"chunk\":\"\",\"writeId\":\"2\"",
	",\"chunk\":\"!!!!\",\"writeId\":\"1\"", ",\"chunk\":\"aGk\",\"writeId\":\"1\"",
	",\"chunk\":\"aGk=\",\"writeId\":\"\"", ",\"chunk\":\"aGk=\"", ",\"chunk\":\"aGk=\",\"writeId\":null",
	",\"chunk\":\"aGk=\",\"writeId\":5", ",\"chunk\":null,\"writeId\":\"1\"", ",\"writeId\":\"1\"",
	",\"chunk\":\"aGk\\u003d\",\"writeId\":\"1\"", ",\"chunk\":\"aGk=\",\"writeId\":\"\\u0031\"",
	",\"writeId\":\"7\",\"chunk\":\"bjU3MDYwMjA5Cg==\"",
	",\"chunk\":\"aGk=\",\"writeId\":\"0123456789012345678901234567890123456789012345678901234567890123456789\"",
	",\"chunk\":\"aGk=\",\"writeId\":\"1\",\"extra\":true",
	",\"chunk\":\"aGk=\",\"writeId\":\"1\",\"chunk\":\"aGk=\"",
	",\"chunk\":\"/+/+\",\"writeId\":\"x y\"", ",\"chunk\":\"aGk=\",\"writeId\":[]",
};

static const char *const signal_params[] = {
	",\"signal\":\"interrupt\"", ",\"signal\":\"Interrupt\"", ",\"signal\":{\"interrupt\":null}",
	",\"signal\":2", ",\"signal\":null", "", ",\"signal\":\"interrupt\",\"x\":1",
	",\"signal\":\"\\u0069nterrupt\"", ",\"signal\":{\"interrupt\":1}", ",\"signal\":\"kill\"",
};

static const char *const terminate_params[] = {
	"", ",\"x\":null", ",\"processId\":\"done\"", ",\"running\":true",
};

static const struct {
	const char *method;
	const char *const *params;
	size_t n;
} methods[] = {
	{ "process/read", read_params, sizeof(read_params) / sizeof(read_params[0]) },
	{ "process/write", write_params, sizeof(write_params) / sizeof(write_params[0]) },
	{ "process/signal", signal_params, sizeof(signal_params) / sizeof(signal_params[0]) },
	{ "process/terminate", terminate_params, sizeof(terminate_params) / sizeof(terminate_params[0]) },
};

TEST(generated_requests)
{
	unsigned n = 0, taken = 0;
	char frame[1024];

	init();
	for (size_t m = 0; m < sizeof(methods) / sizeof(methods[0]); m++)
		for (size_t p = 0; p < sizeof(pids) / sizeof(pids[0]); p++)
			for (size_t k = 0; k < methods[m].n; k++) {
				snprintf(frame, sizeof(frame),
					 "{\"id\":%u,\"method\":\"%s\",\"params\":{\"processId\":%s%s}}",
					 n + 1, methods[m].method, pids[p], methods[m].params[k]);
				taken += check1(frame);
				n++;
			}
	printf("# %u generated requests, %u taken by the hot path: both paths agree\n", n, taken);
	ASSERT_TRUE(taken >= 100);
}

TEST(envelopes)
{
	static const char *const ids[] = {
		"0", "-5", "123456789012345678", "-123456789012345678", "1234567890123456789",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808",
		"-9223372036854775809", "18446744073709551616", "-0", "1.5", "1e3", "\"abc\"",
		"\"a\\\"b\"", "\"\"", "\"\\u0000\"", "\"\xc3\xa9\"", "null", "true", "[1]", "{}",
		"\"a/b\"", "\"~\x7f\"",
	};
	static const char *const shapes[] = {
		/* %s: the id */
		"{\"id\":%s,\"method\":\"process/terminate\",\"params\":{\"processId\":\"proc-1\"}}",
		"{\"method\":\"process/terminate\",\"params\":{\"processId\":\"proc-1\"},\"id\":%s}",
		"{\"params\":{\"processId\":\"proc-1\"},\"id\":%s,\"method\":\"process/terminate\"}",
		" \t\r\n{ \"id\" :\n%s , \"method\" : \"process/terminate\" , \"params\" : { \"processId\" : \"proc-1\" } }\n ",
		"{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"process/terminate\",\"params\":{\"processId\":\"proc-1\"}}",
		"{\"jsonrpc\":2,\"id\":%s,\"method\":\"process/terminate\",\"params\":{\"processId\":\"proc-1\"}}",
		"{\"id\":%s,\"id\":1,\"method\":\"process/terminate\",\"params\":{\"processId\":\"proc-1\"}}",
		"{\"id\":%s,\"method\":\"process/terminate\",\"params\":{\"processId\":\"proc-1\"},\"extra\":{}}",
		"{\"id\":%s,\"method\":\"process/terminate\",\"params\":{\"processId\":\"proc-1\"},\"result\":1}",
		"{\"id\":%s,\"method\":\"process/terminate\"}",
		"{\"id\":%s,\"method\":\"process/terminate\",\"params\":null}",
		"{\"id\":%s,\"method\":\"process/terminate\",\"params\":[\"proc-1\"]}",
		"{\"id\":%s,\"method\":\"process/terminate\",\"params\":{\"processId\":\"proc-1\"}} x",
		"{\"id\":%s,\"method\":\"process/terminate\",\"params\":{\"processId\":\"proc-1\"}",
		"{\"id\":%s,\"method\":\"process\\/terminate\",\"params\":{\"processId\":\"proc-1\"}}",
		"{\"id\":%s,\"method\":\"process/Terminate\",\"params\":{\"processId\":\"proc-1\"}}",
		"{\"id\":%s,\"method\":\"process/signal\",\"params\":{\"signal\":\"interrupt\",\"processId\":\"a/b c\"}}",
		"{\"id\":%s,\"method\":\"process/read\",\"params\":{\"waitMs\":0,\"afterSeq\":1,\"processId\":\"proc-1\",\"maxBytes\":6}}",
		"{\"id\":%s,\"method\":\"process/write\",\"params\":{\"writeId\":\"9\",\"processId\":\"proc-1\",\"chunk\":\"bjU3MDYwMjA5Cg==\"}}",
		"{\"id\":%s,\"method\":\"process/list\",\"params\":{}}",
		"{\"id\":%s,\"method\":\"initialize\",\"params\":{\"clientName\":\"x\"}}",
		"{\"id\":%s,\"method\":\"process/start\",\"params\":{\"processId\":\"proc-1\"}}",
		"{\"id\":%s,\"method\":\"fs/readFile\",\"params\":{}}",
	};
	char frame[1024];
	unsigned n = 0, taken = 0;

	init();
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
		for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
			const char *at = strstr(shapes[s], "%s");

			/* The shape with the id in place of its %s. */
			snprintf(frame, sizeof(frame), "%.*s%s%s", (int)(at - shapes[s]), shapes[s], ids[i],
				 at + 2);
			taken += check1(frame);
			n++;
		}
	printf("# %u envelopes, %u taken by the hot path: both paths agree\n", n, taken);
	ASSERT_TRUE(taken > 0);
}

TEST(sequences)
{
	static const char *const retry[] = {
		"{\"id\":1,\"method\":\"process/write\",\"params\":{\"processId\":\"proc-1\",\"chunk\":\"YQ==\",\"writeId\":\"1\"}}",
		"{\"id\":2,\"method\":\"process/write\",\"params\":{\"processId\":\"proc-1\",\"chunk\":\"Yg==\",\"writeId\":\"1\"}}",
		"{\"id\":3,\"method\":\"process/write\",\"params\":{\"processId\":\"proc-1\",\"chunk\":\"Yw==\",\"writeId\":\"2\"}}",
		"{\"id\":4,\"method\":\"process/write\",\"params\":{\"processId\":\"proc-1\",\"chunk\":\"ZA==\",\"writeId\":\"\\u0032\"}}",
	};
	static const char *const polls[] = {
		"{\"id\":1,\"method\":\"process/read\",\"params\":{\"processId\":\"proc-1\",\"afterSeq\":4,\"waitMs\":1000}}",
		"{\"id\":\"b\",\"method\":\"process/read\",\"params\":{\"processId\":\"nostdin\",\"waitMs\":1000}}",
		"{\"id\":3,\"method\":\"process/read\",\"params\":{\"processId\":\"proc-1\",\"afterSeq\":9,\"waitMs\":10}}",
		"{\"id\":4,\"method\":\"process/read\",\"params\":{\"processId\":\"proc-1\",\"afterSeq\":4,\"waitMs\":5,\"maxBytes\":0}}",
	};
	static const char *const mixed[] = {
		"{\"id\":1,\"method\":\"process/read\",\"params\":{\"processId\":\"proc-1\",\"afterSeq\":4,\"waitMs\":1000}}",
		"{\"id\":2,\"method\":\"process/read\",\"params\":{\"processId\":\"proc-1\",\"afterSeq\":4,\"waitMs\":1000,\"x\":0}}",
		"{\"id\":3,\"method\":\"process/terminate\",\"params\":{\"processId\":\"proc-1\"}}",
		"{\"method\":\"bogus\"}",
	};
	static const char *const tty[] = {
		"{\"id\":1,\"method\":\"process/write\",\"params\":{\"processId\":\"a/b c\",\"chunk\":\"bHMK\",\"writeId\":\"1\"}}",
		"{\"id\":2,\"method\":\"process/write\",\"params\":{\"processId\":\"" CODEX_ID "\",\"chunk\":\"bHMK\",\"writeId\":\"1\"}}",
		"{\"id\":3,\"method\":\"process/write\",\"params\":{\"processId\":\"done\",\"chunk\":\"bHMK\",\"writeId\":\"1\"}}",
		"{\"id\":4,\"method\":\"process/write\",\"params\":{\"processId\":\"nostdin\",\"chunk\":\"bHMK\",\"writeId\":\"1\"}}",
	};

	init();
	ASSERT_EQ(4, checkn(retry, 4) + 1); /* the \u0032 writeId goes the general way */
	ASSERT_EQ(4, checkn(polls, 4));
	ASSERT_EQ(2, checkn(mixed, 4));
	ASSERT_EQ(4, checkn(tty, 4));
}

/*
 * The edge of the subset: every single-byte deletion, duplication and
 * substitution (bytes that matter to JSON) of requests the hot path takes.
 */
TEST(mutations)
{
	static const char *const bases[] = {
		"{\"id\":12,\"method\":\"process/read\",\"params\":{\"processId\":\"proc-1\",\"afterSeq\":1,\"maxBytes\":9,\"waitMs\":0}}",
		"{\"id\":\"w\",\"method\":\"process/write\",\"params\":{\"processId\":\"proc-1\",\"chunk\":\"aGk=\",\"writeId\":\"1\"}}",
		"{\"id\":3,\"method\":\"process/signal\",\"params\":{\"processId\":\"proc-1\",\"signal\":\"interrupt\"}}",
		"{\"id\":-4,\"method\":\"process/terminate\",\"params\":{\"processId\":\"done\"}}",
		"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"process/read\",\"params\":{\"processId\":\"nostdin\",\"waitMs\":7,\"afterSeq\":null}}",
	};
	static const char subst[] = { ' ', '"', '\\', '0', '9', '-', '.', 'e', '}', ']', ',', ':', 'n', '\x01', '\x7f', (char)0xc3 };
	unsigned n = 0, taken = 0;
	char frame[512];

	init();
	for (size_t b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
		size_t len = strlen(bases[b]);

		ASSERT_TRUE(check1(bases[b]));
		for (size_t i = 0; i < len; i++) {
			/* deletion */
			snprintf(frame, sizeof(frame), "%.*s%s", (int)i, bases[b], bases[b] + i + 1);
			taken += check1(frame);
			/* duplication */
			snprintf(frame, sizeof(frame), "%.*s%s", (int)i + 1, bases[b], bases[b] + i);
			taken += check1(frame);
			n += 2;
			for (size_t k = 0; k < sizeof(subst); k++) {
				if (bases[b][i] == subst[k])
					continue;
				snprintf(frame, sizeof(frame), "%.*s%c%s", (int)i, bases[b], subst[k],
					 bases[b] + i + 1);
				taken += check1(frame);
				n++;
			}
		}
	}
	printf("# %u mutated requests, %u taken by the hot path: both paths agree\n", n, taken);
	ASSERT_TRUE(taken > 0);
}

TEST(notifications)
{
	init();
	ASSERT_TRUE(fast_diff_notifications());
}

TEST_MAIN()
