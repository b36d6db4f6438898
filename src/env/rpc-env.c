/* SPDX-License-Identifier: MIT */
/*
 * environment/info, environment/status (PROTOCOL.md §6.2-§6.4), the
 * environmentInfo object built once at start-up, and the env module's method table.
 */
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "file-uri.h"
#include "log.h"
#include "params.h"
#include "env.h"
#include "rpc.h"

static json_t *uri_or_null(const char *path)
{
	char *u = path ? file_uri_from_path(path) : NULL;
	json_t *j = u ? json_string(u) : json_null();

	free(u);
	return j;
}

/* When a flag of the reference's is true on this server. */
enum cap_when {
	CAP_NEVER,
	CAP_ALWAYS,
	/*
	 * Where sandboxes can be built: an enforced managed network runs in a
	 * network namespace of the command's own.
	 */
	CAP_SANDBOX,
	/* sandbox_root_write_supported(): root-write policies enforced as promised. */
	CAP_ROOT_WRITE,
};

static const struct {
	const char *name;
	enum cap_when when;
} reference_caps[] = {
	/* The proxy on the ring (src/netproxy); its network/policyRequest round trip. */
	{ "networkProxyLaunch", CAP_SANDBOX },
	{ "networkProxyReviewDomains", CAP_SANDBOX },
	/* 0.171's: programs that ignore the proxy variables routed through it (not built). */
	{ "networkProxyTransparentTcp", CAP_NEVER },
	/* The proxy's credential broker and TLS interception (src/netproxy/credentials.h). */
	{ "credentialMasking", CAP_SANDBOX },
	{ "credentialMaskingCustomProviders", CAP_SANDBOX },
	/* src/discovery; a sandboxed scan runs in the fs helper. */
	{ "capabilityDiscoverySandbox", CAP_ALWAYS },
	{ "fsWatchMissing", CAP_ALWAYS },
	{ "capabilityDiscoveryV2", CAP_ALWAYS },
	{ "environmentConfigRead", CAP_ALWAYS },
	/* http/request (src/http): headers with valueEnvVar */
	{ "httpHeaderEnvVars", CAP_ALWAYS },
	{ "sandboxedFileStreaming", CAP_ALWAYS },
	{ "fileWriteStreaming", CAP_ALWAYS },
	/* process/start.shellSnapshot (exec/shell-snapshot.h) */
	{ "shellSnapshotV2", CAP_ALWAYS },
	{ "windowsMxc", CAP_NEVER },
	/*
	 * A root write keeps the standard devices, and one with carve-outs (an
	 * approved command's) keeps them all (docs/SECURITY.md "Write on the root").
	 */
	{ "linuxRootWritePreservesDevices", CAP_ROOT_WRITE },
	{ "linuxApprovedRootWritePreservesRestrictions", CAP_ROOT_WRITE },
};

/*
 * Capabilities: advertise only what is implemented. Member names and order
 * are the reference's (PROTOCOL.md §6.1); unimplemented features say false.
 * uexec's own extensions follow, under uexec* names (README.md "Protocol
 * extensions"), true (uexecDenialEvidence: while a source is in use): a client
 * that does not know them ignores them.
 */
static json_t *capabilities(const struct server *s)
{
	static const char *const uexec_names[] = {
		"uexecPtyResize", "uexecCloseStdin", "uexecProcessTimeout", "uexecProcessList",
		"uexecFsRename", "uexecFsWatch",
	};
	json_t *o = json_object();

	for (size_t i = 0; i < ELEMENTSOF(reference_caps); i++) {
		enum cap_when w = reference_caps[i].when;
		bool on = w == CAP_ALWAYS || (w == CAP_SANDBOX && !s->sandbox.missing[0]) ||
			  (w == CAP_ROOT_WRITE && sandbox_root_write_supported(&s->sandbox));

		json_object_set_new(o, reference_caps[i].name, json_boolean(on));
	}
	for (size_t i = 0; i < ELEMENTSOF(uexec_names); i++)
		json_object_set_new(o, uexec_names[i], json_true());
	/*
	 * These depend on the host (sandbox/cgroup.h), all booleans as the
	 * reference's: a whole-tree kill through a cgroup per process, and the
	 * kinds of process/start's `limits` this host enforces.
	 */
	json_object_set_new(o, "uexecProcessCgroup", json_boolean(s->cgroups.enabled));
	json_object_set_new(o, "uexecProcessLimitPids",
			    json_boolean(s->cgroups.where[SANDBOX_CG_PIDS] != SANDBOX_CG_NONE));
	json_object_set_new(o, "uexecProcessLimitMemory",
			    json_boolean(s->cgroups.where[SANDBOX_CG_MEMORY] != SANDBOX_CG_NONE));
	json_object_set_new(o, "uexecProcessLimitCpu",
			    json_boolean(s->cgroups.where[SANDBOX_CG_CPU] != SANDBOX_CG_NONE));
	/*
	 * True while a denial evidence source is in use (exec's evidence-ring.c):
	 * sandboxDenied then comes from kernel records and process/exited may
	 * carry `denials`; false: the reference heuristic.
	 */
	json_object_set_new(o, "uexecDenialEvidence",
			    json_boolean(s->denial_evidence && strcmp(s->denial_evidence, "none") != 0));
	return o;
}

