/* SPDX-License-Identifier: MIT */
/*
 * The denial tracer handed over across execve, a live upgrade (docs/UPGRADE.md,
 * "Denial evidence"; bpf-tracer-int.h): the running tracer's kernel objects and
 * attachments exported as fds, and a tracer made around them in the new binary
 * once every fd is checked to be what it claims. The tracer itself is
 * bpf-tracer.c (its state shared through bpf-tracer-state.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf-config.h"
#include "bpf-tracer-int.h"
#include "bpf-tracer.h"

#if !UEXEC_HAVE_BPF

void bpf_tracer_export(struct bpf_tracer *t, struct bpf_tracer_handover *ret)
{
}

struct bpf_tracer *bpf_tracer_adopt(const struct bpf_tracer_handover *h, char *err, size_t errsz)
{
	snprintf(err, errsz, "built without BPF (meson option bpf)");
	return NULL;
}

int bpf_tracer_watched_ids(struct bpf_tracer *t, uint64_t *ids, size_t max)
{
	return -EOPNOTSUPP;
}

#else /* UEXEC_HAVE_BPF */

#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "bpf-tracer-state.h"
#include "denial-event.h"

void bpf_tracer_export(struct bpf_tracer *t, struct bpf_tracer_handover *ret)
{
	ret->obj = t->obj;
	ret->links[0] = t->links[0];
	ret->links[1] = t->links[1];
	ret->perf_fd = t->perf_fd;
	ret->attached = t->attached;
}

static int obj_info(int fd, void *info, uint32_t len)
{
	union bpf_attr a = { 0 };

	a.info.bpf_fd = (__u32)fd;
	a.info.info_len = len;
	a.info.info = (__u64)(uintptr_t)info;
	return sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a) < 0 ? -errno : 0;
}

/* NULL when fd is a program of that type (its id in *ret_id), else why not. */
static const char *check_prog(int fd, uint32_t type, uint32_t *ret_id)
{
	struct bpf_prog_info info = { 0 };

	if (fd < 0 || obj_info(fd, &info, sizeof(info)) < 0)
		return "is not a BPF program";
	if (info.type != type)
		return "is a BPF program of another type";
	*ret_id = info.id;
	return NULL;
}

/* NULL when fd is a map of that type and sizes (value: at least value_min), else why not. */
static const char *check_map(int fd, uint32_t type, uint32_t key, uint32_t value_min,
			     uint32_t entries)
{
	struct bpf_map_info info = { 0 };

	if (fd < 0 || obj_info(fd, &info, sizeof(info)) < 0)
		return "is not a BPF map";
	if (info.type != type || info.key_size != key || info.value_size < value_min ||
	    info.max_entries != entries)
		return "is a BPF map of another type or size";
	return NULL;
}

/* NULL when fd is a BPF link of program prog_id, else why not. */
static const char *check_link(int fd, uint32_t prog_id)
{
	struct bpf_link_info info = { 0 };

	if (fd < 0 || obj_info(fd, &info, sizeof(info)) < 0)
		return "is not a BPF link";
	return info.prog_id == prog_id ? NULL : "is a link of another program";
}

/* Every fd is what its field says, and the attachments are those of h->obj.hook. */
static const char *check_handover(const struct bpf_tracer_handover *h, const char **ret_what)
{
	static const uint32_t exit_types[_BPF_HOOK_MAX] = {
		BPF_PROG_TYPE_TRACING, BPF_PROG_TYPE_RAW_TRACEPOINT, BPF_PROG_TYPE_TRACEPOINT
	};
	const struct bpf_tracer_loaded *l = &h->obj;
	uint32_t exit_id = 0, ll_id = 0;
	const char *why;
	__u64 perf_id;

	*ret_what = "the handover";
	if (l->hook < 0 || l->hook >= _BPF_HOOK_MAX || l->bss_size == 0 ||
	    l->bss_size > (1u << 20) || l->dropped_off % 8 || l->dropped_off + 8 > l->bss_size ||
	    (l->hook == BPF_HOOK_TP && l->tp_id <= 0))
		return "has values out of range";
	*ret_what = "the exit program";
	why = check_prog(l->exit_prog, exit_types[l->hook], &exit_id);
	if (!why && l->landlock_prog >= 0) {
		*ret_what = "Landlock's program";
		why = check_prog(l->landlock_prog, BPF_PROG_TYPE_TRACING, &ll_id);
	}
	if (!why) {
		*ret_what = "the ring";
		why = check_map(l->ring_fd, BPF_MAP_TYPE_RINGBUF, 0, 0, BPF_DENIAL_RING_BYTES);
	}
	if (!why) {
		*ret_what = "the watched map";
		why = check_map(l->watched_fd, BPF_MAP_TYPE_HASH, sizeof(uint64_t),
				sizeof(struct bpf_denial_watch), BPF_DENIAL_MAX_CGROUPS);
	}
	if (!why) {
		*ret_what = "the .bss map";
		why = check_map(l->bss_fd, BPF_MAP_TYPE_ARRAY, sizeof(uint32_t),
				(uint32_t)l->bss_size, 1);
	}
	if (why)
		return why;
	*ret_what = "the attachments";
	if (!h->attached)
		return h->links[0] >= 0 || h->links[1] >= 0 || h->perf_fd >= 0 ?
			       "are given for a tracer not attached" : NULL;
	if ((l->landlock_prog >= 0) != (h->links[1] >= 0) ||
	    (l->hook == BPF_HOOK_TP) != (h->perf_fd >= 0) ||
	    (l->hook != BPF_HOOK_TP && h->links[0] < 0))
		return "do not match the hook";
	if (h->perf_fd >= 0 && ioctl(h->perf_fd, PERF_EVENT_IOC_ID, &perf_id) < 0)
		return "hold an fd that is not a perf event";
	/* Kernels before 5.15 attach the perf event's program without a link. */
	if (h->links[0] >= 0 && (why = check_link(h->links[0], exit_id)))
		return why;
	if (h->links[1] >= 0 && (why = check_link(h->links[1], ll_id)))
		return why;
	return NULL;
}

