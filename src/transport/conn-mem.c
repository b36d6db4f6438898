/* SPDX-License-Identifier: MIT */
/*
 * In-flight memory budgets per connection and for the server (see conn-mem.h).
 */
#include <errno.h>
#include <stdint.h>

#include "conn.h"
#include "log.h"

/* The server object may come zeroed (the session fuzzer's): its lists start empty. */
static void lists_init(struct server *s)
{
	if (!s->mem_waiters.next)
		list_init(&s->mem_waiters);
	if (!s->mem_paused.next)
		list_init(&s->mem_paused);
}

/* 0 (a configuration built without them) is no limit. */
static size_t conn_budget(const struct server *s)
{
	return s->cfg.max_inflight_bytes_per_conn ? (size_t)s->cfg.max_inflight_bytes_per_conn
						  : SIZE_MAX / 4;
}

static size_t global_budget(const struct server *s)
{
	return s->cfg.max_inflight_bytes ? (size_t)s->cfg.max_inflight_bytes : SIZE_MAX / 2;
}

size_t conn_mem_limit(const struct server *s)
{
	return MAX(conn_budget(s), global_budget(s) / 2);
}

static size_t held(const struct conn *c)
{
	return c->out_alloc + c->mem_charged;
}

static bool conn_gone(const struct conn *c)
{
	return !c || c->state == CONN_CLOSING || c->state == CONN_DEAD;
}

/* Moves m's charge up or down by d, in its connection's and the server's counters. */
static void account(struct conn_mem *m, size_t d, bool up)
{
	if (up) {
		if (m->conn)
			m->conn->mem_charged += d;
		m->srv->mem_total += d;
		m->bytes += d;
	} else {
		if (m->conn)
			m->conn->mem_charged -= d;
		m->srv->mem_total -= d;
		m->bytes -= d;
		m->srv->mem_dirty = true;
	}
}

void conn_mem_init(struct conn_mem *m, struct conn *c)
{
	*m = (struct conn_mem){ .conn = c, .srv = c->srv };
	if (!c->mem_charges.next)
		list_init(&c->mem_charges);
	list_add_tail(&m->link, &c->mem_charges);
}

static void wait_end(struct conn_mem *m)
{
	if (!m->waiting)
		return;
	list_del(&m->wait_link);
	m->waiting = false;
	if (m->conn) {
		m->conn->mem_waiting -= m->bytes;
		m->conn->mem_n_waiting--;
	}
	/* A connection whose waiters were all that it held may now be idle. */
	m->srv->mem_dirty = true;
}

void conn_mem_set(struct conn_mem *m, size_t total)
{
	if (!m->srv)
		return;
	if (m->waiting && m->conn)
		m->conn->mem_waiting -= m->bytes;
	if (total >= m->bytes)
		account(m, total - m->bytes, true);
	else
		account(m, m->bytes - total, false);
	if (m->waiting && m->conn)
		m->conn->mem_waiting += m->bytes;
}

/*
 * Whether m may grow to total now. What else its connection has in flight
 * (queued output and charges, but not the estimates of requests that wait
 * themselves) plus total within the connection's budget: if the server has
 * room. Beyond it: only alone (nothing else in flight) and within half the
 * global budget.
 */
static bool fits(const struct conn_mem *m, size_t total)
{
	const struct conn *c = m->conn;
	const struct server *s = m->srv;
	size_t d = total - m->bytes;
	size_t others = held(c) - c->mem_waiting - (m->waiting ? 0 : m->bytes);

	if (others + total <= conn_budget(s))
		return s->mem_total + d <= global_budget(s);
	return others == 0 && s->mem_total + d <= global_budget(s) / 2;
}

int conn_mem_acquire(struct conn_mem *m, size_t total, void (*ready)(struct conn_mem *m))
{
	struct conn *c = m->conn;

	if (total <= m->bytes) {
		conn_mem_set(m, total);
		return 1;
	}
	if (total > conn_mem_limit(m->srv))
		return -E2BIG;
	/* A closing connection's requests are orphaned: let them finish. */
	if (conn_gone(c)) {
		conn_mem_set(m, total);
		return 1;
	}
	/* The connection's earlier waiters go first. */
	if (c->mem_n_waiting == 0 && fits(m, total)) {
		conn_mem_set(m, total);
		return 1;
	}
	lists_init(m->srv);
	m->want = total;
	m->ready = ready;
	m->waiting = true;
	c->mem_waiting += m->bytes;
	c->mem_n_waiting++;
	list_add_tail(&m->wait_link, &m->srv->mem_waiters);
	/* Its own wait may leave an older waiter of c alone: look again. */
	m->srv->mem_dirty = true;
	log_debug("%s: a request waits for %zu bytes of budget (connection holds %zu, server %zu)",
		  c->peer, total - m->bytes, held(c), m->srv->mem_total);
	return 0;
}

