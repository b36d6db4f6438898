/* SPDX-License-Identifier: MIT */
/*
 * Sandbox policy parsing and resolution (see policy.h). No I/O: paths are
 * resolved lexically; existence is decided when the plan is built.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file-uri.h"
#include "macro.h"
#include "policy.h"

/*
 * SANDBOX.md §3.4 lists .git, .agents and .codex; the 0.169 reference binary
 * also keeps .aws read-only (a synthetic directory when missing) under every
 * writable root, whatever the policy says, so this list has it too.
 */
const char *const sandbox_protected_names[4] = { ".git", ".agents", ".codex", ".aws" };

#define MAX_RULES 1024

struct parser {
	struct sandbox_policy *p;
	const struct sandbox_context *ctx;
	json_t *roots;   /* workspaceRoots (array of URIs) or NULL */
	char *err;
	size_t errsz;
};

static int fail(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct parser *ps, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ps->err, ps->errsz, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int variant_error(struct parser *ps, const char *got, const char *expected)
{
	return fail(ps, "unknown variant `%s`, expected %s", got, expected);
}

static const char *str_member(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* Lexical normalisation of an absolute path: //, /./ and /../ removed. */
static char *normalize(const char *path)
{
	size_t n = strlen(path), o = 0;
	char *out = malloc(n + 2);

	if (!out)
		return NULL;
	for (size_t i = 0; i < n;) {
		size_t j;

		while (i < n && path[i] == '/')
			i++;
		for (j = i; j < n && path[j] != '/'; j++)
			;
		if (j == i)
			break;
		if (j - i == 1 && path[i] == '.') {
			/* skip */
		} else if (j - i == 2 && path[i] == '.' && path[i + 1] == '.') {
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--;
		} else {
			out[o++] = '/';
			memcpy(out + o, path + i, j - i);
			o += j - i;
		}
		i = j;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = 0;
	return out;
}

static char *join(const char *base, const char *sub)
{
	size_t bl = strlen(base), sl = sub ? strlen(sub) : 0;
	char *tmp, *r;

	if (!sub || !*sub)
		return normalize(base);
	if (sub[0] == '/')
		return normalize(sub);
	tmp = malloc(bl + sl + 2);
	if (!tmp)
		return NULL;
	memcpy(tmp, base, bl);
	tmp[bl] = '/';
	memcpy(tmp + bl + 1, sub, sl + 1);
	r = normalize(tmp);
	free(tmp);
	return r;
}

/* A file: URI or a native absolute path (legacy entries carry native paths). */
static int path_value(struct parser *ps, const char *s, char **ret)
{
	char *msg = NULL, *path = NULL;
	int r = file_uri_to_path(s, true, &path, &msg);

	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		r = fail(ps, "%s", msg ? msg : "invalid path");
		free(msg);
		return r;
	}
	*ret = normalize(path);
	free(path);
	return *ret ? 0 : -ENOMEM;
}

static int add_rule(struct parser *ps, char *path, enum sandbox_access a, bool skip)
{
	struct sandbox_policy *p = ps->p;
	struct sandbox_rule *nr;

	if (!path)
		return -ENOMEM;
	if (p->n_rules >= MAX_RULES) {
		free(path);
		return fail(ps, "sandbox policy has more than %d filesystem entries", MAX_RULES);
	}
	nr = realloc(p->rules, (p->n_rules + 1) * sizeof(*nr));
	if (!nr) {
		free(path);
		return -ENOMEM;
	}
	p->rules = nr;
	p->rules[p->n_rules++] = (struct sandbox_rule){ path, a, skip };
	if (strcmp(path, "/") == 0) {
		if (a == SANDBOX_WRITE)
			p->full_write = p->full_read = true;
		else if (a == SANDBOX_READ)
			p->full_read = true;
	}
	return 0;
}

static int parse_access(struct parser *ps, json_t *v, enum sandbox_access *ret)
{
	const char *s = json_string_value(v);

	if (!v)
		return fail(ps, "missing field `access`");
	if (!s)
		return fail(ps, "invalid type: expected a string for `access`");
	if (strcmp(s, "read") == 0)
		*ret = SANDBOX_READ;
	else if (strcmp(s, "write") == 0)
		*ret = SANDBOX_WRITE;
	else if (strcmp(s, "deny") == 0 || strcmp(s, "none") == 0)
		*ret = SANDBOX_DENY;
	else
		return variant_error(ps, s, "one of `read`, `write`, `deny`");
	return 0;
}

/* A special path kind: each resolved path gets a rule. */
static int add_special(struct parser *ps, json_t *value, enum sandbox_access a, bool skip)
{
	const char *kind = str_member(value, "kind"), *sub = str_member(value, "subpath");
	size_t i;
	json_t *root;
	int r;

	if (!json_is_object(value))
		return fail(ps, "invalid type: expected struct for special path `value`");
	if (!kind)
		return fail(ps, "missing field `kind`");
	if (strcmp(kind, "root") == 0)
		return add_rule(ps, join("/", sub), a, skip);
	if (strcmp(kind, "minimal") == 0) {
		if (a != SANDBOX_DENY)
			ps->p->minimal_read = true;
		return 0;
	}
	if (strcmp(kind, "project_roots") == 0 || strcmp(kind, "current_working_directory") == 0) {
		/* Resolves to workspaceRoots, not to cwd (PROTOCOL.md §5.4). */
		json_array_foreach(ps->roots, i, root) {
			char *rp = NULL;

			if (!json_is_string(root))
				return fail(ps, "invalid type: expected a string in `workspaceRoots`");
			r = path_value(ps, json_string_value(root), &rp);
			if (r < 0)
				return r;
			r = add_rule(ps, join(rp, sub), a, skip);
			free(rp);
			if (r < 0)
				return r;
		}
		return 0;
	}
	if (strcmp(kind, "tmpdir") == 0) {
		const char *t = ps->ctx->tmpdir;

		if (t && t[0] == '/')
			return add_rule(ps, join(t, sub), a, skip);
		return 0;
	}
	if (strcmp(kind, "slash_tmp") == 0)
		return add_rule(ps, join("/tmp", sub), a, skip);
	if (strcmp(kind, "unknown") == 0)
		return 0; /* newer tokens are ignored, as the reference does */
	return variant_error(ps, kind,
			     "one of `root`, `minimal`, `current_working_directory`, `project_roots`, `tmpdir`, `slash_tmp`, `unknown`");
}

static int parse_entry(struct parser *ps, json_t *e)
{
	json_t *path = json_object_get(e, "path");
	const char *type, *mpb = str_member(e, "missing_path_behavior");
	enum sandbox_access a = SANDBOX_DENY;
	bool skip = false;
	int r;

	if (!json_is_object(e))
		return fail(ps, "invalid type: expected struct FileSystemSandboxEntry");
	if (!path)
		return fail(ps, "missing field `path`");
	r = parse_access(ps, json_object_get(e, "access"), &a);
	if (r < 0)
		return r;
	if (mpb) {
		if (strcmp(mpb, "skip") != 0)
			return variant_error(ps, mpb, "`skip`");
		skip = true;
	}
	type = str_member(path, "type");
	if (!type)
		return fail(ps, "missing field `type`");
	if (strcmp(type, "special") == 0)
		return add_special(ps, json_object_get(path, "value"), a, skip);
	if (strcmp(type, "path") == 0) {
		const char *s = str_member(path, "path");
		char *native = NULL;

		if (!s)
			return fail(ps, "missing field `path`");
		r = path_value(ps, s, &native);
		if (r < 0)
			return r;
		return add_rule(ps, native, a, skip);
	}
	if (strcmp(type, "glob_pattern") == 0) {
		const char *pat = str_member(path, "pattern");
		struct sandbox_policy *p = ps->p;
		char **v, *abs, *joined;

		if (!pat)
			return fail(ps, "missing field `pattern`");
		/* Globs only deny (SANDBOX.md §2.3): one that reads or writes grants nothing. */
		if (a != SANDBOX_DENY)
			return 0;
		if (p->n_deny_globs >= SANDBOX_MAX_DENY_GLOBS)
			return fail(ps, "too many glob_pattern deny entries (at most 256)");
		if (strlen(pat) >= PATH_MAX)
			return fail(ps, "glob_pattern too long");
		/* Relative patterns resolve against the policy cwd, as the reference resolves them. */
		if (pat[0] == '/' || !p->cwd) {
			abs = pat[0] == '/' ? normalize(pat) : strdup(pat);
		} else {
			size_t n = strlen(p->cwd) + strlen(pat) + 2;

			joined = malloc(n);
			if (!joined)
				return -ENOMEM;
			snprintf(joined, n, "%s/%s", p->cwd, pat);
			abs = normalize(joined);
			free(joined);
		}
		if (!abs)
			return -ENOMEM;
		v = realloc(p->deny_globs, (p->n_deny_globs + 1) * sizeof(*v));
		if (!v) {
			free(abs);
			return -ENOMEM;
		}
		p->deny_globs = v;
		v[p->n_deny_globs++] = abs;
		return 0;
	}
	return variant_error(ps, type, "one of `path`, `glob_pattern`, `special`");
}

static int parse_network(struct parser *ps, json_t *v)
{
	const char *s = json_string_value(v);

	if (!v)
		return fail(ps, "missing field `network`");
	if (!s)
		return fail(ps, "invalid type: expected a string for `network`");
	if (strcmp(s, "enabled") == 0)
		ps->p->network = true;
	else if (strcmp(s, "restricted") == 0)
		ps->p->network = false;
	else
		return variant_error(ps, s, "`restricted` or `enabled`");
	return 0;
}

static int parse_permissions(struct parser *ps, json_t *perm)
{
	struct sandbox_policy *p = ps->p;
	const char *type = str_member(perm, "type"), *fst;
	json_t *fs, *entries, *e;
	size_t i;
	int r;

	if (!json_is_object(perm))
		return fail(ps, "invalid type: expected internally tagged enum ExecPermissionProfile");
	if (!type)
		return fail(ps, "missing field `type`");
	if (strcmp(type, "disabled") == 0) {
		p->kind = SANDBOX_DISABLED;
		p->network = p->full_read = p->full_write = true;
		return 0;
	}
	if (strcmp(type, "external") == 0) {
		p->kind = SANDBOX_EXTERNAL;
		p->full_read = p->full_write = true;
		return parse_network(ps, json_object_get(perm, "network"));
	}
	if (strcmp(type, "managed") != 0)
		return variant_error(ps, type, "one of `managed`, `disabled`, `external`");

	p->kind = SANDBOX_MANAGED;
	fs = json_object_get(perm, "file_system");
	if (!fs)
		return fail(ps, "missing field `file_system`");
	r = parse_network(ps, json_object_get(perm, "network"));
	if (r < 0)
		return r;
	fst = str_member(fs, "type");
	if (!fst)
		return fail(ps, "missing field `type`");
	if (strcmp(fst, "unrestricted") == 0) {
		p->full_read = p->full_write = true;
		return 0;
	}
	if (strcmp(fst, "restricted") != 0)
		return variant_error(ps, fst, "`restricted` or `unrestricted`");
	{
		json_t *d = json_object_get(fs, "glob_scan_max_depth");

		if (d && !json_is_null(d)) {
			if (!json_is_integer(d) || json_integer_value(d) < 0)
				return fail(ps, "invalid value: expected usize for `glob_scan_max_depth`");
			p->glob_scan_max_depth = json_integer_value(d) > 1000000
							 ? 1000000
							 : (long)json_integer_value(d);
		}
	}
	entries = json_object_get(fs, "entries");
	if (entries && !json_is_array(entries))
		return fail(ps, "invalid type: expected a sequence for `entries`");
	json_array_foreach(entries, i, e) {
		r = parse_entry(ps, e);
		if (r < 0)
			return r;
	}
	/*
	 * A deny entry on the root wins over a read or write one there (ties:
	 * deny > write > read): then nothing is read or written by the root's
	 * grant, only by narrower entries (a plan must not take the root write
	 * or read for granted).
	 */
	for (size_t k = 0; k < p->n_rules; k++)
		if (p->rules[k].access == SANDBOX_DENY && strcmp(p->rules[k].path, "/") == 0)
			p->full_read = p->full_write = false;
	return 0;
}

/* Legacy SandboxPolicy (SANDBOX.md §2.5), converted as from_legacy_sandbox_policy does. */
static int parse_legacy(struct parser *ps, json_t *lp)
{
	struct sandbox_policy *p = ps->p;
	const char *type = str_member(lp, "type");
	json_t *na = json_object_get(lp, "network_access"), *wr, *w;
	size_t i;
	int r;

	if (!type)
		return fail(ps, "missing field `type`");
	if (strcmp(type, "danger-full-access") == 0) {
		p->kind = SANDBOX_DISABLED;
		p->network = p->full_read = p->full_write = true;
		return 0;
	}
	if (strcmp(type, "external-sandbox") == 0) {
		p->kind = SANDBOX_EXTERNAL;
		p->full_read = p->full_write = true;
		p->network = json_is_string(na) && strcmp(json_string_value(na), "enabled") == 0;
		return 0;
	}
	if (strcmp(type, "read-only") != 0 && strcmp(type, "workspace-write") != 0)
		return variant_error(ps, type,
				     "one of `danger-full-access`, `read-only`, `external-sandbox`, `workspace-write`");
	p->kind = SANDBOX_MANAGED;
	p->network = json_is_true(na);
	r = add_rule(ps, strdup("/"), SANDBOX_READ, false);
	if (r < 0 || strcmp(type, "read-only") == 0)
		return r;

	/* workspace-write: project roots, writable_roots, TMPDIR and /tmp unless excluded */
	{
		json_t *pr = json_pack("{s:s}", "kind", "project_roots");

		r = pr ? add_special(ps, pr, SANDBOX_WRITE, true) : -ENOMEM;
		json_decref(pr);
		if (r < 0)
			return r;
	}
	wr = json_object_get(lp, "writable_roots");
	if (wr && !json_is_array(wr))
		return fail(ps, "invalid type: expected a sequence for `writable_roots`");
	json_array_foreach(wr, i, w) {
		char *native = NULL;

		if (!json_is_string(w))
			return fail(ps, "invalid type: expected a string in `writable_roots`");
		r = path_value(ps, json_string_value(w), &native);
		if (r < 0 || (r = add_rule(ps, native, SANDBOX_WRITE, true)) < 0)
			return r;
	}
	if (!json_is_true(json_object_get(lp, "exclude_tmpdir_env_var")) && ps->ctx->tmpdir &&
	    ps->ctx->tmpdir[0] == '/' && (r = add_rule(ps, normalize(ps->ctx->tmpdir), SANDBOX_WRITE, true)) < 0)
		return r;
	if (!json_is_true(json_object_get(lp, "exclude_slash_tmp")) &&
	    (r = add_rule(ps, strdup("/tmp"), SANDBOX_WRITE, true)) < 0)
		return r;
	return 0;
}

int sandbox_policy_parse(json_t *sandbox, const struct sandbox_context *ctx,
			 struct sandbox_policy **ret, char *err, size_t errsz)
{
	struct parser ps = { .ctx = ctx, .err = err, .errsz = errsz };
	json_t *perm, *legacy, *cwd;
	int r;

	if (!json_is_object(sandbox)) {
		snprintf(err, errsz, "invalid type: expected struct WireFileSystemSandboxContext");
		return -EINVAL;
	}
	ps.p = calloc(1, sizeof(*ps.p));
	if (!ps.p)
		return -ENOMEM;
	ps.p->glob_scan_max_depth = -1;
	ps.roots = json_object_get(sandbox, "workspaceRoots");
	if (ps.roots && !json_is_array(ps.roots)) {
		r = fail(&ps, "invalid type: expected a sequence for `workspaceRoots`");
		goto fail;
	}

	cwd = json_object_get(sandbox, "cwd");
	if (json_is_string(cwd)) {
		r = path_value(&ps, json_string_value(cwd), &ps.p->cwd);
	} else if (ctx->cwd) {
		ps.p->cwd = normalize(ctx->cwd);
		r = ps.p->cwd ? 0 : -ENOMEM;
	} else {
		r = 0;
	}
	if (r < 0)
		goto fail;

	perm = json_object_get(sandbox, "permissions");
	legacy = json_object_get(sandbox, "sandboxPolicy");
	if (perm)
		r = parse_permissions(&ps, perm);
	else if (legacy)
		r = parse_legacy(&ps, legacy);
	else
		r = fail(&ps, "missing field `permissions`");
	if (r < 0)
		goto fail;
	*ret = ps.p;
	return 0;
fail:
	sandbox_policy_free(ps.p);
	return r;
}

void sandbox_policy_free(struct sandbox_policy *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_rules; i++)
		free(p->rules[i].path);
	free(p->rules);
	for (size_t i = 0; i < p->n_deny_globs; i++)
		free(p->deny_globs[i]);
	free(p->deny_globs);
	free(p->cwd);
	free(p);
}

/* True if prefix is path or one of its ancestors (both normalised). */
static bool path_has_prefix(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strcmp(prefix, "/") == 0)
		return true;
	return strncmp(path, prefix, n) == 0 && (path[n] == 0 || path[n] == '/');
}

