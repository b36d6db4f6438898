/* SPDX-License-Identifier: MIT */
/*
 * The listener guard. See netguard.h.
 *
 * The two programs are a handful of instructions built here with the raw
 * bpf() syscall: libbpf and a BPF compiler would add a build dependency and
 * an ELF loader for what is a port comparison.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "netguard.h"

#define MAX_PORTS 8

struct netguard {
	int cgroup_fd;
	char path[4096];
};

static int sys_bpf(int cmd, union bpf_attr *attr)
{
	return (int)syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

/* Unescapes mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = 0;
}

/*
 * Calls fn(root, mountpoint, data) for each cgroup2 mount in mountinfo (both
 * unescaped) until it returns nonzero; returns that, or -errno.
 */
static int for_each_cgroup2_mount(int (*fn)(const char *root, const char *mnt, void *data),
				  void *data)
{
	char line[8192];
	FILE *f;
	int r = 0;

	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	while (r == 0 && fgets(line, sizeof(line), f)) {
		char *fields[10], *sep, *save = NULL, *tok;
		int n = 0;

		sep = strstr(line, " - ");
		if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0)
			continue;
		*sep = 0;
		for (tok = strtok_r(line, " ", &save); tok && n < 10; tok = strtok_r(NULL, " ", &save))
			fields[n++] = tok;
		if (n < 5)
			continue;
		unescape(fields[3]);
		unescape(fields[4]);
		r = fn(fields[3], fields[4], data);
	}
	fclose(f);
	return r;
}

struct first_mount {
	char root[4096], mnt[4096];
};

static int take_first(const char *root, const char *mnt, void *data)
{
	struct first_mount *m = data;

	snprintf(m->root, sizeof(m->root), "%s", root);
	snprintf(m->mnt, sizeof(m->mnt), "%s", mnt);
	return 1;
}

struct mount_list {
	char **v;
	size_t n;
};

static int add_mount(const char *root, const char *mnt, void *data)
{
	struct mount_list *l = data;
	char **v = realloc(l->v, (l->n + 2) * sizeof(char *));

	(void)root;
	if (!v)
		return -ENOMEM;
	l->v = v;
	if (!(v[l->n] = strdup(mnt)))
		return -ENOMEM;
	v[++l->n] = NULL;
	return 0;
}

int netguard_cgroup_mounts(char ***ret, size_t *ret_n)
{
	struct mount_list l = { NULL, 0 };
	int r = for_each_cgroup2_mount(add_mount, &l);

	if (r < 0) {
		for (size_t i = 0; i < l.n; i++)
			free(l.v[i]);
		free(l.v);
		return r;
	}
	*ret = l.v;
	*ret_n = l.n;
	return 0;
}

/* The directory of this process's cgroup in the cgroup2 hierarchy. */
static int own_cgroup_dir(char *out, size_t outsz, char *err, size_t errsz)
{
	char line[8192], rel[8192] = "";
	FILE *f;

	f = fopen("/proc/self/cgroup", "re");
	if (!f) {
		snprintf(err, errsz, "/proc/self/cgroup: %s", strerror(errno));
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = 0;
			snprintf(rel, sizeof(rel), "%s", line + 3);
			break;
		}
	}
	fclose(f);
	if (!rel[0]) {
		snprintf(err, errsz, "no cgroup v2 membership in /proc/self/cgroup");
		return -ENOENT;
	}

	struct first_mount m = { "", "" };
	int r = for_each_cgroup2_mount(take_first, &m);

	if (r < 0) {
		snprintf(err, errsz, "/proc/self/mountinfo: %s", strerror(-r));
		return r;
	}
	if (!m.mnt[0]) {
		snprintf(err, errsz, "no cgroup2 file system mounted");
		return -ENOENT;
	}
	/* The mount shows the hierarchy from `root` down (a container's cgroup namespace). */
	size_t rl = strcmp(m.root, "/") == 0 ? 0 : strlen(m.root);

	if (rl && (strncmp(rel, m.root, rl) != 0 || (rel[rl] && rel[rl] != '/'))) {
		snprintf(err, errsz, "own cgroup %s is outside the cgroup2 mount's root %s", rel, m.root);
		return -ENOENT;
	}
	if ((size_t)snprintf(out, outsz, "%s%s", m.mnt, strcmp(rel + rl, "/") == 0 ? "" : rel + rl) >=
	    outsz) {
		snprintf(err, errsz, "cgroup path too long");
		return -ENAMETOOLONG;
	}
	return 0;
}

/* Removes guards left by uexec servers that are gone (empty ones only). */
static void remove_stale(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[4096 + 256];
		unsigned long pid;
		int end = 0;

		if (sscanf(de->d_name, "uexec-%lu.sandbox%n", &pid, &end) != 1 ||
		    de->d_name[end] != 0 || pid == 0 || pid > INT32_MAX)
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (rmdir(path) == 0)
			log_info("Removed the stale listener guard %s", path);
	}
	closedir(d);
}

