/* SPDX-License-Identifier: MIT */
/*
 * Synthetic mount points (synth.h): shared by concurrent sandboxes of this
 * server and of others on the host, removed by the last one.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "list.h"
#include "log.h"
#include "macro.h"
#include "sandbox-handover.h"
#include "synth.h"

/*
 * A missing path a sandbox must see read-only or hidden inside a writable
 * root (`.git` of a workspace without one, a missing `deny` entry) gets an
 * empty directory on the host as its mount point, made when a plan needs it
 * and removed when the last sandbox using it is gone. Within one server the
 * registry below counts the users. Across servers (two uexec on one host
 * with overlapping writable roots), each holds a shared flock on the
 * directory while any of its sandboxes uses it, and the directory carries a
 * mark (an extended attribute) that tells the others it is such a mount
 * point and not the user's own directory: a server removes it only under an
 * exclusive flock, so never while another server's sandbox uses it. That
 * matters beyond a failed start: removing a directory that is a mount point
 * in another mount namespace is allowed, and it detaches the mounts there
 * (Linux 3.18): another server's sandbox then found its read-only `.git`
 * gone and could create a writable one on the host.
 *
 * Root marks with a `trusted.` attribute, which no sandbox can set (it
 * needs CAP_SYS_ADMIN on the host); a non-root uexec with a `user.` one. On
 * a filesystem without extended attributes the directory is unmarked, and
 * another server takes it for the user's own (binds it, never removes it):
 * the race above is then left to the servers' timing (docs/SECURITY.md).
 */
struct synth_entry {
	struct list_head link;
	unsigned refs;
	int fd; /* the directory, flock(LOCK_SH) held while refs > 0 */
	char path[];
};

static struct list_head synth_registry = LIST_HEAD_INIT(synth_registry);

static const char *synth_mark_name(void)
{
	return geteuid() == 0 ? "trusted.uexec.mountpoint" : "user.uexec.mountpoint";
}

static struct synth_entry *synth_find(const char *path)
{
	struct synth_entry *e;

	list_for_each_entry(e, &synth_registry, link)
		if (strcmp(e->path, path) == 0)
			return e;
	return NULL;
}

/*
 * The parent directory of path (canonical, absolute) as an O_PATH fd, and
 * *name its last component; -errno. No symbolic link is followed on the way
 * (ELOOP): path was canonical when the plan was made, so a link on it now
 * was planted since, by a sandboxed process that can write a directory
 * above (a concurrent sandbox, or the one whose process just ended), to
 * have uexec create or remove a directory elsewhere as root.
 */
