/* SPDX-License-Identifier: MIT */
/*
 * process/start's parameters (PROTOCOL.md §6.6): the WireExecParams table
 * and the nested objects (envPolicy, metadata, managedNetwork,
 * networkProxy, shellSnapshot, the sandbox's shape) decoded with serde's
 * errors in the reference's order; the cwd URI and argv.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conn.h"
#include "exec.h"
#include "file-uri.h"
#include "macro.h"
#include "netproxy-config.h"
#include "params.h"
#include "rpc-process.h"
#include "rpc.h"
#include "shell-snapshot.h"

/* UUID with an optional urn:uuid: prefix, hyphenated or simple, like the uuid crate. */
static bool uuid_is_valid(const char *s)
{
	size_t n, hex = 0;

	if (strncasecmp(s, "urn:uuid:", 9) == 0)
		s += 9;
	n = strlen(s);
	if (n == 38 && s[0] == '{' && s[37] == '}') {
		s++;
		n = 36;
	}
	for (size_t i = 0; i < n; i++) {
		bool dash_pos = i == 8 || i == 13 || i == 18 || i == 23;

		if (n == 36 && dash_pos) {
			if (s[i] != '-')
				return false;
			continue;
		}
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
		      (s[i] >= 'A' && s[i] <= 'F')))
			return false;
		hex++;
	}
	return hex == 32 && (n == 32 || n == 36);
}

const struct pfield exec_start_fields[] = {
	[F_PROCESS_ID] = { "processId", P_STRING, true, NULL },
	[F_METADATA] = { "metadata", P_STRUCT, false, "struct ExecMetadata" },
	[F_ARGV] = { "argv", P_STRING_SEQ, true, NULL },
	[F_CWD] = { "cwd", P_STRING, true, NULL },
	[F_ENV_POLICY] = { "envPolicy", P_STRUCT, false, "struct ExecEnvPolicy" },
	[F_SHELL_SNAPSHOT] = { "shellSnapshot", P_STRUCT, false, "struct ShellSnapshotRequest" },
	[F_ENV] = { "env", P_STRING_MAP, true, NULL },
	[F_TTY] = { "tty", P_BOOL, true, NULL },
	[F_PIPE_STDIN] = { "pipeStdin", P_BOOL_DEFAULT, false, NULL },
	[F_ARG0] = { "arg0", P_STRING, false, NULL },
	[F_SANDBOX] = { "sandbox", P_STRUCT, false, "struct WireFileSystemSandboxContext" },
	[F_ENFORCE_NET] = { "enforceManagedNetwork", P_BOOL_DEFAULT, false, NULL },
	[F_MANAGED_NET] = { "managedNetwork", P_STRUCT, false, "struct ManagedNetworkSandboxContext" },
	/* every shape is netproxy_config_decode's (serde takes a sequence too) */
	[F_NET_PROXY] = { "networkProxy", P_ANY, false, NULL },
	/* uexec extensions (rpc-process-ext.c); the reference ignores them. */
	[F_SIZE] = { "size", P_STRUCT, false, "struct PtySize" },
	[F_TIMEOUT_MS] = { "timeoutMs", P_U64, false, NULL },
	[F_LIMITS] = { "limits", P_STRUCT, false, "struct ProcessLimits" },
};

static const struct pfield policy_fields[] = {
	{ "inherit", P_ENUM_STR, true, "string or map" },
	{ "ignoreDefaultExcludes", P_BOOL, true, NULL },
	{ "exclude", P_STRING_SEQ, true, NULL },
	{ "set", P_STRING_MAP, true, NULL },
	{ "includeOnly", P_STRING_SEQ, true, NULL },
};

static const struct pfield metadata_fields[] = {
	{ "threadId", P_STRING, false, NULL },
	{ "toolCallId", P_STRING, false, NULL },
};

static bool one_of(const char *s, const char *const *v)
{
	for (; *v; v++)
		if (strcmp(s, *v) == 0)
			return true;
	return false;
}

