/* SPDX-License-Identifier: MIT */
/*
 * capabilities/discoverV2 (PROTOCOL.md §6.24), in a worker thread: the
 * executor's own capability locations, each discovered as a V1 root
 * (roots.c), then its skills' front matter parsed (frontmatter.h) and their
 * agents/openai.yaml read for dependencies and policy (skill-meta.c).
 *
 * Locations, in order: $CODEX_HOME/skills ("codex-home-skills"),
 * $HOME/.agents/skills ("user-agent-skills"), /etc/codex/skills
 * ("system-skills"), then the installed plugins of $CODEX_HOME/plugins/cache
 * (<marketplace>/<plugin>/<version>, the active version only). A location
 * that does not exist is skipped silently; one with any problem (an
 * unreadable file, an invalid skill) adds one summary warning, as the
 * reference's does: the details are not the client's to see.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "discovery.h"
#include "file-uri.h"
#include "frontmatter.h"
#include "macro.h"
#include "plugins.h"
#include "skill-meta.h"

#define WARN_LOCATIONS "some capability locations could not be resolved; discovery may be incomplete"
#define WARN_METADATA "some capability metadata could not be loaded; discovery may be incomplete"
#define MAX_CAPABILITIES 2048
#define MAX_RESPONSE_BYTES (4u << 20)
#define MAX_WARNINGS 64
#define MAX_QUALIFIED_NAME (SKILL_NAME_MAX * 2 + 1)

static const char *const skill_roots[][2] = {
	{ "codex-home-skills", NULL }, /* $CODEX_HOME/skills */
	{ "user-agent-skills", NULL }, /* $HOME/.agents/skills */
	{ "system-skills", "/etc/codex/skills" },
};

struct v2 {
	struct disc_ctx *ctx;
	json_t *plugins, *skills, *warnings;
	size_t n_caps, bytes; /* admitted so far, against MAX_CAPABILITIES and MAX_RESPONSE_BYTES */
	bool truncated;
};

/* Admits caps capabilities serialised as obj within the response budget. */
static bool admit(struct v2 *v, size_t caps, json_t *obj)
{
	size_t n = json_dumpb(obj, NULL, 0, JSON_COMPACT);

	if (v->n_caps + caps > MAX_CAPABILITIES || v->bytes + n > MAX_RESPONSE_BYTES) {
		v->truncated = true;
		return false;
	}
	v->n_caps += caps;
	v->bytes += n;
	return true;
}

static bool budget_spent(const struct v2 *v)
{
	return v->n_caps == MAX_CAPABILITIES || v->bytes == MAX_RESPONSE_BYTES;
}

static void add_warning(struct v2 *v, const char *w)
{
	if (json_array_size(v->warnings) < MAX_WARNINGS)
		json_array_append_new(v->warnings, json_string(w));
}

/* The skill's fallback name: its directory's, on one line, else "skill". */
static char *default_name(const char *skill_path)
{
	_cleanup_free_ char *dir = strdup(skill_path);
	char *slash, *base, *name;

	if (!dir)
		return NULL;
	slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	base = strrchr(dir, '/');
	base = base ? base + 1 : dir;
	name = skill_fm_single_line(base, strlen(base), NULL);
	if (name && !*name) {
		free(name);
		name = strdup("skill");
	}
	return name;
}

/*
 * Namespaces of a root: plugin directory (native) -> the manifest's "name"
 * (its directory's when blank), first manifest per directory.
 */
