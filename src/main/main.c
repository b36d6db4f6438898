/* SPDX-License-Identifier: MIT */
/*
 * uexec: an io_uring-native exec-server speaking the Codex exec-server
 * protocol. Command line parsing and start-up.
 */
#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args-remote.h"
#include "conf.h"
#include "config.h"
#include "conn-auth.h"
#include "conn-tls.h"
#include "help.h"
#include "log.h"
#include "macro.h"
#include "server.h"
#include "spawner.h"
#include "uexec.h"
#include "upgrade.h"

/* Set while SIGHUP re-reads the configuration: errors are logged, not printed. */
static bool reloading;
/* The command line, for a reload. */
static int saved_argc;
static char **saved_argv;

_printf_(1, 2) static void usage_error(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (reloading)
		log_error("Reloading the configuration: %s", msg);
	else
		fprintf(stderr, "uexec: %s\n", msg);
}

/* N with an optional K/M/G/T suffix (powers of 1024), at least 1 MiB. */
static int parse_bytes(const char *name, const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end && !end[1])
		shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20 :
			*end == 'G' || *end == 'g' ? 30 : *end == 'T' || *end == 't' ? 40 : 99;
	if (errno || !*s || s[0] == '-' || end == s || shift == 99 || (*end && !shift) ||
	    v > (UINT64_MAX >> 1) >> shift || (v << shift) < (1u << 20)) {
		fprintf(stderr, "uexec: invalid value '%s' for --%s (expected bytes, at least 1M)\n",
			s, name);
		return -1;
	}
	*ret = v << shift;
	return 0;
}

/* CPUs as a decimal (0.5, 2, 1.25) -> thousandths, 0.01 to 4096. */
static int parse_cpus(const char *name, const char *s, uint64_t *ret)
{
	uint64_t milli = 0, scale = 1000;
	const char *p = s;

	for (; *p >= '0' && *p <= '9' && milli <= 4096000; p++)
		milli = milli * 10 + (uint64_t)(*p - '0') * 1000;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			if ((scale /= 10) > 0)
				milli += (uint64_t)(*p - '0') * scale;
	if (*p || p == s || milli < 10 || milli > 4096000) {
		fprintf(stderr, "uexec: invalid value '%s' for --%s (expected CPUs, 0.01 to 4096)\n", s,
			name);
		return -1;
	}
	*ret = milli;
	return 0;
}

