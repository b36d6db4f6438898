/* SPDX-License-Identifier: MIT */
/*
 * agents/openai.yaml (skill-meta.h), read with libyaml's document loader.
 * The file's shape, as the reference's serde structs have it:
 *
 *   interface:    {display_name, short_description, brand_color, default_prompt: string,
 *                  icon_small, icon_large: path}        (checked, not reported)
 *   dependencies: {tools: [{type, value, description, transport, command, url: string,
 *                           oauth: {callback_port: u16}}]}
 *   policy:       {allow_implicit_invocation: bool, products: [codex|chatgpt|atlas]}
 *
 * Every member is optional and may be null (tools and products may not);
 * unknown members are ignored; a member twice, or of the wrong type, fails
 * the whole file.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "frontmatter.h"
#include "skill-meta.h"

#define TYPE_MAX 64
#define TRANSPORT_MAX 64
#define TEXT_MAX 1024

typedef yaml_node_t node_t;

/* A loaded document and its source text (skill_fm_yaml_null looks for explicit tags there). */
typedef struct {
	yaml_document_t doc;
	const char *src;
} doc_t;

static node_t *node(doc_t *d, int i)
{
	return yaml_document_get_node(&d->doc, i);
}

static bool is_null(doc_t *d, const node_t *v)
{
	return skill_fm_yaml_null(v, d->src);
}

static bool plain(const node_t *v, const char *s)
{
	return v->type == YAML_SCALAR_NODE && v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       strcmp((const char *)v->data.scalar.value, s) == 0;
}

/* YAML 1.2 core booleans, plain only: 1 true, 0 false, -1 not a bool. */
static int boolean(const node_t *v)
{
	static const char *const t[] = { "true", "True", "TRUE" }, *const f[] = { "false", "False", "FALSE" };

	for (size_t i = 0; i < 3; i++) {
		if (plain(v, t[i]))
			return 1;
		if (plain(v, f[i]))
			return 0;
	}
	return -1;
}

/* A plain scalar that YAML reads as a number (a path or enum string must not be one). */
static bool numeric(const node_t *v)
{
	const char *s = (const char *)v->data.scalar.value;
	char *end;

	if (v->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || !*s)
		return false;
	(void)strtod(s, &end);
	return *end == 0 || boolean(v) >= 0;
}

static bool key_is(const node_t *k, const char *name)
{
	return k && k->type == YAML_SCALAR_NODE && strcmp((const char *)k->data.scalar.value, name) == 0 &&
	       k->data.scalar.length == strlen(name);
}

/* Option<String>: 0 with *out (NULL for null), -EINVAL for a collection or a repeat. */
static int opt_string(doc_t *d, const node_t *v, const char **out, bool *seen)
{
	if (*seen || v->type != YAML_SCALAR_NODE)
		return -EINVAL;
	*seen = true;
	*out = is_null(d, v) ? NULL : (const char *)v->data.scalar.value;
	return 0;
}

/* For each pair of mapping m (pair variable p): key k and value v, both non-NULL. */
#define FOR_PAIRS(d, m, p, k, v)                                                               \
	for (yaml_node_pair_t *p = (m)->data.mapping.pairs.start; p < (m)->data.mapping.pairs.top; \
	     p++)                                                                               \
		for (node_t *k = node(d, p->key), *v = node(d, p->value); k && v; k = NULL)

static int check_interface(doc_t *d, const node_t *m)
{
	static const char *const fields[] = { "display_name", "short_description", "brand_color",
					      "default_prompt", "icon_small", "icon_large" };
	bool seen[6] = { 0 };

	if (is_null(d, m))
		return 0;
	if (m->type != YAML_MAPPING_NODE)
		return -EINVAL;
	FOR_PAIRS(d, m, p, k, v) {
		for (size_t i = 0; i < 6; i++) {
			const char *s;

			if (!key_is(k, fields[i]))
				continue;
			if (opt_string(d, v, &s, &seen[i]) < 0 || (i >= 4 && s && numeric(v)))
				return -EINVAL;
		}
	}
	return 0;
}

