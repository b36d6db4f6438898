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
#include <stddef.h>
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

/*
 * The value a load instruction reads: a word of seccomp_data (only the
 * words the caller knows: nr, arch, the first nargs arguments), its
 * length, an immediate or a scratch word. Returns false for anything else.
 */
static bool load_value(const struct sock_filter *f, const struct seccomp_data *sd, unsigned nargs,
		       const uint32_t *mem, uint32_t *ret)
{
	const unsigned char *data = (const unsigned char *)sd;
	uint32_t k = f->k;

	if (BPF_MODE(f->code) == BPF_ABS && BPF_SIZE(f->code) == BPF_W &&
	    BPF_CLASS(f->code) == BPF_LD) {
		if (k > sizeof(*sd) - sizeof(*ret) || k % 4)
			return false;
		/* a value the caller does not know: the pointer, a later argument */
		if (k >= offsetof(struct seccomp_data, instruction_pointer) &&
		    (k < offsetof(struct seccomp_data, args) ||
		     (k - offsetof(struct seccomp_data, args)) / 8 >= nargs))
			return false;
		memcpy(ret, data + k, sizeof(*ret));
	} else if (BPF_MODE(f->code) == BPF_LEN && BPF_SIZE(f->code) == BPF_W) {
		*ret = sizeof(*sd);
	} else if (BPF_MODE(f->code) == BPF_IMM) {
		*ret = k;
	} else if (BPF_MODE(f->code) == BPF_MEM && k < BPF_MEMWORDS) {
		*ret = mem[k];
	} else {
		return false;
	}
	return true;
}

/* A = A op src, as the kernel's classic BPF computes it. Returns false for a division by zero. */
static bool alu(unsigned op, uint32_t *a, uint32_t src)
{
	switch (op) {
	case BPF_ADD: *a += src; break;
	case BPF_SUB: *a -= src; break;
	case BPF_MUL: *a *= src; break;
	case BPF_DIV: if (!src) return false; *a /= src; break;
	case BPF_MOD: if (!src) return false; *a %= src; break;
	case BPF_AND: *a &= src; break;
	case BPF_OR: *a |= src; break;
	case BPF_XOR: *a ^= src; break;
	case BPF_LSH: *a = src < 32 ? *a << src : 0; break;
	case BPF_RSH: *a = src < 32 ? *a >> src : 0; break;
	case BPF_NEG: *a = -*a; break;
	default: return false;
	}
	return true;
}

/*
 * The verdict of a sandbox's own filter on one call, computed here: the
 * classic BPF program runs on the struct seccomp_data the kernel gave it
 * (native arch, the call's number and arguments; the filters never look at
 * the instruction pointer). Only what the kernel's seccomp accepts is
 * interpreted (seccomp_check_filter: loads of the data, scratch memory,
 * ALU, jumps, returns); anything else, a load outside the data or a jump
 * out of the program means "cannot tell", so the caller falls back.
 * Hand-written: libseccomp exports programs but cannot run one, and this is
 * the one place that needs it.
 */
