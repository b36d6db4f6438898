/* SPDX-License-Identifier: MIT */
/*
 * Worker pool for filesystem work without a ring operation. See worker.h.
 *
 * Why threads and not a helper process: the jobs need the server's view of
 * the filesystem and no privilege change; a thread pool has no per-job
 * process cost. Threads never run on the hot path: process I/O, sockets and
 * timers stay on the ring. Completions come back through an eventfd read on
 * the ring, so the loop still waits in exactly one place.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"
#include "server.h"
#include "worker.h"

struct worker_pool {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct list_head queue;
	struct list_head finished;
	pthread_t *threads;
	unsigned n_threads;
	unsigned pending;
	bool stop;
	int efd;
	uint64_t ebuf;
	struct uring_op op;
	struct server *srv;
};

static void *worker_main(void *arg)
{
	struct worker_pool *p = arg;

	for (;;) {
		struct work *w;
		uint64_t one = 1;
		ssize_t _unused_ n;

		pthread_mutex_lock(&p->lock);
		while (list_empty(&p->queue) && !p->stop)
			pthread_cond_wait(&p->cond, &p->lock);
		if (p->stop) {
			pthread_mutex_unlock(&p->lock);
			return NULL;
		}
		w = list_first_entry(&p->queue, struct work, link);
		list_del(&w->link);
		pthread_mutex_unlock(&p->lock);

		w->run(w);

		pthread_mutex_lock(&p->lock);
		list_add_tail(&w->link, &p->finished);
		pthread_mutex_unlock(&p->lock);
		n = write(p->efd, &one, sizeof(one));
	}
}

static void arm(struct worker_pool *p);

static void on_eventfd(struct uring_op *op, int res, uint32_t flags)
{
	struct worker_pool *p = container_of(op, struct worker_pool, op);
	struct list_head done;

	list_init(&done);
	pthread_mutex_lock(&p->lock);
	while (!list_empty(&p->finished)) {
		struct work *w = list_first_entry(&p->finished, struct work, link);

		list_del(&w->link);
		list_add_tail(&w->link, &done);
	}
	pthread_mutex_unlock(&p->lock);

	while (!list_empty(&done)) {
		struct work *w = list_first_entry(&done, struct work, link);

		list_del(&w->link);
		p->pending--;
		w->done(w);
	}
	if (!p->srv->stopping)
		arm(p);
}

static void arm(struct worker_pool *p)
{
	struct io_uring_sqe *sqe = uring_get_sqe(&p->srv->ring, &p->op, on_eventfd);

	io_uring_prep_read(sqe, p->efd, &p->ebuf, sizeof(p->ebuf), 0);
}

int worker_pool_init(struct server *s, unsigned n)
{
	struct worker_pool *p = calloc(1, sizeof(*p));
	sigset_t all, old;
	int r = 0;

	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	list_init(&p->queue);
	list_init(&p->finished);
	p->srv = s;
	p->efd = eventfd(0, EFD_CLOEXEC);
	p->threads = calloc(n, sizeof(pthread_t));
	if (p->efd < 0 || !p->threads) {
		r = p->efd < 0 ? -errno : -ENOMEM;
		goto fail;
	}
	/* Workers take no signals: they all go to the signalfd of the loop. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (; p->n_threads < n; p->n_threads++) {
		r = -pthread_create(&p->threads[p->n_threads], NULL, worker_main, p);
		if (r < 0)
			break;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0 && p->n_threads == 0)
		goto fail;
	s->workers = p;
	arm(p);
	return 0;
fail:
	safe_close(p->efd);
	free(p->threads);
	free(p);
	return r;
}

void worker_submit(struct server *s, struct work *w)
{
	struct worker_pool *p = s->workers;

	pthread_mutex_lock(&p->lock);
	list_add_tail(&w->link, &p->queue);
	p->pending++;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

unsigned worker_pending(const struct server *s)
{
	return s->workers ? s->workers->pending : 0;
}

void worker_pool_done(struct server *s)
{
	struct worker_pool *p = s->workers;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->n_threads; i++)
		pthread_join(p->threads[i], NULL);
	/* Finish everything so owners can free their jobs (their connections are gone). */
	list_splice_tail(&p->queue, &p->finished);
	while (!list_empty(&p->finished)) {
		struct work *w = list_first_entry(&p->finished, struct work, link);

		list_del(&w->link);
		w->done(w);
	}
	safe_close(p->efd);
	free(p->threads);
	free(p);
	s->workers = NULL;
}
