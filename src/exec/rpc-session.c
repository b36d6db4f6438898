/* SPDX-License-Identifier: MIT */
/*
 * initialize (PROTOCOL.md §6.1): a new session, or resumeSessionId; and what
 * a connection's end or drained output means for its session.
 */
#include <errno.h>

#include "conn.h"
#include "exec.h"
#include "log.h"
#include "params.h"
#include "rpc.h"
#include "session.h"

/*
 * What the env layer built at start, handed down by the executable's wiring
 * (exec_set_environment): initialize's environmentInfo, a PTY's SHELL.
 */
static struct {
	const char *login_shell;
	json_t *info;
} environment;

void exec_set_environment(const char *login_shell, json_t *info)
{
	environment.login_shell = login_shell;
	environment.info = info;
}

const char *exec_login_shell(void)
{
	return environment.login_shell;
}

void exec_rpc_initialize(struct conn *c, json_t *id, json_t *params)
{
	static const struct pfield fields[] = {
		{ "clientName", P_STRING, true, NULL },
		{ "resumeSessionId", P_STRING, false, NULL },
	};
	json_t *f[ELEMENTSOF(fields)], *res;
	struct session *ss;
	int r;

	if (!params_decode_or_reply(c, id, params, "InitializeParams", fields,
				    ELEMENTSOF(fields), f))
		return;
	/* After decoding, as the reference: a second initialize with bad params is -32602. */
	if (c->initialize_done) {
		rpc_reply_error(c, id, RPC_INVALID_REQUEST,
				"initialize may only be sent once per connection");
		return;
	}
	if (f[1]) {
		const char *sid = json_string_value(f[1]);

		ss = session_find(c->srv, sid);
		if (!ss) {
			rpc_reply_error_quoted(c, id, RPC_INVALID_REQUEST, "unknown session id ", f[1],
					       "");
			return;
		}
		if (ss->conn) {
			rpc_reply_error(c, id, RPC_SESSION_ATTACHED,
					"session %s is already attached to another connection", sid);
			return;
		}
		session_attach(ss, c);
		c->srv->metrics.sessions_resumed++;
		{
			struct log_ctx ctx = { .session = ss->id };
			struct log_field lf[] = { LOG_STR("client", c->peer) };

			log_event_ratelimited(LOG_INFO, "session.resumed", &ctx, lf, ELEMENTSOF(lf),
					      "Session %s resumed by %s", ss->id, c->peer);
		}
	} else if (c->srv->draining) {
		rpc_reply_error(c, id, RPC_SERVER_DRAINING,
				"exec-server is shutting down: no new sessions (resumeSessionId still "
				"attaches a session)");
		return;
	} else {
		r = session_new(c->srv, c, &ss);
		if (r == -EUSERS) {
			log_warning_ratelimited("Refusing a session for %s: session limit (%u) reached",
						c->peer, c->srv->cfg.max_sessions);
			rpc_reply_error(c, id, RPC_INVALID_REQUEST,
					"session limit reached: at most %u sessions",
					c->srv->cfg.max_sessions);
			return;
		}
		if (r < 0) {
			rpc_reply_errno_internal(c, id, r);
			return;
		}
		c->srv->metrics.sessions_created++;
	}
	conn_initialize_done(c);
	res = json_object();
	json_object_set_new(res, "sessionId", json_string(ss->id));
	json_object_set(res, "environmentInfo", environment.info);
	rpc_reply(c, id, res);
}

void exec_conn_closed(struct conn *c)
{
	if (c->sess) {
		session_detach(c->sess, c);
		c->sess = NULL;
	}
	rpc_cancel_pending(c);
	rpc_calls_fail(c);
}

void exec_conn_drained(struct conn *c)
{
	if (c->sess)
		session_output_drained(c->sess);
}
