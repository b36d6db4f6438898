/* SPDX-License-Identifier: MIT */
/*
 * The denial tracer's load (bpf-tracer-int.h): the skeleton generated from
 * bpf/denial.bpf.c opened and loaded by libbpf, with the first exit hook the
 * kernel accepts, its kernel objects handed over as fds, and the skeleton
 * destroyed. Built into the module uexec-bpf.so, which uexec opens at start
 * and closes once the tracer is loaded (bpf_tracer_open_module()), and into
 * the tests and the benchmark, whose bpf_tracer_open() is here.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf-config.h"
#include "bpf-tracer-int.h"
#include "bpf-tracer.h"

#if !UEXEC_HAVE_BPF

int bpf_tracer_load(int hook, bool landlock, struct bpf_tracer_loaded *ret, char *err,
		    size_t errsz)
{
	snprintf(err, errsz, "built without BPF (meson option bpf)");
	return -EOPNOTSUPP;
}

#else /* UEXEC_HAVE_BPF */

#include <linux/capability.h>
#include <stddef.h>
#include <sys/syscall.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "denial.skel.h"

static const char *const hook_names[_BPF_HOOK_MAX] = { "tp_btf", "raw_tracepoint", "tracepoint" };

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
static int try_load(int hook, bool landlock, struct denial_bpf **ret)
{
	struct denial_bpf *s;
	int r;

	s = denial_bpf__open();
	if (!s)
		return -errno;
	bpf_program__set_autoload(s->progs.denial_tp_btf, hook == BPF_HOOK_TP_BTF);
	bpf_program__set_autoload(s->progs.denial_raw_tp, hook == BPF_HOOK_RAW_TP);
	bpf_program__set_autoload(s->progs.denial_tp, hook == BPF_HOOK_TP);
	bpf_program__set_autoload(s->progs.denial_landlock, landlock);
	r = denial_bpf__load(s);
	if (r == 0)
		r = denial_bpf__attach(s);
	if (r < 0) {
		denial_bpf__destroy(s);
		return r;
	}
	*ret = s;
	return 0;
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

static void load_failed(char *err, size_t errsz, const char *what, int r, const char *msg)
{
	snprintf(err, errsz, "BPF refused: %s (%s%s%s)", what, strerror(-r), msg[0] ? ": " : "",
		 msg);
}

/* The perf id of raw_syscalls/sys_exit, where libbpf found it (tracefs, else debugfs). */
static int tracepoint_id(void)
{
	static const char *const paths[] = {
		"/sys/kernel/tracing/events/raw_syscalls/sys_exit/id",
		"/sys/kernel/debug/tracing/events/raw_syscalls/sys_exit/id",
	};

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		FILE *f = fopen(paths[i], "re");
		int id = -1;

		if (!f)
			continue;
		if (fscanf(f, "%d", &id) != 1)
			id = -1;
		fclose(f);
		if (id >= 0)
			return id;
	}
	return -ENOENT;
}

