/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for sandbox/policy (SANDBOX.md §2.3-§2.5, PROTOCOL.md §5.4):
 * every wire form, special kinds, tmpdir rules, errors, and the
 * longest-prefix access rule with its ties (deny > write > read). The denial
 * heuristic of SANDBOX.md §1: test-denial-heuristic.c.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "glob.h"
#include "policy.h"
#include "sandbox.h"
#include "tests.h"

static char err[512];

/* Parses JSON text s against ctx; returns the policy or NULL (r in *ret_r, message in err). */
static struct sandbox_policy *parse_ctx(const char *s, const char *cwd, const char *tmpdir, int *ret_r)
{
	struct sandbox_context ctx = { .cwd = cwd, .tmpdir = tmpdir };
	struct sandbox_policy *p = NULL;
	json_error_t je;
	json_t *j = json_loads(s, 0, &je);
	int r;

	if (!j)
		tests_fail(__FILE__, __LINE__, "bad test JSON: %s: %s", je.text, s);
	err[0] = 0;
	r = sandbox_policy_parse(j, &ctx, &p, err, sizeof(err));
	json_decref(j);
	if (ret_r)
		*ret_r = r;
	return r == 0 ? p : NULL;
}

static struct sandbox_policy *parse_ok_at(const char *s, const char *cwd, const char *tmpdir, int line)
{
	int r = 0;
	struct sandbox_policy *p = parse_ctx(s, cwd, tmpdir, &r);

	if (!p)
		tests_fail(__FILE__, line, "parse failed (r=%d): %s\n#   input: %s", r, err, s);
	return p;
}
#define parse_ok(s) parse_ok_at((s), "/cwd", "/tmpd", __LINE__)
#define parse_ok_ctx(s, cwd, tmp) parse_ok_at((s), (cwd), (tmp), __LINE__)

static void parse_bad_at(const char *s, const char *want, int line)
{
	int r = 0;
	struct sandbox_policy *p = parse_ctx(s, "/cwd", "/tmpd", &r);

	if (p) {
		sandbox_policy_free(p);
		tests_fail(__FILE__, line, "parse unexpectedly succeeded: %s", s);
	}
	if (r != -EINVAL)
		tests_fail(__FILE__, line, "r=%d, expected -EINVAL: %s", r, s);
	if (want && strcmp(want, err) != 0)
		tests_fail(__FILE__, line, "message \"%s\", expected \"%s\"\n#   input: %s", err, want, s);
}
#define parse_bad(s, want) parse_bad_at((s), (want), __LINE__)

/* Profiles refused with -EINVAL and their messages (NULL: any message). */
struct refusal {
	const char *json, *want;
};

static void refuse_each_at(const struct refusal *c, size_t n, int line)
{
	for (size_t i = 0; i < n; i++)
		parse_bad_at(c[i].json, c[i].want, line);
}
#define refuse_each(cases) refuse_each_at((cases), sizeof(cases) / sizeof((cases)[0]), __LINE__)

/* What a policy grants at paths: policy JSON and up to 8 (path, access) probes. */
struct access_case {
	const char *json;
	struct {
		const char *path;
		enum sandbox_access want;
	} probes[8];
};

static void access_each_at(const struct access_case *c, size_t n, int line)
{
	for (size_t i = 0; i < n; i++) {
		struct sandbox_policy *p = parse_ok_at(c[i].json, "/cwd", "/tmpd", line);

		for (size_t k = 0; k < 8 && c[i].probes[k].path; k++) {
			enum sandbox_access got = sandbox_policy_access(p, c[i].probes[k].path);

			if (got != c[i].probes[k].want)
				tests_fail(__FILE__, line, "%s: access %d, expected %d\n#   policy: %s",
					   c[i].probes[k].path, (int)got, (int)c[i].probes[k].want,
					   c[i].json);
		}
		sandbox_policy_free(p);
	}
}
#define access_each(cases) access_each_at((cases), sizeof(cases) / sizeof((cases)[0]), __LINE__)

/* The rule for path (first match) or NULL. */
static const struct sandbox_rule *rule(const struct sandbox_policy *p, const char *path)
{
	for (size_t i = 0; i < p->n_rules; i++)
		if (strcmp(p->rules[i].path, path) == 0)
			return &p->rules[i];
	return NULL;
}

static void has_rule_at(const struct sandbox_policy *p, const char *path, enum sandbox_access a,
			bool skip, int line)
{
	const struct sandbox_rule *r = rule(p, path);

	if (!r) {
		printf("# rules:");
		for (size_t i = 0; i < p->n_rules; i++)
			printf(" %s=%d", p->rules[i].path, (int)p->rules[i].access);
		printf("\n");
		tests_fail(__FILE__, line, "no rule for %s", path);
	}
	if (r->access != a || r->skip_if_missing != skip)
		tests_fail(__FILE__, line, "%s: access %d skip %d, expected %d %d", path, (int)r->access,
			   (int)r->skip_if_missing, (int)a, (int)skip);
}
#define has_rule(p, path, a, skip) has_rule_at((p), (path), (a), (skip), __LINE__)

#define WRAP(perm) "{\"permissions\":" perm ",\"windowsSandboxLevel\":\"disabled\"}"
#define WRAP_ROOTS(perm, roots) \
	"{\"permissions\":" perm ",\"workspaceRoots\":" roots ",\"windowsSandboxLevel\":\"disabled\"}"
#define MANAGED(entries, net) \
	"{\"type\":\"managed\",\"file_system\":{\"type\":\"restricted\",\"entries\":[" entries "]},\"network\":\"" net "\"}"
#define SPECIAL(kind, access) \
	"{\"path\":{\"type\":\"special\",\"value\":{\"kind\":\"" kind "\"}},\"access\":\"" access "\"}"
#define SPECIAL_SUB(kind, sub, access) \
	"{\"path\":{\"type\":\"special\",\"value\":{\"kind\":\"" kind "\",\"subpath\":\"" sub "\"}},\"access\":\"" access "\"}"