static int parse_u64(const char *name, const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || !*s || s[0] == '-' || v < min || v > max) {
		usage_error("invalid value '%s' for --%s (expected %" PRIu64 "..%" PRIu64 ")", s, name,
			    min, max);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

/* A numeric option: its bounds and where it goes in struct config (a uint64_t or an unsigned). */
struct num_opt {
	const char *name;
	uint64_t min, max;
	size_t off; /* of the field in struct config */
	bool u64;   /* the field is a uint64_t, else an unsigned */
};
#define NUM_OPT(name, min, max, field)                                                         \
	{ name, min, max, offsetof(struct config, field),                                      \
	  sizeof(((struct config *)NULL)->field) == sizeof(uint64_t) }

static const struct num_opt nums[] = {
	NUM_OPT("resume-window-ms", 0, UINT32_MAX, resume_window_ms),
	NUM_OPT("max-sessions", 1, 1u << 20, max_sessions),
	NUM_OPT("max-connections", 1, 1u << 20, max_connections),
	NUM_OPT("max-processes", 1, 1u << 20, max_processes),
	NUM_OPT("max-frame-bytes", 1024, 1ull << 32, max_frame_bytes),
	NUM_OPT("max-message-bytes", 1024, 1ull << 32, max_message_bytes),
	NUM_OPT("max-json-depth", 8, 4096, max_json_depth),
	NUM_OPT("max-queued-bytes", 65536, 1ull << 34, max_queued_bytes),
	NUM_OPT("max-inflight-bytes-per-conn", 1u << 20, 1ull << 40, max_inflight_bytes_per_conn),
	NUM_OPT("max-inflight-bytes", 1u << 20, 1ull << 44, max_inflight_bytes),
	NUM_OPT("ping-interval-ms", 10, UINT32_MAX, ping_interval_ms),
	NUM_OPT("handshake-timeout-ms", 0, UINT32_MAX, handshake_timeout_ms),
	/* devpts's own bounds; max=0 would mean no limit to the kernel. */
	NUM_OPT("sandbox-max-ptys", 1, 1u << 20, sandbox_max_ptys),
	NUM_OPT("drain-timeout-ms", 0, UINT32_MAX, drain_timeout_ms),
	NUM_OPT("http-max-response-bytes", 1024, 1ull << 32, http_max_response_bytes),
	/* Testing only, not in --help: run the sandbox as on an older kernel. */
	NUM_OPT("landlock-abi-max", 0, 7, landlock_abi_max),
	NUM_OPT("process-pids-max", 1, 4194304, process_limits.pids_max),
	/* Less would drop most lines of a long argv (audit lines cut it at 64 KiB). */
	NUM_OPT("audit-log-max-queued-bytes", 65536, 1ull << 30, audit_log_max_queued_bytes),
};

/* One numeric option's value into cfg. Returns 0, or < 0 when it is refused (reported). */
static int set_num_opt(const struct num_opt *n, const char *arg, struct config *cfg)
{
	void *field = (char *)cfg + n->off;
	uint64_t v;
	int r = parse_u64(n->name, arg, n->min, n->max, &v);

	if (r >= 0 && n->u64)
		*(uint64_t *)field = v;
	else if (r >= 0)
		*(unsigned *)field = (unsigned)v;
	return r;
}

/*
 * --sandbox-uid UID: an unprivileged host uid (not 0, not the invalid
 * (uid_t)-1); its gid is its passwd entry's group, else the same number.
 */
static int parse_sandbox_uid(const char *s, struct config *cfg)
{
	struct passwd *pw;
	uint64_t v;

	if (s[0] && strspn(s, "0") == strlen(s)) {
		fprintf(stderr, "uexec: --sandbox-uid 0 is host root: give an unprivileged uid "
				"(e.g. 65534)\n");
		return -EINVAL;
	}
	if (parse_u64("sandbox-uid", s, 1, UINT32_MAX - 1, &v) < 0)
		return -EINVAL;
	cfg->sandbox_uid = (unsigned)v;
	pw = getpwuid((uid_t)v);
	cfg->sandbox_gid = pw ? (unsigned)pw->pw_gid : (unsigned)v;
	if (cfg->sandbox_gid == 0) {
		fprintf(stderr, "uexec: --sandbox-uid %s: its passwd group is gid 0 (root's group): "
				"give a uid whose group is unprivileged\n", s);
		return -EINVAL;
	}
	return 0;
}

static int set_log_level(struct config *cfg, const char *level)
{
	int l = log_level_from_string(level);

	if (l < 0) {
		usage_error("unknown --log-level '%s'", level);
		return l;
	}
	cfg->log_level = l;
	return 0;
}

static int set_log_format(struct config *cfg, const char *f)
{
	if (strcmp(f, "text") == 0)
		cfg->log_format = LOG_FORMAT_TEXT;
	else if (strcmp(f, "json") == 0)
		cfg->log_format = LOG_FORMAT_JSON;
	else {
		usage_error("unknown --log-format '%s' (expected text or json)", f);
		return -EINVAL;
	}
	return 0;
}

/* --ws-* (RELAY.md §9) and --allow-unauthenticated: a table of their own. */
enum {
	ARG_WS_AUTH = 0x300, ARG_WS_TOKEN_FILE, ARG_WS_TOKEN_SHA256, ARG_WS_SECRET_FILE, ARG_WS_ISSUER,
	ARG_WS_AUDIENCE, ARG_WS_SKEW, ARG_ALLOW_UNAUTH, ARG_TLS_CERT, ARG_TLS_KEY,
};
static const struct option ws_opts[] = {
	{ "ws-auth", required_argument, NULL, ARG_WS_AUTH },
	{ "ws-token-file", required_argument, NULL, ARG_WS_TOKEN_FILE },
	{ "ws-token-sha256", required_argument, NULL, ARG_WS_TOKEN_SHA256 },
	{ "ws-shared-secret-file", required_argument, NULL, ARG_WS_SECRET_FILE },
	{ "ws-issuer", required_argument, NULL, ARG_WS_ISSUER },
	{ "ws-audience", required_argument, NULL, ARG_WS_AUDIENCE },
	{ "ws-max-clock-skew-seconds", required_argument, NULL, ARG_WS_SKEW },
	{ "allow-unauthenticated", no_argument, NULL, ARG_ALLOW_UNAUTH },
	{ "tls-cert", required_argument, NULL, ARG_TLS_CERT },
	{ "tls-key", required_argument, NULL, ARG_TLS_KEY },
};

/*
 * --config: the file's keys as arguments put before the command line's
 * (conf.h). Every option but these few may be set there, with the TOML types
 * its argument naturally takes: a flag a boolean, a numeric option an integer,
 * others a string; and process-memory-max also an integer (bytes),
 * process-cpu-max also an integer or a float (CPUs), process-cgroups also a
 * boolean (on/off).
 */
static int load_config_file(const char *path, const struct option *opts, size_t n_opts,
			    int num_first, int num_end, struct server_conf_args *ret)
{
	static const char *const not_in_file[] = { "config", "help", "version", "fs-helper" };
	_cleanup_free_ struct server_conf_key *keys = calloc(n_opts, sizeof(*keys));
	char err[512];
	size_t n = 0;
	int r;

	if (!keys) {
		usage_error("out of memory reading %s", path);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n_opts && opts[i].name; i++) {
		struct server_conf_key *k = &keys[n];
		int val = opts[i].val;
		bool skip = false;

		for (size_t j = 0; j < ELEMENTSOF(not_in_file); j++)
			skip |= strcmp(opts[i].name, not_in_file[j]) == 0;
		if (skip)
			continue;
		k->name = opts[i].name;
		if (opts[i].has_arg == no_argument)
			k->types = SERVER_CONF_TYPE(SERVER_CONF_BOOLEAN);
		else if ((val >= num_first && val < num_end) || val == ARG_WS_SKEW ||
			 strcmp(k->name, "sandbox-uid") == 0)
			k->types = SERVER_CONF_TYPE(SERVER_CONF_INTEGER);
		else if (strcmp(k->name, "process-memory-max") == 0)
			k->types = SERVER_CONF_TYPE(SERVER_CONF_STRING) |
				   SERVER_CONF_TYPE(SERVER_CONF_INTEGER);
		else if (strcmp(k->name, "process-cpu-max") == 0)
			k->types = SERVER_CONF_TYPE(SERVER_CONF_STRING) |
				   SERVER_CONF_TYPE(SERVER_CONF_INTEGER) |
				   SERVER_CONF_TYPE(SERVER_CONF_FLOAT);
		else if (strcmp(k->name, "process-cgroups") == 0) {
			k->types = SERVER_CONF_TYPE(SERVER_CONF_STRING) |
				   SERVER_CONF_TYPE(SERVER_CONF_BOOLEAN);
			k->bool_args[0] = "off";
			k->bool_args[1] = "on";
		} else
			k->types = SERVER_CONF_TYPE(SERVER_CONF_STRING);
		n++;
	}
	r = server_conf_load(path, keys, n, ret, err, sizeof(err));
	if (r == -ENOMEM)
		usage_error("out of memory reading %s", path);
	else if (r < 0)
		usage_error("%s", err);
	return r;
}

/* What the --ws-* options set; checked together by check_ws_args(). */
struct ws_args {
	bool any;       /* a --ws-* option other than --ws-auth */
	bool jwt_flags; /* --ws-shared-secret-file, --ws-issuer, --ws-audience, --ws-max-clock-skew-seconds */
};

/* One --ws-* option. Returns 0, or -EINVAL (usage error, exit 2). */
static int parse_ws_opt(int c, const char *arg, struct config *cfg, struct ws_args *w)
{
	uint64_t v;

	if (c != ARG_WS_AUTH && c != ARG_ALLOW_UNAUTH && c != ARG_TLS_CERT && c != ARG_TLS_KEY)
		w->any = true;
	switch (c) {
	case ARG_WS_AUTH:
		if (strcmp(arg, "capability-token") == 0)
			cfg->ws_auth_mode = WS_AUTH_CAPABILITY_TOKEN;
		else if (strcmp(arg, "signed-bearer-token") == 0)
			cfg->ws_auth_mode = WS_AUTH_SIGNED_BEARER_TOKEN;
		else {
			fprintf(stderr, "uexec: invalid value '%s' for '--ws-auth <MODE>'\n"
					"  [possible values: capability-token, signed-bearer-token]\n", arg);
			return -EINVAL;
		}
		return 0;
	case ARG_WS_TOKEN_FILE:
		cfg->ws_token_file = arg;
		return 0;
	case ARG_WS_TOKEN_SHA256:
		cfg->ws_token_sha256 = arg;
		return 0;
	case ARG_WS_SECRET_FILE:
		cfg->ws_shared_secret_file = arg;
		w->jwt_flags = true;
		return 0;
	case ARG_WS_ISSUER:
		cfg->ws_issuer = arg;
		w->jwt_flags = true;
		return 0;
	case ARG_WS_AUDIENCE:
		cfg->ws_audience = arg;
		w->jwt_flags = true;
		return 0;
	case ARG_WS_SKEW:
		w->jwt_flags = true;
		if (parse_u64("ws-max-clock-skew-seconds", arg, 0, INT64_MAX, &v) < 0)
			return -EINVAL;
		cfg->ws_max_clock_skew_s = v;
		return 0;
	case ARG_ALLOW_UNAUTH:
		cfg->allow_unauthenticated = true;
		return 0;
	case ARG_TLS_CERT:
		cfg->tls_cert = arg;
		return 0;
	case ARG_TLS_KEY:
		cfg->tls_key = arg;
		return 0;
	}
	return -EINVAL;
}

/* --listen wss:// and --tls-cert/--tls-key come together. Returns -1 to go on, else the exit status. */
static int check_tls_args(const struct config *cfg)
{
	bool wss = strncmp(cfg->listen, "wss://", 6) == 0;

	if (cfg->remote_url && (cfg->tls_cert || cfg->tls_key)) {
		fprintf(stderr, "uexec: --tls-cert and --tls-key are for the listener, not --remote\n");
		return 2;
	}
	/* wss:// alone: the reference's "unsupported --listen URL" (server.c), exit 1. */
	if (wss && !cfg->tls_cert != !cfg->tls_key) {
		fprintf(stderr, "uexec: --listen wss:// needs --tls-cert and --tls-key\n");
		return 2;
	}
	if (!wss && (cfg->tls_cert || cfg->tls_key)) {
		fprintf(stderr, "uexec: --tls-cert and --tls-key need --listen wss://IP:PORT\n");
		return 2;
	}
	return -1;
}

/* The reference's rules for the --ws-* combination. Returns -1 to go on, else the exit status. */
static int check_ws_args(const struct config *cfg, const struct ws_args *w)
{
	const char *err = NULL;

	if (cfg->ws_auth_mode == WS_AUTH_NONE) {
		if (w->any)
			err = "websocket auth flags require `--ws-auth capability-token` or "
			      "`--ws-auth signed-bearer-token`";
	} else if (cfg->remote_url) {
		err = "WebSocket listener auth cannot be used with --remote or forward";
	} else if (strcmp(cfg->listen, "stdio") == 0 || strcmp(cfg->listen, "stdio://") == 0) {
		err = "WebSocket auth requires a WebSocket listener, not stdio";
	} else if (cfg->ws_auth_mode == WS_AUTH_CAPABILITY_TOKEN) {
		if (w->jwt_flags)
			err = "`--ws-shared-secret-file`, `--ws-issuer`, `--ws-audience`, and "
			      "`--ws-max-clock-skew-seconds` require `--ws-auth signed-bearer-token`";
		else if (cfg->ws_token_file && cfg->ws_token_sha256)
			err = "`--ws-token-file` and `--ws-token-sha256` are mutually exclusive";
		else if (!cfg->ws_token_file && !cfg->ws_token_sha256)
			err = "`--ws-token-file` or `--ws-token-sha256` is required when `--ws-auth "
			      "capability-token` is set";
	} else {
		if (cfg->ws_token_file || cfg->ws_token_sha256)
			err = "`--ws-token-file` and `--ws-token-sha256` require `--ws-auth "
			      "capability-token`, not `signed-bearer-token`";
		else if (!cfg->ws_shared_secret_file)
			err = "`--ws-shared-secret-file` is required when `--ws-auth "
			      "signed-bearer-token` is set";
	}
	if (err) {
		fprintf(stderr, "Error: %s\n", err);
		return 1;
	}
	return -1;
}

/* Named options: getopt values (ARG_WS_* above are the --ws-* group). */
enum {
	ARG_NUM = 0x100, /* + index into nums[] */
	ARG_LISTEN = 0x200, ARG_EXEC_VERSION, ARG_LOG_LEVEL, ARG_VERSION, ARG_NO_SANDBOX,
	ARG_FS_HELPER, ARG_REMOTE, ARG_ENV_ID, ARG_NAME, ARG_AGENT_AUTH,
	ARG_CONFIG, ARG_LOG_FORMAT, ARG_AUDIT_LOG, ARG_ENABLE_AUDIT, ARG_DENIAL_EVIDENCE,
	ARG_CGROUPS, ARG_MEMORY_MAX, ARG_CPU_MAX, ARG_SANDBOX_UID,
};

/*
 * One named option of the command line (or the --config file), c in
 * ARG_LISTEN..ARG_SANDBOX_UID with its value in optarg, into cfg. Returns 0,
 * or < 0 when the value is refused (reported).
 */
static int parse_named_opt(int c, struct config *cfg, bool *listen_given, bool *agent_auth)
{
	int r = 0;

	if (c == ARG_LISTEN) {
		cfg->listen = optarg;
		*listen_given = true;
	} else if (c == ARG_REMOTE) {
		cfg->remote_url = optarg;
	} else if (c == ARG_ENV_ID) {
		cfg->environment_id = optarg;
	} else if (c == ARG_NAME) {
		cfg->remote_name = optarg;
	} else if (c == ARG_AGENT_AUTH) {
		*agent_auth = true;
	} else if (c == ARG_EXEC_VERSION) {
		cfg->executor_version = optarg;
	} else if (c == ARG_LOG_LEVEL) {
		r = set_log_level(cfg, optarg);
	} else if (c == ARG_LOG_FORMAT) {
		r = set_log_format(cfg, optarg);
	} else if (c == ARG_AUDIT_LOG) {
		cfg->audit_log = optarg;
	} else if (c == ARG_CONFIG) {
		/* read in the first pass */
	} else if (c == ARG_CGROUPS) {
		if (strcmp(optarg, "on") != 0 && strcmp(optarg, "off") != 0) {
			fprintf(stderr, "uexec: invalid value '%s' for --process-cgroups "
					"(expected on or off)\n", optarg);
			r = -1;
		}
		cfg->process_cgroups_off = strcmp(optarg, "off") == 0;
	} else if (c == ARG_MEMORY_MAX) {
		r = parse_bytes("process-memory-max", optarg, &cfg->process_limits.memory_max);
	} else if (c == ARG_CPU_MAX) {
		r = parse_cpus("process-cpu-max", optarg, &cfg->process_limits.cpu_milli);
	} else if (c == ARG_SANDBOX_UID) {
		r = parse_sandbox_uid(optarg, cfg);
	} else if (c == ARG_NO_SANDBOX) {
		cfg->no_sandbox = true;
	} else if (c == ARG_ENABLE_AUDIT) {
		cfg->enable_audit = true;
	} else if (c == ARG_DENIAL_EVIDENCE) {
		static const char *const modes[] = { "auto", "none", "audit", "bpf" };
		unsigned m = 0;

		while (m < ELEMENTSOF(modes) && strcmp(optarg, modes[m]) != 0)
			m++;
		if (m < ELEMENTSOF(modes))
			cfg->denial_evidence = m;
		else {
			fprintf(stderr, "uexec: --denial-evidence: 'auto', 'audit', 'bpf' or 'none', "
				"not '%s'\n", optarg);
			r = -EINVAL;
		}
	} else if (c == ARG_FS_HELPER) {
		/* uexec's own sandboxed fs helper: one request over stdio, inside a sandbox. */
		cfg->fs_helper = true;
		cfg->listen = "stdio";
		cfg->log_level = LOG_WARNING;
	}
	return r;
}

/*
 * argv with the --config file's arguments after argv[0]: the file's arguments
 * go first, so that the command line overrides them. NULL without memory.
 * The array only borrows: the strings stay in argv and file.
 */
static char **merged_args(int argc, char **argv, const struct server_conf_args *file)
{
	char **all = calloc((size_t)argc + (size_t)file->argc + 1, sizeof(char *));

	if (!all)
		return NULL;
	all[0] = argv[0];
	if (file->argc > 0)
		memcpy(all + 1, file->argv, sizeof(char *) * (size_t)file->argc);
	memcpy(all + 1 + file->argc, argv + 1, sizeof(char *) * (size_t)(argc - 1));
	return all;
}

/*
 * After the options: the forward subcommand or no operand, then the checks
 * across options. Returns -1 to go on, else the exit status.
 */
static int check_args(int argc, char **argv, struct config *cfg, const struct ws_args *ws,
		      bool listen_given, bool agent_auth)
{
	int r;

	if (optind < argc && strcmp(argv[optind], "forward") == 0) {
		r = server_args_forward(argc - optind, argv + optind, cfg);
		if (r >= 0)
			return r;
	} else if (optind < argc) {
		usage_error("unexpected argument '%s'", argv[optind]);
		if (!reloading)
			fprintf(stderr, "Try 'uexec --help'.\n");
		return 2;
	}
	r = check_ws_args(cfg, ws);
	if (r >= 0)
		return r;
	r = check_tls_args(cfg);
	if (r >= 0)
		return r;
	/* A reload takes nothing of remote mode (the credential is gone from the environment). */
	r = reloading ? -1 : server_args_check_remote(cfg, listen_given, agent_auth);
	if (r >= 0)
		return r;
	if (cfg->max_inflight_bytes_per_conn > cfg->max_inflight_bytes)
		cfg->max_inflight_bytes_per_conn = cfg->max_inflight_bytes;
	if (cfg->max_frame_bytes > cfg->max_message_bytes)
		cfg->max_frame_bytes = cfg->max_message_bytes;
	return -1;
}

/*
 * Fills cfg from the --config file (*file then owns the strings taken from it)
 * and the command line, which comes last and so wins. Returns -1 to go on,
 * else the exit status. Its length is the two option tables (the numeric
 * options with their bounds, the named ones), kept together with the two
 * getopt passes that read them.
 */
/* The options that are neither numeric nor --ws-*: before the other two tables in getopt's. */
static const struct option named_opts[] = {
	{ "enable-audit", no_argument, NULL, ARG_ENABLE_AUDIT },
	{ "denial-evidence", required_argument, NULL, ARG_DENIAL_EVIDENCE },
	{ "process-cgroups", required_argument, NULL, ARG_CGROUPS },
	{ "process-memory-max", required_argument, NULL, ARG_MEMORY_MAX },
	{ "process-cpu-max", required_argument, NULL, ARG_CPU_MAX },
	{ "sandbox-uid", required_argument, NULL, ARG_SANDBOX_UID },
	{ "remote", required_argument, NULL, ARG_REMOTE },
	{ "environment-id", required_argument, NULL, ARG_ENV_ID },
	{ "name", required_argument, NULL, ARG_NAME },
	{ "use-agent-identity-auth", no_argument, NULL, ARG_AGENT_AUTH },
	{ "listen", required_argument, NULL, ARG_LISTEN },
	{ "executor-version", required_argument, NULL, ARG_EXEC_VERSION },
	{ "log-level", required_argument, NULL, ARG_LOG_LEVEL },
	{ "no-sandbox", no_argument, NULL, ARG_NO_SANDBOX },
	{ "fs-helper", no_argument, NULL, ARG_FS_HELPER }, /* internal, not in --help */
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, ARG_VERSION },
	{ "config", required_argument, NULL, ARG_CONFIG },
	{ "log-format", required_argument, NULL, ARG_LOG_FORMAT },
	{ "audit-log", required_argument, NULL, ARG_AUDIT_LOG },
};