static bool run_filter(const struct sock_fprog *prog, const struct seccomp_data *sd,
		       unsigned nargs, uint32_t *ret)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = { 0 };

	for (unsigned pc = 0; pc < prog->len; pc++) {
		const struct sock_filter *f = &prog->filter[pc];
		uint32_t k = f->k, src = BPF_SRC(f->code) == BPF_X ? x : k;
		unsigned skip;

		switch (BPF_CLASS(f->code)) {
		case BPF_LD:
		case BPF_LDX: {
			uint32_t v;

			if (!load_value(f, sd, nargs, mem, &v))
				return false;
			if (BPF_CLASS(f->code) == BPF_LD)
				a = v;
			else
				x = v;
			break;
		}
		case BPF_ST:
		case BPF_STX:
			if (f->code != BPF_ST && f->code != BPF_STX)
				return false;
			if (k >= BPF_MEMWORDS)
				return false;
			mem[k] = BPF_CLASS(f->code) == BPF_ST ? a : x;
			break;
		case BPF_ALU:
			if (!alu(BPF_OP(f->code), &a, src))
				return false;
			break;
		case BPF_JMP:
			switch (BPF_OP(f->code)) {
			case BPF_JA: skip = k; break;
			case BPF_JEQ: skip = a == src ? f->jt : f->jf; break;
			case BPF_JGT: skip = a > src ? f->jt : f->jf; break;
			case BPF_JGE: skip = a >= src ? f->jt : f->jf; break;
			case BPF_JSET: skip = (a & src) ? f->jt : f->jf; break;
			default: return false;
			}
			if (skip >= prog->len - pc)
				return false;
			pc += skip;
			break;
		case BPF_RET:
			*ret = BPF_RVAL(f->code) == BPF_A ? a : k;
			return BPF_RVAL(f->code) == BPF_A || BPF_RVAL(f->code) == BPF_K;
		case BPF_MISC:
			if (BPF_MISCOP(f->code) == BPF_TAX)
				x = a;
			else if (BPF_MISCOP(f->code) == BPF_TXA)
				a = x;
			else
				return false;
			break;
		default:
			return false;
		}
	}
	return false; /* fell off the end: the kernel refuses such a program */
}

int sandbox_seccomp_verdict(const struct sock_fprog *prog, long nr, const uint64_t *args,
			    unsigned nargs, uint32_t *action)
{
	struct seccomp_data sd = { .nr = (int)nr, .arch = seccomp_arch_native() };

	if (!prog || !prog->filter || nargs > 6 || (nargs && !args))
		return -EINVAL;
	if (nargs)
		memcpy(sd.args, args, nargs * sizeof(sd.args[0]));
	return run_filter(prog, &sd, nargs, action) ? 0 : -EINVAL;
}

bool sandbox_seccomp_refuses(const struct sock_fprog *prog, long nr, const uint64_t *args,
			     unsigned nargs, int err)
{
	uint32_t action;

	return sandbox_seccomp_verdict(prog, nr, args, nargs, &action) == 0 &&
	       (action & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ERRNO &&
	       (int)(action & SECCOMP_RET_DATA) == err;
}

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
	 * Calls that set a file mode (argument `mode`), with O_CREAT or
	 * O_TMPFILE in argument `flags` when that is >= 0: each refused with
	 * either set-id bit (mknod makes regular files without any capability
	 * too). O_TMPFILE has no O_CREAT bit: an unnamed file made with a
	 * set-id mode and linked in through /proc/self/fd (linkat
	 * AT_SYMLINK_FOLLOW) kept its mode, an empty setuid-root file that a
	 * later write by host root (CAP_FSETID: an unsandboxed fs/writeFile)
	 * fills without clearing the bit.
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
	/* O_TMPFILE is __O_TMPFILE | O_DIRECTORY: its own bit alone. */
	static const scmp_datum_t create_flags[] = { O_CREAT, O_TMPFILE & ~O_DIRECTORY };
	int r = 0;

	r = r ?: seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prlimit64), 2,
				  SCMP_A0(SCMP_CMP_NE, 0), SCMP_A2(SCMP_CMP_NE, 0));
	for (size_t i = 0; i < ELEMENTSOF(by_pid) && r == 0; i++) {
		struct scmp_arg_cmp c = { by_pid[i].arg, SCMP_CMP_NE, 0, 0 };

		r = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), by_pid[i].nr, 1, &c);
	}
	for (size_t i = 0; i < ELEMENTSOF(set_mode) && r == 0; i++)
		for (size_t b = 0; b < ELEMENTSOF(setid_bits) && r == 0; b++)
			for (size_t f = 0; f < ELEMENTSOF(create_flags) && r == 0; f++) {
				struct scmp_arg_cmp c[2] = {
					{ set_mode[i].mode, SCMP_CMP_MASKED_EQ, setid_bits[b],
					  setid_bits[b] },
					{ (unsigned)set_mode[i].flags, SCMP_CMP_MASKED_EQ, create_flags[f],
					  create_flags[f] },
				};

				/* Without a flags argument one rule is enough. */
				if (set_mode[i].flags < 0 && f > 0)
					break;
				r = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), set_mode[i].nr,
							   set_mode[i].flags >= 0 ? 2 : 1, c);
			}
	/* openat2 and fchmodat2 pass modes the filter cannot check: ENOSYS -> libc falls back. */
	r = r ?: seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0);
	r = r ?: seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), NR_FCHMODAT2, 0);
	return r;
}

