/* SPDX-License-Identifier: MIT */
/*
 * Shell snapshots (process/start's `shellSnapshot`, capability
 * shellSnapshotV2): the state a login shell has after its startup files
 * (functions, aliases, options, exported variables) is captured once per
 * scope by running that shell as a child watched by the ring, cached in the
 * session, and replayed before each matching `<shell> -lc <command>`, which
 * then runs without reading the startup files again. docs/ARCHITECTURE.md
 * "Shell snapshots" has the whole story.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct conn;
struct session;
struct spawn_args;

/* The reference's limits (0.171.0): a client cannot make them larger. */
#define SNAP_MAX_SCOPE_BYTES 256
#define SNAP_MAX_ENTRIES 16                    /* cached scopes per session */
#define SNAP_MAX_TOTAL 64                      /* cached scopes in the whole server */
#define SNAP_MAX_CAPTURES 16                   /* captures running at once in the server */
#define SNAP_MAX_BYTES (512 * 1024)            /* a snapshot: its state and environment */
#define SNAP_MAX_CAPTURE_BYTES (8 * SNAP_MAX_BYTES) /* what the capture may print, noise too */
#define SNAP_MAX_KEY_BYTES (256 * 1024)        /* the cache key (scope, shell, cwd, policies) */
#define SNAP_TIMEOUT_MS 10000
#define SNAP_RETRY_MS 1000                     /* after a failed capture, before another */
#define SNAP_MAX_ATTEMPTS 3
#define SNAP_ENV_CHUNK 61440                   /* state replayed through the environment */
/* The descriptor the command reads its snapshot from (closed by the snapshot's first line). */
#define SNAP_FD 16

enum snap_shell { SNAP_BASH, SNAP_ZSH, SNAP_SH };

/* The object's shape (serde's errors for ShellSnapshotRequest and ShellInfo). Returns 0 or -EINVAL. */
int snap_check_shape(json_t *snap, char *err, size_t size);

/*
 * The scope's length, checked for any shellSnapshot (whatever argv is), as
 * the reference does. Returns 0, or -EINVAL with the reference's text.
 */
int snap_check_scope(json_t *snap, char *err, size_t size);

/* What to change in the command's launch: argv[1] and argv[2], environment, a reader. */
struct snap_launch {
	const char *flag; /* the new argv[1] (static) */
	char *script;     /* the new argv[2] */
	char **env;       /* the new environment (NULL-terminated strv) */
	int fd;           /* the reader to inherit as SNAP_FD, or -1 (state in the environment) */
};

void snap_launch_done(struct snap_launch *l);

/*
 * Applies a SNAP_APPLY launch to process/start's argv (strings borrowed from
 * l, which must outlive the spawn), environment (replaced) and spawn args.
 */
void snap_apply(struct snap_launch *l, char **argv, char ***envp, struct spawn_args *sa);

/* The inputs of a launch, borrowed from process/start. */
struct snap_start {
	json_t *snap;       /* the shellSnapshot object (decoded shape) */
	json_t *argv;       /* the request's argv (array of strings) */
	json_t *env;        /* the request's env object (its names win over the snapshot's) */
	json_t *env_policy; /* or NULL */
	json_t *cwd;        /* the cwd string, or NULL */
	json_t *sandbox;    /* or NULL */
	json_t *params;     /* the whole request, kept while parked */
};

enum snap_result {
	SNAP_NONE,   /* run the command as asked */
	SNAP_APPLY,  /* *launch is filled: apply it */
	SNAP_PARKED, /* a capture runs; resume() is called later with the request */
	SNAP_ERROR,  /* replied with an error */
};

/* Called when a parked request may go on: start it again; it will not be parked twice. */
typedef void (*snap_resume_fn)(struct conn *c, json_t *id, json_t *params);

/*
 * Decides for one process/start once its launch (sa: program, argv with
 * arg0, environment, cwd, sandbox plan) is known. may_park false: never
 * wait (a resumed request), use what the cache holds.
 */
enum snap_result snap_prepare(struct conn *c, json_t *id, const struct snap_start *st,
			      const struct spawn_args *sa, bool may_park, snap_resume_fn resume,
			      struct snap_launch *ret);

/* The session is going away: its captures are killed, parked requests dropped, memory freed. */
void snap_session_free(struct session *ss);
/* Server shutdown, after every session is freed: the captures left are killed, reaped, freed. */
void snap_shutdown(void);

/*
 * shell-snapshot-script.c: the capture script for a shell (nonce: the
 * markers' random part), and the state restored from a capture's sections.
 */
char *snap_capture_script(enum snap_shell sh, const char *nonce);

struct snap_sections {
	const char *part[6]; /* SNAP_SEC_*: start, length */
	size_t len[6];
	bool fd_ok;          /* the shell could open /dev/fd/SNAP_FD */
};
enum { SNAP_SEC_SHOPT, SNAP_SEC_SETO, SNAP_SEC_FUNCS, SNAP_SEC_ALIASES, SNAP_SEC_ENV, SNAP_SEC_END };

/* Splits a capture's output at its markers. Returns 0 or -EBADMSG. */
int snap_parse_sections(enum snap_shell sh, const char *out, size_t len, const char *nonce,
			struct snap_sections *ret);
/* The state script (a string to source) from the sections; NULL without memory. */
char *snap_render_state(enum snap_shell sh, const struct snap_sections *s, size_t *ret_len);
/*
 * Splits the env section (env -0's output) into a strv of NAME=value
 * entries, dropping what is not one and the capture's PWD and OLDPWD.
 * Returns 0 or -ENOMEM.
 */
int snap_parse_env(const char *s, size_t n, char ***ret);
