/* SPDX-License-Identifier: MIT */
/*
 * Sandbox policy: the wire's `sandbox` object (PROTOCOL.md §5.4, SANDBOX.md §2)
 * parsed and resolved into concrete paths. No I/O: paths are resolved
 * lexically; what exists on disk is decided by the caller (sandbox_plan).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

enum sandbox_kind {
	SANDBOX_DISABLED, /* permissions.type "disabled" / legacy danger-full-access */
	SANDBOX_EXTERNAL, /* an outer sandbox is assumed: filesystem unrestricted here */
	SANDBOX_MANAGED,
};

enum sandbox_access {
	SANDBOX_READ,
	SANDBOX_WRITE,
	SANDBOX_DENY,
};

struct sandbox_rule {
	char *path;               /* absolute, normalised */
	enum sandbox_access access;
	bool skip_if_missing;     /* missing_path_behavior: skip */
};

struct sandbox_policy {
	enum sandbox_kind kind;
	bool network;             /* network access enabled */
	/*
	 * Set by the caller, not parsed: the network goes through a managed
	 * proxy (process/start.networkProxy): a network namespace of its own
	 * with only the proxy's listeners in it (sandbox_plan_set_proxy).
	 */
	bool managed_network;
	bool managed_all_unix;    /* with managed_network: dangerouslyAllowAllUnixSockets */
	bool full_read;           /* unrestricted or a root read/write entry */
	bool full_write;          /* unrestricted or a root write entry */
	bool minimal_read;        /* the "minimal" special path: platform read roots */
	struct sandbox_rule *rules;
	size_t n_rules;
	/*
	 * glob_pattern deny entries, absolute (a relative one resolved against
	 * cwd, normalised; relative only when there is no cwd). Expanded by
	 * sandbox_plan_new (sandbox/glob.c).
	 */
	char **deny_globs;
	size_t n_deny_globs;
	long glob_scan_max_depth; /* file_system.glob_scan_max_depth, or -1 */
	char *cwd;                /* policy cwd */
};

#define SANDBOX_MAX_DENY_GLOBS 256

/* Values the special paths resolve against. */
struct sandbox_context {
	const char *cwd;          /* the request's cwd (process/start) when the object has none */
	const char *tmpdir;       /* $TMPDIR of the server, or NULL */
};

/*
 * Parses and resolves a sandbox object. Returns 0 and *ret (free with
 * sandbox_policy_free), -EINVAL with a serde-style message in err (the
 * reference's decoding errors), or -ENOMEM. Accepts the 0.169 form
 * ({"permissions": {...}, "windowsSandboxLevel": ...}) and the legacy
 * {"sandboxPolicy": {"type": "workspace-write", ...}} form.
 */
int sandbox_policy_parse(json_t *sandbox, const struct sandbox_context *ctx,
			 struct sandbox_policy **ret, char *err, size_t errsz);

void sandbox_policy_free(struct sandbox_policy *p);

/*
 * Effective access of a path: the rule whose path is the longest prefix of it
 * (ties: deny > write > read); no rule -> deny, unless full_read/full_write.
 */
enum sandbox_access sandbox_policy_access(const struct sandbox_policy *p, const char *path);

/* True when the policy restricts nothing (disabled, or a bare full write with network). */
bool sandbox_policy_is_unrestricted(const struct sandbox_policy *p);

/*
 * A write on the root that still restricts something (SECURITY.md "Write on
 * the root"): a deny entry or glob, or a read entry, in effect beneath it.
 * Such a policy gets a filesystem view (the root writable in it, the
 * carve-outs masked, a private /dev); a bare root write does not.
 */
bool sandbox_policy_root_write_restricted(const struct sandbox_policy *p);

/*
 * With the root writable: true when a write entry names /<name> exactly
 * (an approved command's grant of the root's metadata names), which then
 * stays writable with the root instead of being kept read-only.
 */
bool sandbox_policy_grants_root_name(const struct sandbox_policy *p, const char *name);

/* Names kept read-only directly under every writable root (SANDBOX.md §3.4). */
extern const char *const sandbox_protected_names[4];
