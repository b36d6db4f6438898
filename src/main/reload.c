/* SPDX-License-Identifier: MIT */
/*
 * What of the configuration changes while the server runs: the --audit-log
 * file, opened at start (server_init) and again at SIGHUP, and SIGHUP's
 * reload itself (the configuration read again; what can change without a
 * restart applied, the secrets' files read again, the rest reported and kept).
 * server.c reads the signal and calls server_reload().
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "conn-auth.h"
#include "conn-tls.h"
#include "host-setup.h"
#include "log.h"
#include "macro.h"
#include "server.h"
#include "uexec.h"

/* --audit-log - with --listen stdio: audit lines would go into the protocol's stream. */
bool server_audit_stdout_clash(const char *audit_log, const char *listen)
{
	return audit_log && strcmp(audit_log, "-") == 0 && listen &&
	       (strcmp(listen, "stdio") == 0 || strcmp(listen, "stdio://") == 0);
}

/*
 * --audit-log: opens path ("-": stdout) and points the audit queue at it;
 * lines queued for the previous file are still written there (audit.h).
 * 0 or -errno (logged; the previous file is kept).
 */
int server_audit_log_open(struct server *s, const char *path)
{
	char *copy = NULL;
	struct stat st;
	int fd = -1, r;

	if (path && strcmp(path, "-") == 0) {
		fd = STDOUT_FILENO;
	} else if (path) {
		/* O_NONBLOCK: opening a FIFO nobody has open for reading must not wait for one. */
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0600);
		if (fd < 0)
			return log_error_errno(errno, "Cannot open the audit log %s", path);
		/*
		 * A regular file's writes may take a kernel worker when they cannot
		 * be done at once (that is fine, the loop does not wait); with
		 * O_NONBLOCK the ring would answer EAGAIN instead, which no poll
		 * can wait out for a file that is always "writable".
		 */
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
			(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	}
	if (path && !(copy = strdup(path))) {
		if (fd > STDOUT_FILENO)
			safe_close(fd);
		return log_error_errno(ENOMEM, "Cannot open the audit log %s", path);
	}
	r = server_audit_set_fd(&s->audit, fd, fd > STDOUT_FILENO); /* closes fd on failure */
	if (r < 0) {
		free(copy);
		return log_error_errno(r, "Cannot open the audit log %s", path);
	}
	free(s->audit_path);
	s->audit_path = copy;
	log_audit_set_sink(fd >= 0 ? server_audit_append : NULL, &s->audit);
	return 0;
}

/*
 * SIGHUP: the auth token or shared secret and the TLS certificate and key are
 * read again from the files the new configuration n names (a rotated token
 * may live in a new file); each keeps its previous value when the new one fails to load
 * (conn_auth_reload / conn_tls_reload log why). Returns < 0 if either failed.
 */
static int reload_secrets(struct server *s, const struct config *n)
{
	int r = 0, t = 0;

	if (conn_auth_current())
		r = conn_auth_reload(s, n);
	if (conn_tls_current())
		t = conn_tls_reload(s, n);
	return r < 0 ? r : t;
}

/* An option a reload cannot change (a string, or a scalar compared byte for byte). */
struct restart_only {
	const char *name;
	size_t off, size;
	bool str;
};
#define RESTART_ONLY(name, field)                                                              \
	{ name, offsetof(struct config, field), sizeof(((struct config *)NULL)->field), false }
#define RESTART_ONLY_STR(name, field) { name, offsetof(struct config, field), 0, true }

static const struct restart_only restart_only[] = {
	RESTART_ONLY_STR("listen", listen),
	RESTART_ONLY_STR("executor-version", executor_version),
	RESTART_ONLY_STR("config", config_file),
	RESTART_ONLY("no-sandbox", no_sandbox),
	RESTART_ONLY("sandbox-max-ptys", sandbox_max_ptys),
	RESTART_ONLY("max-frame-bytes", max_frame_bytes),
	RESTART_ONLY("max-message-bytes", max_message_bytes),
	RESTART_ONLY("max-json-depth", max_json_depth),
	RESTART_ONLY("max-queued-bytes", max_queued_bytes),
	RESTART_ONLY("max-inflight-bytes", max_inflight_bytes),
	RESTART_ONLY("max-inflight-bytes-per-conn", max_inflight_bytes_per_conn),
	/* Auth on or off (or another kind): the listener's start-up checks decide it. */
	RESTART_ONLY("ws-auth", ws_auth_mode),
	RESTART_ONLY("allow-unauthenticated", allow_unauthenticated),
};

