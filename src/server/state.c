/* SPDX-License-Identifier: MIT */
/*
 * The server's shared state that every feature module may use: the server
 * object's lists, stopping, and the provided-buffer pool with its waiters.
 * The loop, listener and signals (src/main/server.c) sit on top of every
 * module.
 */
#include "server.h"

void server_lists_init(struct server *s)
{
	list_init(&s->conns);
	list_init(&s->dead_conns);
	list_init(&s->handshaking);
	list_init(&s->uninitialized);
	list_init(&s->sessions);
	list_init(&s->buf_waiters);
	list_init(&s->mem_waiters);
	list_init(&s->mem_paused);
	list_init(&s->netconns);
}

void server_stop(struct server *s, int exit_code)
{
	if (!s->stopping)
		s->exit_code = exit_code;
	s->stopping = true;
}

void server_recycle_buf(struct server *s, unsigned bid)
{
	uring_bufs_recycle(&s->bufs, bid);
}

/*
 * Re-arms every reader that found the buffer ring empty. Runs between loop
 * iterations, when every buffer has been copied out and recycled, so each
 * waiter gets a fair chance; one that loses again simply queues again. (Waking
 * one waiter per recycled buffer is not enough: a woken read that ends in
 * EOF recycles nothing and the chain stops.)
 */
void server_rearm_buf_waiters(struct server *s)
{
	struct list_head todo;

	if (list_empty(&s->buf_waiters))
		return;
	list_init(&todo);
	list_splice_tail(&s->buf_waiters, &todo);
	while (!list_empty(&todo)) {
		struct buf_waiter *w = list_first_entry(&todo, struct buf_waiter, link);

		list_del(&w->link);
		w->rearm(w);
	}
}

void server_wait_for_buf(struct server *s, struct buf_waiter *w)
{
	s->metrics.buf_exhausted++;
	if (!list_linked(&w->link) || w->link.next == NULL)
		list_add_tail(&w->link, &s->buf_waiters);
}

