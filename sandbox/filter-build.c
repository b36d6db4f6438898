/* SPDX-License-Identifier: MIT */
/*
 * The seccomp programs built with libseccomp (filter.h's
 * sandbox_seccomp_build()), once, by the start-up probe. Built into the
 * module uexec-seccomp.so, which uexec opens for the probe and closes after
 * it (src/main/seccomp-load.c), so that libseccomp is not kept for the
 * server's life, and into the tests, which call it directly.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "filter-tables.h"
#include "filter.h"
#include "macro.h"

/* clang-format off */
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
	if (r < 0) {
		/* sandbox_seccomp_done() is filter.c's, not the module's */
		free(s->restricted.filter);
		free(s->open_net.filter);
		free(s->proxied.filter);
		free(s->proxied_all_unix.filter);
		free(s->fs_helper.filter);
		memset(s, 0, sizeof(*s));
	}
	return r;
}

#ifdef UEXEC_SECCOMP_MODULE
__attribute__((visibility("default"))) const struct sandbox_seccomp_module uexec_seccomp_module = {
	.abi = SANDBOX_SECCOMP_MODULE_ABI,
	.build = sandbox_seccomp_build,
};
#endif
