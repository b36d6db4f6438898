/* SPDX-License-Identifier: MIT */
/*
 * The TOML module's loader (toml-load.c): toml_filter() (toml-filter.h) and
 * server_conf_parse() (conf-parse.h) load uexec-toml.so on first use.
 */
#pragma once

/*
 * Finds the module (next to the binary, else in its install directory) and
 * keeps an fd to it, which every later load goes through; the first call
 * decides, later ones return its result. Called at start (the --config parse
 * looks first when given). Logs a warning when the module is missing.
 * Returns 0 or -errno (-ENOENT when an earlier look failed).
 */
int toml_module_open(void);
