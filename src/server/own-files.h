/* SPDX-License-Identifier: MIT */
/*
 * uexec's own files beside the executable: uexec-init (spawn.c) and the TOML
 * module (src/toml/). In a build tree they lie next to the binary; an
 * installed uexec finds them in the directory meson installs them to. The
 * build tree comes first so that a development binary never picks up an older
 * installed copy.
 */
#pragma once

#include <stddef.h>

/*
 * Opens name next to the running binary (/proc/self/exe's directory), else in
 * installed_dir, with open(2)'s flags. path[0..size) receives the last place
 * looked at (for the caller's error or warning). Returns the fd or -errno.
 */
int server_own_file_open(const char *name, const char *installed_dir, int flags, char *path,
			 size_t size);
