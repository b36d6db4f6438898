/* SPDX-License-Identifier: MIT */
/*
 * The optional denial tracer's user side after the load (bpf-load.c, in the
 * module uexec-bpf.so): the programs attached and detached with bpf(2) and
 * perf_event_open(2), the watched-cgroup map, and the BPF ring buffer read
 * through its own mapping (libbpf's ring_buffer__* would add an epoll fd and
 * could loop without end under a flood). No libbpf here: uexec maps it only
 * during the load. Built without BPF, the tracer cannot be opened.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "bpf-config.h"
#include "bpf-tracer-int.h"
#include "bpf-tracer.h"
#include "macro.h"

int bpf_tracer_cgroup_id(int dirfd, const char *path, uint64_t *ret_id)
{
	_cleanup_(closep) int fd = -1;
	struct {
		struct file_handle h;
		unsigned char bytes[sizeof(uint64_t)];
	} fh;
	struct statfs sfs;
	int mount_id;
	uint64_t id;

	fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstatfs(fd, &sfs) < 0)
		return -errno;
	if (sfs.f_type != CGROUP2_SUPER_MAGIC)
		return -EOPNOTSUPP;
	/* kernfs hands out the cgroup's 64-bit id as its file handle. */
	fh.h.handle_bytes = sizeof(fh.bytes);
	if (name_to_handle_at(fd, "", &fh.h, &mount_id, AT_EMPTY_PATH) < 0)
		return -errno;
	if (fh.h.handle_bytes != sizeof(id))
		return -EOPNOTSUPP;
	memcpy(&id, fh.h.f_handle, sizeof(id));
	*ret_id = id;
	return 0;
}

#if !UEXEC_HAVE_BPF

struct bpf_tracer *bpf_tracer_new(struct bpf_tracer_loaded *l, char *err, size_t errsz)
{
	snprintf(err, errsz, "built without BPF (meson option bpf)");
	return NULL;
}

struct bpf_tracer *bpf_tracer_open_module(int module_fd, char *err, size_t errsz)
{
	return bpf_tracer_new(NULL, err, errsz);
}

bool bpf_tracer_built(void)
{
	return false;
}

/* Without BPF no tracer exists: the calls below cannot be reached with one. */
int bpf_tracer_fd(struct bpf_tracer *t)
{
	return -EOPNOTSUPP;
}

const char *bpf_tracer_source(struct bpf_tracer *t)
{
	return "none";
}

int bpf_tracer_watch_cgroup(struct bpf_tracer *t, uint64_t cgroup_id)
{
	return -EOPNOTSUPP;
}

int bpf_tracer_unwatch_cgroup(struct bpf_tracer *t, uint64_t cgroup_id)
{
	return -EOPNOTSUPP;
}

void bpf_tracer_set_linger(struct bpf_tracer *t, bool linger)
{
}

bool bpf_tracer_detach_if_idle(struct bpf_tracer *t)
{
	return false;
}

int bpf_tracer_cgroup_counts(struct bpf_tracer *t, uint64_t cgroup_id, uint64_t *ret_offered,
			     uint64_t *ret_suppressed)
{
	return -EOPNOTSUPP;
}

int bpf_tracer_consume(struct bpf_tracer *t, void (*cb)(void *ctx, const struct bpf_denial *d),
		       void *ctx)
{
	return -EOPNOTSUPP;
}

uint64_t bpf_tracer_dropped(struct bpf_tracer *t)
{
	return 0;
}

uint32_t bpf_tracer_prog_id(struct bpf_tracer *t)
{
	return 0;
}

void bpf_tracer_close(struct bpf_tracer *t)
{
}

#else /* UEXEC_HAVE_BPF */

#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <linux/types.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "bpf-tracer-state.h"
#include "denial-event.h"

_Static_assert(sizeof(struct bpf_denial) == sizeof(struct bpf_denial_addr_event), "record size");
_Static_assert(offsetof(struct bpf_denial, addr_len) ==
		       offsetof(struct bpf_denial_addr_event, addr_len), "record layout");
_Static_assert(offsetof(struct bpf_denial, addr) == offsetof(struct bpf_denial_addr_event, addr),
	       "record layout");
_Static_assert(offsetof(struct bpf_denial, cgroup_id) ==
		       offsetof(struct bpf_denial_event, cgroup_id), "record layout");
