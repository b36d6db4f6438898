/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for src/upgrade/cgroups.c: struct sandbox_cg written into the
 * state blob, parsed, viewed and read back gives the same layout and fds
 * (what RESTORE adopts instead of creating), for a v2 host with a moved
 * server, a hybrid host with v1 controllers, and no cgroups at all.
 */
#include <errno.h>
#include <string.h>

#include "macro.h"
#include "tests.h"
#include "upgrade-cgroups.h"

static void empty_cg(struct sandbox_cg *cg)
{
	memset(cg, 0, sizeof(*cg));
	cg->base_fd = cg->supervisor_fd = -1;
	for (int k = 0; k < _SANDBOX_CG_KIND_MAX; k++)
		cg->v1_fd[k] = -1;
}

/* cg -> blob -> parse -> view -> out; returns the view's result. */
static int round_trip(const struct sandbox_cg *cg, struct sandbox_cg *out, char *err, size_t size)
{
	struct upgrade_writer w;
	struct upgrade_state st;
	struct upgrade_view v;
	int r;

	upgrade_writer_init(&w, UPGRADE_STATE_VERSION);
	upgrade_writer_begin(&w, UPGRADE_REC_SERVER);
	upgrade_writer_str(&w, UPGRADE_SERVER_VERSION, "x");
	upgrade_writer_u64(&w, UPGRADE_SERVER_START_MS, 1);
	upgrade_writer_u64(&w, UPGRADE_SERVER_UPGRADES, 0);
	upgrade_writer_end(&w);
	(void)upgrade_put_cgroups(&w, cg);
	ASSERT_EQ(0, upgrade_writer_finish(&w));
	ASSERT_EQ(0, upgrade_state_parse(w.b.data, w.b.len, NULL, &st, err, size));
	r = upgrade_view_build(&st, &v, err, size);
	if (r == 0) {
		r = upgrade_sandbox_cg_from_view(&v, out, err, size);
		upgrade_view_done(&v);
	}
	upgrade_state_done(&st);
	buf_done(&w.b);
	return r;
}

static void check_same(const struct sandbox_cg *a, const struct sandbox_cg *b)
{
	ASSERT_EQ(a->enabled, b->enabled);
	ASSERT_EQ(a->has_kill, b->has_kill);
	ASSERT_EQ(a->base_fd, b->base_fd);
	ASSERT_STREQ(a->base, b->base);
	ASSERT_STREQ(a->server_cg, b->server_cg);
	ASSERT_EQ(a->seq, b->seq);
	ASSERT_EQ(a->supervisor, b->supervisor);
	ASSERT_EQ(a->supervisor_fd, b->supervisor_fd);
	for (int k = 0; k < _SANDBOX_CG_KIND_MAX; k++) {
		ASSERT_EQ(a->where[k], b->where[k]);
		ASSERT_EQ(a->v1_fd[k], b->v1_fd[k]);
		ASSERT_STREQ(a->v1_base[k], b->v1_base[k]);
	}
}

TEST(v2_host_with_moved_server)
{
	struct sandbox_cg cg, out;
	char err[256];

	empty_cg(&cg);
	cg.enabled = cg.has_kill = true;
	cg.base_fd = 11;
	strcpy(cg.base, "/sys/fs/cgroup/system.slice/uexec.service/uexec-77.procs");
	strcpy(cg.server_cg, "/sys/fs/cgroup/system.slice/uexec.service/uexec-77.server");
	for (int k = 0; k < _SANDBOX_CG_KIND_MAX; k++)
		cg.where[k] = SANDBOX_CG_V2;
	cg.seq = 4242;
	cg.supervisor = 78;
	cg.supervisor_fd = 12;
	ASSERT_EQ(0, round_trip(&cg, &out, err, sizeof(err)));
	check_same(&cg, &out);
}

TEST(hybrid_host_v1_controllers)
{
	struct sandbox_cg cg, out;
	char err[256];

	empty_cg(&cg);
	cg.enabled = true;
	cg.base_fd = 11;
	strcpy(cg.base, "/sys/fs/cgroup/unified/user.slice/uexec-5.procs");
	cg.where[SANDBOX_CG_PIDS] = SANDBOX_CG_V1;
	cg.v1_fd[SANDBOX_CG_PIDS] = 13;
	strcpy(cg.v1_base[SANDBOX_CG_PIDS], "/sys/fs/cgroup/pids/user.slice/uexec-5.procs");
	cg.where[SANDBOX_CG_CPU] = SANDBOX_CG_V1;
	cg.v1_fd[SANDBOX_CG_CPU] = 14;
	strcpy(cg.v1_base[SANDBOX_CG_CPU], "/sys/fs/cgroup/cpu,cpuacct/user.slice/uexec-5.procs");
	cg.supervisor = 6;
	cg.supervisor_fd = 12;
	ASSERT_EQ(0, round_trip(&cg, &out, err, sizeof(err)));
	check_same(&cg, &out);
}

TEST(no_cgroups)
{
	struct sandbox_cg cg, out;
	char err[256];

	empty_cg(&cg);
	ASSERT_EQ(0, round_trip(&cg, &out, err, sizeof(err)));
	check_same(&cg, &out);
	ASSERT_EQ(-1, out.base_fd);
}

/* A struct that disagrees with itself does not survive the view: the sender's bug is caught. */
TEST(inconsistent_layout_refused)
{
	struct sandbox_cg cg, out;
	char err[256];

	empty_cg(&cg);
	cg.enabled = true;
	strcpy(cg.base, "/sys/fs/cgroup/x/uexec-1.procs"); /* but no base fd */
	ASSERT_EQ(-EBADMSG, round_trip(&cg, &out, err, sizeof(err)));
	ASSERT_STREQ("the cgroup base's fd and its layout disagree", err);
	empty_cg(&cg);
	cg.supervisor_fd = 9; /* a pipe without the supervisor's pid */
	ASSERT_EQ(-EBADMSG, round_trip(&cg, &out, err, sizeof(err)));
	ASSERT_STREQ("the supervisor's pipe and its pid disagree", err);
}

/* Without a cgroups record there is nothing to adopt: said, not guessed. */
TEST(missing_record)
{
	struct upgrade_view v;
	struct sandbox_cg out;
	char err[256];

	memset(&v, 0, sizeof(v));
	memset(&out, 0x5a, sizeof(out));
	ASSERT_EQ(-EBADMSG, upgrade_sandbox_cg_from_view(&v, &out, err, sizeof(err)));
	ASSERT_STREQ("the state has no cgroups layout", err);
	ASSERT_EQ(0x5a5a5a5a, (unsigned)out.base_fd); /* untouched */
}

TEST_MAIN()
