/* SPDX-License-Identifier: MIT */
/*
 * musl's strerror wording, the text the reference puts in its errors
 * (see os-error.h). Only errnos whose wording matters on the wire are listed;
 * the rest fall back to the local strerror().
 */
#include <errno.h>
#include <string.h>

#include "macro.h"
#include "os-error.h"

static const struct {
	int e;
	const char *text;
} table[] = {
	{ EPERM, "Operation not permitted" },
	{ ENOENT, "No such file or directory" },
	{ ESRCH, "No such process" },
	{ EINTR, "Interrupted system call" },
	{ EIO, "I/O error" },
	{ ENXIO, "No such device or address" },
	{ E2BIG, "Argument list too long" },
	{ ENOEXEC, "Exec format error" },
	{ EBADF, "Bad file descriptor" },
	{ ECHILD, "No child process" },
	{ EAGAIN, "Resource temporarily unavailable" },
	{ ENOMEM, "Out of memory" },
	{ EACCES, "Permission denied" },
	{ EFAULT, "Bad address" },
	{ ENOTBLK, "Block device required" },
	{ EBUSY, "Resource busy" },
	{ EEXIST, "File exists" },
	{ EXDEV, "Cross-device link" },
	{ ENODEV, "No such device" },
	{ ENOTDIR, "Not a directory" },
	{ EISDIR, "Is a directory" },
	{ EINVAL, "Invalid argument" },
	{ ENFILE, "Too many open files in system" },
	{ EMFILE, "No file descriptors available" },
	{ ENOTTY, "Not a tty" },
	{ ETXTBSY, "Text file busy" },
	{ EFBIG, "File too large" },
	{ ENOSPC, "No space left on device" },
	{ ESPIPE, "Invalid seek" },
	{ EROFS, "Read-only file system" },
	{ EMLINK, "Too many links" },
	{ EPIPE, "Broken pipe" },
	{ ERANGE, "Result not representable" },
	{ EDEADLK, "Resource deadlock would occur" },
	{ ENAMETOOLONG, "Filename too long" },
	{ ENOLCK, "No locks available" },
	{ ENOSYS, "Function not implemented" },
	{ ENOTEMPTY, "Directory not empty" },
	{ ELOOP, "Symbolic link loop" },
	{ ENODATA, "No data available" },
	{ EOVERFLOW, "Value too large for data type" },
	{ EILSEQ, "Illegal byte sequence" },
	{ ENOTSOCK, "Not a socket" },
	{ EOPNOTSUPP, "Not supported" },
	{ EADDRINUSE, "Address in use" },
	{ EADDRNOTAVAIL, "Address not available" },
	{ ENETUNREACH, "Network unreachable" },
	{ ECONNABORTED, "Connection aborted" },
	{ ECONNRESET, "Connection reset by peer" },
	{ ENOBUFS, "No buffer space available" },
	{ ENOTCONN, "Socket not connected" },
	{ ETIMEDOUT, "Operation timed out" },
	{ ECONNREFUSED, "Connection refused" },
	{ EHOSTUNREACH, "Host is unreachable" },
	{ ESTALE, "Stale file handle" },
	{ EDQUOT, "Quota exceeded" },
	{ ECANCELED, "Operation canceled" },
};

const char *os_error_text(int e)
{
	for (size_t i = 0; i < ELEMENTSOF(table); i++)
		if (table[i].e == e)
			return table[i].text;
	return strerror(e);
}
