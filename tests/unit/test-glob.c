/* SPDX-License-Identifier: MIT */
/*
 * sandbox/glob.c: deny globs. Matching as ripgrep's --glob (a glob without
 * a slash matches the name at any depth, `**` spans directories, * ? [...]
 * stop at slashes, {a,b} alternates, dotfiles are not special), and the
 * expansion over a scratch tree: regular files only, symlinks never
 * followed, the scan depth, literal patterns, and each refusal (relative,
 * `/` prefix, scan off, too many alternatives, matches, entries, steps,
 * depth) with its text.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glob.h"
#include "tests.h"

TEST(match)
{
	static const struct {
		const char *glob, *rel;
		bool match;
	} cases[] = {
		/* no slash: the name, at any depth */
		{ "*.env", "a.env", true },
		{ "*.env", "sub/deep/c.env", true },
		{ "*.env", ".env", true }, /* dotfiles are not special */
		{ "*.env", "a.env.bak", false },
		{ "*.env", "x.env/inner", false },
		/* a slash: the whole path below the root, * ? [...] within one component */
		{ "keys/*.pem", "keys/k1.pem", true },
		{ "keys/*.pem", "keys/sub/k3.pem", false },
		{ "keys/*.pem", "other/keys/k1.pem", false },
		{ "/keys/*.pem", "keys/k1.pem", true }, /* a leading slash anchors the same */
		{ "*/x", "a/x", true },
		{ "*/x", "a/b/x", false },
		/* ** spans any number of directories, none included */
		{ "**/x", "x", true },
		{ "**/x", "a/b/x", true },
		{ "a/**/b", "a/b", true },
		{ "a/**/b", "a/x/y/b", true },
		{ "a/**/b", "a/x/c", false },
		{ "a/**/b", "z/a/b", false },
		/* single characters and classes */
		{ "?.txt", "a.txt", true },
		{ "?.txt", "ab.txt", false },
		{ "[ab].c", "b.c", true },
		{ "[ab].c", "c.c", false },
		{ "[!ab].c", "c.c", true },
		{ "[ab.c", "[ab.c", true }, /* an unclosed [ is literal */
		/* directories only, or nothing: never a file */
		{ "", "a", false },
		{ "dir/", "dir/a", false },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (sandbox_glob_match(cases[i].glob, cases[i].rel) != cases[i].match)
			tests_fail(__FILE__, __LINE__, "`%s` vs %s: expected %s", cases[i].glob,
				   cases[i].rel, cases[i].match ? "a match" : "no match");
}

/* ---- expansion over a scratch tree */

static char root[64];

static const char *const files[] = {
	"a.env", ".env", "keep.txt", "sub/b.env", "sub/deep/c.env", "keys/k1.pem", "keys/k2.key",
	"keys/sub/k3.pem", "keys/readme", "dir.env/inside.txt",
};

