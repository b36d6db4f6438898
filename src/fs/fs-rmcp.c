/* SPDX-License-Identifier: MIT */
/*
 * fs/remove and fs/copy (PROTOCOL.md §6.18, §6.19): removal and copy of
 * trees through directory fds, run as worker-pool jobs (fs-tree.h); and
 * uexec's fs/rename (README "Protocol extensions"), whose safety checks run
 * as such a job before the rename itself is an IORING_OP_RENAMEAT.
 *
 * Where uexec deliberately differs from the reference 0.169.0:
 *  - fs/copy of a file onto itself (same device and inode, whatever the
 *    names) is refused instead of truncating the file to 0 bytes (§13);
 *  - fs/copy never carries set-user-ID/set-group-ID bits over to the copy,
 *    and an existing destination loses its own before it is rewritten (the
 *    reference copies all 07777 bits, and as root keeps the destination's);
 *  - fs/copy and fs/rename refuse the server's secret files (secrets.h) as
 *    source or destination (EACCES);
 *  - fs/remove refuses `/` and any directory that is, or contains, the
 *    server's working directory or home directory (§13); a tree is removed
 *    through directory fds with O_NOFOLLOW, never following a symlink;
 *  - fs/remove with followSymlinks:false works (a symlink anywhere in the
 *    path is refused with "path contains a symbolic link"); the reference
 *    answers "recursive no-follow removal is unsupported" unless
 *    recursive:false is also given.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "conn.h"
#include "fs-req.h"
#include "fs-tree.h"
#include "fs.h"
#include "macro.h"
#include "params.h"
#include "rpc-fs.h"
#include "rpc.h"

#define COPY_MAX_DEPTH 4096   /* a bind-mount loop must not recurse forever */
#define COPY_CHUNK (1u << 30) /* bytes per copy_file_range call */
#define COPY_BUF (128u << 10) /* read/write fallback buffer */
#define ANCESTOR_MAX 4096     /* ".." steps when looking for the source above a destination */

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

