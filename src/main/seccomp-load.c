/* SPDX-License-Identifier: MIT */
/*
 * uexec's sandbox_seccomp_build() (sandbox/filter.h): the seccomp programs
 * are built once, by the start-up probe, in the module uexec-seccomp.so
 * (sandbox/filter-build.c on libseccomp), which is closed again once they
 * are built: libseccomp has nothing to do afterwards (spawns install the
 * stored programs), so it is not kept mapped for the server's life. Found
 * like uexec-init (next to the binary, else in the module directory) and
 * loaded through the fd opened here. A missing module leaves the server
 * without seccomp, which the probe reports (sandboxed requests refused).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "filter.h"
#include "log.h"
#include "own-files.h"

int sandbox_seccomp_build(struct sandbox_seccomp *s)
{
	const struct sandbox_seccomp_module *m;
	char path[PATH_MAX], fdpath[64];
	void *h;
	int fd, r;

	memset(s, 0, sizeof(*s));
	fd = server_own_file_open(SANDBOX_SECCOMP_MODULE_FILE, UEXEC_MODULEDIR, O_RDONLY | O_CLOEXEC,
				  path, sizeof(path));
	if (fd < 0) {
		log_error("Cannot build the sandbox's seccomp filters: " SANDBOX_SECCOMP_MODULE_FILE
			  " is neither next to the uexec binary nor in " UEXEC_MODULEDIR " (%s: %s)",
			  path, strerror(-fd));
		return -ELIBACC;
	}
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	h = dlopen(fdpath, RTLD_NOW | RTLD_LOCAL);
	close(fd);
	if (!h) {
		log_error("Cannot build the sandbox's seccomp filters: %s: %s", path, dlerror());
		return -ELIBACC;
	}
	m = dlsym(h, SANDBOX_SECCOMP_MODULE_SYMBOL);
	if (!m || m->abi != SANDBOX_SECCOMP_MODULE_ABI) {
		log_error("Cannot build the sandbox's seccomp filters: %s: %s", path,
			  m ? "built for another uexec (ABI mismatch)"
			    : "no " SANDBOX_SECCOMP_MODULE_SYMBOL);
		dlclose(h);
		return -ELIBACC;
	}
	r = m->build(s); /* the programs are malloc'd copies: they outlive the module */
	dlclose(h);
	return r;
}
