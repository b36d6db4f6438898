/* SPDX-License-Identifier: MIT */
/* The audit source's netlink socket: status, enabling, joining the read-only log group. */
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <linux/audit.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "evidence.h"

#ifndef AUDIT_TRUSTED_APP
#define AUDIT_TRUSTED_APP 1121 /* libaudit.h: user-space record, free text */
#endif
#ifndef AUDIT_NLGRP_READLOG
#define AUDIT_NLGRP_READLOG 1
#endif

static int send_msg(int fd, uint16_t type, uint16_t flags, uint32_t seq, const void *body,
		    size_t len)
{
	struct {
		struct nlmsghdr h;
		uint8_t body[sizeof(struct audit_status)];
	} m;
	struct sockaddr_nl to = { .nl_family = AF_NETLINK };

	if (len > sizeof(m.body))
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	m.h.nlmsg_len = (uint32_t)NLMSG_LENGTH(len);
	m.h.nlmsg_type = type;
	m.h.nlmsg_flags = flags;
	m.h.nlmsg_seq = seq;
	if (len)
		memcpy(m.body, body, len);
	if (sendto(fd, &m, m.h.nlmsg_len, 0, (struct sockaddr *)&to, sizeof(to)) < 0)
		return -errno;
	return 0;
}

int sandbox_audit_parse_status(const void *payload, size_t len, struct sandbox_audit_status *st)
{
	struct audit_status a;

	/* The kernel's struct grew over time: the first eight fields are old. */
	if (len < offsetof(struct audit_status, backlog) + sizeof(a.backlog))
		return -EINVAL;
	memset(&a, 0, sizeof(a));
	memcpy(&a, payload, len < sizeof(a) ? len : sizeof(a));
	st->enabled = a.enabled != 0;
	st->lost = a.lost;
	st->backlog = a.backlog;
	st->backlog_limit = a.backlog_limit;
	st->rate_limit = a.rate_limit;
	return 0;
}

int sandbox_audit_request_status(int fd, uint32_t seq)
{
	return send_msg(fd, AUDIT_GET, NLM_F_REQUEST, seq, NULL, 0);
}

/* Blocking exchange at start-up: waits (1 s at most) for the reply to seq of the given type. */
static int wait_reply(int fd, uint32_t seq, uint16_t type, struct sandbox_audit_status *st)
{
	uint8_t buf[8192];

	for (int tries = 0; tries < 16; tries++) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n < 0)
			return -errno;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_seq != seq)
				continue;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
					return -EIO;
				if (e->error)
					return e->error;
				if (type == NLMSG_ERROR)
					return 0;
				continue;
			}
			if (h->nlmsg_type == type && type == AUDIT_GET)
				return sandbox_audit_parse_status(NLMSG_DATA(h), h->nlmsg_len - NLMSG_HDRLEN, st);
		}
	}
	return -ETIMEDOUT;
}

static int set_enabled(int fd, uint32_t enabled, uint32_t seq)
{
	struct audit_status a = { .mask = AUDIT_STATUS_ENABLED, .enabled = enabled };

	return send_msg(fd, AUDIT_SET, NLM_F_REQUEST | NLM_F_ACK, seq, &a, sizeof(a));
}

int sandbox_audit_disable(int fd)
{
	return set_enabled(fd, 0, 3);
}

int sandbox_audit_hold(void)
{
	int fd = open(SANDBOX_AUDIT_USERS_PATH, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0)
		return -errno;
	/* An exclusive holder is a server deciding at exit: a moment; 2 s at most. */
	for (int tries = 0; flock(fd, LOCK_SH | LOCK_NB) < 0; tries++) {
		int r = -errno;

		if (r != -EWOULDBLOCK || tries == 100) {
			close(fd);
			return r;
		}
		usleep(20000);
	}
	return fd;
}

int sandbox_audit_release(int fd, int hold_fd)
{
	int r;

	if (hold_fd < 0) /* no hold: nobody can be told apart; leave auditing as it is */
		return 0;
	/* Converting to exclusive succeeds only when no other shared hold is left. */
	if (flock(hold_fd, LOCK_EX | LOCK_NB) < 0) {
		r = errno == EWOULDBLOCK ? 0 : -errno;
		close(hold_fd);
		return r;
	}
	r = 0;
	if (access(SANDBOX_AUDIT_ENABLED_PATH, F_OK) == 0) {
		r = sandbox_audit_disable(fd);
		if (r >= 0) {
			(void)unlink(SANDBOX_AUDIT_ENABLED_PATH);
			r = 1;
		}
	}
	close(hold_fd); /* after turning it off: a server starting now sees it off */
	return r;
}

