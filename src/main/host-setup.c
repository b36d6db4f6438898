/* SPDX-License-Identifier: MIT */
/*
 * Start-up's look at the host: the sandbox's mechanisms probed and logged
 * (what sandboxed requests will get), the server's own files hidden from
 * sandboxes (again at each SIGHUP), and the per-process cgroups' layout,
 * limits and supervisor. Split out of server.c (issue 24).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host-setup.h"
#include "log.h"
#include "server.h"
#include "spawn.h"
#include "upgrade.h"

/*
 * The server's own files no sandbox may read (sandbox_set_secrets) and no
 * unsandboxed file request may read or write (secrets.h): its secrets, the
 * audit log (every session's command lines) and the --config file, as c
 * names them; at start and after each SIGHUP (a path once hidden stays
 * hidden). The configuration file holds no key, but it may hold the
 * token's digest (ws-token-sha256: a weak token guessed offline), and it
 * decides what each SIGHUP loads: rewritten through a planted link, it
 * would name the client's own token digest, or point the root-written
 * audit log at any file on the host.
 */
int server_hide_files(struct server *s, const struct config *c)
{
	const char *files[] = { c->ws_token_file, c->ws_shared_secret_file, c->tls_key,
				s->audit_path && strcmp(s->audit_path, "-") ? s->audit_path : NULL,
				c->config_file };

	if (s->cfg.fs_helper)
		return 0;
	return sandbox_set_secrets(&s->sandbox, files, ELEMENTSOF(files));
}

/* Probes the host once and tells the operator what sandboxed requests will get. */
int server_setup_sandbox(struct server *s)
{
	char path[PATH_MAX] = "uexec-init", line[1024];
	struct log_field ready[3];
	int r;

	if (s->cfg.fs_helper) {
		/* Inside a sandbox already: nothing to probe or announce. */
		s->sandbox.max_ptys = s->cfg.sandbox_max_ptys;
		snprintf(s->sandbox.missing, sizeof(s->sandbox.missing), "nested sandboxes");
		return 0;
	}
	sandbox_probe(&s->sandbox, s->cfg.landlock_abi_max <= SANDBOX_LANDLOCK_ABI_NEWEST
					   ? (int)s->cfg.landlock_abi_max : -1);
	s->sandbox.max_ptys = s->cfg.sandbox_max_ptys;
	/* Without sandboxes too: unsandboxed file requests refuse them all the same. */
	r = server_hide_files(s, &s->cfg);
	if (r < 0)
		return log_error_errno(r, "Cannot record the files to hide from sandboxes");
	server_secrets_refresh(s);
	if (s->cfg.no_sandbox)
		snprintf(s->sandbox.missing, sizeof(s->sandbox.missing),
			 "sandbox support (disabled by --no-sandbox)");
	if (s->sandbox.missing[0]) {
		log_warning("Sandboxed processes will be refused: this host lacks %s",
			    s->sandbox.missing);
		return 0;
	}
	if (s->cfg.sandbox_uid) {
		char err[512];

		r = sandbox_set_uid(&s->sandbox, s->cfg.sandbox_uid, s->cfg.sandbox_gid, err,
				    sizeof(err));
		if (r < 0)
			return log_error_errno(r, "Cannot run sandboxes as another uid: %s", err);
	}
	ready[0] = LOG_INT("landlockAbi", s->sandbox.landlock_abi);
	ready[1] = LOG_BOOL("userNamespace", s->sandbox.userns);
	ready[2] = LOG_BOOL("sandboxUid", s->sandbox.uid_userns_fd >= 0);
	log_event(LOG_INFO, "sandbox.ready", NULL, ready, ELEMENTSOF(ready),
		  "Sandbox ready: Landlock ABI %d, mount namespaces, seccomp%s%s%s",
		 s->sandbox.landlock_abi,
		 s->sandbox.userns ? ", a user namespace per sandbox (uexec is not root: its uid and "
				     "gid mapped to themselves, as bubblewrap maps them)" : "",
		 s->sandbox.uid_userns_fd >= 0 ? ", sandboxed processes as an unprivileged uid "
						 "(--sandbox-uid)" : "",
		 s->cfg.landlock_abi_max < (unsigned)s->sandbox.landlock_abi_kernel ? " (capped by "
		 "--landlock-abi-max, testing only)" : "");
	r = spawn_init(path, sizeof(path));
	s->sandbox.pid_ns = r >= 0;
	if (r < 0)
		log_warning_errno(r, "Cannot open %s: sandboxed processes will share the host's "
				     "PID namespace",
				  path);
	log_info("%s", sandbox_describe(&s->sandbox, line, sizeof(line)));
	return 0;
}

/*
 * Per-process cgroups (sandbox/cgroup.h): the layout is probed and logged
 * once, with what is enforced; limits the operator asked for that the host
 * cannot enforce are said too (requests asking for them are refused).
 */
void server_setup_cgroups(struct server *s)
{
	const struct sandbox_cg_limits *l = &s->cfg.process_limits;
	const uint64_t asked[_SANDBOX_CG_KIND_MAX] = { l->pids_max, l->memory_max, l->cpu_milli };
	char desc[1024];
	int r;

	s->cgroups.base_fd = s->cgroups.supervisor_fd = -1;
	for (int k = 0; k < _SANDBOX_CG_KIND_MAX; k++)
		s->cgroups.v1_fd[k] = -1;
	if (s->cfg.fs_helper)
		return;
	/* A live upgrade hands the layout and the supervisor's pipe over (docs/UPGRADE.md). */
	if (upgrade_restore_cgroups(s) != 0)
		return;
	sandbox_cg_init(&s->cgroups, !s->cfg.process_cgroups_off, desc, sizeof(desc));
	log_info("%s", desc);
	for (int k = 0; k < _SANDBOX_CG_KIND_MAX; k++)
		if (asked[k] && s->cgroups.where[k] == SANDBOX_CG_NONE)
			log_warning("--process-%s-max cannot be enforced on this host (no %s controller "
				    "available to uexec): processes start without it",
				    sandbox_cg_kind_name(k), sandbox_cg_kind_name(k));
	r = sandbox_cg_supervise(&s->cgroups);
	if (r < 0)
		log_warning_errno(r, "Cannot start the process that kills uexec's processes if it "
				     "dies; the next start sweeps them instead");
	else if (s->cgroups.supervisor > 0)
		log_info("No orphans: pid %d (uexec-reaper) kills every process uexec started if "
			 "uexec dies", (int)s->cgroups.supervisor);
}
