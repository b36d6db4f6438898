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
#include <netinet/in.h>
#include <stdbool.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroup.h"
#include "log.h"
#include "macro.h"
#include "netguard.h"

#define MAX_PORTS 8

#define MAP_NAME "uexec_ports"
#define MAP_ENTRIES 4096

struct netguard {
	int cgroup_fd;
	int map_fd;   /* the host-wide map of uexec listener ports, or -1 */
	uint16_t ports[MAX_PORTS];
	size_t n_ports;
	int held[2 * MAX_PORTS]; /* sockets holding the ports at the wildcard addresses */
	size_t n_held;
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
 * unescaped; with v1, cgroup v1 hierarchies too) until it returns nonzero;
 * returns that, or -errno.
 */
static int for_each_cgroup_mount(bool v1, int (*fn)(const char *root, const char *mnt, void *data),
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
		if (!sep || (strncmp(sep + 3, "cgroup2 ", 8) != 0 &&
			     !(v1 && strncmp(sep + 3, "cgroup ", 7) == 0)))
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
	int r = for_each_cgroup_mount(true, add_mount, &l);

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

/*
 * The directory of this process's cgroup in the cgroup2 hierarchy; the
 * parent of uexec-<pid>.server when uexec moved itself there (cgroup.h).
 */
int netguard_own_cgroup_dir(char *out, size_t outsz, char *err, size_t errsz)
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
	int r = for_each_cgroup_mount(false, take_first, &m);

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
	{
		char self[64];
		char *slash = strrchr(out, '/');

		snprintf(self, sizeof(self), "uexec-%d.server", (int)getpid());
		if (slash && strcmp(slash + 1, self) == 0)
			*slash = 0;
	}
	return 0;
}

/* Removes guards left by uexec servers that are gone, killing what is left in them. */
static void remove_stale(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[4096 + 256];
		unsigned long pid;
		int end = 0, lock_fd;

		if (sscanf(de->d_name, "uexec-%lu.sandbox%n", &pid, &end) != 1 ||
		    de->d_name[end] != 0 || pid == 0 || pid > INT32_MAX)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		/*
		 * A live guard's uexec holds its lock (see below), from any PID
		 * namespace; kept while purging so that two sweeps do not race.
		 */
		lock_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (lock_fd < 0)
			continue;
		if (flock(lock_fd, LOCK_EX | LOCK_NB) < 0 ||
		    ((pid_t)pid != getpid() && (kill((pid_t)pid, 0) == 0 || errno != ESRCH))) {
			close(lock_fd);
			continue;
		}
		/* Its processes' leaves, and any process still in them, go with it. */
		if (sandbox_cg_purge(path) == 0)
			log_info("Removed the stale listener guard %s", path);
		close(lock_fd);
	}
	closedir(d);
}

/*
 * The connect (and bind) filter: refuse this server's ports, and (with
 * map_fd) every port in the host-wide map, so that no uexec on the host can
 * be reached, nor its port taken at another address, from a sandbox with
 * network access, whichever server started it.
 */
/*
 * The filter's instructions into insns (room for MAX_PORTS + 16): the
 * port of the call (post_bind: the port bound) denied when it is one of
 * ports or in the host-wide map (map_fd >= 0), allowed otherwise. Returns
 * the instruction count.
 */
static size_t build_prog(bool post_bind, const uint16_t *ports, size_t n, int map_fd,
			 struct bpf_insn *insns)
{
	size_t jeq[MAX_PORTS + 1], n_jeq = 0, deny;
	size_t i = 0;