/* A stable per-host id: sha256 of the machine id (same across restarts and users). */
static json_t *provider_id(void)
{
	unsigned char md[crypto_hash_sha256_BYTES];
	char buf[256] = "uexec", hex[2 * crypto_hash_sha256_BYTES + 8];
	FILE *f = fopen("/etc/machine-id", "re");
	size_t n = 5;

	if (f) {
		n += fread(buf + 5, 1, sizeof(buf) - 6, f);
		fclose(f);
	}
	crypto_hash_sha256(md, (const unsigned char *)buf, n);
	memcpy(hex, "sha256:", 7);
	for (size_t i = 0; i < sizeof(md); i++)
		snprintf(hex + 7 + 2 * i, 3, "%02x", md[i]);
	return json_string(hex);
}

/*
 * environmentInfo and the login shell it names, built once at start
 * (env_init): module state, like the one server they describe.
 */
static struct {
	char *login_shell;
	json_t *info;
} env;

static json_t *info_build(struct server *s, const char *login_shell)
{
	json_t *info = json_object(), *shell = json_object(), *tmpdirs = json_array();
	const char *tmpdir = getenv("TMPDIR"), *base;
	char cwd[PATH_MAX];

	base = strrchr(login_shell, '/');
	json_object_set_new(shell, "name", json_string(base ? base + 1 : login_shell));
	json_object_set_new(shell, "path", json_string(login_shell));
	json_object_set_new(info, "shell", shell);
	json_object_set_new(info, "executorVersion", json_string(s->cfg.executor_version));
	json_object_set_new(info, "providerId", provider_id());
	json_object_set_new(info, "cwd", uri_or_null(getcwd(cwd, sizeof(cwd)) ? cwd : "/"));
	json_object_set_new(info, "userHomeDir", uri_or_null(getenv("HOME")));
	json_object_set_new(info, "platformOs", json_string("linux"));
	json_object_set_new(info, "prependPathDirs", json_array());
	if (tmpdir && *tmpdir == '/')
		json_array_append_new(tmpdirs, uri_or_null(tmpdir));
	json_object_set_new(info, "temporaryDirectories", tmpdirs);
	json_object_set_new(info, "tempDir", uri_or_null(tmpdir && *tmpdir == '/' ? tmpdir : "/tmp"));
	json_object_set_new(info, "capabilities", capabilities(s));
	return info;
}

char *env_login_shell_lookup(void)
{
	struct passwd *pw = getpwuid(getuid());
	const char *sh = pw && pw->pw_shell && *pw->pw_shell ? pw->pw_shell : "/bin/sh";

	return strdup(sh);
}

int env_init(struct server *s, char *login_shell)
{
	env_done();
	env.login_shell = login_shell;
	env.info = login_shell ? info_build(s, login_shell) : NULL;
	return env.info ? 0 : -ENOMEM;
}

void env_done(void)
{
	json_decref(env.info);
	free(env.login_shell);
	env.info = NULL;
	env.login_shell = NULL;
}

const char *env_login_shell(void)
{
	return env.login_shell;
}

json_t *env_info(void)
{
	return env.info;
}

/* Params must be absent, null or {} ("unit" in serde terms). */
static bool unit_params(struct conn *c, json_t *id, json_t *params)
{
	if (!params || json_is_null(params) ||
	    (json_is_object(params) && json_object_size(params) == 0))
		return true;
	if (json_is_array(params))
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "invalid type: sequence, expected unit");
	else if (json_is_object(params))
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "invalid type: map, expected unit");
	else {
		char err[256];

		params_type_error(params, "unit", err, sizeof(err));
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", err);
	}
	return false;
}

static void rpc_environment_info(struct conn *c, json_t *id, json_t *params)
{
	if (unit_params(c, id, params))
		rpc_reply(c, id, json_incref(env.info));
}

static void rpc_environment_status(struct conn *c, json_t *id, json_t *params)
{
	json_t *r;

	if (!unit_params(c, id, params))
		return;
	r = json_object();
	json_object_set_new(r, "status", json_string("ready"));
	rpc_reply(c, id, r);
}

static const struct rpc_method env_methods[] = {
	{ "environment/info", "environment info", rpc_environment_info, NULL },
	{ "environment/status", "environment status", rpc_environment_status, NULL },
	{ "environmentConfig/read", "environment config", env_rpc_config_read, NULL },
};

int env_methods_register(void)
{
	return rpc_methods_register(env_methods, ELEMENTSOF(env_methods));
}
