/* SPDX-License-Identifier: MIT */
/*
 * SKILL.md front matter (frontmatter.h). The reference deserialises the block
 * with serde_yaml; this reads it with libyaml's document loader and applies
 * the same typing: a mapping whose `name` and `description` are scalars or
 * null (any scalar is taken as its text: `42`, `true`), whose `metadata` is
 * null or a mapping with an optional scalar `short-description`; other keys
 * ignored, a known key twice an error, more than one document an error.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "frontmatter.h"

#define ERR(...) (snprintf(err, errsz, __VA_ARGS__), -EINVAL)

/* ---- Unicode helpers (the input is valid UTF-8) ---- */

/* Length of the White_Space character at s[0..n), or 0 (Rust's char::is_whitespace). */
static size_t ws_len(const char *p, size_t n)
{
	const unsigned char *s = (const unsigned char *)p;
	uint32_t c;

	if (n == 0)
		return 0;
	if (s[0] == ' ' || (s[0] >= 0x09 && s[0] <= 0x0D))
		return 1;
	if (n >= 2 && s[0] == 0xC2 && (s[1] == 0x85 || s[1] == 0xA0))
		return 2;
	if (n < 3 || (s[0] != 0xE1 && s[0] != 0xE2 && s[0] != 0xE3))
		return 0;
	c = ((uint32_t)(s[0] & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
	if (c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
	    c == 0x202F || c == 0x205F || c == 0x3000)
		return 3;
	return 0;
}

/* Last White_Space character ending at s[n), or 0. */
static size_t ws_len_back(const char *s, size_t n)
{
	for (size_t k = 1; k <= 3 && k <= n; k++)
		if (ws_len(s + n - k, k) == k)
			return k;
	return 0;
}

static void trim(const char **s, size_t *n)
{
	size_t k;

	while ((k = ws_len(*s, *n))) {
		*s += k;
		*n -= k;
	}
	while ((k = ws_len_back(*s, *n)))
		*n -= k;
}

char *skill_fm_single_line(const char *s, size_t len, size_t *ret_len)
{
	char *out = malloc(len + 1), *o = out;
	bool word = false;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len;) {
		size_t k = ws_len(s + i, len - i);

		if (k) {
			word = false;
			i += k;
			continue;
		}
		if (!word && o != out)
			*o++ = ' ';
		word = true;
		*o++ = s[i++];
	}
	*o = 0;
	if (ret_len)
		*ret_len = (size_t)(o - out);
	return out;
}

size_t skill_fm_char_count(const char *s, size_t len)
{
	size_t n = 0;

	/* Counting lead bytes: continuation bytes are 10xxxxxx. */
	for (size_t i = 0; i < len; i++)
		n += ((unsigned char)s[i] & 0xC0) != 0x80;
	return n;
}

/* ---- lines (Rust's str::lines(): "\n" or "\r\n" ends a line) ---- */

struct line {
	const char *s;
	size_t n;
};

static int split_lines(const char *text, size_t len, struct line **ret, size_t *ret_n)
{
	size_t cap = 16, n = 0;
	struct line *v = malloc(cap * sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t e = nl ? (size_t)(nl - text) : len, k = e - i;

		if (nl && k && text[e - 1] == '\r')
			k--;
		if (n == cap) {
			struct line *nv = realloc(v, (cap *= 2) * sizeof(*v));

			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n++] = (struct line){ text + i, k };
		i = e + 1;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

static bool is_delim(struct line l)
{
	trim(&l.s, &l.n);
	return l.n == 3 && memcmp(l.s, "---", 3) == 0;
}

/* The block between the delimiters, its lines joined by "\n"; NULL and *missing when none. */
static char *extract(const char *text, size_t len, bool *missing)
{
	struct line *v = NULL;
	size_t n = 0, end, total = 0;
	char *out, *o;

	*missing = false;
	if (split_lines(text, len, &v, &n) < 0)
		return NULL;
	if (n == 0 || !is_delim(v[0]))
		goto none;
	for (end = 1; end < n && !is_delim(v[end]); end++)
		total += v[end].n + 1;
	if (end == n || end == 1)
		goto none;
	out = o = malloc(total + 1);
	for (size_t i = 1; out && i < end; i++) {
		memcpy(o, v[i].s, v[i].n);
		o += v[i].n;
		if (i + 1 < end)
			*o++ = '\n';
	}
	if (out)
		*o = 0;
	free(v);
	return out;
none:
	free(v);
	*missing = true;
	return NULL;
}

/* ---- YAML ---- */

bool skill_fm_yaml_null(const yaml_node_t *v, const char *src)
{
	const char *s = (const char *)v->data.scalar.value, *at;

	if (v->type != YAML_SCALAR_NODE)
		return false;
	if (v->tag && strcmp((const char *)v->tag, YAML_NULL_TAG) == 0)
		return true;
	if (v->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	/*
	 * The loader gives untagged plain scalars the str tag too: look at the
	 * source for an explicit tag (after an anchor, if any).
	 */
	at = src + v->start_mark.index;
	if (*at == '&') {
		while (*at && *at != ' ' && *at != '\t' && *at != '\n')
			at++;
		while (*at == ' ' || *at == '\t')
			at++;
	}
	if (*at == '!')
		return false;
	return v->data.scalar.length == 0 || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
	       strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0;
}

static bool key_is(const yaml_node_t *k, const char *name)
{
	return k && k->type == YAML_SCALAR_NODE && k->data.scalar.length == strlen(name) &&
	       memcmp(k->data.scalar.value, name, k->data.scalar.length) == 0;
}

/* An Option<String> field (*ret, *ret_len): *ret stays NULL for null. */
static int take_string(const yaml_node_t *v, const char *src, const char *field, bool *seen,
		       char **ret, size_t *ret_len, char *err, size_t errsz)
{
	if (*seen)
		return ERR("duplicate field `%s`", field);
	*seen = true;
	if (v->type != YAML_SCALAR_NODE)
		return ERR("%s: invalid type: %s, expected a string", field,
			   v->type == YAML_MAPPING_NODE ? "map" : "sequence");
	if (skill_fm_yaml_null(v, src))
		return 0;
	/* A NUL inside (from "\0") is kept, as serde keeps it: lengths, not strlen. */
	*ret = malloc(v->data.scalar.length + 1);
	if (!*ret)
		return -ENOMEM;
	memcpy(*ret, v->data.scalar.value, v->data.scalar.length);
	(*ret)[v->data.scalar.length] = 0;
	*ret_len = v->data.scalar.length;
	return 0;
}

/* Raw fields of one document; 0, -EINVAL (err) or -ENOMEM. */
struct raw_fm {
	char *name, *description, *short_description;
	size_t name_len, description_len, short_description_len;
	bool seen_name, seen_description, seen_short, seen_metadata;
};

static void raw_done(struct raw_fm *r)
{
	free(r->name);
	free(r->description);
	free(r->short_description);
	memset(r, 0, sizeof(*r));
}

static int read_metadata(yaml_document_t *doc, const char *src, const yaml_node_t *m,
			 struct raw_fm *r, char *err, size_t errsz)
{
	if (r->seen_metadata)
		return ERR("duplicate field `metadata`");
	r->seen_metadata = true;
	if (skill_fm_yaml_null(m, src))
		return 0;
	if (m->type != YAML_MAPPING_NODE)
		return ERR("metadata: invalid type, expected struct SkillFrontmatterMetadata");
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);
		yaml_node_t *v = yaml_document_get_node(doc, p->value);
		int e;

		if (!k || !v || !key_is(k, "short-description"))
			continue;
		e = take_string(v, src, "short-description", &r->seen_short, &r->short_description,
				&r->short_description_len, err, errsz);
		if (e < 0)
			return e;
	}
	return 0;
}

static int parse_yaml(const char *yaml, struct raw_fm *r, char *err, size_t errsz)
{
	yaml_parser_t parser;
	yaml_document_t doc, next;
	yaml_node_t *root;
	int e = 0;

	memset(r, 0, sizeof(*r));
	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, strlen(yaml));
	if (!yaml_parser_load(&parser, &doc)) {
		e = ERR("invalid YAML: %s", parser.problem ? parser.problem : "syntax error");
		yaml_parser_delete(&parser);
		return e;
	}
	/* serde_yaml refuses a second document. */
	if (!yaml_parser_load(&parser, &next)) {
		e = ERR("invalid YAML: %s", parser.problem ? parser.problem : "syntax error");
		goto out;
	}
	if (yaml_document_get_root_node(&next))
		e = ERR("invalid YAML: more than one document");
	yaml_document_delete(&next);
	if (e < 0)
		goto out;
	root = yaml_document_get_root_node(&doc);
	if (!root || root->type != YAML_MAPPING_NODE) {
		e = ERR("invalid YAML: expected a mapping");
		goto out;
	}
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(&doc, p->key);
		yaml_node_t *v = yaml_document_get_node(&doc, p->value);

		if (!k || !v)
			continue;
		if (key_is(k, "name"))
			e = take_string(v, yaml, "name", &r->seen_name, &r->name, &r->name_len, err,
					errsz);
		else if (key_is(k, "description"))
			e = take_string(v, yaml, "description", &r->seen_description, &r->description,
					&r->description_len, err, errsz);
		else if (key_is(k, "metadata"))
			e = read_metadata(&doc, yaml, v, r, err, errsz);
		if (e < 0)
			break;
	}
out:
	if (e < 0)
		raw_done(r);
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return e;
}

