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
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "discovery.h"
#include "file-uri.h"
#include "frontmatter.h"
#include "macro.h"
#include "skill-meta.h"

#define WARN_LOCATIONS "some capability locations could not be resolved; discovery may be incomplete"
#define WARN_METADATA "some capability metadata could not be loaded; discovery may be incomplete"
#define MAX_PLUGINS 512
#define MAX_CAPABILITIES 2048
#define MAX_WARNINGS 64
#define MAX_QUALIFIED_NAME (SKILL_NAME_MAX * 2 + 1)

static const char *const skill_roots[][2] = {
	{ "codex-home-skills", NULL }, /* $CODEX_HOME/skills */
	{ "user-agent-skills", NULL }, /* $HOME/.agents/skills */
	{ "system-skills", "/etc/codex/skills" },
};

struct v2 {
	json_t *plugins, *skills, *warnings;
	size_t n_caps;
	bool truncated;
};

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
	name = fm_single_line(base, strlen(base));
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
			_cleanup_free_ char *t = name ? fm_single_line(name, strlen(name)) : NULL;
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
		if (fm_char_count(space) + 1 + fm_char_count(fm.name) > MAX_QUALIFIED_NAME ||
		    asprintf(&qualified, "%s:%s", space, fm.name) < 0) {
			qualified = NULL;
			skill_fm_done(&fm);
			*bad = true;
			return NULL;
		}
	}
	if (json_is_object(meta))
		skill_meta_parse(json_string_value(json_object_get(meta, "contents")), &deps, &policy);
	s = json_object();
	json_object_set_new(s, "name", json_string(qualified ? qualified : fm.name));
	json_object_set_new(s, "description", json_string(fm.description));
	json_object_set_new(s, "shortDescription",
			    fm.short_description ? json_string(fm.short_description) : json_null());
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
	json_t *disc, *skills, *s;
	bool bad = false;
	size_t i;

	if (!uri || !location_dir(path, v))
		return;
	disc = disc_root_discover("", path, uri);
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
		v->n_caps++;
		json_array_append(v->skills, s);
	}
	json_decref(skills);
	json_decref(disc);
}

/* ---- installed plugins ---- */

/* A plugin id segment: ASCII letters, digits, '-' and '_'. */
static bool valid_segment(const char *s, const char *extra)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '-' || *s == '_' || (extra && strchr(extra, *s))))
			return false;
	return true;
}

/* Semantic version "MAJOR.MINOR.PATCH[-pre][+build]": the three numbers; false otherwise. */
static bool semver(const char *s, unsigned long long v[3], const char **pre)
{
	char *e;

	for (int i = 0; i < 3; i++) {
		if (*s < '0' || *s > '9' || (s[0] == '0' && s[1] >= '0' && s[1] <= '9'))
			return false;
		v[i] = strtoull(s, &e, 10);
		s = e;
		if (i < 2 && *s++ != '.')
			return false;
	}
	if (*s && *s != '-' && *s != '+')
		return false;
	*pre = *s == '-' ? s + 1 : NULL;
	return true;
}

/* Version order: semantic versions by their numbers (a pre-release first), else bytewise. */
static int version_cmp(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b, *px, *py;
	unsigned long long vx[3], vy[3];

	if (semver(x, vx, &px) && semver(y, vy, &py)) {
		for (int i = 0; i < 3; i++)
			if (vx[i] != vy[i])
				return vx[i] < vy[i] ? -1 : 1;
		if (!px != !py)
			return px ? -1 : 1;
		return px ? strcmp(px, py) : 0;
	}
	return strcmp(x, y);
}

/* The active version directory of a plugin: "local" if present, else the highest; malloc'd. */
static char *active_version(const char *base)
{
	DIR *d = opendir(base);
	char **v = NULL, *best = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	if (!d)
		return NULL;
	while ((de = readdir(d))) {
		struct stat st;
		char *p;

		if (!valid_segment(de->d_name, ".") || strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0 || asprintf(&p, "%s/%s", base, de->d_name) < 0)
			continue;
		if (lstat(p, &st) < 0 || !S_ISDIR(st.st_mode)) {
			free(p);
			continue;
		}
		free(p);
		if (n == cap) {
			char **nv = realloc(v, (cap = cap ? cap * 2 : 8) * sizeof(*v));

			if (!nv)
				break;
			v = nv;
		}
		if (!(v[n] = strdup(de->d_name)))
			break;
		n++;
		if (n > 4096)
			break;
	}
	closedir(d);
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], "local") == 0)
			best = v[i];
	if (!best && n) {
		qsort(v, n, sizeof(*v), version_cmp);
		best = v[n - 1];
	}
	best = best ? strdup(best) : NULL;
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	return best;
}

/* The manifest's display name: interface.displayName, else its name, else the plugin's. */
static json_t *display_name(json_t *manifest, const char *plugin)
{
	json_t *doc = json_loads(json_string_value(json_object_get(manifest, "contents")), 0, NULL);
	const char *n = json_string_value(json_object_get(json_object_get(doc, "interface"), "displayName"));
	json_t *out;

	if (!n || !*n)
		n = json_string_value(json_object_get(doc, "name"));
	out = json_string(n && *n ? n : plugin);
	json_decref(doc);
	return out;
}