static int synth_parent(const char *path, const char **name)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS,
	};
	const char *slash = strrchr(path, '/');
	char parent[PATH_MAX];
	int fd;

	if (!slash || !slash[1] || (size_t)(slash - path) >= sizeof(parent))
		return -EINVAL;
	snprintf(parent, sizeof(parent), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	*name = slash + 1;
	fd = (int)syscall(SYS_openat2, AT_FDCWD, parent, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS) {
		/* openat2 needs Linux 5.6: compare with the resolved path instead. */
		char real[PATH_MAX];

		if (!realpath(parent, real))
			return -errno;
		if (strcmp(real, parent) != 0)
			return -ELOOP;
		fd = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	return fd < 0 ? -errno : fd;
}

/* True if the directory fd carries the mark of a synthetic mount point (another server's). */
static bool synth_marked(int fd)
{
	char v;

	return fgetxattr(fd, synth_mark_name(), &v, sizeof(v)) == 1 && v == '1';
}

/*
 * 1 if the name at path is a marked directory (not following a link): another
 * server's mount point; 0 if not; -ENOENT if it is gone.
 */
static int synth_is_marked(const char *path)
{
	char v;

	if (lgetxattr(path, synth_mark_name(), &v, sizeof(v)) == 1)
		return v == '1';
	return errno == ENOENT ? -ENOENT : 0;
}

/*
 * Opens the directory name under pfd and takes a shared flock on it, if it is
 * a marked mount point still at that name. Returns the fd, -ENOENT when there
 * is none, -EAGAIN when it is being removed or was replaced (try again),
 * -EEXIST when it is not marked (the user's own directory), or -errno.
 */
static int synth_join(int pfd, const char *name)
{
	_cleanup_close_ int fd = -1;
	struct stat st, now;

	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (!synth_marked(fd))
		return -EEXIST;
	/* A server removing it holds LOCK_EX for that long only. */
	if (flock(fd, LOCK_SH | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	/* Removed between the open and the lock, or replaced since: not ours to use. */
	if (fstat(fd, &st) < 0 || st.st_nlink == 0 ||
	    fstatat(pfd, name, &now, AT_SYMLINK_NOFOLLOW) < 0 || now.st_dev != st.st_dev ||
	    now.st_ino != st.st_ino)
		return -EAGAIN;
	return TAKE_FD(fd);
}

/* Makes the directory name under pfd in place, with a shared flock. Returns the fd or -errno. */
static int synth_make_here(int pfd, const char *name, bool mark)
{
	_cleanup_close_ int fd = -1;

	/* Writable until marked: a user. attribute needs write access to the inode. */
	if (mkdirat(pfd, name, mark ? 0700 : 0555) < 0)
		return -errno;
	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || flock(fd, LOCK_SH | LOCK_NB) < 0 ||
	    (mark && (fsetxattr(fd, synth_mark_name(), "1", 1, 0) < 0 || fchmod(fd, 0555) < 0))) {
		int r = -errno;

		(void)unlinkat(pfd, name, AT_REMOVEDIR);
		return r;
	}
	return TAKE_FD(fd);
}

/*
 * Makes the directory name under pfd, marked, with a shared flock. Returns
 * the fd, -EEXIST if something has that name, or -errno. It is made and
 * marked under a name of its own first, then renamed into place without
 * replacing anything: another server never sees it unmarked (it would take
 * it for the user's and not hold it). Where the filesystem has no extended
 * attributes or no RENAME_NOREPLACE, it is made in place.
 */
static int synth_make(int pfd, const char *name)
{
	static unsigned seq;
	_cleanup_close_ int fd = -1;
	char tmp[64];
	int r;

	snprintf(tmp, sizeof(tmp), ".uexec-mount-%d-%u", (int)getpid(), seq++);
	fd = synth_make_here(pfd, tmp, true);
	if (fd < 0) {
		/* no extended attributes here (or not for this uid): unmarked, in place */
		if (fd == -EOPNOTSUPP || fd == -EPERM || fd == -EACCES)
			return synth_make_here(pfd, name, false);
		return fd;
	}
	if (renameat2(pfd, tmp, pfd, name, RENAME_NOREPLACE) < 0) {
		r = -errno;
		(void)unlinkat(pfd, tmp, AT_REMOVEDIR);
		if (r == -EINVAL)
			return synth_make_here(pfd, name, true);
		return r;
	}
	return TAKE_FD(fd);
}

/*
 * Creates (or shares: this server's registry, another server's marked
 * directory) an empty directory at path. Returns 0, -EEXIST if a directory
 * of the user's is there (the caller binds it as any existing path), or
 * -errno.
 */
int sandbox_synth_get(const char *path)
{
	struct synth_entry *e = synth_find(path);
	size_t n = strlen(path);
	const char *name;
	int pfd, fd = -EAGAIN;

	if (e) {
		e->refs++;
		return 0;
	}
	e = malloc(sizeof(*e) + n + 1);
	if (!e)
		return -ENOMEM;
	pfd = synth_parent(path, &name);
	if (pfd < 0) {
		free(e);
		return pfd;
	}
	/*
	 * Another server's first (no directory made in the workspace then), else
	 * a new one. Each round lost is another server making or removing it at
	 * that very moment (it holds the exclusive lock for an unlinkat only, but
	 * a loaded host may not run it for a while): retried with growing pauses,
	 * 50 us to 12.8 ms, 0.12 s in all, then -EBUSY. Never a blocking
	 * flock: a sandbox of another server whose writable root holds this one
	 * can open the directory and keep a lock on it for ever.
	 */
	for (unsigned i = 0; i < 16 && fd == -EAGAIN; i++) {
		if (i > 0) {
			long ns = 50000L << MIN(i - 1, 8u);
			struct timespec pause = { .tv_sec = 0, .tv_nsec = ns };

			(void)nanosleep(&pause, NULL);
		}
		fd = synth_join(pfd, name);
		if (fd == -ENOENT) {
			fd = synth_make(pfd, name);
			if (fd == -EEXIST)
				fd = -EAGAIN;
		}
	}
	close(pfd);
	if (fd < 0) {
		free(e);
		return fd == -EAGAIN ? -EBUSY : fd;
	}
	e->refs = 1;
	e->fd = fd;
	memcpy(e->path, path, n + 1);
	list_add_tail(&e->link, &synth_registry);
	return 0;
}

void sandbox_synth_put(const char *path)
{
	struct synth_entry *e = synth_find(path);
	const char *name;
	int pfd, fd;

	if (!e || --e->refs > 0)
		return;
	/*
	 * Drop this server's shared lock first, then remove the directory only
	 * under an exclusive one: if another server's sandbox uses it (its
	 * shared lock), it stays, and that server removes it when done; of two
	 * servers leaving at once, one gets the lock. Only if still empty: never
	 * remove what someone put there meanwhile. Not through a link planted on
	 * the path since (synth_parent): the directory is then left where its
	 * parent went.
	 */
	close(e->fd);
	pfd = synth_parent(e->path, &name);
	if (pfd >= 0) {
		fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			if (flock(fd, LOCK_EX | LOCK_NB) == 0)
				(void)unlinkat(pfd, name, AT_REMOVEDIR);
			close(fd);
		}
		close(pfd);
	} else {
		log_warning("Left the sandbox mount point %s: %s", e->path, strerror(-pfd));
	}
	list_del(&e->link);
	free(e);
}

int sandbox_synth_known(const char *path, bool is_dir)
{
	if (synth_find(path))
		return 1;
	return is_dir ? synth_is_marked(path) : 0;
}

/*
 * A live upgrade (src/upgrade/sandbox-handover.c): the registry travels with
 * each entry's fd, so that its shared flock (held by the open file
 * description, which execve keeps) is never released in between: no other
 * server can remove a directory still in use meanwhile.
 */
int sandbox_synth_each(int (*fn)(void *ctx, const char *path, unsigned refs, int fd), void *ctx)
{
	struct synth_entry *e;
	int r;

	list_for_each_entry(e, &synth_registry, link) {
		r = fn(ctx, e->path, e->refs, e->fd);
		if (r < 0)
			return r;
	}
	return 0;
}

uint64_t sandbox_synth_refs(void)
{
	struct synth_entry *e;
	uint64_t n = 0;

	list_for_each_entry(e, &synth_registry, link)
		n += e->refs;
	return n;
}

int sandbox_synth_adopt(const char *path, unsigned refs, int fd)
{
	size_t n = strlen(path);
	struct synth_entry *e;

	if (!refs || fd < 0 || path[0] != '/')
		return -EINVAL;
	if (synth_find(path))
		return -EEXIST;
	e = malloc(sizeof(*e) + n + 1);
	if (!e)
		return -ENOMEM;
	e->refs = refs;
	e->fd = fd;
	memcpy(e->path, path, n + 1);
	list_add_tail(&e->link, &synth_registry);
	return 0;
}
