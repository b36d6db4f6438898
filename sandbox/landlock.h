/* SPDX-License-Identifier: MIT */
/*
 * Landlock constants and syscalls newer than Debian 12's headers (kernel ABI;
 * features are probed with LANDLOCK_CREATE_RULESET_VERSION, never assumed).
 */
#pragma once

#include <linux/landlock.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LL_FS_EXECUTE (1ULL << 0)
#define LL_FS_WRITE_FILE (1ULL << 1)
#define LL_FS_READ_FILE (1ULL << 2)
#define LL_FS_READ_DIR (1ULL << 3)
#define LL_FS_REMOVE_DIR (1ULL << 4)
#define LL_FS_REMOVE_FILE (1ULL << 5)
#define LL_FS_MAKE_CHAR (1ULL << 6)
#define LL_FS_MAKE_DIR (1ULL << 7)
#define LL_FS_MAKE_REG (1ULL << 8)
#define LL_FS_MAKE_SOCK (1ULL << 9)
#define LL_FS_MAKE_FIFO (1ULL << 10)
#define LL_FS_MAKE_BLOCK (1ULL << 11)
#define LL_FS_MAKE_SYM (1ULL << 12)
#define LL_FS_REFER (1ULL << 13)    /* ABI 2 */
#define LL_FS_TRUNCATE (1ULL << 14) /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */

#define LL_NET_BIND_TCP (1ULL << 0)    /* ABI 4 */
#define LL_NET_CONNECT_TCP (1ULL << 1) /* ABI 4 */

#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ULL << 1)               /* ABI 6 */

/* landlock_restrict_self flags (ABI 7) */
#define LL_RESTRICT_SELF_LOG_NEW_EXEC_ON (1U << 1)

#define LL_FS_READ (LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR)

/* The ruleset attribute as of ABI 6 (the kernel accepts the larger struct). */
struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

struct ll_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

/* Every filesystem right the given ABI knows. */
static inline uint64_t ll_fs_all(int abi)
{
	uint64_t a = (LL_FS_MAKE_SYM << 1) - 1; /* ABI 1 */

	if (abi >= 2)
		a |= LL_FS_REFER;
	if (abi >= 3)
		a |= LL_FS_TRUNCATE;
	if (abi >= 5)
		a |= LL_FS_IOCTL_DEV;
	return a;
}

static inline int ll_create_ruleset(const struct ll_ruleset_attr *attr, size_t size, uint32_t flags)
{
	return (int)syscall(SYS_landlock_create_ruleset, attr, size, flags);
}

static inline int ll_add_rule(int fd, int type, const void *attr, uint32_t flags)
{
	return (int)syscall(SYS_landlock_add_rule, fd, type, attr, flags);
}

static inline int ll_restrict_self(int fd, uint32_t flags)
{
	return (int)syscall(SYS_landlock_restrict_self, fd, flags);
}
