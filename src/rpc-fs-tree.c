/* SPDX-License-Identifier: MIT */
/*
 * fs/readDirectory, fs/walk, fs/remove, fs/copy and fs/canonicalize
 * (PROTOCOL.md §6.16-§6.19, §6.21).
 *
 * None of these has an io_uring opcode (getdents, realpath, a tree of
 * unlinks or copies), so every request becomes a job on the worker pool
 * (worker.h): run() does the blocking syscalls in a worker thread on the
 * job's own data only, done() replies on the loop thread. A job whose
 * connection closes meanwhile is orphaned (its rpc_pending is cancelled) and
 * freed by done() without a reply.
 *
 * JSON built in run() (result trees) is private to the job until done() hands
 * it to the connection, which is safe with jansson: no object is ever shared
 * between threads. Texts that need strerror() are formatted in done().
 *
 * Where uexec deliberately differs from the reference 0.169.0:
 *  - fs/copy of a file onto itself (same device and inode, whatever the
 *    names) is refused instead of truncating the file to 0 bytes (§13);
 *  - fs/copy does not carry set-user-ID/set-group-ID bits over to a copy that
 *    ends up with another owner/group (the reference copies all 07777 bits);
 *  - fs/remove refuses `/` and any directory that is, or contains, the
 *    server's working directory or home directory (§13); a tree is removed
 *    through directory fds with O_NOFOLLOW, never following a symlink;
 *  - fs/remove with followSymlinks:false works (a symlink anywhere in the
 *    path is refused with "path contains a symbolic link"); the reference
 *    answers "recursive no-follow removal is unsupported" unless
 *    recursive:false is also given;
 *  - fs/walk lists names that are not valid UTF-8 (their bytes
 *    percent-encoded in the URI, so the path round-trips); the reference
 *    converts them lossily and then reports ENOENT for the mangled path.
 *
 * fs/walk memory: the reference's maximums (maxDepth 64, maxDirectories
 * 10 000, maxEntries 50 000) are enforced as the reference does, with its
 * error text. They are also the server-side cap: a walk never holds more than
 * maxEntries entries, and while one directory is read only the
 * maxEntries-still-allowed smallest names are kept (the rest could never be
 * listed), so a directory with millions of entries does not grow the job.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "conn.h"
#include "fs.h"
#include "macro.h"
#include "params.h"
#include "rpc.h"
#include "utf8.h"
#include "worker.h"

#define ERRSZ 512
#define MAX_PENDING_JOBS 256 /* worker jobs queued or running, server-wide */
#define WALK_MAX_DEPTH 64    /* the reference's fs/walk maximums */
#define WALK_MAX_DIRECTORIES 10000
#define WALK_MAX_ENTRIES 50000
#define COPY_MAX_DEPTH 4096   /* a bind-mount loop must not recurse forever */
#define COPY_CHUNK (1u << 30) /* bytes per copy_file_range call */
#define COPY_BUF (128u << 10) /* read/write fallback buffer */
#define ANCESTOR_MAX 4096     /* ".." steps when looking for the source above a destination */

#define WALK_LIMIT_TEXT \
	"filesystem walk limits exceed maximums: depth=64, directories=10000, entries=50000"

enum tree_op {
	OP_READ_DIRECTORY,
	OP_WALK,
	OP_REMOVE,
	OP_COPY,
	OP_CANONICALIZE,
};

struct dev_ino {
	dev_t dev;
	ino_t ino;
};

struct walk_error {
	char *path; /* native */
	int err;    /* positive errno */
};

struct tree_job {
	struct work work;
	struct rpc_pending pend;
	bool orphaned; /* the connection went away: free in done(), reply to nobody */
	bool ran;      /* run() executed (the pool may complete unstarted jobs at shutdown) */
	enum tree_op op;

	/* request (owned) */
	char *path; /* fs/copy: sourcePath */
	char *dest; /* fs/copy: destinationPath */
	bool recursive;
	bool force;
	bool follow; /* fs/remove followSymlinks; fs/walk followDirectorySymlinks */
	bool prune_hidden;
	size_t max_depth, max_dirs, max_entries;
	char *cwd; /* fs/remove: directories that must survive (NULL = none) */
	char *home;

	/* outcome, written by run() */
	int err;  /* negative errno, replied with the reference's mapping */
	int code; /* with msg: a JSON-RPC error of our own */
	char *msg;
	json_t *result;
	bool truncated;
	struct walk_error *errs;
	size_t n_errs;
	size_t cap_errs;

	/* fs/remove: identities of the protected directories */
	struct dev_ino *keep;
	const char **keep_what;
	size_t n_keep;
};

static void job_free(struct tree_job *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->n_errs; i++)
		free(j->errs[i].path);
	free(j->errs);
	free(j->keep);
	free(j->keep_what);
	json_decref(j->result);
	free(j->msg);
	free(j->path);
	free(j->dest);
	free(j->cwd);
	free(j->home);
	free(j);
}

