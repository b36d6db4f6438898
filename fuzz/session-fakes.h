/* SPDX-License-Identifier: MIT */
/* What the session fuzz target's fakes (session-fakes.c) recorded. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct fake_stats {
	bool buf_lent;          /* the provided buffer is with a reader */
	uint8_t random_counter; /* next byte getrandom() hands out */
	unsigned spawns;        /* process/start calls that reached spawn_process() */
	unsigned plans;         /* sandboxed process/start calls that reached sandbox_plan_new() */
};

extern struct fake_stats fake_stats;