static int variant_error(const char *got, const char *const *v, char *err)
{
	size_t o = (size_t)snprintf(err, ERRSZ, "unknown variant `%s`, expected one of ", got);

	for (size_t i = 0; v[i] && o < ERRSZ; i++)
		o += (size_t)snprintf(err + o, ERRSZ - o, "%s`%s`", i ? ", " : "", v[i]);
	return -EINVAL;
}

/*
 * The shape of a sandbox object (WireFileSystemSandboxContext, PROTOCOL.md
 * §5.4), so that malformed input gets the reference's decoding error rather
 * than a policy refusal.
 */
int exec_check_sandbox_shape(json_t *sb, char *err)
{
	static const struct pfield fields[] = {
		{ "permissions", P_STRUCT, true, "internally tagged enum ExecPermissionProfile" },
		{ "cwd", P_STRING, false, NULL },
		{ "workspaceRoots", P_STRING_SEQ, false, NULL },
		{ "windowsSandboxLevel", P_ENUM_STR, true, "a string" },
		{ "windowsSandboxProxySettingsMode", P_ENUM_STR, false, "a string" },
		{ "useLegacyLandlock", P_BOOL, false, NULL },
		{ "policyContext", P_STRUCT, false, "struct PolicyContext" },
		{ "userHomeDir", P_STRING, false, NULL },
		{ "sandboxOverride", P_ENUM_STR, false, "a string" },
	};
	static const char *const perm_types[] = { "managed", "disabled", "external", NULL };
	static const char *const levels[] = { "disabled", "restricted-token", "elevated", "mxc", NULL };
	static const char *const proxy_modes[] = { "reconcile", "preserve", NULL };
	json_t *f[ELEMENTSOF(fields)], *perm = json_object_get(sb, "permissions"), *type;

	/*
	 * serde decodes the permissions value when it reaches that key, so its
	 * inner errors come before a missing windowsSandboxLevel.
	 */
	if (json_is_object(perm)) {
		type = json_object_get(perm, "type");
		if (!type) {
			snprintf(err, ERRSZ, "missing field `type`");
			return -EINVAL;
		}
		if (!json_is_string(type)) {
			params_type_error(type, "a string", err, ERRSZ);
			return -EINVAL;
		}
		if (!one_of(json_string_value(type), perm_types))
			return variant_error(json_string_value(type), perm_types, err);
		if (strcmp(json_string_value(type), "managed") == 0) {
			if (!json_object_get(perm, "file_system")) {
				snprintf(err, ERRSZ, "missing field `file_system`");
				return -EINVAL;
			}
			if (!json_object_get(perm, "network")) {
				snprintf(err, ERRSZ, "missing field `network`");
				return -EINVAL;
			}
		}
	}
	if (params_decode_nested(sb, "WireFileSystemSandboxContext", fields, ELEMENTSOF(fields), f,
				 err, ERRSZ) < 0)
		return -EINVAL;
	if (!one_of(json_string_value(f[3]), levels))
		return variant_error(json_string_value(f[3]), levels, err);
	if (f[4] && !one_of(json_string_value(f[4]), proxy_modes))
		return variant_error(json_string_value(f[4]), proxy_modes, err);
	return 0;
}