/*
 * A refusal of our own (-32600 unless said otherwise). Returns -ECANCELED so
 * that callers deep in a tree simply unwind; done() sees msg first.
 */
static int refuse(struct tree_job *j, const char *fmt, ...) _printf_(2, 3);

static int refuse(struct tree_job *j, const char *fmt, ...)
{
	va_list ap;

	free(j->msg);
	va_start(ap, fmt);
	if (vasprintf(&j->msg, fmt, ap) < 0)
		j->msg = NULL;
	va_end(ap);
	j->code = RPC_INVALID_REQUEST;
	return j->msg ? -ECANCELED : -ENOMEM;
}

/* "<dir>/<name>" without doubling the slash of "/". NULL on OOM. */
static char *path_join(const char *dir, const char *name)
{
	char *s;

	if (asprintf(&s, "%s%s%s", dir, strcmp(dir, "/") == 0 ? "" : "/", name) < 0)
		return NULL;
	return s;
}

static bool same_id(const struct stat *st, const struct dev_ino *id)
{
	return st->st_dev == id->dev && st->st_ino == id->ino;
}

/* ---- fs/readDirectory ---- */

/*
 * Rust's String::from_utf8_lossy, which the reference applies to file
 * names: every maximal invalid subsequence (not every byte: "\xE2\x82" is
 * one) becomes U+FFFD. Returns a malloc'd NUL-terminated string.
 */
static char *utf8_lossy(const char *name, size_t n)
{
	const uint8_t *s = (const uint8_t *)name;
	char *out = malloc(n * 3 + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n;) {
		uint8_t c = s[i], lo = 0x80, hi = 0xBF;
		size_t w, k;

		if (c < 0x80) {
			*o++ = (char)c;
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF)
			w = 2;
		else if (c >= 0xE0 && c <= 0xEF)
			w = 3;
		else if (c >= 0xF0 && c <= 0xF4)
			w = 4;
		else
			w = 0;
		/* The second byte's range excludes overlongs, surrogates and > U+10FFFF. */
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
		else if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
		for (k = 1; k < w && i + k < n; k++) {
			uint8_t b = s[i + k];

			if (k == 1 ? (b < lo || b > hi) : (b & 0xC0) != 0x80)
				break;
		}
		if (w && k == w) {
			memcpy(o, s + i, w);
			o += w;
			i += w;
		} else {
			memcpy(o, "\xEF\xBF\xBD", 3);
			o += 3;
			i += w ? k : 1;
		}
	}
	*o = 0;
	return out;
}

static json_t *name_json(const char *name)
{
	size_t n = strlen(name);
	char *lossy;
	json_t *j;

	if (utf8_is_valid((const uint8_t *)name, n))
		return json_stringn(name, n);
	lossy = utf8_lossy(name, n);
	j = lossy ? json_string(lossy) : NULL;
	free(lossy);
	return j;
}

static void run_read_directory(struct tree_job *j)
{
	json_t *entries;
	struct dirent *de;
	DIR *d;
	int fd;

	/* O_DIRECTORY: a FIFO fails with ENOTDIR before it could block the worker. */
	fd = open(j->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		j->err = -errno;
		return;
	}
	d = fdopendir(fd);
	if (!d) {
		j->err = -errno;
		safe_close(fd);
		return;
	}
	entries = json_array();
	for (;;) {
		bool is_dir, is_file;
		struct stat st;
		json_t *e;

		errno = 0;
		de = readdir(d);
		if (!de)
			break;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		is_dir = de->d_type == DT_DIR;
		is_file = de->d_type == DT_REG;
		if (de->d_type == DT_LNK || de->d_type == DT_UNKNOWN) {
			/* Types of the target; dangling (or looping) links are left out. */
			if (fstatat(dirfd(d), de->d_name, &st, 0) < 0)
				continue;
			is_dir = S_ISDIR(st.st_mode);
			is_file = S_ISREG(st.st_mode);
		}
		e = json_object();
		json_object_set_new(e, "fileName", name_json(de->d_name));
		json_object_set_new(e, "isDirectory", json_boolean(is_dir));
		json_object_set_new(e, "isFile", json_boolean(is_file));
		json_array_append_new(entries, e);
	}
	if (errno) {
		j->err = -errno;
		json_decref(entries);
		closedir(d);
		return;
	}
	closedir(d);
	j->result = json_object();
	json_object_set_new(j->result, "entries", entries);
}

/* ---- fs/canonicalize ---- */

static void run_canonicalize(struct tree_job *j)
{
	_cleanup_free_ char *real = realpath(j->path, NULL);
	json_t *uri;

	if (!real) {
		j->err = -errno;
		return;
	}
	uri = fs_uri_json(real);
	if (!uri) {
		j->err = -ENOMEM;
		return;
	}
	j->result = json_object();
	json_object_set_new(j->result, "path", uri);
}

