/* SPDX-License-Identifier: MIT */
/*
 * The optional denial tracer's user side: loads the skeleton generated from
 * bpf/denial.bpf.c (choosing the attachment the kernel accepts), keeps the
 * watched-cgroup map, and reads the BPF ring buffer through its own mapping
 * (libbpf's ring_buffer__* would add an epoll fd and could loop without end
 * under a flood). Built without BPF, bpf_tracer_open() says so.
 */
#include <errno.h>
#include <malloc.h>
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

struct bpf_tracer *bpf_tracer_open(char *err, size_t errsz)
{
	snprintf(err, errsz, "built without BPF (meson option bpf)");
	return NULL;
}

struct bpf_tracer *bpf_tracer_open_hook(const char *hook, bool landlock, char *err, size_t errsz)
{
	return bpf_tracer_open(err, errsz);
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
#include <linux/capability.h>
#include <linux/types.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "denial-event.h"
#include "denial.skel.h"

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

struct bpf_tracer {
	struct denial_bpf *skel;
	int ring_fd;
	size_t page;
	uint64_t *consumer_pos;		/* our page, read-write */
	void *producer_map;		/* producer page + data mapped twice, read-only */
	const uint64_t *producer_pos;
	const unsigned char *data;
	const char *source;
	size_t watched;			/* entries in the map; attached while > 0 (or lingering) */
	bool attached;
	bool linger;			/* the last unwatch leaves the programs attached */
};

/* The attachments of the exit hook, in the order they are tried. */
enum exit_hook { HOOK_TP_BTF, HOOK_RAW_TP, HOOK_TP, _HOOK_MAX };
static const char *const hook_names[_HOOK_MAX] = { "tp_btf", "raw_tracepoint", "tracepoint" };
static const char *const hook_names_ll[_HOOK_MAX] = { "tp_btf+landlock", "raw_tracepoint+landlock",
						       "tracepoint+landlock" };

/* libbpf's last warning while we load, for the reason given to the caller. */
static char libbpf_last[256];

__attribute__((format(printf, 2, 0))) static int libbpf_keep_last(enum libbpf_print_level level,
								 const char *fmt, va_list ap)
{
	size_t n;

	if (level != LIBBPF_WARN)
		return 0;
	vsnprintf(libbpf_last, sizeof(libbpf_last), fmt, ap);
	n = strlen(libbpf_last);
	while (n > 0 && libbpf_last[n - 1] == '\n')
		libbpf_last[--n] = '\0';
	return 0;
}

/*
 * CAP_BPF with CAP_PERFMON (tracing programs), or CAP_SYS_ADMIN, in the
 * effective set. Kernels before 5.8 know only CAP_SYS_ADMIN.
 */
static bool has_bpf_privileges(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = { 0 };
	uint64_t eff;

	if (syscall(SYS_capget, &hdr, data) < 0)
		return false;
	eff = (uint64_t)data[1].effective << 32 | data[0].effective;
#define HAS(c) ((eff >> (c)) & 1)
	return HAS(CAP_SYS_ADMIN) || (HAS(38 /* CAP_PERFMON */) && HAS(39 /* CAP_BPF */));
#undef HAS
}

/* Opens, loads and attaches the skeleton with one exit hook (and Landlock's). */
static int try_load(enum exit_hook hook, bool landlock, struct denial_bpf **ret)
{
	struct denial_bpf *s;
	int r;

	s = denial_bpf__open();
	if (!s)
		return -errno;
	bpf_program__set_autoload(s->progs.denial_tp_btf, hook == HOOK_TP_BTF);
	bpf_program__set_autoload(s->progs.denial_raw_tp, hook == HOOK_RAW_TP);
	bpf_program__set_autoload(s->progs.denial_tp, hook == HOOK_TP);
	bpf_program__set_autoload(s->progs.denial_landlock, landlock);
	r = denial_bpf__load(s);
	if (r == 0)
		r = denial_bpf__attach(s);
	if (r < 0)
		denial_bpf__destroy(s);
	/*
	 * A load parses the kernel's BTF (megabytes of small blocks), freed
	 * when it ends but left in the heap by malloc below the skeleton's
	 * later blocks: about 11 MB of an idle server's RSS. Given back here.
	 */
	malloc_trim(0);
	if (r < 0)
		return r;
	*ret = s;
	return 0;
}

/*
 * The ring is mapped only while the programs are attached (map_ring() at the
 * attach, unmap_ring() at the detach): the kernel populates the whole
 * mapping at mmap(), its 512 KiB of data twice, so an idle server would
 * carry 1 MB of resident set for a ring nothing writes to. The memory itself
 * is the kernel's, allocated with the map at load, and stays.
 */
static int map_ring(struct bpf_tracer *t)
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

/* Unmaps the ring if it holds no record (else it stays mapped until a later detach or the close). */
static void unmap_ring(struct bpf_tracer *t)
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

/* Why the tracer cannot run here at all, whichever attachment is tried. */
static bool host_refuses(char *err, size_t errsz)
{
	if (!has_bpf_privileges()) {
		snprintf(err, errsz,
			 "not privileged: needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN (uid %u)",
			 (unsigned)geteuid());
		return true;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK) < 0) {
		snprintf(err, errsz, "the kernel exposes no BTF (/sys/kernel/btf/vmlinux: %s)",
			 strerror(errno));
		return true;
	}
	return false;
}

