/* SPDX-License-Identifier: MIT */
/*
 * Shared pieces of the filesystem methods (PROTOCOL.md §6.11): path parameters,
 * the sandbox refusal, error replies, and the JSON forms of results.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>

struct conn;

/*
 * Converts a path parameter (a file: URI or a native absolute path) to a native
 * path. On failure replies with the reference's error (-32602 for URI syntax,
 * -32600 "'<uri>' is invalid on 'linux'" for a remote host) and returns < 0.
 * *ret_path is malloc'd.
 */
int fs_param_path(struct conn *c, json_t *id, json_t *v, char **ret_path);

/*
 * A `sandbox` object that asks for restrictions cannot be honoured until the
 * sandbox module lands: replies -32602 and returns true (fail closed).
 */
bool fs_refuse_sandbox(struct conn *c, json_t *id, json_t *sandbox);

/* "file://..." JSON string for a native path (NULL on OOM). */
json_t *fs_uri_json(const char *path);