/* ---- fs/walk ---- */

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

static int walk_add_error(struct tree_job *j, const char *path, int err)
{
	if (j->n_errs == j->cap_errs) {
		size_t ncap = j->cap_errs ? j->cap_errs * 2 : 8;
		struct walk_error *n = realloc(j->errs, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		j->errs = n;
		j->cap_errs = ncap;
	}
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
	if (w->q_len == w->q_cap) {
		size_t ncap = w->q_cap ? w->q_cap * 2 : 64;
		struct walk_dir *n = realloc(w->q, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		w->q = n;
		w->q_cap = ncap;
	}
	w->q[w->q_len++] = (struct walk_dir){ .path = path, .level = level, .via_link = via_link };
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
		bool is_dir = false, is_link = false;
		struct stat st;

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
		switch (de->d_type) {
		case DT_DIR:
			is_dir = true;
			break;
		case DT_REG:
			break;
		case DT_LNK:
			is_link = true;
			break;
		case DT_UNKNOWN:
			if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
				_cleanup_free_ char *p = path_join(dirpath, de->d_name);

				r = p ? walk_add_error(j, p, errno) : -ENOMEM;
				if (r < 0)
					goto out;
				continue;
			}
			if (S_ISDIR(st.st_mode))
				is_dir = true;
			else if (S_ISLNK(st.st_mode))
				is_link = true;
			else if (!S_ISREG(st.st_mode))
				continue;
			break;
		default:
			continue; /* FIFOs, sockets, devices are not listed */
		}
		if (is_link) {
			/* Only links to directories are listed, and only when following. */
			if (!j->follow || fstatat(dirfd(d), de->d_name, &st, 0) < 0 ||
			    !S_ISDIR(st.st_mode))
				continue;
			is_dir = true;
		}
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct walk_cand *nc = realloc(c, ncap * sizeof(*nc));

			if (!nc) {
				r = -ENOMEM;
				goto out;
			}
			c = nc;
			cap = ncap;
		}
		c[n].name = strdup(de->d_name);
		if (!c[n].name) {
			r = -ENOMEM;
			goto out;
		}
		c[n].dir = is_dir;
		c[n].link = is_link;
		n++;
		if (n >= 2 * budget + 64) {
			qsort(c, n, sizeof(*c), cand_cmp);
			cands_free(c, budget, n);
			n = budget;
			*overflow = true;
		}
	}
out:
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

static void run_walk(struct tree_job *j)
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

/* ---- fs/remove ---- */

/*
 * Identities of "/", the server's working and home directories and all
 * their ancestors: removing any of them would remove the server's own
 * ground. Compared by device + inode, so other spellings (symlinks, "..",
 * bind mounts of the same directory) are caught too.
 */
static int protect_path(struct tree_job *j, const char *path, const char *what)
{
	_cleanup_free_ char *real = realpath(path, NULL);
	char *p;

	if (!real)
		return 0; /* gone: nothing to protect */
	for (p = real;; p++) {
		if (*p == '/' || *p == 0) {
			char saved = *p;
			struct dev_ino *nk;
			const char **nw;
			struct stat st;

			*p = 0;
			if (stat(p == real ? "/" : real, &st) == 0) {
				nk = realloc(j->keep, (j->n_keep + 1) * sizeof(*nk));
				if (nk)
					j->keep = nk;
				nw = realloc(j->keep_what, (j->n_keep + 1) * sizeof(*nw));
				if (nw)
					j->keep_what = nw;
				if (!nk || !nw)
					return -ENOMEM;
				j->keep[j->n_keep] = (struct dev_ino){ st.st_dev, st.st_ino };
				j->keep_what[j->n_keep++] = p == real ? NULL : what;
			}
			*p = saved;
			if (!saved)
				break;
		}
	}
	return 0;
}

static int check_protected(struct tree_job *j, const struct stat *st)
{
	for (size_t i = 0; i < j->n_keep; i++) {
		if (!same_id(st, &j->keep[i]))
			continue;
		if (!j->keep_what[i])
			return refuse(j, "fs/remove refuses to remove the root directory");
		return refuse(j, "fs/remove refuses to remove `%s`: it is or contains the "
			      "server's %s", j->path, j->keep_what[i]);
	}
	return 0;
}

/*
 * Removes the directory `name` in parent and everything below it without
 * following any symlink: each level is opened with O_NOFOLLOW relative to its
 * parent's fd, and every unlink is relative to the directory fd it was read
 * from. Swapping a directory for a symlink meanwhile cannot redirect the
 * removal elsewhere: the open fails (ELOOP/ENOTDIR) and the link is unlinked.
 */