int bpf_tracer_watched_ids(struct bpf_tracer *t, uint64_t *ids, size_t max)
{
	uint64_t key = 0, next;
	union bpf_attr a = { 0 };
	size_t n = 0;

	a.map_fd = (__u32)t->obj.watched_fd;
	a.key = 0; /* NULL: the first key */
	a.next_key = (__u64)(uintptr_t)&next;
	while (n < max && sys_bpf(BPF_MAP_GET_NEXT_KEY, &a) == 0) {
		size_t i = n++;

		/* Insertion keeps them ascending (a few thousand at most, once per upgrade). */
		while (i > 0 && ids[i - 1] > next) {
			ids[i] = ids[i - 1];
			i--;
		}
		ids[i] = next;
		key = next;
		a.key = (__u64)(uintptr_t)&key;
	}
	if (n < max && errno != ENOENT)
		return -errno;
	return (int)n;
}

struct bpf_tracer *bpf_tracer_adopt(const struct bpf_tracer_handover *h, char *err, size_t errsz)
{
	const char *what, *why = check_handover(h, &what);
	struct bpf_tracer *t;
	uint64_t *ids;
	void *p;
	int n;

	if (why) {
		snprintf(err, errsz, "%s %s", what, why);
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	ids = malloc(BPF_DENIAL_MAX_CGROUPS * sizeof(*ids));
	if (!t || !ids) {
		snprintf(err, errsz, "%s", strerror(ENOMEM));
		goto fail;
	}
	t->obj = h->obj;
	t->links[0] = t->links[1] = t->perf_fd = -1;
	t->ring_fd = h->obj.ring_fd;
	t->page = (size_t)sysconf(_SC_PAGESIZE);
	t->source = h->obj.landlock_prog >= 0 ? bpf_tracer_hook_names_ll[h->obj.hook] :
						 bpf_tracer_hook_names[h->obj.hook];
	t->bss_map_size = (h->obj.bss_size + t->page - 1) & ~(t->page - 1);
	p = mmap(NULL, t->bss_map_size, PROT_READ, MAP_SHARED, h->obj.bss_fd, 0);
	if (p == MAP_FAILED) {
		snprintf(err, errsz, "cannot map the BPF program's data: %s", strerror(errno));
		goto fail;
	}
	t->bss = p;
	/* The consumer position lives in the map's first page: reading goes on where it stopped. */
	n = bpf_tracer_map_ring(t);
	if (n < 0) {
		snprintf(err, errsz, "cannot map the BPF ring buffer: %s", strerror(-n));
		goto fail;
	}
	n = bpf_tracer_watched_ids(t, ids, BPF_DENIAL_MAX_CGROUPS);
	if (n < 0) {
		snprintf(err, errsz, "cannot read the watched map: %s", strerror(-n));
		goto fail;
	}
	free(ids);
	t->watched = (size_t)n;
	t->attached = h->attached;
	t->links[0] = h->links[0];
	t->links[1] = h->links[1];
	t->perf_fd = h->perf_fd;
	if (!t->attached)
		bpf_tracer_unmap_ring(t); /* kept mapped while records wait, as after a detach */
	return t;
fail:
	free(ids);
	if (t) {
		if (t->producer_map)
			(void)munmap(t->producer_map, t->page + 2 * (size_t)BPF_DENIAL_RING_BYTES);
		if (t->consumer_pos)
			(void)munmap(t->consumer_pos, t->page);
		if (t->bss)
			(void)munmap((void *)t->bss, t->bss_map_size);
		free(t);
	}
	return NULL;
}

#endif /* UEXEC_HAVE_BPF */