/* getopt's table: the named options, the numeric ones (ARG_NUM + index), --ws-*, the end. */
#define N_OPTS (ELEMENTSOF(named_opts) + ELEMENTSOF(nums) + ELEMENTSOF(ws_opts) + 1)
static void build_opts(struct option opts[N_OPTS])
{
	size_t n = 0;

	for (size_t i = 0; i < ELEMENTSOF(named_opts); i++)
		opts[n++] = named_opts[i];
	for (size_t i = 0; i < ELEMENTSOF(nums); i++)
		opts[n++] = (struct option){ nums[i].name, required_argument, NULL, ARG_NUM + (int)i };
	for (size_t i = 0; i < ELEMENTSOF(ws_opts); i++)
		opts[n++] = ws_opts[i];
	opts[n] = (struct option){ 0 };
}

/*
 * First pass: only --config (getopt's own messages come in the second), whose
 * file is loaded into *file. Returns -1 to go on, else the exit status.
 */
static int config_file_pass(int argc, char **argv, const struct option *opts, struct config *cfg,
			    struct server_conf_args *file)
{
	int c;

	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) >= 0)
		if (c == ARG_CONFIG)
			cfg->config_file = optarg;
	opterr = !reloading;
	if (cfg->config_file &&
	    load_config_file(cfg->config_file, opts, N_OPTS, ARG_NUM, ARG_NUM + (int)ELEMENTSOF(nums),
			     file) < 0)
		return 2;
	return -1;
}