#define PATH(uri, access) "{\"path\":{\"type\":\"path\",\"path\":\"" uri "\"},\"access\":\"" access "\"}"

/* ---- §2.3 PermissionProfile forms ---- */

TEST(disabled)
{
	struct sandbox_policy *p = parse_ok(WRAP("{\"type\":\"disabled\"}"));

	ASSERT_EQ(SANDBOX_DISABLED, p->kind);
	ASSERT_TRUE(p->network && p->full_read && p->full_write);
	ASSERT_TRUE(sandbox_policy_is_unrestricted(p));
	ASSERT_EQ(SANDBOX_WRITE, sandbox_policy_access(p, "/etc/passwd"));
	sandbox_policy_free(p);
}

TEST(external)
{
	struct sandbox_policy *p = parse_ok(WRAP("{\"type\":\"external\",\"network\":\"restricted\"}"));

	ASSERT_EQ(SANDBOX_EXTERNAL, p->kind);
	ASSERT_TRUE(!p->network && p->full_read && p->full_write);
	ASSERT_TRUE(!sandbox_policy_is_unrestricted(p));
	sandbox_policy_free(p);

	p = parse_ok(WRAP("{\"type\":\"external\",\"network\":\"enabled\"}"));
	ASSERT_TRUE(p->network);
	ASSERT_TRUE(sandbox_policy_is_unrestricted(p));
	sandbox_policy_free(p);

	parse_bad(WRAP("{\"type\":\"external\"}"), "missing field `network`");
}

TEST(managed_unrestricted)
{
	struct sandbox_policy *p = parse_ok(
		WRAP("{\"type\":\"managed\",\"file_system\":{\"type\":\"unrestricted\"},\"network\":\"restricted\"}"));

	ASSERT_EQ(SANDBOX_MANAGED, p->kind);
	ASSERT_TRUE(p->full_read && p->full_write && !p->network);
	ASSERT_EQ(0, p->n_rules);
	ASSERT_TRUE(!sandbox_policy_is_unrestricted(p));
	ASSERT_EQ(SANDBOX_WRITE, sandbox_policy_access(p, "/anything"));
	sandbox_policy_free(p);

	p = parse_ok(WRAP("{\"type\":\"managed\",\"file_system\":{\"type\":\"unrestricted\"},\"network\":\"enabled\"}"));
	ASSERT_TRUE(sandbox_policy_is_unrestricted(p));
	sandbox_policy_free(p);
}

TEST(managed_read_only)
{
	struct sandbox_policy *p = parse_ok(WRAP(MANAGED(SPECIAL("root", "read"), "restricted")));

	ASSERT_TRUE(p->full_read && !p->full_write && !p->network);
	has_rule(p, "/", SANDBOX_READ, false);
	ASSERT_EQ(SANDBOX_READ, sandbox_policy_access(p, "/"));
	ASSERT_EQ(SANDBOX_READ, sandbox_policy_access(p, "/etc/passwd"));
	ASSERT_TRUE(!sandbox_policy_is_unrestricted(p));
	sandbox_policy_free(p);
}

TEST(managed_root_write_is_full_write)
{
	struct sandbox_policy *p = parse_ok(WRAP(MANAGED(SPECIAL("root", "write"), "enabled")));

	ASSERT_TRUE(p->full_read && p->full_write && p->network);
	ASSERT_TRUE(sandbox_policy_is_unrestricted(p));
	sandbox_policy_free(p);

	/* a root write with deny globs is not unrestricted */
	p = parse_ok(WRAP(MANAGED(SPECIAL("root", "write") ","
				  "{\"path\":{\"type\":\"glob_pattern\",\"pattern\":\"**/*.env\"},\"access\":\"deny\"}",
				  "enabled")));
	ASSERT_EQ(1, p->n_deny_globs);
	ASSERT_TRUE(!sandbox_policy_is_unrestricted(p));
	ASSERT_TRUE(sandbox_policy_root_write_restricted(p));
	sandbox_policy_free(p);
}

/* A root write with carve-outs (an approved command's policy): still restricting. */
TEST(root_write_restricted)
{
	struct sandbox_policy *p = parse_ok(WRAP(MANAGED(SPECIAL("root", "write"), "enabled")));

	ASSERT_TRUE(!sandbox_policy_root_write_restricted(p));
	ASSERT_TRUE(!sandbox_policy_grants_root_name(p, ".git"));
	sandbox_policy_free(p);

	/* a deny entry, a read entry: each restricts, with the network on too */
	p = parse_ok(WRAP(MANAGED(SPECIAL("root", "write") "," PATH("file:///w/private", "deny"),
				  "enabled")));
	ASSERT_TRUE(sandbox_policy_root_write_restricted(p));
	ASSERT_TRUE(!sandbox_policy_is_unrestricted(p));
	ASSERT_EQ(SANDBOX_DENY, sandbox_policy_access(p, "/w/private/x"));
	ASSERT_EQ(SANDBOX_WRITE, sandbox_policy_access(p, "/w/x"));
	sandbox_policy_free(p);
	p = parse_ok(WRAP(MANAGED(SPECIAL("root", "write") "," PATH("file:///w/ro", "read"),
				  "restricted")));
	ASSERT_TRUE(sandbox_policy_root_write_restricted(p));
	sandbox_policy_free(p);

	/* a read entry a write at the same path overrides (tie: write), a redundant write: none */
	p = parse_ok(WRAP(MANAGED(SPECIAL("root", "write") "," PATH("file:///w", "read") ","
				  PATH("file:///w", "write") "," PATH("file:///.git", "write"),
				  "enabled")));
	ASSERT_TRUE(!sandbox_policy_root_write_restricted(p));
	ASSERT_TRUE(sandbox_policy_is_unrestricted(p));
	sandbox_policy_free(p);

	/* a deny on the root wins the tie: no root grant left, nothing to take for granted */
	p = parse_ok(WRAP(MANAGED(SPECIAL("root", "write") "," SPECIAL("root", "deny") ","
				  SPECIAL("root", "read") "," PATH("file:///w", "write"), "enabled")));
	ASSERT_TRUE(!p->full_write && !p->full_read);
	ASSERT_TRUE(!sandbox_policy_root_write_restricted(p));
	ASSERT_TRUE(!sandbox_policy_is_unrestricted(p));
	ASSERT_EQ(SANDBOX_DENY, sandbox_policy_access(p, "/etc/passwd"));
	ASSERT_EQ(SANDBOX_WRITE, sandbox_policy_access(p, "/w/x"));
	sandbox_policy_free(p);

	/* without a root write: never */
	p = parse_ok(WRAP(MANAGED(SPECIAL("root", "read") "," PATH("file:///w", "deny"), "restricted")));
	ASSERT_TRUE(!sandbox_policy_root_write_restricted(p));
	sandbox_policy_free(p);

	/* the root's metadata names granted: exactly /<name>, in effect */
	p = parse_ok(WRAP(MANAGED(SPECIAL("root", "write") "," PATH("file:///w", "deny") ","
				  PATH("file:///.git", "write") "," PATH("file:///.agents", "read") ","
				  PATH("file:///.codex/x", "write") "," PATH("file:///w/.aws", "write") ","
				  PATH("file:///.aws", "write") "," PATH("file:///.aws", "deny"),
				  "restricted")));
	ASSERT_TRUE(sandbox_policy_grants_root_name(p, ".git"));
	ASSERT_TRUE(!sandbox_policy_grants_root_name(p, ".agents"));
	ASSERT_TRUE(!sandbox_policy_grants_root_name(p, ".codex"));
	ASSERT_TRUE(!sandbox_policy_grants_root_name(p, ".aws")); /* the deny wins the tie */
	sandbox_policy_free(p);
}