static int rm_tree(struct tree_job *j, int parent, const char *name)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int fd, r = 0;

	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP || errno == ENOTDIR)
			/* Not a directory (any more): remove the entry itself. */
			return unlinkat(parent, name, 0) < 0 && errno != ENOENT ? -errno : 0;
		return errno == ENOENT ? 0 : -errno;
	}
	/* Checked on the open fd: a directory swapped in after an lstat is caught too. */
	if (fstat(fd, &st) < 0 || (r = check_protected(j, &st)) < 0) {
		r = r < 0 ? r : -errno;
		safe_close(fd);
		return r;
	}
	d = fdopendir(fd);
	if (!d) {
		r = -errno;
		safe_close(fd);
		return r;
	}
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			r = -errno;
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (de->d_type == DT_DIR)
			r = rm_tree(j, dirfd(d), de->d_name);
		else if (unlinkat(dirfd(d), de->d_name, 0) == 0 || errno == ENOENT)
			r = 0;
		else if (errno == EISDIR)
			r = rm_tree(j, dirfd(d), de->d_name); /* d_type unknown, or swapped */
		else
			r = -errno;
		if (r < 0)
			break;
	}
	closedir(d);
	if (r < 0)
		return r;
	return unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT ? -errno : 0;
}

static int open_parent(struct tree_job *j, const char *parent)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS,
	};
	int fd;

	if (j->follow)
		return open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
	fd = (int)syscall(SYS_openat2, AT_FDCWD, parent, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS) {
		/* openat2 needs Linux 5.6: compare with the resolved path instead. */
		_cleanup_free_ char *real = realpath(parent, NULL);

		if (real && strcmp(real, parent) != 0) {
			errno = ELOOP;
			return -1;
		}
		fd = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	return fd;
}

static int do_remove(struct tree_job *j)
{
	_cleanup_free_ char *parent = NULL;
	_cleanup_close_ int pfd = -1;
	const char *name;
	struct stat st;
	char *slash;
	int r;

	r = protect_path(j, "/", NULL);
	if (r >= 0 && j->cwd)
		r = protect_path(j, j->cwd, "working directory");
	if (r >= 0 && j->home)
		r = protect_path(j, j->home, "home directory");
	if (r < 0)
		return r;

	if (strcmp(j->path, "/") == 0)
		return refuse(j, "fs/remove refuses to remove the root directory");
	/* fs_param_path normalised the path: absolute, no "." / ".." / "//", no trailing slash. */
	slash = strrchr(j->path, '/');
	name = slash + 1;
	parent = slash == j->path ? strdup("/") : strndup(j->path, (size_t)(slash - j->path));
	if (!parent)
		return -ENOMEM;

	pfd = open_parent(j, parent);
	if (pfd < 0) {
		if (errno == ELOOP && !j->follow)
			return refuse(j, "path contains a symbolic link");
		return errno == ENOENT && j->force ? 0 : -errno;
	}
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT && j->force ? 0 : -errno;
	if (S_ISLNK(st.st_mode) && !j->follow)
		return refuse(j, "path contains a symbolic link");
	if (!S_ISDIR(st.st_mode))
		/* A symlink is removed itself, never its target. */
		return unlinkat(pfd, name, 0) < 0 ? -errno : 0;
	if (!j->recursive) {
		r = check_protected(j, &st);
		if (r < 0)
			return r;
		return unlinkat(pfd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
	}
	return rm_tree(j, pfd, name);
}

static void run_remove(struct tree_job *j)
{
	j->err = do_remove(j);
	if (j->err >= 0)
		j->result = json_object();
}

/* ---- fs/copy ---- */

/* Copies the data of in to out: copy_file_range, or read/write where the kernel cannot. */
static int copy_data(int in, int out)
{
	_cleanup_free_ char *buf = NULL;
	bool first = true;
	ssize_t n, w;

	for (;;) {
		n = copy_file_range(in, NULL, out, NULL, COPY_CHUNK, 0);
		if (n > 0) {
			first = false;
			continue;
		}
		if (n == 0 && !first)
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		/*
		 * Fall back on the first call only: EXDEV/EINVAL/EOPNOTSUPP/ENOSYS
		 * (no support for this pair of files), or 0 bytes at once, which is
		 * also what procfs-style files of size 0 answer although they have
		 * data (Rust's fs::copy makes the same check).
		 */
		if (n == 0 || errno == EXDEV || errno == EINVAL || errno == EOPNOTSUPP ||
		    errno == ENOSYS || errno == EBADF)
			break;
		return -errno;
	}
	if (!first)
		return 0;
	buf = malloc(COPY_BUF);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		n = read(in, buf, COPY_BUF);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		for (ssize_t off = 0; off < n; off += w) {
			w = write(out, buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR) {
				w = 0;
				continue;
			}
			if (w < 0)
				return -errno;
		}
	}
}

