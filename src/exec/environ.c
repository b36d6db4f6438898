/* SPDX-License-Identifier: MIT */
/*
 * Environment policy: inherit, default excludes, exclude, set, includeOnly,
 * then env on top (PROTOCOL.md §8.1).
 */
#include <errno.h>
#include <fnmatch.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "environ.h"
#include "jsonrpc.h"
#include "macro.h"
#include "params.h"

extern char **environ;

struct envvec {
	char **v;
	size_t n, cap;
};

void environ_strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

static ssize_t env_find(const struct envvec *e, const char *name, size_t nlen)
{
	for (size_t i = 0; i < e->n; i++)
		if (strncmp(e->v[i], name, nlen) == 0 && e->v[i][nlen] == '=')
			return (ssize_t)i;
	return -1;
}

static void env_remove(struct envvec *e, size_t i)
{
	free(e->v[i]);
	memmove(e->v + i, e->v + i + 1, (e->n - i - 1) * sizeof(char *));
	e->n--;
	e->v[e->n] = NULL;
}

/* Sets name=value (lengths given; name must not contain NUL, value may not either). */
static int env_set(struct envvec *e, const char *name, size_t nlen, const char *value, size_t vlen)
{
	ssize_t i;
	char *s;

	if (nlen == 0)
		return 0; /* "" names are dropped, like the reference */
	if (memchr(name, 0, nlen) || memchr(value, 0, vlen))
		return -EILSEQ;
	s = malloc(nlen + vlen + 2);
	if (!s)
		return -ENOMEM;
	memcpy(s, name, nlen);
	s[nlen] = '=';
	memcpy(s + nlen + 1, value, vlen);
	s[nlen + 1 + vlen] = 0;

	i = env_find(e, name, nlen);
	if (i >= 0) {
		free(e->v[i]);
		e->v[i] = s;
		return 0;
	}
	if (e->n + 2 > e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 32;
		char **v = realloc(e->v, cap * sizeof(char *));
		if (!v) {
			free(s);
			return -ENOMEM;
		}
		e->v = v;
		e->cap = cap;
	}
	e->v[e->n++] = s;
	e->v[e->n] = NULL;
	return 0;
}

static int env_set_str(struct envvec *e, const char *entry)
{
	const char *eq = strchr(entry, '=');

	if (!eq)
		return 0;
	return env_set(e, entry, (size_t)(eq - entry), eq + 1, strlen(eq + 1));
}

/* Case-insensitive glob match of the variable name of an entry. */
static bool name_matches(const char *entry, const char *pattern)
{
	const char *eq = strchr(entry, '=');
	char name[512];
	size_t n = eq ? (size_t)(eq - entry) : strlen(entry);

	if (n >= sizeof(name))
		n = sizeof(name) - 1;
	memcpy(name, entry, n);
	name[n] = 0;
	return fnmatch(pattern, name, FNM_CASEFOLD) == 0;
}

static bool name_matches_any(const char *entry, json_t *patterns)
{
	size_t i;
	json_t *p;

	json_array_foreach(patterns, i, p)
		if (json_is_string(p) && name_matches(entry, json_string_value(p)))
			return true;
	return false;
}

static const char *const core_vars[] = { "HOME", "LANG", "LOGNAME", "PATH", "SHELL", "TMPDIR", "USER" };

/*
 * The policy over the server's environment (src NULL: as `inherit` says), or
 * over src as a whole (a shell snapshot's captured environment, whatever
 * `inherit` says: the request's own variables are not in it).
 */