TEST(entries_default_empty)
{
	struct sandbox_policy *p =
		parse_ok(WRAP("{\"type\":\"managed\",\"file_system\":{\"type\":\"restricted\"},\"network\":\"restricted\"}"));

	ASSERT_EQ(0, p->n_rules);
	ASSERT_TRUE(!p->full_read && !p->full_write);
	ASSERT_EQ(SANDBOX_DENY, sandbox_policy_access(p, "/etc"));
	sandbox_policy_free(p);

	/* glob_scan_max_depth is accepted */
	p = parse_ok(WRAP("{\"type\":\"managed\",\"file_system\":{\"type\":\"restricted\",\"entries\":[],"
			  "\"glob_scan_max_depth\":2},\"network\":\"restricted\"}"));
	sandbox_policy_free(p);
}

/* The real client's workspace-write frame (PROTOCOL.md §5.4). */
#define REALCLIENT_ENTRIES                                                   \
	SPECIAL("root", "read") "," SPECIAL("project_roots", "write") ","       \
	SPECIAL("slash_tmp", "write") "," SPECIAL("tmpdir", "write") ","        \
	"{\"path\":{\"type\":\"special\",\"value\":{\"kind\":\"project_roots\",\"subpath\":\".git\"}},\"access\":\"read\",\"missing_path_behavior\":\"skip\"}," \
	"{\"path\":{\"type\":\"special\",\"value\":{\"kind\":\"project_roots\",\"subpath\":\".agents\"}},\"access\":\"read\",\"missing_path_behavior\":\"skip\"}," \
	"{\"path\":{\"type\":\"special\",\"value\":{\"kind\":\"project_roots\",\"subpath\":\".codex\"}},\"access\":\"read\",\"missing_path_behavior\":\"skip\"}," \
	"{\"path\":{\"type\":\"special\",\"value\":{\"kind\":\"project_roots\",\"subpath\":\".aws\"}},\"access\":\"read\",\"missing_path_behavior\":\"skip\"}"

TEST(realclient_workspace_write)
{
	struct sandbox_policy *p = parse_ok_ctx(
		"{\"permissions\":" MANAGED(REALCLIENT_ENTRIES, "restricted") ","
		"\"cwd\":\"file:///w/work\",\"workspaceRoots\":[\"file:///w/work\"],"
		"\"windowsSandboxLevel\":\"disabled\",\"windowsSandboxProxySettingsMode\":\"reconcile\","
		"\"useLegacyLandlock\":false}",
		"/elsewhere", "/tmpd/");

	ASSERT_STREQ("/w/work", p->cwd);
	ASSERT_TRUE(p->full_read && !p->full_write && !p->network && !p->minimal_read);
	ASSERT_EQ(8, p->n_rules);
	has_rule(p, "/", SANDBOX_READ, false);
	has_rule(p, "/w/work", SANDBOX_WRITE, false);
	has_rule(p, "/tmp", SANDBOX_WRITE, false);
	has_rule(p, "/tmpd", SANDBOX_WRITE, false);
	has_rule(p, "/w/work/.git", SANDBOX_READ, true);
	has_rule(p, "/w/work/.agents", SANDBOX_READ, true);
	has_rule(p, "/w/work/.codex", SANDBOX_READ, true);
	has_rule(p, "/w/work/.aws", SANDBOX_READ, true);

	ASSERT_EQ(SANDBOX_WRITE, sandbox_policy_access(p, "/w/work"));
	ASSERT_EQ(SANDBOX_WRITE, sandbox_policy_access(p, "/w/work/src/a.c"));
	ASSERT_EQ(SANDBOX_READ, sandbox_policy_access(p, "/w/work/.git"));
	ASSERT_EQ(SANDBOX_READ, sandbox_policy_access(p, "/w/work/.git/config"));
	ASSERT_EQ(SANDBOX_WRITE, sandbox_policy_access(p, "/w/work/.gitignore"));
	ASSERT_EQ(SANDBOX_WRITE, sandbox_policy_access(p, "/w/work/.github"));
	ASSERT_EQ(SANDBOX_READ, sandbox_policy_access(p, "/w/workspace"));
	ASSERT_EQ(SANDBOX_READ, sandbox_policy_access(p, "/w"));
	ASSERT_EQ(SANDBOX_WRITE, sandbox_policy_access(p, "/tmp/x"));
	ASSERT_EQ(SANDBOX_READ, sandbox_policy_access(p, "/tmpx"));
	ASSERT_TRUE(!sandbox_policy_is_unrestricted(p));
	sandbox_policy_free(p);
}

