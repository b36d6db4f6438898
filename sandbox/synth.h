/* SPDX-License-Identifier: MIT */
/*
 * Synthetic mount points: the empty directories made on the host for
 * missing paths a sandbox must see read-only or hidden inside a writable
 * root (synth.c says how they are shared across servers). Private to the
 * sandbox module.
 */
#pragma once

#include <stdbool.h>

/*
 * A reference to the synthetic directory at path, made (or shared: this
 * server's, another server's marked one) if needed. Returns 0, -EEXIST if a
 * directory of the user's is there (bind it as any existing path), -EBUSY
 * when other servers kept making and removing it, or -errno.
 */
int sandbox_synth_get(const char *path);
/* Drops a reference; the last one removes the directory unless another server uses it. */
void sandbox_synth_put(const char *path);
/*
 * 1 if path is a synthetic mount point (this server's, or a directory
 * another server marked as one), 0 if not, -ENOENT if it is gone. is_dir:
 * what an lstat just said of path (only directories can be marked).
 */
int sandbox_synth_known(const char *path, bool is_dir);
