/* SPDX-License-Identifier: MIT */
/*
 * The state blob's fds checked against the process's fd table after
 * execve (state.h): each one open and of the kind its field says. The
 * parser has already checked the numbers (in range, each named once).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "state.h"

static bool kind_matches(enum upgrade_fd_kind k, mode_t mode)
{
	mode_t t = mode & S_IFMT;

	switch (k) {
	case UPGRADE_FD_SOCKET:
		return t == S_IFSOCK;
	case UPGRADE_FD_FIFO:
		return t == S_IFIFO;
	case UPGRADE_FD_CHR:
		return t == S_IFCHR;
	case UPGRADE_FD_DIR:
		return t == S_IFDIR;
	case UPGRADE_FD_FILE:
		return t == S_IFREG;
	case UPGRADE_FD_STREAM:
		return t == S_IFSOCK || t == S_IFIFO || t == S_IFCHR;
	case UPGRADE_FD_ANON:
		/* An anonymous inode has no type bits; pidfs (Linux 6.9) makes pidfds regular. */
		return t == 0 || t == S_IFREG;
	case UPGRADE_FD_ANY:
		return true;
	}
	return false;
}

int upgrade_state_check_fds(const struct upgrade_state *st, int blob_fd, char *err, size_t err_size)
{
	for (uint32_t i = 0; i < st->n_recs; i++) {
		const struct upgrade_rec *r = &st->recs[i];

		for (uint32_t j = 0; j < r->n_fields; j++) {
			const struct upgrade_field *f = &st->fields[r->first + j];
			enum upgrade_fd_kind k;
			struct stat sb;
			int fd;

			if (f->type != UPGRADE_T_FD)
				continue;
			fd = (int)upgrade_rec_num(st, i, f->tag);
			k = upgrade_field_fd_kind(r->kind, f->tag);
			if (fd == blob_fd || fcntl(fd, F_GETFD) < 0 || fstat(fd, &sb) < 0) {
				snprintf(err, err_size, "record %u (%s): %s: fd %d is not open", i,
					 upgrade_kind_name(r->kind), upgrade_field_name(r->kind, f->tag), fd);
				return -EBADF;
			}
			if (!kind_matches(k, sb.st_mode)) {
				snprintf(err, err_size, "record %u (%s): %s: fd %d has mode %o, not the "
					 "kind expected", i, upgrade_kind_name(r->kind),
					 upgrade_field_name(r->kind, f->tag), fd, (unsigned)sb.st_mode);
				return -EBADF;
			}
		}
	}
	return 0;
}