static int apply_policy(struct envvec *e, json_t *pol, char *const *src)
{
	const char *inherit = json_string_value(json_object_get(pol, "inherit"));
	json_t *exclude = json_object_get(pol, "exclude"), *set = json_object_get(pol, "set");
	json_t *include = json_object_get(pol, "includeOnly"), *v;
	const char *k;
	int r;

	for (char *const *p = src; p && *p; p++)
		if ((r = env_set_str(e, *p)) < 0)
			return r;
	if (!src && inherit && strcmp(inherit, "none") != 0) {
		bool all = strcmp(inherit, "all") == 0;

		for (char **p = environ; p && *p; p++) {
			bool keep = all;

			for (size_t i = 0; !keep && i < ELEMENTSOF(core_vars); i++) {
				size_t l = strlen(core_vars[i]);
				keep = strncmp(*p, core_vars[i], l) == 0 && (*p)[l] == '=';
			}
			if (keep && (r = env_set_str(e, *p)) < 0)
				return r;
		}
	}
	if (!json_is_true(json_object_get(pol, "ignoreDefaultExcludes"))) {
		static const char *const defaults[] = { "*KEY*", "*SECRET*", "*TOKEN*" };

		for (size_t i = 0; i < e->n;) {
			bool drop = false;

			for (size_t j = 0; j < ELEMENTSOF(defaults) && !drop; j++)
				drop = name_matches(e->v[i], defaults[j]);
			if (drop)
				env_remove(e, i);
			else
				i++;
		}
	}
	for (size_t i = 0; json_is_array(exclude) && i < e->n;) {
		if (name_matches_any(e->v[i], exclude))
			env_remove(e, i);
		else
			i++;
	}
	json_object_foreach(set, k, v) {
		if (!json_is_string(v))
			continue;
		if (jrpc_key_len(k) != strlen(k))
			return -EILSEQ;
		r = env_set(e, k, strlen(k), json_string_value(v), json_string_length(v));
		if (r < 0)
			return r;
	}
	if (json_is_array(include) && json_array_size(include) > 0) {
		for (size_t i = 0; i < e->n;) {
			if (!name_matches_any(e->v[i], include))
				env_remove(e, i);
			else
				i++;
		}
	}
	return 0;
}

int environ_build(json_t *env, json_t *env_policy, json_t *metadata, bool tty,
		  const char *login_shell, char ***ret_envp)
{
	struct envvec e = { 0 };
	const char *k;
	json_t *v;
	int r = 0;

	e.v = calloc(32, sizeof(char *));
	if (!e.v)
		return -ENOMEM;
	e.cap = 32;

	if (env_policy && (r = apply_policy(&e, env_policy, NULL)) < 0)
		goto fail;

	if (metadata) {
		json_t *t = json_object_get(metadata, "threadId");
		json_t *c = json_object_get(metadata, "toolCallId");

		if (json_is_string(t) &&
		    (r = env_set(&e, "CODEX_THREAD_ID", 15, json_string_value(t),
				 json_string_length(t))) < 0)
			goto fail;
		if (json_is_string(c) &&
		    (r = env_set(&e, "CODEX_TOOL_CALL_ID", 18, json_string_value(c),
				 json_string_length(c))) < 0)
			goto fail;
	}

	json_object_foreach(env, k, v) {
		if (jrpc_key_len(k) != strlen(k)) {
			r = -EILSEQ;
			goto fail;
		}
		r = env_set(&e, k, strlen(k), json_string_value(v), json_string_length(v));
		if (r < 0)
			goto fail;
	}
	if (tty && login_shell && env_find(&e, "SHELL", 5) < 0 &&
	    (r = env_set(&e, "SHELL", 5, login_shell, strlen(login_shell))) < 0)
		goto fail;

	*ret_envp = e.v;
	return 0;
fail:
	environ_strv_free(e.v);
	return r;
}

static int envvec_new(struct envvec *e)
{
	*e = (struct envvec){ .v = calloc(32, sizeof(char *)), .cap = 32 };
	return e->v ? 0 : -ENOMEM;
}

int environ_filter_policy(char *const *src, json_t *env_policy, char ***ret)
{
	struct envvec e;
	int r = envvec_new(&e);

	if (r < 0)
		return r;
	if (env_policy)
		r = apply_policy(&e, env_policy, src);
	else
		for (char *const *p = src; p && *p && r >= 0; p++)
			r = env_set_str(&e, *p);
	if (r < 0) {
		environ_strv_free(e.v);
		return r;
	}
	*ret = e.v;
	return 0;
}

