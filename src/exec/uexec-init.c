/* SPDX-License-Identifier: MIT */
/*
 * uexec-init: pid 1 of a sandboxed command's PID namespace.
 *
 * The server's child becomes the namespace's init, sets up the mounts,
 * starts the command (pid 2, which drops its credentials and execs), then
 * execs this: a small static program, so that no copy of the server's memory
 * stays alive with the sandbox and the server (suspended by CLONE_VFORK)
 * resumes at once. It holds nothing open, reaps whatever is reparented to
 * it, and exits with the command's status (128 + signal for a signal), as
 * bubblewrap's init does for the reference. Its exit ends every process left
 * in the namespace. As a namespace's init it gets only SIGKILL/SIGSTOP from
 * outside (it installs no handlers), so process/terminate (SIGKILL to the
 * process group) ends it; other signals sent to the group reach the command.
 *
 * Usage (by spawn.c only): uexec-init <pid of the command>. Built static and
 * without sanitizers (src/meson.build): it starts in ~0.1 ms.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char *end;
	long cmd;

	if (argc != 2)
		return 127;
	/*
	 * Not dumpable: /proc/1/{mem,environ,root,fd} then need CAP_SYS_PTRACE
	 * over this namespace, which the command has dropped. As root, init's
	 * full capability set already refused the command; under a non-root
	 * server both have the same uid and no capabilities, and at the levels
	 * without a Landlock domain nothing else would.
	 */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	cmd = strtol(argv[1], &end, 10);
	if (*end || cmd <= 0)
		return 127;
	for (;;) {
		int st;
		pid_t p = wait4(-1, &st, 0, NULL);

		if (p < 0 && errno == EINTR)
			continue;
		if (p < 0)
			_exit(127); /* ECHILD: cannot happen before the command is reaped */
		if (p == (pid_t)cmd)
			_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
}
