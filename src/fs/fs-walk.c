/* SPDX-License-Identifier: MIT */
/*
 * fs/walk (PROTOCOL.md §6.17): a breadth-first listing of a tree, bounded by
 * the client's limits, run as a worker-pool job (fs-tree.h).
 *
 * Unlike the reference 0.169.0, names that are not valid UTF-8 are listed
 * (their bytes percent-encoded in the URI, so the path round-trips); the
 * reference converts them lossily and then reports ENOENT for the mangled path.
 *
 * Memory: the reference's maximums (maxDepth 64, maxDirectories 10 000,
 * maxEntries 50 000) are enforced as the reference does, with its error text.
 * They are also the server-side cap: a walk never holds more than maxEntries
 * entries, and while one directory is read only the maxEntries-still-allowed
 * smallest names are kept (the rest could never be listed), so a directory
 * with millions of entries does not grow the job.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conn.h"
#include "fs-req.h"
#include "fs-tree.h"
#include "fs.h"
#include "jsonrpc.h"
#include "macro.h"
#include "params.h"
#include "rpc-fs.h"
#include "rpc.h"

#define WALK_MAX_DEPTH 64    /* the reference's fs/walk maximums */
#define WALK_MAX_DIRECTORIES 10000
#define WALK_MAX_ENTRIES 50000

#define WALK_LIMIT_TEXT \
	"filesystem walk limits exceed maximums: depth=64, directories=10000, entries=50000"

/* "<dir>/<name>" without doubling the slash of "/". NULL on OOM. */
static char *path_join(const char *dir, const char *name)
{
	char *s;

	if (asprintf(&s, "%s%s%s", dir, strcmp(dir, "/") == 0 ? "" : "/", name) < 0)
		return NULL;
	return s;
}

/* ---- the walk (worker thread) ---- */

/* Directory identities already queued: a link to one of them is not entered again. */
struct id_set {
	struct dev_ino *v;
	bool *used;
	size_t n, cap;
};

static size_t id_hash(const struct dev_ino *id, size_t cap)
{
	uint64_t h = (uint64_t)id->ino * 0x9E3779B97F4A7C15ull ^ (uint64_t)id->dev;

	h ^= h >> 31;
	return (size_t)h & (cap - 1);
}

/* Returns 1 if id was added, 0 if it was there, -ENOMEM. */
static int id_set_add(struct id_set *s, const struct dev_ino *id)
{
	size_t i;

	if ((s->n + 1) * 2 > s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 64;
		struct dev_ino *nv = calloc(ncap, sizeof(*nv));
		bool *nu = calloc(ncap, sizeof(*nu));

		if (!nv || !nu) {
			free(nv);
			free(nu);
			return -ENOMEM;
		}
		for (size_t k = 0; k < s->cap; k++) {
			if (!s->used[k])
				continue;
			for (i = id_hash(&s->v[k], ncap); nu[i]; i = (i + 1) & (ncap - 1))
				;
			nv[i] = s->v[k];
			nu[i] = true;
		}
		free(s->v);
		free(s->used);
		s->v = nv;
		s->used = nu;
		s->cap = ncap;
	}
	for (i = id_hash(id, s->cap); s->used[i]; i = (i + 1) & (s->cap - 1))
		if (s->v[i].dev == id->dev && s->v[i].ino == id->ino)
			return 0;
	s->v[i] = *id;
	s->used[i] = true;
	s->n++;
	return 1;
}

struct walk_dir {
	char *path;   /* native, as the client spelled the root + names */
	size_t level; /* 0 = root */
	bool via_link;
};

struct walk_cand {
	char *name;
	bool dir;
	bool link;
};

static int cand_cmp(const void *a, const void *b)
{
	/* strcmp compares as unsigned char: the byte order the reference sorts by. */
	return strcmp(((const struct walk_cand *)a)->name, ((const struct walk_cand *)b)->name);
}