static bool same_id(const struct stat *st, const struct dev_ino *id)
{
	return st->st_dev == id->dev && st->st_ino == id->ino;
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

/* method refuses to verb path (e.g. "fs/remove", "remove") when st is protected. */
static int check_protected_as(struct tree_job *j, const struct stat *st, const char *method,
			      const char *verb, const char *path)
{
	for (size_t i = 0; i < j->n_keep; i++) {
		if (!same_id(st, &j->keep[i]))
			continue;
		if (!j->keep_what[i])
			return refuse(j, "%s refuses to %s the root directory", method, verb);
		return refuse(j, "%s refuses to %s `%s`: it is or contains the server's %s", method,
			      verb, path, j->keep_what[i]);
	}
	return 0;
}

static int check_protected(struct tree_job *j, const struct stat *st)
{
	return check_protected_as(j, st, "fs/remove", "remove", j->path);
}

/* What check_protected() compares with: "/", the server's cwd and home, their ancestors. */
static int protect_all(struct tree_job *j)
{
	int r = protect_path(j, "/", NULL);

	if (r >= 0 && j->cwd)
		r = protect_path(j, j->cwd, "working directory");
	if (r >= 0 && j->home)
		r = protect_path(j, j->home, "home directory");
	return r;
}

/* fdopendir() that closes fd when it fails; *ret_err gets -errno then. */
static DIR *open_dir_fd(int fd, int *ret_err)
{
	DIR *d = fdopendir(fd);

	if (!d) {
		*ret_err = -errno;
		safe_close(fd);
	}
	return d;
}

/* The next entry other than "." and "..": 1 and *ret, 0 at the end, or -errno. */
static int next_entry(DIR *d, struct dirent **ret)
{
	for (;;) {
		errno = 0;
		*ret = readdir(d);
		if (!*ret)
			return -errno;
		if (strcmp((*ret)->d_name, ".") != 0 && strcmp((*ret)->d_name, "..") != 0)
			return 1;
	}
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
	d = open_dir_fd(fd, &r);
	if (!d)
		return r;
	while ((r = next_entry(d, &de)) > 0) {
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

	r = protect_all(j);
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
		/* A symlink among the directories: the reference's O_NOFOLLOW walk says ENOTDIR. */
		if (errno == ELOOP && !j->follow)
			return -ENOTDIR;
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

void fs_remove_run(struct tree_job *j)
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

/* -EACCES if st is one of the server's secret files (secrets.h), noted for done() to log. */
static int refuse_secret(struct tree_job *j, const struct stat *st)
{
	if (!server_secret_ids_has(&j->secrets, st->st_dev, st->st_ino))
		return 0;
	j->secret_refused = true;
	return -EACCES;
}

/*
 * Copies the regular file sdir/sname to ddir/dname. The destination is
 * opened without O_TRUNC first so that a destination that is the source
 * itself (a hard link, a symlink to it, the same name) or one of the
 * server's secret files (a link planted in the workspace) is recognised by
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
	r = refuse_secret(j, &ss);
	if (r < 0)
		return r;
	/* Like the reference (std::fs::copy), a symlink at the destination is written through. */
	out = openat(ddir, dname, O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
		     ss.st_mode & 0777);
	if (out < 0)
		return fs_trunc_open_errno(ddir, dname, true, -errno);
	if (fstat(out, &ds) < 0)
		return -errno;
	r = refuse_secret(j, &ds);
	if (r < 0)
		return r;
	if (ds.st_dev == ss.st_dev && ds.st_ino == ss.st_ino)
		return refuse(j, "fs/copy source and destination are the same file");
	if (S_ISREG(ds.st_mode)) {
		/* An existing set-id file loses its bits before it holds other bytes. */
		r = fs_drop_setid(out, ds.st_mode);
		if (r < 0)
			return r;
		if (ftruncate(out, 0) < 0)
			return -errno;
	}
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
	 * The permission and sticky bits follow the source, as the reference's
	 * do (also on an existing file); set-id bits never do (the reference
	 * copies all 07777): a root server would mint root-owned set-user-ID
	 * copies of programs (a setuid-root copy of any program a link in the
	 * workspace names, out of every sandbox's reach to make itself).
	 */
	mode = ss.st_mode & 01777;
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
	d = open_dir_fd(sfd, &r);
	if (!d)
		return r;
	while ((r = next_entry(d, &de)) > 0) {
		unsigned char type;
		struct stat st;
		int cfd;

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
 * 1 when the directory dir, or one of its ancestors (through "..", i.e.
 * after symlinks were resolved), is src; 0 when none is; or -errno.
 */
static int ancestor_is(int at, const char *dir, const struct stat *src)
{
	_cleanup_close_ int fd = openat(at, dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st, ust;

	if (fd < 0)
		return -errno;
	for (unsigned i = 0; i < ANCESTOR_MAX; i++) {
		int up;

		if (fstat(fd, &st) < 0)
			return -errno;
		if (st.st_dev == src->st_dev && st.st_ino == src->st_ino)
			return 1;
		up = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (up < 0)
			return -errno;
		if (fstat(up, &ust) < 0) {
			safe_close(up);
			return -errno;
		}
		safe_close(fd);
		fd = up;
		if (ust.st_dev == st.st_dev && ust.st_ino == st.st_ino)
			return 0; /* the root is its own parent */
	}
	return 0;
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
	struct stat st;
	size_t len;
	int r;

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
	r = ancestor_is(AT_FDCWD, p, src);
	if (r < 0)
		return r;
	if (r > 0)
		return refuse(j, "fs/copy cannot copy a directory to itself or one of its "
				 "descendants");
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

void fs_copy_run(struct tree_job *j)
{
	j->err = do_copy(j);
	if (j->err >= 0)
		j->result = json_object();
}

/* ---- fs/rename ---- */

/*
 * The text of fs/rename's EXDEV: the kernel renames only within one mount
 * (a bind mount of the same filesystem counts as another), and in a sandbox
 * Landlock answers it too for a move that would change what the file is
 * reachable with.
 */
static int refuse_exdev(struct tree_job *j)
{
	int r = refuse(j, "Cross-device link (os error 18): fs/rename cannot move `%s` to `%s`: "
			  "they are on different filesystems or mounts (or a sandbox forbids "
			  "the move); use fs/copy, then fs/remove", j->path, j->dest);

	j->code = RPC_INTERNAL_ERROR; /* the class of an OS error (PROTOCOL.md §4) */
	return r;
}

/*
 * Opens path's parent directory (O_PATH, following symlinks as any path
 * lookup does) into *ret_fd and points *ret_base at path's last name. From
 * here on the checks and the rename look the last name up in that open
 * directory only: a parent swapped for a symlink meanwhile changes nothing.
 */
static int rename_anchor(const char *path, int *ret_fd, const char **ret_base)
{
	_cleanup_free_ char *parent = NULL;
	const char *slash = strrchr(path, '/');

	if (!slash || !slash[1])
		return -EINVAL; /* not absolute, or "/" (refused before) */
	parent = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
	if (!parent)
		return -ENOMEM;
	*ret_fd = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*ret_fd < 0)
		return -errno;
	*ret_base = slash + 1;
	return 0;
}

/*
 * The checks of fs/rename, in the worker: the source exists; neither the
 * source nor a directory the rename would replace is "/", the server's
 * working or home directory or one of their ancestors (fs/remove's rule: a
 * rename takes them away as surely); a directory does not move into itself
 * or below itself (fs/copy's rule; the kernel's EINVAL stays the backstop);
 * the two names are not the same file (rename(2) would do nothing and
 * succeed, leaving both names). Symlinks are moved, never followed; each
 * last name is looked up in its parent as opened by rename_anchor().
 */
static int do_rename(struct tree_job *j)
{
	struct stat ss, ds;
	int r;

	r = protect_all(j);
	if (r < 0)
		return r;
	if (strcmp(j->path, "/") == 0)
		return refuse(j, "fs/rename refuses to move the root directory");
	if (strcmp(j->dest, "/") == 0)
		return refuse(j, "fs/rename refuses to replace the root directory");
	r = rename_anchor(j->path, &j->src_dirfd, &j->src_base);
	if (r < 0)
		return r;
	if (fstatat(j->src_dirfd, j->src_base, &ss, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	/* A secret moved into the workspace would be readable there (secrets.h). */
	r = refuse_secret(j, &ss);
	if (r < 0)
		return r;
	if (S_ISDIR(ss.st_mode)) {
		r = check_protected_as(j, &ss, "fs/rename", "move", j->path);
		if (r < 0)
			return r;
	}
	r = rename_anchor(j->dest, &j->dst_dirfd, &j->dst_base);
	if (r < 0)
		return r;
	if (fstatat(j->dst_dirfd, j->dst_base, &ds, AT_SYMLINK_NOFOLLOW) == 0) {
		/* ...and one replaced would be another token or key at the next reload. */
		r = refuse_secret(j, &ds);
		if (r < 0)
			return r;
		if (ds.st_dev == ss.st_dev && ds.st_ino == ss.st_ino)
			return refuse(j, "fs/rename source and destination are the same file");
		if (S_ISDIR(ds.st_mode) && !(j->rename_flags & RENAME_NOREPLACE)) {
			r = check_protected_as(j, &ds, "fs/rename", "replace", j->dest);
			if (r < 0)
				return r;
		}
	} else if (errno != ENOENT) {
		return -errno;
	}
	if (S_ISDIR(ss.st_mode)) {
		/* The destination's directory as opened, then its ancestors through "..". */
		r = ancestor_is(j->dst_dirfd, ".", &ss);
		if (r < 0)
			return r;
		if (r > 0)
			return refuse(j, "fs/rename cannot move a directory into itself or one of "
					 "its descendants");
	}
	if (j->rename_on_ring)
		return 0;
	/* No RENAMEAT on this ring: the rename runs here, in the same directories. */
	if (renameat2(j->src_dirfd, j->src_base, j->dst_dirfd, j->dst_base, j->rename_flags) < 0)
		return errno == EXDEV ? refuse_exdev(j) : -errno;
	return 0;
}

void fs_rename_run(struct tree_job *j)
{
	j->err = do_rename(j);
	if (j->err >= 0)
		j->result = json_object();
}

static void on_renameat(struct uring_op *op, int res, uint32_t flags)
{
	struct tree_job *j = container_of(op, struct tree_job, ring_op);

	if (!j->orphaned) {
		struct conn *c = j->pend.conn;

		if (res == -EXDEV) {
			refuse_exdev(j);
			rpc_reply_error(c, j->pend.id, j->code, "%s", j->msg ? j->msg : "");
		} else if (res < 0) {
			rpc_reply_errno(c, j->pend.id, res);
		} else {
			rpc_reply_serialized(c, j->pend.id, "{}", 2);
		}
		rpc_pending_end(&j->pend);
	}
	fs_tree_job_free(j);
}

bool fs_rename_submit(struct tree_job *j)
{
	struct io_uring_sqe *sqe;

	if (j->op != OP_RENAME || !j->rename_on_ring || j->msg || j->err < 0 || !j->result_text)
		return false;
	if (j->orphaned) {
		/* Nobody waits for it any more: the move is not made. */
		fs_tree_job_free(j);
		return true;
	}
	sqe = uring_get_sqe(&j->srv->ring, &j->ring_op, on_renameat);
	io_uring_prep_renameat(sqe, j->src_dirfd, j->src_base, j->dst_dirfd, j->dst_base,
			       j->rename_flags);
	return true;
}

/* ---- requests ---- */

void fs_rpc_remove(struct conn *c, json_t *id, json_t *params)
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

	if (!fs_decode_params(c, id, params, "WireFsRemoveParams", fields, ELEMENTSOF(fields), f))
		return;
	j = fs_tree_path_job(c, id, OP_REMOVE, f[0], f[4]);
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
		fs_tree_job_free(j);
		return;
	}
	fs_tree_job_submit(c, id, j);
}

/*
 * A tree job with a source and a destination path (fs/copy, fs/rename). Source
 * first, then destination: the order the reference reports URI errors in.
 * NULL after answering the request.
 */
static struct tree_job *two_path_job(struct conn *c, json_t *id, enum tree_op op, json_t *src,
				     json_t *dst, json_t *sandbox)
{
	_cleanup_free_ char *dest = NULL;
	struct tree_job *j = fs_tree_path_job(c, id, op, src, sandbox);

	if (!j)
		return NULL;
	if (fs_param_path(c, id, dst, &dest) < 0) {
		fs_tree_job_free(j);
		return NULL;
	}
	j->dest = TAKE_PTR(dest);
	return j;
}

void fs_rpc_copy(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "sourcePath", P_STRING, true, NULL },
		{ "destinationPath", P_STRING, true, NULL },
		{ "recursive", P_BOOL, true, NULL },
		{ "sandbox", P_STRUCT, false, "struct WireFileSystemSandboxContext" },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct tree_job *j;

	if (!fs_decode_params(c, id, params, "WireFsCopyParams", fields, ELEMENTSOF(fields), f))
		return;
	j = two_path_job(c, id, OP_COPY, f[0], f[1], f[3]);
	if (!j)
		return;
	j->recursive = params_bool(f[2], false);
	j->secrets = *server_secret_ids(c->srv); /* the worker reads its own copy */
	fs_tree_job_submit(c, id, j);
}

void fs_rpc_rename(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "sourcePath", P_STRING, true, NULL },
		{ "destinationPath", P_STRING, true, NULL },
		{ "overwrite", P_BOOL, false, NULL },
		{ "sandbox", P_STRUCT, false, "struct WireFileSystemSandboxContext" },
	};
	json_t *f[ELEMENTSOF(fields)];
	struct tree_job *j;
	char cwd[PATH_MAX];
	const char *home;

	if (!fs_decode_params(c, id, params, "FsRenameParams", fields, ELEMENTSOF(fields), f))
		return;
	j = two_path_job(c, id, OP_RENAME, f[0], f[1], f[3]);
	if (!j)
		return;
	j->rename_flags = params_bool(f[2], true) ? 0 : RENAME_NOREPLACE;
	j->rename_on_ring = c->srv->ring.has_renameat;
	j->secrets = *server_secret_ids(c->srv);
	/* The directories fs/remove protects, captured the same way. */
	home = getenv("HOME");
	if ((getcwd(cwd, sizeof(cwd)) && !(j->cwd = strdup(cwd))) ||
	    (home && home[0] == '/' && !(j->home = strdup(home)))) {
		rpc_reply_errno_internal(c, id, ENOMEM);
		fs_tree_job_free(j);
		return;
	}
	fs_tree_job_submit(c, id, j);
}
