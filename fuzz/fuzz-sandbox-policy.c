/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the sandbox policy parser (sandbox/policy.h), fed the JSON
 * `sandbox` object of a process/start request. Resolved rules must be
 * absolute normalised paths, parsing must be deterministic, and the access
 * lookup must agree with the rules it was built from.
 */
#include <errno.h>
#include <string.h>

#include <jansson.h>

#include "fuzz.h"
#include "policy.h"

static void check_policy(const struct sandbox_policy *p)
{
	FUZZ_CHECK(p->kind == SANDBOX_DISABLED || p->kind == SANDBOX_EXTERNAL ||
		   p->kind == SANDBOX_MANAGED);
	FUZZ_CHECK(p->n_rules == 0 || p->rules);
	if (p->cwd)
		fuzz_check_normal_path(p->cwd);
	if (p->kind == SANDBOX_DISABLED)
		FUZZ_CHECK(sandbox_policy_is_unrestricted(p));
	if (p->full_write)
		FUZZ_CHECK(sandbox_policy_access(p, "/nonexistent/x") != SANDBOX_READ);
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct sandbox_rule *r = &p->rules[i];
		enum sandbox_access want = r->access;

		FUZZ_CHECK(r->path);
		fuzz_check_normal_path(r->path);
		FUZZ_CHECK(r->access == SANDBOX_READ || r->access == SANDBOX_WRITE ||
			   r->access == SANDBOX_DENY);
		/* A rule's own path gets the strongest access among the rules for that path. */
		for (size_t k = 0; k < p->n_rules; k++)
			if (strcmp(p->rules[k].path, r->path) == 0 && p->rules[k].access > want)
				want = p->rules[k].access;
		FUZZ_CHECK(sandbox_policy_access(p, r->path) == want);
	}
}

static void same_policy(const struct sandbox_policy *a, const struct sandbox_policy *b)
{
	FUZZ_CHECK(a->kind == b->kind && a->network == b->network && a->full_read == b->full_read &&
		   a->full_write == b->full_write && a->minimal_read == b->minimal_read &&
		   a->n_rules == b->n_rules && a->n_deny_globs == b->n_deny_globs);
	FUZZ_CHECK(!a->cwd == !b->cwd && (!a->cwd || strcmp(a->cwd, b->cwd) == 0));
	for (size_t i = 0; i < a->n_rules; i++)
		FUZZ_CHECK(strcmp(a->rules[i].path, b->rules[i].path) == 0 &&
			   a->rules[i].access == b->rules[i].access &&
			   a->rules[i].skip_if_missing == b->rules[i].skip_if_missing);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	json_object_seed(0x5eed);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct sandbox_context contexts[] = {
		{ .cwd = "/home/user/project", .tmpdir = "/var/tmp/uexec" },
		{ .cwd = "/", .tmpdir = "relative/tmp" },
		{ .cwd = NULL, .tmpdir = NULL },
	};
	json_error_t jerr;
	json_t *obj;

	if (size > 1 << 16)
		return 0;
	obj = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	if (!obj)
		return 0;

	for (size_t c = 0; c < sizeof(contexts) / sizeof(*contexts); c++) {
		struct sandbox_policy *p = NULL, *again = NULL;
		char err[512] = "", err2[512] = "";
		int r = sandbox_policy_parse(obj, &contexts[c], &p, err, sizeof(err));
		int r2 = sandbox_policy_parse(obj, &contexts[c], &again, err2, sizeof(err2));

		FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
		FUZZ_CHECK(r == r2);
		if (r == -EINVAL) {
			FUZZ_CHECK(err[0] != '\0' && strcmp(err, err2) == 0);
			continue;
		}
		if (r < 0)
			continue;
		FUZZ_CHECK(p && again);
		check_policy(p);
		same_policy(p, again);
		sandbox_policy_free(p);
		sandbox_policy_free(again);
	}
	json_decref(obj);
	return 0;
}
