/* SPDX-License-Identifier: MIT */
/*
 * `uexec --check-upgrade VERSION`: run by the old server on the new binary
 * before anything is handed over. Says on stdout, in one line, whether this
 * binary can read state format VERSION; exits 0 (it can take over), 1 (it
 * cannot) or 2 (usage). It touches nothing: no listener, no cgroup, no ring.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"
#include "upgrade-internal.h"

int upgrade_check_main(int argc, char **argv)
{
	const char *arg = argc == 3 ? argv[2] : NULL;
	unsigned long long v;
	char *end = NULL;

	errno = 0;
	v = arg && arg[0] >= '0' && arg[0] <= '9' ? strtoull(arg, &end, 10) : 0;
	if (!arg || errno || !end || *end || v > UINT32_MAX) {
		fprintf(stderr, "usage: uexec --check-upgrade VERSION (the state format version, "
				"a number)\n");
		return 2;
	}
	if (v < UPGRADE_STATE_VERSION_MIN || v > UPGRADE_STATE_VERSION) {
		printf("uexec %s cannot take over: state version %llu is not one it reads (%u-%u)\n",
		       UPGRADE_UEXEC_VERSION, v, UPGRADE_STATE_VERSION_MIN, UPGRADE_STATE_VERSION);
		return 1;
	}
	printf("uexec %s can take over state version %llu (it reads %u-%u)\n", UPGRADE_UEXEC_VERSION,
	       v, UPGRADE_STATE_VERSION_MIN, UPGRADE_STATE_VERSION);
	return 0;
}
