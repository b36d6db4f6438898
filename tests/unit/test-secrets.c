/* SPDX-License-Identifier: MIT */
/*
 * src/server/secrets.c: the server's secret files by identity. The clock is
 * the caller's, so the tests say when a second has passed: within it the
 * cache answers without a stat (a file swapped in by rename is not seen),
 * from it on the paths are stat'ed again. Where the set cannot be known
 * (a path stat fails on, more files than it holds, a path list known to be
 * incomplete) every file counts (fail closed).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "secrets.h"
#include "tests.h"

#define SEC 1000000000ull
#define T0 (5 * SEC) /* any CLOCK_MONOTONIC value but 0 ("no pass yet") */

static char dir[64];

static void mkdirs(void)
{
	snprintf(dir, sizeof(dir), "/tmp/uexec-test-secrets-%d", (int)getpid());
	(void)mkdir(dir, 0700);
}

/* dir/name holding name, returned as a malloc'ed path; its identity in *st. */
static char *make(const char *name, struct stat *st)
{
	char *p;
	int fd;

	ASSERT_TRUE(asprintf(&p, "%s/%s", dir, name) > 0);
	fd = open(p, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ((ssize_t)strlen(name), write(fd, name, strlen(name)));
	close(fd);
	if (st)
		ASSERT_EQ(0, stat(p, st));
	return p;
}

static bool has(const struct secret_ids *ids, const struct stat *st)
{
	return server_secret_ids_has(ids, st->st_dev, st->st_ino);
}

static void cleanup(char **paths, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unlink(paths[i]);
		free(paths[i]);
	}
	rmdir(dir);
}

TEST(identities_of_existing_files)
{
	struct secret_cache c = { 0 };
	struct stat a, b, other;
	char *paths[3];
	char *o;

	mkdirs();
	paths[0] = make("a", &a);
	paths[1] = make("b", &b);
	ASSERT_TRUE(asprintf(&paths[2], "%s/missing", dir) > 0); /* a name that is gone: skipped */
	o = make("other", &other);
	server_secret_cache_refresh(&c, paths, 3, T0);
	ASSERT_TRUE(!c.ids.all);
	ASSERT_EQ(2, c.ids.n);
	ASSERT_TRUE(has(&c.ids, &a) && has(&c.ids, &b));
	ASSERT_TRUE(!has(&c.ids, &other));
	unlink(o);
	free(o);
	cleanup(paths, 3);
}

TEST(cached_for_a_second_then_stated_again)
{
	struct secret_cache c = { 0 };
	struct stat old, rotated, st;
	const struct secret_ids *ids;
	char *paths[1], *next, *keep;

	mkdirs();
	paths[0] = make("token", &old);
	/* the first use makes the first pass */
	ids = server_secret_cache_get(&c, paths, 1, T0);
	ASSERT_TRUE(has(ids, &old));
	/* rotated by rename: a new inode at the same name, the old one kept open nowhere */
	next = make("token.new", &rotated);
	ASSERT_EQ(0, rename(next, paths[0]));
	free(next);
	ASSERT_EQ(0, stat(paths[0], &st));
	ASSERT_TRUE(st.st_ino == rotated.st_ino && st.st_ino != old.st_ino);
	/* within the second: no stat, the old identity still answers */
	ids = server_secret_cache_get(&c, paths, 1, T0 + SEC / 2);
	ASSERT_TRUE(has(ids, &old) && !has(ids, &rotated));
	ids = server_secret_cache_get(&c, paths, 1, T0 + SEC - 1);
	ASSERT_TRUE(!has(ids, &rotated));
	/* a second after the pass: stat'ed again, the new file is the secret */
	ids = server_secret_cache_get(&c, paths, 1, T0 + SEC);
	ASSERT_TRUE(has(ids, &rotated) && !has(ids, &old));
	ASSERT_EQ(T0 + SEC, c.taken_ns);
	/*
	 * An explicit refresh (start, SIGHUP) is taken whatever the clock says
	 * (the replaced file kept by another name: its inode number is not
	 * reused for the new one).
	 */
	ASSERT_TRUE(asprintf(&keep, "%s/kept", dir) > 0);
	ASSERT_EQ(0, link(paths[0], keep));
	next = make("token.new", &old);
	ASSERT_EQ(0, rename(next, paths[0]));
	free(next);
	server_secret_cache_refresh(&c, paths, 1, T0 + SEC + 1);
	ASSERT_TRUE(has(&c.ids, &old) && !has(&c.ids, &rotated));
	unlink(keep);
	free(keep);
	cleanup(paths, 1);
}

TEST(unstatable_path_fails_closed)
{
	struct secret_cache c = { 0 };
	struct stat a, any;
	char *paths[2], *o;

	mkdirs();
	paths[0] = make("a", &a);
	/* a link to itself: stat fails with ELOOP, so what is there cannot be known */
	ASSERT_TRUE(asprintf(&paths[1], "%s/loop", dir) > 0);
	ASSERT_EQ(0, symlink(paths[1], paths[1]));
	o = make("unrelated", &any);
	server_secret_cache_refresh(&c, paths, 2, T0);
	ASSERT_TRUE(c.ids.all);
	ASSERT_TRUE(has(&c.ids, &any));
	/* fixed: the next pass (a second later) tells files apart again */
	ASSERT_EQ(0, unlink(paths[1]));
	ASSERT_TRUE(!has(server_secret_cache_get(&c, paths, 2, T0 + SEC), &any));
	ASSERT_TRUE(has(&c.ids, &a));
	unlink(o);
	free(o);
	cleanup(paths, 2);
}

TEST(more_files_than_it_holds_fail_closed)
{
	struct secret_cache c = { 0 };
	char *paths[SECRET_IDS_MAX + 1];
	struct stat st, newest, any;
	char name[32], *o;

	mkdirs();
	for (size_t i = 0; i < SECRET_IDS_MAX + 1; i++) {
		snprintf(name, sizeof(name), "s%zu", i);
		paths[i] = make(name, i == SECRET_IDS_MAX ? &newest : &st);
	}
	o = make("unrelated", &any);
	server_secret_cache_refresh(&c, paths, SECRET_IDS_MAX, T0);
	ASSERT_TRUE(!c.ids.all && !has(&c.ids, &any));
	server_secret_cache_refresh(&c, paths, SECRET_IDS_MAX + 1, T0);
	ASSERT_TRUE(c.ids.all && has(&c.ids, &any) && has(&c.ids, &newest));
	unlink(o);
	free(o);
	cleanup(paths, SECRET_IDS_MAX + 1);
}

TEST(incomplete_path_list_fails_closed)
{
	struct secret_cache c = { .incomplete = true };
	struct stat any;
	char *paths[1];

	mkdirs();
	paths[0] = make("unrelated", &any);
	ASSERT_TRUE(has(server_secret_cache_get(&c, NULL, 0, T0), &any));
	ASSERT_TRUE(has(server_secret_cache_get(&c, NULL, 0, T0 + 5 * SEC), &any));
	c.incomplete = false;
	ASSERT_TRUE(!has(server_secret_cache_get(&c, NULL, 0, T0 + 6 * SEC), &any));
	cleanup(paths, 1);
}

TEST_MAIN()
