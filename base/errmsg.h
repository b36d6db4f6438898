/* SPDX-License-Identifier: MIT */
/*
 * The "return an error code and a malloc'd text saying why" idiom of the
 * loaders and codecs, written once.
 */
#pragma once

/*
 * *ret_msg = the formatted text (the caller frees it). Returns r, or -ENOMEM
 * with *ret_msg NULL when the text could not be allocated.
 */
int errmsg_set(char **ret_msg, int r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
