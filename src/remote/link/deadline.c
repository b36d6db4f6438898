/* SPDX-License-Identifier: MIT */
/*
 * The deadline list of remote mode: one ring timer armed for the earliest
 * deadline, so that the mode's many short-lived objects (registry calls,
 * validations, keepalives, the backoff) own no ring op and can be freed at
 * once. The bottom of src/remote/link: every other file calls it, it calls
 * none of them (a deadline's fn is its owner's hook).
 */
#include <time.h>

#include "remote-internal.h"
#include "server.h"

uint64_t remote_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void on_timer(struct uring_timer *t, bool fired);

static void timer_rearm(struct remote *r)
{
	struct remote_deadline *d;
	uint64_t now;

	if (r->state == REMOTE_STOPPED || list_empty(&r->deadlines))
		return;
	d = list_first_entry(&r->deadlines, struct remote_deadline, link);
	now = remote_now_ms();
	uring_timer_arm(&r->srv->ring, &r->timer, d->at_ms > now ? d->at_ms - now : 0, on_timer);
}

static void on_timer(struct uring_timer *t, bool fired)
{
	struct remote *r = container_of(t, struct remote, timer);
	uint64_t now = remote_now_ms();

	if (!fired || r->state == REMOTE_STOPPED)
		return;
	while (!list_empty(&r->deadlines)) {
		struct remote_deadline *d = list_first_entry(&r->deadlines, struct remote_deadline, link);

		if (d->at_ms > now)
			break;
		list_del(&d->link);
		d->fn(d);
		if (r->state == REMOTE_STOPPED)
			return;
	}
	timer_rearm(r);
}

void remote_deadline_set(struct remote *r, struct remote_deadline *d, uint64_t ms,
			 void (*fn)(struct remote_deadline *d))
{
	struct remote_deadline *i;
	bool first;

	list_del(&d->link);
	d->at_ms = remote_now_ms() + ms;
	d->fn = fn;
	/* Few deadlines (a link, its keepalive, up to 32 validations): a sorted list will do. */
	list_for_each_entry(i, &r->deadlines, link)
		if (i->at_ms > d->at_ms)
			break;
	list_add_tail(&d->link, &i->link);
	first = r->deadlines.next == &d->link;
	if (first)
		timer_rearm(r);
}

void remote_deadline_clear(struct remote_deadline *d)
{
	list_del(&d->link); /* the timer may fire early for it: it then finds nothing due */
}

void remote_deadlines_stop(struct remote *r)
{
	while (!list_empty(&r->deadlines))
		list_del(r->deadlines.next);
	uring_timer_cancel(&r->timer);
}