int sandbox_audit_open(bool enable, struct sandbox_audit_status *st, bool *ret_enabled_by_us,
		       char *err, size_t errsz)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct timeval tv = { .tv_sec = 1 };
	int fd, r = 0, grp = AUDIT_NLGRP_READLOG, sz = 4 << 20;

	*ret_enabled_by_us = false;
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errsz, "no audit netlink socket (%s)", strerror(-r));
		return r;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    (r = sandbox_audit_request_status(fd, 1)) < 0 || (r = wait_reply(fd, 1, AUDIT_GET, st)) < 0) {
		r = r ?: -errno;
		snprintf(err, errsz, "the audit status cannot be read (%s)", strerror(-r));
		goto fail;
	}
	if (!st->enabled) {
		if (!enable) {
			r = -ENOTCONN;
			snprintf(err, errsz, "auditing is off on this host (uexec turns it on only with "
					     "--enable-audit)");
			goto fail;
		}
		if ((r = set_enabled(fd, 1, 2)) < 0 || (r = wait_reply(fd, 2, NLMSG_ERROR, st)) < 0) {
			snprintf(err, errsz, "auditing cannot be turned on (%s)", strerror(-r));
			goto fail;
		}
		*ret_enabled_by_us = true;
		st->enabled = true;
		/* For the last uexec reading audit to turn it off again (sandbox_audit_release). */
		r = open(SANDBOX_AUDIT_ENABLED_PATH, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (r >= 0)
			close(r);
		r = 0;
	}
	if (setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &grp, sizeof(grp)) < 0) {
		r = -errno;
		snprintf(err, errsz, "cannot join the audit log group (%s; CAP_AUDIT_READ needed)",
			 strerror(-r));
		if (*ret_enabled_by_us)
			(void)sandbox_audit_disable(fd);
		*ret_enabled_by_us = false;
		goto fail;
	}
	/* Room for bursts: a full queue drops records (ENOBUFS: the evidence is then incomplete). */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	return fd;
fail:
	close(fd);
	return r;
}

int sandbox_audit_barrier(int fd, pid_t pid, uint32_t seq)
{
	char text[64];
	int n = snprintf(text, sizeof(text), "uexec-evidence-barrier=%d:%u", (int)pid, seq);
	struct {
		struct nlmsghdr h;
		char body[64];
	} m;
	struct sockaddr_nl to = { .nl_family = AF_NETLINK };

	memset(&m, 0, sizeof(m));
	m.h.nlmsg_len = (uint32_t)NLMSG_LENGTH((size_t)n + 1);
	m.h.nlmsg_type = AUDIT_TRUSTED_APP;
	m.h.nlmsg_flags = NLM_F_REQUEST;
	m.h.nlmsg_seq = seq;
	memcpy(m.body, text, (size_t)n + 1);
	if (sendto(fd, &m, m.h.nlmsg_len, 0, (struct sockaddr *)&to, sizeof(to)) < 0)
		return -errno;
	return 0;
}

bool sandbox_audit_is_barrier(unsigned type, const char *text, size_t len, pid_t pid,
			      uint32_t *ret_seq)
{
	static const char key[] = "uexec-evidence-barrier=";
	const char *end = text + len, *p = text;
	uint32_t sender = 0;

	if (type != AUDIT_TRUSTED_APP)
		return false;
	/*
	 * The kernel writes the sender's pid first ("audit(T:S): pid=N uid=...
	 * msg='...'"): a record another process sent, whatever its text says,
	 * is not our barrier (it would end the waits before the records came).
	 */
	while (p < end && *p != ')')
		p++;
	if (end - p < 7 || memcmp(p, "): pid=", 7) != 0)
		return false;
	for (p += 7; p < end && *p >= '0' && *p <= '9'; p++)
		sender = sender * 10 + (uint32_t)(*p - '0');
	if (p >= end || *p != ' ' || sender != (uint32_t)pid)
		return false;
	for (; p + sizeof(key) - 1 < end; p++)
		if (memcmp(p, key, sizeof(key) - 1) == 0) {
			uint32_t who = 0, v = 0;

			for (p += sizeof(key) - 1; p < end && *p >= '0' && *p <= '9'; p++)
				who = who * 10 + (uint32_t)(*p - '0');
			if (p >= end || *p != ':' || who != (uint32_t)pid)
				return false; /* another server's */
			for (p++; p < end && *p >= '0' && *p <= '9'; p++)
				v = v * 10 + (uint32_t)(*p - '0');
			*ret_seq = v;
			return true;
		}
	return false;
}