/*
 * A managed network (the command's own namespace holds only its proxy's
 * listeners): IP sockets are needed to reach them, and nothing else. A unix
 * socket would be a way around the namespace: a pathname socket is reached
 * through the filesystem (connect needs only write permission on the socket
 * inode; neither a read-only mount nor Landlock refuses it), so a readable
 * /run/docker.sock or any daemon's socket is egress the proxy never sees.
 * socket() is allowed for AF_INET and AF_INET6 only (as the reference's
 * proxy-routed filter); socketpair(AF_UNIX) stays allowed for pipes between
 * a command's own processes, but only connected stream kinds: a datagram
 * pair's member can still sendto() or connect() to any pathname datagram
 * socket (journald, /dev/log), a hole the reference leaves open. SOCK_RAW
 * is a datagram socket for AF_UNIX. `all_unix`
 * (dangerouslyAllowAllUnixSockets) gives back every unix socket.
 */
static int add_proxied_rules(scmp_filter_ctx ctx, bool all_unix)
{
	/* The kernel reads type as an int; its kind is the low 4 bits (SOCK_TYPE_MASK). */
	static const scmp_datum_t dgram_kinds[] = { SOCK_DGRAM, SOCK_RAW };
	int r = 0;

	/*
	 * libseccomp takes one comparison per argument and rule: every family
	 * but AF_INET (2) and AF_INET6 (10) as its own rule, and everything
	 * above AF_INET6 (a 64-bit compare: a family with high bits set is
	 * refused too, though the kernel would read it as an int).
	 */
	for (scmp_datum_t fam = 0; fam < AF_INET6 && r == 0; fam++)
		if (fam != AF_INET && !(all_unix && fam == AF_UNIX))
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1,
					     SCMP_A0(SCMP_CMP_EQ, fam));
	r = r ?: seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1,
				  SCMP_A0(SCMP_CMP_GT, AF_INET6));
	r = r ?: seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socketpair), 1,
				  SCMP_A0(SCMP_CMP_NE, AF_UNIX));
	for (size_t i = 0; !all_unix && i < ELEMENTSOF(dgram_kinds) && r == 0; i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socketpair), 1,
				     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, dgram_kinds[i]));
	return r;
}

enum net_mode { NET_OFF, NET_OPEN, NET_PROXIED, NET_PROXIED_ALL_UNIX };

static int build(enum net_mode net, bool allow_io_uring, struct sock_fprog *out)
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
	if (net == NET_PROXIED || net == NET_PROXIED_ALL_UNIX) {
		if (r >= 0)
			r = add_proxied_rules(ctx, net == NET_PROXIED_ALL_UNIX);
	} else if (net == NET_OFF) {
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
		/*
		 * Network on: still no VSOCK (the host's hypervisor channel). The
		 * kernel reads the family as an int: compare the low 32 bits only,
		 * or AF_VSOCK | 1 << 32 passes a 64-bit equality and is AF_VSOCK.
		 */
		if (r >= 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1,
					     SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffULL, AF_VSOCK));
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
	r = build(NET_OFF, false, &s->restricted);
	if (r >= 0)
		r = build(NET_OPEN, false, &s->open_net);
	if (r >= 0)
		r = build(NET_PROXIED, false, &s->proxied);
	if (r >= 0)
		r = build(NET_PROXIED_ALL_UNIX, false, &s->proxied_all_unix);
	if (r >= 0)
		r = build(NET_OFF, true, &s->fs_helper);
	if (r < 0)
		sandbox_seccomp_done(s);
	return r;
}

void sandbox_seccomp_done(struct sandbox_seccomp *s)
{
	free(s->restricted.filter);
	free(s->open_net.filter);
	free(s->proxied.filter);
	free(s->proxied_all_unix.filter);
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
