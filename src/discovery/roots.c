/* SPDX-License-Identifier: MIT */
/*
 * One capability root's discovery (capabilityRoots/discoverV1, PROTOCOL.md
 * §6.24), in a worker thread: the same bounded walk as fs/walk (depth 6,
 * 2 000 directories, 20 000 entries, links to directories followed), then the
 * recognised files read whole:
 *
 *   every SKILL.md (sorted by URI), with its skill's agents/openai.yaml;
 *   the root's plugin manifest: the first of .codex-plugin/, .claude-plugin/,
 *   .cursor-plugin/plugin.json, else the nearest ancestor's (as a namespace);
 *   the namespace manifests below the root (first per plugin directory);
 *   the root plugin's MCP config (its "mcpServers" path, else .mcp.json; none
 *   when declared inline) and Apps config (its "apps" path).
 *
 * Problems never fail the request: they become the root's "warnings" (a file
 * over 1 MiB, past the 16 MiB per-root budget, not UTF-8, unreadable) or its
 * "error" (the root cannot be inspected or is not a directory), with the
 * reference's texts.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "discovery.h"
#include "file-uri.h"
#include "fs-tree.h"
#include "macro.h"
#include "rpc.h"
#include "utf8.h"

static const char *const manifest_dirs[] = { ".codex-plugin", ".claude-plugin", ".cursor-plugin" };

struct root_scan {
	struct disc_ctx *ctx;
	json_t *warnings;
	size_t budget; /* bytes of file contents kept for this root */
};

