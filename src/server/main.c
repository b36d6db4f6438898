/* SPDX-License-Identifier: MIT */
/*
 * uexec: an io_uring-native exec-server speaking the Codex exec-server
 * protocol. Command line parsing and start-up.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "server.h"

static void help(void)
{
	printf("Usage: uexec [OPTIONS]\n"
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
	       "  --max-sessions N          sessions alive at once (default: 256)\n"
	       "  --max-connections N       client connections at once (default: 1024)\n"
	       "  --max-processes N         running processes per session (default: 1024)\n"
	       "  --max-frame-bytes N       largest WebSocket frame accepted (default: 16777216)\n"
	       "  --max-message-bytes N     largest message accepted (default: 67108864)\n"
	       "  --max-json-depth N        deepest JSON nesting accepted (default: 128)\n"
	       "  --max-queued-bytes N      output queued per connection before process output\n"
	       "                            and request reading pause (default: 8388608)\n"
	       "  --ping-interval-ms N      WebSocket ping interval (default: 30000)\n"
	       "  --executor-version STR    executorVersion reported to clients (default: 0.169.0,\n"
	       "                            the protocol revision uexec implements)\n"
	       "  --no-sandbox              refuse every process or filesystem request whose\n"
	       "                            sandbox asks for restrictions (fail closed), e.g.\n"
	       "                            where the operator does not want mount namespaces\n"
	       "  --log-level LEVEL         debug, info, warning or error (default: info)\n"
	       "  -h, --help                show this help and exit\n"
	       "  --version                 show the version and exit\n");
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

int main(int argc, char **argv)
{
	enum {
		ARG_LISTEN = 0x100, ARG_RESUME, ARG_MAX_SESSIONS, ARG_MAX_CONNS, ARG_MAX_PROCS,
		ARG_MAX_FRAME, ARG_MAX_MSG, ARG_MAX_DEPTH, ARG_MAX_QUEUED, ARG_PING, ARG_EXEC_VERSION,
		ARG_LOG_LEVEL, ARG_VERSION, ARG_NO_SANDBOX, ARG_FS_HELPER,
	};
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, ARG_LISTEN },
		{ "resume-window-ms", required_argument, NULL, ARG_RESUME },
		{ "max-sessions", required_argument, NULL, ARG_MAX_SESSIONS },
		{ "max-connections", required_argument, NULL, ARG_MAX_CONNS },
		{ "max-processes", required_argument, NULL, ARG_MAX_PROCS },
		{ "max-frame-bytes", required_argument, NULL, ARG_MAX_FRAME },
		{ "max-message-bytes", required_argument, NULL, ARG_MAX_MSG },
		{ "max-json-depth", required_argument, NULL, ARG_MAX_DEPTH },
		{ "max-queued-bytes", required_argument, NULL, ARG_MAX_QUEUED },
		{ "ping-interval-ms", required_argument, NULL, ARG_PING },
		{ "executor-version", required_argument, NULL, ARG_EXEC_VERSION },
		{ "log-level", required_argument, NULL, ARG_LOG_LEVEL },
		{ "no-sandbox", no_argument, NULL, ARG_NO_SANDBOX },
		{ "fs-helper", no_argument, NULL, ARG_FS_HELPER }, /* internal, not in --help */
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, ARG_VERSION },
		{}
	};
	struct config cfg = CONFIG_DEFAULTS;
	static struct server srv;
	uint64_t v;
	int c, r;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
		r = 0;
		switch (c) {
		case 'h':
			help();
			return 0;
		case ARG_VERSION:
			printf("uexec %s\n", UEXEC_VERSION);
			return 0;
		case ARG_LISTEN:
			cfg.listen = optarg;
			break;
		case ARG_RESUME:
			r = parse_u64("resume-window-ms", optarg, 0, UINT32_MAX, &cfg.resume_window_ms);
			break;
		case ARG_MAX_SESSIONS:
			r = parse_u64("max-sessions", optarg, 1, 1u << 20, &v);
			cfg.max_sessions = (unsigned)v;
			break;
		case ARG_MAX_CONNS:
			r = parse_u64("max-connections", optarg, 1, 1u << 20, &v);
			cfg.max_connections = (unsigned)v;
			break;
		case ARG_MAX_PROCS:
			r = parse_u64("max-processes", optarg, 1, 1u << 20, &v);
			cfg.max_processes = (unsigned)v;
			break;
		case ARG_MAX_FRAME:
			r = parse_u64("max-frame-bytes", optarg, 1024, 1ull << 32, &cfg.max_frame_bytes);
			break;
		case ARG_MAX_MSG:
			r = parse_u64("max-message-bytes", optarg, 1024, 1ull << 32,
				      &cfg.max_message_bytes);
			break;
		case ARG_MAX_DEPTH:
			r = parse_u64("max-json-depth", optarg, 8, 4096, &v);
			cfg.max_json_depth = (unsigned)v;
			break;
		case ARG_MAX_QUEUED:
			r = parse_u64("max-queued-bytes", optarg, 65536, 1ull << 34,
				      &cfg.max_queued_bytes);
			break;
		case ARG_PING:
			r = parse_u64("ping-interval-ms", optarg, 10, UINT32_MAX, &cfg.ping_interval_ms);
			break;
		case ARG_NO_SANDBOX:
			cfg.no_sandbox = true;
			break;
		case ARG_FS_HELPER:
			/* uexec's own sandboxed fs helper: one request over stdio, inside a sandbox. */
			cfg.fs_helper = true;
			cfg.listen = "stdio";
			log_set_max_level(LOG_WARNING);
			break;
		case ARG_EXEC_VERSION:
			cfg.executor_version = optarg;
			break;
		case ARG_LOG_LEVEL:
			if (strcmp(optarg, "debug") == 0)
				log_set_max_level(LOG_DEBUG);
			else if (strcmp(optarg, "info") == 0)
				log_set_max_level(LOG_INFO);
			else if (strcmp(optarg, "warning") == 0)
				log_set_max_level(LOG_WARNING);
			else if (strcmp(optarg, "error") == 0)
				log_set_max_level(LOG_ERR);
			else {
				fprintf(stderr, "uexec: unknown --log-level '%s'\n", optarg);
				r = -EINVAL;
			}
			break;
		default:
			fprintf(stderr, "Try 'uexec --help'.\n");
			return 2;
		}
		if (r < 0)
			return 2;
	}
	if (optind < argc) {
		fprintf(stderr, "uexec: unexpected argument '%s'\nTry 'uexec --help'.\n", argv[optind]);
		return 2;
	}
	if (cfg.max_frame_bytes > cfg.max_message_bytes)
		cfg.max_frame_bytes = cfg.max_message_bytes;

	r = server_init(&srv, &cfg);
	if (r >= 0)
		r = server_run(&srv);
	server_done(&srv);
	return r < 0 ? 1 : r;
}