/* serde_yaml::from_str::<Value>(s).is_ok(): one well-formed document. */
static bool yaml_valid(const char *s, size_t n)
{
	yaml_parser_t parser;
	yaml_document_t doc, next;
	bool ok = false;

	if (!yaml_parser_initialize(&parser))
		return false;
	yaml_parser_set_input_string(&parser, (const unsigned char *)s, n);
	if (yaml_parser_load(&parser, &doc)) {
		if (yaml_parser_load(&parser, &next)) {
			ok = !yaml_document_get_root_node(&next);
			yaml_document_delete(&next);
		}
		yaml_document_delete(&doc);
	}
	yaml_parser_delete(&parser);
	return ok;
}

/* ---- the repair pass: quote prose scalars that YAML misreads ---- */

static int buf_add(char **b, size_t *len, size_t *cap, const char *s, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t nc = (*len + n + 1) * 2;
		char *nb = realloc(*b, nc);

		if (!nb)
			return -ENOMEM;
		*b = nb;
		*cap = nc;
	}
	memcpy(*b + *len, s, n);
	*len += n;
	(*b)[*len] = 0;
	return 0;
}

/*
 * Cuts a comment off the plain scalar (scalar, *sn): a '#' at its start or
 * after whitespace starts one; *comment (*cn bytes) keeps the whitespace
 * before it, *sn ends without trailing whitespace.
 */