/* ---- §2.3 entries: access, missing_path_behavior ---- */

TEST(access_none_alias)
{
	struct sandbox_policy *p = parse_ok(WRAP(MANAGED(SPECIAL("root", "read") "," PATH("file:///secret", "none"),
						  "restricted")));

	has_rule(p, "/secret", SANDBOX_DENY, false);
	ASSERT_EQ(SANDBOX_DENY, sandbox_policy_access(p, "/secret/key"));
	sandbox_policy_free(p);
}

TEST(access_errors)
{
	static const struct refusal cases[] = {
		{ WRAP(MANAGED(PATH("file:///x", "Read"), "restricted")),
		  "unknown variant `Read`, expected one of `read`, `write`, `deny`" },
		{ WRAP(MANAGED(PATH("file:///x", "rw"), "restricted")),
		  "unknown variant `rw`, expected one of `read`, `write`, `deny`" },
		{ WRAP(MANAGED("{\"path\":{\"type\":\"path\",\"path\":\"file:///x\"}}", "restricted")),
		  "missing field `access`" },
		{ WRAP(MANAGED("{\"path\":{\"type\":\"path\",\"path\":\"file:///x\"},\"access\":1}", "restricted")),
		  NULL },
		{ WRAP(MANAGED("{\"access\":\"read\"}", "restricted")), "missing field `path`" },
	};

	refuse_each(cases);
}

TEST(missing_path_behavior)
{
	struct sandbox_policy *p = parse_ok(WRAP(MANAGED(
		"{\"path\":{\"type\":\"path\",\"path\":\"file:///a\"},\"access\":\"write\",\"missing_path_behavior\":\"skip\"},"
		PATH("file:///b", "write"),
		"restricted")));

	has_rule(p, "/a", SANDBOX_WRITE, true);
	has_rule(p, "/b", SANDBOX_WRITE, false);
	sandbox_policy_free(p);

	parse_bad(WRAP(MANAGED("{\"path\":{\"type\":\"path\",\"path\":\"file:///a\"},\"access\":\"write\","
			       "\"missing_path_behavior\":\"fail\"}",
			       "restricted")),
		  "unknown variant `fail`, expected `skip`");
}

TEST(path_entries)
{
	struct sandbox_policy *p = parse_ok(WRAP(MANAGED(
		PATH("file:///repo", "write") "," PATH("file:///repo/docs/", "read") ","
		PATH("file:///repo/./secret/../secret", "deny") "," PATH("file:///opt//tools", "read"),
		"enabled")));

	ASSERT_TRUE(!p->full_read && !p->full_write && p->network);
	has_rule(p, "/repo", SANDBOX_WRITE, false);
	has_rule(p, "/repo/docs", SANDBOX_READ, false);
	has_rule(p, "/repo/secret", SANDBOX_DENY, false);
	has_rule(p, "/opt/tools", SANDBOX_READ, false);
	ASSERT_EQ(SANDBOX_DENY, sandbox_policy_access(p, "/etc"));
	ASSERT_EQ(SANDBOX_READ, sandbox_policy_access(p, "/opt/tools/bin/x"));
	ASSERT_EQ(SANDBOX_DENY, sandbox_policy_access(p, "/opt/toolsx"));
	sandbox_policy_free(p);

	/* percent-encoded URI */
	p = parse_ok(WRAP(MANAGED(PATH("file:///a%20b/c", "write"), "restricted")));
	has_rule(p, "/a b/c", SANDBOX_WRITE, false);
	sandbox_policy_free(p);

	parse_bad(WRAP(MANAGED("{\"path\":{\"type\":\"path\"},\"access\":\"read\"}", "restricted")),
		  "missing field `path`");
	/* a remote host is not a path on this executor */
	parse_bad(WRAP(MANAGED(PATH("file://otherhost/x", "read"), "restricted")), NULL);
	parse_bad(WRAP(MANAGED(PATH("http://x/y", "read"), "restricted")), NULL);
}

TEST(glob_patterns_counted)
{
	struct sandbox_policy *p = parse_ok(WRAP(MANAGED(
		SPECIAL("root", "read") ","
		"{\"path\":{\"type\":\"glob_pattern\",\"pattern\":\"**/.env\"},\"access\":\"deny\"},"
		"{\"path\":{\"type\":\"glob_pattern\",\"pattern\":\"/x/*.pem\"},\"access\":\"deny\"}",
		"restricted")));

	ASSERT_EQ(2, p->n_deny_globs);
	ASSERT_EQ(1, p->n_rules);
	/* a relative pattern resolves against the cwd, an absolute one is normalised */
	ASSERT_STREQ("/cwd/**/.env", p->deny_globs[0]);
	ASSERT_STREQ("/x/*.pem", p->deny_globs[1]);
	ASSERT_EQ(-1, p->glob_scan_max_depth);
	sandbox_policy_free(p);
	parse_bad(WRAP(MANAGED("{\"path\":{\"type\":\"glob_pattern\"},\"access\":\"deny\"}", "restricted")),
		  "missing field `pattern`");

	/* only deny globs count: a read or write glob grants nothing */
	p = parse_ok(WRAP(MANAGED(
		"{\"path\":{\"type\":\"glob_pattern\",\"pattern\":\"/a//b/./*.x\"},\"access\":\"deny\"},"
		"{\"path\":{\"type\":\"glob_pattern\",\"pattern\":\"/r/*\"},\"access\":\"read\"}",
		"restricted")));
	ASSERT_EQ(1, p->n_deny_globs);
	ASSERT_STREQ("/a/b/*.x", p->deny_globs[0]);
	sandbox_policy_free(p);

	/* no cwd at all: a relative pattern stays relative (the plan refuses it) */
	p = parse_ok_ctx(WRAP(MANAGED(
		"{\"path\":{\"type\":\"glob_pattern\",\"pattern\":\"*.env\"},\"access\":\"deny\"}",
		"restricted")), NULL, NULL);
	ASSERT_STREQ("*.env", p->deny_globs[0]);
	sandbox_policy_free(p);
}

