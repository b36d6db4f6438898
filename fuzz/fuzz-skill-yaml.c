/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the YAML a skill directory holds (src/discovery): SKILL.md
 * front matter (frontmatter.h) and agents/openai.yaml (skill-meta.h), both
 * read with libyaml as capabilities/discoverV2 reads them.
 *
 * Input: byte 0 bit 0 picks the reader (0: SKILL.md, 1: openai.yaml); the
 * rest is the file. Files that are not UTF-8 never reach the readers (the
 * scan drops them first), so such inputs are skipped.
 */
#include <errno.h>
#include <string.h>

#include <jansson.h>

#include "frontmatter.h"
#include "fuzz.h"
#include "skill-meta.h"
#include "utf8.h"

/* A "single line": no White_Space at either end, none doubled, no newline. */
static void check_single_line(const char *s, size_t n)
{
	FUZZ_CHECK(n > 0);
	FUZZ_CHECK(s[0] != ' ' && s[n - 1] != ' ');
	for (size_t i = 0; i < n; i++) {
		FUZZ_CHECK(s[i] != '\n' && s[i] != '\r' && s[i] != '\t');
		if (i > 0)
			FUZZ_CHECK(!(s[i] == ' ' && s[i - 1] == ' '));
	}
	FUZZ_CHECK(utf8_is_valid((const uint8_t *)s, n));
	/* Idempotent: the single-line form of a single line is itself. */
	{
		size_t m = 0;
		char *again = skill_fm_single_line(s, n, &m);

		FUZZ_CHECK(again && m == n && memcmp(again, s, n) == 0);
		free(again);
	}
}

static void front_matter(const char *text, size_t n)
{
	struct skill_fm fm;
	char err[256] = "";
	int r = skill_fm_parse(text, n, "dir name", &fm, err, sizeof(err));

	FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
	if (r == -EINVAL)
		FUZZ_CHECK(err[0] != '\0');
	if (r < 0) {
		FUZZ_CHECK(!fm.name && !fm.description && !fm.short_description);
		return;
	}
	FUZZ_CHECK(fm.name && fm.description);
	check_single_line(fm.name, fm.name_len);
	FUZZ_CHECK(skill_fm_char_count(fm.name, fm.name_len) <= SKILL_NAME_MAX);
	check_single_line(fm.description, fm.description_len);
	if (fm.short_description)
		check_single_line(fm.short_description, fm.short_description_len);
	/* Deterministic. */
	{
		struct skill_fm again;

		FUZZ_CHECK(skill_fm_parse(text, n, "dir name", &again, err, sizeof(err)) == 0);
		FUZZ_CHECK(again.name_len == fm.name_len &&
			   memcmp(again.name, fm.name, fm.name_len) == 0);
		FUZZ_CHECK(again.description_len == fm.description_len &&
			   memcmp(again.description, fm.description, fm.description_len) == 0);
		skill_fm_done(&again);
	}
	skill_fm_done(&fm);
}

static void openai_yaml(const char *text)
{
	json_t *deps = NULL, *policy = NULL, *t;
	size_t i;

	skill_meta_parse(text, &deps, &policy);
	if (deps) {
		json_t *tools = json_object_get(deps, "tools");

		FUZZ_CHECK(json_is_array(tools) && json_array_size(tools) > 0);
		json_array_foreach(tools, i, t) {
			const char *ty = json_string_value(json_object_get(t, "type"));
			const char *va = json_string_value(json_object_get(t, "value"));
			json_t *port = json_object_get(t, "oauthCallbackPort");

			FUZZ_CHECK(ty && va);
			check_single_line(ty, json_string_length(json_object_get(t, "type")));
			FUZZ_CHECK(skill_fm_char_count(ty, strlen(ty)) <= 64);
			check_single_line(va, json_string_length(json_object_get(t, "value")));
			FUZZ_CHECK(json_object_size(t) == 7);
			FUZZ_CHECK(json_is_null(port) ||
				   (json_is_integer(port) && json_integer_value(port) >= 0 &&
				    json_integer_value(port) <= 65535));
		}
	}
	if (policy) {
		json_t *allow = json_object_get(policy, "allowImplicitInvocation"), *p;

		FUZZ_CHECK(json_is_null(allow) || json_is_boolean(allow));
		json_array_foreach(json_object_get(policy, "products"), i, p) {
			const char *s = json_string_value(p);

			FUZZ_CHECK(s && (!strcmp(s, "codex") || !strcmp(s, "chatgpt") ||
					 !strcmp(s, "atlas")));
		}
	}
	json_decref(deps);
	json_decref(policy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;

	if (size < 1 || size > 1 << 16 || !utf8_is_valid(data + 1, size - 1))
		return 0;
	text = malloc(size);
	FUZZ_CHECK(text);
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	if (data[0] & 1)
		openai_yaml(text);
	else
		front_matter(text, size - 1);
	free(text);
	return 0;
}
