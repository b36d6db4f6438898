/* SPDX-License-Identifier: MIT */
/*
 * The --config file's TOML parser (src/main/conf.h turns its entries into
 * arguments): conf-toml.cc in the TOML module (toml++, no exception crosses
 * the C interface), reached through toml-load.c's wrappers of the same names.
 */
#pragma once

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