static json_t *namespaces_of(json_t *disc)
{
	json_t *ns = json_object(), *m;
	size_t i;

	json_array_foreach(json_object_get(disc, "namespaceManifests"), i, m) {
		_cleanup_free_ char *native = NULL, *msg = NULL;
		json_t *doc;
		const char *name;
		char *s;

		if (file_uri_to_path(json_string_value(json_object_get(m, "path")), false, &native,
				     &msg) < 0)
			continue;
		for (int k = 0; k < 2; k++) {
			s = strrchr(native, '/');
			if (!s || s == native)
				break;
			*s = 0;
		}
		doc = json_loads(json_string_value(json_object_get(m, "contents")), JSON_REJECT_DUPLICATES,
				 NULL);
		if (!json_is_object(doc)) {
			json_decref(doc);
			continue;
		}
		name = json_string_value(json_object_get(doc, "name"));
		if (json_object_get(doc, "name") && !json_is_string(json_object_get(doc, "name"))) {
			json_decref(doc);
			continue; /* serde: a non-string name fails the manifest */
		}
		{
			_cleanup_free_ char *t = name ? skill_fm_single_line(name, strlen(name), NULL) : NULL;
			const char *use = t && *t ? name : strrchr(native, '/') + 1;

			if (!json_object_get(ns, native))
				json_object_set_new(ns, native, json_string(use));
		}
		json_decref(doc);
	}
	return ns;
}

/* The namespace of a skill: its nearest enclosing plugin directory's, or NULL. */
static const char *namespace_for(json_t *ns, const char *skill_path)
{
	_cleanup_free_ char *p = strdup(skill_path);
	char *s;

	while (p && (s = strrchr(p, '/')) && s != p) {
		*s = 0;
		if (json_object_get(ns, p))
			return json_string_value(json_object_get(ns, p));
	}
	return NULL;
}

/* One skill's V2 object; NULL (with *bad) when invalid. */
static json_t *skill_json(json_t *files, json_t *ns, const char *root_id, const char *root_uri,
			  bool *bad)
{
	json_t *instr = json_object_get(files, "instructions"), *meta = json_object_get(files, "metadata");
	const char *uri = json_string_value(json_object_get(instr, "path"));
	const char *text = json_string_value(json_object_get(instr, "contents"));
	_cleanup_free_ char *native = NULL, *msg = NULL, *def = NULL, *qualified = NULL;
	struct skill_fm fm;
	const char *space;
	size_t qualified_len = 0;
	json_t *s, *deps = NULL, *policy = NULL;
	char err[256];

	if (file_uri_to_path(uri, false, &native, &msg) < 0 || !(def = default_name(native)))
		return NULL;
	if (skill_fm_parse(text, json_string_length(json_object_get(instr, "contents")), def, &fm,
			   err, sizeof(err)) < 0) {
		*bad = true;
		return NULL;
	}
	space = namespace_for(ns, native);
	if (space) {
		size_t n = strlen(space);

		if (skill_fm_char_count(space, n) + 1 + skill_fm_char_count(fm.name, fm.name_len) > MAX_QUALIFIED_NAME ||
		    !(qualified = malloc(n + 1 + fm.name_len + 1))) {
			skill_fm_done(&fm);
			*bad = true;
			return NULL;
		}
		memcpy(qualified, space, n);
		qualified[n] = ':';
		memcpy(qualified + n + 1, fm.name, fm.name_len);
		qualified_len = n + 1 + fm.name_len;
	}
	if (json_is_object(meta))
		skill_meta_parse(json_string_value(json_object_get(meta, "contents")), &deps, &policy);
	s = json_object();
	json_object_set_new(s, "name", qualified ? json_stringn(qualified, qualified_len) :
						  json_stringn(fm.name, fm.name_len));
	json_object_set_new(s, "description", json_stringn(fm.description, fm.description_len));
	json_object_set_new(s, "shortDescription",
			    fm.short_description ?
				    json_stringn(fm.short_description, fm.short_description_len) :
				    json_null());
	json_object_set_new(s, "path", json_string(uri));
	if (root_id) {
		json_t *dr = json_object();

		json_object_set_new(dr, "id", json_string(root_id));
		json_object_set_new(dr, "path", json_string(root_uri));
		json_object_set_new(s, "discoveryRoot", dr);
	}
	json_object_set_new(s, "dependencies", deps ? deps : json_null());
	json_object_set_new(s, "policy", policy ? policy : json_null());
	skill_fm_done(&fm);
	return s;
}

