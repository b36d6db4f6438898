/* SPDX-License-Identifier: MIT */
/*
 * The child side of a plan's mount namespace (restrict_fs): writable roots
 * cloned (and idmapped) then mounted over a read-only tree, phase by phase
 * with the pins, read-only binds, protected empty directories and denied
 * paths; the directories re-bound for --sandbox-uid; the private /dev.
 * Called from apply.c between clone and exec, so the same rules hold:
 * async-signal-safe, no malloc, no stdio beyond snprintf into stack buffers.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "macro.h"
#include "plan.h"
#include "apply-mounts.h"
#include "sandbox.h"

/*
 * The private /dev of a sandbox holds only these host nodes (bind-mounted),
 * a new devpts instance, the process's own terminal as /dev/console (as
 * bubblewrap does), and a private /dev/shm: no disks, loop devices, other
 * users' terminals or message queues.
 */
static const char *const dev_nodes[] = {
	"null", "zero", "full", "random", "urandom", "tty",
};

static int set_attr(const char *path, unsigned flags, uint64_t set, uint64_t clr)
{
	struct mount_attr a = { .attr_set = set, .attr_clr = clr };

	return mount_setattr(AT_FDCWD, path, flags, &a, sizeof(a)) < 0 ? -errno : 0;
}

int sandbox_set_ro(const char *path, unsigned flags)
{
	return set_attr(path, flags, MOUNT_ATTR_RDONLY, 0);
}