static void make_file(const char *rel)
{
	char p[PATH_MAX], *slash;
	int fd;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	for (slash = strchr(p + strlen(root) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = 0;
		mkdir(p, 0755);
		*slash = '/';
	}
	fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	ASSERT_TRUE(fd >= 0);
	close(fd);
}

static void make_tree(void)
{
	char p[PATH_MAX], t[PATH_MAX];

	snprintf(root, sizeof(root), "/tmp/uexec-test-glob-XXXXXX");
	ASSERT_TRUE(mkdtemp(root) != NULL);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		make_file(files[i]);
	/* a symlink to a matching file, and one to a directory of matches: neither followed */
	snprintf(p, sizeof(p), "%s/link.env", root);
	snprintf(t, sizeof(t), "%s/a.env", root);
	ASSERT_EQ(0, symlink(t, p));
	snprintf(p, sizeof(p), "%s/linked-dir", root);
	ASSERT_EQ(0, symlink("sub", p));
}

static void remove_tree(void)
{
	char cmd[PATH_MAX];

	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", root);
	ASSERT_EQ(0, system(cmd));
}

/* What an expansion reported: "rel rel ..." (sorted), literals as "=rel" or "=rel/". */
struct found {
	char *v[64];
	size_t n;
	int fail_at; /* add() answers -E2BIG at this match (0: never) */
};

static int add(void *ctx, const char *path)
{
	struct found *f = ctx;

	ASSERT_TRUE(strncmp(path, root, strlen(root)) == 0);
	if (f->fail_at && (int)f->n + 1 == f->fail_at)
		return -E2BIG;
	ASSERT_TRUE(f->n < 64);
	f->v[f->n++] = strdup(path + strlen(root) + 1);
	return 0;
}

static int add_literal(void *ctx, const char *path, bool is_dir)
{
	struct found *f = ctx;
	char s[PATH_MAX];

	snprintf(s, sizeof(s), "=%s%s", path + strlen(root) + 1, is_dir ? "/" : "");
	f->v[f->n++] = strdup(s);
	return 0;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static const char *joined(struct found *f)
{
	static char out[4096];
	size_t o = 0;

	qsort(f->v, f->n, sizeof(f->v[0]), cmp);
	out[0] = 0;
	for (size_t i = 0; i < f->n; i++) {
		o += (size_t)snprintf(out + o, sizeof(out) - o, "%s%s", i ? " " : "", f->v[i]);
		free(f->v[i]);
	}
	f->n = 0;
	return out;
}

/* Expands root + "/" + tail; returns the status, *found what was reported. */
static int expand(const char *tail, long max_depth, struct sandbox_glob_budget *budget,
		  struct found *f, char *err, size_t errsz)
{
	struct sandbox_glob_out out = { f, add, add_literal };
	struct sandbox_glob_budget fresh = { 0 };
	char pattern[PATH_MAX];

	snprintf(pattern, sizeof(pattern), "%s/%s", root, tail);
	err[0] = 0;
	return sandbox_glob_expand(pattern, max_depth, budget ? budget : &fresh, &out, err, errsz);
}

TEST(expand)
{
	static const struct {
		const char *tail;
		long max_depth;
		const char *want;
	} cases[] = {
		{ "*.env", -1, ".env a.env sub/b.env sub/deep/c.env" },
		{ "**/*.env", -1, ".env a.env sub/b.env sub/deep/c.env" },
		{ "*.env", 1, ".env a.env" }, /* the root's own entries only */
		{ "*.env", 2, ".env a.env sub/b.env" },
		{ "keys/*.{pem,key}", -1, "keys/k1.pem keys/k2.key keys/sub/k3.pem" },
		{ "keys/{*.pem,readme}", -1, "keys/k1.pem keys/readme keys/sub/k3.pem" },
		{ "sub/*/c.env", -1, "sub/deep/c.env" },
		{ "sub/**/*.env", -1, "sub/b.env sub/deep/c.env" },
		{ "*.txt", -1, "dir.env/inside.txt keep.txt" },
		{ "nope/*.env", -1, "" }, /* a missing root matches nothing */
		{ "keep.txt/*.env", -1, "" },
		/* no wildcard: the path itself, if it exists and is no symlink */
		{ "keep.txt", -1, "=keep.txt" },
		{ "sub", -1, "=sub/" },
		{ "missing", -1, "" },
		{ "link.env", -1, "" },
	};
	struct found f = { 0 };
	char err[512];

	make_tree();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = expand(cases[i].tail, cases[i].max_depth, NULL, &f, err, sizeof(err));
		const char *got = joined(&f);

		if (r != 0 || strcmp(got, cases[i].want) != 0)
			tests_fail(__FILE__, __LINE__, "`%s` (depth %ld): got %d \"%s\" (%s), wanted \"%s\"",
				   cases[i].tail, cases[i].max_depth, r, got, err, cases[i].want);
	}
	remove_tree();
}

TEST(refusals)
{
	struct sandbox_glob_budget spent = { 0 };
	struct found f = { 0 };
	char err[512], want[512], pattern[128];
	int r;

	make_tree();
	snprintf(pattern, sizeof(pattern), "%s/*.env", root);
	ASSERT_EQ(-EINVAL, sandbox_glob_expand("x/*.env", -1, &spent,
					       &(struct sandbox_glob_out){ &f, add, add_literal }, err,
					       sizeof(err)));
	ASSERT_STREQ("deny glob `x/*.env`: a relative pattern and no cwd to resolve it against", err);
	ASSERT_EQ(-EINVAL, sandbox_glob_expand("/*.env", -1, &spent,
					       &(struct sandbox_glob_out){ &f, add, add_literal }, err,
					       sizeof(err)));
	ASSERT_TRUE(strstr(err, "deny glob `/*.env`: its static prefix is `/`") == err);
	ASSERT_EQ(-EINVAL, expand("*.env", 0, NULL, &f, err, sizeof(err)));
	snprintf(want, sizeof(want),
		 "deny glob `%s`: glob_scan_max_depth 0 turns the scan off, so nothing it matches "
		 "could be hidden",
		 pattern);
	ASSERT_STREQ(want, err);
	/* 2^7 alternatives; 2^6 are fine (braces alone are no wildcard: a literal path) */
	ASSERT_EQ(-E2BIG, expand("*{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}", -1, NULL, &f, err, sizeof(err)));
	ASSERT_TRUE(strstr(err, ": more than 64 {a,b} alternatives") != NULL);
	ASSERT_EQ(0, expand("*{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}", -1, NULL, &f, err, sizeof(err)));
	ASSERT_EQ(0, expand("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}", -1, NULL, &f, err, sizeof(err)));
	/* too many matches (the caller counts them) */
	f.fail_at = 2;
	ASSERT_EQ(-E2BIG, expand("*.env", -1, NULL, &f, err, sizeof(err)));
	snprintf(want, sizeof(want), "deny glob `%s`: matched more than 8192 files (the reference's limit)",
		 pattern);
	ASSERT_STREQ(want, err);
	f.fail_at = 0;
	joined(&f);
	/* the plan's entry budget, shared by its patterns */
	spent.entries = SANDBOX_GLOB_MAX_ENTRIES;
	r = expand("*.env", -1, &spent, &f, err, sizeof(err));
	ASSERT_EQ(-E2BIG, r);
	ASSERT_TRUE(strstr(err, "passed 262144 entries (the limit)") != NULL);
	/* the plan's matching steps */
	spent = (struct sandbox_glob_budget){ .steps = SANDBOX_GLOB_MAX_STEPS + 1 };
	ASSERT_EQ(-E2BIG, expand("*.env", -1, &spent, &f, err, sizeof(err)));
	ASSERT_TRUE(strstr(err, "took more than 16777216 steps (the limit)") != NULL);
	/* what one scan spends is added to the budget */
	spent = (struct sandbox_glob_budget){ 0 };
	ASSERT_EQ(0, expand("*.env", -1, &spent, &f, err, sizeof(err)));
	ASSERT_EQ(17, spent.entries); /* every entry of the tree, symlinks included (not followed) */
	ASSERT_TRUE(spent.steps > 0);
	joined(&f);
	remove_tree();
}

TEST(depth_limit)
{
	struct found f = { 0 };
	char rel[PATH_MAX] = "", err[512];

	make_tree();
	for (int i = 0; i < SANDBOX_GLOB_MAX_DEPTH; i++)
		strcat(rel, "d/");
	strcat(rel, "deep.env");
	make_file(rel);
	ASSERT_EQ(-E2BIG, expand("*.env", -1, NULL, &f, err, sizeof(err)));
	ASSERT_TRUE(strstr(err, "is deeper than 64 directories below") != NULL);
	ASSERT_TRUE(strstr(err, ": set glob_scan_max_depth") != NULL);
	joined(&f);
	/* a scan depth below the limit never gets there */
	ASSERT_EQ(0, expand("*.env", 10, NULL, &f, err, sizeof(err)));
	ASSERT_STREQ(".env a.env sub/b.env sub/deep/c.env", joined(&f));
	remove_tree();
}

TEST_MAIN()
