/* SPDX-License-Identifier: MIT */
/*
 * What fs/remove, fs/copy and fs/rename share (fs-rmcp.c): refusals of
 * their own, the directories that are never removed, moved or replaced,
 * the server's secret files, directory walks and ancestry checks. The jobs
 * themselves are fs-remove.c, fs-copy.c and fs-rename.c.
 */
#pragma once

#include <dirent.h>
#include <sys/stat.h>

#include "fs-tree.h"
#include "macro.h"

/*
 * A refusal of our own (-32600 unless said otherwise). Returns -ECANCELED so
 * that callers deep in a tree simply unwind; done() sees msg first.
 */
int fs_refuse(struct tree_job *j, const char *fmt, ...) _printf_(2, 3);
/* What the protection checks compare with: "/", the server's cwd and home, their ancestors. */
int fs_protect_all(struct tree_job *j);
/* method refuses to verb path (e.g. "fs/remove", "remove") when st is protected. */
int fs_check_protected_as(struct tree_job *j, const struct stat *st, const char *method,
			  const char *verb, const char *path);
/* -EACCES if st is one of the server's secret files (secrets.h), noted for done() to log. */
int fs_refuse_secret(struct tree_job *j, const struct stat *st);
/* fdopendir() that closes fd when it fails; *ret_err gets -errno then. */
DIR *fs_open_dir_fd(int fd, int *ret_err);
/* The next entry other than "." and "..": 1 and *ret, 0 at the end, or -errno. */
int fs_next_entry(DIR *d, struct dirent **ret);
/* 1 when dir (at-relative) or an ancestor of it (through "..") is src, 0 if none, or -errno. */
int fs_ancestor_is(int at, const char *dir, const struct stat *src);
