/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cgroup-dir.h"

int tests_own_cgroup_dir(char *out, size_t outsz)
{
	char line[4096], root[1024] = "", mnt[1024] = "", rel[4096] = "";
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");

		if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0)
			continue;
		/* id parent major:minor root mountpoint ... (no escapes expected here) */
		if (sscanf(line, "%*s %*s %*s %1023s %1023s", root, mnt) == 2)
			break;
		root[0] = mnt[0] = '\0';
	}
	fclose(f);
	if (!mnt[0])
		return -ENOENT;
	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "0::", 3) == 0) {
			snprintf(rel, sizeof(rel), "%s", line + 3);
			rel[strcspn(rel, "\n")] = '\0';
		}
	fclose(f);
	if (!rel[0] || strncmp(rel, root, strlen(root)) != 0)
		return -ENOENT;
	snprintf(out, outsz, "%s/%s", mnt, rel + (strcmp(root, "/") == 0 ? 0 : strlen(root)));
	return 0;
}