/* The skills of one discovered root; *bad when any was invalid. */
static json_t *skills_of(json_t *disc, const char *root_id, const char *root_uri, bool *bad)
{
	json_t *out = json_array(), *ns = namespaces_of(disc), *f;
	size_t i;

	json_array_foreach(json_object_get(disc, "skills"), i, f) {
		json_t *s = skill_json(f, ns, root_id, root_uri, bad);

		if (s)
			json_array_append_new(out, s);
	}
	json_decref(ns);
	return out;
}

static bool has_problems(json_t *disc)
{
	return json_array_size(json_object_get(disc, "warnings")) > 0 ||
	       !json_is_null(json_object_get(disc, "error"));
}

/* A location that is no directory (or cannot be reached) holds nothing, silently. */
static bool location_dir(const char *path, struct v2 *v)
{
	struct stat st;

	if (stat(path, &st) == 0)
		return S_ISDIR(st.st_mode);
	if (errno != ENOENT && errno != ENOTDIR && errno != EACCES && errno != EPERM)
		add_warning(v, WARN_METADATA);
	return false;
}

static void standalone(struct v2 *v, const char *id, const char *path)
{
	_cleanup_free_ char *uri = file_uri_from_path(path);
	json_t *disc, *skills, *s, *jid;
	bool bad = false;
	size_t i;

	if (!uri || !location_dir(path, v))
		return;
	v->ctx->total = 0; /* each location's contents are dropped once its skills are parsed */
	jid = json_string("");
	disc = jid ? disc_root_discover(v->ctx, jid, path, uri) : NULL;
	json_decref(jid);
	if (!disc)
		return;
	skills = skills_of(disc, id, uri, &bad);
	if (bad || has_problems(disc))
		add_warning(v, WARN_METADATA);
	json_array_foreach(skills, i, s) {
		if (v->n_caps == MAX_CAPABILITIES) {
			v->truncated = true;
			break;
		}
		/* One too large may leave room for smaller ones after it. */
		if (admit(v, 1, s))
			json_array_append(v->skills, s);
	}
	json_decref(skills);
	json_decref(disc);
}

/* ---- installed plugins ---- */

/*
 * The plugin's display name: the manifest's interface.displayName when not
 * blank, else its namespace (the manifest's name, else the root's directory
 * name). NULL when the manifest is no JSON object.
 */
static json_t *display_name(json_t *manifest, const char *root)
{
	json_t *doc = json_loads(json_string_value(json_object_get(manifest, "contents")),
				 JSON_REJECT_DUPLICATES, NULL), *out = NULL;
	const char *dn, *name;
	_cleanup_free_ char *t = NULL, *u = NULL;

	if (!json_is_object(doc))
		goto out;
	dn = json_string_value(json_object_get(json_object_get(doc, "interface"), "displayName"));
	t = dn ? skill_fm_single_line(dn, strlen(dn), NULL) : NULL;
	if (t && *t) {
		out = json_string(dn);
		goto out;
	}
	name = json_string_value(json_object_get(doc, "name"));
	u = name ? skill_fm_single_line(name, strlen(name), NULL) : NULL;
	out = json_string(u && *u ? name : strrchr(root, '/') + 1);
out:
	json_decref(doc);
	return out;
}

static void plugin(struct v2 *v, const struct plugin_loc *loc)
{
	_cleanup_free_ char *uri = file_uri_from_path(loc->root);
	json_t *disc, *p, *skills, *files, *dn, *id;
	bool bad = false;

	if (!uri)
		return;
	v->ctx->total = 0;
	id = json_string(loc->id);
	disc = id ? disc_root_discover(v->ctx, id, loc->root, uri) : NULL;
	json_decref(id);
	if (!disc)
		return;
	files = json_object_get(disc, "plugin");
	dn = json_is_object(files) ? display_name(json_object_get(files, "manifest"), loc->root) : NULL;
	if (!dn) {
		add_warning(v, WARN_METADATA); /* installed, but no readable manifest */
		json_decref(disc);
		return;
	}
	skills = skills_of(disc, NULL, NULL, &bad);
	if (bad || has_problems(disc))
		add_warning(v, WARN_METADATA);
	if (v->n_caps == MAX_CAPABILITIES) {
		v->truncated = true;
		json_decref(dn);
		json_decref(skills);
		json_decref(disc);
		return;
	}
	/* The plugin itself counts as a capability too. */
	while (json_array_size(skills) > MAX_CAPABILITIES - v->n_caps - 1) {
		json_array_remove(skills, json_array_size(skills) - 1);
		v->truncated = true;
	}
	p = json_object();
	json_object_set_new(p, "id", json_string(loc->id));
	json_object_set_new(p, "displayName", dn);
	json_object_set_new(p, "remotePluginId", loc->remote_id ? json_string(loc->remote_id) : json_null());
	json_object_set_new(p, "version", json_string(loc->version));
	json_object_set_new(p, "root", json_string(uri));
	json_object_set_new(p, "files", json_incref(files));
	json_object_set_new(p, "skills", skills);
	if (admit(v, 1 + json_array_size(skills), p))
		json_array_append(v->plugins, p);
	json_decref(p);
	json_decref(disc);
}

