/* SPDX-License-Identifier: MIT */
/*
 * RESTORE (docs/UPGRADE.md) in the binary a live upgrade execs: the blob's
 * memfd named by UEXEC_UPGRADE_STATE_FD is mapped, parsed, its fds checked
 * and its view built before anything is adopted; then server_init() adopts
 * the cgroups' layout (supervisor pipe, bases), the listening socket and the
 * metric counters instead of creating them. This version restores an idle
 * server only (no session, process, connection or watch): the sender hands
 * over nothing else (upgrade.c), and a blob with more is refused here.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "netguard.h"
#include "server.h"
#include "state.h"
#include "upgrade-cgroups.h"
#include "upgrade-internal.h"
#include "upgrade.h"
#include "view.h"

static struct {
	bool active;
	int memfd;
	void *map;
	size_t size;
	struct upgrade_state st;
	struct upgrade_view v;
	uint64_t upgrades;      /* upgrades before this one, plus this one */
	uint64_t t0_ns;         /* CLOCK_MONOTONIC at the start of RESTORE */
	bool rolled_back;       /* the binary the state was handed to handed it back (rollback.c) */
	unsigned live_fds;      /* the adopted processes' and connections' fds */
} rs = { .memfd = -1, .map = MAP_FAILED };

static uint64_t mono_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t upgrade_restored_upgrades(void)
{
	return rs.upgrades;
}

/* The fd number in UEXEC_UPGRADE_STATE_FD, or -EBADMSG. */
static int env_fd(const char *e)
{
	char *end;
	long fd;

	errno = 0;
	fd = strtol(e, &end, 10);
	if (errno || end == e || *end || fd < 3 || fd > INT32_MAX)
		return -EBADMSG;
	return (int)fd;
}

