/* SPDX-License-Identifier: MIT */
/*
 * Deny globs (SANDBOX.md §3.3 step 6): a `glob_pattern` deny entry is
 * expanded in the parent when the plan is built, into the regular files that
 * exist then, each masked as a denied file (sandbox.c). As the reference,
 * which expands them with `rg --files --hidden --no-ignore --glob G -- ROOT`:
 *   - the pattern splits at its first wildcard (* ? [ ]): the directory part
 *     of what precedes it is the root of the scan, the rest the glob. Stricter
 *     than the reference, a {a,b} group (a `{` with a `}` after it) counts as
 *     a wildcard too: the reference splits at * ? [ ] only, so it masks
 *     nothing for `/ws/{a,b}.env` (no wildcard: skipped) or `/ws/{a,b}/*.env`
 *     (its root `/ws/{a,b}` does not exist), although its fs helpers treat the
 *     group as alternatives; here both hide what they name, and a path that
 *     literally holds the braces is hidden as well;
 *   - a glob without a slash matches a file's name at any depth under the
 *     root, one with a slash its whole path below the root; * ? [...] stop at
 *     slashes, a `**` component spans any number of directories, {a,b}
 *     alternates; dotfiles are not special; an unclosed [ is literal;
 *   - regular files only (no directory, no symlink), symlinked directories
 *     are not followed; the scan stops at glob_scan_max_depth when given;
 *   - more than 8192 matches (MAX_UNREADABLE_GLOB_MATCHES) is an error.
 * Files created after the start are not masked (the reference's bubblewrap
 * masks only what its scan found). Stricter than the reference, which skips
 * them: a static prefix of `/` or nothing is refused, and so is a scan
 * turned off (glob_scan_max_depth 0), a walk over SANDBOX_GLOB_MAX_ENTRIES
 * entries or deeper than SANDBOX_GLOB_MAX_DEPTH, or a directory that cannot
 * be read, or matching that costs more than SANDBOX_GLOB_MAX_STEPS: the
 * pattern could not be enforced.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glob.h"
#include "macro.h"

#define MAX_ALTERNATIVES 64   /* {a,b} expansions of one glob */
#define MAX_COMPONENTS 128

/* ---- matching ---- */

/* Splits s (modified) at '/' into v; returns the count or -1 past max. */
static int split_components(char *s, char **v, int max)
{
	int n = 0;

	for (char *p = s; *p;) {
		char *e = strchr(p, '/');

		if (e)
			*e = 0;
		if (*p) {
			if (n == max)
				return -1;
			v[n++] = p;
		}
		if (!e)
			break;
		p = e + 1;
	}
	return n;
}

/*
 * Component-wise match with `**` components (any number of directories),
 * by dynamic programming: ok[i][j] = pattern components i.. match path
 * components j.. (no backtracking blow-up).
 */
static bool match_components(char **pc, int np, char **sc, int ns)
{
	bool ok[MAX_COMPONENTS + 1][MAX_COMPONENTS + 1];

	for (int i = np; i >= 0; i--) {
		bool any = i < np && strcmp(pc[i], "**") == 0;

		for (int j = ns; j >= 0; j--) {
			if (i == np)
				ok[i][j] = j == ns;
			else if (any)
				ok[i][j] = ok[i + 1][j] || (j < ns && ok[i][j + 1]);
			else /* fnmatch only where the rest matches */
				ok[i][j] = j < ns && ok[i + 1][j + 1] && fnmatch(pc[i], sc[j], 0) == 0;
		}
	}
	return ok[0][0];
}