_Static_assert(offsetof(struct bpf_denial, syscall_nr) ==
		       offsetof(struct bpf_denial_event, syscall_nr), "record layout");
_Static_assert(offsetof(struct bpf_denial, err) == offsetof(struct bpf_denial_event, err),
	       "record layout");
_Static_assert(offsetof(struct bpf_denial, comm) == offsetof(struct bpf_denial_event, comm),
	       "record layout");
_Static_assert(offsetof(struct bpf_denial, args) == offsetof(struct bpf_denial_event, args),
	       "record layout");
_Static_assert(offsetof(struct bpf_denial, nargs) == offsetof(struct bpf_denial_event, nargs),
	       "record layout");

_Static_assert(BPF_TRACER_MAX_CGROUPS == BPF_DENIAL_MAX_CGROUPS, "limits");
_Static_assert(BPF_TRACER_MAX_PER_CGROUP == BPF_DENIAL_MAX_PER_CGROUP, "limits");

#define RING_MASK ((uint64_t)BPF_DENIAL_RING_BYTES - 1)
/* Each record takes its 8-byte header plus the event, rounded to 8 bytes. */
#define RECORD_BYTES ((BPF_RINGBUF_HDR_SZ + sizeof(struct bpf_denial_event) + 7) & ~(size_t)7)
/* One ring's worth of records per bpf_tracer_consume() call. */
#define CONSUME_BUDGET (BPF_DENIAL_RING_BYTES / RECORD_BYTES)
_Static_assert(BPF_TRACER_RING_RECORDS == CONSUME_BUDGET, "limits");

const char *const bpf_tracer_hook_names[_BPF_HOOK_MAX] = { "tp_btf", "raw_tracepoint",
							      "tracepoint" };
const char *const bpf_tracer_hook_names_ll[_BPF_HOOK_MAX] = { "tp_btf+landlock",
								 "raw_tracepoint+landlock",
								 "tracepoint+landlock" };

static int map_lookup(int fd, const void *key, void *value)
{
	union bpf_attr a = { 0 };

	a.map_fd = (__u32)fd;
	a.key = (__u64)(uintptr_t)key;
	a.value = (__u64)(uintptr_t)value;
	return sys_bpf(BPF_MAP_LOOKUP_ELEM, &a) < 0 ? -errno : 0;
}

static int map_update(int fd, const void *key, const void *value, __u64 flags)
{
	union bpf_attr a = { 0 };

	a.map_fd = (__u32)fd;
	a.key = (__u64)(uintptr_t)key;
	a.value = (__u64)(uintptr_t)value;
	a.flags = flags;
	return sys_bpf(BPF_MAP_UPDATE_ELEM, &a) < 0 ? -errno : 0;
}

static int map_delete(int fd, const void *key)
{
	union bpf_attr a = { 0 };

	a.map_fd = (__u32)fd;
	a.key = (__u64)(uintptr_t)key;
	return sys_bpf(BPF_MAP_DELETE_ELEM, &a) < 0 ? -errno : 0;
}

/*
 * A BTF-typed program (tp_btf, fentry: name NULL) or a raw tracepoint
 * program on the named tracepoint; the link's fd or -errno.
 */
static int raw_tp_open(int prog_fd, const char *name)
{
	union bpf_attr a = { 0 };
	long fd;

	a.raw_tracepoint.name = (__u64)(uintptr_t)name;
	a.raw_tracepoint.prog_fd = (__u32)prog_fd;
	fd = sys_bpf(BPF_RAW_TRACEPOINT_OPEN, &a);
	return fd < 0 ? -errno : (int)fd;
}

