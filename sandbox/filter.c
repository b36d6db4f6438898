/* SPDX-License-Identifier: MIT */
/*
 * Seccomp filters for sandboxed processes, after they are built
 * (filter-build.c, libseccomp, in the module uexec-seccomp.so): installing
 * one, running one in user space to judge a denial, and freeing them.
 * Default action: allow; listed syscalls fail with EPERM (as the reference's
 * filter does), so a denied operation is reported rather than killing the
 * process. Syscalls from other architectures (int 0x80, x32) are killed:
 * libseccomp's bad-arch action.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
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

#include "filter-tables.h"
#include "filter.h"
#include "macro.h"

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

/*
 * The native architecture's audit number, which the programs' first check
 * compares (libseccomp's seccomp_arch_native() without libseccomp: the
 * builder is a module that is not loaded when this runs).
 */
#if defined(__x86_64__) && !defined(__ILP32__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__i386__)
#define NATIVE_ARCH AUDIT_ARCH_I386
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#elif defined(__arm__)
#define NATIVE_ARCH AUDIT_ARCH_ARM
#elif defined(__riscv) && __riscv_xlen == 64
#define NATIVE_ARCH AUDIT_ARCH_RISCV64
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NATIVE_ARCH AUDIT_ARCH_PPC64LE
#elif defined(__s390x__)
#define NATIVE_ARCH AUDIT_ARCH_S390X
#else
#error "the seccomp judge needs this architecture's AUDIT_ARCH_* (sandbox/filter.c)"
#endif

int sandbox_seccomp_verdict(const struct sock_fprog *prog, long nr, const uint64_t *args,
			    unsigned nargs, uint32_t *action)
{
	struct seccomp_data sd = { .nr = (int)nr, .arch = NATIVE_ARCH };

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
