/* SPDX-License-Identifier: MIT */
/*
 * The installed plugins of $CODEX_HOME/plugins/cache (capabilities/discoverV2),
 * in a worker thread: <marketplace>/<plugin>/<version>, where marketplace and
 * plugin are id segments (ASCII letters, digits, '-', '_') and the active
 * version is "local" when present, else the highest by semantic-version order
 * (names that are no semantic versions compare bytewise). A package's
 * .codex-remote-plugin-install.json ({"schema_version":1,"remote_plugin_id":..})
 * names its remote identity; an unreadable or invalid one is a location
 * problem (one summary warning) and leaves the identity null.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "discovery.h"
#include "macro.h"
#include "plugins.h"

#define MAX_DIRS 2000             /* the cache walk's bounds (the reference's) */
#define MAX_VERSIONS 4096         /* version directories considered per plugin */
#define MAX_REMOTE_BYTES (16u << 10)
#define MAX_REMOTE_ID 1024

/* A segment of ASCII letters, digits, '-', '_' and the characters of extra. */
static bool valid_segment(const char *s, const char *extra)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '-' || *s == '_' || (extra && strchr(extra, *s))))
			return false;
	return true;
}

/* ---- semantic versions (the semver crate's order) ---- */

struct semver {
	unsigned long long num[3];
	const char *pre, *build; /* after '-' / '+', or NULL */
	size_t pre_len;
};

static bool numeric_ident(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return n > 0;
}

/* Dot-separated identifiers, none empty, numeric ones without leading zeros (when strict). */
static bool idents_ok(const char *s, size_t n, bool strict)
{
	size_t i = 0;

	while (i <= n) {
		size_t k = 0;

		while (i + k < n && s[i + k] != '.')
			k++;
		if (k == 0 || (strict && numeric_ident(s + i, k) && k > 1 && s[i] == '0'))
			return false;
		i += k + 1;
	}
	return true;
}

static bool semver_parse(const char *s, struct semver *v)
{
	char *e;

	memset(v, 0, sizeof(*v));
	for (int i = 0; i < 3; i++) {
		if (*s < '0' || *s > '9' || (s[0] == '0' && s[1] >= '0' && s[1] <= '9'))
			return false;
		errno = 0;
		v->num[i] = strtoull(s, &e, 10);
		if (errno)
			return false;
		s = e;
		if (i < 2 && *s++ != '.')
			return false;
	}
	if (*s == '-') {
		v->pre = ++s;
		while (*s && *s != '+')
			s++;
		v->pre_len = (size_t)(s - v->pre);
		if (!idents_ok(v->pre, v->pre_len, true))
			return false;
	}
	if (*s == '+') {
		v->build = ++s;
		if (!idents_ok(v->build, strlen(v->build), false))
			return false;
		s += strlen(s);
	}
	return *s == 0;
}

/* Identifier lists: numeric ones by value and before alphanumeric ones, then by length. */
static int idents_cmp(const char *a, size_t an, const char *b, size_t bn)
{
	size_t i = 0, j = 0;

	while (i < an && j < bn) {
		size_t x = 0, y = 0;
		bool nx, ny;
		int c;

		while (i + x < an && a[i + x] != '.')
			x++;
		while (j + y < bn && b[j + y] != '.')
			y++;
		nx = numeric_ident(a + i, x);
		ny = numeric_ident(b + j, y);
		if (nx && ny)
			c = x != y ? (x < y ? -1 : 1) : memcmp(a + i, b + j, x);
		else if (nx != ny)
			c = nx ? -1 : 1;
		else
			c = memcmp(a + i, b + j, MIN(x, y)) ?: (x < y ? -1 : x > y ? 1 : 0);
		if (c)
			return c < 0 ? -1 : 1;
		i += x + 1;
		j += y + 1;
	}
	return (i < an) - (j < bn);
}

static int version_cmp(const void *pa, const void *pb)
{
	const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;
	struct semver x, y;
	int c;

	if (!semver_parse(a, &x) || !semver_parse(b, &y))
		return strcmp(a, b);
	for (int i = 0; i < 3; i++)
		if (x.num[i] != y.num[i])
			return x.num[i] < y.num[i] ? -1 : 1;
	/* A pre-release sorts before its release. */
	if (!x.pre != !y.pre)
		return x.pre ? -1 : 1;
	if (x.pre && (c = idents_cmp(x.pre, x.pre_len, y.pre, y.pre_len)))
		return c;
	if (!x.build != !y.build)
		return x.build ? 1 : -1;
	return x.build ? idents_cmp(x.build, strlen(x.build), y.build, strlen(y.build)) : 0;
}

/* ---- directories ---- */

static int names_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void names_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/*
 * Sorted names of dir's subdirectories accepted by valid_segment(extra)
 * (follow: through links, else real directories only). At most max.
 */