/*
 * The response within MAX_RESPONSE_BYTES as a whole: once anything was cut,
 * the limit warning leads, and entries go from the end until it fits.
 */
static void enforce_size(struct v2 *v, json_t *out)
{
	if (!v->truncated && json_dumpb(out, NULL, 0, JSON_COMPACT) <= MAX_RESPONSE_BYTES)
		return;
	while (json_array_size(v->warnings) > MAX_WARNINGS - 1)
		json_array_remove(v->warnings, json_array_size(v->warnings) - 1);
	json_array_insert_new(v->warnings, 0, json_string("capability discovery size limit reached"));
	while (json_dumpb(out, NULL, 0, JSON_COMPACT) > MAX_RESPONSE_BYTES) {
		if (json_array_size(v->warnings) > 1)
			while (json_array_size(v->warnings) > 1)
				json_array_remove(v->warnings, 1);
		else if (json_array_size(v->skills))
			json_array_remove(v->skills, json_array_size(v->skills) - 1);
		else if (json_array_size(v->plugins))
			json_array_remove(v->plugins, json_array_size(v->plugins) - 1);
		else
			break;
	}
}

json_t *disc_v2_discover(struct disc_ctx *ctx, const char *codex_home, const char *user_home)
{
	struct v2 v = { ctx, json_array(), json_array(), json_array(), 0, 0, false };
	struct plugin_loc *locs = NULL;
	size_t n_locs = 0;
	bool problem = false, stop = false;
	json_t *out;

	/* Locations first: their problems lead the warnings, as the reference's do. */
	if (codex_home && disc_plugin_locations(codex_home, &locs, &n_locs, &problem) < 0)
		problem = true;
	if (problem)
		add_warning(&v, WARN_LOCATIONS);
	for (size_t i = 0; i < ELEMENTSOF(skill_roots); i++) {
		_cleanup_free_ char *path = NULL;
		const char *base = i == 0 ? codex_home : i == 1 ? user_home : NULL;

		if (skill_roots[i][1])
			path = strdup(skill_roots[i][1]);
		else if (base && asprintf(&path, "%s%s", strcmp(base, "/") == 0 ? "" : base,
					  i == 0 ? "/skills" : "/.agents/skills") < 0)
			path = NULL;
		if (path && !stop)
			standalone(&v, skill_roots[i][0], path);
		/* A spent budget ends the scan: later locations are not even read. */
		if (budget_spent(&v) && (i + 1 < ELEMENTSOF(skill_roots) || n_locs))
			stop = v.truncated = true;
	}
	for (size_t i = 0; i < n_locs && !stop; i++) {
		plugin(&v, &locs[i]);
		if (budget_spent(&v) && i + 1 < n_locs)
			stop = v.truncated = true;
	}
	disc_plugin_locations_free(locs, n_locs);
	out = json_object();
	json_object_set_new(out, "plugins", json_incref(v.plugins));
	json_object_set_new(out, "skills", json_incref(v.skills));
	json_object_set_new(out, "warnings", json_incref(v.warnings));
	enforce_size(&v, out);
	json_decref(v.plugins);
	json_decref(v.skills);
	json_decref(v.warnings);
	return out;
}