/* sandbox_glob_match, adding its steps (the table's cells) to *steps. */
static bool glob_match(const char *glob, const char *rel, size_t *steps)
{
	char g[PATH_MAX + 4], s[PATH_MAX];
	char *pc[MAX_COMPONENTS], *sc[MAX_COMPONENTS];
	size_t gl = strlen(glob);
	int np, ns;

	if (gl == 0 || glob[gl - 1] == '/')
		return false; /* directories only: never a file */
	/* No slash: the name at any depth (gitignore's rule, as ripgrep's --glob). */
	if (!strchr(glob, '/'))
		snprintf(g, sizeof(g), "**/%s", glob);
	else
		snprintf(g, sizeof(g), "%s", glob[0] == '/' ? glob + 1 : glob);
	if (strlen(rel) >= sizeof(s))
		return false;
	memcpy(s, rel, strlen(rel) + 1);
	np = split_components(g, pc, MAX_COMPONENTS);
	ns = split_components(s, sc, MAX_COMPONENTS);
	if (np < 0 || ns < 0)
		return false;
	*steps += (size_t)(np + 1) * (size_t)(ns + 1);
	return match_components(pc, np, sc, ns);
}

bool sandbox_glob_match(const char *glob, const char *rel)
{
	size_t steps = 0;

	return glob_match(glob, rel, &steps);
}

/* ---- {a,b} alternation ---- */

struct alts {
	char *v[MAX_ALTERNATIVES];
	size_t n;
};

static void alts_clear(struct alts *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	a->n = 0;
}

/* Expands the first {..} group of s (recursively the rest). 0, -E2BIG, -ENOMEM. */
static int expand_braces(const char *s, struct alts *out)
{
	const char *open = NULL, *close = NULL;
	int depth = 0;

	for (const char *p = s; *p; p++) {
		if (*p == '\\' && p[1]) {
			p++;
		} else if (*p == '{') {
			if (depth++ == 0)
				open = p;
		} else if (*p == '}' && depth > 0 && --depth == 0) {
			close = p;
			break;
		}
	}
	if (!open || !close) {
		if (out->n == MAX_ALTERNATIVES)
			return -E2BIG;
		out->v[out->n] = strdup(s);
		if (!out->v[out->n])
			return -ENOMEM;
		out->n++;
		return 0;
	}
	/* Each comma-separated part at depth 1, spliced between prefix and suffix. */
	for (const char *p = open + 1, *start = open + 1; p <= close; p++) {
		if (*p == '\\' && p < close) {
			p++;
			continue;
		}
		if (*p == '{')
			depth++;
		else if (*p == '}' && p < close)
			depth--;
		if ((*p == ',' && depth == 0) || p == close) {
			size_t pre = (size_t)(open - s), mid = (size_t)(p - start), suf = strlen(close + 1);
			char *t = malloc(pre + mid + suf + 1);
			int r;

			if (!t)
				return -ENOMEM;
			memcpy(t, s, pre);
			memcpy(t + pre, start, mid);
			memcpy(t + pre + mid, close + 1, suf + 1);
			r = expand_braces(t, out);
			free(t);
			if (r < 0)
				return r;
			start = p + 1;
		}
	}
	return 0;
}

/* ---- the scan ---- */

struct scan {
	const char *pattern;
	struct alts globs;
	long max_depth;          /* -1: none */
	char path[PATH_MAX];     /* the canonical root, then the current file */
	size_t root_len;
	struct sandbox_glob_budget *budget;
	struct sandbox_glob_out *out;
	char *err;
	size_t errsz;
};

static bool any_match(const struct scan *sc, const char *rel)
{
	for (size_t i = 0; i < sc->globs.n; i++)
		if (glob_match(sc->globs.v[i], rel, &sc->budget->steps))
			return true;
	return false;
}

