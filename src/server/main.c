/* SPDX-License-Identifier: MIT */
/*
 * uexec: an io_uring-native exec-server speaking the Codex exec-server
 * protocol. Command line parsing and start-up.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "macro.h"
#include "server.h"

static void help(void)
{
	printf("Usage: uexec [OPTIONS]\n"
	       "       uexec --remote URL --environment-id ID [OPTIONS] [forward --connect WS_URL]\n"
	       "\n"
	       "An io_uring-native exec-server for the Codex exec-server protocol\n"
	       "(JSON-RPC over WebSocket).\n"
	       "\n"
	       "Options:\n"
	       "  --listen URL              ws://IP:PORT (port 0 picks a free port; the bound\n"
	       "                            URL is printed on stdout) or stdio\n"
	       "                            (default: ws://127.0.0.1:0)\n"
	       "  --resume-window-ms N      how long a detached session keeps its processes\n"
	       "                            for initialize{resumeSessionId} (default: 80000)\n"
	       "  --max-sessions N          sessions alive at once (default: derived, below)\n"
	       "  --max-connections N       client connections at once; at the limit the oldest\n"
	       "                            one without a WebSocket upgrade, else without\n"
	       "                            initialize, is closed for the new one (default:\n"
	       "                            derived, below)\n"
	       "  --max-processes N         running processes per session (default: derived)\n"
	       "  --max-frame-bytes N       largest WebSocket frame accepted; clamped to\n"
	       "                            --max-message-bytes (default: 16777216)\n"
	       "  --max-message-bytes N     largest message accepted (default: 67108864)\n"
	       "  --max-json-depth N        deepest JSON nesting accepted (default: 128)\n"
	       "  --max-queued-bytes N      output queued per connection before process output\n"
	       "                            and request reading pause (default: 8388608)\n"
	       "  --max-inflight-bytes-per-conn N\n"
	       "                            reply bytes in flight per connection (files being\n"
	       "                            read, replies being built, sandboxed fs helper\n"
	       "                            output, queued output) above which its further\n"
	       "                            requests wait unread until it drains below half\n"
	       "                            (default: 67108864). One larger reply (fs/readFile\n"
	       "                            up to 512 MiB) runs alone on its connection\n"
	       "  --max-inflight-bytes N    the same for the whole server (default: 2147483648):\n"
	       "                            large allocations wait for it, replies larger than\n"
	       "                            the per-connection budget may use half of it. RSS\n"
	       "                            stays within about this much above the idle size,\n"
	       "                            plus messages being received (--max-message-bytes\n"
	       "                            per connection) and process output retention\n"
	       "  --ping-interval-ms N      WebSocket ping interval; a connection that sends\n"
	       "                            nothing in answer to 2 pings is closed (default:\n"
	       "                            30000)\n"
	       "  --handshake-timeout-ms N  close connections that have not completed the\n"
	       "                            WebSocket upgrade N ms after accept; 0: never\n"
	       "                            (default: 10000)\n"
	       "  --executor-version STR    executorVersion reported to clients (default: 0.169.0,\n"
	       "                            the protocol revision uexec implements)\n"
	       "  --no-sandbox              refuse every process or filesystem request whose\n"
	       "                            sandbox asks for restrictions (fail closed), e.g.\n"
	       "                            where the operator does not want mount namespaces\n"
	       "  --sandbox-max-ptys N      PTYs a sandboxed process tree may hold at once (its\n"
	       "                            private devpts's max=; default: 64)\n"
	       "  --sandbox-uid UID         root uexec: sandboxed processes run as uid 0 of a user\n"
	       "                            namespace that is UID on the host (its gid: UID's\n"
	       "                            passwd group, else UID); writable roots are idmapped\n"
	       "                            to their owners (docs/SECURITY.md)\n"
	       "  --log-level LEVEL         debug, info, warning or error (default: info)\n"
	       "\n"
	       "Remote mode (instead of --listen): register with an environment registry and\n"
	       "serve harnesses through its rendezvous relay, each stream encrypted end to end\n"
	       "(Noise_hybridIK_25519+MLKEM768_AESGCM_SHA256); nothing listens locally.\n"
	       "  --remote URL              the registry's base URL (http:// only to loopback)\n"
	       "  --environment-id ID       the environment to serve (required with --remote)\n"
	       "  --name NAME               a name for this executor (default: codex-exec-server)\n"
	       "  --use-agent-identity-auth the registry credential is CODEX_ACCESS_TOKEN\n"
	       "  forward --connect WS_URL  bridge every stream to the exec-server listening at\n"
	       "                            WS_URL (ws:// or wss://) instead of serving it here\n"
	       "The registry credential comes from CODEX_API_KEY (or the older\n"
	       "CODEX_EXEC_SERVER_REMOTE_BEARER_TOKEN); uexec removes it from its environment\n"
	       "at start, so that no process it starts can read it.\n"
	       "  -h, --help                show this help and exit\n"
	       "  --version                 show the version and exit\n"
	       "\n"
	       "Derived defaults (logged at start-up). The soft RLIMIT_NOFILE is raised to\n"
	       "the hard limit H; F is the number of fds open once set up (ring, listener,\n"
	       "signalfd, ...):\n"
	       "  --max-connections  H - F: a connection holds one fd, so every fd left can\n"
	       "                     hold one, as on the reference (no limit, but a soft fd\n"
	       "                     limit of at most H and fds of its own)\n"
	       "  --max-sessions     2 x max-connections (detached sessions, waiting to be\n"
	       "                     resumed, hold no fd)\n"
	       "  --max-processes    (H - F - 64) / 2, at most RAM / 1 MiB: a process holds\n"
	       "                     2 fds (stdout and stderr pipes; 3 with pipeStdin, 1 with\n"
	       "                     a PTY; 1 more without IORING_OP_WAITID, kernel < 6.7,\n"
	       "                     where the divisor is 3), 64 fds stay for spawning and\n"
	       "                     filesystem requests, and a process retains up to 1 MiB\n"
	       "                     of output\n"
	       "\n"
	       "Requirements: Linux with io_uring (5.19 or newer for provided-buffer rings).\n"
	       "Sandboxed requests need uexec to run as root (mount and PID namespaces, the\n"
	       "listener guard's cgroup) and seccomp; elsewhere they are refused and the\n"
	       "reason is logged at start-up. Sandboxed commands get their own PID namespace\n"
	       "when uexec-init is found next to the uexec binary or in " UEXEC_LIBEXECDIR ";\n"
	       "below Landlock ABI 6 (Linux 6.12) it is required. Without Landlock (ABI 0)\n"
	       "policies that restrict reads are refused; start-up logs what enforces what.\n"
	       "\n"
	       "Environment: HOME (userHomeDir, the Codex config layers), CODEX_HOME\n"
	       "(environmentConfig/read; default $HOME/.codex), TMPDIR (tempDir and the\n"
	       "writable roots of workspace-write sandboxes), PATH (program lookup when a\n"
	       "request's environment has none). Processes inherit the server's environment\n"
	       "as their request's envPolicy says; give the server a clean one.\n"
	       "\n"
	       "Exit status: 0 after SIGINT or SIGTERM, or at the end of stdio input; 1 when\n"
	       "start-up fails (listen address, io_uring, provided buffers) or the ring fails;\n"
	       "2 for a usage error.\n");
}

static int parse_u64(const char *name, const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || !*s || s[0] == '-' || v < min || v > max) {
		fprintf(stderr, "uexec: invalid value '%s' for --%s (expected %" PRIu64 "..%" PRIu64
				")\n", s, name, min, max);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

/* A numeric option: its bounds and where it goes in struct config (a u64 or an unsigned). */
struct num_opt {
	const char *name;
	uint64_t min, max;
	uint64_t *u64;
	unsigned *uint;
};

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

