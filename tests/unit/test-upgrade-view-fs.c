/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for the live upgrade's view (src/upgrade/view.c) of a
 * connection's fs state: fs/watchMissing and fs/watch watches, their ids and
 * limits, queued events, and fs/open handles (src/upgrade/adopt-fs.c). The
 * view's other rules are in test-upgrade-view.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "state.h"
#include "tests.h"
#include "upgrade-state-kit.h"
#include "view.h"

/* ---- watches and fs/open handles (src/upgrade/adopt-fs.c) ---- */

/* A WebSocket connection with its watch ids (missing_id < 0: no fs/watchMissing seen). */
static void fs_conn(struct upgrade_writer *w, int fd, int64_t missing_id, uint64_t change_id)
{
	upgrade_writer_begin(w, UPGRADE_REC_CONN);
	upgrade_writer_u64(w, UPGRADE_CONN_TRANSPORT, UPGRADE_CONN_WS);
	upgrade_writer_fd(w, UPGRADE_CONN_FD_IN, fd);
	upgrade_writer_bool(w, UPGRADE_CONN_UPGRADED, true);
	if (missing_id >= 0)
		upgrade_writer_u64(w, UPGRADE_CONN_MISSING_ID, (uint64_t)missing_id);
	if (change_id)
		upgrade_writer_u64(w, UPGRADE_CONN_CHANGE_ID, change_id);
	upgrade_writer_end(w);
}

struct wspec {
	uint32_t conn;
	uint64_t id;
	const char *path, *only, *present, *queued;
	const uint8_t *others;
	size_t others_len;
	bool missing, recursive, ident;
	uint64_t ended;
};

static void watch_rec(struct upgrade_writer *w, const struct wspec *s)
{
	upgrade_writer_begin(w, UPGRADE_REC_WATCH);
	upgrade_writer_ref(w, UPGRADE_WATCH_CONN, s->conn);
	upgrade_writer_u64(w, UPGRADE_WATCH_ID, s->id);
	upgrade_writer_bytes(w, UPGRADE_WATCH_PATH, s->path, strlen(s->path));
	if (s->recursive)
		upgrade_writer_bool(w, UPGRADE_WATCH_RECURSIVE, true);
	if (s->missing)
		upgrade_writer_bool(w, UPGRADE_WATCH_MISSING, true);
	if (s->others)
		upgrade_writer_bytes(w, UPGRADE_WATCH_OTHERS, s->others, s->others_len);
	if (s->present)
		upgrade_writer_bytes(w, UPGRADE_WATCH_PRESENT, s->present, strlen(s->present));
	if (s->only)
		upgrade_writer_bytes(w, UPGRADE_WATCH_ONLY, s->only, strlen(s->only));
	if (s->ident) {
		upgrade_writer_u64(w, UPGRADE_WATCH_DEV, 1);
		upgrade_writer_u64(w, UPGRADE_WATCH_INO, 2);
	}
	if (s->ended)
		upgrade_writer_u64(w, UPGRADE_WATCH_ENDED, s->ended);
	if (s->queued)
		upgrade_writer_bytes(w, UPGRADE_WATCH_QUEUED, s->queued, strlen(s->queued));
	upgrade_writer_end(w);
}

static void handle_rec(struct upgrade_writer *w, uint32_t conn, const char *id, int fd)
{
	upgrade_writer_begin(w, UPGRADE_REC_FS_HANDLE);
	upgrade_writer_ref(w, UPGRADE_FS_HANDLE_CONN, conn);
	upgrade_writer_bytes(w, UPGRADE_FS_HANDLE_ID, id, strlen(id));
	upgrade_writer_fd(w, UPGRADE_FS_HANDLE_FD, fd);
	upgrade_writer_end(w);
}

/* (u32 len, path)*: "/a/b" and "/c". */
static const uint8_t others_ok[] = { 4, 0, 0, 0, '/', 'a', '/', 'b', 2, 0, 0, 0, '/', 'c' };

static void v_fs_ok(struct upgrade_writer *w)
{
	fs_conn(w, 5, 1, 3);                                                /* record 1 */
	/* fs/watchMissing and fs/watch ids are two ranges: 1 in both. */
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 1, .path = "/m", .missing = true,
				      .others = others_ok, .others_len = sizeof(others_ok),
				      .present = "/p" });
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 1, .path = "/d", .recursive = true,
				      .ident = true });
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 2, .path = "/d", .only = "f", .ident = true });
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 3, .path = "/", .ended = 2,
				      .queued = "{\"kind\":\"ended\",\"reason\":\"moved\"}," });
	fs_conn(w, 6, -1, 1);                                               /* record 6 */
	watch_rec(w, &(struct wspec){ .conn = 6, .id = 1, .path = "/d", .ident = true });
	handle_rec(w, 1, "h", 7);
	handle_rec(w, 6, "h", 8);
	handle_rec(w, 6, "", 9);
}

static void v_missing_not_newest(struct upgrade_writer *w)
{
	fs_conn(w, 5, 3, 0);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 2, .path = "/m", .missing = true });
}

static void v_missing_without_id(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 0);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 0, .path = "/m", .missing = true });
}

static void v_two_missing(struct upgrade_writer *w)
{
	fs_conn(w, 5, 3, 0);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 3, .path = "/m", .missing = true });
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 3, .path = "/n", .missing = true });
}

static void v_missing_recursive(struct upgrade_writer *w)
{
	fs_conn(w, 5, 3, 0);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 3, .path = "/m", .missing = true,
				      .recursive = true });
}

static void v_others_relative(struct upgrade_writer *w)
{
	static const uint8_t o[] = { 1, 0, 0, 0, 'x' };

	fs_conn(w, 5, 3, 0);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 3, .path = "/m", .missing = true,
				      .others = o, .others_len = sizeof(o) });
}