void conn_mem_done(struct conn_mem *m)
{
	if (!m->srv)
		return;
	wait_end(m);
	list_del(&m->wait_link); /* woken, its callback not run yet (admit()) */
	if (m->bytes)
		account(m, m->bytes, false);
	list_del(&m->link);
	m->conn = NULL;
}

void conn_mem_out(struct conn *c, long long n)
{
	c->srv->mem_total += (size_t)n;
	if (n < 0)
		c->srv->mem_dirty = true;
}

void conn_mem_conn_freed(struct conn *c)
{
	struct conn_mem *m, *n;

	if (!c->mem_charges.next)
		return;
	list_for_each_entry_safe(m, n, &c->mem_charges, link) {
		list_del(&m->link);
		m->conn = NULL;
	}
	list_del(&c->mem_paused_link);
	c->srv->mem_total -= c->out_alloc;
	c->srv->mem_dirty = true;
}

static bool over(const struct conn *c)
{
	const struct server *s = c->srv;

	return held(c) > conn_budget(s) || (held(c) > 0 && s->mem_total > global_budget(s));
}

bool conn_mem_pause_check(struct conn *c)
{
	if (c->held)
		return true; /* conn_hold(): the rest waits, unparsed, for conn_release() */
	if (c->mem_paused || !over(c))
		return c->mem_paused;
	lists_init(c->srv);
	c->mem_paused = true;
	list_add_tail(&c->mem_paused_link, &c->srv->mem_paused);
	log_debug("%s: %zu bytes in flight (server: %zu), requests wait", c->peer, held(c),
		  c->srv->mem_total);
	return true;
}

/* Below half the connection's budget, and the server within its own (or c idle). */
static bool may_resume(const struct conn *c)
{
	const struct server *s = c->srv;

	return held(c) <= conn_budget(s) / 2 && (held(c) == 0 || s->mem_total <= global_budget(s));
}

/* One pass over the waiters in arrival order. */
static void admit(struct server *s)
{
	struct conn_mem *m, *n;
	struct list_head woken;
	unsigned pass = ++s->mem_pass;

	list_init(&woken);
	list_for_each_entry_safe(m, n, &s->mem_waiters, wait_link) {
		struct conn *c = m->conn;

		if (conn_gone(c)) {
			wait_end(m);
		} else if (c->mem_pass == pass || !fits(m, m->want)) {
			c->mem_pass = pass; /* its later waiters stay behind it */
			continue;
		} else {
			wait_end(m);
			conn_mem_set(m, m->want);
		}
		list_add_tail(&m->wait_link, &woken);
	}
	/* Callbacks last: one may free its request, or charge and release. */
	while (!list_empty(&woken)) {
		m = list_first_entry(&woken, struct conn_mem, wait_link);
		list_del(&m->wait_link);
		m->ready(m);
	}
}

/* Resumes the paused connections that went below their low-water mark. */
static void resume(struct server *s)
{
	struct list_head todo;
	struct conn *c, *n;

	list_init(&todo);
	list_for_each_entry_safe(c, n, &s->mem_paused, mem_paused_link) {
		if (c->state != CONN_DEAD && c->state != CONN_CLOSING && !may_resume(c))
			continue;
		list_del(&c->mem_paused_link);
		c->mem_paused = false;
		if (c->state != CONN_DEAD && c->state != CONN_CLOSING)
			list_add_tail(&c->mem_paused_link, &todo);
	}
	/* One at a time: dispatching may pause a connection again (it then rejoins s->mem_paused). */
	while (!list_empty(&todo)) {
		c = list_first_entry(&todo, struct conn, mem_paused_link);
		list_del(&c->mem_paused_link);
		log_debug("%s: %zu bytes in flight, requests resume", c->peer, held(c));
		conn_input_resume(c);
	}
}

void conn_mem_run(struct server *s)
{
	lists_init(s);
	/* Waking a request or resuming a connection can release more: a few rounds at most. */
	for (unsigned round = 0; s->mem_dirty && round < 16; round++) {
		s->mem_dirty = false;
		if (!list_empty(&s->mem_waiters))
			admit(s);
		if (!list_empty(&s->mem_paused))
			resume(s);
	}
}