static void cands_free(struct walk_cand *c, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		free(c[i].name);
}

/*
 * Room for element n of the array v (cap elements of size bytes), which
 * doubles when full (first: its first size). Returns the array, maybe
 * moved, or NULL without memory (v unchanged).
 */
static void *grow(void *v, size_t n, size_t *cap, size_t size, size_t first)
{
	size_t ncap;

	if (n < *cap)
		return v;
	ncap = *cap ? *cap * 2 : first;
	v = realloc(v, ncap * size);
	if (v)
		*cap = ncap;
	return v;
}

static int walk_add_error(struct tree_job *j, const char *path, int err)
{
	struct walk_error *e = grow(j->errs, j->n_errs, &j->cap_errs, sizeof(*e), 8);

	if (!e)
		return -ENOMEM;
	j->errs = e;
	j->errs[j->n_errs].path = strdup(path);
	if (!j->errs[j->n_errs].path)
		return -ENOMEM;
	j->errs[j->n_errs++].err = err < 0 ? -err : err;
	return 0;
}

struct walk {
	struct tree_job *j;
	json_t *entries;
	struct id_set seen;
	struct walk_dir *q;
	size_t q_head, q_len, q_cap;
	size_t n_entries, n_dirs;
};

static int walk_enqueue(struct walk *w, char *path, size_t level, bool via_link)
{
	struct walk_dir *q = grow(w->q, w->q_len, &w->q_cap, sizeof(*q), 64);

	if (!q)
		return -ENOMEM;
	w->q = q;
	w->q[w->q_len++] = (struct walk_dir){ .path = path, .level = level, .via_link = via_link };
	return 0;
}

/*
 * What an entry of d is: *is_dir, *is_link. Returns 1 to list it, 0 to
 * pass over it (FIFOs, sockets, devices; links when not following or to
 * no directory; an entry that cannot be stat'ed, put into errors), or
 * -ENOMEM.
 */
static int entry_kind(struct tree_job *j, DIR *d, const char *dirpath, const struct dirent *de,
		      bool *is_dir, bool *is_link)
{
	struct stat st;

	*is_dir = *is_link = false;
	switch (de->d_type) {
	case DT_DIR:
		*is_dir = true;
		break;
	case DT_REG:
		break;
	case DT_LNK:
		*is_link = true;
		break;
	case DT_UNKNOWN:
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			_cleanup_free_ char *p = path_join(dirpath, de->d_name);
			int r = p ? walk_add_error(j, p, errno) : -ENOMEM;

			return r < 0 ? r : 0;
		}
		if (S_ISDIR(st.st_mode))
			*is_dir = true;
		else if (S_ISLNK(st.st_mode))
			*is_link = true;
		else if (!S_ISREG(st.st_mode))
			return 0;
		break;
	default:
		return 0; /* FIFOs, sockets, devices are not listed */
	}
	if (*is_link) {
		/* Only links to directories are listed, and only when following. */
		if (!j->follow || fstatat(dirfd(d), de->d_name, &st, 0) < 0 || !S_ISDIR(st.st_mode))
			return 0;
		*is_dir = true;
	}
	return 1;
}

/* Appends a candidate to *c (n of cap). Returns 0 or -ENOMEM. */
static int cand_push(struct walk_cand **c, size_t *n, size_t *cap, const char *name, bool is_dir,
		     bool is_link)
{
	struct walk_cand *nc = grow(*c, *n, cap, sizeof(*nc), 64);

	if (!nc)
		return -ENOMEM;
	*c = nc;
	(*c)[*n].name = strdup(name);
	if (!(*c)[*n].name)
		return -ENOMEM;
	(*c)[*n].dir = is_dir;
	(*c)[*n].link = is_link;
	(*n)++;
	return 0;
}

/*
 * Reads one directory's candidates: regular files and directories (and, when
 * following, links to directories). Keeps at most `budget` smallest names:
 * whenever the array doubles past it, it is sorted and cut, and *overflow
 * records that something beyond the entry limit exists.
 */