	if (post_bind) {
		/* r2 = ctx->src_port (host byte order), the port bound, chosen by the kernel too */
		insns[i++] = (struct bpf_insn){ .code = BPF_LDX | BPF_W | BPF_MEM,
						.dst_reg = BPF_REG_2, .src_reg = BPF_REG_1,
						.off = offsetof(struct bpf_sock, src_port) };
		/* to network byte order in the low 16 bits, as user_port and the map's keys */
		insns[i++] = (struct bpf_insn){ .code = BPF_ALU | BPF_END | BPF_TO_BE,
						.dst_reg = BPF_REG_2, .imm = 16 };
	} else {
		/* r2 = ctx->user_port (network byte order in the low 16 bits) */
		insns[i++] = (struct bpf_insn){ .code = BPF_LDX | BPF_W | BPF_MEM,
						.dst_reg = BPF_REG_2, .src_reg = BPF_REG_1,
						.off = offsetof(struct bpf_sock_addr, user_port) };
	}
	for (size_t p = 0; p < n; p++) {
		jeq[n_jeq++] = i; /* if r2 == port goto deny */
		insns[i++] = (struct bpf_insn){ .code = BPF_JMP | BPF_JEQ | BPF_K,
						.dst_reg = BPF_REG_2, .imm = htons(ports[p]) };
	}
	if (map_fd >= 0) {
		/* *(u32 *)(fp - 4) = r2; r0 = map_lookup_elem(map, fp - 4); if r0 goto deny */
		insns[i++] = (struct bpf_insn){ .code = BPF_STX | BPF_W | BPF_MEM,
						.dst_reg = BPF_REG_10, .src_reg = BPF_REG_2,
						.off = -4 };
		insns[i++] = (struct bpf_insn){ .code = BPF_ALU64 | BPF_MOV | BPF_X,
						.dst_reg = BPF_REG_2, .src_reg = BPF_REG_10 };
		insns[i++] = (struct bpf_insn){ .code = BPF_ALU64 | BPF_ADD | BPF_K,
						.dst_reg = BPF_REG_2, .imm = -4 };
		insns[i++] = (struct bpf_insn){ .code = BPF_LD | BPF_DW | BPF_IMM,
						.dst_reg = BPF_REG_1, .src_reg = BPF_PSEUDO_MAP_FD,
						.imm = map_fd };
		insns[i++] = (struct bpf_insn){ 0 };
		insns[i++] = (struct bpf_insn){ .code = BPF_JMP | BPF_CALL,
						.imm = BPF_FUNC_map_lookup_elem };
		jeq[n_jeq++] = i;
		insns[i++] = (struct bpf_insn){ .code = BPF_JMP | BPF_JNE | BPF_K,
						.dst_reg = BPF_REG_0, .imm = 0 };
	}
	insns[i++] = (struct bpf_insn){ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0,
					.imm = 1 };
	insns[i++] = (struct bpf_insn){ .code = BPF_JMP | BPF_EXIT };
	deny = i;
	insns[i++] = (struct bpf_insn){ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0,
					.imm = 0 };
	insns[i++] = (struct bpf_insn){ .code = BPF_JMP | BPF_EXIT };
	for (size_t k = 0; k < n_jeq; k++)
		insns[jeq[k]].off = (int16_t)(deny - jeq[k] - 1);
	return i;
}

static int load_prog(enum bpf_attach_type type, const uint16_t *ports, size_t n, int map_fd,
		     char *err, size_t errsz)
{
	bool post_bind = type == BPF_CGROUP_INET4_POST_BIND || type == BPF_CGROUP_INET6_POST_BIND;
	struct bpf_insn insns[MAX_PORTS + 16];
	char vlog[2048] = "";
	union bpf_attr attr;
	size_t i = build_prog(post_bind, ports, n, map_fd, insns);
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = post_bind ? BPF_PROG_TYPE_CGROUP_SOCK : BPF_PROG_TYPE_CGROUP_SOCK_ADDR;
	attr.expected_attach_type = type;
	attr.insns = (uintptr_t)insns;
	attr.insn_cnt = (uint32_t)i;
	attr.license = (uintptr_t) "Dual MIT/GPL";
	attr.log_buf = (uintptr_t)vlog;
	attr.log_size = sizeof(vlog);
	attr.log_level = 1;
	snprintf(attr.prog_name, sizeof(attr.prog_name), "uexec_guard_%c%c",
		 post_bind ? 'p'
		 : type == BPF_CGROUP_INET4_BIND || type == BPF_CGROUP_INET6_BIND ? 'b'
								       : 'c',
		 type == BPF_CGROUP_INET4_CONNECT || type == BPF_CGROUP_INET4_BIND ||
				 type == BPF_CGROUP_INET4_POST_BIND
			 ? '4'
			 : '6');
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

/* The host-wide port map, found by name among the kernel's maps; -errno if none. */
static int find_map(void)
{
	uint32_t id = 0;

	for (;;) {
		union bpf_attr attr = { .start_id = id };
		struct bpf_map_info info = { 0 };
		int fd;

		if (sys_bpf(BPF_MAP_GET_NEXT_ID, &attr) < 0)
			return -errno; /* ENOENT: no more maps */
		id = attr.next_id;
		memset(&attr, 0, sizeof(attr));
		attr.map_id = id;
		fd = sys_bpf(BPF_MAP_GET_FD_BY_ID, &attr);
		if (fd < 0)
			continue; /* gone meanwhile */
		memset(&attr, 0, sizeof(attr));
		attr.info.bpf_fd = (uint32_t)fd;
		attr.info.info_len = sizeof(info);
		attr.info.info = (uintptr_t)&info;
		if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &attr) == 0 && info.type == BPF_MAP_TYPE_HASH &&
		    info.key_size == 4 && info.value_size == 4 && strcmp(info.name, MAP_NAME) == 0)
			return fd;
		close(fd);
	}
}