/* Wraps a loaded skeleton; destroys it on failure. */
static struct bpf_tracer *tracer_new(struct denial_bpf *s, int hook, bool landlock, char *err,
				     size_t errsz)
{
	struct bpf_tracer *t;
	int r;

	t = calloc(1, sizeof(*t));
	if (!t) {
		denial_bpf__destroy(s);
		snprintf(err, errsz, "%s", strerror(ENOMEM));
		return NULL;
	}
	t->skel = s;
	t->ring_fd = bpf_map__fd(s->maps.events);
	t->page = (size_t)sysconf(_SC_PAGESIZE);
	t->source = landlock ? hook_names_ll[hook] : hook_names[hook];
	/*
	 * Loading attached the programs to prove the kernel takes them; detached
	 * until a cgroup is watched, since an enabled sys_exit hook sends every
	 * syscall of the host through the slow exit path.
	 */
	denial_bpf__detach(s);
	/* Proves the ring can be mapped (mapped again at the first attachment). */
	r = map_ring(t);
	if (r < 0) {
		snprintf(err, errsz, "cannot map the BPF ring buffer: %s", strerror(-r));
		bpf_tracer_close(t);
		return NULL;
	}
	unmap_ring(t);
	return t;
}

static void load_failed(char *err, size_t errsz, const char *what, int r, const char *msg)
{
	snprintf(err, errsz, "BPF refused: %s (%s%s%s)", what, strerror(-r), msg[0] ? ": " : "",
		 msg);
}

struct bpf_tracer *bpf_tracer_open(char *err, size_t errsz)
{
	libbpf_print_fn_t old_print;
	struct denial_bpf *s = NULL;
	int r = -ENOENT, first_r = 0, h;
	char first_msg[sizeof(libbpf_last)] = "";
	bool landlock = true;

	if (host_refuses(err, errsz))
		return NULL;
	old_print = libbpf_set_print(libbpf_keep_last);
	for (h = 0; h < _HOOK_MAX; h++) {
		/*
		 * With Landlock's hook first; when that fails but the exit hook
		 * alone loads, the Landlock hook is what the kernel refused (no
		 * landlock_log_denial, or trampolines refused) and is not retried.
		 */
		if (landlock) {
			libbpf_last[0] = '\0';
			r = try_load(h, true, &s);
			if (r == 0)
				break;
		}
		libbpf_last[0] = '\0';
		r = try_load(h, false, &s);
		if (r == 0) {
			landlock = false;
			break;
		}
		if (first_r == 0) {
			first_r = r;
			snprintf(first_msg, sizeof(first_msg), "%s", libbpf_last);
		}
	}
	libbpf_set_print(old_print);
	if (r < 0) {
		load_failed(err, errsz, "no sys_exit attachment loads", first_r, first_msg);
		return NULL;
	}
	return tracer_new(s, h, landlock, err, errsz);
}