/*
 * One option of the second pass (c as getopt_long gave it, its value in
 * optarg) into cfg. Returns -1 to go on, else the exit status.
 */
static int parse_opt(int c, struct config *cfg, struct ws_args *ws, bool *listen_given,
		     bool *agent_auth)
{
	int r;

	if (c >= ARG_NUM && c < ARG_NUM + (int)ELEMENTSOF(nums)) {
		r = set_num_opt(&nums[c - ARG_NUM], optarg, cfg);
	} else if (c >= ARG_WS_AUTH && c <= ARG_TLS_KEY) {
		r = parse_ws_opt(c, optarg, cfg, ws);
	} else if (c == 'h') {
		server_help();
		return 0;
	} else if (c == ARG_VERSION) {
		printf("uexec %s\n", UEXEC_VERSION);
		return 0;
	} else if (c >= ARG_LISTEN && c <= ARG_SANDBOX_UID) {
		r = parse_named_opt(c, cfg, listen_given, agent_auth);
	} else {
		if (!reloading)
			fprintf(stderr, "Try 'uexec --help'.\n");
		else
			usage_error("invalid option in the configuration");
		return 2;
	}
	return r < 0 ? 2 : -1;
}

/*
 * Fills cfg from the --config file (*file then owns the strings taken from it)
 * and the command line, which comes last and so wins. Returns -1 to go on,
 * else the exit status.
 */