/* A u16 from a plain decimal scalar. */
static int port(const node_t *v, long *out)
{
	const char *s = (const char *)v->data.scalar.value;
	char *end;

	if (v->type != YAML_SCALAR_NODE || v->data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
	    (!(*s >= '0' && *s <= '9') && *s != '+'))
		return -EINVAL;
	errno = 0;
	*out = strtol(s, &end, 10);
	return (*end || errno || *out < 0 || *out > 65535) ? -EINVAL : 0;
}

/* Resolves one string field: sanitised, NULL when empty or longer than max. */
static json_t *resolved(const node_t *v, const char *s, size_t max)
{
	size_t n = 0;
	char *t = s ? skill_fm_single_line(s, v->data.scalar.length, &n) : NULL;
	json_t *j = NULL;

	if (t && n && skill_fm_char_count(t, n) <= max)
		j = json_stringn(t, n);
	free(t);
	return j;
}

static int read_tool(doc_t *d, const node_t *m, json_t *tools)
{
	static const char *const fields[] = { "type", "value", "description", "transport", "command", "url" };
	static const size_t max[] = { TYPE_MAX, TEXT_MAX, TEXT_MAX, TRANSPORT_MAX, TEXT_MAX, TEXT_MAX };
	const char *val[6] = { 0 };
	const node_t *vn[6] = { 0 };
	bool seen[6] = { 0 }, seen_oauth = false, seen_cb = false;
	long cb = -1;
	json_t *t, *ty, *va;

	if (m->type != YAML_MAPPING_NODE)
		return -EINVAL;
	FOR_PAIRS(d, m, p, k, v) {
		for (size_t i = 0; i < 6; i++)
			if (key_is(k, fields[i])) {
				if (opt_string(d, v, &val[i], &seen[i]) < 0)
					return -EINVAL;
				vn[i] = v;
			}
		if (!key_is(k, "oauth"))
			continue;
		if (seen_oauth)
			return -EINVAL;
		seen_oauth = true;
		if (is_null(d, v))
			continue;
		if (v->type != YAML_MAPPING_NODE)
			return -EINVAL;
		FOR_PAIRS(d, v, p2, k2, v2) {
			if (!key_is(k2, "callback_port"))
				continue;
			if (seen_cb)
				return -EINVAL;
			seen_cb = true;
			if (is_null(d, v2))
				continue;
			if (port(v2, &cb) < 0)
				return -EINVAL;
		}
	}
	/* Resolved after the whole file decoded: kept on the side until then. */
	ty = resolved(vn[0], val[0], max[0]);
	va = resolved(vn[1], val[1], max[1]);
	if (!ty || !va) {
		json_decref(ty);
		json_decref(va);
		json_array_append_new(tools, json_null()); /* dropped later, counted as seen */
		return 0;
	}
	t = json_object();
	json_object_set_new(t, "type", ty);
	json_object_set_new(t, "value", va);
	for (size_t i = 2; i < 6; i++) {
		json_t *x = resolved(vn[i], val[i], max[i]);

		json_object_set_new(t, fields[i], x ? x : json_null());
	}
	json_object_set_new(t, "oauthCallbackPort", cb >= 0 ? json_integer(cb) : json_null());
	json_array_append_new(tools, t);
	return 0;
}

static int read_dependencies(doc_t *d, const node_t *m, json_t **out)
{
	bool seen = false;
	json_t *tools = json_array();

	if (is_null(d, m))
		goto none;
	if (m->type != YAML_MAPPING_NODE)
		goto bad;
	FOR_PAIRS(d, m, p, k, v) {
		if (!key_is(k, "tools"))
			continue;
		if (seen || v->type != YAML_SEQUENCE_NODE)
			goto bad;
		seen = true;
		for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
		     it++) {
			node_t *tn = node(d, *it);

			if (!tn || read_tool(d, tn, tools) < 0)
				goto bad;
		}
	}
	for (size_t i = json_array_size(tools); i-- > 0;)
		if (json_is_null(json_array_get(tools, i)))
			json_array_remove(tools, i);
	if (json_array_size(tools) == 0)
		goto none;
	*out = json_pack("{s:o}", "tools", tools);
	return 0;