TEST(glob_scan_max_depth)
{
	struct sandbox_policy *p = parse_ok(
		"{\"permissions\":{\"type\":\"managed\",\"file_system\":{\"type\":\"restricted\","
		"\"entries\":[],\"glob_scan_max_depth\":3},\"network\":\"restricted\"}}");

	ASSERT_EQ(3, p->glob_scan_max_depth);
	sandbox_policy_free(p);
	parse_bad("{\"permissions\":{\"type\":\"managed\",\"file_system\":{\"type\":\"restricted\","
		  "\"entries\":[],\"glob_scan_max_depth\":-1},\"network\":\"restricted\"}}",
		  "invalid value: expected usize for `glob_scan_max_depth`");
}

TEST(glob_match)
{
	/* no slash: the name at any depth (ripgrep's --glob, gitignore's rule) */
	ASSERT_TRUE(sandbox_glob_match("*.env", "a.env"));
	ASSERT_TRUE(sandbox_glob_match("*.env", "x/y/a.env"));
	ASSERT_TRUE(sandbox_glob_match("*.env", ".env"));         /* dotfiles are not special */
	ASSERT_TRUE(!sandbox_glob_match("*.env", "a.env.bak"));
	/* a slash: the whole path below the root; * stops at slashes */
	ASSERT_TRUE(sandbox_glob_match("sub/*.pem", "sub/k.pem"));
	ASSERT_TRUE(!sandbox_glob_match("sub/*.pem", "x/sub/k.pem"));
	ASSERT_TRUE(!sandbox_glob_match("sub/*.pem", "sub/d/k.pem"));
	/* ** spans any number of directories, none included */
	ASSERT_TRUE(sandbox_glob_match("**/*.env", "a.env"));
	ASSERT_TRUE(sandbox_glob_match("**/*.env", "a/b/c.env"));
	ASSERT_TRUE(sandbox_glob_match("a/**/b", "a/b"));
	ASSERT_TRUE(sandbox_glob_match("a/**/b", "a/x/y/b"));
	ASSERT_TRUE(!sandbox_glob_match("a/**/b", "a/x/y/bc"));
	ASSERT_TRUE(sandbox_glob_match("a/**", "a/x/y"));
	ASSERT_TRUE(sandbox_glob_match("**/secrets/**", "p/secrets/q/r"));
	/* ? and classes, an unclosed [ is literal */
	ASSERT_TRUE(sandbox_glob_match("k?.[pk]em", "k1.pem"));
	ASSERT_TRUE(!sandbox_glob_match("k?.[pk]em", "k1.xem"));
	ASSERT_TRUE(sandbox_glob_match("a[b", "a[b"));
	/* a trailing slash names directories: never a file */
	ASSERT_TRUE(!sandbox_glob_match("secrets/", "secrets"));
	/* many ** do not blow up (dynamic programming) */
	ASSERT_TRUE(!sandbox_glob_match("**/**/**/**/**/**/**/**/x", "a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/y"));
}

/* ---- §2.4 special kinds ---- */

TEST(special_root_subpath)
{
	struct sandbox_policy *p = parse_ok(WRAP(MANAGED(SPECIAL_SUB("root", "usr/share", "read"), "restricted")));

	has_rule(p, "/usr/share", SANDBOX_READ, false);
	ASSERT_TRUE(!p->full_read);
	sandbox_policy_free(p);
}

TEST(special_minimal)
{
	struct sandbox_policy *p = parse_ok(WRAP(MANAGED(SPECIAL("minimal", "read"), "restricted")));

	ASSERT_TRUE(p->minimal_read);
	ASSERT_EQ(0, p->n_rules);
	ASSERT_TRUE(!p->full_read);
	sandbox_policy_free(p);

	/* a minimal deny turns nothing on */
	p = parse_ok(WRAP(MANAGED(SPECIAL("minimal", "deny"), "restricted")));
	ASSERT_TRUE(!p->minimal_read);
	sandbox_policy_free(p);
}

TEST(special_project_roots_with_workspace_roots)
{
	struct sandbox_policy *p = parse_ok(WRAP_ROOTS(
		MANAGED(SPECIAL("project_roots", "write") "," SPECIAL_SUB("project_roots", "docs", "read") ","
			SPECIAL_SUB("current_working_directory", "cwdsub", "deny"),
			"restricted"),
		"[\"file:///ws1\",\"file:///ws2/\"]"));

	/* resolves to workspaceRoots, not to cwd (PROTOCOL.md §5.4) */
	ASSERT_TRUE(rule(p, "/cwd") == NULL);
	has_rule(p, "/ws1", SANDBOX_WRITE, false);
	has_rule(p, "/ws2", SANDBOX_WRITE, false);
	has_rule(p, "/ws1/docs", SANDBOX_READ, false);
	has_rule(p, "/ws2/docs", SANDBOX_READ, false);
	has_rule(p, "/ws1/cwdsub", SANDBOX_DENY, false);
	has_rule(p, "/ws2/cwdsub", SANDBOX_DENY, false);
	ASSERT_EQ(6, p->n_rules);
	sandbox_policy_free(p);
}