static int map_op(int cmd, int map_fd, const void *key, void *value, uint64_t flags)
{
	union bpf_attr attr = { 0 };

	attr.map_fd = (uint32_t)map_fd;
	attr.key = (uintptr_t)key;
	attr.value = (uintptr_t)value;
	attr.flags = flags;
	return sys_bpf(cmd, &attr) < 0 ? -errno : 0;
}

/* Forgets ports of servers that are gone (killed without cleaning up). */
static void prune_map(int map_fd)
{
	static uint32_t keys[MAP_ENTRIES];
	size_t n = 0;
	uint32_t k, *prev = NULL;

	while (n < MAP_ENTRIES) {
		union bpf_attr attr = { 0 };

		attr.map_fd = (uint32_t)map_fd;
		attr.key = (uintptr_t)prev;
		attr.next_key = (uintptr_t)&k;
		if (sys_bpf(BPF_MAP_GET_NEXT_KEY, &attr) < 0)
			break;
		keys[n] = k;
		prev = &keys[n++];
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t pid;

		if (map_op(BPF_MAP_LOOKUP_ELEM, map_fd, &keys[i], &pid, 0) == 0 && pid > 0 &&
		    kill((pid_t)pid, 0) < 0 && errno == ESRCH)
			(void)map_op(BPF_MAP_DELETE_ELEM, map_fd, &keys[i], NULL, 0);
	}
}

/*
 * Finds or creates the host-wide map under a lock (two servers starting
 * together must not create two), prunes it and adds this server's ports.
 * Returns the map fd or -errno; the guard then covers this server only.
 */
static int join_map(const uint16_t *ports, size_t n, char *err, size_t errsz)
{
	int lock, fd;

	lock = open(NETGUARD_LOCK_PATH, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock < 0 || flock(lock, LOCK_EX) < 0) {
		snprintf(err, errsz, "%s: %s", NETGUARD_LOCK_PATH, strerror(errno));
		if (lock >= 0)
			close(lock);
		return -errno;
	}
	fd = find_map();
	if (fd < 0) {
		union bpf_attr attr = { 0 };

		attr.map_type = BPF_MAP_TYPE_HASH;
		attr.key_size = 4;
		attr.value_size = 4;
		attr.max_entries = MAP_ENTRIES;
		snprintf(attr.map_name, sizeof(attr.map_name), "%s", MAP_NAME);
		fd = sys_bpf(BPF_MAP_CREATE, &attr);
		if (fd < 0) {
			fd = -errno;
			snprintf(err, errsz, "creating the BPF port map: %s", strerror(errno));
		}
	} else {
		prune_map(fd);
	}
	for (size_t i = 0; fd >= 0 && i < n; i++) {
		uint32_t key = htons(ports[i]), pid = (uint32_t)getpid();
		int r = map_op(BPF_MAP_UPDATE_ELEM, fd, &key, &pid, BPF_ANY);

		if (r < 0) {
			snprintf(err, errsz, "adding port %u to the BPF port map: %s", ports[i],
				 strerror(-r));
			close(fd);
			fd = r;
		}
	}
	close(lock); /* releases the lock */
	return fd;
}

