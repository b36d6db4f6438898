/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "errmsg.h"

int errmsg_set(char **ret_msg, int r, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(ret_msg, fmt, ap);
	va_end(ap);
	if (n < 0) {
		*ret_msg = NULL;
		return -ENOMEM;
	}
	return r;
}
