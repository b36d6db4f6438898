/* SPDX-License-Identifier: MIT */
/*
 * uexec's side of the TOML module (toml-module.h): toml_filter(),
 * server_conf_parse() and server_conf_entries_free() as their callers know
 * them, each loading uexec-toml.so on first use.
 *
 * Where it is found: next to the binary, else in the module directory
 * (server_own_file_open(), as for uexec-init), once, at start (the --config
 * parse or toml_module_open()). The file is then loaded through the fd opened
 * there (/proc/self/fd/N), as uexec-init is executed through its fd: a
 * sandbox that can write the binary's directory cannot plant a module of its
 * own for the server to load later, and a package upgrade while the server
 * runs cannot hand it a module of another build. When it cannot be loaded,
 * the error names the path and the reason: --config fails at start ("config
 * file F: cannot load the TOML module: ..."), and environmentConfig/read
 * answers -32603 like an unreadable layer.
 *
 * How long it stays: environmentConfig/read keeps it for the server's life
 * (a client asks again each session; one load is a few milliseconds of file
 * I/O and relocation on the event loop, paid once). The --config file is read
 * at start and at each SIGHUP: that use unloads it again once its entries are
 * freed, unless environmentConfig/read has loaded it meanwhile, so that a
 * server started with --config idles without it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "errmsg.h"
#include "log.h"
#include "macro.h"
#include "own-files.h"
#include "toml-load.h"
#include "toml-module.h"

static int module_fd = -1;
static char module_path[PATH_MAX];
static char *open_error; /* why the open at start failed (NULL: not tried yet, or found) */
static bool opened;
static void *handle;
static const struct toml_module *mod;
static unsigned conf_users; /* server_conf_parse() results not yet freed */
static bool kept;           /* loaded by environmentConfig/read: never unloaded */

/* The first call looks; later ones return its result. */
static int module_find(void)
{
	int fd;

	if (opened)
		return module_fd >= 0 ? 0 : -ENOENT;
	opened = true;
	fd = server_own_file_open(TOML_MODULE_FILE, UEXEC_MODULEDIR, O_RDONLY | O_CLOEXEC,
				  module_path, sizeof(module_path));
	if (fd >= 0) {
		module_fd = fd;
		return 0;
	}
	if (asprintf(&open_error,
		     "cannot load the TOML module: " TOML_MODULE_FILE
		     " is neither next to the uexec binary nor in " UEXEC_MODULEDIR " (%s: %s)",
		     module_path, strerror(-fd)) < 0)
		open_error = NULL;
	return fd;
}

int toml_module_open(void)
{
	int r = module_find();

	if (r < 0)
		log_warning("Cannot open %s (%s): environmentConfig/read of an existing config "
			    "file will fail", module_path, strerror(-r));
	return r;
}

/* Returns 0, -ENOMEM, or -ELIBACC with a malloc'd message in *ret_msg. */
static int module_load(char **ret_msg)
{
	const struct toml_module *m;
	char fdpath[64];

	if (mod)
		return 0;
	if (module_find() < 0)
		return errmsg_set(ret_msg, -ELIBACC, "%s",
				  open_error ? open_error : "cannot load the TOML module");
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", module_fd);
	handle = dlopen(fdpath, RTLD_NOW | RTLD_LOCAL);
	if (!handle)
		return errmsg_set(ret_msg, -ELIBACC, "cannot load the TOML module %s: %s",
				  module_path, dlerror());
	m = dlsym(handle, TOML_MODULE_SYMBOL);
	if (!m || m->abi != TOML_MODULE_ABI) {
		dlclose(handle);
		handle = NULL;
		return errmsg_set(ret_msg, -ELIBACC, "cannot load the TOML module %s: %s", module_path,
			    m ? "built for another uexec (ABI mismatch)" : "no " TOML_MODULE_SYMBOL);
	}
	mod = m;
	return 0;
}

static void module_unload_unused(void)
{
	if (!handle || kept || conf_users > 0)
		return;
	mod = NULL;
	dlclose(handle);
	handle = NULL;
}

int toml_filter(const char *text, size_t size, const struct toml_key_path *paths, size_t n_paths,
		char **ret_toml, struct toml_filter_error *ret_err)
{
	int r = module_load(&ret_err->message);

	if (r < 0)
		return r;
	kept = true;
	return mod->filter(text, size, paths, n_paths, ret_toml, ret_err);
}

int server_conf_parse(const char *text, size_t size, struct server_conf_entry **ret, size_t *ret_n,
		      char **ret_err)
{
	int r = module_load(ret_err);

	if (r < 0)
		return r == -ELIBACC ? -EINVAL : r;
	conf_users++;
	return mod->conf_parse(text, size, ret, ret_n, ret_err);
}

void server_conf_entries_free(struct server_conf_entry *e, size_t n)
{
	if (conf_users == 0)
		return; /* the parse failed to load the module: nothing to free */
	mod->conf_entries_free(e, n);
	conf_users--;
	module_unload_unused();
}