static int parse_args(int argc, char **argv, struct config *cfg, struct server_conf_args *file)
{
	bool listen_given = false, agent_auth = false;
	_cleanup_free_ char **all = NULL;
	struct ws_args ws = { 0 };
	struct option opts[N_OPTS];
	int c, r;

	build_opts(opts);
	r = config_file_pass(argc, argv, opts, cfg, file);
	if (r >= 0)
		return r;
	all = merged_args(argc, argv, file);
	if (!all) {
		usage_error("out of memory");
		return 2;
	}
	argc += file->argc;
	argv = all;
	optind = 0;
	/* "+": stop at the first operand, the forward subcommand. */
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) >= 0) {
		r = parse_opt(c, cfg, &ws, &listen_given, &agent_auth);
		if (r >= 0)
			return r;
	}
	return check_args(argc, argv, cfg, &ws, listen_given, agent_auth);
}

/* SIGHUP (struct config's reload): the file and the command line again. */
static int reload_config(struct config *out, struct server_conf_args *arena)
{
	int r;

	*out = (struct config)CONFIG_DEFAULTS;
	out->max_sessions = out->max_connections = out->max_processes = 0;
	reloading = true;
	r = parse_args(saved_argc, saved_argv, out, arena);
	reloading = false;
	if (r >= 0) {
		server_conf_args_done(arena);
		return -EINVAL;
	}
	return 0;
}