static int walk_read_dir(struct walk *w, int fd, const char *dirpath, struct walk_cand **ret,
			 size_t *ret_n, bool *overflow)
{
	struct tree_job *j = w->j;
	size_t budget = j->max_entries - w->n_entries, n = 0, cap = 0;
	struct walk_cand *c = NULL;
	struct dirent *de;
	DIR *d;
	int r = 0;

	d = fdopendir(fd);
	if (!d) {
		safe_close(fd);
		return -errno;
	}
	for (;;) {
		bool is_dir, is_link;

		errno = 0;
		de = readdir(d);
		if (!de) {
			/* Keep what was read; the directory goes into errors. */
			if (errno)
				r = walk_add_error(j, dirpath, errno);
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		r = entry_kind(j, d, dirpath, de, &is_dir, &is_link);
		if (r < 0)
			break;
		if (r == 0)
			continue;
		r = cand_push(&c, &n, &cap, de->d_name, is_dir, is_link);
		if (r < 0)
			break;
		if (n >= 2 * budget + 64) {
			qsort(c, n, sizeof(*c), cand_cmp);
			cands_free(c, budget, n);
			n = budget;
			*overflow = true;
		}
	}
	closedir(d);
	if (r < 0) {
		cands_free(c, 0, n);
		free(c);
		return r;
	}
	if (n > 1)
		qsort(c, n, sizeof(*c), cand_cmp);
	*ret = c;
	*ret_n = n;
	return 0;
}

/*
 * Lists one directory (already counted) and queues its subdirectories.
 * Returns 1 when the walk must stop, 0 to go on, or -errno.
 */
static int walk_one(struct walk *w, struct walk_dir *dir)
{
	struct tree_job *j = w->j;
	struct walk_cand *c = NULL;
	bool overflow = false;
	size_t n = 0, i;
	int fd, r;

	fd = open(dir->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (dir->via_link ? 0 : O_NOFOLLOW));
	if (fd < 0)
		return walk_add_error(j, dir->path, errno);
	/* A second fd for fstatat below: walk_read_dir's DIR owns (and closes) fd. */
	_cleanup_close_ int dfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (dfd < 0) {
		r = -errno;
		safe_close(fd);
		return r;
	}
	r = walk_read_dir(w, fd, dir->path, &c, &n, &overflow);
	if (r < 0)
		return r;
	for (i = 0; i < n; i++) {
		_cleanup_free_ char *full = NULL;
		json_t *e, *uri;
		struct stat st;

		if (w->n_entries >= j->max_entries) {
			j->truncated = true;
			break;
		}
		full = path_join(dir->path, c[i].name);
		uri = full ? fs_uri_json(full) : NULL;
		if (!uri) {
			r = -ENOMEM;
			break;
		}
		e = json_object();
		json_object_set_new(e, "path", uri);
		json_object_set_new(e, "kind", json_string(c[i].dir ? "directory" : "file"));
		json_array_append_new(w->entries, e);
		w->n_entries++;

		if (!c[i].dir || dir->level + 1 > j->max_depth ||
		    (j->prune_hidden && c[i].name[0] == '.'))
			continue;
		if (fstatat(dfd, c[i].name, &st, c[i].link ? 0 : AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* gone meanwhile; reading it would only fail */
		r = id_set_add(&w->seen, &(struct dev_ino){ st.st_dev, st.st_ino });
		if (r < 0)
			break;
		if (r == 0)
			continue; /* already visited (a link to an ancestor or a sibling) */
		r = walk_enqueue(w, full, dir->level + 1, c[i].link);
		if (r < 0)
			break;
		full = NULL;
	}
	if (r >= 0 && i == n && overflow)
		j->truncated = true;
	cands_free(c, 0, n);
	free(c);
	if (r < 0)
		return r;
	return j->truncated ? 1 : 0;
}

void fs_walk_run(struct tree_job *j)
{
	struct walk w = { .j = j };
	struct stat st;
	char *root;
	int r = 0;

	/*
	 * Like the reference: the root is stat'ed following links (a dangling or
	 * looping root is an error), a root that is not a directory, or a link
	 * when links are not followed, gives an empty listing.
	 */
	if (stat(j->path, &st) < 0) {
		j->err = -errno;
		return;
	}
	w.entries = json_array();
	if (!S_ISDIR(st.st_mode))
		goto done;
	if (!j->follow) {
		struct stat lst;

		if (lstat(j->path, &lst) < 0) {
			j->err = -errno;
			goto fail;
		}
		if (S_ISLNK(lst.st_mode))
			goto done;
	}
	r = id_set_add(&w.seen, &(struct dev_ino){ st.st_dev, st.st_ino });
	root = strdup(j->path);
	if (r < 0 || !root || walk_enqueue(&w, root, 0, true) < 0) {
		free(root);
		j->err = -ENOMEM;
		goto fail;
	}
	while (w.q_head < w.q_len) {
		struct walk_dir cur;

		/* A directory still to read past either limit means the listing is incomplete. */
		if (w.n_dirs >= j->max_dirs || w.n_entries >= j->max_entries) {
			j->truncated = true;
			break;
		}
		/* walk_one may grow (move) w.q: work on a copy of the slot. */
		cur = w.q[w.q_head];
		w.n_dirs++;
		r = walk_one(&w, &cur);
		free(cur.path);
		w.q[w.q_head++].path = NULL;
		if (r < 0) {
			j->err = r;
			goto fail;
		}
		if (r > 0)
			break;
	}
done:
	j->result = json_object();
	json_object_set_new(j->result, "entries", TAKE_PTR(w.entries));
fail:
	json_decref(w.entries);
	for (size_t i = w.q_head; i < w.q_len; i++)
		free(w.q[i].path);
	free(w.q);
	free(w.seen.v);
	free(w.seen.used);
}

void fs_walk_finish(struct tree_job *j)
{
	json_t *errs = json_array();

	for (size_t i = 0; i < j->n_errs; i++) {
		char text[256];
		json_t *e = json_object();

		json_object_set_new(e, "path", fs_uri_json(j->errs[i].path));
		json_object_set_new(e, "message",
				    json_string(rpc_os_error(j->errs[i].err, text, sizeof(text))));
		json_array_append_new(errs, e);
	}
	json_object_set_new(j->result, "errors", errs);
	json_object_set_new(j->result, "truncated", json_boolean(j->truncated));
}

/* ---- request ---- */

/*
 * serde decodes a nested struct when it reaches its key (or position), so an
 * error inside `options` wins over a bad top-level field sent after it, not
 * before it.
 */
static bool options_first(json_t *params)
{
	const char *k;
	json_t *v;

	if (json_is_array(params))
		return json_array_size(params) >= 2 && json_is_string(json_array_get(params, 0));
	if (!json_is_object(params))
		return false;
	json_object_foreach(params, k, v) {
		if (jrpc_key_is(k, "options"))
			return true;
		if (jrpc_key_is(k, "path") && !json_is_string(v))
			return false;
		if (jrpc_key_is(k, "sandbox") && !json_is_null(v) && !json_is_object(v))
			return false;
	}
	return false;
}

static json_t *options_of(json_t *params)
{
	if (json_is_array(params))
		return json_array_get(params, 1);
	return json_object_get(params, "options");
}

/*
 * A shallow copy of options that params_decode reads as serde reads
 * WalkOptions: pruneHiddenDirectories filled in when absent. It is `#[serde(default)] bool`, not Option<bool>:
 * absent means false but null is a type error, which params.c expresses with
 * a required field.
 */
static json_t *options_copy(json_t *o)
{
	json_t *copy, *v;
	const char *k;
	size_t i;

	if (json_is_array(o)) {
		copy = json_array();
		json_array_foreach(o, i, v)
			json_array_append_new(copy, json_incref(v));
		if (json_array_size(copy) == 4)
			json_array_append_new(copy, json_false());
		return copy;
	}
	copy = json_object();
	json_object_foreach(o, k, v)
		json_object_setn_new_nocheck(copy, k, jrpc_key_len(k), json_incref(v));
	if (!json_object_get(copy, "pruneHiddenDirectories"))
		json_object_set_new(copy, "pruneHiddenDirectories", json_false());
	return copy;
}

static bool decode_options(struct conn *c, json_t *id, json_t *options, json_t **o, json_t **copy)
{
	static const struct pfield fields[] = {
		{ "maxDepth", P_USIZE, true, NULL },
		{ "maxDirectories", P_USIZE, true, NULL },
		{ "maxEntries", P_USIZE, true, NULL },
		{ "followDirectorySymlinks", P_BOOL, true, NULL },
		{ "pruneHiddenDirectories", P_BOOL, true, NULL }, /* see options_copy */
	};
	char err[ERRSZ];

	/* serde takes a struct from a map or, positionally, from a sequence. */
	if (!json_is_object(options) && !json_is_array(options)) {
		params_type_error(options ? options : json_null(), "struct WalkOptions", err,
				  sizeof(err));
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", err);
		return false;
	}
	*copy = options_copy(options);
	return params_decode_or_reply(c, id, *copy, "WalkOptions", fields, ELEMENTSOF(fields), o);
}

void fs_rpc_walk(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "path", P_STRING, true, NULL },
		{ "options", P_ANY, true, NULL }, /* decoded by decode_options */
		{ "sandbox", P_STRUCT, false, "struct WireFileSystemSandboxContext" },
	};
	json_t *f[ELEMENTSOF(fields)], *o[5], *copy = NULL;
	_cleanup_free_ char *native = NULL;
	uint64_t depth = 0, dirs = 0, entries = 0;
	bool ok, follow = false, prune = false;
	struct tree_job *j;

	if (options_first(params))
		ok = decode_options(c, id, options_of(params), o, &copy) &&
		     params_decode_or_reply(c, id, params, "WireFsWalkParams", fields,
					    ELEMENTSOF(fields), f);
	else
		ok = params_decode_or_reply(c, id, params, "WireFsWalkParams", fields,
					    ELEMENTSOF(fields), f) &&
		     decode_options(c, id, f[1], o, &copy);
	if (ok) {
		/* o[] is borrowed from copy: read it before letting copy go. */
		depth = params_u64(o[0], 0);
		dirs = params_u64(o[1], 0);
		entries = params_u64(o[2], 0);
		follow = params_bool(o[3], false);
		prune = params_bool(o[4], false);
	}
	json_decref(copy);
	if (!ok)
		return;
	/* The reference checks the path, then the limits, then the disk. */
	if (fs_param_path(c, id, f[0], &native) < 0)
		return;
	if (dirs == 0 || entries == 0) {
		rpc_reply_error(c, id, RPC_INVALID_REQUEST,
				"filesystem walk limits must be greater than zero");
		return;
	}
	if (depth > WALK_MAX_DEPTH || dirs > WALK_MAX_DIRECTORIES || entries > WALK_MAX_ENTRIES) {
		rpc_reply_error(c, id, RPC_INVALID_REQUEST, WALK_LIMIT_TEXT);
		return;
	}
	if (fs_refuse_sandbox(c, id, f[2]))
		return;
	j = fs_tree_job_new(c, id, OP_WALK);
	if (!j)
		return;
	j->path = TAKE_PTR(native);
	j->max_depth = (size_t)depth;
	j->max_dirs = (size_t)dirs;
	j->max_entries = (size_t)entries;
	j->follow = follow;
	j->prune_hidden = prune;
	fs_tree_job_submit(c, id, j);
}
