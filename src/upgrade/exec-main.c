/* SPDX-License-Identifier: MIT */
/*
 * The execve of a live upgrade and of its rollback, on the spawner thread,
 * which is the process's main thread (src/exec/spawner.h). Every child of the
 * server has that thread as its parent thread and PR_SET_PDEATHSIG(SIGKILL):
 * an execve made on the server's thread would end the main thread and kill
 * them all. Made on the main thread, the execve ends the server's thread
 * instead, and the new binary's main thread is the same task, the spawner
 * again, so children of every generation keep their parent.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "spawner.h"
#include "upgrade-internal.h"

struct exec_req {
	const char *path; /* NULL: execveat of fd */
	int fd;
	char *const *argv;
};

void upgrade_start_mask(sigset_t *old)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGUSR2);
	(void)sigprocmask(SIG_SETMASK, &mask, old);
}

static int do_exec(void *arg)
{
	const struct exec_req *q = arg;
	sigset_t old;
	int r;

	/*
	 * The mask crosses execve: the new binary starts with a server's start
	 * mask, not the spawner's (every signal blocked), so that it handles
	 * signals as after any start. The signalfd's signals stay blocked: one
	 * sent now waits, pending, for the new binary (upgrade_refuse_pending()).
	 */
	upgrade_start_mask(&old);
	if (q->path)
		(void)execve(q->path, q->argv, environ);
	else
		(void)syscall(SYS_execveat, q->fd, "", q->argv, environ, AT_EMPTY_PATH);
	r = -errno;
	(void)sigprocmask(SIG_SETMASK, &old, NULL);
	return r;
}

int upgrade_exec_main(const char *path, char *const argv[])
{
	struct exec_req q = { .path = path, .fd = -1, .argv = argv };

	return spawn_thread_call(do_exec, &q);
}

int upgrade_execveat_main(int fd, char *const argv[])
{
	struct exec_req q = { .fd = fd, .argv = argv };

	return spawn_thread_call(do_exec, &q);
}