static int load(char *err, size_t err_size)
{
	struct stat sb;
	int r;

	if (fstat(rs.memfd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_size <= 0) {
		snprintf(err, err_size, "the state fd is not a non-empty memfd");
		return -EBADMSG;
	}
	rs.size = (size_t)sb.st_size;
	rs.map = mmap(NULL, rs.size, PROT_READ, MAP_PRIVATE, rs.memfd, 0);
	if (rs.map == MAP_FAILED) {
		r = -errno;
		snprintf(err, err_size, "mapping the state failed: %s", strerror(-r));
		return r;
	}
	r = upgrade_state_parse(rs.map, rs.size, NULL, &rs.st, err, err_size);
	if (r < 0)
		return r;
	r = upgrade_state_check_fds(&rs.st, rs.memfd, err, err_size);
	if (r >= 0)
		r = upgrade_view_build(&rs.st, &rs.v, err, err_size);
	if (r < 0) {
		upgrade_state_done(&rs.st);
		return r;
	}
	for (uint32_t i = 0; i < rs.v.n_conns; i++)
		if (rs.v.conns[i].transport == UPGRADE_CONN_WS ? !rs.v.conns[i].upgraded
							       : rs.v.conns[i].fd_in != STDIN_FILENO)
			r = -EBADMSG;
	if (r < 0) {
		snprintf(err, err_size, "the state holds a connection other than an upgraded "
			 "WebSocket or stdio; this binary restores listeners, sessions, their "
			 "processes and WebSocket and stdio connections only");
		upgrade_view_done(&rs.v);
		upgrade_state_done(&rs.st);
		return -EBADMSG;
	}
	return 0;
}

int upgrade_restore_begin(struct server *s)
{
	const char *e = getenv("UEXEC_UPGRADE_STATE_FD");
	char err[256] = "";
	int r;

	if (!e)
		return 0;
	rs.t0_ns = mono_ns();
	rs.memfd = env_fd(e);
	rs.rolled_back = getenv("UEXEC_UPGRADE_ROLLED_BACK") != NULL;
	/* Not for the processes this server starts. */
	(void)unsetenv("UEXEC_UPGRADE_STATE_FD");
	(void)unsetenv("UEXEC_UPGRADE_ROLLED_BACK");
	if (rs.memfd < 0) {
		snprintf(err, sizeof(err), "UEXEC_UPGRADE_STATE_FD is not an fd number");
		r = rs.memfd;
		goto out;
	}
	(void)fcntl(rs.memfd, F_SETFD, FD_CLOEXEC);
	r = load(err, sizeof(err));
	if (r < 0)
		goto out;
	rs.active = true;
	rs.upgrades = rs.v.upgrades + 1;
	/* The fds the blob names are adopted below; none must reach a child (stdio's are 0 and 1). */
	for (uint32_t i = 0; i < rs.st.n_fds; i++)
		if (rs.st.fds[i] > STDERR_FILENO)
			(void)fcntl((int)rs.st.fds[i], F_SETFD, FD_CLOEXEC);
	upgrade_metrics_from_view(&s->metrics, &rs.v);
	s->metrics.start_time_ms = rs.v.start_ms;
out:
	if (r < 0) {
		struct log_field f[] = { LOG_STR("error", err) };

		/* Nothing is adopted yet: main() hands the state back to the old binary (rollback.c). */
		log_event(LOG_ERR, "upgrade.restore", NULL, f, ELEMENTSOF(f),
			  "Upgrade: cannot restore the state handed over: %s", err);
		if (rs.map != MAP_FAILED)
			munmap(rs.map, rs.size);
		rs.map = MAP_FAILED;
		return r;
	}
	return 1;
}

int upgrade_restore_cgroups(struct server *s)
{
	char err[256] = "";
	int r;

	if (!rs.active)
		return 0;
	r = upgrade_sandbox_cg_from_view(&rs.v, &s->cgroups, err, sizeof(err));
	if (r < 0)
		return log_error_errno(r, "Upgrade: cannot adopt the cgroups handed over: %s", err);
	return 1;
}

/* The listener guard's cgroup, or -1. */
static int held_guard(void)
{
	for (uint32_t i = 0; i < rs.v.n_held; i++)
		if (rs.v.held[i].role == UPGRADE_HELD_GUARD)
			return rs.v.held[i].fd;
	return -1;
}

/*
 * The guard of the adopted listener (sandbox/netguard.h). Without it, as at a
 * start where the guard cannot be set up: network access is refused to
 * sandboxes (they could reach the port).
 */
static void adopt_guard(struct server *s, int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	uint16_t port = 0;
	char err[256] = "getsockname failed";
	int r = -EBADF;

	int held[16];
	size_t n_held = 0;

	/* The port sockets in index order (the view checked each index is given once). */
	for (int ix = 0; ix < (int)ELEMENTSOF(held); ix++)
		for (uint32_t i = 0; i < rs.v.n_held; i++)
			if (rs.v.held[i].role == UPGRADE_HELD_GUARD_PORT && rs.v.held[i].index == ix)
				held[n_held++] = rs.v.held[i].fd;
	if (getsockname(s->listen_fd, (struct sockaddr *)&ss, &len) == 0) {
		port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						      : ((struct sockaddr_in *)&ss)->sin_port);
		r = netguard_adopt(fd, &port, 1, held, n_held, &s->guard, err, sizeof(err));
	}
	if (r >= 0) {
		log_info("Listener guard: sandboxed processes cannot connect to port %u (cgroup %s "
			 "and %zu port sockets, handed over)", port, netguard_path(s->guard), n_held);
		return;
	}
	snprintf(s->sandbox.network_refused, sizeof(s->sandbox.network_refused),
		 "network access needs the listener guard, which the upgrade could not take "
		 "over (%.80s)", err);
	log_warning("Upgrade: cannot take the listener guard over (%s): sandboxed processes with "
		    "network access are refused", err);
	safe_close(fd);
	for (size_t i = 0; i < n_held; i++)
		safe_close(held[i]);
}

int upgrade_restore_listener(struct server *s)
{
	int guard;

	if (!rs.active || !rs.v.has_listener)
		return 0;
	/* Bound and listening: connections made during the hand-over wait in its backlog. */
	s->listen_fd = rs.v.listener_fd;
	guard = held_guard();
	if (guard >= 0)
		adopt_guard(s, guard);
	return 1;
}

