/* SPDX-License-Identifier: MIT */
/* uexec's own files: next to the binary, else where installed (own-files.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "own-files.h"

int server_own_file_open(const char *name, const char *installed_dir, int flags, char *path,
			 size_t size)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;
	int fd;

	if (n <= 0)
		return -errno;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = 0;
	if ((size_t)snprintf(path, size, "%s/%s", exe, name) >= size)
		return -ENAMETOOLONG;
	fd = open(path, flags);
	if (fd >= 0)
		return fd;
	if ((size_t)snprintf(path, size, "%s/%s", installed_dir, name) >= size)
		return -ENAMETOOLONG;
	fd = open(path, flags);
	return fd < 0 ? -errno : fd;
}