TEST(special_project_roots_without_workspace_roots)
{
	/* Without workspaceRoots nothing is writable through project_roots (PROTOCOL.md §5.4). */
	struct sandbox_policy *p = parse_ok_ctx(
		"{\"permissions\":" MANAGED(SPECIAL("root", "read") "," SPECIAL("project_roots", "write") ","
					    SPECIAL("current_working_directory", "write"),
					    "restricted") ","
		"\"cwd\":\"file:///policy/cwd\",\"windowsSandboxLevel\":\"disabled\"}",
		"/request/cwd", NULL);

	ASSERT_EQ(1, p->n_rules);
	ASSERT_STREQ("/policy/cwd", p->cwd);
	ASSERT_EQ(SANDBOX_READ, sandbox_policy_access(p, "/policy/cwd/x"));
	ASSERT_EQ(SANDBOX_READ, sandbox_policy_access(p, "/request/cwd/x"));
	sandbox_policy_free(p);

	/* empty workspaceRoots: same */
	p = parse_ok(WRAP_ROOTS(MANAGED(SPECIAL("project_roots", "write"), "restricted"), "[]"));
	ASSERT_EQ(0, p->n_rules);
	sandbox_policy_free(p);

	parse_bad(WRAP_ROOTS(MANAGED(SPECIAL("project_roots", "write"), "restricted"), "[1]"),
		  "invalid type: expected a string in `workspaceRoots`");
	parse_bad(WRAP_ROOTS(MANAGED(SPECIAL("project_roots", "write"), "restricted"), "\"file:///x\""),
		  "invalid type: expected a sequence for `workspaceRoots`");
}

TEST(policy_cwd_defaults_to_request_cwd)
{
	struct sandbox_policy *p = parse_ok_ctx(WRAP(MANAGED(SPECIAL("root", "read"), "restricted")),
						"/req/./cwd/", NULL);

	ASSERT_STREQ("/req/cwd", p->cwd);
	sandbox_policy_free(p);
}

TEST(subpaths_with_dotdot)
{
	/* Subpaths are joined and normalised lexically: `..` may leave the root. */
	struct sandbox_policy *p = parse_ok(WRAP_ROOTS(
		MANAGED(SPECIAL_SUB("project_roots", "a/../b", "write") ","
			SPECIAL_SUB("project_roots", "../sibling", "read") ","
			SPECIAL_SUB("project_roots", "../../../../..", "deny") ","
			SPECIAL_SUB("project_roots", "/abs/path", "read") ","
			SPECIAL_SUB("slash_tmp", "x/./y/..", "write") ","
			SPECIAL_SUB("root", "..", "read"),
			"restricted"),
		"[\"file:///ws/root\"]"));

	has_rule(p, "/ws/root/b", SANDBOX_WRITE, false);
	has_rule(p, "/ws/sibling", SANDBOX_READ, false);
	has_rule(p, "/", SANDBOX_DENY, false);   /* `..` never climbs above "/" */
	has_rule(p, "/abs/path", SANDBOX_READ, false);  /* an absolute subpath replaces the base */
	has_rule(p, "/tmp/x", SANDBOX_WRITE, false);
	/* root + ".." is "/" read, but the deny at "/" wins the tie: no full read */
	ASSERT_TRUE(!p->full_read);
	ASSERT_TRUE(rule(p, "/ws/root/a") == NULL);
	/* "/" is denied and read with equal length: deny wins the tie */
	ASSERT_EQ(SANDBOX_DENY, sandbox_policy_access(p, "/etc"));
	sandbox_policy_free(p);
}

TEST(special_tmpdir)
{
	struct sandbox_policy *p;

	p = parse_ok_ctx(WRAP(MANAGED(SPECIAL("tmpdir", "write") "," SPECIAL_SUB("tmpdir", "sub", "read"),
				      "restricted")),
			 "/c", "/var//tmp/me/");
	has_rule(p, "/var/tmp/me", SANDBOX_WRITE, false);
	has_rule(p, "/var/tmp/me/sub", SANDBOX_READ, false);
	ASSERT_EQ(2, p->n_rules);
	sandbox_policy_free(p);

	/* $TMPDIR unset, empty or relative: the entry resolves to nothing */
	p = parse_ok_ctx(WRAP(MANAGED(SPECIAL("tmpdir", "write"), "restricted")), "/c", NULL);
	ASSERT_EQ(0, p->n_rules);
	sandbox_policy_free(p);
	p = parse_ok_ctx(WRAP(MANAGED(SPECIAL("tmpdir", "write"), "restricted")), "/c", "");
	ASSERT_EQ(0, p->n_rules);
	sandbox_policy_free(p);
	p = parse_ok_ctx(WRAP(MANAGED(SPECIAL("tmpdir", "write"), "restricted")), "/c", "rel/tmp");
	ASSERT_EQ(0, p->n_rules);
	sandbox_policy_free(p);
}

TEST(special_slash_tmp_and_unknown)
{
	struct sandbox_policy *p = parse_ok(WRAP(MANAGED(
		SPECIAL("slash_tmp", "write") ","
		"{\"path\":{\"type\":\"special\",\"value\":{\"kind\":\"unknown\",\"path\":\"future\"}},\"access\":\"write\"}",
		"restricted")));

	has_rule(p, "/tmp", SANDBOX_WRITE, false);
	ASSERT_EQ(1, p->n_rules);
	sandbox_policy_free(p);
}

TEST(special_errors)
{
	static const struct refusal cases[] = {
		{ WRAP(MANAGED(SPECIAL("home", "read"), "restricted")),
		  "unknown variant `home`, expected one of `root`, `minimal`, `current_working_directory`, "
		  "`project_roots`, `tmpdir`, `slash_tmp`, `unknown`" },
		{ WRAP(MANAGED("{\"path\":{\"type\":\"special\",\"value\":{}},\"access\":\"read\"}", "restricted")),
		  "missing field `kind`" },
		{ WRAP(MANAGED("{\"path\":{\"type\":\"special\",\"value\":\"root\"},\"access\":\"read\"}",
			       "restricted")),
		  NULL },
		{ WRAP(MANAGED("{\"path\":{\"type\":\"special\"},\"access\":\"read\"}", "restricted")), NULL },
		{ WRAP(MANAGED("{\"path\":{\"type\":\"file\",\"path\":\"/x\"},\"access\":\"read\"}", "restricted")),
		  "unknown variant `file`, expected one of `path`, `glob_pattern`, `special`" },
		{ WRAP(MANAGED("{\"path\":{},\"access\":\"read\"}", "restricted")), "missing field `type`" },
	};

	refuse_each(cases);
}

/* ---- profile-level errors ---- */

