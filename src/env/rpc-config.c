/* SPDX-License-Identifier: MIT */
/*
 * environmentConfig/read (PROTOCOL.md §6.5): the Codex configuration layers
 * found on this executor, projected on the TOML key paths the client asks
 * for. Semantics follow codex-rs (exec-server environment_config.rs,
 * config/src/loader load_local_config_layers + LocalTomlLayerStack::project):
 *
 *   config       : system  /etc/codex/config.toml        "system (<file>)"
 *                  user    $CODEX_HOME/config.toml       "user (<file>)"
 *                  cloudInsertionIndex = 1 if the system layer survived, else 0
 *   requirements : system  /etc/codex/requirements.toml  "<file>"
 *
 * A missing file is no layer; a layer whose projection is empty is dropped;
 * an unparsable file fails the whole request (-32603). CODEX_HOME is read on
 * every call (the user may change the file or the directory); when set it
 * must be an existing directory and is canonicalised, else it defaults to
 * $HOME/.codex. Not implemented: project layers (.codex/config.toml between
 * the project root and cwd, which the reference only reports for trusted
 * projects) and legacy managed_config.toml layers.
 *
 * I/O: the files are read synchronously on the event loop. That is a bounded
 * cost: at most three small local files per request, each refused (with a
 * warning, and treated as absent) above 1 MiB or when it is not a regular
 * file, and opened O_NONBLOCK so that a FIFO cannot block the loop. The
 * first request that finds a file loads the TOML module (src/toml/toml-load.c)
 * on the loop too: a few milliseconds once per server, then it stays.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conn.h"
#include "env.h"
#include "errmsg.h"
#include "file-uri.h"
#include "jsonrpc.h"
#include "log.h"
#include "macro.h"
#include "params.h"
#include "rpc.h"
#include "toml-filter.h"
#include "utf8.h"

#define ERRSZ 512
#define CONFIG_FILE_MAX (1024 * 1024)
/* Selector limits of the newer reference (environment_config.rs). */
#define MAX_SELECTORS 64
#define MAX_SELECTOR_SEGMENTS 32
#define MAX_SELECTOR_BYTES (64 * 1024)
#define MAX_RESPONSE_BYTES (1024 * 1024)

#define SYSTEM_DIR "/etc/codex"

enum { F_CWD, F_CONFIG_PATHS, F_REQUIREMENTS_PATHS, _F_MAX };

static const struct pfield fields[] = {
	[F_CWD] = { "cwd", P_STRING, true, NULL },
	[F_CONFIG_PATHS] = { "configPaths", P_ANY, true, NULL },
	[F_REQUIREMENTS_PATHS] = { "requirementsPaths", P_ANY, true, NULL },
};

/* Vec<Vec<String>>. */
static int check_paths(json_t *v, char *err)
{
	size_t i;
	json_t *p;

	if (!json_is_array(v)) {
		params_type_error(v, "a sequence", err, ERRSZ);
		return -EINVAL;
	}
	json_array_foreach(v, i, p) {
		if (!json_is_array(p)) {
			params_type_error(p, "a sequence", err, ERRSZ);
			return -EINVAL;
		}
		if (params_check_strings(p, err, ERRSZ) < 0)
			return -EINVAL;
	}
	return 0;
}

/*
 * cwd is a PathUri: URL syntax, scheme, query/fragment and %00 are checked
 * while decoding (so in field order); only the host check (to_abs_path:
 * "'file://otherhost/x' is invalid on 'linux'") comes after the key-path
 * checks, so that error is deferred in *deferred. Native paths are refused as
 * the reference does (p10_env.out id 9), unlike process/start's lenient rule.
 */
