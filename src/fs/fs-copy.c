/* SPDX-License-Identifier: MIT */
/*
 * fs/copy's job (PROTOCOL.md §6.19; the request is fs-rmcp.c's), on the
 * worker pool: a file, a symlink or a tree copied through directory fds,
 * never onto itself, never into itself, never from or onto the server's
 * secret files, set-id bits never carried over; the destination's missing
 * parents made first.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs-req.h"
#include "fs-rmcp.h"
#include "fs-tree.h"
#include "fs.h"
#include "macro.h"

#define COPY_MAX_DEPTH 4096   /* a bind-mount loop must not recurse forever */
#define COPY_CHUNK (1u << 30) /* bytes per copy_file_range call */
#define COPY_BUF (128u << 10) /* read/write fallback buffer */

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
		return fs_refuse(j,
				 "fs/copy only supports regular files, directories, and symlinks");
	r = fs_refuse_secret(j, &ss);
	if (r < 0)
		return r;
	/* Like the reference (std::fs::copy), a symlink at the destination is written through. */
	out = openat(ddir, dname, O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
		     ss.st_mode & 0777);
	if (out < 0)
		return fs_trunc_open_errno(ddir, dname, true, -errno);
	if (fstat(out, &ds) < 0)
		return -errno;
	r = fs_refuse_secret(j, &ds);
	if (r < 0)
		return r;
	if (ds.st_dev == ss.st_dev && ds.st_ino == ss.st_ino)
		return fs_refuse(j, "fs/copy source and destination are the same file");
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
	d = fs_open_dir_fd(sfd, &r);
	if (!d)
		return r;
	while ((r = fs_next_entry(d, &de)) > 0) {
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
	r = fs_ancestor_is(AT_FDCWD, p, src);
	if (r < 0)
		return r;
	if (r > 0)
		return fs_refuse(j, "fs/copy cannot copy a directory to itself or one of its "
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
		return fs_refuse(j,
				 "fs/copy only supports regular files, directories, and symlinks");
	if (!j->recursive)
		return fs_refuse(j,
				 "fs/copy requires recursive: true when sourcePath is a directory");
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