TEST(profile_errors)
{
	static const struct refusal cases[] = {
		{ "{\"windowsSandboxLevel\":\"disabled\"}", "missing field `permissions`" },
		{ "[]", NULL },
		{ WRAP("{}"), "missing field `type`" },
		{ WRAP("{\"type\":\"workspace-write\"}"),
		  "unknown variant `workspace-write`, expected one of `managed`, `disabled`, `external`" },
		{ WRAP("\"disabled\""), NULL },
		{ WRAP("{\"type\":\"managed\",\"network\":\"restricted\"}"), "missing field `file_system`" },
		{ WRAP("{\"type\":\"managed\",\"file_system\":{\"type\":\"unrestricted\"}}"),
		  "missing field `network`" },
		{ WRAP("{\"type\":\"managed\",\"file_system\":{\"type\":\"unrestricted\"},\"network\":\"on\"}"),
		  "unknown variant `on`, expected `restricted` or `enabled`" },
		{ WRAP("{\"type\":\"managed\",\"file_system\":{\"type\":\"unrestricted\"},\"network\":true}"), NULL },
		{ WRAP("{\"type\":\"managed\",\"file_system\":{\"type\":\"partial\"},\"network\":\"enabled\"}"),
		  "unknown variant `partial`, expected `restricted` or `unrestricted`" },
		{ WRAP("{\"type\":\"managed\",\"file_system\":{},\"network\":\"enabled\"}"), "missing field `type`" },
		{ WRAP("{\"type\":\"managed\",\"file_system\":{\"type\":\"restricted\",\"entries\":{}},"
		       "\"network\":\"enabled\"}"),
		  "invalid type: expected a sequence for `entries`" },
		{ WRAP(MANAGED("\"root\"", "restricted")), NULL },
		{ "{\"permissions\":{\"type\":\"disabled\"},\"cwd\":\"relative/x\",\"windowsSandboxLevel\":\"disabled\"}",
		  NULL },
	};

	refuse_each(cases);
}

TEST(too_many_entries)
{
	size_t n = 1025, cap = 64 + n * 80;
	char *s = malloc(cap), *o = s;
	int r = 0;
	struct sandbox_policy *p;

	ASSERT_TRUE(s != NULL);
	o += sprintf(o, "{\"permissions\":{\"type\":\"managed\",\"file_system\":{\"type\":\"restricted\",\"entries\":[");
	for (size_t i = 0; i < n; i++)
		o += sprintf(o, "%s{\"path\":{\"type\":\"path\",\"path\":\"file:///p%zu\"},\"access\":\"read\"}",
			     i ? "," : "", i);
	sprintf(o, "]},\"network\":\"restricted\"},\"windowsSandboxLevel\":\"disabled\"}");
	p = parse_ctx(s, "/c", NULL, &r);
	free(s);
	ASSERT_TRUE(p == NULL);
	ASSERT_EQ(-EINVAL, r);
	ASSERT_STREQ("sandbox policy has more than 1024 filesystem entries", err);
}

/* ---- §2.5 legacy SandboxPolicy ---- */

#define LEGACY(pol) "{\"sandboxPolicy\":" pol ",\"windowsSandboxLevel\":\"disabled\"}"

TEST(legacy_danger_full_access)
{
	struct sandbox_policy *p = parse_ok(LEGACY("{\"type\":\"danger-full-access\"}"));

	ASSERT_EQ(SANDBOX_DISABLED, p->kind);
	ASSERT_TRUE(sandbox_policy_is_unrestricted(p));
	sandbox_policy_free(p);
}

TEST(legacy_read_only)
{
	struct sandbox_policy *p = parse_ok(LEGACY("{\"type\":\"read-only\"}"));

	ASSERT_EQ(SANDBOX_MANAGED, p->kind);
	ASSERT_EQ(1, p->n_rules);
	has_rule(p, "/", SANDBOX_READ, false);
	ASSERT_TRUE(!p->network && p->full_read && !p->full_write);
	sandbox_policy_free(p);

	p = parse_ok(LEGACY("{\"type\":\"read-only\",\"network_access\":true}"));
	ASSERT_TRUE(p->network);
	sandbox_policy_free(p);
}

TEST(legacy_external_sandbox)
{
	struct sandbox_policy *p = parse_ok(LEGACY("{\"type\":\"external-sandbox\"}"));

	ASSERT_EQ(SANDBOX_EXTERNAL, p->kind);
	ASSERT_TRUE(!p->network && p->full_write);
	sandbox_policy_free(p);
	p = parse_ok(LEGACY("{\"type\":\"external-sandbox\",\"network_access\":\"restricted\"}"));
	ASSERT_TRUE(!p->network);
	sandbox_policy_free(p);
	p = parse_ok(LEGACY("{\"type\":\"external-sandbox\",\"network_access\":\"enabled\"}"));
	ASSERT_TRUE(p->network);
	sandbox_policy_free(p);
}

TEST(legacy_workspace_write)
{
	struct sandbox_policy *p = parse_ok_ctx(
		"{\"sandboxPolicy\":{\"type\":\"workspace-write\",\"writable_roots\":[\"/extra/one\",\"file:///extra/two\"],"
		"\"network_access\":false},\"workspaceRoots\":[\"file:///ws\"],\"windowsSandboxLevel\":\"disabled\"}",
		"/c", "/tmpd");

	ASSERT_EQ(SANDBOX_MANAGED, p->kind);
	ASSERT_TRUE(!p->network && p->full_read && !p->full_write);
	has_rule(p, "/", SANDBOX_READ, false);
	has_rule(p, "/ws", SANDBOX_WRITE, true);
	has_rule(p, "/extra/one", SANDBOX_WRITE, true);
	has_rule(p, "/extra/two", SANDBOX_WRITE, true);
	has_rule(p, "/tmpd", SANDBOX_WRITE, true);
	has_rule(p, "/tmp", SANDBOX_WRITE, true);
	ASSERT_EQ(6, p->n_rules);
	sandbox_policy_free(p);

	/* defaults: no writable_roots; excludes; network */
	p = parse_ok_ctx(LEGACY("{\"type\":\"workspace-write\",\"exclude_tmpdir_env_var\":true,"
				"\"exclude_slash_tmp\":true,\"network_access\":true}"),
			 "/c", "/tmpd");
	ASSERT_EQ(1, p->n_rules);
	ASSERT_TRUE(p->network);
	ASSERT_TRUE(rule(p, "/tmp") == NULL && rule(p, "/tmpd") == NULL);
	sandbox_policy_free(p);

	p = parse_ok_ctx(LEGACY("{\"type\":\"workspace-write\"}"), "/c", NULL);
	ASSERT_EQ(2, p->n_rules); /* root read + /tmp */
	ASSERT_TRUE(!p->network);
	sandbox_policy_free(p);
}

