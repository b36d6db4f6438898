/* SPDX-License-Identifier: MIT */
/*
 * The audit log's queue and its writes on the ring (audit.h).
 *
 * Each file being written is a stream: its queue of chunks and its one op.
 * Lines are copied into chunks, a line never split across two, so a write
 * that fails after part of a line can tell where that line ends. Only the
 * head of a queue is written, with one WRITEV of up to AUDIT_MAX_IOV chunks:
 * one write in flight per file keeps the lines in order. A chunk is freed
 * once written; appending to the chunk in flight is safe, as the kernel
 * reads only the bytes the iovec named when it was prepared.
 *
 * Pipes and FIFOs are pollable: the kernel waits for room (poll armed inside
 * io_uring) instead of blocking anything, and a short write is simply
 * continued. When a write fails, the lines not written yet are dropped,
 * except the rest of a line already written in part to the current file:
 * dropping it would leave half a line for the next one to be glued to. It is
 * kept and tried again with the next line (a disk that was full may have
 * room by then); at exit it is given up.
 *
 * A reopen (SIGHUP) starts a new stream; the old one goes on writing what was
 * queued before it to the old file, so a stalled reader of the old file holds
 * up neither the new file nor the loop, and is closed once done (or given up:
 * AUDIT_MAX_RETIRING, AUDIT_STUCK_MS). Two streams never write to the same
 * file at once, as their lines could interleave: a reopen that names a file
 * still being written goes on with that file's stream.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>

#include "audit.h"
#include "log.h"
#include "macro.h"

/*
 * Lines are packed into chunks of this size (a longer line gets a chunk of
 * its own): a default pipe's capacity; AUDIT_MAX_IOV of them make a write of
 * the whole default queue.
 */
#define AUDIT_CHUNK_BYTES (64u * 1024)
#define AUDIT_MAX_IOV 16
/* Lines dropped are reported at most once per interval (every drop is counted in the metric). */
#define AUDIT_WARN_INTERVAL_MS 10000
/* After the exit flush's time ran out: how long the cancelled writes may take to come back. */
#define AUDIT_CANCEL_WAIT_MS 500
/*
 * Old files still being written after reopens: a few rotations in a row
 * while a reader is stuck keep their lines; beyond that the oldest is given
 * up (its lines dropped), so stuck readers cannot pile up fds.
 */
#define AUDIT_MAX_RETIRING 4
/*
 * The queue's bound counts old files' lines too (they are memory). When a
 * line of the current file does not fit, an old file whose write has been
 * pending this long (its reader took nothing) is given up to make room: a
 * reader stuck on a rotated-away file must not keep the new one empty. A
 * slow one that still moves keeps its lines; the new line is dropped.
 */
#define AUDIT_STUCK_MS 10000

struct audit_chunk {
	struct list_head link;
	size_t off; /* data[0..off) written */
	size_t len; /* data[0..len) queued */
	size_t cap;
	uint8_t data[];
};

struct audit_stream {
	struct list_head link; /* in server_audit.retiring, unless it is cur */
	struct server_audit *a;
	struct uring_op op;      /* the one write (or POLLOUT wait) in flight */
	struct list_head chunks; /* oldest first; the head is being written */
	int fd;
	bool owned;     /* fd is ours to close (not stdout) */
	bool held;      /* the head's line was cut short by a failed write: wait for a new line */
	bool polled;    /* the last op was a POLLOUT wait (EAGAIN after it is a failure) */
	bool abandoned; /* given up: freed once its op is idle */
	uint64_t since_ms; /* when the op in flight was submitted (a POLLOUT wait keeps it) */
	dev_t dev;      /* the file, to tell a reopen of the same one */
	ino_t ino;
	struct iovec iov[AUDIT_MAX_IOV];
};

/*
 * Streams whose write the kernel still held at exit (a regular file's write
 * that a cancel cannot stop): never freed, and reachable from here so that
 * leak checkers do not count them.
 */
static struct list_head abandoned = LIST_HEAD_INIT(abandoned);

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000 + 1; /* never 0 */
}

static size_t count_lines(const uint8_t *p, size_t n)
{
	size_t lines = 0;
	const uint8_t *nl;

	while (n > 0 && (nl = memchr(p, '\n', n))) {
		lines++;
		n -= (size_t)(nl + 1 - p);
		p = nl + 1;
	}
	return lines;
}

/*
 * The warning, at most once per AUDIT_WARN_INTERVAL_MS (force: at exit,
 * whatever the time), with why the last lines were dropped: error 0 for a
 * full queue, -ECANCELED for lines given up (at exit, or an old file's after
 * too many reopens).
 */
