/* SPDX-License-Identifier: MIT */
/* uexec --help (help.c). */
#pragma once

/* Prints the help text on stdout. */
void server_help(void);