/* The last option of restart_only[] whose value n changes, or NULL. */
static const char *restart_only_changed(const struct config *cur, const struct config *n)
{
	const char *changed = NULL;

	for (size_t i = 0; i < ELEMENTSOF(restart_only); i++) {
		const struct restart_only *o = &restart_only[i];
		const void *a = (const char *)cur + o->off, *b = (const char *)n + o->off;

		if (o->str) {
			const char *x = *(const char *const *)a, *y = *(const char *const *)b;

			if ((x == NULL) != (y == NULL) || (x && strcmp(x, y) != 0))
				changed = o->name;
		} else if (memcmp(a, b, o->size) != 0) {
			changed = o->name;
		}
	}
	return changed;
}

/*
 * SIGHUP: the configuration again (file, then command line). What can change
 * without a restart is applied; the rest is reported and kept (README
 * "Running in production"). Connections stay open.
 */
void server_reload(struct server *s)
{
	struct server_conf_args arena = { 0 };
	struct config n;
	const char *changed;

	if (!s->cfg.reload)
		return;
	log_event(LOG_INFO, "config.reload", NULL, NULL, 0, "Received SIGHUP: reloading %s",
		  s->cfg.config_file ? s->cfg.config_file : "the command line (no --config)");
	if (s->cfg.reload(&n, &arena) < 0) {
		log_event(LOG_ERR, "config.reloadFailed", NULL, NULL, 0,
			  "Reloading the configuration failed: nothing changed");
		return;
	}
	changed = restart_only_changed(&s->cfg, &n);
	if (changed)
		log_warning("Reloading: %s (and any other option not listed as reloadable) takes a "
			    "restart to change; kept",
			    changed);
	if (server_audit_stdout_clash(n.audit_log, s->cfg.listen))
		log_warning("Reloading: --audit-log - writes to stdout, which --listen stdio uses for "
			    "the protocol; keeping the audit log %s",
			    s->audit_path ? s->audit_path : "(none)");
	else if (server_audit_log_open(s, n.audit_log) < 0)
		log_warning("Reloading: keeping the audit log %s", s->audit_path ? s->audit_path : "(none)");
	s->cfg.audit_log = NULL; /* the path lives in s->audit_path */
	/* Lines queued above a lowered bound are still written; new ones wait for room. */
	s->cfg.audit_log_max_queued_bytes = n.audit_log_max_queued_bytes;
	s->audit.max_queued = n.audit_log_max_queued_bytes;
	s->cfg.log_level = n.log_level;
	s->cfg.log_format = n.log_format;
	log_set_max_level(n.log_level);
	log_set_format(n.log_format);
	s->cfg.drain_timeout_ms = n.drain_timeout_ms;
	s->cfg.http_max_response_bytes = n.http_max_response_bytes;
	s->cfg.resume_window_ms = n.resume_window_ms;
	s->cfg.ping_interval_ms = n.ping_interval_ms;
	s->cfg.handshake_timeout_ms = n.handshake_timeout_ms;
	/* 0: not given; the value derived at start stays. */
	if (n.max_connections)
		s->cfg.max_connections = n.max_connections;
	if (n.max_sessions)
		s->cfg.max_sessions = n.max_sessions;
	if (n.max_processes)
		s->cfg.max_processes = n.max_processes;
	(void)reload_secrets(s, &n);
	/* Until a reload records them all, no unsandboxed file request is served (fail closed). */
	s->secrets.incomplete = server_hide_files(s, &n) < 0;
	if (s->secrets.incomplete)
		log_warning("Reloading: cannot record the new files to hide from sandboxes (out of "
			    "memory): unsandboxed file requests are refused until a reload succeeds");
	server_secrets_refresh(s);
	server_conf_args_done(&arena);
	log_event(LOG_INFO, "config.reloaded", NULL, NULL, 0,
		  "Configuration reloaded (log level, format, audit log and its queue bound, drain "
		  "timeout, resume window, ping and handshake timeouts, connection/session/process "
		  "limits, http/request response limit)");
}