static int set_log_level(const char *level)
{
	static const struct {
		const char *name;
		int level;
	} levels[] = {
		{ "debug", LOG_DEBUG }, { "info", LOG_INFO }, { "warning", LOG_WARNING }, { "error", LOG_ERR },
	};

	for (size_t i = 0; i < ELEMENTSOF(levels); i++)
		if (strcmp(level, levels[i].name) == 0) {
			log_set_max_level(levels[i].level);
			return 0;
		}
	fprintf(stderr, "uexec: unknown --log-level '%s'\n", level);
	return -EINVAL;
}

/* `forward --connect WS_URL` (RELAY.md §8). Returns -1 to go on, else the exit status. */
static int parse_forward(int argc, char **argv, struct config *cfg)
{
	static const struct option opts[] = {
		{ "connect", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) >= 0) {
		if (c == 'c') {
			cfg->forward_connect = optarg;
		} else if (c == 'h') {
			printf("Usage: uexec --remote URL --environment-id ID forward --connect WS_URL\n"
			       "\nBridges every authenticated relay stream to the exec-server at WS_URL.\n");
			return 0;
		} else {
			fprintf(stderr, "Try 'uexec forward --help'.\n");
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "uexec: unexpected argument '%s'\nTry 'uexec --help'.\n", argv[optind]);
		return 2;
	}
	if (!cfg->forward_connect) {
		fprintf(stderr, "uexec: forward needs --connect WS_URL\n");
		return 2;
	}
	if (strncasecmp(cfg->forward_connect, "ws://", 5) != 0 &&
	    strncasecmp(cfg->forward_connect, "wss://", 6) != 0) {
		fprintf(stderr, "uexec: forward --connect must be a ws:// or wss:// URL\n");
		return 2;
	}
	return -1;
}