/* A regular file at sc->path: added when a pattern matches it. Returns 0 or -errno with err. */
static int scan_file(struct scan *sc)
{
	int r;

	if (sc->budget->steps > SANDBOX_GLOB_MAX_STEPS) {
		snprintf(sc->err, sc->errsz,
			 "deny glob `%s`: matching the files under %.*s took more than %lu "
			 "steps (the limit): fewer {a,b} alternatives or path components",
			 sc->pattern, (int)sc->root_len, sc->path, SANDBOX_GLOB_MAX_STEPS);
		return -E2BIG;
	}
	if (!any_match(sc, sc->path + sc->root_len + 1))
		return 0;
	r = sc->out->add(sc->out->ctx, sc->path);
	if (r < 0)
		snprintf(sc->err, sc->errsz, "deny glob `%s`: %s", sc->pattern,
			 r == -E2BIG ? "matched more than 8192 files (the reference's limit)"
				     : strerror(-r));
	return r;
}

static int scan_dir(struct scan *sc, int dfd, size_t len, int depth);

/*
 * The directory name in dfd, at sc->path (len bytes), depth + 1 below the
 * root: scanned in turn. Returns 0 (also when it went meanwhile) or -errno
 * with err.
 */
static int scan_subdir(struct scan *sc, int dfd, const char *name, size_t len, int depth)
{
	int fd;

	if (depth + 1 >= SANDBOX_GLOB_MAX_DEPTH) {
		snprintf(sc->err, sc->errsz,
			 "deny glob `%s`: %s is deeper than %d directories below %.*s: set "
			 "glob_scan_max_depth",
			 sc->pattern, sc->path, SANDBOX_GLOB_MAX_DEPTH, (int)sc->root_len, sc->path);
		return -E2BIG;
	}
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		int r = -errno;

		if (r == -ENOENT)
			return 0;
		snprintf(sc->err, sc->errsz,
			 "deny glob `%s`: cannot scan %s (%s): its files could not be "
			 "checked",
			 sc->pattern, sc->path, strerror(-r));
		return r;
	}
	return scan_dir(sc, fd, len, depth + 1);
}

/*
 * One directory (dfd, owned; sc->path holds its path, len bytes): each
 * entry counted, its path composed in sc->path, regular files matched
 * (scan_file), directories within the depth scanned (scan_subdir).
 */
static int scan_dir(struct scan *sc, int dfd, size_t len, int depth)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	int r = 0;

	if (!d) {
		r = -errno;
		close(dfd);
		return r;
	}
	while (r >= 0) {
		unsigned char type;
		size_t nl;

		errno = 0;
		de = readdir(d);
		if (!de) {
			r = errno ? -errno : 0;
			if (r < 0)
				snprintf(sc->err, sc->errsz, "deny glob `%s`: reading %.*s: %s", sc->pattern,
					 (int)len, sc->path, strerror(-r));
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (++sc->budget->entries > SANDBOX_GLOB_MAX_ENTRIES) {
			snprintf(sc->err, sc->errsz,
				 "deny glob `%s`: scanning %.*s passed %d entries (the limit): name a "
				 "narrower directory before the first wildcard, or set glob_scan_max_depth",
				 sc->pattern, (int)sc->root_len, sc->path, SANDBOX_GLOB_MAX_ENTRIES);
			r = -E2BIG;
			break;
		}
		nl = strlen(de->d_name);
		if (len + 1 + nl >= sizeof(sc->path)) {
			snprintf(sc->err, sc->errsz, "deny glob `%s`: a path under %.*s is too long",
				 sc->pattern, (int)sc->root_len, sc->path);
			r = -ENAMETOOLONG;
			break;
		}
		sc->path[len] = '/';
		memcpy(sc->path + len + 1, de->d_name, nl + 1);
		type = de->d_type;
		if (type == DT_UNKNOWN) {
			struct stat st;

			if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue; /* gone meanwhile */
			type = S_ISREG(st.st_mode) ? DT_REG : S_ISDIR(st.st_mode) ? DT_DIR : DT_LNK;
		}
		if (type == DT_REG)
			r = scan_file(sc);
		else if (type == DT_DIR && (sc->max_depth < 0 || depth + 1 < sc->max_depth))
			r = scan_subdir(sc, dirfd(d), de->d_name, len + 1 + nl, depth);
	}
	closedir(d);
	return r;
}