void upgrade_restore_end(struct server *s)
{
	uint64_t us, now = mono_ns(), pause;

	(void)s;
	if (!rs.active)
		return;
	for (uint32_t i = 0; i < rs.v.n_procs; i++) {
		const struct upgrade_view_proc *p = &rs.v.procs[i];

		rs.live_fds += (p->pidfd >= 0) + (p->out_fd >= 0) + (p->err_fd >= 0) +
			       (p->stdin_fd >= 0);
	}
	for (uint32_t i = 0; i < rs.v.n_conns; i++)
		rs.live_fds += rs.v.conns[i].fd_in > STDERR_FILENO;
	rs.live_fds += rs.v.n_fs_handles;
	rs.live_fds += rs.v.n_synth;
	if (rs.v.n_synth) {
		char err[256] = "";
		int r = upgrade_adopt_synth(&rs.v, err, sizeof(err));

		if (r < 0)
			log_error_errno(r, "Upgrade: a sandbox mount point handed over could not be "
					   "adopted (%s); it is left on the host", err);
	}
	if (rs.v.n_sessions || rs.v.n_conns) {
		char err[256] = "";
		int r = upgrade_adopt_sessions(s, &rs.v, err, sizeof(err));

		if (r < 0)
			log_error_errno(r, "Upgrade: a session or process handed over could not be "
					   "adopted (%s); it is killed, the others go on", err);
		now = mono_ns();
	}
	us = (now - rs.t0_ns) / 1000u;
	/* QUIESCE in the old binary to here (CLOCK_MONOTONIC is the same across execve). */
	pause = rs.v.quiesce_ns && rs.v.quiesce_ns <= now ? (now - rs.v.quiesce_ns) / 1000u : 0;
	{
		char url[128];
		struct log_field f[] = {
			LOG_INT("upgrades", rs.upgrades), LOG_INT("restoreUs", us),
			LOG_INT("pauseUs", pause),
			LOG_STR("url", url), LOG_BOOL("rolledBack", rs.rolled_back),
			LOG_INT("sessions", rs.v.n_sessions), LOG_INT("processes", rs.v.n_procs),
			LOG_INT("connections", rs.v.n_conns),
			LOG_INT("watches", rs.v.n_watches), LOG_INT("fsHandles", rs.v.n_fs_handles),
		};
		char fs[96] = "";

		/* After the parenthesis, which tests and operators match as it always was. */
		if (rs.v.n_watches || rs.v.n_fs_handles)
			snprintf(fs, sizeof(fs), ", with %u watches and %u open files", rs.v.n_watches,
				 rs.v.n_fs_handles);

		snprintf(url, sizeof(url), "%.*s", (int)rs.v.listener_url_len,
			 rs.v.has_listener ? (const char *)rs.v.listener_url : "");
		log_event(LOG_INFO, "upgrade.done", NULL, f, ELEMENTSOF(f),
			  "Upgrade: took over from uexec %.*s (upgrade %" PRIu64 "), restored in %"
			  PRIu64 " us, paused %" PRIu64 " us since QUIESCE (%u sessions, %u processes, "
			  "%u connections)%s%s%s%s",
			  (int)rs.v.sender_version_len, (const char *)rs.v.sender_version,
			  rs.upgrades, us, pause, rs.v.n_sessions, rs.v.n_procs, rs.v.n_conns, fs,
			  url[0] ? "; still listening on " : "", url,
			  rs.rolled_back ? " (rolled back: the new binary could not take over)" : "");
	}
	upgrade_view_done(&rs.v);
	upgrade_state_done(&rs.st);
	munmap(rs.map, rs.size);
	rs.map = MAP_FAILED;
	rs.memfd = safe_close(rs.memfd);
	rs.active = false;
	upgrade_rollback_forget(); /* serving now: no way back */
}

unsigned upgrade_restored_fds(void)
{
	return rs.live_fds;
}

int upgrade_restore_stdio(struct server *s)
{
	(void)s;
	if (!rs.active)
		return 0;
	for (uint32_t i = 0; i < rs.v.n_conns; i++)
		if (rs.v.conns[i].transport == UPGRADE_CONN_STDIO)
			return 1;
	return 0;
}

void upgrade_restore_release(void)
{
	if (rs.active) {
		for (uint32_t i = 0; i < rs.st.n_fds; i++)
			(void)fcntl((int)rs.st.fds[i], F_SETFD, 0);
		upgrade_view_done(&rs.v);
		upgrade_state_done(&rs.st);
		rs.active = false;
	}
	if (rs.map != MAP_FAILED)
		munmap(rs.map, rs.size);
	rs.map = MAP_FAILED;
}

const void *upgrade_restored_relay_identity(void)
{
	return rs.active ? rs.v.relay_identity : NULL;
}