/* printf into a malloc'd string, or NULL. */
static char *fmt_new(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *fmt_new(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	return r < 0 ? NULL : s;
}

#define warn(rs, ...)                                                  \
	do {                                                           \
		char *w_ = fmt_new(__VA_ARGS__);                       \
		if (w_)                                                \
			json_array_append_new((rs)->warnings, json_string(w_)); \
		free(w_);                                              \
	} while (0)

/*
 * Rust's Utf8Error for s[0..n): false when invalid, with the valid prefix's
 * length and the bad sequence's (0: cut short by the end of the input).
 */
static bool utf8_check(const uint8_t *s, size_t n, size_t *valid_up_to, size_t *err_len)
{
	for (size_t i = 0; i < n;) {
		size_t bad = 0, w;
		bool truncated = false;

		w = utf8_next(s, n, i, &bad, &truncated);
		if (w) {
			i += w;
			continue;
		}
		*valid_up_to = i;
		*err_len = truncated ? 0 : bad;
		return false;
	}
	return true;
}

static char *uri_of(const char *path)
{
	return file_uri_from_path(path);
}

static char *join(const char *dir, const char *name)
{
	char *s;

	if (asprintf(&s, "%s%s%s", dir, strcmp(dir, "/") == 0 ? "" : "/", name) < 0)
		return NULL;
	return s;
}

/* A file's size within the file's, the bundle's and the server's limits (else warned). */
static bool size_ok(struct root_scan *rs, const char *uri, size_t size)
{
	if ((uint64_t)size > DISC_MAX_FILE_BYTES) {
		warn(rs, "capability file %s exceeds the %u-byte limit", uri, DISC_MAX_FILE_BYTES);
		return false;
	}
	if (rs->budget + size > DISC_MAX_BUNDLE_BYTES) {
		warn(rs, "capability root bundle exceeds the %u-byte limit", DISC_MAX_BUNDLE_BYTES);
		return false;
	}
	if (rs->ctx->total + size > rs->ctx->total_limit) {
		warn(rs, "capability discovery request exceeds the %zu-byte limit of this server",
		     rs->ctx->total_limit);
		return false;
	}
	return true;
}

/*
 * The file opened for reading, if it is a regular file and no secret file
 * (the file opened, not the path stat'ed: a link swapped in between changes
 * nothing); st its fstat. Returns the fd, or -1 (warned where the
 * reference warns).
 */
static int open_regular(struct root_scan *rs, const char *path, const char *uri, struct stat *st)
{
	char os[160];
	int fd;

	/* O_NONBLOCK: a file swapped for a FIFO since the stat cannot hold the worker. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		warn(rs, "failed to read capability file %s: %s", uri, rpc_os_error(errno, os, sizeof(os)));
		return -1;
	}
	if (fstat(fd, st) < 0 || server_secret_ids_has(&rs->ctx->secrets, st->st_dev, st->st_ino)) {
		rs->ctx->secret_refused = true;
		warn(rs, "failed to read capability file %s: %s", uri, rpc_os_error(EACCES, os, sizeof(os)));
		close(fd);
		return -1;
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The whole file into *ret (malloc'd, *ret_len bytes), within the limits
 * as it is read. Returns 0, or -1 (warned, unless the first allocation
 * fails).
 */
static int read_all(struct root_scan *rs, int fd, const char *uri, size_t size, char **ret,
		    size_t *ret_len)
{
	_cleanup_free_ char *data = NULL;
	size_t len = 0, cap;
	char os[160];

	/* Sized for the file as it is; a file that grows meanwhile grows the buffer, to the limit. */
	cap = MIN(size, (size_t)DISC_MAX_FILE_BYTES) + 1;
	data = malloc(cap);
	while (data) {
		ssize_t k;

		if (len == cap) {
			/* (len never reaches cap past the limit: the check below stops first) */
			char *n = realloc(data, MIN(cap * 2, DISC_MAX_FILE_BYTES + 1));

			if (!n) {
				warn(rs, "failed to read capability file %s: %s", uri,
				     rpc_os_error(ENOMEM, os, sizeof(os)));
				return -1;
			}
			data = n;
			cap = MIN(cap * 2, DISC_MAX_FILE_BYTES + 1);
		}
		k = read(fd, data + len, cap - len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			warn(rs, "failed to read capability file %s: %s", uri,
			     rpc_os_error(errno, os, sizeof(os)));
			return -1;
		}
		if (k == 0)
			break;
		len += (size_t)k;
		if (len > DISC_MAX_FILE_BYTES || rs->budget + len > DISC_MAX_BUNDLE_BYTES ||
		    rs->ctx->total + len > rs->ctx->total_limit) {
			warn(rs, "capability file %s exceeded its read limit", uri);
			return -1;
		}
	}
	if (!data)
		return -1;
	*ret = TAKE_PTR(data);
	*ret_len = len;
	return 0;
}

/*
 * Reads an optional capability file into {"path","contents"}: NULL when it is
 * missing or no regular file (silently) or unusable (with a warning).
 */
static json_t *read_text(struct root_scan *rs, const char *path)
{
	_cleanup_free_ char *uri = uri_of(path), *data = NULL;
	char os[160];
	size_t len = 0, up, bad;
	struct stat st;
	json_t *f;
	int fd, r;

	if (!uri)
		return NULL;
	if (stat(path, &st) < 0) {
		if (errno != ENOENT)
			warn(rs, "failed to inspect capability file %s: %s", uri,
			     rpc_os_error(errno, os, sizeof(os)));
		return NULL;
	}
	if (!S_ISREG(st.st_mode) || !size_ok(rs, uri, (size_t)st.st_size))
		return NULL;
	fd = open_regular(rs, path, uri, &st);
	if (fd < 0)
		return NULL;
	r = read_all(rs, fd, uri, (size_t)st.st_size, &data, &len);
	close(fd);
	if (r < 0)
		return NULL;
	if (!utf8_check((const uint8_t *)data, len, &up, &bad)) {
		if (bad)
			warn(rs, "capability file %s is not UTF-8: invalid utf-8 sequence of %zu bytes "
				 "from index %zu", uri, bad, up);
		else
			warn(rs, "capability file %s is not UTF-8: incomplete utf-8 byte sequence from "
				 "index %zu", uri, up);
		return NULL;
	}
	rs->budget += len;
	rs->ctx->total += len;
	f = json_object();
	json_object_set_new(f, "path", json_string(uri));
	json_object_set_new(f, "contents", json_stringn(data, len));
	return f;
}

/* The first plugin manifest of dir, or NULL. */
static json_t *first_manifest(struct root_scan *rs, const char *dir)
{
	for (size_t i = 0; i < ELEMENTSOF(manifest_dirs); i++) {
		char rel[64];
		_cleanup_free_ char *p = NULL;
		json_t *m;

		snprintf(rel, sizeof(rel), "%s/plugin.json", manifest_dirs[i]);
		p = join(dir, rel);
		m = p ? read_text(rs, p) : NULL;
		if (m)
			return m;
	}
	return NULL;
}

/* The nearest ancestor's manifest (a root nested in a plugin belongs to it). */
static json_t *ancestor_manifest(struct root_scan *rs, const char *path)
{
	_cleanup_free_ char *p = strdup(path);
	json_t *m = NULL;

	while (p && !m && strcmp(p, "/") != 0) {
		char *slash = strrchr(p, '/');

		if (!slash)
			break;
		if (slash == p)
			slash[1] = 0;
		else
			*slash = 0;
		m = first_manifest(rs, p);
	}
	return m;
}

/* Priority of a walked file as a plugin manifest (index in manifest_dirs), or -1. */
static int manifest_priority(const char *path)
{
	const char *base = strrchr(path, '/'), *dir;
	size_t n;

	if (!base || strcmp(base + 1, "plugin.json") != 0 || base == path)
		return -1;
	for (dir = base - 1; dir > path && *dir != '/'; dir--)
		;
	n = (size_t)(base - dir - 1);
	for (size_t i = 0; i < ELEMENTSOF(manifest_dirs); i++)
		if (strlen(manifest_dirs[i]) == n && memcmp(dir + 1, manifest_dirs[i], n) == 0)
			return (int)i;
	return -1;
}

/* The plugin directory of a manifest path (two levels up), malloc'd; NULL at the top. */
static char *plugin_root_of(const char *manifest)
{
	char *p = strdup(manifest), *s;

	for (int i = 0; p && i < 2; i++) {
		s = strrchr(p, '/');
		if (!s || s == p) {
			free(p);
			return NULL;
		}
		*s = 0;
	}
	return p;
}

struct walked {
	char *path;
	char *uri;
	char *key; /* sort key: the URI, or for manifests the plugin root's URI */
	int prio;
};

static int walked_cmp(const void *a, const void *b)
{
	const struct walked *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	return c ? c : x->prio - y->prio;
}

/*
 * A declared config path of the root manifest ("mcpServers"/"apps"): "./"
 * and below the root, else a warning and NULL.
 */
static char *declared_path(struct root_scan *rs, const char *root, const char *field,
			   json_t *v, const char *manifest_uri)
{
	const char *s = json_string_value(v), *rel, *c;
	bool bad = false;
	size_t n;

	if (!s)
		return NULL;
	if (strncmp(s, "./", 2) != 0) {
		warn(rs, "ignoring %s in %s: path must start with `./`", field, manifest_uri);
		return NULL;
	}
	rel = s + 2;
	n = json_string_length(v) - 2;
	for (c = rel;;) {
		size_t k = strcspn(c, "/\\");

		if (k == 2 && c[0] == '.' && c[1] == '.') {
			bad = true;
			break;
		}
		if (!c[k])
			break;
		c += k + 1;
	}
	/* An absolute remainder would leave the root too (Path::join replaces). */
	if (!n || bad || rel[0] == '/' || memchr(rel, 0, n)) {
		warn(rs, "ignoring %s in %s: path must remain below the capability root", field,
		     manifest_uri);
		return NULL;
	}
	return join(root, rel);
}

/* The root plugin: {"manifest","mcpConfig","appsConfig"}. */
static json_t *root_plugin(struct root_scan *rs, const char *root, json_t *manifest)
{
	const char *uri = json_string_value(json_object_get(manifest, "path"));
	const char *text = json_string_value(json_object_get(manifest, "contents"));
	json_t *decl = json_loads(text, JSON_REJECT_DUPLICATES, NULL), *mcp = NULL, *apps = NULL;
	_cleanup_free_ char *mcp_path = NULL, *apps_path = NULL;
	bool inline_mcp = false;
	json_t *p;

	/* Anything but an object of the expected shape declares nothing. */
	if (json_is_object(decl)) {
		json_t *m = json_object_get(decl, "mcpServers"), *a = json_object_get(decl, "apps");

		inline_mcp = json_is_object(m);
		mcp_path = declared_path(rs, root, "mcpServers", m, uri);
		apps_path = declared_path(rs, root, "apps", a, uri);
	}
	json_decref(decl);
	if (!inline_mcp) {
		if (!mcp_path)
			mcp_path = join(root, ".mcp.json");
		mcp = mcp_path ? read_text(rs, mcp_path) : NULL;
	}
	if (apps_path)
		apps = read_text(rs, apps_path);
	p = json_object();
	json_object_set_new(p, "manifest", json_incref(manifest));
	json_object_set_new(p, "mcpConfig", mcp ? mcp : json_null());
	json_object_set_new(p, "appsConfig", apps ? apps : json_null());
	return p;
}

/* Runs the bounded walk; files come back in *ret (native paths), problems as warnings. */
static int walk_root(struct root_scan *rs, const char *path, const char *uri, json_t **ret)
{
	struct tree_job *j = calloc(1, sizeof(*j));
	char os[160];
	int r = 0;

	*ret = NULL;
	if (!j || !(j->path = strdup(path))) {
		free(j);
		return -ENOMEM;
	}
	j->src_dirfd = j->dst_dirfd = -1;
	j->follow = true;
	j->max_depth = DISC_MAX_DEPTH;
	j->max_dirs = DISC_MAX_DIRECTORIES;
	j->max_entries = DISC_MAX_ENTRIES;
	fs_walk_run(j);
	if (j->err < 0 || !j->result) {
		r = j->err < 0 ? j->err : -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < j->n_errs; i++) {
		_cleanup_free_ char *eu = uri_of(j->errs[i].path);

		warn(rs, "failed to scan capability path %s: %s", eu ? eu : j->errs[i].path,
		     rpc_os_error(j->errs[i].err, os, sizeof(os)));
	}
	if (j->truncated)
		warn(rs, "capability scan reached its traversal limit (root: %s)", uri);
	*ret = json_incref(json_object_get(j->result, "entries"));
out:
	fs_tree_job_free(j);
	return r;
}

static void walked_free(struct walked *w, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(w[i].path);
		free(w[i].uri);
		free(w[i].key);
	}
	free(w);
}

/* Splits the walk's files into skills and manifests, each sorted as the reference does. */
static int collect(json_t *entries, struct walked **skills, size_t *n_skills,
		   struct walked **mans, size_t *n_mans)
{
	size_t n = json_array_size(entries), i;
	json_t *e;

	*skills = calloc(n + 1, sizeof(**skills));
	*mans = calloc(n + 1, sizeof(**mans));
	*n_skills = *n_mans = 0;
	if (!*skills || !*mans)
		return -ENOMEM;
	json_array_foreach(entries, i, e) {
		const char *u = json_string_value(json_object_get(e, "path")), *base;
		char *native = NULL, *msg = NULL;
		int prio;

		if (strcmp(json_string_value(json_object_get(e, "kind")) ?: "", "file") != 0)
			continue;
		if (file_uri_to_path(u, false, &native, &msg) < 0) {
			free(msg);
			continue;
		}
		base = strrchr(native, '/');
		prio = manifest_priority(native);
		if (base && strcmp(base + 1, "SKILL.md") == 0) {
			struct walked *w = &(*skills)[(*n_skills)++];

			w->path = strdup(native);
			w->uri = strdup(u);
			w->key = strdup(u);
			if (!w->path || !w->uri || !w->key)
				goto oom;
		}
		if (prio >= 0) {
			struct walked *w = &(*mans)[(*n_mans)++];
			_cleanup_free_ char *pr = plugin_root_of(native);

			w->path = strdup(native);
			w->uri = strdup(u);
			w->key = pr ? uri_of(pr) : strdup("");
			w->prio = prio;
			if (!w->path || !w->uri || !w->key)
				goto oom;
		}
		free(native);
		continue;
oom:
		free(native);
		return -ENOMEM;
	}
	qsort(*skills, *n_skills, sizeof(**skills), walked_cmp);
	qsort(*mans, *n_mans, sizeof(**mans), walked_cmp);
	return 0;
}

/* The namespace manifests: the inherited one first, then one per plugin directory. */
static json_t *namespaces(struct root_scan *rs, json_t *inherited, struct walked *m, size_t n)
{
	json_t *arr = json_array(), *seen = json_object();

	if (inherited) {
		_cleanup_free_ char *native = NULL, *pr = NULL, *msg = NULL;

		if (file_uri_to_path(json_string_value(json_object_get(inherited, "path")), false,
				     &native, &msg) >= 0 && (pr = plugin_root_of(native)))
			json_object_set_new(seen, pr, json_true());
		json_array_append(arr, inherited);
	}
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *pr = plugin_root_of(m[i].path);
		json_t *f;

		if (!pr || json_object_get(seen, pr))
			continue;
		json_object_set_new(seen, pr, json_true());
		f = read_text(rs, m[i].path);
		if (f)
			json_array_append_new(arr, f);
	}
	json_decref(seen);
	return arr;
}

