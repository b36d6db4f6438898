/* SPDX-License-Identifier: MIT */
/*
 * OS error texts as clients of the reference see them. The reference server is
 * a static musl build and formats errors as Rust's io::Error does:
 * "<musl strerror> (os error N)". glibc words many errnos differently
 * ("Too many levels of symbolic links" vs musl's "Symbolic link loop"), so the
 * wire texts come from this table, not from the local libc.
 */
#pragma once

/* musl's message for errno e (positive); falls back to strerror() for unknown values. */
const char *os_error_text(int e);