static void report(struct server_audit *a, int error, bool force)
{
	bool errno_text = error && error != -ECANCELED;
	uint64_t now = now_ms();
	struct log_field f[4];
	const char *why;
	size_t n = 0;

	if (a->unreported == 0)
		return;
	if (!force && a->warned_ms && now - a->warned_ms < AUDIT_WARN_INTERVAL_MS)
		return;
	if (error == 0)
		why = "its queue is full (--audit-log-max-queued-bytes): the reader or the disk is "
		      "not keeping up";
	else if (error == -ECANCELED)
		why = "given up: the reader or the disk did not take them in time";
	else
		why = "writing failed: ";
	f[n++] = LOG_INT("dropped", a->unreported);
	f[n++] = LOG_INT("droppedTotal", a->dropped_lines);
	f[n++] = LOG_INT("queuedBytes", a->queued);
	if (errno_text)
		f[n++] = LOG_STR("error", strerror(-error));
	log_event(LOG_WARNING, "audit.dropped", NULL, f, n,
		  "Audit log: dropped %" PRIu64 " line(s) (%" PRIu64 " in all, "
		  "uexec_audit_log_dropped_lines_total): %s%s",
		  a->unreported, a->dropped_lines, why, errno_text ? strerror(-error) : "");
	a->unreported = 0;
	a->warned_ms = now;
}

static void drop(struct server_audit *a, size_t lines, int error)
{
	if (lines == 0)
		return;
	a->dropped_lines += lines;
	a->unreported += lines;
	a->last_error = error;
	report(a, error, false);
}

/* ---- streams ---- */

static struct audit_stream *stream_new(struct server_audit *a, int fd, bool owned)
{
	struct audit_stream *st = calloc(1, sizeof(*st));
	struct stat sb;

	if (!st)
		return NULL;
	st->a = a;
	st->fd = fd;
	st->owned = owned;
	list_init(&st->chunks);
	list_init(&st->link);
	if (fstat(fd, &sb) == 0) {
		st->dev = sb.st_dev;
		st->ino = sb.st_ino;
	}
	return st;
}

static bool stream_same_file(const struct audit_stream *st, int fd)
{
	struct stat sb;

	if (st->fd == fd)
		return true;
	return fstat(fd, &sb) == 0 && sb.st_dev == st->dev && sb.st_ino == st->ino &&
	       (st->dev || st->ino);
}

static bool stream_idle(const struct audit_stream *st)
{
	return !st->op.busy && list_empty(&st->chunks);
}

static void chunk_free(struct audit_chunk *c)
{
	list_del(&c->link);
	free(c);
}

/* Takes the lines of st not written yet (from its head's offset on) out of the queue. */
static size_t stream_drop_all(struct audit_stream *st)
{
	struct audit_chunk *c, *n;
	size_t lines = 0;

	list_for_each_entry_safe(c, n, &st->chunks, link) {
		lines += count_lines(c->data + c->off, c->len - c->off);
		st->a->queued -= c->len - c->off;
		c->len = c->off;
		/* In flight, the kernel may still read it: freed with the stream. */
		if (!st->op.busy)
			chunk_free(c);
	}
	st->held = false;
	return lines;
}

/* Frees an idle stream, closing its fd if ours. */
static void stream_free(struct audit_stream *st)
{
	while (!list_empty(&st->chunks))
		chunk_free(list_first_entry(&st->chunks, struct audit_chunk, link));
	list_del(&st->link);
	if (st->owned)
		safe_close(st->fd);
	free(st);
}

/* Gives up a retiring stream: its lines are dropped, its write cancelled. */
static void stream_abandon(struct audit_stream *st)
{
	st->abandoned = true;
	drop(st->a, stream_drop_all(st), -ECANCELED);
	if (st->op.busy)
		uring_cancel(st->a->ring, &st->op);
}

/* n bytes from the head went out: frees the chunks done. */
static void written(struct audit_stream *st, size_t n)
{
	st->a->queued -= n;
	while (n > 0 && !list_empty(&st->chunks)) {
		struct audit_chunk *c = list_first_entry(&st->chunks, struct audit_chunk, link);
		size_t k = MIN(n, c->len - c->off);

		c->off += k;
		n -= k;
		if (c->off == c->len)
			chunk_free(c);
	}
}

/*
 * A write failed: the lines not written yet are dropped, but the rest of a
 * line written in part to the current file is kept (held until the next line
 * comes), so that no line is ever glued to half of one.
 */
