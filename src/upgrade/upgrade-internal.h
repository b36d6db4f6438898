/* SPDX-License-Identifier: MIT */
/* What the files of src/upgrade share (not for other modules). */
#pragma once

#include "config.h"

#define UPGRADE_UEXEC_VERSION UEXEC_VERSION

/* check.c: `uexec --check-upgrade VERSION`; the exit status. */
int upgrade_check_main(int argc, char **argv);
