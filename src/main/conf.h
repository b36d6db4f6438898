/* SPDX-License-Identifier: MIT */
/*
 * The configuration file (--config FILE): TOML whose top-level keys are the
 * long option names. It is turned into command-line arguments that go before
 * the real ones, so that the command line overrides the file and both go
 * through the same option parser and checks (main.c).
 *
 * src/toml parses (conf-parse.h: conf-toml.cc in the TOML module, toml++),
 * conf.c reads the file and checks keys and types.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "conf-parse.h"

/*
 * A key the file may hold and the TOML types its option takes (a set of
 * SERVER_CONF_TYPE()). A boolean is the flag itself (true: given, false: not)
 * unless bool_args names the argument each value stands for ({false, true}).
 */
struct server_conf_key {
	const char *name;
	unsigned types;
	const char *bool_args[2];
};

/* The file as arguments: argv[0..argc), each malloc'd ("--key=value" or "--flag"). */
struct server_conf_args {
	int argc;
	char **argv;
};

/*
 * Reads the file at path and turns its keys into arguments for the options
 * keys[0..n_keys). A key not in the list, or a value of another type, is an
 * error naming the key (and the types) in err. Returns 0, -EINVAL (err set;
 * also for an unreadable or invalid file) or -ENOMEM.
 */
int server_conf_load(const char *path, const struct server_conf_key *keys, size_t n_keys,
		     struct server_conf_args *ret, char *err, size_t errsz);
void server_conf_args_done(struct server_conf_args *a);
