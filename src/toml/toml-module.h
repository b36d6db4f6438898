/* SPDX-License-Identifier: MIT */
/*
 * The TOML module: uexec's only C++ (src/env/toml-filter.cc for
 * environmentConfig/read, src/toml/conf-toml.cc for --config, both on
 * toml++) built as a loadable module, uexec-toml.so, that toml-load.c opens on
 * first use. An idle server thus maps neither libstdc++ nor libtomlplusplus
 * (nor libgcc_s): about 1.1 MB of resident set (bench/README.md).
 *
 * This header is the ABI between the two: the module exports one symbol,
 * TOML_MODULE_SYMBOL, a table of the C functions of toml-filter.h and conf-parse.h.
 * Everything else in the module is hidden (-fvisibility=hidden), so its own
 * toml_filter() and server_conf_parse() never interpose on the loader's
 * wrappers of the same names. A uexec and a module of different builds are
 * refused by the abi field rather than called through a mismatched table.
 */
#pragma once

#include "conf-parse.h"
#include "toml-filter.h"

#define TOML_MODULE_FILE "uexec-toml.so"
#define TOML_MODULE_SYMBOL "uexec_toml_module"
/* Bump when a signature or a struct of toml-filter.h or conf-parse.h changes. */
#define TOML_MODULE_ABI 1u

struct toml_module {
	unsigned abi; /* TOML_MODULE_ABI */
	int (*filter)(const char *text, size_t size, const struct toml_key_path *paths,
		      size_t n_paths, char **ret_toml, struct toml_filter_error *ret_err);
	int (*conf_parse)(const char *text, size_t size, struct server_conf_entry **ret,
			  size_t *ret_n, char **ret_err);
	void (*conf_entries_free)(struct server_conf_entry *e, size_t n);
};