static void failed(struct audit_stream *st, int error)
{
	struct audit_chunk *c, *n, *head = list_first_entry(&st->chunks, struct audit_chunk, link);
	struct server_audit *a = st->a;
	size_t keep = 0, lines = 0;

	if (st == a->cur && head->off > 0 && head->data[head->off - 1] != '\n') {
		const uint8_t *nl = memchr(head->data + head->off, '\n', head->len - head->off);

		keep = (size_t)(nl + 1 - head->data) - head->off; /* every line ends in '\n' */
		st->held = true;
	}
	list_for_each_entry_safe(c, n, &st->chunks, link) {
		size_t from = c->off + (c == head ? keep : 0);

		lines += count_lines(c->data + from, c->len - from);
		a->queued -= c->len - from;
		c->len = from;
		if (c->off == c->len)
			chunk_free(c);
	}
	drop(a, lines, error);
}

static void on_poll(struct uring_op *op, int res, uint32_t flags)
{
	(void)op;
	(void)res;
	(void)flags;
	/* Writable (or an error the next write reports): server_audit_run() writes again. */
}

static void on_write(struct uring_op *op, int res, uint32_t flags)
{
	struct audit_stream *st = container_of(op, struct audit_stream, op);
	bool polled = st->polled;

	(void)flags;
	st->polled = false;
	if (st->abandoned || list_empty(&st->chunks))
		return;
	if (res > 0) {
		written(st, (size_t)res);
	} else if (res == -EAGAIN && !polled) {
		/*
		 * An O_NONBLOCK file the kernel cannot wait on inside the ring (a
		 * pipe on older kernels): wait for room. Still EAGAIN after that (a
		 * regular file, always "writable"): a failure, not a busy loop.
		 */
		struct io_uring_sqe *sqe = uring_get_sqe(st->a->ring, &st->op, on_poll);

		io_uring_prep_poll_add(sqe, st->fd, POLLOUT);
		st->polled = true;
	} else {
		failed(st, res < 0 ? res : -EIO); /* 0 bytes for a non-empty write: no progress */
	}
}

static void stream_write(struct audit_stream *st)
{
	struct io_uring_sqe *sqe;
	struct audit_chunk *c;
	unsigned n = 0;

	if (st->op.busy || st->held || st->abandoned)
		return;
	list_for_each_entry(c, &st->chunks, link) {
		if (n == AUDIT_MAX_IOV)
			break;
		st->iov[n].iov_base = c->data + c->off;
		st->iov[n].iov_len = c->len - c->off;
		n++;
	}
	if (n == 0)
		return;
	st->since_ms = now_ms();
	sqe = uring_get_sqe(st->a->ring, &st->op, on_write);
	/* Offset -1: the file position (O_APPEND: the end), as write(2); pipes take no offset. */
	io_uring_prep_writev(sqe, st->fd, st->iov, n, (__u64)-1);
}

/* ---- the queue ---- */

void server_audit_init(struct server_audit *a, struct uring *ring, size_t max_queued)
{
	memset(a, 0, sizeof(*a));
	a->ring = ring;
	a->max_queued = max_queued;
	a->stuck_ms = AUDIT_STUCK_MS;
	list_init(&a->retiring);
}

/* Retiring streams that still hold lines (the ones given up do not count). */
static unsigned retiring_with_lines(struct server_audit *a)
{
	struct audit_stream *st;
	unsigned n = 0;

	list_for_each_entry(st, &a->retiring, link)
		n += !st->abandoned && !list_empty(&st->chunks);
	return n;
}

int server_audit_set_fd(struct server_audit *a, int fd, bool owned)
{
	struct audit_stream *st, *next = NULL;

	if (a->cur && fd >= 0 && stream_same_file(a->cur, fd)) {
		if (owned && fd != a->cur->fd)
			safe_close(fd);
		return 0;
	}
	/* Still being written (a reopen of an older file): that stream goes on. */
	list_for_each_entry(st, &a->retiring, link)
		if (fd >= 0 && !st->abandoned && !next && stream_same_file(st, fd))
			next = st;
	if (next) {
		list_del(&next->link);
		list_init(&next->link);
		if (owned && fd != next->fd)
			safe_close(fd);
	} else if (fd >= 0) {
		next = stream_new(a, fd, owned);
		if (!next) {
			if (owned)
				safe_close(fd);
			return -ENOMEM;
		}
	}
	if (a->cur) {
		/* Its lines still go to its file; the loop frees it once they are written. */
		a->cur->held = false; /* one more try for a line cut short: nothing follows it */
		list_add_tail(&a->cur->link, &a->retiring);
	}
	a->cur = next;
	while (retiring_with_lines(a) > AUDIT_MAX_RETIRING) {
		list_for_each_entry(st, &a->retiring, link)
			if (!st->abandoned && !list_empty(&st->chunks))
				break;
		stream_abandon(st);
	}
	return 0;
}