int environ_overlay(char *const *base, char *const *over, json_t *keep, char ***ret)
{
	struct envvec e;
	int r = envvec_new(&e);

	for (char *const *p = base; p && *p && r >= 0; p++)
		r = env_set_str(&e, *p);
	for (char *const *p = over; p && *p && r >= 0; p++) {
		const char *eq = strchr(*p, '=');
		char name[512];
		size_t n = eq ? (size_t)(eq - *p) : strlen(*p);

		if (n < sizeof(name)) {
			memcpy(name, *p, n);
			name[n] = 0;
			if (json_object_get(keep, name))
				continue;
		}
		r = env_set_str(&e, *p);
	}
	if (r < 0) {
		environ_strv_free(e.v);
		return r;
	}
	*ret = e.v;
	return 0;
}

int environ_exec_candidates(const char *argv0, char *const *envp, char ***ret)
{
	const char *path = NULL;
	char **v;
	size_t n = 1, i = 0, alen = strlen(argv0);

	if (strchr(argv0, '/')) {
		v = calloc(2, sizeof(char *));
		if (!v || !(v[0] = strdup(argv0))) {
			free(v);
			return -ENOMEM;
		}
		*ret = v;
		return 0;
	}
	for (char *const *p = envp; *p; p++)
		if (strncmp(*p, "PATH=", 5) == 0)
			path = *p + 5;
	if (!path)
		path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";

	for (const char *p = path; *p; p++)
		n += *p == ':';
	v = calloc(n + 1, sizeof(char *));
	if (!v)
		return -ENOMEM;
	if (alen == 0) {
		*ret = v; /* empty program name: nothing to try -> ENOENT */
		return 0;
	}
	for (const char *p = path;; p++) {
		const char *end = strchrnul(p, ':');
		size_t dl = (size_t)(end - p);
		char *s = malloc(dl + alen + 3);

		if (!s) {
			environ_strv_free(v);
			return -ENOMEM;
		}
		if (dl == 0)
			snprintf(s, dl + alen + 3, "./%s", argv0);
		else
			snprintf(s, dl + alen + 3, "%.*s/%s", (int)dl, p, argv0);
		v[i++] = s;
		if (!*end)
			break;
		p = end;
	}
	*ret = v;
	return 0;
}

/* ---- PTY spawns (environ.h) */

static const char *env_get(char *const *envp, const char *name)
{
	size_t n = strlen(name);

	for (char *const *p = envp; *p; p++)
		if (strncmp(*p, name, n) == 0 && (*p)[n] == '=')
			return *p + n + 1;
	return NULL;
}

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *environ_pty_dir(const char *cwd, char *const *envp, char *buf, size_t size)
{
	const char *home;
	struct passwd *pw;

	if (cwd && is_dir(cwd))
		home = cwd;
	else if (!(home = env_get(envp, "HOME")))
		home = (pw = getpwuid(getuid())) && pw->pw_dir ? pw->pw_dir : "/";
	if ((size_t)snprintf(buf, size, "%s", home) >= size)
		return NULL;
	return buf;
}

/* Rust's Path::join: an absolute b replaces a; else a, a separator unless a ends with one, b. */
static char *path_join(const char *a, const char *b)
{
	char *s;

	if (b[0] == '/')
		return strdup(b);
	if (asprintf(&s, "%s%s%s", a, a[0] && a[strlen(a) - 1] != '/' ? "/" : "", b) < 0)
		return NULL;
	return s;
}

/* Appends Rust's Debug form of s ("\"...\"", escapes for quotes, backslashes, controls). */
static int append_debug(char **msg, size_t *len, const char *s)
{
	size_t n = strlen(s), o = *len;
	char *m = realloc(*msg, o + 6 * n + 16); /* "\\u{1f}" is the longest escape */

	if (!m)
		return -ENOMEM;
	*msg = m;
	m[o++] = '"';
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		o += params_debug_char(*p, m + o);
	m[o++] = '"';
	m[o] = 0;
	*len = o;
	return 0;
}

static int appendf(char **msg, size_t *len, const char *fmt, ...) _printf_(3, 4);