/* Every variable a registry credential may come from. */
static const char *const credential_vars[] = {
	"CODEX_API_KEY",
	"CODEX_EXEC_SERVER_REMOTE_BEARER_TOKEN",
	"CODEX_ACCESS_TOKEN",
};

/*
 * Takes the credential out of the environment: copied, the variable's bytes
 * overwritten (they also show in /proc/PID/environ) and unset, so that no
 * process uexec starts inherits it.
 */
static const char *take_credential(const char *name)
{
	char *v = getenv(name), *copy;

	if (!v || !*v)
		return NULL;
	copy = strdup(v);
	if (!copy)
		return NULL;
	explicit_bzero(v, strlen(v));
	unsetenv(name);
	return copy;
}

/* The remote mode's rules and credential. Returns -1 to go on, else the exit status. */
static int check_remote_args(struct config *cfg, bool listen_given, bool agent_auth)
{
	if (!cfg->remote_url) {
		if (cfg->environment_id || cfg->forward_connect || cfg->remote_name || agent_auth) {
			fprintf(stderr, "uexec: --environment-id, --name, --use-agent-identity-auth and "
					"forward need --remote URL\n");
			return 2;
		}
		return -1;
	}
	if (listen_given) {
		fprintf(stderr, "uexec: the argument '--remote <URL>' cannot be used with "
				"'--listen <URL>'\n");
		return 2;
	}
	if (!cfg->environment_id) {
		fprintf(stderr, "uexec: --remote needs --environment-id ID\n");
		return 2;
	}
	if (agent_auth) {
		cfg->remote_credential_source = "CODEX_ACCESS_TOKEN";
		cfg->remote_credential = take_credential("CODEX_ACCESS_TOKEN");
	} else {
		cfg->remote_credential_source = "CODEX_API_KEY";
		cfg->remote_credential = take_credential("CODEX_API_KEY");
		if (!cfg->remote_credential) {
			cfg->remote_credential_source = "CODEX_EXEC_SERVER_REMOTE_BEARER_TOKEN";
			cfg->remote_credential =
				take_credential("CODEX_EXEC_SERVER_REMOTE_BEARER_TOKEN");
		}
	}
	/* Whichever was not used must not reach children either. */
	for (size_t i = 0; i < ELEMENTSOF(credential_vars); i++)
		free((char *)take_credential(credential_vars[i]));
	if (!cfg->remote_credential && agent_auth) {
		fprintf(stderr, "Error: CODEX_ACCESS_TOKEN is required when "
				"--use-agent-identity-auth is set\n");
		return 1;
	}
	if (!cfg->remote_credential) {
		fprintf(stderr, "Error: remote exec-server registration requires API key "
				"authentication; set CODEX_API_KEY (or "
				"CODEX_EXEC_SERVER_REMOTE_BEARER_TOKEN)\n");
		return 1;
	}
	/* It goes into an HTTP header: no control characters (header injection). */
	for (const char *p = cfg->remote_credential; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			fprintf(stderr, "Error: %s holds a control character\n",
				cfg->remote_credential_source);
			return 1;
		}
	return -1;
}