static void plugin(struct v2 *v, const char *market, const char *name, const char *root)
{
	_cleanup_free_ char *uri = file_uri_from_path(root), *id = NULL;
	json_t *disc, *p, *skills, *files;
	bool bad = false;

	if (!uri || asprintf(&id, "%s@%s", name, market) < 0) {
		id = NULL;
		return;
	}
	disc = disc_root_discover(id, root, uri);
	if (!disc)
		return;
	files = json_object_get(disc, "plugin");
	if (!json_is_object(files)) {
		add_warning(v, WARN_METADATA); /* installed, but no readable manifest */
		json_decref(disc);
		return;
	}
	skills = skills_of(disc, NULL, NULL, &bad);
	if (bad || has_problems(disc))
		add_warning(v, WARN_METADATA);
	if (v->n_caps == MAX_CAPABILITIES) {
		v->truncated = true;
		json_decref(skills);
		json_decref(disc);
		return;
	}
	while (json_array_size(skills) > MAX_CAPABILITIES - v->n_caps - 1) {
		json_array_remove(skills, json_array_size(skills) - 1);
		v->truncated = true;
	}
	v->n_caps += 1 + json_array_size(skills);
	p = json_object();
	json_object_set_new(p, "id", json_string(id));
	json_object_set_new(p, "displayName", display_name(json_object_get(files, "manifest"), name));
	json_object_set_new(p, "remotePluginId", json_null());
	json_object_set_new(p, "version", json_string(strrchr(root, '/') + 1));
	json_object_set_new(p, "root", json_string(uri));
	json_object_set_new(p, "files", json_incref(files));
	json_object_set_new(p, "skills", skills);
	json_array_append_new(v->plugins, p);
	json_decref(disc);
}

static int names_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorted subdirectory names of dir that are valid id segments (following links). */
static char **subdirs(const char *dir, size_t *ret_n)
{
	DIR *d = opendir(dir);
	char **v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	*ret_n = 0;
	if (!d)
		return NULL;
	while ((de = readdir(d)) && n < 2000) {
		struct stat st;
		char *p;

		if (!valid_segment(de->d_name, NULL) || asprintf(&p, "%s/%s", dir, de->d_name) < 0)
			continue;
		if (stat(p, &st) < 0 || !S_ISDIR(st.st_mode)) {
			free(p);
			continue;
		}
		free(p);
		if (n == cap) {
			char **nv = realloc(v, (cap = cap ? cap * 2 : 8) * sizeof(*v));

			if (!nv)
				break;
			v = nv;
		}
		if (!(v[n] = strdup(de->d_name)))
			break;
		n++;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), names_cmp);
	*ret_n = n;
	return v;
}

static void free_names(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Plugins by id (name@marketplace), as the reference sorts them. */
static int plugin_cmp(const void *a, const void *b)
{
	const char *x = json_string_value(json_object_get(*(json_t *const *)a, "id"));
	const char *y = json_string_value(json_object_get(*(json_t *const *)b, "id"));
	int c = strcmp(x, y);

	if (c)
		return c;
	return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "root")),
		      json_string_value(json_object_get(*(json_t *const *)b, "root")));
}

static void plugins(struct v2 *v, const char *codex_home)
{
	_cleanup_free_ char *cache = NULL;
	size_t n_m = 0, count = 0;
	char **markets;
	json_t **sorted;
	size_t n;

	if (asprintf(&cache, "%s/plugins/cache", codex_home) < 0) {
		cache = NULL;
		return;
	}
	markets = subdirs(cache, &n_m);
	for (size_t i = 0; i < n_m && count < MAX_PLUGINS; i++) {
		_cleanup_free_ char *mdir = NULL;
		size_t n_p = 0;
		char **names;

		if (asprintf(&mdir, "%s/%s", cache, markets[i]) < 0) {
			mdir = NULL;
			continue;
		}
		names = subdirs(mdir, &n_p);
		for (size_t k = 0; k < n_p && count < MAX_PLUGINS; k++) {
			_cleanup_free_ char *base = NULL, *ver = NULL, *root = NULL;

			if (asprintf(&base, "%s/%s", mdir, names[k]) < 0) {
				base = NULL;
				continue;
			}
			ver = active_version(base);
			if (!ver || asprintf(&root, "%s/%s", base, ver) < 0) {
				root = NULL;
				continue;
			}
			count++;
			plugin(v, markets[i], names[k], root);
		}
		free_names(names, n_p);
	}
	free_names(markets, n_m);
	n = json_array_size(v->plugins);
	sorted = calloc(n + 1, sizeof(*sorted));
	if (!sorted)
		return;
	for (size_t i = 0; i < n; i++)
		sorted[i] = json_incref(json_array_get(v->plugins, i));
	qsort(sorted, n, sizeof(*sorted), plugin_cmp);
	json_array_clear(v->plugins);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(v->plugins, sorted[i]);
	free(sorted);
}

json_t *disc_v2_discover(const char *codex_home, const char *user_home)
{
	struct v2 v = { json_array(), json_array(), json_array(), 0, false };
	json_t *out;

	for (size_t i = 0; i < ELEMENTSOF(skill_roots); i++) {
		_cleanup_free_ char *path = NULL;
		const char *base = i == 0 ? codex_home : i == 1 ? user_home : NULL;

		if (skill_roots[i][1])
			path = strdup(skill_roots[i][1]);
		else if (base && asprintf(&path, "%s%s", strcmp(base, "/") == 0 ? "" : base,
					  i == 0 ? "/skills" : "/.agents/skills") < 0)
			path = NULL;
		if (path)
			standalone(&v, skill_roots[i][0], path);
	}
	if (codex_home)
		plugins(&v, codex_home);
	if (v.truncated) {
		json_array_insert_new(v.warnings, 0, json_string("capability discovery size limit reached"));
		while (json_array_size(v.warnings) > MAX_WARNINGS)
			json_array_remove(v.warnings, MAX_WARNINGS);
	}
	out = json_object();
	json_object_set_new(out, "plugins", v.plugins);
	json_object_set_new(out, "skills", v.skills);
	json_object_set_new(out, "warnings", v.warnings);
	return out;
}
