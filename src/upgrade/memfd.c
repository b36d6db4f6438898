/* SPDX-License-Identifier: MIT */
/*
 * The state blob written straight into a memfd (state.h): the mapping is
 * the writer's buffer, so SERIALIZE copies each byte of retained output once
 * and there is nothing to write afterwards; then sized exactly and sealed,
 * ready to cross execve. The bench (bench/upgrade-state-bench.c) measured the
 * heap-then-write() way at twice the cost.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "macro.h"
#include "state.h"

#define GROW_MIN (1u << 20)

static int map_size(struct upgrade_writer *w, size_t cap, bool populate)
{
	void *p;

	if (ftruncate(w->memfd, (off_t)cap) < 0)
		return -errno;
	if (w->b.data)
		p = mremap(w->b.data, w->b.cap, cap, MREMAP_MAYMOVE);
	else
		p = mmap(NULL, cap, PROT_READ | PROT_WRITE,
			 MAP_SHARED | (populate ? MAP_POPULATE : 0), w->memfd, 0);
	if (p == MAP_FAILED)
		return -errno;
	w->b.data = p;
	w->b.cap = cap;
	return 0;
}

static int grow(struct upgrade_writer *w, size_t extra)
{
	size_t cap = w->b.cap ? w->b.cap : GROW_MIN;

	if (extra > SIZE_MAX - w->b.len)
		return -E2BIG;
	while (cap < w->b.len + extra) {
		if (cap > SIZE_MAX / 2)
			return -E2BIG;
		cap *= 2;
	}
	return map_size(w, cap, false);
}

int upgrade_writer_init_memfd(struct upgrade_writer *w, uint32_t version, size_t size_hint)
{
	int fd = memfd_create("uexec-upgrade", MFD_CLOEXEC | MFD_ALLOW_SEALING), r;

	memset(w, 0, sizeof(*w));
	w->memfd = -1;
	if (fd < 0)
		return -errno;
	upgrade_writer_init_grow(w, version, grow, fd);
	/* init reserved the header through grow(); a hint maps the whole size at once instead. */
	if (size_hint > w->b.cap) {
		if (w->b.data)
			(void)munmap(w->b.data, w->b.cap);
		w->b.data = NULL;
		w->b.cap = 0;
		r = map_size(w, size_hint, true);
		if (r < 0) {
			upgrade_writer_done(w);
			return r;
		}
		w->error = 0;
	}
	return w->error;
}

int upgrade_writer_seal(struct upgrade_writer *w)
{
	int fd = w->memfd, r = 0;

	if (fd < 0 || w->error)
		return w->error ? w->error : -EBADF;
	(void)munmap(w->b.data, w->b.cap);
	w->b.data = NULL;
	w->b.cap = 0;
	if (ftruncate(fd, (off_t)w->b.len) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		r = -errno;
	w->memfd = -1;
	if (r < 0) {
		safe_close(fd);
		return r;
	}
	return fd;
}

void upgrade_writer_done(struct upgrade_writer *w)
{
	if (w->grow) {
		if (w->b.data)
			(void)munmap(w->b.data, w->b.cap);
		safe_close(w->memfd);
	} else {
		buf_done(&w->b);
	}
	memset(w, 0, sizeof(*w));
	w->memfd = -1;
}