int exec_check_start_nested(json_t *start[], struct netproxy_config **npc, bool *mn_ttcp, char *err)
{
	json_t *tmp[ELEMENTSOF(policy_fields)];

	if (start[F_ENV_POLICY]) {
		const char *inh;

		if (params_decode_nested(start[F_ENV_POLICY], "ExecEnvPolicy", policy_fields,
				  ELEMENTSOF(policy_fields), tmp, err, ERRSZ) < 0)
			return -EINVAL;
		inh = json_string_value(tmp[0]);
		if (strcmp(inh, "all") && strcmp(inh, "core") && strcmp(inh, "none")) {
			snprintf(err, ERRSZ, "unknown variant `%s`, expected one of `core`, `all`, `none`",
				 inh);
			return -EINVAL;
		}
	}
	if (start[F_METADATA]) {
		if (params_decode_nested(start[F_METADATA], "ExecMetadata", metadata_fields,
				  ELEMENTSOF(metadata_fields), tmp, err, ERRSZ) < 0)
			return -EINVAL;
		if (tmp[0] && !uuid_is_valid(json_string_value(tmp[0]))) {
			snprintf(err, ERRSZ,
				 "invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], found `%c` at 1",
				 json_string_value(tmp[0])[0] ? json_string_value(tmp[0])[0] : ' ');
			return -EINVAL;
		}
	}
	if (start[F_MANAGED_NET]) {
		static const struct pfield mn[] = {
			{ "allowLocalBinding", P_BOOL, false, NULL },
			{ "transparentTcp", P_BOOL, false, NULL },
		};
		if (params_decode_nested(start[F_MANAGED_NET], "ManagedNetworkSandboxContext", mn,
					 ELEMENTSOF(mn), tmp, err, ERRSZ) < 0)
			return -EINVAL;
		*mn_ttcp = params_bool(tmp[1], false);
	}
	if (start[F_NET_PROXY]) {
		int r = netproxy_config_decode(start[F_NET_PROXY], npc, err, ERRSZ);

		if (r < 0)
			return r;
	}
	if (start[F_SHELL_SNAPSHOT] && snap_check_shape(start[F_SHELL_SNAPSHOT], err, ERRSZ) < 0)
		return -EINVAL;
	if (start[F_SANDBOX] && exec_check_sandbox_shape(start[F_SANDBOX], err) < 0)
		return -EINVAL;
	return 0;
}

/* The cwd parameter as a native path (*ret stays NULL when absent), or replies and returns < 0. */
int exec_decode_cwd(struct conn *c, json_t *id, json_t *v, char **ret)
{
	char *uerr = NULL;
	int r;

	*ret = NULL;
	if (!v)
		return 0;
	r = file_uri_to_pathn(json_string_value(v), json_string_length(v), true, ret, &uerr);
	if (r == -EREMOTE) {
		/* Both quotes are the serialized URL (file://1.2.3/x -> file://1.2.0.3/x). */
		const char *end = strstr(uerr, "' is invalid on 'linux'");
		int n = uerr[0] == '\'' && end ? (int)(end - uerr - 1) : -1;

		if (n >= 0)
			rpc_reply_error(c, id, RPC_INVALID_PARAMS,
					"cwd URI `%.*s` is not valid on this exec-server host: %s", n,
					uerr + 1, uerr);
		else
			rpc_reply_error(c, id, RPC_INVALID_PARAMS,
					"cwd URI `%s` is not valid on this exec-server host: %s",
					json_string_value(v), uerr);
	} else if (r == -ENOMEM) {
		rpc_reply_errno_internal(c, id, ENOMEM);
	} else if (r < 0) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", uerr);
	}
	free(uerr);
	return r;
}

/*
 * argv with arg0 in place of argv[0] when given; the strings are borrowed
 * from the request. Returns 0, -ENOMEM, or -EILSEQ for a string holding NUL.
 */
int exec_build_argv(json_t **f, char ***ret)
{
	size_t argc = json_array_size(f[F_ARGV]), i;
	char **argv = calloc(argc + 1, sizeof(char *));
	json_t *a;

	if (!argv)
		return -ENOMEM;
	json_array_foreach(f[F_ARGV], i, a) {
		const char *s = json_string_value(a);

		if (i == 0 && f[F_ARG0])
			s = json_string_value(f[F_ARG0]);
		if (memchr(json_string_value(a), 0, json_string_length(a)) ||
		    (i == 0 && f[F_ARG0] && memchr(s, 0, json_string_length(f[F_ARG0])))) {
			free(argv);
			return -EILSEQ;
		}
		argv[i] = (char *)s;
	}
	*ret = argv;
	return 0;
}