/* The perf tracepoint program: a perf event on raw_syscalls/sys_exit with a BPF link on it. */
static int perf_tp_attach(struct bpf_tracer *t)
{
	struct perf_event_attr pa = { 0 };
	union bpf_attr a = { 0 };
	long fd;

	pa.type = PERF_TYPE_TRACEPOINT;
	pa.size = sizeof(pa);
	pa.config = (__u64)t->obj.tp_id;
	pa.sample_period = 1;
	pa.wakeup_events = 1;
	/* Any CPU: the program hangs on the tracepoint, not on this event's CPU. */
	fd = syscall(SYS_perf_event_open, &pa, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	t->perf_fd = (int)fd;
	a.link_create.prog_fd = (__u32)t->obj.exit_prog;
	a.link_create.target_fd = (__u32)t->perf_fd;
	a.link_create.attach_type = BPF_PERF_EVENT;
	fd = sys_bpf(BPF_LINK_CREATE, &a);
	if (fd >= 0)
		return (int)fd;
	/* Kernels before 5.15: the program set on the event, enabled; no link. */
	if (ioctl(t->perf_fd, PERF_EVENT_IOC_SET_BPF, t->obj.exit_prog) < 0 ||
	    ioctl(t->perf_fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
		return -errno;
	return -1; /* attached through the perf event alone */
}

static void detach(struct bpf_tracer *t)
{
	for (size_t i = 0; i < ELEMENTSOF(t->links); i++)
		t->links[i] = safe_close(t->links[i]);
	t->perf_fd = safe_close(t->perf_fd);
}

/* Landlock's hook, then the exit hook: a denial's record comes before its syscall's exit. */
static int attach(struct bpf_tracer *t)
{
	int r;

	if (t->obj.landlock_prog >= 0) {
		r = raw_tp_open(t->obj.landlock_prog, NULL);
		if (r < 0)
			return r;
		t->links[1] = r;
	}
	switch (t->obj.hook) {
	case BPF_HOOK_TP_BTF:
		r = raw_tp_open(t->obj.exit_prog, NULL);
		break;
	case BPF_HOOK_RAW_TP:
		r = raw_tp_open(t->obj.exit_prog, "sys_exit");
		break;
	default:
		r = perf_tp_attach(t);
		if (r == -1 && t->perf_fd >= 0)
			return 0;
		break;
	}
	if (r < 0) {
		detach(t);
		return r;
	}
	t->links[0] = r;
	return 0;
}

/*
 * The ring is mapped only while the programs are attached
 * (bpf_tracer_map_ring() at the attach, bpf_tracer_unmap_ring() at the
 * detach): the kernel populates the whole mapping at mmap(), its 512 KiB
 * of data twice, so an idle server would carry 1 MB of resident set for a
 * ring nothing writes to. The memory itself is the kernel's, allocated with
 * the map at load, and stays.
 */
int bpf_tracer_map_ring(struct bpf_tracer *t)
{
	void *p;

	if (t->consumer_pos)
		return 0;
	p = mmap(NULL, t->page, PROT_READ | PROT_WRITE, MAP_SHARED, t->ring_fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	t->consumer_pos = p;
	/* The kernel maps the data twice in a row, so a record never wraps. */
	p = mmap(NULL, t->page + 2 * (size_t)BPF_DENIAL_RING_BYTES, PROT_READ, MAP_SHARED,
		 t->ring_fd, (off_t)t->page);
	if (p == MAP_FAILED) {
		int r = -errno;

		(void)munmap(t->consumer_pos, t->page);
		t->consumer_pos = NULL;
		return r;
	}
	t->producer_map = p;
	t->producer_pos = p;
	t->data = (const unsigned char *)p + t->page;
	return 0;
}

/*
 * Unmaps the ring if it holds no record; else it stays mapped until they are
 * read (bpf_tracer_consume() unmaps it then) or the close.
 */
void bpf_tracer_unmap_ring(struct bpf_tracer *t)
{
	if (!t->consumer_pos ||
	    __atomic_load_n(t->consumer_pos, __ATOMIC_RELAXED) !=
		    __atomic_load_n(t->producer_pos, __ATOMIC_ACQUIRE))
		return;
	(void)munmap(t->producer_map, t->page + 2 * (size_t)BPF_DENIAL_RING_BYTES);
	(void)munmap(t->consumer_pos, t->page);
	t->consumer_pos = NULL;
	t->producer_map = NULL;
	t->producer_pos = NULL;
	t->data = NULL;
}

struct bpf_tracer *bpf_tracer_new(struct bpf_tracer_loaded *l, char *err, size_t errsz)
{
	struct bpf_tracer *t;
	void *p;
	int r;

	t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(err, errsz, "%s", strerror(ENOMEM));
		goto fail;
	}
	t->obj = *l;
	t->links[0] = t->links[1] = t->perf_fd = -1;
	t->ring_fd = l->ring_fd;
	t->page = (size_t)sysconf(_SC_PAGESIZE);
	t->source = l->landlock_prog >= 0 ? bpf_tracer_hook_names_ll[l->hook] :
					    bpf_tracer_hook_names[l->hook];
	t->bss_map_size = (l->bss_size + t->page - 1) & ~(t->page - 1);
	p = mmap(NULL, t->bss_map_size, PROT_READ, MAP_SHARED, l->bss_fd, 0);
	if (p == MAP_FAILED) {
		snprintf(err, errsz, "cannot map the BPF program's data: %s", strerror(errno));
		bpf_tracer_close(t);
		return NULL;
	}
	t->bss = p;
	/* Proves the ring can be mapped (mapped again at the first attachment). */
	r = bpf_tracer_map_ring(t);
	if (r < 0) {
		snprintf(err, errsz, "cannot map the BPF ring buffer: %s", strerror(-r));
		bpf_tracer_close(t);
		return NULL;
	}
	bpf_tracer_unmap_ring(t);
	return t;
fail:
	close(l->exit_prog);
	if (l->landlock_prog >= 0)
		close(l->landlock_prog);
	close(l->ring_fd);
	close(l->watched_fd);
	close(l->bss_fd);
	return NULL;
}

bool bpf_tracer_built(void)
{
	return true;
}

struct bpf_tracer *bpf_tracer_open_module(int module_fd, char *err, size_t errsz)
{
	const struct bpf_module *m;
	struct bpf_tracer_loaded l;
	char path[64];
	void *h;
	int r;

	if (module_fd < 0) {
		snprintf(err, errsz, "cannot open " BPF_MODULE_FILE ": %s", strerror(-module_fd));
		return NULL;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", module_fd);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err, errsz, "cannot load " BPF_MODULE_FILE ": %s", dlerror());
		return NULL;
	}
	m = dlsym(h, BPF_MODULE_SYMBOL);
	if (!m || m->abi != BPF_MODULE_ABI) {
		snprintf(err, errsz, "cannot load " BPF_MODULE_FILE ": %s",
			 m ? "built for another uexec (ABI mismatch)" : "no " BPF_MODULE_SYMBOL);
		dlclose(h);
		return NULL;
	}
	r = m->load(-1, true, &l, err, errsz);
	/* libbpf, libelf and what the load left go with the module. */
	dlclose(h);
	return r < 0 ? NULL : bpf_tracer_new(&l, err, errsz);
}

int bpf_tracer_fd(struct bpf_tracer *t)
{
	return t->ring_fd;
}

const char *bpf_tracer_source(struct bpf_tracer *t)
{
	return t->source;
}

uint32_t bpf_tracer_prog_id(struct bpf_tracer *t)
{
	struct bpf_prog_info info = { 0 };
	union bpf_attr a = { 0 };

	a.info.bpf_fd = (__u32)t->obj.exit_prog;
	a.info.info_len = sizeof(info);
	a.info.info = (__u64)(uintptr_t)&info;
	return sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a) == 0 ? info.id : 0;
}

int bpf_tracer_watch_cgroup(struct bpf_tracer *t, uint64_t cgroup_id)
{
	struct bpf_denial_watch w = { 0 };
	int r;

	if (map_lookup(t->obj.watched_fd, &cgroup_id, &w) == 0)
		return 0;
	if (t->watched >= BPF_DENIAL_MAX_CGROUPS)
		return -ENOSPC;
	r = map_update(t->obj.watched_fd, &cgroup_id, &w, BPF_NOEXIST);
	if (r < 0)
		/* A full hash map answers E2BIG. */
		return r == -E2BIG ? -ENOSPC : r;
	if (!t->attached) {
		r = bpf_tracer_map_ring(t);
		if (r == 0)
			r = attach(t);
		if (r < 0) {
			(void)map_delete(t->obj.watched_fd, &cgroup_id);
			bpf_tracer_unmap_ring(t);
			return r;
		}
		t->attached = true;
	}
	t->watched++;
	return 0;
}

int bpf_tracer_cgroup_counts(struct bpf_tracer *t, uint64_t cgroup_id, uint64_t *ret_offered,
			     uint64_t *ret_suppressed)
{
	struct bpf_denial_watch w;

	int r = map_lookup(t->obj.watched_fd, &cgroup_id, &w);

	if (r < 0)
		return r;
	*ret_offered = w.offered;
	*ret_suppressed = w.suppressed;
	return 0;
}

int bpf_tracer_unwatch_cgroup(struct bpf_tracer *t, uint64_t cgroup_id)
{
	int r = map_delete(t->obj.watched_fd, &cgroup_id);

	if (r < 0)
		return r;
	if (--t->watched == 0 && !t->linger)
		(void)bpf_tracer_detach_if_idle(t);
	return 0;
}

void bpf_tracer_set_linger(struct bpf_tracer *t, bool linger)
{
	t->linger = linger;
}

bool bpf_tracer_detach_if_idle(struct bpf_tracer *t)
{
	if (t->watched > 0 || !t->attached)
		return false;
	detach(t);
	t->attached = false;
	bpf_tracer_unmap_ring(t);
	return true;
}

int bpf_tracer_consume(struct bpf_tracer *t, void (*cb)(void *ctx, const struct bpf_denial *d),
		       void *ctx)
{
	uint64_t cons, prod;
	size_t seen = 0;
	int n = 0, r = 0;

	if (!t->consumer_pos)
		return 0; /* not mapped: nothing was attached to write since it was empty */
	cons = __atomic_load_n(t->consumer_pos, __ATOMIC_RELAXED);
	prod = __atomic_load_n(t->producer_pos, __ATOMIC_ACQUIRE);

	while (cons < prod && seen < CONSUME_BUDGET) {
		const uint32_t *hdr = (const uint32_t *)(t->data + (cons & RING_MASK));
		uint32_t len = __atomic_load_n(hdr, __ATOMIC_ACQUIRE);
		uint32_t size = len & ~(uint32_t)(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
		struct bpf_denial d;
		bool deliver;

		if (len & BPF_RINGBUF_BUSY_BIT)
			break; /* reserved, not yet submitted: the records after it wait too */
		deliver = !(len & BPF_RINGBUF_DISCARD_BIT);
		/* Two sizes: the plain record, and a refused connect() with its address. */
		if (deliver && size != sizeof(struct bpf_denial_event) &&
		    size != sizeof(struct bpf_denial_addr_event)) {
			r = -EBADMSG;
			deliver = false;
		}
		if (deliver) {
			memcpy(&d, (const unsigned char *)hdr + BPF_RINGBUF_HDR_SZ, size);
			if (size == sizeof(struct bpf_denial_event))
				d.addr_len = 0;
			if (d.addr_len > sizeof(d.addr))
				d.addr_len = sizeof(d.addr);
		}
		cons += (BPF_RINGBUF_HDR_SZ + (uint64_t)size + 7) & ~(uint64_t)7;
		/* Give the room back before the callback, which may take its time. */
		__atomic_store_n(t->consumer_pos, cons, __ATOMIC_RELEASE);
		seen++;
		if (deliver) {
			d.comm[sizeof(d.comm) - 1] = '\0';
			if (d.nargs > 6)
				d.nargs = 0;
			cb(ctx, &d);
			n++;
		}
	}
	/* Detached with records left (unwatched trees' last ones): unmapped once read. */
	if (!t->attached)
		bpf_tracer_unmap_ring(t);
	return r < 0 ? r : n;
}

uint64_t bpf_tracer_dropped(struct bpf_tracer *t)
{
	return __atomic_load_n((const uint64_t *)(t->bss + t->obj.dropped_off), __ATOMIC_RELAXED);
}

void bpf_tracer_close(struct bpf_tracer *t)
{
	if (!t)
		return;
	if (t->producer_map)
		(void)munmap(t->producer_map, t->page + 2 * (size_t)BPF_DENIAL_RING_BYTES);
	if (t->consumer_pos)
		(void)munmap(t->consumer_pos, t->page);
	detach(t);
	if (t->bss)
		(void)munmap((void *)t->bss, t->bss_map_size);
	safe_close(t->obj.exit_prog);
	safe_close(t->obj.landlock_prog);
	safe_close(t->obj.ring_fd);
	safe_close(t->obj.watched_fd);
	safe_close(t->obj.bss_fd);
	free(t);
}

#endif /* UEXEC_HAVE_BPF */
