/* SPDX-License-Identifier: MIT */
/*
 * The spawner thread. See spawner.h and docs/ARCHITECTURE.md "The spawner
 * thread".
 *
 * One thread, not a pool: the children run on one preallocated stack each
 * (spawn.c, CLONE_VM) and the thread waits in CLONE_VFORK for one child at a
 * time, which is also what the kernel needs of it (a clone is cheap; the wait
 * is the child's time to exec). Every child of the server is the thread's
 * (PR_SET_PDEATHSIG is relative to the parent *thread*): a spawn the loop
 * makes itself goes through spawn_thread_call().
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "server.h"
#include "spawner.h"

/* A spawn_thread_call() in flight: the loop thread waits on its condition. */
struct spawn_call {
	struct spawn_job job;
	int (*fn)(void *arg);
	void *arg;
	bool finished;
};

/* Module state: one server per process (docs/ARCHITECTURE.md "Global state"). */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;   /* the thread waits for work */
	pthread_cond_t called; /* spawn_thread_call() waits for its job */
	struct list_head queue, finished;
	pthread_t thread;
	bool running, stop;
	int efd;
	uint64_t ebuf;
	struct uring_op op;
	struct server *srv;
} sp = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER,
	 .called = PTHREAD_COND_INITIALIZER, .efd = -1 };

static __thread bool on_spawner;

/* clone3's errno once it was refused, until the loop thread has logged it. */
static int clone3_refused_errno;

void spawn_thread_defer_clone3_refused(int err)
{
	__atomic_store_n(&clone3_refused_errno, err, __ATOMIC_RELEASE);
}

void spawn_thread_log_deferred(void)
{
	int err = __atomic_exchange_n(&clone3_refused_errno, 0, __ATOMIC_ACQ_REL);

	if (err > 0)
		log_warning_errno(-err, "clone3 with CLONE_INTO_CGROUP is refused here: each process "
				  "joins its cgroup by writing cgroup.procs before exec instead "
				  "(slower spawns)");
}

static void *spawner_main(void *arg)
{
	(void)arg;
	on_spawner = true;
	pthread_mutex_lock(&sp.lock);
	for (;;) {
		struct spawn_job *j;

		while (list_empty(&sp.queue) && !sp.stop)
			pthread_cond_wait(&sp.cond, &sp.lock);
		if (list_empty(&sp.queue))
			break; /* stopping, nothing left that was asked for */
		j = list_first_entry(&sp.queue, struct spawn_job, link);
		list_del(&j->link);
		pthread_mutex_unlock(&sp.lock);

		if (j->done) {
			j->step = NULL;
			j->r = spawn_process(j->args, j->res, &j->step);
		} else {
			struct spawn_call *c = container_of(j, struct spawn_call, job);

			j->r = c->fn(c->arg);
		}

		pthread_mutex_lock(&sp.lock);
		if (j->done) {
			uint64_t one = 1;
			ssize_t _unused_ n;

			list_add_tail(&j->link, &sp.finished);
			n = write(sp.efd, &one, sizeof(one));
		} else {
			container_of(j, struct spawn_call, job)->finished = true;
			pthread_cond_broadcast(&sp.called);
		}
	}
	pthread_mutex_unlock(&sp.lock);
	return NULL;
}

static void arm(void);

/* The jobs the thread finished, their done() in the order they were submitted. */
static void complete_finished(void)
{
	struct list_head done;

	list_init(&done);
	pthread_mutex_lock(&sp.lock);
	list_splice_tail(&sp.finished, &done);
	pthread_mutex_unlock(&sp.lock);
	spawn_thread_log_deferred();
	while (!list_empty(&done)) {
		struct spawn_job *j = list_first_entry(&done, struct spawn_job, link);

		list_del(&j->link);
		j->done(j);
	}
}

static void on_eventfd(struct uring_op *op, int res, uint32_t flags)
{
	(void)op;
	(void)res;
	(void)flags;
	if (sp.srv->stopping || !sp.running)
		return; /* spawn_thread_done() completes what is left */
	complete_finished();
	arm();
}

static void arm(void)
{
	io_uring_prep_read(uring_get_sqe(&sp.srv->ring, &sp.op, on_eventfd), sp.efd, &sp.ebuf,
			   sizeof(sp.ebuf), 0);
}

int spawn_thread_init(struct server *s)
{
	sigset_t all, old;
	int r;

	list_init(&sp.queue);
	list_init(&sp.finished);
	sp.srv = s;
	sp.stop = false;
	sp.efd = eventfd(0, EFD_CLOEXEC);
	if (sp.efd < 0)
		return -errno;
	/* It takes no signals: they all go to the loop's signalfd (and a child starts with none). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = -pthread_create(&sp.thread, NULL, spawner_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0) {
		sp.efd = safe_close(sp.efd);
		return r;
	}
	sp.running = true;
	arm();
	return 0;
}

bool spawn_thread_running(void)
{
	return sp.running;
}

bool spawn_thread_is_current(void)
{
	return on_spawner;
}

void spawn_thread_submit(struct spawn_job *j)
{
	pthread_mutex_lock(&sp.lock);
	list_add_tail(&j->link, &sp.queue);
	pthread_cond_signal(&sp.cond);
	pthread_mutex_unlock(&sp.lock);
}

int spawn_thread_call(int (*fn)(void *arg), void *arg)
{
	struct spawn_call c = { .fn = fn, .arg = arg };

	pthread_mutex_lock(&sp.lock);
	list_add_tail(&c.job.link, &sp.queue);
	pthread_cond_signal(&sp.cond);
	while (!c.finished)
		pthread_cond_wait(&sp.called, &sp.lock);
	pthread_mutex_unlock(&sp.lock);
	return c.job.r;
}

void spawn_thread_done(void)
{
	struct list_head left;

	if (!sp.running)
		return;
	/* Calls and spawns already queued still run: the thread stops once the queue is empty. */
	pthread_mutex_lock(&sp.lock);
	sp.stop = true;
	pthread_cond_broadcast(&sp.cond);
	pthread_mutex_unlock(&sp.lock);
	pthread_join(sp.thread, NULL);
	sp.running = false;
	complete_finished();
	list_init(&left);
	list_splice_tail(&sp.queue, &left);
	list_init(&sp.queue);
	while (!list_empty(&left)) {
		struct spawn_job *j = list_first_entry(&left, struct spawn_job, link);

		list_del(&j->link);
		j->r = -ECANCELED;
		j->done(j);
	}
	sp.efd = safe_close(sp.efd);
}
