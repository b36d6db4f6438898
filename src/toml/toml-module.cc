/* SPDX-License-Identifier: MIT */
/* The TOML module's one exported symbol (toml-module.h). */
extern "C" {
#include "toml-module.h"
}

/* libstdc++ (linked in statically) frees its exception emergency pool here. */
namespace __gnu_cxx {
void __freeres() noexcept;
}

/*
 * The module carries its own libstdc++, whose start-up allocates the 71 KiB
 * emergency pool for exceptions thrown under memory pressure and keeps it
 * for the process's life. Unloaded after each --config parse (toml-load.c),
 * the module would leak one pool per load; it frees it on the way out.
 */
__attribute__((destructor)) static void module_fini(void)
{
	__gnu_cxx::__freeres();
}

extern "C" __attribute__((visibility("default"))) const struct toml_module uexec_toml_module = {
	TOML_MODULE_ABI,
	toml_filter,
	server_conf_parse,
	server_conf_entries_free,
};