static void v_others_cut(struct upgrade_writer *w)
{
	static const uint8_t o[] = { 9, 0, 0, 0, '/', 'x' };

	fs_conn(w, 5, 3, 0);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 3, .path = "/m", .missing = true,
				      .others = o, .others_len = sizeof(o) });
}

static void v_others_header_cut(struct upgrade_writer *w)
{
	static const uint8_t o[] = { 1, 0, 0, 0, '/', 1, 0 };

	fs_conn(w, 5, 3, 0);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 3, .path = "/m", .missing = true,
				      .others = o, .others_len = sizeof(o) });
}

static void v_present_relative(struct upgrade_writer *w)
{
	fs_conn(w, 5, 3, 0);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 3, .path = "/m", .missing = true,
				      .present = "p" });
}

static void v_change_with_present(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 1);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 1, .path = "/d", .present = "/p",
				      .ident = true });
}

static void v_file_watch_recursive(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 1);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 1, .path = "/d", .only = "f",
				      .recursive = true, .ident = true });
}

static void v_file_watch_two_names(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 1);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 1, .path = "/d", .only = "a/b",
				      .ident = true });
}

static void v_file_watch_dotdot(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 1);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 1, .path = "/d", .only = "..",
				      .ident = true });
}

static void v_change_id_not_handed(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 2);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 5, .path = "/d", .ident = true });
}

static void v_change_id_zero(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 2);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 0, .path = "/d", .ident = true });
}

static void v_ended_with_ident(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 1);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 1, .path = "/d", .ident = true, .ended = 1 });
}

static void v_live_without_ident(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 1);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 1, .path = "/d" });
}

static void v_dup_change_id(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 2);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 1, .path = "/d", .ident = true });
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 1, .path = "/e", .ident = true });
}

static void v_seventeen_watches(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 17);
	for (uint64_t id = 1; id <= 17; id++)
		watch_rec(w, &(struct wspec){ .conn = 1, .id = id, .path = "/d", .ident = true });
}

static void v_queued_on_missing(struct upgrade_writer *w)
{
	fs_conn(w, 5, 3, 0);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 3, .path = "/m", .missing = true,
				      .queued = "{}," });
}

static void v_queued_without_comma(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 1);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 1, .path = "/d", .ident = true,
				      .queued = "{\"kind\":\"x\"}" });
}

static void v_queued_not_an_object(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 1);
	watch_rec(w, &(struct wspec){ .conn = 1, .id = 1, .path = "/d", .ident = true,
				      .queued = "1,2," });
}

static void v_dup_handle(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 0);
	handle_rec(w, 1, "h", 6);
	handle_rec(w, 1, "h", 7);
}

static void v_too_many_handles(struct upgrade_writer *w)
{
	fs_conn(w, 5, -1, 0);
	for (int i = 0; i < 129; i++) {
		char id[16];

		snprintf(id, sizeof(id), "h%d", i);
		handle_rec(w, 1, id, 10 + i);
	}
}

TEST(view_fs_rules)
{
	static const struct {
		void (*build)(struct upgrade_writer *w);
		const char *err;
	} cases[] = {
		{ v_fs_ok, "" },
		{ v_missing_not_newest, "record 2: fs/watchMissing watch 2 is not its connection's newest, or not its only one" },
		{ v_missing_without_id, "record 2: fs/watchMissing watch 0 is not its connection's newest, or not its only one" },
		{ v_two_missing, "record 3: fs/watchMissing watch 3 is not its connection's newest, or not its only one" },
		{ v_missing_recursive, "record 2: an fs/watchMissing watch with fs/watch's fields" },
		{ v_others_relative, "record 2: others: entry 0 is not an absolute path" },
		{ v_others_cut, "record 2: others: entry 0 is not an absolute path" },
		{ v_others_header_cut, "record 2: others: entry 1 is cut short or one too many" },
		{ v_present_relative, "record 2: a present path that is not absolute" },
		{ v_change_with_present, "record 2: an fs/watch watch with fs/watchMissing's paths" },
		{ v_file_watch_recursive, "record 2: a file watch's name is one component, not recursive" },
		{ v_file_watch_two_names, "record 2: a file watch's name is one component, not recursive" },
		{ v_file_watch_dotdot, "record 2: a file watch's name is one component, not recursive" },
		{ v_change_id_not_handed, "record 2: fs/watch watch 5 was not handed out (last 2)" },
		{ v_change_id_zero, "record 2: fs/watch watch 0 was not handed out (last 2)" },
		{ v_ended_with_ident, "record 2: a root's identity exactly when the watch has not ended" },
		{ v_live_without_ident, "record 2: a root's identity exactly when the watch has not ended" },
		{ v_dup_change_id, "record 3: the same fs/watch watchId on the same connection, as record 2" },
		{ v_seventeen_watches, "record 18: more than 16 fs/watch watches on a connection" },
		{ v_queued_on_missing, "record 2: an fs/watchMissing watch with fs/watch's fields" },
		{ v_queued_without_comma, "record 2: queued events that are not objects each followed by a comma" },
		{ v_queued_not_an_object, "record 2: queued events that are not objects each followed by a comma" },
		{ v_dup_handle, "record 3: the same handleId on the same connection, as record 2" },
		{ v_too_many_handles, "record 130: more than 128 fs/open handles on a connection" },
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char err[256];
		int r = view_one(cases[i].build, err, sizeof(err));

		ASSERT_EQ(cases[i].err[0] ? -EBADMSG : 0, r);
		ASSERT_STREQ(cases[i].err, err);
	}
}

TEST_MAIN()