/*
 * Binds each port at the wildcard address of each family (IPv6 only: no
 * mapped IPv4), without listening, for the guard's life. A listen() on an
 * unbound socket is bound by the kernel to the wildcard address and an
 * ephemeral port, and no cgroup hook sees it: the port held there cannot be
 * chosen (a v6-only [::]:P conflicts with nothing of uexec's 127.0.0.1:P
 * otherwise). EADDRINUSE is the other good outcome: uexec's own listener
 * already covers that wildcard (0.0.0.0:P beside 127.0.0.1:P). Anything else
 * (no IPv6 on the host) leaves nothing to hold.
 */
static void hold_ports(struct netguard *g)
{
	for (size_t i = 0; i < g->n_ports; i++) {
		for (int f = 0; f < 2; f++) {
			int family = f ? AF_INET6 : AF_INET, one = 1;
			struct sockaddr_in6 a6 = { .sin6_family = AF_INET6,
						   .sin6_port = htons(g->ports[i]) };
			struct sockaddr_in a4 = { .sin_family = AF_INET,
						  .sin_port = htons(g->ports[i]) };
			int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

			if (fd < 0)
				continue;
			if ((family == AF_INET6 &&
			     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0) ||
			    (family == AF_INET6 ? bind(fd, (struct sockaddr *)&a6, sizeof(a6))
						: bind(fd, (struct sockaddr *)&a4, sizeof(a4))) < 0 ||
			    g->n_held >= ELEMENTSOF(g->held)) {
				if (errno != EADDRINUSE && errno != EADDRNOTAVAIL)
					log_debug_errno(-errno, "Listener guard: not holding port %u "
							       "(IPv%d wildcard)",
							g->ports[i], f ? 6 : 4);
				close(fd);
				continue;
			}
			g->held[g->n_held++] = fd;
		}
	}
}

/* The filter loaded and attached to g's cgroup for each hook. Returns 0 or -errno with err. */
static int attach_progs(struct netguard *g, char *err, size_t errsz)
{
	/*
	 * bind too: a sandbox listening on a guarded port at another address
	 * (uexec on 127.0.0.1:P, the sandbox on [::1]:P or 127.0.0.2:P) took
	 * the connections of clients that reach the server as `localhost` (and
	 * their bearer tokens), or the port of a uexec restarting meanwhile.
	 */
	/*
	 * bind(port 0) asks for no port and gets one the kernel chooses, which
	 * may be P at another address: post_bind sees the port bound. A
	 * listen() on an unbound socket binds in the kernel without either
	 * hook, at the wildcard address: hold_ports() keeps those taken.
	 */
	static const enum bpf_attach_type types[] = {
		BPF_CGROUP_INET4_CONNECT,   BPF_CGROUP_INET6_CONNECT,
		BPF_CGROUP_INET4_BIND,	    BPF_CGROUP_INET6_BIND,
		BPF_CGROUP_INET4_POST_BIND, BPF_CGROUP_INET6_POST_BIND,
	};
	int r;

	for (size_t t = 0; t < ELEMENTSOF(types); t++) {
		union bpf_attr attr;
		int prog = load_prog(types[t], g->ports, g->n_ports, g->map_fd, err, errsz);

		if (prog < 0)
			return prog;
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
			return r;
		}
	}
	return 0;
}

