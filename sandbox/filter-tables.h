/* SPDX-License-Identifier: MIT */
/*
 * The syscalls every sandbox refuses, shared by the filter's builder
 * (filter-build.c, in the module) and its user-space judge (filter.c).
 * SCMP_SYS() is a compile-time number: no libseccomp call.
 */
#pragma once

#include <seccomp.h>

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

/* clang-format on */