int sandbox_bind_ro(const char *path)
{
	int fd = open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	int r = 0;

	if (fd < 0)
		return -errno;
	if (move_mount(fd, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		r = -errno;
	close(fd);
	return r < 0 ? r : sandbox_set_ro(path, AT_RECURSIVE);
}

/* Empty read-only files with mode 000 from one detached tmpfs, cloned over each path. */
static int hide_files(char *const *paths, size_t n)
{
	int fs = -1, mnt = -1, f, r = 0;

	if (n == 0)
		return 0;
	fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
	if (fs < 0)
		return -errno;
	if (fsconfig(fs, FSCONFIG_SET_STRING, "size", "4k", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0 ||
	    (mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)) < 0) {
		r = -errno;
		goto out;
	}
	f = openat(mnt, "hidden", O_CREAT | O_WRONLY | O_CLOEXEC, 0);
	if (f < 0 || fchmod(f, 0) < 0) {
		r = -errno;
		if (f >= 0)
			close(f);
		goto out;
	}
	close(f);
	for (size_t i = 0; i < n && r >= 0; i++) {
		int t = open_tree(mnt, "hidden", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);

		if (t < 0) {
			r = -errno;
			break;
		}
		if (move_mount(t, "", AT_FDCWD, paths[i], MOVE_MOUNT_F_EMPTY_PATH) < 0)
			r = -errno;
		close(t);
		if (r >= 0)
			r = sandbox_set_ro(paths[i], 0);
	}
out:
	if (mnt >= 0)
		close(mnt);
	close(fs);
	return r;
}

/* An empty regular file to mount a device node on. */
static int touch(const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/*
 * The terminal's node cloned by path, in this namespace: an fd opened before
 * unshare still points at the old namespace's mount, which cannot be cloned.
 * Returns the clone's fd or -errno.
 */
static int clone_terminal(int tty_fd)
{
	char link[32], tty[64];
	ssize_t n;
	int fd;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", tty_fd);
	n = readlink(link, tty, sizeof(tty) - 1);
	if (n < 0)
		return -errno;
	tty[n] = 0;
	fd = open_tree(AT_FDCWD, tty, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/*
 * On the private /dev: the cloned nodes (dev_fds[i] for dev_nodes[i], -1
 * where the host has none) and the terminal as /dev/console (console, or
 * -1), each nodev and the only device nodes of the view. Closes the fds.
 */
static int bind_dev_nodes(const int *dev_fds, int console, const char **step)
{
	char path[64];
	int r = 0;

	*step = "binding a device node";
	for (size_t i = 0; i < ELEMENTSOF(dev_nodes) && r >= 0; i++) {
		if (dev_fds[i] < 0)
			continue; /* this host has no such node */
		snprintf(path, sizeof(path), "/dev/%s", dev_nodes[i]);
		r = touch(path);
		if (r >= 0 && move_mount(dev_fds[i], "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			r = -errno;
		close(dev_fds[i]);
		/* The only device nodes of the view: the tree is nodev. */
		if (r >= 0)
			r = set_attr(path, 0, 0, MOUNT_ATTR_NODEV);
	}
	if (r >= 0 && console >= 0) {
		*step = "binding the terminal as /dev/console";
		r = touch("/dev/console");
		if (r >= 0 && move_mount(console, "", AT_FDCWD, "/dev/console", MOVE_MOUNT_F_EMPTY_PATH) < 0)
			r = -errno;
		if (r >= 0)
			r = set_attr("/dev/console", 0, 0, MOUNT_ATTR_NODEV);
	}
	if (console >= 0)
		close(console);
	return r;
}

/* The rest of the private /dev: devpts, /dev/shm, the /proc links. */
static int dev_pts_shm_links(const struct sandbox_plan *pl, const char **step)
{
	/* --sandbox-uid: the command's uid owns /dev/shm, as uid 0 does otherwise. */
	char opts[80] = "mode=0755,size=256m";

	*step = "mounting a private devpts";
	if (mkdir("/dev/pts", 0755) < 0 ||
	    mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, pl->devpts_opts) < 0 ||
	    symlink("pts/ptmx", "/dev/ptmx") < 0)
		return -errno;
	/*
	 * Writable (POSIX semaphores, multiprocessing), shown 0755 like the
	 * reference's (bubblewrap's --dev); the process is its owner, uid 0.
	 */
	*step = "mounting a private /dev/shm";
	if (pl->uid_userns_fd >= 0)
		snprintf(opts, sizeof(opts), "mode=0755,size=256m,uid=%u,gid=%u", pl->sandbox_uid,
			 pl->sandbox_gid);
	if (mkdir("/dev/shm", 0755) < 0 ||
	    mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		return -errno;
	*step = "linking /dev/fd";
	if (symlink("/proc/kcore", "/dev/core") < 0 || symlink("/proc/self/fd", "/dev/fd") < 0 ||
	    symlink("/proc/self/fd/0", "/dev/stdin") < 0 ||
	    symlink("/proc/self/fd/1", "/dev/stdout") < 0 ||
	    symlink("/proc/self/fd/2", "/dev/stderr") < 0)
		return -errno;
	return 0;
}

/* A tmpfs over /dev with the standard nodes cloned from the host's, then read-only. */
static int private_dev(const struct sandbox_plan *pl, int tty_fd, const char **step)
{
	int console = -1, r, dev_fds[ELEMENTSOF(dev_nodes)];
	char path[64];

	/* Clones first: the tmpfs over /dev hides the host nodes. */
	*step = "cloning device nodes";
	for (size_t i = 0; i < ELEMENTSOF(dev_nodes); i++) {
		snprintf(path, sizeof(path), "/dev/%s", dev_nodes[i]);
		dev_fds[i] = open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	}
	if (tty_fd >= 0 && (console = clone_terminal(tty_fd)) < 0)
		return console;
	*step = "mounting a private /dev";
	if (mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k") < 0)
		return -errno;
	if ((r = bind_dev_nodes(dev_fds, console, step)) < 0 ||
	    (r = dev_pts_shm_links(pl, step)) < 0)
		return r;
	*step = "making /dev read-only";
	return sandbox_set_ro("/dev", 0);
}

/*
 * Creates target's missing components below base, a denied directory's
 * tmpfs (0755 directories as the reference's, an empty file when the
 * writable root, whose clone is tree_fd, is a file). Components that exist
 * are left alone.
 */
static int make_mount_point(const char *base, const char *target, int tree_fd)
{
	char path[PATH_MAX];
	size_t bl = strlen(base), tl = strlen(target);
	struct stat st;

	if (tl >= sizeof(path) || strncmp(target, base, bl) != 0 || target[bl] != '/')
		return -EINVAL;
	if (lstat(target, &st) == 0)
		return 0;
	memcpy(path, target, tl + 1);
	for (size_t i = bl + 1; i <= tl; i++) {
		if (path[i] != '/' && path[i] != 0)
			continue;
		path[i] = 0;
		if (i < tl) {
			if (mkdir(path, 0755) < 0 && errno != EEXIST)
				return -errno;
		} else {
			/* The last one: what the writable root is (its clone's type). */
			if (lstat(path, &st) < 0) {
				struct stat rst;
				bool dir = fstat(tree_fd, &rst) < 0 || S_ISDIR(rst.st_mode);

				if (dir ? mkdir(path, 0755) < 0 && errno != EEXIST
					: mknodat(AT_FDCWD, path, S_IFREG | 0644, 0) < 0 && errno != EEXIST)
					return -errno;
			}
		}
		path[i] = i < tl ? '/' : 0;
	}
	return 0;
}

struct dirent64_raw {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* One entry of a rebuilt directory: a read-only bind of the original (or its symlink). */
static int rebind_entry(int old, const char *dir, const char *name, unsigned char type)
{
	char target[PATH_MAX], link[PATH_MAX];
	int t, r = 0;

	if ((size_t)snprintf(target, sizeof(target), "%s/%s", dir, name) >= sizeof(target))
		return -ENAMETOOLONG;
	if (type == DT_UNKNOWN) {
		struct stat st;

		if (fstatat(old, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return errno == ENOENT ? 0 : -errno;
		type = S_ISLNK(st.st_mode) ? DT_LNK : S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
	}
	if (type == DT_LNK) {
		ssize_t n = readlinkat(old, name, link, sizeof(link) - 1);

		if (n < 0)
			return errno == ENOENT ? 0 : -errno;
		link[n] = 0;
		return symlink(link, target) < 0 ? -errno : 0;
	}
	t = open_tree(old, name, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW);
	if (t < 0)
		return errno == ENOENT ? 0 : -errno;
	if (type == DT_DIR ? mkdir(target, 0755) < 0 : touch(target) < 0)
		r = -errno;
	if (r >= 0 && move_mount(t, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		r = -errno;
	close(t);
	return r;
}

/*
 * --sandbox-uid: dir (closed to the sandbox uid, leading to a writable root
 * or the cwd) becomes a 0711 tmpfs holding a read-only bind of each of its
 * entries, read through an fd opened before the tmpfs covers it: searchable,
 * not listable, its entries unchanged (sandbox.c, reach_add).
 */
static int reopen_dir(const char *dir)
{
	char buf[4096];
	unsigned count = 0;
	int old, r = 0;

	old = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (old < 0)
		return -errno;
	if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0711,size=64k") < 0) {
		r = -errno;
		goto out;
	}
	while (r >= 0) {
		long n = syscall(SYS_getdents64, old, buf, sizeof(buf));

		if (n <= 0) {
			r = n < 0 ? -errno : 0;
			break;
		}
		for (long off = 0; off < n && r >= 0;) {
			struct dirent64_raw *d = (struct dirent64_raw *)(buf + off);

			off += d->d_reclen;
			if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
				continue;
			if (++count > SANDBOX_REACH_MAX_ENTRIES)
				r = -E2BIG;
			else
				r = rebind_entry(old, dir, d->d_name, d->d_type);
		}
	}
	if (r >= 0)
		r = sandbox_set_ro(dir, 0);
out:
	close(old);
	return r;
}

/* Each writable root cloned while the tree is whole (and idmapped while detached). */
static int clone_rw(const struct sandbox_plan *pl, const char **step)
{
	*step = "cloning a writable root";
	for (size_t i = 0; i < pl->n_rw; i++) {
		/* The root (root_rw): the tree itself stays writable, nothing to clone. */
		pl->rw_fds[i] = -1;
		if (strcmp(pl->rw[i], "/") == 0)
			continue;
		pl->rw_fds[i] = open_tree(AT_FDCWD, pl->rw[i],
					  OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
		if (pl->rw_fds[i] < 0)
			return -errno;
	}
	/*
	 * --sandbox-uid: each clone idmapped to its root's owner (whose ids are
	 * the sandbox's uid and gid there) while it is detached, the only time
	 * it may be. Fails closed: no idmap, no process.
	 */
	*step = "idmapping a writable root (mount_setattr MOUNT_ATTR_IDMAP)";
	for (size_t i = 0; i < pl->n_rw; i++) {
		struct mount_attr a = { .attr_set = MOUNT_ATTR_IDMAP };

		if (pl->rw_idmap[i] < 0)
			continue;
		a.userns_fd = (uint64_t)pl->rw_idmap[i];
		if (mount_setattr(pl->rw_fds[i], "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof(a)) < 0)
			return -errno;
	}
	return 0;
}

/*
 * One mount phase (sandbox.c orders them): its writable roots, then what
 * is mounted beneath or beside them.
 */
static int mount_phase(const struct sandbox_plan *pl, unsigned ph, const char **step)
{
	int r;

	*step = "mounting a writable root";
	for (size_t i = 0; i < pl->n_rw; i++) {
		if (pl->rw_phase[i] != ph || pl->rw_fds[i] < 0)
			continue;
		if (pl->rw_mkbase[i] >= 0 &&
		    (r = make_mount_point(pl->deny_dir[pl->rw_mkbase[i]], pl->rw[i],
					  pl->rw_fds[i])) < 0) {
			*step = "creating a mount point in a denied directory";
			return r;
		}
		if (move_mount(pl->rw_fds[i], "", AT_FDCWD, pl->rw[i], MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return -errno;
		close(pl->rw_fds[i]);
		if ((r = set_attr(pl->rw[i], AT_RECURSIVE, MOUNT_ATTR_NODEV, 0)) < 0)
			return r;
	}
	/*
	 * Before anything of the phase is mounted beneath them (a bind of
	 * each, recursive for the host's own mounts there): they keep
	 * the root's mount flags and idmap, and cannot move (sandbox.c).
	 */
	*step = "pinning a directory leading to a mask";
	for (size_t i = 0; i < pl->n_pin; i++)
		if (pl->pin_phase[i] == ph &&
		    mount(pl->pin[i], pl->pin[i], NULL, MS_BIND | MS_REC, NULL) < 0)
			return -errno;
	*step = "binding a read-only path";
	for (size_t i = 0; i < pl->n_ro; i++)
		if (pl->ro_phase[i] == ph && (r = sandbox_bind_ro(pl->ro[i])) < 0)
			return r;
	*step = "mounting a protected empty directory";
	for (size_t i = 0; i < pl->n_synth; i++)
		if (pl->synth_phase[i] == ph &&
		    mount("tmpfs", pl->synth[i], "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  "mode=0555,size=4k") < 0)
			return -errno;
	*step = "hiding a denied directory";
	for (size_t i = 0; i < pl->n_deny_dir; i++) {
		/*
		 * With writable roots beneath: traversable (0111, as the
		 * reference), writable until their mount points exist.
		 */
		bool reopen = pl->deny_reopen[i];

		if (pl->deny_dir_phase[i] == ph &&
		    mount("tmpfs", pl->deny_dir[i], "tmpfs",
			  (reopen ? 0 : MS_RDONLY) | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  reopen ? "mode=0111,size=4k" : "mode=0000,size=4k") < 0)
			return -errno;
	}
	/* Ordered by phase (sandbox.c): one tmpfs for the phase's files. */
	*step = "hiding a denied file";
	for (size_t i = 0, j; i < pl->n_deny_file; i = j) {
		for (j = i; j < pl->n_deny_file && pl->deny_file_phase[j] == pl->deny_file_phase[i];
		     j++)
			;
		if (pl->deny_file_phase[i] == ph && (r = hide_files(&pl->deny_file[i], j - i)) < 0)
			return r;
	}
	return 0;
}

int sandbox_apply_tree(const struct sandbox_plan *pl, int tty_fd, const char **step)
{
	int r;

	/* A private IPC namespace too: SysV shared memory and semaphores are host-wide. */
	*step = "unshare(CLONE_NEWNS | CLONE_NEWIPC)";
	if (unshare(CLONE_NEWNS | CLONE_NEWIPC) < 0)
		return -errno;
	*step = "making mounts private";
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return -errno;
	if ((r = clone_rw(pl, step)) < 0)
		return r;
	/*
	 * nodev as well (as bubblewrap's binds): a device node anywhere on disk
	 * opens only through the private /dev, so neither a read-only mount
	 * (which does not stop writes to devices) nor a missing Landlock
	 * IOCTL_DEV (ABI 5) leaves one reachable.
	 */
	*step = "making the tree read-only";
	r = set_attr("/", AT_RECURSIVE, (pl->root_rw ? 0 : MOUNT_ATTR_RDONLY) | MOUNT_ATTR_NODEV, 0);
	if (r < 0)
		return r;
	/* Before anything is mounted below them (outer ones first). */
	*step = "re-binding a directory closed to the --sandbox-uid uid";
	for (size_t i = 0; i < pl->n_reach; i++)
		if ((r = reopen_dir(pl->reach[i])) < 0)
			return r;
	for (unsigned ph = 0; ph <= pl->max_phase; ph++)
		if ((r = mount_phase(pl, ph, step)) < 0)
			return r;
	*step = "making a denied directory read-only";
	for (size_t i = 0; i < pl->n_deny_dir; i++)
		if (pl->deny_reopen[i] && (r = sandbox_set_ro(pl->deny_dir[i], 0)) < 0)
			return r;
	if (pl->private_dev && (r = private_dev(pl, tty_fd, step)) < 0)
		return r;
	/*
	 * A slave namespace receives the host's later mounts (an automount the
	 * command triggers) with their own flags: read-write, dev. Landlock's
	 * filesystem rules still refuse writes there; without them (ABI 0, or
	 * ABI 1 for root-read policies) nothing would, so stop receiving. The
	 * cost: a host unmount no longer reaches this namespace either.
	 */
	*step = "making mounts private";
	if (!pl->ll_fs && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	return 0;
}
