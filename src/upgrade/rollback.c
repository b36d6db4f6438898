/* SPDX-License-Identifier: MIT */
/*
 * The way back (docs/UPGRADE.md, "Fallbacks"): every server start opens the
 * file it runs from (/proc/self/exe, O_PATH), so that the binary being
 * replaced stays reachable whatever happens to its path. The hand-over
 * passes that fd, the state's memfd and its own argv (a small memfd, read
 * and closed at once) to the new binary in UEXEC_UPGRADE_ROLLBACK
 * ("EXEFD:MEMFD:ARGVFD"). If the new binary cannot take over
 * before it has started serving (its arguments or secrets refused, the blob
 * refused, server_init failing), it execs the old binary through that fd
 * with its own argv and the same blob, which the old binary reads by construction: the server
 * goes on with everything it had, in the same pid.
 *
 * What this cannot catch: a new binary that dies before main() runs (not
 * loadable, a crash at start, a script that exits). The check runs the same
 * file first (`--check-upgrade`), which catches most of those; otherwise the
 * pid ends, the cgroup supervisor purges the processes (no orphan) and
 * systemd restarts the service.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "upgrade-internal.h"
#include "upgrade.h"

extern char **environ;

/* The old binary's argv, as it travels: at most this many bytes, NUL-separated. */
#define ARGV_MAX_BYTES (1u << 20)
#define ARGV_MAX_ARGS 4096

static struct {
	int self_fd;  /* this binary's file (O_PATH, CLOEXEC): what a later upgrade hands back to */
	int back_fd;  /* the binary that exec'd this one, while this one is not serving yet */
	int memfd;    /* the state it handed over (the number, as UEXEC_UPGRADE_STATE_FD) */
	char **argv;  /* this binary's (main's) */
	char **back_argv; /* the old binary's, to exec it with (owned, one allocation each) */
	char *back_args;
} rb = { .self_fd = -1, .back_fd = -1, .memfd = -1 };

/* "EXEFD:MEMFD:ARGVFD", each above 2 and distinct; 0 or -EBADMSG. */
static int parse(const char *e, int fds[3])
{
	for (int i = 0; i < 3; i++) {
		char *end;
		long v;

		errno = 0;
		v = strtol(e, &end, 10);
		if (errno || end == e || *end != (i < 2 ? ':' : '\0') || v < 3 || v > INT32_MAX)
			return -EBADMSG;
		fds[i] = (int)v;
		e = end + 1;
	}
	return fds[0] != fds[1] && fds[1] != fds[2] && fds[0] != fds[2] ? 0 : -EBADMSG;
}

/* The old binary's argv from its memfd: NUL-separated, non-empty; 0 or -errno. */
static int read_argv(int fd)
{
	struct stat sb;
	size_t n = 0, size;
	ssize_t k;

	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_size <= 0 ||
	    sb.st_size > ARGV_MAX_BYTES)
		return -EBADMSG;
	size = (size_t)sb.st_size;
	rb.back_args = malloc(size + 1);
	if (!rb.back_args)
		return -ENOMEM;
	k = pread(fd, rb.back_args, size, 0);
	if (k != (ssize_t)size || rb.back_args[size - 1] != '\0')
		return -EBADMSG;
	for (size_t i = 0; i < size; i++)
		n += rb.back_args[i] == '\0';
	if (n > ARGV_MAX_ARGS)
		return -EBADMSG;
	rb.back_argv = calloc(n + 1, sizeof(char *));
	if (!rb.back_argv)
		return -ENOMEM;
	for (size_t i = 0, a = 0; i < size; i += strlen(rb.back_args + i) + 1)
		rb.back_argv[a++] = rb.back_args + i;
	return 0;
}

void upgrade_rollback_init(char **argv)
{
	const char *e = getenv("UEXEC_UPGRADE_ROLLBACK");
	struct stat sb;
	int fds[3];

	rb.argv = argv;
	if (e && getenv("UEXEC_UPGRADE_STATE_FD") && parse(e, fds) == 0) {
		if (fstat(fds[0], &sb) == 0 && S_ISREG(sb.st_mode) && read_argv(fds[2]) == 0) {
			rb.back_fd = fds[0];
			rb.memfd = fds[1];
			/* execveat of an ELF file works from a CLOEXEC fd; no child must get it. */
			(void)fcntl(rb.back_fd, F_SETFD, FD_CLOEXEC);
		} else {
			rb.back_args = (free(rb.back_args), NULL);
			rb.back_argv = (free(rb.back_argv), NULL);
		}
		safe_close(fds[2]);
	}
	(void)unsetenv("UEXEC_UPGRADE_ROLLBACK");
	rb.self_fd = open("/proc/self/exe", O_PATH | O_CLOEXEC);
}

int upgrade_rollback_self_fd(void)
{
	return rb.self_fd;
}

int upgrade_rollback_argv_fd(void)
{
	size_t len;
	int fd;

	if (!rb.argv || !rb.argv[0])
		return -EINVAL;
	fd = memfd_create("uexec-argv", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (char **a = rb.argv; *a; a++) {
		len = strlen(*a) + 1;
		if (write(fd, *a, len) != (ssize_t)len) {
			safe_close(fd);
			return -EIO;
		}
	}
	return fd;
}

void upgrade_rollback_forget(void)
{
	rb.back_fd = safe_close(rb.back_fd);
	rb.memfd = -1;
	rb.back_args = (free(rb.back_args), NULL);
	rb.back_argv = (free(rb.back_argv), NULL);
}

void upgrade_rollback(const char *why)
{
	char num[16];
	int r;

	if (rb.back_fd < 0 || rb.memfd < 0 || !rb.back_argv)
		return;
	{
		struct log_field f[] = { LOG_STR("reason", why) };

		log_event(LOG_ERR, "upgrade.rollback", NULL, f, ELEMENTSOF(f),
			  "Upgrade: this binary cannot take over (%s); handing the state back to "
			  "the binary it came from", why);
	}
	/* The blob's fds as they came (no FD_CLOEXEC), the blob itself unmapped. */
	upgrade_restore_release();
	snprintf(num, sizeof(num), "%d", rb.memfd);
	(void)fcntl(rb.memfd, F_SETFD, 0);
	fflush(NULL);
	upgrade_env_secret_put(true); /* remote mode's credential (env-secret.c) */
	if (setenv("UEXEC_UPGRADE_STATE_FD", num, 1) < 0 ||
	    setenv("UEXEC_UPGRADE_ROLLED_BACK", "1", 1) < 0)
		r = -errno;
	else
		r = upgrade_execveat_main(rb.back_fd, rb.back_argv); /* the main thread (exec-main.c) */
	log_error_errno(r, "Upgrade: executing the old binary again failed; exiting (the cgroup "
			   "supervisor ends the processes)");
}