static void split_comment(const char *scalar, size_t *sn, const char **comment, size_t *cn)
{
	size_t k;

	for (size_t i = 0; i < *sn; i++) {
		if (scalar[i] != '#' || (i > 0 && !ws_len_back(scalar, i)))
			continue;
		*comment = scalar + i;
		*cn = *sn - i;
		*sn = i;
		while ((k = ws_len_back(scalar, *sn))) {
			*sn -= k;
			*comment -= k;
			*cn += k;
		}
		break;
	}
	while ((k = ws_len_back(scalar, *sn)))
		*sn -= k;
}

/*
 * Whether a plain scalar YAML would not read as the string it shows: one
 * with ": " inside, or one that starts like a flow collection, an alias
 * or a reserved indicator and is no valid YAML. Quoted scalars are left
 * alone.
 */
static bool needs_quotes(const char *scalar, size_t sn)
{
	char first = scalar[0];
	bool sep = false;

	if (first == '\'' || first == '"')
		return false;
	for (size_t i = 0; i + 1 < sn && !sep; i++)
		sep = scalar[i] == ':' && ws_len(scalar + i + 1, sn - i - 1);
	return sep || ((first == '[' || first == '{' || first == '@' || first == '`') &&
		       !yaml_valid(scalar, sn));
}