static int appendf(char **msg, size_t *len, const char *fmt, ...)
{
	va_list ap;
	char *t;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&t, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	{
		char *m = realloc(*msg, *len + (size_t)n + 1);

		if (!m) {
			free(t);
			return -ENOMEM;
		}
		memcpy(m + *len, t, (size_t)n + 1);
		*msg = m;
		*len += (size_t)n;
	}
	free(t);
	return 0;
}

/* "./x", "../x", "." or "..": the first component is . or .. */
static bool cwd_relative(const char *s)
{
	size_t n = s[0] == '.' ? (s[1] == '.' ? 2 : 1) : 0;

	return n && (s[n] == '/' || s[n] == 0);
}

/*
 * A program named from the working directory (./x, ../x), here dir: *ret,
 * or -ENOENT with the reference's *ret_msg.
 */
static int resolve_relative(const char *argv0, const char *dir, char **ret, char **ret_msg)
{
	const char *why;
	char *cand;
	int r;

	cand = path_join(dir, argv0);
	if (!cand)
		return -ENOMEM;
	if (is_dir(cand))
		why = "it is a directory";
	else if (access(cand, X_OK) == 0) {
		*ret = cand;
		return 0;
	} else if (access(cand, F_OK) == 0)
		why = "it is not executable";
	else
		why = "it does not exist";
	r = asprintf(ret_msg, "Unable to spawn %s because %s", cand, why) < 0 ? -ENOMEM : -ENOENT;
	if (r == -ENOMEM)
		*ret_msg = NULL;
	free(cand);
	return r;
}

/*
 * argv0 searched in PATH's entries (each relative to dir): 1 with *ret,
 * or 0 with what each candidate was not appended to *msg (len), or
 * -ENOMEM.
 */
static int search_path(const char *path, const char *argv0, const char *dir, char **ret,
		       char **msg, size_t *len)
{
	int r = 0;

	for (const char *p = path;; p++) {
		const char *end = strchrnul(p, ':');
		char *entry = strndup(p, (size_t)(end - p)), *base, *cand;

		base = entry ? path_join(dir, entry) : NULL;
		cand = base ? path_join(base, argv0) : NULL;
		free(entry);
		free(base);
		if (!cand)
			return -ENOMEM;
		if (is_dir(cand)) {
			r = appendf(msg, len, "%s exists but is a directory.\n", cand);
		} else if (access(cand, X_OK) == 0) {
			*ret = cand;
			return 1;
		} else if (access(cand, F_OK) == 0) {
			r = appendf(msg, len, "%s exists but is not executable.\n", cand);
		}
		free(cand);
		if (r < 0 || !*end)
			return r;
		p = end;
	}
}

int environ_pty_resolve(const char *argv0, char *const *envp, const char *dir, char **ret,
			char **ret_msg)
{
	char *msg = NULL;
	const char *path;
	size_t len = 0;
	int r = 0;

	*ret = NULL;
	*ret_msg = NULL;
	if (argv0[0] == '/') {
		/* as is: the exec reports what is wrong with it */
		*ret = strdup(argv0);
		return *ret ? 0 : -ENOMEM;
	}
	if (cwd_relative(argv0))
		return resolve_relative(argv0, dir, ret, ret_msg);
	path = env_get(envp, "PATH");
	if (path) {
		r = search_path(path, argv0, dir, ret, &msg, &len);
		if (r > 0) {
			free(msg);
			return 0;
		}
		if (r == 0)
			r = appendf(&msg, &len, "No viable candidates found in PATH ");
		if (r == 0)
			r = append_debug(&msg, &len, path);
	} else {
		r = appendf(&msg, &len, "Unable to resolve the PATH");
	}
	if (r < 0) {
		free(msg);
		return -ENOMEM;
	}
	if (asprintf(ret_msg, "Unable to spawn %s because:\n%s", argv0, msg) < 0) {
		*ret_msg = NULL;
		free(msg);
		return -ENOMEM;
	}
	free(msg);
	return -ENOENT;
}
