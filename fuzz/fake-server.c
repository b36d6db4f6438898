/* SPDX-License-Identifier: MIT */
#include <errno.h>

#include "conn.h"
#include "exec.h"
#include "fake-server.h"
#include "rpc.h"
#include "server.h"

/* The server's wiring (server.c) less the file methods, which are not linked. */
static const struct conn_handlers handlers = {
	.message = rpc_on_message,
	.closed = exec_conn_closed,
	.drained = exec_conn_drained,
};

void fake_server_reset(struct server *s, const struct config *cfg)
{
	s->cfg = *cfg;
	server_lists_init(s);
	s->n_conns = s->n_sessions = 0;
	s->stopping = false;
	s->exit_code = 0;
	conn_set_handlers(&handlers);
}

void fake_kernel_run(bool (*step)(unsigned i, struct fake_sqe *e, void *ctx), void *ctx)
{
	bool progress;

	do {
		progress = false;
		for (unsigned i = 0; i < fake_ring_count(); i++) {
			struct fake_sqe *e = fake_ring_get(i);
			struct uring_op *target;
			int j;

			if (e->done)
				continue;
			switch (e->sqe.opcode) {
			case IORING_OP_ASYNC_CANCEL:
			case IORING_OP_TIMEOUT_REMOVE:
				/* read before completing: a handler may queue SQEs and move e */
				target = (struct uring_op *)(uintptr_t)e->sqe.addr;
				fake_ring_complete(i, 0, 0);
				j = fake_ring_find(target);
				if (j >= 0)
					fake_ring_complete((unsigned)j, -ECANCELED, 0);
				progress = true;
				break;
			default:
				if (step(i, e, ctx))
					progress = true;
			}
		}
		fake_ring_compact();
	} while (progress);
}
