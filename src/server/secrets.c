/* SPDX-License-Identifier: MIT */
/* The server's secret files by device and inode (secrets.h). */
#include <errno.h>
#include <sys/stat.h>
#include <time.h>

#include "log.h"
#include "secrets.h"
#include "server.h"

void server_secret_cache_refresh(struct secret_cache *c, char *const *paths, size_t n,
				 uint64_t now_ns)
{
	struct secret_ids *ids = &c->ids;
	struct stat st;

	ids->n = 0;
	ids->all = c->incomplete;
	c->taken_ns = now_ns;
	/* Newest first (the list only grows at each SIGHUP): the files in use now come first. */
	for (size_t i = n; i-- > 0 && !ids->all;) {
		if (stat(paths[i], &st) < 0) {
			/* Gone (rotated away, a name of an older configuration): nothing to protect. */
			if (errno == ENOENT || errno == ENOTDIR)
				continue;
			/* Whatever sits there now cannot be told apart from other files. */
			log_error_errno_ratelimited(errno, "Cannot stat %s, one of the server's secret "
						    "files (unsandboxed file requests are refused "
						    "until it can be)",
						    paths[i]);
			ids->all = true;
			break;
		}
		if (ids->n == SECRET_IDS_MAX) {
			/* Fail closed: no file can be told apart from the ones left out. */
			log_error_ratelimited("More than %d of the server's secret files exist (kept "
					      "since start-up and each reload): unsandboxed file "
					      "requests are refused until uexec restarts",
					      SECRET_IDS_MAX);
			ids->all = true;
			break;
		}
		ids->id[ids->n].dev = st.st_dev;
		ids->id[ids->n].ino = st.st_ino;
		ids->n++;
	}
}

const struct secret_ids *server_secret_cache_get(struct secret_cache *c, char *const *paths,
						 size_t n, uint64_t now_ns)
{
	/* At most one pass a second, however many requests come: a stat per path each. */
	if (c->taken_ns == 0 || now_ns - c->taken_ns >= SECRET_IDS_MAX_AGE_NS)
		server_secret_cache_refresh(c, paths, n, now_ns);
	return &c->ids;
}

bool server_secret_ids_has(const struct secret_ids *ids, dev_t dev, ino_t ino)
{
	if (ids->all)
		return true;
	for (size_t i = 0; i < ids->n; i++)
		if (ids->id[i].dev == dev && ids->id[i].ino == ino)
			return true;
	return false;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void server_secrets_refresh(struct server *s)
{
	server_secret_cache_refresh(&s->secrets, s->sandbox.secrets, s->sandbox.n_secrets, now_ns());
}

const struct secret_ids *server_secret_ids(struct server *s)
{
	return server_secret_cache_get(&s->secrets, s->sandbox.secrets, s->sandbox.n_secrets, now_ns());
}