none:
	json_decref(tools);
	return 0;
bad:
	json_decref(tools);
	return -EINVAL;
}

/* A product: its wire name, or NULL. */
static const char *product(const node_t *v)
{
	static const char *const names[][2] = { { "codex", "CODEX" }, { "chatgpt", "CHATGPT" },
						{ "atlas", "ATLAS" } };

	if (v->type != YAML_SCALAR_NODE || numeric(v))
		return NULL;
	for (size_t i = 0; i < 3; i++)
		if (!strcmp((const char *)v->data.scalar.value, names[i][0]) ||
		    !strcmp((const char *)v->data.scalar.value, names[i][1]))
			return names[i][0];
	return NULL;
}

static int read_policy(doc_t *d, const node_t *m, json_t **out)
{
	bool seen_allow = false, seen_products = false;
	json_t *allow = json_null(), *products = json_array();

	if (is_null(d, m))
		goto none;
	if (m->type != YAML_MAPPING_NODE)
		goto bad;
	FOR_PAIRS(d, m, p, k, v) {
		if (key_is(k, "allow_implicit_invocation")) {
			int b = boolean(v);

			if (seen_allow || (b < 0 && !is_null(d, v)))
				goto bad;
			seen_allow = true;
			json_decref(allow);
			allow = b < 0 ? json_null() : json_boolean(b);
		} else if (key_is(k, "products")) {
			if (seen_products || v->type != YAML_SEQUENCE_NODE)
				goto bad;
			seen_products = true;
			for (yaml_node_item_t *it = v->data.sequence.items.start;
			     it < v->data.sequence.items.top; it++) {
				node_t *pn = node(d, *it);
				const char *name = pn ? product(pn) : NULL;

				if (!name)
					goto bad;
				json_array_append_new(products, json_string(name));
			}
		}
	}
	*out = json_pack("{s:o,s:o}", "allowImplicitInvocation", allow, "products", products);
	return 0;
none:
	json_decref(allow);
	json_decref(products);
	return 0;
bad:
	json_decref(allow);
	json_decref(products);
	return -EINVAL;
}

void skill_meta_parse(const char *text, json_t **deps, json_t **policy)
{
	yaml_parser_t parser;
	yaml_document_t next;
	doc_t d = { .src = text };
	node_t *root;
	bool seen[3] = { 0 }, ok = true;
	json_t *dp = NULL, *po = NULL;

	*deps = *policy = NULL;
	if (!text || !yaml_parser_initialize(&parser))
		return;
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, strlen(text));
	if (!yaml_parser_load(&parser, &d.doc)) {
		yaml_parser_delete(&parser);
		return;
	}
	if (!yaml_parser_load(&parser, &next)) {
		ok = false;
	} else {
		ok = !yaml_document_get_root_node(&next);
		yaml_document_delete(&next);
	}
	root = yaml_document_get_root_node(&d.doc);
	if (ok && root && root->type != YAML_MAPPING_NODE && !is_null(&d, root))
		ok = false;
	if (ok && root && root->type == YAML_MAPPING_NODE) {
		FOR_PAIRS(&d, root, p, k, v) {
			int r = 0, i = key_is(k, "interface") ? 0 : key_is(k, "dependencies") ? 1 :
				       key_is(k, "policy") ? 2 : -1;

			if (!ok || i < 0)
				continue;
			if (seen[i])
				r = -EINVAL;
			else if (i == 0)
				r = check_interface(&d, v);
			else if (i == 1)
				r = read_dependencies(&d, v, &dp);
			else
				r = read_policy(&d, v, &po);
			seen[i] = true;
			if (r < 0)
				ok = false;
		}
	}
	yaml_document_delete(&d.doc);
	yaml_parser_delete(&parser);
	if (!ok) {
		json_decref(dp);
		json_decref(po);
		return;
	}
	*deps = dp;
	*policy = po;
}