static bool fits(const struct server_audit *a, size_t len)
{
	/* queued may be above a bound lowered by a reload: nothing fits until it drains. */
	return a->queued <= a->max_queued && len <= a->max_queued - a->queued;
}

/* Gives up old files whose reader took nothing for stuck_ms, oldest first, until len fits. */
static void make_room(struct server_audit *a, size_t len)
{
	uint64_t now = now_ms();
	struct audit_stream *st;

	if (len > a->max_queued)
		return; /* would never fit: nothing to give up for it */
	list_for_each_entry(st, &a->retiring, link) {
		if (fits(a, len))
			return;
		if (!st->abandoned && st->op.busy && now - st->since_ms >= a->stuck_ms)
			stream_abandon(st);
	}
}

void server_audit_append(void *userdata, const char *line, size_t len)
{
	struct server_audit *a = userdata;
	struct audit_stream *st = a->cur;
	struct audit_chunk *tail;

	if (!st || len == 0)
		return;
	if (!fits(a, len))
		make_room(a, len);
	if (!fits(a, len)) {
		drop(a, 1, 0);
		return;
	}
	tail = list_empty(&st->chunks) ? NULL
				       : list_entry(st->chunks.prev, struct audit_chunk, link);
	if (!tail || tail->cap - tail->len < len) {
		size_t cap = MAX(len, (size_t)AUDIT_CHUNK_BYTES);

		tail = malloc(sizeof(*tail) + cap);
		if (!tail) {
			drop(a, 1, -ENOMEM);
			return;
		}
		*tail = (struct audit_chunk){ .cap = cap };
		list_add_tail(&tail->link, &st->chunks);
	}
	memcpy(tail->data + tail->len, line, len);
	tail->len += len;
	a->queued += len;
	/* A new line: the rest of a line cut short is tried again before it. */
	st->held = false;
}

void server_audit_run(struct server_audit *a)
{
	struct audit_stream *st, *n;

	if (a->cur)
		stream_write(a->cur);
	list_for_each_entry_safe(st, n, &a->retiring, link) {
		if (st->abandoned ? !st->op.busy : stream_idle(st))
			stream_free(st);
		else
			stream_write(st);
	}
}

static bool owns_op(const struct uring_op *op, void *userdata)
{
	struct server_audit *a = userdata;
	struct audit_stream *st;

	if (a->cur && op == &a->cur->op)
		return true;
	list_for_each_entry(st, &a->retiring, link)
		if (op == &st->op)
			return true;
	return false;
}

static bool any_busy(const struct server_audit *a)
{
	const struct audit_stream *st;

	if (a->cur && a->cur->op.busy)
		return true;
	list_for_each_entry(st, &a->retiring, link)
		if (st->op.busy)
			return true;
	return false;
}

bool server_audit_idle(const struct server_audit *a)
{
	return a->queued == 0 && !any_busy(a);
}

void server_audit_flush(struct server_audit *a, uint64_t timeout_ms)
{
	uint64_t start = now_ms(), spent;
	struct audit_stream *st;

	report(a, a->last_error, true); /* drops not reported yet, for what they were */
	if (a->cur) {
		a->cur->held = false; /* the last chance for a line cut short */
		list_add_tail(&a->cur->link, &a->retiring);
		a->cur = NULL;
	}
	for (;;) {
		server_audit_run(a);
		spent = now_ms() - start;
		if (!any_busy(a) || spent >= timeout_ms ||
		    uring_run_teardown(a->ring, owns_op, a, timeout_ms - spent) < 0)
			break;
	}
	/* What is left was not written in time (or a write failed and held it): lost. */
	list_for_each_entry(st, &a->retiring, link)
		if (!st->abandoned)
			stream_abandon(st);
	start = now_ms();
	while (any_busy(a) && (spent = now_ms() - start) < AUDIT_CANCEL_WAIT_MS &&
	       uring_run_teardown(a->ring, owns_op, a, AUDIT_CANCEL_WAIT_MS - spent) >= 0)
		;
	report(a, -ECANCELED, true);
}

void server_audit_done(struct server_audit *a)
{
	struct audit_stream *st, *n;

	if (a->cur)
		list_add_tail(&a->cur->link, &a->retiring);
	a->cur = NULL;
	list_for_each_entry_safe(st, n, &a->retiring, link) {
		if (st->op.busy) {
			/* The kernel may still read its chunks: kept until the process ends. */
			list_del(&st->link);
			list_add_tail(&st->link, &abandoned);
			continue;
		}
		stream_free(st);
	}
	a->queued = 0;
}