static int check_cwd(json_t *v, char **deferred, char *err)
{
	const char *s = json_string_value(v);
	size_t n = json_string_length(v), o = 0;
	char *uri, *path = NULL, *uerr = NULL;
	int r;

	if (!json_is_string(v)) {
		params_type_error(v, "a string", err, ERRSZ);
		return -EINVAL;
	}
	/* The url crate percent-encodes a raw NUL; the %00 is then refused. */
	uri = malloc(3 * n + 1);
	if (!uri)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (s[i]) {
			uri[o++] = s[i];
		} else {
			memcpy(uri + o, "%00", 3);
			o += 3;
		}
	}
	uri[o] = 0;
	/* Native absolute paths are accepted too (uexec's superset of the reference). */
	r = file_uri_to_path(uri, true, &path, &uerr);
	free(uri);
	free(path);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		if (r == -EREMOTE) {
			if (!*deferred)
				*deferred = uerr;
			else
				free(uerr);
			return 0;
		}
		snprintf(err, ERRSZ, "%s", uerr);
		free(uerr);
		return -EINVAL;
	}
	return 0;
}

static int check_field(size_t i, json_t *v, char **deferred, char *err)
{
	return i == F_CWD ? check_cwd(v, deferred, err) : check_paths(v, err);
}

/* serde's derive: fields decoded in the order sent, then missing ones in declaration order. */
static int decode(json_t *params, json_t **f, char **deferred, char *err)
{
	const char *key;
	json_t *v;
	int r;

	if (!json_is_object(params)) {
		/* null, absent, scalars, and the positional (array) form. */
		r = params_decode(params, "EnvironmentConfigReadParams", fields, _F_MAX, f, err,
				  ERRSZ);
		if (r < 0)
			return r;
		for (size_t i = 0; i < _F_MAX; i++) {
			f[i] = json_array_get(params, i);
			r = check_field(i, f[i], deferred, err);
			if (r < 0)
				return r;
		}
		return 0;
	}
	for (size_t i = 0; i < _F_MAX; i++)
		f[i] = NULL;
	json_object_foreach(params, key, v) {
		for (size_t i = 0; i < _F_MAX; i++) {
			if (!jrpc_key_is(key, fields[i].name))
				continue;
			r = check_field(i, v, deferred, err);
			if (r < 0)
				return r;
			f[i] = v;
		}
	}
	for (size_t i = 0; i < _F_MAX; i++) {
		if (!f[i]) {
			snprintf(err, ERRSZ, "missing field `%s`", fields[i].name);
			return -EINVAL;
		}
	}
	return 0;
}

static const char *validate_paths(json_t *cfg, json_t *req, char *err)
{
	json_t *lists[2] = { cfg, req }, *p, *s;
	size_t total = json_array_size(cfg) + json_array_size(req), bytes = 0, i, j;

	if (total == 0)
		return "at least one config or requirements path is required";
	if (total > MAX_SELECTORS) {
		snprintf(err, ERRSZ, "at most %d TOML selectors are allowed", MAX_SELECTORS);
		return err;
	}
	for (size_t l = 0; l < 2; l++) {
		json_array_foreach(lists[l], i, p) {
			if (json_array_size(p) == 0)
				return "TOML paths must contain at least one key segment";
			if (json_array_size(p) > MAX_SELECTOR_SEGMENTS) {
				snprintf(err, ERRSZ, "TOML paths may contain at most %d key segments",
					 MAX_SELECTOR_SEGMENTS);
				return err;
			}
			json_array_foreach(p, j, s) {
				bytes += json_string_length(s);
				if (bytes > MAX_SELECTOR_BYTES) {
					snprintf(err, ERRSZ,
						 "TOML selector input may contain at most %d bytes",
						 MAX_SELECTOR_BYTES);
					return err;
				}
			}
		}
	}
	return NULL;
}