/* Where the first wildcard is: * ? [ ] or a `{` closed later; strlen(pattern) if none. */
static size_t first_wildcard(const char *pattern)
{
	size_t first = strcspn(pattern, "*?[]");
	const char *brace = memchr(pattern, '{', first);

	if (brace && strchr(brace + 1, '}'))
		return (size_t)(brace - pattern);
	return first;
}

/* A pattern's own path, if it exists and is no symlink (a pattern without wildcards). */
static int add_literal_path(const char *pattern, struct sandbox_glob_out *out, char *err,
			    size_t errsz)
{
	struct stat st;
	int r;

	if (lstat(pattern, &st) < 0 || S_ISLNK(st.st_mode))
		return 0;
	r = out->add_literal(out->ctx, pattern, S_ISDIR(st.st_mode));
	if (r < 0)
		snprintf(err, errsz, "deny glob `%s`: %s", pattern, strerror(-r));
	return r;
}

int sandbox_glob_expand(const char *pattern, long max_depth, struct sandbox_glob_budget *budget,
			struct sandbox_glob_out *out, char *err, size_t errsz)
{
	struct scan *sc;
	size_t first = first_wildcard(pattern), root_end;
	char root[PATH_MAX];
	int fd, r;

	if (pattern[0] != '/') {
		snprintf(err, errsz, "deny glob `%s`: a relative pattern and no cwd to resolve it against",
			 pattern);
		return -EINVAL;
	}
	/* No wildcard: the path itself (the reference skips such a pattern). */
	if (!pattern[first])
		return add_literal_path(pattern, out, err, errsz);
	if (first <= 1) {
		snprintf(err, errsz,
			 "deny glob `%s`: its static prefix is `/`: a scan of the whole filesystem "
			 "before every start is too broad (name a directory before the first wildcard)",
			 pattern);
		return -EINVAL;
	}
	if (max_depth == 0) {
		snprintf(err, errsz,
			 "deny glob `%s`: glob_scan_max_depth 0 turns the scan off, so nothing it "
			 "matches could be hidden",
			 pattern);
		return -EINVAL;
	}
	root_end = pattern[first - 1] == '/' ? first - 1 : first;
	while (root_end > 0 && pattern[root_end] != '/')
		root_end--;
	if (root_end == 0)
		snprintf(root, sizeof(root), "/");
	else
		snprintf(root, sizeof(root), "%.*s", (int)root_end, pattern);

	/* Braces but no other wildcard: also a file whose name holds them. */
	if (!pattern[strcspn(pattern, "*?[]")] && (r = add_literal_path(pattern, out, err, errsz)) < 0)
		return r;
	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return -ENOMEM;
	sc->pattern = pattern;
	sc->max_depth = max_depth;
	sc->budget = budget;
	sc->out = out;
	sc->err = err;
	sc->errsz = errsz;
	r = expand_braces(pattern + root_end + 1, &sc->globs);
	if (r < 0) {
		snprintf(err, errsz, "deny glob `%s`: %s", pattern,
			 r == -E2BIG ? "more than 64 {a,b} alternatives" : strerror(-r));
		goto out;
	}
	/* The root as it is (a missing one matches nothing, as the reference's is_dir check). */
	if (!realpath(root, sc->path)) {
		r = 0;
		goto out;
	}
	sc->root_len = strcmp(sc->path, "/") ? strlen(sc->path) : 0;
	fd = open(sc->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		r = errno == ENOTDIR || errno == ENOENT ? 0 : -errno;
		if (r < 0)
			snprintf(err, errsz, "deny glob `%s`: cannot scan %s (%s)", pattern, sc->path,
				 strerror(-r));
		goto out;
	}
	r = scan_dir(sc, fd, sc->root_len, 0);
out:
	alts_clear(&sc->globs);
	free(sc);
	return r;
}
