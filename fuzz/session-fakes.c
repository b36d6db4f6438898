/* SPDX-License-Identifier: MIT */
/*
 * Link-time fakes for the session fuzz target: the parts of the server that
 * touch the outside world (spawn.c, proc.c,
 * the sandbox plan, the kernel's random numbers) replaced by small stand-ins
 * that record what they were asked to do. src/ itself is compiled unchanged.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "conn.h"
#include "proc.h"
#include "proxy.h"
#include "sandbox.h"
#include "server.h"
#include "session-fakes.h"
#include "spawn.h"

struct fake_stats fake_stats;

/* ---- spawn.c: no process is ever started ---- */

int spawn_process(const struct spawn_args *a, struct spawn_result *ret, const char **ret_step)
{
	size_t n;

	/* What process/start hands over must be well-formed. */
	if (!a->argv || !a->argv[0] || !a->envp || !a->candidates)
		abort();
	for (n = 0; a->envp[n]; n++)
		if (!strchr(a->envp[n], '='))
			abort();
	for (n = 0; a->candidates[n]; n++)
		if (!a->candidates[n][0])
			abort();
	fake_stats.spawns++;
	return -ENOENT;
}

const char *spawn_self_path(void)
{
	return NULL;
}

/*
 * ---- sandbox.c: a host that cannot enforce any policy ----
 * sandbox_policy_parse() (sandbox/policy.c, no I/O) is the real one; building
 * a plan would probe paths and create mount points, so it is refused here the
 * way the real code refuses on a host without Landlock/seccomp.
 */

int sandbox_plan_new(const struct sandbox_policy *p, const struct sandbox_features *f,
		     int fs_helper_fd, struct sandbox_plan **ret, char *err, size_t errsz)
{
	if (!p || p->kind == SANDBOX_DISABLED)
		abort(); /* rpc-process.c builds plans for restricting policies only */
	fake_stats.plans++;
	snprintf(err, errsz, "this host lacks %s", "a sandbox (fuzz build)");
	return -EOPNOTSUPP;
}

void sandbox_plan_set_proxy(struct sandbox_plan *plan, int sock, bool socks)
{
	(void)plan;
	(void)sock;
	(void)socks;
}

int sandbox_proxy_receive(int sock, int fds[SANDBOX_PROXY_NFDS])
{
	(void)sock;
	(void)fds;
	return -EPROTO;
}

void sandbox_plan_free(struct sandbox_plan *plan)
{
	if (plan)
		abort(); /* no plan is ever made */
}

const char *sandbox_plan_writable_root(const struct sandbox_plan *plan, const char *path)
{
	if (plan)
		abort();
	return NULL;
}

int sandbox_plan_cgroup_fd(const struct sandbox_plan *plan)
{
	return -1;
}

bool sandbox_root_write_supported(const struct sandbox_features *f)
{
	(void)f;
	return false; /* no plan is ever made */
}

/* ---- sandbox/cgroup.c: a host without per-process cgroups (where[] all NONE) ---- */

const char *sandbox_cg_kind_name(enum sandbox_cg_kind k)
{
	return "fake";
}

int sandbox_cg_leaf_new(struct sandbox_cg *cg, int parent_fd, const struct sandbox_cg_limits *l,
			struct sandbox_cg_leaf *ret)
{
	return -ENOTSUP;
}

void sandbox_cg_leaf_spawned(struct sandbox_cg_leaf *leaf)
{
}

int sandbox_cg_leaf_kill(const struct sandbox_cg *cg, const struct sandbox_cg_leaf *leaf)
{
	return 0;
}

int sandbox_cg_leaf_remove(struct sandbox_cg *cg, struct sandbox_cg_leaf *leaf)
{
	return 0;
}

bool sandbox_cg_leaf_dir(const struct sandbox_cg_leaf *leaf, int *ret_parent_fd,
			 const char **ret_name)
{
	return false;
}

void sandbox_cg_leaf_removed(struct sandbox_cg_leaf *leaf)
{
}

uint64_t sandbox_cg_leaf_oom_kills(const struct sandbox_cg *cg, const struct sandbox_cg_leaf *leaf)
{
	return 0;
}

/* ---- proc.c: unreachable, as no spawn succeeds ---- */

#define UNREACHABLE()                                                                  \
	do {                                                                           \
		fprintf(stderr, "%s: called without any process\n", __func__);        \
		abort();                                                               \
	} while (0)

int proc_new(struct session *sess, const char *id, size_t id_len, const struct spawn_result *res,
	     bool tty, bool pipe_stdin, bool sandboxed, struct sandbox_plan *plan, struct proc **ret)
{
	UNREACHABLE();
}

void proc_start_output(struct proc *p)
{
	UNREACHABLE();
}

bool proc_is_idle(const struct proc *p)
{
	UNREACHABLE();
}

void proc_free(struct proc *p)
{
	UNREACHABLE();
}

void proc_kill_group(struct proc *p, int sig)
{
	UNREACHABLE();
}

void proc_resume_output(struct proc *p)
{
	UNREACHABLE();
}

void proc_read(struct proc *p, struct conn *c, json_t *id, uint64_t after_seq, bool has_max,
	       uint64_t max_bytes, uint64_t wait_ms)
{
	UNREACHABLE();
}

void proc_write(struct proc *p, struct conn *c, json_t *id, const char *write_id, uint8_t *data,
		size_t len)
{
	UNREACHABLE();
}

void proc_read_fast(struct proc *p, struct conn *c, const struct jrpc_fast_req *r,
		    uint64_t after_seq, bool has_max, uint64_t max_bytes, uint64_t wait_ms)
{
	UNREACHABLE();
}

void proc_write_fast(struct proc *p, struct conn *c, const struct jrpc_fast_req *r,
		     const char *write_id, uint8_t *data, size_t len)
{
	UNREACHABLE();
}

void proc_set_timeout(struct proc *p, uint64_t msec)
{
	UNREACHABLE();
}

int proc_resize(struct proc *p, unsigned short rows, unsigned short cols)
{
	UNREACHABLE();
}

void proc_close_stdin(struct proc *p)
{
	UNREACHABLE();
}

json_t *proc_describe(const struct proc *p)
{
	UNREACHABLE();
}

/* ---- deterministic session ids ---- */

/*
 * Interposes libc's getrandom() so that session ids repeat from run to run
 * (00010203-0405-4607-8809-0a0b0c0d0e0f for the first session of an input):
 * a fuzzer can then resume a session by id.
 */
ssize_t getrandom(void *buf, size_t len, unsigned int flags)
{
	for (size_t i = 0; i < len; i++)
		((uint8_t *)buf)[i] = fake_stats.random_counter++;
	return (ssize_t)len;
}

void proc_network_decision(void *owner, const char *tail)
{
	(void)owner;
	(void)tail;
}

/* No proxy is ever started here: nobody is asked. */
const struct netproxy_reviewer proc_network_reviewer;