static int load_prog(enum bpf_attach_type type, const uint16_t *ports, size_t n, char *err,
		     size_t errsz)
{
	struct bpf_insn insns[2 * MAX_PORTS + 6];
	char vlog[2048] = "";
	union bpf_attr attr;
	size_t i = 0;
	int fd;

	/* r2 = ctx->user_port (network byte order in the low 16 bits) */
	insns[i++] = (struct bpf_insn){ .code = BPF_LDX | BPF_W | BPF_MEM, .dst_reg = BPF_REG_2,
					.src_reg = BPF_REG_1,
					.off = offsetof(struct bpf_sock_addr, user_port) };
	for (size_t p = 0; p < n; p++)
		/* if r2 == port goto deny (the jump lands after the allow's two instructions) */
		insns[i++] = (struct bpf_insn){ .code = BPF_JMP | BPF_JEQ | BPF_K,
						.dst_reg = BPF_REG_2,
						.off = (int16_t)(n - p - 1 + 2),
						.imm = htons(ports[p]) };
	insns[i++] = (struct bpf_insn){ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0,
					.imm = 1 };
	insns[i++] = (struct bpf_insn){ .code = BPF_JMP | BPF_EXIT };
	insns[i++] = (struct bpf_insn){ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0,
					.imm = 0 };
	insns[i++] = (struct bpf_insn){ .code = BPF_JMP | BPF_EXIT };

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_CGROUP_SOCK_ADDR;
	attr.expected_attach_type = type;
	attr.insns = (uintptr_t)insns;
	attr.insn_cnt = (uint32_t)i;
	attr.license = (uintptr_t) "Dual MIT/GPL";
	attr.log_buf = (uintptr_t)vlog;
	attr.log_size = sizeof(vlog);
	attr.log_level = 1;
	snprintf(attr.prog_name, sizeof(attr.prog_name), "uexec_guard%c",
		 type == BPF_CGROUP_INET4_CONNECT ? '4' : '6');
	fd = sys_bpf(BPF_PROG_LOAD, &attr);
	if (fd < 0) {
		int e = errno;

		vlog[strcspn(vlog, "\n")] = 0;
		snprintf(err, errsz, "loading the BPF connect filter: %s%s%s", strerror(e),
			 vlog[0] ? ": " : "", vlog);
		return -e;
	}
	return fd;
}

int netguard_new(const uint16_t *ports, size_t n_ports, struct netguard **ret, char *err,
		 size_t errsz)
{
	static const enum bpf_attach_type types[] = { BPF_CGROUP_INET4_CONNECT,
						      BPF_CGROUP_INET6_CONNECT };
	char dir[4096];
	struct netguard *g;
	int r;

	if (n_ports == 0 || n_ports > MAX_PORTS) {
		snprintf(err, errsz, "between 1 and %d ports", MAX_PORTS);
		return -EINVAL;
	}
	r = own_cgroup_dir(dir, sizeof(dir), err, errsz);
	if (r < 0)
		return r;
	remove_stale(dir);

	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->cgroup_fd = -1;
	if ((size_t)snprintf(g->path, sizeof(g->path), "%s/uexec-%d.sandbox", dir, (int)getpid()) >=
	    sizeof(g->path)) {
		snprintf(err, errsz, "cgroup path too long");
		free(g);
		return -ENAMETOOLONG;
	}
	if (mkdir(g->path, 0700) < 0 && errno != EEXIST) {
		r = -errno;
		snprintf(err, errsz, "mkdir %s: %s", g->path, strerror(errno));
		free(g);
		return r;
	}
	g->cgroup_fd = open(g->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (g->cgroup_fd < 0) {
		r = -errno;
		snprintf(err, errsz, "open %s: %s", g->path, strerror(errno));
		goto fail;
	}
	for (size_t t = 0; t < ELEMENTSOF(types); t++) {
		union bpf_attr attr;
		int prog = load_prog(types[t], ports, n_ports, err, errsz);

		if (prog < 0) {
			r = prog;
			goto fail;
		}
		memset(&attr, 0, sizeof(attr));
		attr.target_fd = (uint32_t)g->cgroup_fd;
		attr.attach_bpf_fd = (uint32_t)prog;
		attr.attach_type = types[t];
		attr.attach_flags = BPF_F_ALLOW_MULTI;
		r = sys_bpf(BPF_PROG_ATTACH, &attr) < 0 ? -errno : 0;
		close(prog); /* the cgroup holds the program now */
		if (r < 0) {
			snprintf(err, errsz, "attaching the BPF connect filter to %s: %s", g->path,
				 strerror(-r));
			goto fail;
		}
	}
	*ret = g;
	return 0;
fail:
	netguard_free(g);
	return r;
}

int netguard_cgroup_fd(const struct netguard *g)
{
	return g ? g->cgroup_fd : -1;
}

const char *netguard_path(const struct netguard *g)
{
	return g ? g->path : "";
}

void netguard_free(struct netguard *g)
{
	int fd;

	if (!g)
		return;
	/*
	 * The server has killed its process groups; whatever left them (setsid
	 * and double fork) is still in the cgroup: cgroup.kill (Linux 5.14)
	 * ends it, then the directory goes once the last one is reaped.
	 */
	fd = g->cgroup_fd >= 0 ? openat(g->cgroup_fd, "cgroup.kill", O_WRONLY | O_CLOEXEC) : -1;
	if (fd >= 0) {
		(void)!write(fd, "1", 1);
		close(fd);
	}
	safe_close(g->cgroup_fd);
	for (int i = 0; i < 100 && rmdir(g->path) < 0 && errno == EBUSY; i++)
		usleep(2000);
	if (rmdir(g->path) < 0 && errno != ENOENT)
		log_warning_errno(errno, "Cannot remove the listener guard cgroup %s (processes left in it?)",
				  g->path);
	free(g);
}