static char **subdirs(const char *dir, const char *extra, bool follow, size_t max, size_t *ret_n)
{
	DIR *d = opendir(dir);
	char **v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	*ret_n = 0;
	if (!d)
		return NULL;
	while (n < max && (de = readdir(d))) {
		struct stat st;
		char **nv;

		if (!valid_segment(de->d_name, extra) || strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0 ||
		    fstatat(dirfd(d), de->d_name, &st, follow ? 0 : AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode))
			continue;
		if (n == cap) {
			nv = realloc(v, (cap = cap ? cap * 2 : 8) * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		v[n] = strdup(de->d_name);
		if (!v[n])
			break;
		n++;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), names_cmp);
	*ret_n = n;
	return v;
}

/* The active version directory's name (malloc'd), or NULL. */
static char *active_version(const char *base)
{
	size_t n = 0;
	char **v = subdirs(base, ".+", false, MAX_VERSIONS, &n), *best = NULL;

	for (size_t i = 0; i < n && !best; i++)
		if (strcmp(v[i], "local") == 0)
			best = strdup(v[i]);
	if (!best && n) {
		qsort(v, n, sizeof(*v), version_cmp);
		best = strdup(v[n - 1]);
	}
	names_free(v, n);
	return best;
}

/* ---- remote installation metadata ---- */

/* 0 with *ret (NULL: no file), or -EINVAL for an unusable one. */
static int remote_id(const char *base, char **ret)
{
	_cleanup_free_ char *path = NULL, *data = NULL;
	const char *id;
	size_t len = 0, n;
	struct stat st;
	json_t *doc, *ver;
	int fd, r = -EINVAL;

	*ret = NULL;
	if (asprintf(&path, "%s/.codex-remote-plugin-install.json", base) < 0) {
		path = NULL;
		return -ENOMEM;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return errno == ENOENT ? 0 : -EINVAL;
	data = malloc(MAX_REMOTE_BYTES + 2);
	if (!data || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	for (;;) {
		ssize_t k = read(fd, data + len, MAX_REMOTE_BYTES + 1 - len);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		len += (size_t)k;
		if (len > MAX_REMOTE_BYTES)
			break;
	}
	close(fd);
	if (len > MAX_REMOTE_BYTES)
		return -EINVAL;
	doc = json_loadb(data, len, JSON_REJECT_DUPLICATES, NULL);
	ver = json_object_get(doc, "schema_version");
	id = json_string_value(json_object_get(doc, "remote_plugin_id"));
	if (json_is_integer(ver) && json_integer_value(ver) == 1 && id) {
		while (*id == ' ' || (*id >= '\t' && *id <= '\r'))
			id++;
		n = strlen(id);
		while (n && (id[n - 1] == ' ' || (id[n - 1] >= '\t' && id[n - 1] <= '\r')))
			n--;
		if (n && n <= MAX_REMOTE_ID) {
			*ret = strndup(id, n);
			r = *ret ? 0 : -ENOMEM;
		}
	}
	json_decref(doc);
	return r;
}

/* ---- the list ---- */

void disc_plugin_locations_free(struct plugin_loc *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(p[i].id);
		free(p[i].name);
		free(p[i].root);
		free(p[i].version);
		free(p[i].remote_id);
	}
	free(p);
}

static int loc_cmp(const void *a, const void *b)
{
	return strcmp(((const struct plugin_loc *)a)->id, ((const struct plugin_loc *)b)->id);
}

int disc_plugin_locations(const char *codex_home, struct plugin_loc **ret, size_t *ret_n, bool *problem)
{
	_cleanup_free_ char *cache = NULL;
	struct plugin_loc *v = NULL;
	size_t n = 0, n_m = 0, dirs = 0;
	char **markets;

	*ret = NULL;
	*ret_n = 0;
	if (asprintf(&cache, "%s/plugins/cache", codex_home) < 0) {
		cache = NULL;
		return -ENOMEM;
	}
	markets = subdirs(cache, NULL, true, MAX_DIRS, &n_m);
	v = calloc(DISC_MAX_PLUGINS + 1, sizeof(*v));
	if (!v) {
		names_free(markets, n_m);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n_m; i++) {
		_cleanup_free_ char *mdir = NULL;
		size_t n_p = 0;
		char **names;

		if (asprintf(&mdir, "%s/%s", cache, markets[i]) < 0) {
			mdir = NULL;
			continue;
		}
		names = subdirs(mdir, NULL, true, MAX_DIRS, &n_p);
		for (size_t k = 0; k < n_p; k++) {
			struct plugin_loc *p = &v[n];
			_cleanup_free_ char *base = NULL;

			if (++dirs > MAX_DIRS) {
				*problem = true; /* the traversal limit */
				break;
			}
			if (n == DISC_MAX_PLUGINS) {
				*problem = true;
				break;
			}
			if (asprintf(&base, "%s/%s", mdir, names[k]) < 0) {
				base = NULL;
				continue;
			}
			p->version = active_version(base);
			if (!p->version)
				continue;
			if (asprintf(&p->root, "%s/%s", base, p->version) < 0)
				p->root = NULL;
			if (asprintf(&p->id, "%s@%s", names[k], markets[i]) < 0)
				p->id = NULL;
			p->name = strdup(names[k]);
			if (!p->root || !p->id || !p->name) {
				disc_plugin_locations_free(v, n + 1);
				names_free(names, n_p);
				names_free(markets, n_m);
				return -ENOMEM;
			}
			if (remote_id(base, &p->remote_id) < 0)
				*problem = true;
			n++;
		}
		names_free(names, n_p);
	}
	names_free(markets, n_m);
	qsort(v, n, sizeof(*v), loc_cmp);
	*ret = v;
	*ret_n = n;
	return 0;
}