/*
 * Copies the regular file sdir/sname to ddir/dname. The destination is
 * opened without O_TRUNC first so that a destination that is the source
 * itself (a hard link, a symlink to it, the same name) is recognised by
 * device + inode before anything is lost; the reference truncates it.
 */
static int copy_file(struct tree_job *j, int sdir, const char *sname, int ddir, const char *dname)
{
	_cleanup_close_ int in = -1, out = -1;
	struct stat ss, ds;
	mode_t mode;
	int r, fl;

	/* O_NONBLOCK: if a FIFO was swapped in, the open must not wait for a writer. */
	in = openat(sdir, sname, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (in < 0)
		return -errno;
	if (fstat(in, &ss) < 0)
		return -errno;
	if (!S_ISREG(ss.st_mode))
		return refuse(j, "fs/copy only supports regular files, directories, and symlinks");
	/* Like the reference (std::fs::copy), a symlink at the destination is written through. */
	out = openat(ddir, dname, O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
		     ss.st_mode & 0777);
	if (out < 0)
		return -errno;
	if (fstat(out, &ds) < 0)
		return -errno;
	if (ds.st_dev == ss.st_dev && ds.st_ino == ss.st_ino)
		return refuse(j, "fs/copy source and destination are the same file");
	if (S_ISREG(ds.st_mode) && ftruncate(out, 0) < 0)
		return -errno;
	fl = fcntl(out, F_GETFL);
	if (fl >= 0)
		(void)fcntl(out, F_SETFL, fl & ~O_NONBLOCK);
	fl = fcntl(in, F_GETFL);
	if (fl >= 0)
		(void)fcntl(in, F_SETFL, fl & ~O_NONBLOCK);
	r = copy_data(in, out);
	if (r < 0)
		return r;
	if (!S_ISREG(ds.st_mode))
		return 0;
	/*
	 * The permission bits follow the source, as the reference's do (also on
	 * an existing file). Set-ID bits only survive when the copy keeps the
	 * source's owner/group: a root server must not mint root-owned
	 * set-user-ID copies of other users' programs.
	 */
	mode = ss.st_mode & 07777;
	if (ss.st_uid != ds.st_uid)
		mode &= ~(mode_t)S_ISUID;
	if (ss.st_gid != ds.st_gid)
		mode &= ~(mode_t)S_ISGID;
	return fchmod(out, mode) < 0 ? -errno : 0;
}

static int copy_link(int sdir, const char *sname, int ddir, const char *dname)
{
	_cleanup_free_ char *target = malloc(PATH_MAX + 1);
	ssize_t n;

	if (!target)
		return -ENOMEM;
	n = readlinkat(sdir, sname, target, PATH_MAX + 1);
	if (n < 0)
		return -errno;
	if (n > PATH_MAX)
		return -ENAMETOOLONG;
	target[n] = 0;
	return symlinkat(target, ddir, dname) < 0 ? -errno : 0;
}

/*
 * Copies the directory open as sfd (taken) to ddir/dname, merging into an
 * existing directory. Source symlinks are copied as links and never
 * followed; FIFOs, sockets and devices inside a tree are skipped, as the
 * reference does. Directories get the default mode (umask), as the
 * reference's do; files keep their permission bits.
 */
static int copy_tree(struct tree_job *j, int sfd, int ddir, const char *dname, unsigned depth)
{
	_cleanup_close_ int dfd = -1;
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (depth > COPY_MAX_DEPTH) {
		safe_close(sfd);
		return -ELOOP;
	}
	if (mkdirat(ddir, dname, 0777) < 0 && errno != EEXIST) {
		r = -errno;
		safe_close(sfd);
		return r;
	}
	dfd = openat(ddir, dname, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		/* Something else exists there: "File exists", as the reference's mkdir says. */
		r = errno == ENOTDIR ? -EEXIST : -errno;
		safe_close(sfd);
		return r;
	}
	d = fdopendir(sfd);
	if (!d) {
		r = -errno;
		safe_close(sfd);
		return r;
	}
	for (;;) {
		unsigned char type;
		struct stat st;
		int cfd;

		errno = 0;
		de = readdir(d);
		if (!de) {
			r = -errno;
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		type = de->d_type;
		if (type == DT_UNKNOWN) {
			if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
				r = -errno;
				break;
			}
			type = S_ISDIR(st.st_mode)   ? DT_DIR
			       : S_ISREG(st.st_mode) ? DT_REG
			       : S_ISLNK(st.st_mode) ? DT_LNK
						     : DT_FIFO;
		}
		switch (type) {
		case DT_DIR:
			cfd = openat(dirfd(d), de->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			r = cfd < 0 ? -errno : copy_tree(j, cfd, dfd, de->d_name, depth + 1);
			break;
		case DT_REG:
			r = copy_file(j, dirfd(d), de->d_name, dfd, de->d_name);
			break;
		case DT_LNK:
			r = copy_link(dirfd(d), de->d_name, dfd, de->d_name);
			break;
		default:
			r = 0;
		}
		if (r < 0)
			break;
	}
	closedir(d);
	return r;
}

/*
 * The refusal of a directory copy into itself or below itself, by identity:
 * the destination's deepest existing directory and each of its ancestors
 * (through "..", i.e. after symlinks were resolved) is compared with the
 * source. On success *ret_existing is the length of the destination prefix
 * that exists.
 */
static int check_not_inside(struct tree_job *j, const struct stat *src, size_t *ret_existing)
{
	_cleanup_free_ char *p = strdup(j->dest);
	_cleanup_close_ int fd = -1;
	struct stat st;
	size_t len;

	if (!p)
		return -ENOMEM;
	for (;;) {
		if (stat(p, &st) == 0) {
			if (!S_ISDIR(st.st_mode))
				return strcmp(p, j->dest) == 0 ? -EEXIST : -ENOTDIR;
			break;
		}
		if (errno != ENOENT)
			return -errno;
		/* Up one component (the root always exists). */
		char *slash = strrchr(p, '/');
		if (slash == p)
			p[1] = 0;
		else
			*slash = 0;
	}
	len = strlen(p);
	fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (unsigned i = 0; i < ANCESTOR_MAX; i++) {
		int up;

		if (fstat(fd, &st) < 0)
			return -errno;
		if (st.st_dev == src->st_dev && st.st_ino == src->st_ino)
			return refuse(j, "fs/copy cannot copy a directory to itself or one of its "
					 "descendants");
		up = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (up < 0)
			return -errno;
		struct stat ust;

		if (fstat(up, &ust) < 0) {
			safe_close(up);
			return -errno;
		}
		safe_close(fd);
		fd = up;
		if (ust.st_dev == st.st_dev && ust.st_ino == st.st_ino)
			break; /* the root is its own parent */
	}
	*ret_existing = strcmp(p, "/") == 0 ? 0 : len;
	return 0;
}

/* mkdir -p of the destination's missing parents (the reference creates them for directories). */
static int make_parents(const char *dest, size_t existing)
{
	_cleanup_free_ char *p = strdup(dest);
	char *s;

	if (!p)
		return -ENOMEM;
	s = strrchr(p, '/');
	if (!s || (size_t)(s - p) <= existing)
		return 0;
	*s = 0;
	for (s = p + existing + 1;; s++) {
		if (*s == '/' || *s == 0) {
			char saved = *s;

			*s = 0;
			if (mkdir(p, 0777) < 0 && errno != EEXIST)
				return -errno;
			*s = saved;
			if (!saved)
				break;
		}
	}
	return 0;
}

static int do_copy(struct tree_job *j)
{
	_cleanup_close_ int sfd = -1;
	struct stat st;
	size_t existing = 0;
	int r;

	if (lstat(j->path, &st) < 0)
		return -errno;
	if (S_ISLNK(st.st_mode))
		/* A symlink is copied as a link, recursive or not (the reference does the same). */
		return copy_link(AT_FDCWD, j->path, AT_FDCWD, j->dest);
	if (S_ISREG(st.st_mode))
		return copy_file(j, AT_FDCWD, j->path, AT_FDCWD, j->dest);
	if (!S_ISDIR(st.st_mode))
		return refuse(j, "fs/copy only supports regular files, directories, and symlinks");
	if (!j->recursive)
		return refuse(j, "fs/copy requires recursive: true when sourcePath is a directory");
	sfd = open(j->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sfd < 0)
		return -errno;
	/* The identity of what was opened, not of what was lstat'ed. */
	if (fstat(sfd, &st) < 0)
		return -errno;
	r = check_not_inside(j, &st, &existing);
	if (r < 0)
		return r;
	r = make_parents(j->dest, existing);
	if (r < 0)
		return r;
	return copy_tree(j, TAKE_FD(sfd), AT_FDCWD, j->dest, 0);
}

static void run_copy(struct tree_job *j)
{
	j->err = do_copy(j);
	if (j->err >= 0)
		j->result = json_object();
}

/* ---- jobs ---- */

static void job_run(struct work *w)
{
	struct tree_job *j = container_of(w, struct tree_job, work);

	j->ran = true;
	switch (j->op) {
	case OP_READ_DIRECTORY:
		run_read_directory(j);
		break;
	case OP_WALK:
		run_walk(j);
		break;
	case OP_REMOVE:
		run_remove(j);
		break;
	case OP_COPY:
		run_copy(j);
		break;
	case OP_CANONICALIZE:
		run_canonicalize(j);
		break;
	}
	/* -ECANCELED only unwinds a refusal; anything else with msg unset is an OS error. */
	if (j->msg)
		j->err = 0;
}

static void job_done(struct work *w)
{
	struct tree_job *j = container_of(w, struct tree_job, work);
	struct conn *c = j->pend.conn;
	json_t *id = j->pend.id;

	if (j->orphaned) {
		job_free(j);
		return;
	}
	if (!j->ran)
		rpc_reply_errno_internal(c, id, ECANCELED);
	else if (j->msg)
		rpc_reply_error(c, id, j->code, "%s", j->msg);
	else if (j->err < 0 || !j->result)
		rpc_reply_errno(c, id, j->err < 0 ? j->err : -ENOMEM);
	else {
		if (j->op == OP_WALK) {
			json_t *errs = json_array();

			for (size_t i = 0; i < j->n_errs; i++) {
				char text[256];
				json_t *e = json_object();

				json_object_set_new(e, "path", fs_uri_json(j->errs[i].path));
				json_object_set_new(e, "message",
						    json_string(rpc_os_error(j->errs[i].err, text,
									     sizeof(text))));
				json_array_append_new(errs, e);
			}
			json_object_set_new(j->result, "errors", errs);
			json_object_set_new(j->result, "truncated", json_boolean(j->truncated));
		}
		rpc_reply(c, id, TAKE_PTR(j->result));
	}
	rpc_pending_end(&j->pend);
	job_free(j);
}

static void job_cancel(struct rpc_pending *p)
{
	struct tree_job *j = container_of(p, struct tree_job, pend);

	/* The worker may still be running it: done() frees it. */
	rpc_pending_end(&j->pend);
	j->orphaned = true;
}

/* A job for c/id, or NULL after replying (busy, OOM). */
static struct tree_job *job_new(struct conn *c, json_t *id, enum tree_op op)
{
	struct tree_job *j;

	/* Each job may hold a worker for long: bound the queue rather than memory and latency. */
	if (worker_pending(c->srv) > MAX_PENDING_JOBS) {
		rpc_reply_error(c, id, RPC_INTERNAL_ERROR,
				"server busy: too many filesystem operations in progress");
		return NULL;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		rpc_reply_errno_internal(c, id, ENOMEM);
		return NULL;
	}
	j->op = op;
	j->work.run = job_run;
	j->work.done = job_done;
	return j;
}

static void job_submit(struct conn *c, json_t *id, struct tree_job *j)
{
	rpc_pending_start(&j->pend, c, id, job_cancel);
	worker_submit(c->srv, &j->work);
}

static bool decode(struct conn *c, json_t *id, json_t *params, const char *name,
		   const struct pfield *f, size_t n, json_t **out)
{
	char err[ERRSZ];

	if (params_decode(params, name, f, n, out, err, sizeof(err)) < 0) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", err);
		return false;
	}
	return true;
}

/* Path + sandbox of a request: replies and returns NULL on a bad path or a refused sandbox. */
static struct tree_job *path_job(struct conn *c, json_t *id, enum tree_op op, json_t *path,
				 json_t *sandbox)
{
	_cleanup_free_ char *native = NULL;
	struct tree_job *j;

	if (fs_param_path(c, id, path, &native) < 0)
		return NULL;
	if (fs_refuse_sandbox(c, id, sandbox))
		return NULL;
	j = job_new(c, id, op);
	if (j)
		j->path = TAKE_PTR(native);
	return j;
}

static void rpc_fs_read_directory(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "path", P_STRING, true, NULL },
		{ "sandbox", P_STRUCT, false, "struct WireFileSystemSandboxContext" },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct tree_job *j;

	if (!decode(c, id, params, "WireFsReadDirectoryParams", fields, ELEMENTSOF(fields), f))
		return;
	j = path_job(c, id, OP_READ_DIRECTORY, f[0], f[1]);
	if (j)
		job_submit(c, id, j);
}
RPC_METHOD("fs/readDirectory", "filesystem", rpc_fs_read_directory)

