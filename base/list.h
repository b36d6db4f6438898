/* SPDX-License-Identifier: MIT */
/*
 * Intrusive doubly linked list (kernel style). Leaf header.
 * An empty list's head points at itself; a detached node has NULL links.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

struct list_head {
	struct list_head *next, *prev;
};

#define LIST_HEAD_INIT(name) { &(name), &(name) }

static inline void list_init(struct list_head *h)
{
	h->next = h->prev = h;
}

static inline bool list_empty(const struct list_head *h)
{
	return h->next == h;
}

static inline bool list_linked(const struct list_head *n)
{
	return n->next != NULL && n->next != n;
}

static inline void list_add_tail(struct list_head *n, struct list_head *h)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}

static inline void list_del(struct list_head *n)
{
	if (!n->next)
		return;
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = NULL;
}

#define list_entry(ptr, type, member) container_of(ptr, type, member)
#define list_first_entry(h, type, member) list_entry((h)->next, type, member)

#define list_for_each_entry(pos, h, member)                                  \
	for (pos = list_entry((h)->next, __typeof__(*pos), member);          \
	     &pos->member != (h); pos = list_entry(pos->member.next, __typeof__(*pos), member))

#define list_for_each_entry_safe(pos, n, h, member)                          \
	for (pos = list_entry((h)->next, __typeof__(*pos), member),          \
	    n = list_entry(pos->member.next, __typeof__(*pos), member);      \
	     &pos->member != (h); pos = n, n = list_entry(n->member.next, __typeof__(*n), member))

/* Moves every node of from to the end of to; from becomes empty. */
static inline void list_splice_tail(struct list_head *from, struct list_head *to)
{
	while (!list_empty(from)) {
		struct list_head *n = from->next;

		list_del(n);
		list_add_tail(n, to);
	}
}