/* Fills cfg from the command line. Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct config *cfg)
{
	enum {
		ARG_NUM = 0x100, /* + index into nums[] */
		ARG_LISTEN = 0x200, ARG_EXEC_VERSION, ARG_LOG_LEVEL, ARG_VERSION, ARG_NO_SANDBOX,
		ARG_FS_HELPER, ARG_REMOTE, ARG_ENV_ID, ARG_NAME, ARG_AGENT_AUTH, ARG_SANDBOX_UID,
	};
	const struct num_opt nums[] = {
		{ "resume-window-ms", 0, UINT32_MAX, &cfg->resume_window_ms, NULL },
		{ "max-sessions", 1, 1u << 20, NULL, &cfg->max_sessions },
		{ "max-connections", 1, 1u << 20, NULL, &cfg->max_connections },
		{ "max-processes", 1, 1u << 20, NULL, &cfg->max_processes },
		{ "max-frame-bytes", 1024, 1ull << 32, &cfg->max_frame_bytes, NULL },
		{ "max-message-bytes", 1024, 1ull << 32, &cfg->max_message_bytes, NULL },
		{ "max-json-depth", 8, 4096, NULL, &cfg->max_json_depth },
		{ "max-queued-bytes", 65536, 1ull << 34, &cfg->max_queued_bytes, NULL },
		{ "max-inflight-bytes-per-conn", 1u << 20, 1ull << 40, &cfg->max_inflight_bytes_per_conn,
		  NULL },
		{ "max-inflight-bytes", 1u << 20, 1ull << 44, &cfg->max_inflight_bytes, NULL },
		{ "ping-interval-ms", 10, UINT32_MAX, &cfg->ping_interval_ms, NULL },
		{ "handshake-timeout-ms", 0, UINT32_MAX, &cfg->handshake_timeout_ms, NULL },
		/* devpts's own bounds; max=0 would mean no limit to the kernel. */
		{ "sandbox-max-ptys", 1, 1u << 20, NULL, &cfg->sandbox_max_ptys },
		/* Testing only, not in --help: run the sandbox as on an older kernel. */
		{ "landlock-abi-max", 0, 7, NULL, &cfg->landlock_abi_max },
	};
	struct option opts[ELEMENTSOF(nums) + 13] = {
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
	};
	bool listen_given = false, agent_auth = false;
	uint64_t v;
	int c, r;

	for (size_t i = 0; i < ELEMENTSOF(nums); i++)
		opts[12 + i] = (struct option){ nums[i].name, required_argument, NULL, ARG_NUM + (int)i };
	/* "+": stop at the first operand, the forward subcommand. */
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) >= 0) {
		r = 0;
		if (c >= ARG_NUM && c < ARG_NUM + (int)ELEMENTSOF(nums)) {
			const struct num_opt *n = &nums[c - ARG_NUM];

			r = parse_u64(n->name, optarg, n->min, n->max, &v);
			if (r >= 0 && n->u64)
				*n->u64 = v;
			else if (r >= 0)
				*n->uint = (unsigned)v;
		} else if (c == 'h') {
			help();
			return 0;
		} else if (c == ARG_VERSION) {
			printf("uexec %s\n", UEXEC_VERSION);
			return 0;
		} else if (c == ARG_LISTEN) {
			cfg->listen = optarg;
			listen_given = true;
		} else if (c == ARG_REMOTE) {
			cfg->remote_url = optarg;
		} else if (c == ARG_ENV_ID) {
			cfg->environment_id = optarg;
		} else if (c == ARG_NAME) {
			cfg->remote_name = optarg;
		} else if (c == ARG_AGENT_AUTH) {
			agent_auth = true;
		} else if (c == ARG_EXEC_VERSION) {
			cfg->executor_version = optarg;
		} else if (c == ARG_LOG_LEVEL) {
			r = set_log_level(optarg);
		} else if (c == ARG_SANDBOX_UID) {
			r = parse_sandbox_uid(optarg, cfg);
		} else if (c == ARG_NO_SANDBOX) {
			cfg->no_sandbox = true;
		} else if (c == ARG_FS_HELPER) {
			/* uexec's own sandboxed fs helper: one request over stdio, inside a sandbox. */
			cfg->fs_helper = true;
			cfg->listen = "stdio";
			log_set_max_level(LOG_WARNING);
		} else {
			fprintf(stderr, "Try 'uexec --help'.\n");
			return 2;
		}
		if (r < 0)
			return 2;
	}
	if (optind < argc && strcmp(argv[optind], "forward") == 0) {
		r = parse_forward(argc - optind, argv + optind, cfg);
		if (r >= 0)
			return r;
	} else if (optind < argc) {
		fprintf(stderr, "uexec: unexpected argument '%s'\nTry 'uexec --help'.\n", argv[optind]);
		return 2;
	}
	r = check_remote_args(cfg, listen_given, agent_auth);
	if (r >= 0)
		return r;
	if (cfg->max_inflight_bytes_per_conn > cfg->max_inflight_bytes)
		cfg->max_inflight_bytes_per_conn = cfg->max_inflight_bytes;
	if (cfg->max_frame_bytes > cfg->max_message_bytes)
		cfg->max_frame_bytes = cfg->max_message_bytes;
	return -1;
}

int main(int argc, char **argv)
{
	struct config cfg = CONFIG_DEFAULTS;
	static struct server srv;
	int r;

	/* 0: derived from the fd budget at start-up (server_init) unless given. */
	cfg.max_sessions = cfg.max_connections = cfg.max_processes = 0;
	r = parse_args(argc, argv, &cfg);
	if (r >= 0)
		return r;
	r = server_init(&srv, &cfg);
	if (r >= 0)
		r = server_run(&srv);
	server_done(&srv);
	return r < 0 ? 1 : r;
}