/* Rust's `{:?}` of a str, for the CODEX_HOME messages. */
static char *debug_quote(const char *s)
{
	size_t n = strlen(s), o = 0;
	char *q = malloc(6 * n + 3);

	if (!q)
		return NULL;
	q[o++] = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			q[o++] = '\\';
			q[o++] = (char)c;
		} else if (c == '\n') {
			memcpy(q + o, "\\n", 2);
			o += 2;
		} else if (c == '\t') {
			memcpy(q + o, "\\t", 2);
			o += 2;
		} else if (c == '\r') {
			memcpy(q + o, "\\r", 2);
			o += 2;
		} else if (c < 0x20 || c == 0x7f) {
			o += (size_t)sprintf(q + o, "\\u{%x}", c);
		} else {
			q[o++] = (char)c;
		}
	}
	q[o++] = '"';
	q[o] = 0;
	return q;
}

/* dirs::home_dir(): $HOME if non-empty, else the password database. */
char *env_home_dir(void)
{
	const char *h = getenv("HOME");
	struct passwd *pw;

	if (h && *h)
		return strdup(h);
	pw = getpwuid(getuid());
	if (pw && pw->pw_dir && *pw->pw_dir)
		return strdup(pw->pw_dir);
	return NULL;
}

/*
 * codex_utils_home_dir::find_codex_home(). Returns 0 and *ret, -ENOMEM, or
 * -EINVAL with *ret_msg (malloc'd) for a -32603 "failed to find Codex home: ...".
 */