static int dup_fd(int fd)
{
	return fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

static void close_loaded(struct bpf_tracer_loaded *l)
{
	int *fds[] = { &l->exit_prog, &l->landlock_prog, &l->ring_fd, &l->watched_fd, &l->bss_fd };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

/* The loaded skeleton's objects as fds of our own; the skeleton is destroyed. */
static int hand_over(struct denial_bpf *s, int hook, bool landlock, struct bpf_tracer_loaded *l,
		     char *err, size_t errsz)
{
	struct bpf_program *exit_progs[] = { s->progs.denial_tp_btf, s->progs.denial_raw_tp,
					     s->progs.denial_tp };
	int r = 0;

	*l = (struct bpf_tracer_loaded){
		.hook = hook,
		.exit_prog = dup_fd(bpf_program__fd(exit_progs[hook])),
		.landlock_prog = landlock ? dup_fd(bpf_program__fd(s->progs.denial_landlock)) : -1,
		.tp_id = hook == BPF_HOOK_TP ? tracepoint_id() : -1,
		.ring_fd = dup_fd(bpf_map__fd(s->maps.events)),
		.watched_fd = dup_fd(bpf_map__fd(s->maps.watched)),
		.bss_fd = dup_fd(bpf_map__fd(s->maps.bss)),
		.bss_size = sizeof(*s->bss),
		.dropped_off = offsetof(struct denial_bpf__bss, dropped),
	};
	if (l->exit_prog < 0 || (landlock && l->landlock_prog < 0) || l->ring_fd < 0 ||
	    l->watched_fd < 0 || l->bss_fd < 0)
		r = -errno;
	else if (hook == BPF_HOOK_TP && l->tp_id < 0)
		r = l->tp_id;
	denial_bpf__destroy(s); /* detaches; the kernel objects live on through our fds */
	if (r < 0) {
		snprintf(err, errsz, "cannot keep the loaded BPF objects: %s", strerror(-r));
		close_loaded(l);
	}
	return r;
}

int bpf_tracer_load(int hook, bool landlock, struct bpf_tracer_loaded *ret, char *err,
		    size_t errsz)
{
	libbpf_print_fn_t old_print;
	struct denial_bpf *s = NULL;
	int r = -ENOENT, first_r = 0, h;
	char first_msg[sizeof(libbpf_last)] = "";

	if (hook >= _BPF_HOOK_MAX) {
		snprintf(err, errsz, "unknown sys_exit attachment %d", hook);
		return -EINVAL;
	}
	if (host_refuses(err, errsz))
		return -EPERM;
	old_print = libbpf_set_print(libbpf_keep_last);
	if (hook >= 0) {
		libbpf_last[0] = '\0';
		r = try_load(hook, landlock, &s);
		h = hook;
		if (r < 0)
			load_failed(err, errsz, hook_names[h], r, libbpf_last);
	} else {
		for (h = 0; h < _BPF_HOOK_MAX; h++) {
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
		if (r < 0)
			load_failed(err, errsz, "no sys_exit attachment loads", first_r, first_msg);
	}
	libbpf_set_print(old_print);
	if (r == 0)
		r = hand_over(s, h, landlock, ret, err, errsz);
	/*
	 * A load parses the kernel's BTF (megabytes of small blocks), freed
	 * when it ends but left in the heap by malloc below later blocks:
	 * about 11 MB of an idle server's RSS. Given back here.
	 */
	malloc_trim(0);
	return r;
}

#ifdef UEXEC_BPF_MODULE
__attribute__((visibility("default"))) const struct bpf_module uexec_bpf_module = {
	.abi = BPF_MODULE_ABI,
	.load = bpf_tracer_load,
};
#endif

#endif /* UEXEC_HAVE_BPF */

/* The tests' and the benchmark's opens: the load linked in, no module (not in it). */
#ifndef UEXEC_BPF_MODULE
static const char *const hook_arg[] = { "tp_btf", "raw_tracepoint", "tracepoint" };

struct bpf_tracer *bpf_tracer_open(char *err, size_t errsz)
{
	struct bpf_tracer_loaded l;

	if (bpf_tracer_load(-1, true, &l, err, errsz) < 0)
		return NULL;
	return bpf_tracer_new(&l, err, errsz);
}

struct bpf_tracer *bpf_tracer_open_hook(const char *hook, bool landlock, char *err, size_t errsz)
{
	struct bpf_tracer_loaded l;
	int h;

	for (h = 0; h < _BPF_HOOK_MAX; h++)
		if (strcmp(hook, hook_arg[h]) == 0)
			break;
	if (h == _BPF_HOOK_MAX) {
		snprintf(err, errsz, "unknown sys_exit attachment '%s'", hook);
		return NULL;
	}
	if (bpf_tracer_load(h, landlock, &l, err, errsz) < 0)
		return NULL;
	return bpf_tracer_new(&l, err, errsz);
}
#endif /* !UEXEC_BPF_MODULE */