/* The server's life from server_init() (its thread: spawn_thread_main()); the exit code. */
static int serve(void *arg)
{
	struct server *srv = arg;
	struct config cfg = srv->cfg;
	int r;

	r = server_init(srv, &cfg);
	if (r < 0)
		upgrade_rollback("its start-up failed"); /* before server_done() closes anything */
	if (r >= 0)
		r = server_run(srv);
	server_done(srv);
	return r < 0 ? 1 : r;
}

int main(int argc, char **argv)
{
	struct config cfg = CONFIG_DEFAULTS;
	struct server_conf_args file = { 0 };
	static struct server srv;
	struct ws_auth *auth = NULL;
	struct ssl_ctx_st *tls = NULL;
	char err[512];
	int r;

	/* `--check-upgrade VERSION` (docs/UPGRADE.md); else argv is remembered for an upgrade. */
	r = upgrade_main_hook(argc, argv);
	if (r >= 0)
		return r;
	/* 0: derived from the fd budget at start-up (server_init) unless given. */
	cfg.max_sessions = cfg.max_connections = cfg.max_processes = 0;
	saved_argc = argc;
	saved_argv = argv;
	r = parse_args(argc, argv, &cfg, &file);
	/* Taken out of the environment: an upgrade's execve puts it back (env-secret.c). */
	if (cfg.remote_credential)
		upgrade_keep_env_secret(cfg.remote_credential_source, cfg.remote_credential);
	if (r >= 0) {
		upgrade_rollback("its arguments were refused"); /* after an upgrade's execve */
		server_conf_args_done(&file);
		return r;
	}
	log_set_max_level(cfg.log_level);
	log_set_format(cfg.log_format);
	cfg.reload = reload_config;
	/* The secrets are read before anything else starts (their errors are the reference's). */
	r = conn_auth_load(&cfg, &auth, err, sizeof(err));
	if (r >= 0)
		r = conn_tls_load(&cfg, &tls, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "Error: %s\n", err);
		upgrade_rollback("its secrets were refused");
		conn_auth_free(auth);
		server_conf_args_done(&file);
		return 1;
	}
	/* Before the loop runs: no connection is read before the secrets are in place. */
	conn_tls_install(tls); /* server_init() prints the wss:// URL */
	conn_auth_install(auth); /* server_done() frees both */
	srv.cfg = cfg;
	/* The server on a thread of its own, this one the spawner (src/exec/spawner.h). */
	r = cfg.fs_helper ? serve(&srv) : spawn_thread_main(serve, &srv);
	server_conf_args_done(&file);
	/* After an upgrade's fallback drain: the new binary, fresh, in this pid (docs/UPGRADE.md). */
	return upgrade_fallback_exec(r);
}
