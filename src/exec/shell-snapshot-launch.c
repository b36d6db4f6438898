/* SPDX-License-Identifier: MIT */
/*
 * The launch of a command that replays a shell snapshot
 * (shell-snapshot-internal.h): the state reaches the command as a sealed
 * memfd opened read-only at SNAP_FD: no file on disk to clean up or to let
 * a sandbox read, no path another process could swap. Landlock does not
 * restrict such an internal file (it is not in any mounted hierarchy); a
 * shell that cannot open /dev/fd/N at all (no /proc in its view) gets the
 * state through the environment instead, as POSIX sh always does (it
 * cannot close a descriptor above 9).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "environ.h"
#include "macro.h"
#include "shell-snapshot-internal.h"
#include "spawn.h"

void snap_apply(struct snap_launch *l, char **argv, char ***envp, struct spawn_args *sa)
{
	argv[1] = (char *)l->flag;
	argv[2] = l->script;
	environ_strv_free(*envp);
	sa->envp = *envp = TAKE_PTR(l->env);
	sa->extra_fd = l->fd > 0 ? l->fd : 0;
	sa->extra_fd_at = SNAP_FD;
}

void snap_launch_done(struct snap_launch *l)
{
	free(l->script);
	l->script = NULL;
	environ_strv_free(l->env);
	l->env = NULL;
	l->fd = safe_close(l->fd);
}

int snap_sealed_memfd(const char *data, size_t len)
{
	_cleanup_close_ int fd = memfd_create("uexec-shell-snapshot", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	size_t off = 0;

	if (fd < 0)
		return -errno;
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		off += (size_t)n;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0)
		return -errno;
	return TAKE_FD(fd);
}

int snap_state_memfd(enum snap_shell sh, const char *state, size_t len, int *ret_fd)
{
	char head[96];
	/* zsh reads only one digit before a redirection: its {var} form for fd 16. */
	int n = sh == SNAP_ZSH ? snprintf(head, sizeof(head), "__uexec_snapshot_fd=%d\nexec "
					  "{__uexec_snapshot_fd}<&-\nunset __uexec_snapshot_fd\n", SNAP_FD)
			       : snprintf(head, sizeof(head), "\\exec %d<&-\n", SNAP_FD);
	char *all = malloc((size_t)n + len);

	if (!all)
		return -ENOMEM;
	memcpy(all, head, (size_t)n);
	memcpy(all + n, state, len);
	*ret_fd = snap_sealed_memfd(all, (size_t)n + len);
	free(all);
	if (*ret_fd < 0)
		*ret_fd = -1; /* replayed through the environment */
	return 0;
}

/* A read-only open file description of its own (the command must not share an offset). */
static int reopen_ro(int fd)
{
	char path[64];
	int r;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	r = open(path, O_RDONLY | O_CLOEXEC);
	return r < 0 ? -errno : r;
}

static const char *const restore_flags[] = { [SNAP_BASH] = "-pc", [SNAP_ZSH] = "-fc", [SNAP_SH] = "-c" };
/* Startup files the flag skipped stay skipped; what the flag changed is put back. */
static const char *const restore_prefix[] = {
	[SNAP_BASH] = "set +o privileged\n", [SNAP_ZSH] = "setopt RCS\n", [SNAP_SH] = "",
};

static int add_env(char ***envp, const char *name, const char *val, size_t len)
{
	size_t n = 0, nl = strlen(name);
	char **v, *s;

	while ((*envp)[n])
		n++;
	s = malloc(nl + 1 + len + 1);
	v = s ? realloc(*envp, (n + 2) * sizeof(char *)) : NULL;
	if (!v) {
		free(s);
		return -ENOMEM;
	}
	memcpy(s, name, nl);
	s[nl] = '=';
	memcpy(s + nl + 1, val, len);
	s[nl + 1 + len] = 0;
	v[n] = s;
	v[n + 1] = NULL;
	*envp = v;
	return 0;
}

/*
 * The state through the environment, in chunks under the kernel's limit on
 * one string: the chunks added to *envp, and in restore (size bytes) the
 * command that unsets and evaluates them. Returns 0, -E2BIG or -ENOMEM.
 */
static int restore_from_env(const struct snap_entry *e, char ***envp, char *restore, size_t size)
{
	size_t nchunks = (e->state_len + SNAP_ENV_CHUNK - 1) / SNAP_ENV_CHUNK, o;
	char name[64];
	int r;

	o = (size_t)snprintf(restore, size, "eval \"unset");
	for (size_t i = 0; i < nchunks && o < size; i++)
		o += (size_t)snprintf(restore + o, size - o, " __CODEX_SHELL_SNAPSHOT_STATE_%zu", i);
	o += (size_t)snprintf(restore + o, o < size ? size - o : 0, "\n");
	for (size_t i = 0; i < nchunks && o < size; i++)
		o += (size_t)snprintf(restore + o, size - o, "${__CODEX_SHELL_SNAPSHOT_STATE_%zu}", i);
	o += (size_t)snprintf(restore + o, o < size ? size - o : 0, "\"");
	if (o >= size)
		return -E2BIG;
	for (size_t i = 0; i < nchunks; i++) {
		size_t off = i * SNAP_ENV_CHUNK, len = e->state_len - off;

		snprintf(name, sizeof(name), "__CODEX_SHELL_SNAPSHOT_STATE_%zu", i);
		r = add_env(envp, name, e->state + off, len < SNAP_ENV_CHUNK ? len : SNAP_ENV_CHUNK);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * The request's environment under the captured one (the request's own
 * names win), and a script that restores the state, then runs the command.
 */
int snap_build_launch(const struct snap_entry *e, const struct snap_start *st,
		      const struct spawn_args *sa, struct snap_launch *l)
{
	char restore[4096];
	const char *cmd = json_string_value(json_array_get(st->argv, 2));
	size_t cl = json_string_length(json_array_get(st->argv, 2));
	int r, n;

	*l = (struct snap_launch){ .fd = -1, .flag = restore_flags[e->sh] };
	r = environ_overlay(sa->envp, e->env, st->env, &l->env);
	if (r < 0)
		return r;
	if (e->memfd >= 0)
		l->fd = reopen_ro(e->memfd);
	if (l->fd >= 0) {
		snprintf(restore, sizeof(restore), ". /dev/fd/%d", SNAP_FD);
	} else {
		r = restore_from_env(e, &l->env, restore, sizeof(restore));
		if (r < 0)
			return r;
	}
	n = snprintf(NULL, 0, "%sif ! %s >/dev/null; then printf 'failed to restore shell snapshot\\n' >&2; fi\n",
		     restore_prefix[e->sh], restore);
	l->script = malloc((size_t)n + cl + 1);
	if (!l->script)
		return -ENOMEM;
	snprintf(l->script, (size_t)n + 1,
		 "%sif ! %s >/dev/null; then printf 'failed to restore shell snapshot\\n' >&2; fi\n",
		 restore_prefix[e->sh], restore);
	memcpy(l->script + n, cmd, cl);
	l->script[(size_t)n + cl] = 0;
	return 0;
}