/* Each SKILL.md with its agents/openai.yaml. */
static json_t *skill_files(struct root_scan *rs, struct walked *s, size_t n)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *dir = strdup(s[i].path), *meta_path = NULL;
		json_t *instr = read_text(rs, s[i].path), *meta = NULL, *o;
		char *slash;

		if (!instr)
			continue;
		slash = dir ? strrchr(dir, '/') : NULL;
		if (slash) {
			*slash = 0;
			meta_path = join(*dir ? dir : "/", "agents/openai.yaml");
			meta = meta_path ? read_text(rs, meta_path) : NULL;
		}
		o = json_object();
		json_object_set_new(o, "instructions", instr);
		json_object_set_new(o, "metadata", meta ? meta : json_null());
		json_array_append_new(arr, o);
	}
	return arr;
}

json_t *disc_root_discover(struct disc_ctx *ctx, json_t *id, const char *path, const char *uri)
{
	struct root_scan rs = { .ctx = ctx, .warnings = json_array() };
	struct walked *skills = NULL, *mans = NULL;
	size_t n_skills = 0, n_mans = 0;
	json_t *out = json_object(), *entries = NULL, *root_man = NULL, *inherited;
	json_t *plugin = NULL, *skill_arr = NULL, *ns = NULL;
	char os[160], *err = NULL;
	struct stat st;
	int r;

	json_object_set(out, "id", id);
	json_object_set_new(out, "path", json_string(uri));
	if (stat(path, &st) < 0) {
		err = fmt_new("failed to inspect capability root %s: %s", uri,
			      rpc_os_error(errno, os, sizeof(os)));
		goto done;
	}
	if (!S_ISDIR(st.st_mode)) {
		err = fmt_new("capability root %s is not a directory", uri);
		goto done;
	}
	r = walk_root(&rs, path, uri, &entries);
	if (r < 0) {
		err = fmt_new("failed to scan capability root %s: %s", uri,
			      rpc_os_error(-r, os, sizeof(os)));
		goto done;
	}
	if (collect(entries, &skills, &n_skills, &mans, &n_mans) < 0)
		goto oom;
	root_man = first_manifest(&rs, path);
	inherited = root_man ? json_incref(root_man) : ancestor_manifest(&rs, path);
	ns = namespaces(&rs, inherited, mans, n_mans);
	json_decref(inherited);
	if (root_man)
		plugin = root_plugin(&rs, path, root_man);
	skill_arr = skill_files(&rs, skills, n_skills);
done:
	json_object_set_new(out, "plugin", plugin ? plugin : json_null());
	json_object_set_new(out, "skills", skill_arr ? skill_arr : json_array());
	json_object_set_new(out, "namespaceManifests", ns ? ns : json_array());
	json_object_set_new(out, "warnings", rs.warnings);
	json_object_set_new(out, "error", err ? json_string(err) : json_null());
	free(err);
	json_decref(root_man);
	json_decref(entries);
	walked_free(skills, n_skills);
	walked_free(mans, n_mans);
	return out;
oom:
	json_decref(root_man);
	json_decref(entries);
	json_decref(out);
	json_decref(rs.warnings);
	walked_free(skills, n_skills);
	walked_free(mans, n_mans);
	return NULL;
}