static void rpc_fs_canonicalize(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "path", P_STRING, true, NULL },
		{ "sandbox", P_STRUCT, false, "struct WireFileSystemSandboxContext" },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct tree_job *j;

	if (!decode(c, id, params, "WireFsCanonicalizeParams", fields, ELEMENTSOF(fields), f))
		return;
	j = path_job(c, id, OP_CANONICALIZE, f[0], f[1]);
	if (j)
		job_submit(c, id, j);
}
RPC_METHOD("fs/canonicalize", "filesystem", rpc_fs_canonicalize)

static void rpc_fs_remove(struct conn *c, json_t *id, json_t *params)
{
	/* Declaration order as the reference's (seen through positional params). */
	static const struct pfield fields[] = {
		{ "path", P_STRING, true, NULL },
		{ "recursive", P_BOOL, false, NULL },
		{ "force", P_BOOL, false, NULL },
		{ "followSymlinks", P_BOOL, false, NULL },
		{ "sandbox", P_STRUCT, false, "struct WireFileSystemSandboxContext" },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct tree_job *j;
	char cwd[PATH_MAX];
	const char *home;

	if (!decode(c, id, params, "WireFsRemoveParams", fields, ELEMENTSOF(fields), f))
		return;
	j = path_job(c, id, OP_REMOVE, f[0], f[4]);
	if (!j)
		return;
	/* Both defaults are true: {"path": X} removes a whole tree (§6.18). */
	j->recursive = params_bool(f[1], true);
	j->force = params_bool(f[2], true);
	j->follow = params_bool(f[3], true);
	/*
	 * The same directories environmentInfo reports as cwd and userHomeDir,
	 * captured here: worker threads do not read the environment.
	 */
	home = getenv("HOME");
	if ((getcwd(cwd, sizeof(cwd)) && !(j->cwd = strdup(cwd))) ||
	    (home && home[0] == '/' && !(j->home = strdup(home)))) {
		/* Never run unprotected for want of memory. */
		rpc_reply_errno_internal(c, id, ENOMEM);
		job_free(j);
		return;
	}
	job_submit(c, id, j);
}
RPC_METHOD("fs/remove", "filesystem", rpc_fs_remove)

static void rpc_fs_copy(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "sourcePath", P_STRING, true, NULL },
		{ "destinationPath", P_STRING, true, NULL },
		{ "recursive", P_BOOL, true, NULL },
		{ "sandbox", P_STRUCT, false, "struct WireFileSystemSandboxContext" },
	};
	json_t *f[ELEMENTSOF(fields)];
	_cleanup_free_ char *dest = NULL;
	struct tree_job *j;

	if (!decode(c, id, params, "WireFsCopyParams", fields, ELEMENTSOF(fields), f))
		return;
	/* Source first, then destination: the order the reference reports URI errors in. */
	j = path_job(c, id, OP_COPY, f[0], f[3]);
	if (!j)
		return;
	if (fs_param_path(c, id, f[1], &dest) < 0) {
		job_free(j);
		return;
	}
	j->dest = TAKE_PTR(dest);
	j->recursive = params_bool(f[2], false);
	job_submit(c, id, j);
}
RPC_METHOD("fs/copy", "filesystem", rpc_fs_copy)

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
		if (strcmp(k, "options") == 0)
			return true;
		if (strcmp(k, "path") == 0 && !json_is_string(v))
			return false;
		if (strcmp(k, "sandbox") == 0 && !json_is_null(v) && !json_is_object(v))
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
 * A limit as serde_json would see it. The JSON layer hands integers of
 * 2^63..2^64 over as reals: those are valid usizes, only too large (u64::MAX
 * as "unlimited" is a likely client value; a double cannot tell it from
 * 2^64). Any other real is serde's "invalid number", which params.c prints
 * for -1.
 */