struct bpf_tracer *bpf_tracer_open_hook(const char *hook, bool landlock, char *err, size_t errsz)
{
	libbpf_print_fn_t old_print;
	struct denial_bpf *s = NULL;
	int r, h;

	for (h = 0; h < _HOOK_MAX; h++)
		if (strcmp(hook, hook_names[h]) == 0)
			break;
	if (h == _HOOK_MAX) {
		snprintf(err, errsz, "unknown sys_exit attachment '%s'", hook);
		return NULL;
	}
	if (host_refuses(err, errsz))
		return NULL;
	old_print = libbpf_set_print(libbpf_keep_last);
	libbpf_last[0] = '\0';
	r = try_load(h, landlock, &s);
	libbpf_set_print(old_print);
	if (r < 0) {
		load_failed(err, errsz, hook_names[h], r, libbpf_last);
		return NULL;
	}
	return tracer_new(s, h, landlock, err, errsz);
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
	struct bpf_program *progs[] = { t->skel->progs.denial_tp_btf, t->skel->progs.denial_raw_tp,
					t->skel->progs.denial_tp };
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	for (size_t i = 0; i < ELEMENTSOF(progs); i++) {
		int fd = bpf_program__fd(progs[i]);

		memset(&info, 0, sizeof(info));
		if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
			return info.id;
	}
	return 0;
}

int bpf_tracer_watch_cgroup(struct bpf_tracer *t, uint64_t cgroup_id)
{
	struct bpf_denial_watch w = { 0 };
	int r;

	if (bpf_map__lookup_elem(t->skel->maps.watched, &cgroup_id, sizeof(cgroup_id), &w,
				 sizeof(w), 0) == 0)
		return 0;
	if (t->watched >= BPF_DENIAL_MAX_CGROUPS)
		return -ENOSPC;
	if (bpf_map__update_elem(t->skel->maps.watched, &cgroup_id, sizeof(cgroup_id), &w,
				 sizeof(w), BPF_NOEXIST) < 0)
		/* A full hash map answers E2BIG. */
		return errno == E2BIG ? -ENOSPC : -errno;
	if (!t->attached) {
		r = map_ring(t);
		if (r == 0)
			r = denial_bpf__attach(t->skel);
		if (r < 0) {
			(void)bpf_map__delete_elem(t->skel->maps.watched, &cgroup_id,
						   sizeof(cgroup_id), 0);
			denial_bpf__detach(t->skel);
			unmap_ring(t);
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

	if (bpf_map__lookup_elem(t->skel->maps.watched, &cgroup_id, sizeof(cgroup_id), &w,
				 sizeof(w), 0) < 0)
		return -errno;
	*ret_offered = w.offered;
	*ret_suppressed = w.suppressed;
	return 0;
}

int bpf_tracer_unwatch_cgroup(struct bpf_tracer *t, uint64_t cgroup_id)
{
	if (bpf_map__delete_elem(t->skel->maps.watched, &cgroup_id, sizeof(cgroup_id), 0) < 0)
		return -errno;
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
	denial_bpf__detach(t->skel);
	t->attached = false;
	unmap_ring(t);
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
	return r < 0 ? r : n;
}

uint64_t bpf_tracer_dropped(struct bpf_tracer *t)
{
	return __atomic_load_n(&t->skel->bss->dropped, __ATOMIC_RELAXED);
}

void bpf_tracer_close(struct bpf_tracer *t)
{
	if (!t)
		return;
	if (t->producer_map)
		(void)munmap(t->producer_map, t->page + 2 * (size_t)BPF_DENIAL_RING_BYTES);
	if (t->consumer_pos)
		(void)munmap(t->consumer_pos, t->page);
	denial_bpf__destroy(t->skel);
	free(t);
}

#endif /* UEXEC_HAVE_BPF */
