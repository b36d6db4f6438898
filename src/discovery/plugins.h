/* SPDX-License-Identifier: MIT */
/* The installed plugins of the plugin cache (plugins.c); worker thread only. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define DISC_MAX_PLUGINS 512

struct plugin_loc {
	char *id;        /* "<plugin>@<marketplace>" */
	char *name;      /* the plugin's directory name */
	char *root;      /* <cache>/<marketplace>/<plugin>/<version> */
	char *version;
	char *remote_id; /* or NULL */
};

/*
 * The active version of every plugin under codex_home/plugins/cache, sorted
 * by id. *problem is set when something could not be resolved (invalid
 * remote metadata, a limit reached). Returns 0 or -ENOMEM.
 */
int disc_plugin_locations(const char *codex_home, struct plugin_loc **ret, size_t *ret_n, bool *problem);
void disc_plugin_locations_free(struct plugin_loc *p, size_t n);
