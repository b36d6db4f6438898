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
 *
 * The spawner is the process's main thread, and the server (ring, loop,
 * everything else) runs on a thread it starts (spawn_thread_main()): a live
 * upgrade's execve must keep the task every child's PDEATHSIG refers to, and
 * only the thread that calls execve survives it. So the execve (and the
 * rollback's) runs here too, through spawn_thread_call(), and in the new
 * binary the same task is again the main thread and the spawner: the children
 * of every generation keep one parent thread.
 */
#include <errno.h>
#include <malloc.h>
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
	pthread_cond_t idle;   /* spawn_thread_done() waits for the queue to empty */
	bool serving;          /* spawn_thread_main() runs: the main thread takes jobs */
	bool busy;             /* the main thread runs a job */
	bool running, stop;
	int efd;
	uint64_t ebuf;
	struct uring_op op;
	struct server *srv;
} sp = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER,
	 .called = PTHREAD_COND_INITIALIZER, .idle = PTHREAD_COND_INITIALIZER, .efd = -1,
	 .queue = LIST_HEAD_INIT(sp.queue), .finished = LIST_HEAD_INIT(sp.finished) };

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
		sp.busy = true;
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
		sp.busy = false;
		if (list_empty(&sp.queue))
			pthread_cond_broadcast(&sp.idle);
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

/* The server's thread: runs it, then lets the main thread's job loop end. */
struct serve {
	int (*fn)(void *arg);
	void *arg;
	int r;
};

static void *server_thread(void *arg)
{
	struct serve *sv = arg;

	sv->r = sv->fn(sv->arg);
	pthread_mutex_lock(&sp.lock);
	sp.stop = true;
	pthread_cond_broadcast(&sp.cond);
	pthread_mutex_unlock(&sp.lock);
	return NULL;
}

int spawn_thread_main(int (*server_main)(void *arg), void *arg)
{
	struct serve sv = { .fn = server_main, .arg = arg };
	pthread_attr_t attr;
	pthread_t th;
	sigset_t all;
	int r;

	/*
	 * The server allocates in the main arena, as when it ran on the main
	 * thread: malloc_trim() gives a thread arena's free top back only past
	 * the trim threshold, which glibc raises to twice the largest block freed
	 * (the BPF load's BTF: megabytes), and an idle server kept 11 MB. The
	 * worker threads share it too (they allocate little; the arena was
	 * locked before as well: the process had threads).
	 */
	(void)mallopt(M_ARENA_MAX, 1);
	/* The stack the server had as the main thread (RLIMIT_STACK is often unlimited under services). */
	sp.serving = true; /* before the server starts: its spawns and calls come here */
	on_spawner = true;
	r = pthread_attr_init(&attr);
	if (r == 0) {
		r = pthread_attr_setstacksize(&attr, SPAWN_SERVER_STACK);
		if (r == 0)
			r = pthread_create(&th, &attr, server_thread, &sv); /* with this thread's signal mask */
		(void)pthread_attr_destroy(&attr); /* only an initialised one */
	}
	if (r != 0) {
		/* No thread: everything on this one, spawns too (the loop waits in CLONE_VFORK). */
		sp.serving = on_spawner = false;
		return server_main(arg);
	}
	/* It takes no signals: they all go to the loop's signalfd (and a child starts with none). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	(void)spawner_main(NULL);
	pthread_join(th, NULL);
	return sv.r;
}

int spawn_thread_init(struct server *s)
{
	sp.srv = s;
	if (!sp.serving)
		return 0; /* tests, the fs helper: spawns run where they are asked for */
	sp.efd = eventfd(0, EFD_CLOEXEC);
	if (sp.efd < 0)
		return -errno;
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

	if (!sp.serving || on_spawner)
		return fn(arg);
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
	if (!sp.running)
		return;
	/* Spawns and calls already queued still run; then spawns run where they are asked for. */
	pthread_mutex_lock(&sp.lock);
	while (!list_empty(&sp.queue) || sp.busy)
		pthread_cond_wait(&sp.idle, &sp.lock);
	sp.running = false;
	pthread_mutex_unlock(&sp.lock);
	complete_finished();
	sp.efd = safe_close(sp.efd);
}
