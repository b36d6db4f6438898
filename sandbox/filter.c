/* SPDX-License-Identifier: MIT */
/*
 * Seccomp filters for sandboxed processes. Default action: allow; listed
 * syscalls fail with EPERM (as the reference's filter does), so a denied
 * operation is reported rather than killing the process. Syscalls from other
 * architectures (int 0x80, x32) are killed: libseccomp's bad-arch action.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "macro.h"
#include "filter.h"

/* clang-format off */
/*
 * Always denied inside a sandbox, whatever the policy:
 * - io_uring: its ops bypass seccomp's per-syscall view (the reference denies it too);
 * - ptrace and process_vm_*: reading or steering other processes;
 * - namespaces and mounts: a new user namespace would hand the process
 *   capabilities again, and mounts could undo the read-only view;
 * - kernel keyrings (not namespaced: uid 0 shares root's keys), bpf,
 *   perf_event_open, userfaultfd, open_by_handle_at (the classic escape
 *   from a bind mount), module loading, kexec, reboot, swap, accounting.
 * Most of these also need capabilities the sandbox drops; this is the
 * second wall.
 */
static const int always_denied[] = {
	SCMP_SYS(io_uring_setup), SCMP_SYS(io_uring_enter), SCMP_SYS(io_uring_register),
	SCMP_SYS(ptrace), SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev),
	SCMP_SYS(unshare), SCMP_SYS(setns), SCMP_SYS(mount), SCMP_SYS(umount2),
	SCMP_SYS(pivot_root), SCMP_SYS(chroot), SCMP_SYS(open_tree), SCMP_SYS(move_mount),
	SCMP_SYS(fsopen), SCMP_SYS(fsconfig), SCMP_SYS(fsmount), SCMP_SYS(fspick),
	SCMP_SYS(mount_setattr),
	SCMP_SYS(add_key), SCMP_SYS(keyctl), SCMP_SYS(request_key),
	SCMP_SYS(bpf), SCMP_SYS(perf_event_open), SCMP_SYS(userfaultfd),
	SCMP_SYS(open_by_handle_at), SCMP_SYS(name_to_handle_at),
	SCMP_SYS(init_module), SCMP_SYS(finit_module), SCMP_SYS(delete_module),
	SCMP_SYS(kexec_load), SCMP_SYS(kexec_file_load), SCMP_SYS(reboot),
	SCMP_SYS(swapon), SCMP_SYS(swapoff), SCMP_SYS(acct),
};

bool sandbox_seccomp_always_refused(long nr)
{
	for (size_t i = 0; i < sizeof(always_denied) / sizeof(always_denied[0]); i++)
		if (always_denied[i] == nr)
			return true;
	return nr == SCMP_SYS(socket);
}

/*
 * Network restricted: the reference's list (SANDBOX.md §3.5), for every
 * family, except getpeername/getsockname: they only describe fds the process
 * already holds, and refusing them with EPERM makes bash think stdin is a
 * network connection and source ~/.bashrc (the reference's noise,
 * PROTOCOL.md §13).
 */
static const int net_denied[] = {
	SCMP_SYS(connect), SCMP_SYS(accept), SCMP_SYS(accept4), SCMP_SYS(bind),
	SCMP_SYS(listen), SCMP_SYS(shutdown),
	SCMP_SYS(sendto), SCMP_SYS(sendmmsg), SCMP_SYS(recvmmsg), SCMP_SYS(getsockopt),
	SCMP_SYS(setsockopt),
};
/* clang-format on */

/* fchmodat2 (Linux 6.6) is newer than libseccomp 2.5's tables: the x86-64 number. */
#define NR_FCHMODAT2 452

static const uint64_t clone_ns_flags[] = {
	CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWUTS, CLONE_NEWIPC,
	CLONE_NEWCGROUP, CLONE_NEWTIME,
};

static int export(scmp_filter_ctx ctx, struct sock_fprog *out)
{
	_cleanup_close_ int fd = memfd_create("uexec-seccomp", MFD_CLOEXEC);
	off_t size;
	void *buf;
	int r;

	if (fd < 0)
		return -errno;
	r = seccomp_export_bpf(ctx, fd);
	if (r < 0)
		return r;
	size = lseek(fd, 0, SEEK_END);
	if (size <= 0 || size % sizeof(struct sock_filter))
		return -EINVAL;
	buf = malloc((size_t)size);
	if (!buf)
		return -ENOMEM;
	if (pread(fd, buf, (size_t)size, 0) != size) {
		free(buf);
		return -EIO;
	}
	out->filter = buf;
	out->len = (unsigned short)(size / (off_t)sizeof(struct sock_filter));
	return 0;
}

static bool is_io_uring(int nr)
{
	return nr == SCMP_SYS(io_uring_setup) || nr == SCMP_SYS(io_uring_enter) ||
	       nr == SCMP_SYS(io_uring_register);
}

/*
 * Other processes of the same uid need no capability to be reniced, have
 * their limits changed (prlimit: e.g. the server's fd limit set to 16) or be
 * pinned to a CPU: only pid 0 (self) is allowed. And no set-id bit may be
 * set on a file: a setuid-root binary left in the workspace would be a root
 * shell for any local user once the sandbox is gone.
 */