/* One line, repaired or not; *changed when it was. */
static int repair_line(struct line l, long *block_indent, char **b, size_t *len, size_t *cap,
		       bool *changed)
{
	const char *colon, *val, *scalar, *comment = "";
	size_t indent = 0, vn, sn, cn = 0, lead, k;
	int r;

	while (indent < l.n && l.s[indent] == ' ')
		indent++;
	if (*block_indent >= 0) {
		const char *t = l.s;
		size_t tn = l.n;

		trim(&t, &tn);
		if (tn == 0 || (long)indent > *block_indent)
			return buf_add(b, len, cap, l.s, l.n);
		*block_indent = -1;
	}
	colon = memchr(l.s, ':', l.n);
	if (!colon)
		return buf_add(b, len, cap, l.s, l.n);
	{
		const char *ks = l.s;
		size_t kn = (size_t)(colon - l.s);

		trim(&ks, &kn);
		val = colon + 1;
		vn = l.n - (size_t)(val - l.s);
		if (kn == 0 || (vn && !ws_len(val, vn)))
			return buf_add(b, len, cap, l.s, l.n);
	}
	scalar = val;
	sn = vn;
	while ((k = ws_len(scalar, sn))) {
		scalar += k;
		sn -= k;
	}
	lead = (size_t)(scalar - val);
	split_comment(scalar, &sn, &comment, &cn);
	if (sn == 0)
		return buf_add(b, len, cap, l.s, l.n);
	if (scalar[0] == '|' || scalar[0] == '>') {
		*block_indent = (long)indent;
		return buf_add(b, len, cap, l.s, l.n);
	}
	if (!needs_quotes(scalar, sn))
		return buf_add(b, len, cap, l.s, l.n);
	r = buf_add(b, len, cap, l.s, (size_t)(val - l.s));
	if (r >= 0)
		r = buf_add(b, len, cap, val, lead);
	if (r >= 0)
		r = buf_add(b, len, cap, "'", 1);
	for (size_t i = 0; r >= 0 && i < sn; i++)
		r = buf_add(b, len, cap, scalar[i] == '\'' ? "''" : scalar + i, scalar[i] == '\'' ? 2 : 1);
	if (r >= 0)
		r = buf_add(b, len, cap, "'", 1);
	if (r >= 0)
		r = buf_add(b, len, cap, comment, cn);
	*changed = true;
	return r;
}

/* The repaired block, or NULL when nothing changed (*oom on allocation failure). */
static char *repair(const char *fm, bool *oom)
{
	struct line *v = NULL;
	size_t n = 0, len = 0, cap = 0;
	long block_indent = -1;
	bool changed = false;
	char *b = NULL;
	int r = 0;

	*oom = false;
	if (split_lines(fm, strlen(fm), &v, &n) < 0) {
		*oom = true;
		return NULL;
	}
	r = buf_add(&b, &len, &cap, "", 0);
	for (size_t i = 0; r >= 0 && i < n; i++) {
		if (i > 0)
			r = buf_add(&b, &len, &cap, "\n", 1);
		if (r >= 0)
			r = repair_line(v[i], &block_indent, &b, &len, &cap, &changed);
	}
	free(v);
	if (r < 0 || !changed) {
		*oom = r < 0;
		free(b);
		return NULL;
	}
	return b;
}

/* ---- the whole ---- */

void skill_fm_done(struct skill_fm *fm)
{
	free(fm->name);
	free(fm->description);
	free(fm->short_description);
	memset(fm, 0, sizeof(*fm));
}

int skill_fm_parse(const char *text, size_t len, const char *default_name, struct skill_fm *out,
		   char *err, size_t errsz)
{
	struct raw_fm raw;
	char *fm, *fixed;
	bool missing, oom;
	int e;

	memset(out, 0, sizeof(*out));
	fm = extract(text, len, &missing);
	if (!fm)
		return missing ? ERR("missing YAML frontmatter delimited by ---") : -ENOMEM;
	e = parse_yaml(fm, &raw, err, errsz);
	if (e == -EINVAL) {
		fixed = repair(fm, &oom);
		if (oom)
			e = -ENOMEM;
		else if (fixed && parse_yaml(fixed, &raw, err, errsz) == 0)
			e = 0;
		free(fixed);
	}
	free(fm);
	if (e < 0)
		return e;
	out->name = raw.name ? skill_fm_single_line(raw.name, raw.name_len, &out->name_len) : NULL;
	if (out->name && !out->name_len) {
		free(out->name);
		out->name = NULL;
	}
	if (!out->name && default_name) {
		out->name = strdup(default_name);
		out->name_len = out->name ? strlen(out->name) : 0;
	}
	out->description = skill_fm_single_line(raw.description ?: "", raw.description_len,
					  &out->description_len);
	if (raw.short_description) {
		out->short_description = skill_fm_single_line(raw.short_description,
							raw.short_description_len,
							&out->short_description_len);
		if (out->short_description && !out->short_description_len) {
			free(out->short_description);
			out->short_description = NULL;
		}
	}
	raw_done(&raw);
	if (!out->description || (default_name && !out->name)) {
		skill_fm_done(out);
		return -ENOMEM;
	}
	if (!out->name || !out->name_len)
		e = ERR("missing field `name`");
	else if (skill_fm_char_count(out->name, out->name_len) > SKILL_NAME_MAX)
		e = ERR("invalid name: exceeds maximum length of %d characters", SKILL_NAME_MAX);
	else if (!out->description_len)
		e = ERR("missing field `description`");
	if (e < 0)
		skill_fm_done(out);
	return e;
}
