/* SPDX-License-Identifier: MIT */
/*
 * fs/remove's job (PROTOCOL.md §6.18; the request is fs-rmcp.c's), on the
 * worker pool: "/" and the server's working and home directories (and
 * their ancestors) refused, the parent opened without following symlinks
 * unless asked, and a tree removed through directory fds with O_NOFOLLOW.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs-rmcp.h"
#include "fs-tree.h"
#include "macro.h"

static int check_protected(struct tree_job *j, const struct stat *st)
{
	return fs_check_protected_as(j, st, "fs/remove", "remove", j->path);
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
	d = fs_open_dir_fd(fd, &r);
	if (!d)
		return r;
	while ((r = fs_next_entry(d, &de)) > 0) {
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

	r = fs_protect_all(j);
	if (r < 0)
		return r;

	if (strcmp(j->path, "/") == 0)
		return fs_refuse(j, "fs/remove refuses to remove the root directory");
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
		return fs_refuse(j, "path contains a symbolic link");
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
