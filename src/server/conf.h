/* SPDX-License-Identifier: MIT */
/*
 * The configuration file (--config FILE): TOML whose top-level keys are the
 * long option names. It is turned into command-line arguments that go before
 * the real ones, so that the command line overrides the file and both go
 * through the same option parser and checks (main.c).
 *
 * conf-toml.cc parses (toml++, C++ like src/env/toml-filter.cc; no exception
 * crosses the C interface), conf.c reads the file and checks keys and types.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

enum server_conf_type {
	SERVER_CONF_STRING,
	SERVER_CONF_INTEGER,
	SERVER_CONF_BOOLEAN,
	SERVER_CONF_FLOAT,
	SERVER_CONF_OTHER, /* date/time, array, table, a non-finite float: no option takes one */
};

/* A set of types (struct server_conf_key's types). */
#define SERVER_CONF_TYPE(t) (1u << (t))

/* One top-level key of the document. */
struct server_conf_entry {
	char *key;
	enum server_conf_type type;
	const char *type_name; /* the value's TOML type ("a string", "a table", ...) */
	char *value;           /* the value as an argument: the string, decimal (a float in fixed
				* notation, shortest that reads back), "true"/"false" */
};

#ifdef __cplusplus
extern "C" {
#endif
/*
 * Parses the TOML document text[0..size). Returns 0 with the top-level keys in
 * document order in *ret[0..*ret_n), -EINVAL with a malloc'd message in
 * *ret_err ("line L, column C: ...", or why the TOML module that holds the
 * parser could not be loaded: src/toml/toml-load.c), or -ENOMEM. Each call is
 * followed by one server_conf_entries_free() (with what it returned, or NULL, 0).
 */
int server_conf_parse(const char *text, size_t size, struct server_conf_entry **ret, size_t *ret_n,
		      char **ret_err);
void server_conf_entries_free(struct server_conf_entry *e, size_t n);
#ifdef __cplusplus
}
#endif

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