int netguard_new(const uint16_t *ports, size_t n_ports, struct netguard **ret, char *err,
		 size_t errsz)
{
	char dir[4096];
	struct netguard *g;
	int r;

	if (n_ports == 0 || n_ports > MAX_PORTS) {
		snprintf(err, errsz, "between 1 and %d ports", MAX_PORTS);
		return -EINVAL;
	}
	r = netguard_own_cgroup_dir(dir, sizeof(dir), err, errsz);
	if (r < 0)
		return r;
	remove_stale(dir);

	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->cgroup_fd = -1;
	g->map_fd = -1;
	memcpy(g->ports, ports, n_ports * sizeof(*ports));
	g->n_ports = n_ports;
	{
		char merr[256];

		g->map_fd = join_map(ports, n_ports, merr, sizeof(merr));
		if (g->map_fd < 0)
			log_warning("Listener guard: %s; only this server's port is guarded", merr);
	}
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
	/* Held for the server's life: the sweeps of other servers (any PID namespace) spare it. */
	if (flock(g->cgroup_fd, LOCK_EX | LOCK_NB) < 0) {
		r = -errno;
		snprintf(err, errsz, "%s is held by another uexec: %s", g->path, strerror(errno));
		g->path[0] = 0; /* not ours to remove */
		goto fail;
	}
	r = attach_progs(g, err, errsz);
	if (r < 0)
		goto fail;
	hold_ports(g);
	*ret = g;
	return 0;
fail:
	netguard_free(g);
	return r;
}

size_t netguard_held_fds(const struct netguard *g, int *fds, size_t max)
{
	size_t n = 0;

	for (; g && n < g->n_held && n < max; n++)
		fds[n] = g->held[n];
	return n;
}

int netguard_adopt(int cgroup_fd, const uint16_t *ports, size_t n_ports, const int *held,
		   size_t n_held, struct netguard **ret, char *err, size_t errsz)
{
	char link[64], merr[256];
	struct netguard *g;
	ssize_t n;

	if (n_ports == 0 || n_ports > MAX_PORTS || n_held > 2 * MAX_PORTS) {
		snprintf(err, errsz, "between 1 and %d ports, 2 sockets each", MAX_PORTS);
		return -EINVAL;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", cgroup_fd);
	n = readlink(link, g->path, sizeof(g->path) - 1);
	if (n <= 0 || (size_t)n >= sizeof(g->path) - 1) {
		snprintf(err, errsz, "cannot read the guard cgroup's path");
		free(g);
		return -EBADF;
	}
	g->path[n] = 0;
	/* Its flock and its attached programs came along with the open file description. */
	g->cgroup_fd = cgroup_fd;
	memcpy(g->ports, ports, n_ports * sizeof(*ports));
	g->n_ports = n_ports;
	g->map_fd = join_map(ports, n_ports, merr, sizeof(merr));
	if (g->map_fd < 0)
		log_warning("Listener guard: %s; only this server's port is guarded", merr);
	/* The sockets handed over keep the ports held across execve; without them, hold again. */
	for (size_t k = 0; k < n_held; k++)
		g->held[g->n_held++] = held[k];
	if (!n_held)
		hold_ports(g);
	*ret = g;
	return 0;
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
	int r;

	if (!g)
		return;
	/*
	 * The server has killed its process groups; whatever left them (setsid
	 * and double fork) is still in the cgroup: cgroup.kill (Linux 5.14)
	 * ends it, then the directory goes once the last one is reaped.
	 */
	/* Our ports leave the host-wide map (if still ours: a restarted server may own them). */
	for (size_t i = 0; g->map_fd >= 0 && i < g->n_ports; i++) {
		uint32_t key = htons(g->ports[i]), pid;

		if (map_op(BPF_MAP_LOOKUP_ELEM, g->map_fd, &key, &pid, 0) == 0 &&
		    pid == (uint32_t)getpid())
			(void)map_op(BPF_MAP_DELETE_ELEM, g->map_fd, &key, NULL, 0);
	}
	safe_close(g->map_fd);
	safe_close(g->cgroup_fd);
	for (size_t i = 0; i < g->n_held; i++)
		safe_close(g->held[i]);
	/* cgroup.kill covers the per-process leaves below it too (cgroup.h). */
	r = g->path[0] ? sandbox_cg_purge(g->path) : 0;
	if (r < 0)
		log_warning_errno(r, "Cannot remove the listener guard cgroup %s (processes left in it?)",
				  g->path);
	free(g);
}
