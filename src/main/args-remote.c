/* SPDX-License-Identifier: MIT */
/*
 * The command line's remote mode group (RELAY.md §8-§9): the `forward`
 * subcommand, the rules across --remote's options, and the registry
 * credential taken out of the environment.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "args-remote.h"
#include "macro.h"
#include "server.h"

int server_args_forward(int argc, char **argv, struct config *cfg)
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

int server_args_check_remote(struct config *cfg, bool listen_given, bool agent_auth)
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