enum sandbox_access sandbox_policy_access(const struct sandbox_policy *p, const char *path)
{
	enum sandbox_access best = p->full_write ? SANDBOX_WRITE
				  : p->full_read ? SANDBOX_READ
						 : SANDBOX_DENY;
	size_t best_len = 0;
	bool found = false;

	for (size_t i = 0; i < p->n_rules; i++) {
		const struct sandbox_rule *r = &p->rules[i];
		size_t n = strlen(r->path);

		if (!path_has_prefix(path, r->path))
			continue;
		/* Longest prefix wins; ties: deny > write > read. */
		if (!found || n > best_len || (n == best_len && r->access > best)) {
			best = r->access;
			best_len = n;
			found = true;
		}
	}
	return best;
}

bool sandbox_policy_is_unrestricted(const struct sandbox_policy *p)
{
	return p->kind == SANDBOX_DISABLED ||
	       (p->full_write && p->network && !sandbox_policy_root_write_restricted(p));
}

bool sandbox_policy_root_write_restricted(const struct sandbox_policy *p)
{
	if (!p->full_write || p->kind != SANDBOX_MANAGED)
		return false;
	if (p->n_deny_globs > 0)
		return true;
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct sandbox_rule *r = &p->rules[i];

		/* An entry overridden by another at the same path (ties) restricts nothing. */
		if (r->access != SANDBOX_WRITE && sandbox_policy_access(p, r->path) == r->access)
			return true;
	}
	return false;
}

bool sandbox_policy_grants_root_name(const struct sandbox_policy *p, const char *name)
{
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct sandbox_rule *r = &p->rules[i];

		if (r->access == SANDBOX_WRITE && r->path[0] == '/' && strcmp(r->path + 1, name) == 0 &&
		    sandbox_policy_access(p, r->path) == SANDBOX_WRITE)
			return true;
	}
	return false;
}
