/* SPDX-License-Identifier: MIT */
/*
 * initialize, environment/info, environment/status (PROTOCOL.md §6.1-§6.4),
 * and the environmentInfo object built once at start-up.
 */
#include <errno.h>
#include <limits.h>
#include <openssl/sha.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "file-uri.h"
#include "log.h"
#include "params.h"
#include "rpc.h"
#include "session.h"

static json_t *uri_or_null(const char *path)
{
	char *u = path ? file_uri_from_path(path) : NULL;
	json_t *j = u ? json_string(u) : json_null();

	free(u);
	return j;
}

/*
 * Capabilities: advertise only what is implemented. Member names and order
 * are the reference's (PROTOCOL.md §6.1); unimplemented features say false.
 */
static json_t *capabilities(void)
{
	static const char *const names[] = {
		"networkProxyLaunch", "networkProxyReviewDomains", "credentialMasking",
		"credentialMaskingCustomProviders", "capabilityDiscoverySandbox", "fsWatchMissing",
		"capabilityDiscoveryV2", "environmentConfigRead", "httpHeaderEnvVars",
		"sandboxedFileStreaming", "fileWriteStreaming", "shellSnapshotV2", "windowsMxc",
		"linuxRootWritePreservesDevices", "linuxApprovedRootWritePreservesRestrictions",
	};
	json_t *o = json_object();

	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		json_object_set_new(o, names[i],
				    json_boolean(strcmp(names[i], "environmentConfigRead") == 0 ||
						 strcmp(names[i], "fsWatchMissing") == 0));
	return o;
}

/* A stable per-host id: sha256 of the machine id (same across restarts and users). */
static json_t *provider_id(void)
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	char buf[256] = "uexec", hex[2 * SHA256_DIGEST_LENGTH + 8];
	FILE *f = fopen("/etc/machine-id", "re");
	size_t n = 5;

	if (f) {
		n += fread(buf + 5, 1, sizeof(buf) - 6, f);
		fclose(f);
	}
	SHA256((const unsigned char *)buf, n, md);
	memcpy(hex, "sha256:", 7);
	for (size_t i = 0; i < sizeof(md); i++)
		snprintf(hex + 7 + 2 * i, 3, "%02x", md[i]);
	return json_string(hex);
}

json_t *env_info_build(struct server *s)
{
	json_t *info = json_object(), *shell = json_object(), *tmpdirs = json_array();
	const char *tmpdir = getenv("TMPDIR"), *base;
	char cwd[PATH_MAX];

	base = strrchr(s->login_shell, '/');
	json_object_set_new(shell, "name", json_string(base ? base + 1 : s->login_shell));
	json_object_set_new(shell, "path", json_string(s->login_shell));
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
	json_object_set_new(info, "capabilities", capabilities());
	return info;
}

char *login_shell_lookup(void)
{
	struct passwd *pw = getpwuid(getuid());
	const char *sh = pw && pw->pw_shell && *pw->pw_shell ? pw->pw_shell : "/bin/sh";

	return strdup(sh);
}

void rpc_initialize(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "clientName", P_STRING, true, NULL },
		{ "resumeSessionId", P_STRING, false, NULL },
	};
	json_t *f[ELEMENTSOF(fields)], *res;
	struct session *ss;
	char err[512];
	int r;

	if (params_decode(params, "InitializeParams", fields, ELEMENTSOF(fields), f, err,
			  sizeof(err)) < 0) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", err);
		return;
	}
	if (f[1]) {
		const char *sid = json_string_value(f[1]);

		ss = session_find(c->srv, sid);
		if (!ss) {
			rpc_reply_error_quoted(c, id, RPC_INVALID_REQUEST, "unknown session id ", f[1],
					       "");
			return;
		}
		if (ss->conn) {
			rpc_reply_error(c, id, RPC_SESSION_ATTACHED,
					"session %s is already attached to another connection", sid);
			return;
		}
		session_attach(ss, c);
		log_info("Session %s resumed by %s", ss->id, c->peer);
	} else {
		r = session_new(c->srv, c, &ss);
		if (r == -EUSERS) {
			log_warning("Refusing a session for %s: session limit (%u) reached", c->peer,
				    c->srv->cfg.max_sessions);
			rpc_reply_error(c, id, RPC_INVALID_REQUEST,
					"session limit reached: at most %u sessions",
					c->srv->cfg.max_sessions);
			return;
		}
		if (r < 0) {
			rpc_reply_errno_internal(c, id, r);
			return;
		}
	}
	c->initialize_done = true;
	res = json_object();
	json_object_set_new(res, "sessionId", json_string(ss->id));
	json_object_set(res, "environmentInfo", c->srv->env_info);
	rpc_reply(c, id, res);
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

void rpc_environment_info(struct conn *c, json_t *id, json_t *params)
{
	if (unit_params(c, id, params))
		rpc_reply(c, id, json_incref(c->srv->env_info));
}

void rpc_environment_status(struct conn *c, json_t *id, json_t *params)
{
	json_t *r;

	if (!unit_params(c, id, params))
		return;
	r = json_object();
	json_object_set_new(r, "status", json_string("ready"));
	rpc_reply(c, id, r);
}