static int add_process_rules(scmp_filter_ctx ctx)
{
	/* Calls that reach another process by the pid (or who) in argument `arg`. */
	static const struct {
		int nr;
		unsigned arg;
	} by_pid[] = {
		{ SCMP_SYS(setpriority), 1 },      { SCMP_SYS(sched_setaffinity), 0 },
		{ SCMP_SYS(sched_setscheduler), 0 }, { SCMP_SYS(sched_setparam), 0 },
		{ SCMP_SYS(sched_setattr), 0 },    { SCMP_SYS(ioprio_set), 1 },
	};
	/*
	 * Calls that set a file mode (argument `mode`), with O_CREAT in
	 * argument `flags` when that is >= 0: each refused with either set-id
	 * bit (mknod makes regular files without any capability too).
	 */
	static const struct {
		int nr;
		unsigned mode;
		int flags;
	} set_mode[] = {
		{ SCMP_SYS(chmod), 1, -1 },  { SCMP_SYS(fchmod), 1, -1 }, { SCMP_SYS(fchmodat), 2, -1 },
		{ SCMP_SYS(open), 2, 1 },    { SCMP_SYS(openat), 3, 2 },  { SCMP_SYS(creat), 1, -1 },
		{ SCMP_SYS(mknod), 1, -1 },  { SCMP_SYS(mknodat), 2, -1 },
	};
	static const scmp_datum_t setid_bits[] = { S_ISUID, S_ISGID };
	int r = 0;

	r = r ?: seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prlimit64), 2,
				  SCMP_A0(SCMP_CMP_NE, 0), SCMP_A2(SCMP_CMP_NE, 0));
	for (size_t i = 0; i < ELEMENTSOF(by_pid) && r == 0; i++) {
		struct scmp_arg_cmp c = { by_pid[i].arg, SCMP_CMP_NE, 0, 0 };

		r = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), by_pid[i].nr, 1, &c);
	}
	for (size_t i = 0; i < ELEMENTSOF(set_mode) && r == 0; i++)
		for (size_t b = 0; b < ELEMENTSOF(setid_bits) && r == 0; b++) {
			struct scmp_arg_cmp c[2] = {
				{ set_mode[i].mode, SCMP_CMP_MASKED_EQ, setid_bits[b], setid_bits[b] },
				{ (unsigned)set_mode[i].flags, SCMP_CMP_MASKED_EQ, O_CREAT, O_CREAT },
			};

			r = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), set_mode[i].nr,
						   set_mode[i].flags >= 0 ? 2 : 1, c);
		}
	/* openat2 and fchmodat2 pass modes the filter cannot check: ENOSYS -> libc falls back. */
	r = r ?: seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0);
	r = r ?: seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), NR_FCHMODAT2, 0);
	return r;
}

static int build(bool restrict_net, bool allow_io_uring, struct sock_fprog *out)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int r = 0;

	if (!ctx)
		return -ENOMEM;
	r = add_process_rules(ctx);
	for (size_t i = 0; i < ELEMENTSOF(always_denied) && r >= 0; i++)
		if (!(allow_io_uring && is_io_uring(always_denied[i])))
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), always_denied[i], 0);
	/* clone3 passes its flags in memory seccomp cannot read: ENOSYS makes libc fall back to clone. */
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	/* clone with any namespace flag: one rule per flag ((flags & f) == f). */
	for (size_t i = 0; i < ELEMENTSOF(clone_ns_flags) && r >= 0; i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, clone_ns_flags[i], clone_ns_flags[i]));
	if (restrict_net) {
		for (size_t i = 0; i < ELEMENTSOF(net_denied) && r >= 0; i++)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), net_denied[i], 0);
		/* socket/socketpair: only AF_UNIX. */
		if (r >= 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1,
					     SCMP_A0(SCMP_CMP_NE, AF_UNIX));
		if (r >= 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socketpair), 1,
					     SCMP_A0(SCMP_CMP_NE, AF_UNIX));
	} else {
		/* Network on: still no VSOCK (the host's hypervisor channel). */
		if (r >= 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1,
					     SCMP_A0(SCMP_CMP_EQ, AF_VSOCK));
	}
	if (r >= 0)
		r = export(ctx, out);
	seccomp_release(ctx);
	return r;
}

int sandbox_seccomp_build(struct sandbox_seccomp *s)
{
	int r;

	memset(s, 0, sizeof(*s));
	r = build(true, false, &s->restricted);
	if (r >= 0)
		r = build(false, false, &s->open_net);
	if (r >= 0)
		r = build(true, true, &s->fs_helper);
	if (r < 0)
		sandbox_seccomp_done(s);
	return r;
}

void sandbox_seccomp_done(struct sandbox_seccomp *s)
{
	free(s->restricted.filter);
	free(s->open_net.filter);
	free(s->fs_helper.filter);
	memset(s, 0, sizeof(*s));
}

int sandbox_seccomp_apply(const struct sock_fprog *prog, bool log)
{
	/* The flag changes what is logged, never the filter's verdicts. */
	if (log && syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_LOG, prog) == 0)
		return 0;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog, 0, 0) < 0)
		return -errno;
	return 0;
}