static json_t *limit_value(json_t *v)
{
	double d;

	if (!json_is_real(v))
		return json_incref(v);
	d = json_real_value(v);
	/* Doubles this large are all integers. */
	if (d >= 9223372036854775808.0 && d <= 18446744073709551616.0)
		return json_integer(INT64_MAX);
	return json_integer(-1);
}

/*
 * A shallow copy of options that params_decode reads as serde reads
 * WalkOptions: limits through limit_value(), and pruneHiddenDirectories
 * filled in when absent. It is `#[serde(default)] bool`, not Option<bool>:
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
			json_array_append_new(copy, i < 3 ? limit_value(v) : json_incref(v));
		if (json_array_size(copy) == 4)
			json_array_append_new(copy, json_false());
		return copy;
	}
	copy = json_object();
	json_object_foreach(o, k, v) {
		bool limit = strcmp(k, "maxDepth") == 0 || strcmp(k, "maxDirectories") == 0 ||
			     strcmp(k, "maxEntries") == 0;

		json_object_set_new(copy, k, limit ? limit_value(v) : json_incref(v));
	}
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
	return decode(c, id, *copy, "WalkOptions", fields, ELEMENTSOF(fields), o);
}

static void rpc_fs_walk(struct conn *c, json_t *id, json_t *params)
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
		     decode(c, id, params, "WireFsWalkParams", fields, ELEMENTSOF(fields), f);
	else
		ok = decode(c, id, params, "WireFsWalkParams", fields, ELEMENTSOF(fields), f) &&
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
	j = job_new(c, id, OP_WALK);
	if (!j)
		return;
	j->path = TAKE_PTR(native);
	j->max_depth = (size_t)depth;
	j->max_dirs = (size_t)dirs;
	j->max_entries = (size_t)entries;
	j->follow = follow;
	j->prune_hidden = prune;
	job_submit(c, id, j);
}
RPC_METHOD("fs/walk", "filesystem", rpc_fs_walk)
