/* SPDX-License-Identifier: MIT */
/* The TOML module's one exported symbol (toml-module.h). */
extern "C" {
#include "toml-module.h"
}

extern "C" __attribute__((visibility("default"))) const struct toml_module uexec_toml_module = {
	TOML_MODULE_ABI,
	toml_filter,
	server_conf_parse,
	server_conf_entries_free,
};