int env_find_codex_home(char **ret, char **ret_msg)
{
	const char *val = getenv("CODEX_HOME");
	char os[128], *q = NULL, *home;
	struct stat st;
	int r = -EINVAL;

	*ret = *ret_msg = NULL;
	/* std::env::var() fails for a non-UTF-8 value, which then counts as unset. */
	if (val && *val && utf8_is_valid((const uint8_t *)val, strlen(val))) {
		q = debug_quote(val);
		if (!q)
			return -ENOMEM;
		if (stat(val, &st) < 0) {
			if (errno == ENOENT)
				r = asprintf(ret_msg, "CODEX_HOME points to %s, but that path does not exist", q);
			else
				r = asprintf(ret_msg, "failed to read CODEX_HOME %s: %s", q,
					     rpc_os_error(errno, os, sizeof(os)));
		} else if (!S_ISDIR(st.st_mode)) {
			r = asprintf(ret_msg, "CODEX_HOME points to %s, but that path is not a directory", q);
		} else {
			*ret = realpath(val, NULL);
			if (*ret) {
				free(q);
				return 0;
			}
			r = asprintf(ret_msg, "failed to canonicalize CODEX_HOME %s: %s", q,
				     rpc_os_error(errno, os, sizeof(os)));
		}
		free(q);
		if (r < 0) {
			*ret_msg = NULL;
			return -ENOMEM;
		}
		return -EINVAL;
	}
	home = env_home_dir();
	if (!home) {
		*ret_msg = strdup("Could not find home directory");
		return *ret_msg ? -EINVAL : -ENOMEM;
	}
	{
		size_t n = strlen(home);

		while (n > 1 && home[n - 1] == '/')
			home[--n] = 0;
		if (home[0] != '/') {
			/* AbsolutePathBuf resolves a relative $HOME against the cwd. */
			char cwd[PATH_MAX];

			r = asprintf(ret, "%s/%s/.codex", getcwd(cwd, sizeof(cwd)) ? cwd : "", home);
		} else {
			r = asprintf(ret, "%s/.codex", strcmp(home, "/") == 0 ? "" : home);
		}
	}
	free(home);
	if (r < 0) {
		*ret = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* A JSON string from bytes that may not be UTF-8 (Rust's Path::display() is lossy). */
static json_t *json_string_lossy(const char *s)
{
	size_t n = strlen(s), o = 0;
	json_t *j;
	char *b;

	if (utf8_is_valid((const uint8_t *)s, n))
		return json_string(s);
	b = malloc(3 * n + 1);
	if (!b)
		return NULL;
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : 4;

		if (i + len <= n && utf8_is_valid((const uint8_t *)s + i, len)) {
			memcpy(b + o, s + i, len);
			o += len;
			i += len;
		} else {
			memcpy(b + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	j = json_stringn(b, o);
	free(b);
	return j;
}

static json_t *uri_json(const char *path)
{
	char *u = path && path[0] == '/' ? file_uri_from_path(path) : NULL;
	json_t *j = u ? json_string(u) : json_null();

	free(u);
	return j;
}

/*
 * The rest of fd, at most CONFIG_FILE_MAX bytes, into buf (room for
 * CONFIG_FILE_MAX + 2), NUL-terminated, and *ret_len. Returns 0, 1 when the
 * file is larger, or a read's -errno.
 */
static int read_capped(int fd, char *buf, size_t *ret_len)
{
	size_t len = 0;

	for (;;) {
		ssize_t n = read(fd, buf + len, CONFIG_FILE_MAX + 1 - len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > CONFIG_FILE_MAX)
			return 1;
	}
	buf[len] = 0;
	*ret_len = len;
	return 0;
}

/*
 * Reads a layer file. Returns 0 with *ret_text (malloc'd, NUL-terminated) and
 * *ret_len, -ENOENT when there is no usable file, -ENOMEM, or -EIO with the
 * reference's message in *ret_msg.
 */
static int read_layer_file(const char *path, const char *kind, char **ret_text, size_t *ret_len,
			   char **ret_msg)
{
	char os[128], *buf = NULL;
	size_t len = 0;
	struct stat st;
	int fd, err = 0, r;

	*ret_text = *ret_msg = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT)
			return -ENOENT;
		err = errno;
		goto fail;
	}
	if (fstat(fd, &st) < 0) {
		err = errno;
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		err = EISDIR;
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		log_warning("Ignoring %s: not a regular file", path);
		close(fd);
		return -ENOENT;
	}
	r = 1;
	if (st.st_size <= CONFIG_FILE_MAX) {
		buf = malloc(CONFIG_FILE_MAX + 2);
		if (!buf) {
			close(fd);
			return -ENOMEM;
		}
		r = read_capped(fd, buf, &len);
	}
	if (r == 1) {
		log_warning("Ignoring %s: larger than %d bytes", path, CONFIG_FILE_MAX);
		free(buf);
		close(fd);
		return -ENOENT;
	}
	if (r < 0) {
		err = -r;
		goto fail;
	}
	close(fd);
	if (!utf8_is_valid((const uint8_t *)buf, len)) {
		free(buf);
		return errmsg_set(ret_msg, -EIO,
				  "Failed to read %s file %s: stream did not contain valid UTF-8",
				  kind, path);
	}
	*ret_text = buf;
	*ret_len = len;
	return 0;
fail:
	free(buf);
	if (fd >= 0)
		close(fd);
	return errmsg_set(ret_msg, -EIO, "Failed to read %s file %s: %s", kind, path,
			  rpc_os_error(err, os, sizeof(os)));
}

struct selectors {
	struct toml_key_path *paths;
	size_t n;
	const char **segs;
	size_t *lens;
};

static void selectors_done(struct selectors *s)
{
	free(s->paths);
	free((void *)s->segs);
	free(s->lens);
}

static int selectors_init(struct selectors *s, json_t *list)
{
	size_t nseg = 0, i, j, k = 0;
	json_t *p, *seg;

	*s = (struct selectors){ 0 };
	json_array_foreach(list, i, p)
		nseg += json_array_size(p);
	s->n = json_array_size(list);
	s->paths = calloc(s->n + 1, sizeof(*s->paths));
	s->segs = calloc(nseg + 1, sizeof(*s->segs));
	s->lens = calloc(nseg + 1, sizeof(*s->lens));
	if (!s->paths || !s->segs || !s->lens) {
		selectors_done(s);
		return -ENOMEM;
	}
	json_array_foreach(list, i, p) {
		s->paths[i].seg = s->segs + k;
		s->paths[i].len = s->lens + k;
		s->paths[i].n = json_array_size(p);
		json_array_foreach(p, j, seg) {
			s->segs[k] = json_string_value(seg);
			s->lens[k] = json_string_length(seg);
			k++;
		}
	}
	return 0;
}

/*
 * Loads one layer and appends it to layers if its projection is not empty.
 * Returns 1 if appended, 0 if not, -ENOMEM, or -EIO with *ret_msg.
 */
static int add_layer(json_t *layers, const char *source, const char *file, const char *base_dir,
		     const char *kind, const struct selectors *sel, char **ret_msg)
{
	struct toml_filter_error perr = { 0 };
	char *text = NULL, *toml = NULL;
	json_t *layer;
	size_t len = 0;
	int r;

	r = read_layer_file(file, kind, &text, &len, ret_msg);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	r = toml_filter(text, len, sel->paths, sel->n, &toml, &perr);
	free(text);
	if (r == -ELIBACC) {
		/* No TOML module (src/toml/): an internal error, like an unreadable layer. */
		*ret_msg = perr.message;
		return -EIO;
	}
	if (r == -EINVAL) {
		r = asprintf(ret_msg, "%s:%u:%u: %s", file, perr.line, perr.column, perr.message);
		free(perr.message);
		if (r < 0) {
			*ret_msg = NULL;
			return -ENOMEM;
		}
		return -EIO;
	}
	if (r < 0)
		return r;
	if (!toml)
		return 0;
	layer = json_object();
	r = !layer || json_object_set_new(layer, "source", json_string_lossy(source)) < 0 ||
	    json_object_set_new(layer, "baseDir", uri_json(base_dir)) < 0 ||
	    json_object_set_new(layer, "toml", json_string(toml)) < 0;
	free(toml);
	if (r) {
		json_decref(layer);
		return -ENOMEM;
	}
	/* json_array_append_new() drops the layer on failure. */
	return json_array_append_new(layers, layer) < 0 ? -ENOMEM : 1;
}

static json_t *stack_json(json_t *layers, int cloud_insertion_index)
{
	json_t *o = json_object();

	json_object_set_new(o, "layers", layers);
	json_object_set_new(o, "cloudInsertionIndex", json_integer(cloud_insertion_index));
	return o;
}

/* codex_config::host_name(): the kernel host name, trimmed, without trailing dots, lower-cased. */
static json_t *host_name_json(void)
{
	char buf[HOST_NAME_MAX + 2] = { 0 }, *s = buf, *e;

	if (gethostname(buf, sizeof(buf) - 1) < 0)
		return json_null();
	while (*s == ' ' || (*s >= '\t' && *s <= '\r'))
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || (e[-1] >= '\t' && e[-1] <= '\r')))
		e--;
	while (e > s && e[-1] == '.')
		e--;
	*e = 0;
	for (char *p = s; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	if (!*s || !utf8_is_valid((const uint8_t *)s, strlen(s)))
		return json_null();
	/* The reference prefers the resolver's FQDN (getaddrinfo AI_CANONNAME); a
	 * blocking lookup has no place on the event loop, so the kernel name is used. */
	return json_string(s);
}

/*
 * The config layers (system, then user) and the requirements layer, loaded in
 * the reference's order so that the first broken file is the one reported.
 * Returns the number of system config layers kept (0 or 1), -ENOMEM, or
 * another error with *msg set.
 */
static int load_layers(const char *codex_home, struct selectors *cfg_sel,
		       struct selectors *req_sel, json_t *cfg_layers, json_t *req_layers, char **msg)
{
	char *user_file = NULL, *user_source = NULL;
	int r, sys_kept;

	if (asprintf(&user_file, "%s/config.toml", strcmp(codex_home, "/") ? codex_home : "") < 0)
		return -ENOMEM;
	if (asprintf(&user_source, "user (%s)", user_file) < 0) {
		free(user_file);
		return -ENOMEM;
	}
	sys_kept = r = add_layer(cfg_layers, "system (" SYSTEM_DIR "/config.toml)",
				 SYSTEM_DIR "/config.toml", SYSTEM_DIR, "config", cfg_sel, msg);
	if (r >= 0)
		r = add_layer(cfg_layers, user_source, user_file, codex_home, "config", cfg_sel, msg);
	if (r >= 0)
		r = add_layer(req_layers, SYSTEM_DIR "/requirements.toml",
			      SYSTEM_DIR "/requirements.toml", SYSTEM_DIR, "requirements", req_sel,
			      msg);
	free(user_file);
	free(user_source);
	return r < 0 ? r : (sys_kept > 0 ? 1 : 0);
}

/* The result object; takes the layer arrays. NULL on OOM. */
static json_t *config_result(const char *codex_home, json_t *cfg_layers, json_t *req_layers,
			     int sys_kept)
{
	char *home = env_home_dir();
	json_t *res = json_object();

	if (!res) {
		free(home);
		json_decref(cfg_layers);
		json_decref(req_layers);
		return NULL;
	}
	json_object_set_new(res, "userHomeDir", uri_json(home));
	json_object_set_new(res, "codexHomeDir", uri_json(codex_home));
	json_object_set_new(res, "hostname", host_name_json());
	json_object_set_new(res, "config", stack_json(cfg_layers, sys_kept));
	json_object_set_new(res, "requirements",
			    stack_json(req_layers, json_array_size(req_layers) > 0 ? 1 : 0));
	free(home);
	return res;
}

void env_rpc_config_read(struct conn *c, json_t *id, json_t *params)
{
	json_t *f[_F_MAX], *cfg_layers = NULL, *req_layers = NULL, *res = NULL;
	struct selectors cfg_sel = { 0 }, req_sel = { 0 };
	char err[ERRSZ], *deferred = NULL, *codex_home = NULL, *msg = NULL;
	const char *verr;
	int r;
	size_t size;

	r = decode(params, f, &deferred, err);
	if (r == -ENOMEM)
		goto nomem;
	if (r < 0) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", err);
		goto out;
	}
	verr = validate_paths(f[F_CONFIG_PATHS], f[F_REQUIREMENTS_PATHS], err);
	if (verr) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", verr);
		goto out;
	}
	if (deferred) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS, "%s", deferred);
		goto out;
	}

	r = env_find_codex_home(&codex_home, &msg);
	if (r == -ENOMEM)
		goto nomem;
	if (r < 0) {
		rpc_reply_error(c, id, RPC_INTERNAL_ERROR, "failed to find Codex home: %s", msg);
		goto out;
	}
	if (selectors_init(&cfg_sel, f[F_CONFIG_PATHS]) < 0 ||
	    selectors_init(&req_sel, f[F_REQUIREMENTS_PATHS]) < 0)
		goto nomem;

	cfg_layers = json_array();
	req_layers = json_array();
	if (!cfg_layers || !req_layers)
		goto nomem;
	r = load_layers(codex_home, &cfg_sel, &req_sel, cfg_layers, req_layers, &msg);
	if (r == -ENOMEM)
		goto nomem;
	if (r < 0) {
		rpc_reply_error(c, id, RPC_INTERNAL_ERROR,
				"failed to load executor-local config: %s", msg);
		goto out;
	}
	res = config_result(codex_home, cfg_layers, req_layers, r);
	cfg_layers = req_layers = NULL;
	if (!res)
		goto nomem;

	size = json_dumpb(res, NULL, 0, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (size > MAX_RESPONSE_BYTES) {
		rpc_reply_error(c, id, RPC_INVALID_PARAMS,
				"environment config response exceeds the %d-byte limit",
				MAX_RESPONSE_BYTES);
		goto out;
	}
	rpc_reply(c, id, res);
	res = NULL;
	goto out;

nomem:
	rpc_reply_errno_internal(c, id, ENOMEM);
out:
	json_decref(res);
	json_decref(cfg_layers);
	json_decref(req_layers);
	selectors_done(&cfg_sel);
	selectors_done(&req_sel);
	free(deferred);
	free(codex_home);
	free(msg);
}