TEST(legacy_errors)
{
	static const struct refusal cases[] = {
		{ LEGACY("{}"), "missing field `type`" },
		{ LEGACY("{\"type\":\"workspaceWrite\"}"),
		  "unknown variant `workspaceWrite`, expected one of `danger-full-access`, `read-only`, "
		  "`external-sandbox`, `workspace-write`" },
		{ LEGACY("{\"type\":\"workspace-write\",\"writable_roots\":[7]}"),
		  "invalid type: expected a string in `writable_roots`" },
		{ LEGACY("{\"type\":\"workspace-write\",\"writable_roots\":[\"relative/dir\"]}"), NULL },
	};

	refuse_each(cases);
}

TEST(legacy_writable_roots_not_a_sequence)
{
	/* serde rejects a string where Vec<AbsolutePathBuf> is expected; silently ignoring it
	 * (running with fewer writable roots than asked) hides a client bug. */
	parse_bad(LEGACY("{\"type\":\"workspace-write\",\"writable_roots\":\"/x\"}"), NULL);
}

TEST(permissions_preferred_over_legacy)
{
	struct sandbox_policy *p = parse_ok(
		"{\"permissions\":{\"type\":\"disabled\"},\"sandboxPolicy\":{\"type\":\"read-only\"},"
		"\"windowsSandboxLevel\":\"disabled\"}");

	ASSERT_EQ(SANDBOX_DISABLED, p->kind);
	sandbox_policy_free(p);
}

/* ---- §2.4 / §3.3 access: longest prefix, ties deny > write > read ---- */

TEST(access_spec_example)
{
	/* /repo = write, /repo/a = deny, /repo/a/b = write (SANDBOX.md §3.3) */
	static const struct access_case cases[] = {
		{ WRAP(MANAGED(PATH("file:///repo", "write") "," PATH("file:///repo/a", "deny") ","
			       PATH("file:///repo/a/b", "write"),
			       "restricted")),
		  { { "/repo", SANDBOX_WRITE },
		    { "/repo/x", SANDBOX_WRITE },
		    { "/repo/a", SANDBOX_DENY },
		    { "/repo/a/c", SANDBOX_DENY },
		    { "/repo/a/bb", SANDBOX_DENY },
		    { "/repo/a/b", SANDBOX_WRITE },
		    { "/repo/a/b/deep/file", SANDBOX_WRITE },
		    { "/repox", SANDBOX_DENY } } },
		{ WRAP(MANAGED(PATH("file:///repo", "write") "," PATH("file:///repo/a", "deny") ","
			       PATH("file:///repo/a/b", "write"),
			       "restricted")),
		  { { "/", SANDBOX_DENY } } },
	};

	access_each(cases);
}

TEST(access_ties)
{
	static const struct access_case cases[] = {
		/* same path read + write: write; + deny: deny (order-independent) */
		{ WRAP(MANAGED(PATH("file:///x", "read") "," PATH("file:///x", "write"), "restricted")),
		  { { "/x/f", SANDBOX_WRITE } } },
		{ WRAP(MANAGED(PATH("file:///x", "write") "," PATH("file:///x", "read"), "restricted")),
		  { { "/x/f", SANDBOX_WRITE } } },
		{ WRAP(MANAGED(PATH("file:///x", "deny") "," PATH("file:///x", "write") ","
			       PATH("file:///x", "read"),
			       "restricted")),
		  { { "/x", SANDBOX_DENY } } },
		{ WRAP(MANAGED(PATH("file:///x", "write") "," PATH("file:///x/", "deny"), "restricted")),
		  { { "/x/f", SANDBOX_DENY } } },
		/* a longer read beats a shorter write; a longer write beats a shorter deny */
		{ WRAP(MANAGED(PATH("file:///w", "write") "," PATH("file:///w/ro", "read") ","
			       PATH("file:///d", "deny") "," PATH("file:///d/open", "write"),
			       "restricted")),
		  { { "/w/ro/f", SANDBOX_READ },
		    { "/w/rox", SANDBOX_WRITE },
		    { "/d/open/f", SANDBOX_WRITE },
		    { "/d/opener", SANDBOX_DENY } } },
		/* root read: unmatched paths read; a deny under it still wins */
		{ WRAP(MANAGED(SPECIAL("root", "read") "," PATH("file:///root/.ssh", "deny"), "restricted")),
		  { { "/usr/bin", SANDBOX_READ },
		    { "/root/.ssh/id_rsa", SANDBOX_DENY },
		    { "/root/.sshx", SANDBOX_READ } } },
		/* root write + a read carve-out */
		{ WRAP(MANAGED(SPECIAL("root", "write") "," PATH("file:///etc", "read"), "restricted")),
		  { { "/var/x", SANDBOX_WRITE }, { "/etc/passwd", SANDBOX_READ } } },
	};

	access_each(cases);
}

TEST(access_full_read_and_full_write_defaults)
{
	struct sandbox_policy *p = parse_ok(WRAP(MANAGED(SPECIAL("root", "write") "," PATH("file:///etc", "read"),
							 "restricted")));

	/* root write is full write (its probes are in access_ties) */
	ASSERT_TRUE(p->full_write);
	sandbox_policy_free(p);
}

TEST_MAIN()
