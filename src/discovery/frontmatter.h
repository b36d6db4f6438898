/* SPDX-License-Identifier: MIT */
/*
 * SKILL.md front matter (capabilities/discoverV2): the YAML between a first
 * line "---" and the next "---" line, read as the reference reads it (serde_yaml
 * into {name, description, metadata: {short-description}}, with its repair
 * pass that quotes prose values such as "description: Build for AWS: ECS").
 * Full YAML through libyaml: quoting, block scalars, anchors, tags, flow maps.
 * Pure (no I/O, no globals): the fuzz target calls it directly.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct skill_fm {
	char *name;              /* single-line, never empty (may hold NULs: see the lengths) */
	char *description;       /* single-line, never empty */
	char *short_description; /* metadata.short-description, or NULL */
	size_t name_len, description_len, short_description_len;
};

/* Longest name, in characters (Unicode scalar values). */
#define SKILL_NAME_MAX 64

/*
 * Parses text[0..len) (valid UTF-8). Returns 0 with *out filled, -EINVAL when
 * the skill is invalid (no front matter, bad YAML, wrong types, missing
 * description, name too long; a short reason in err), or -ENOMEM.
 * default_name (may be NULL) is used when the front matter has no name; it is
 * validated like one.
 */
int skill_fm_parse(const char *text, size_t len, const char *default_name, struct skill_fm *out,
		   char *err, size_t errsz);
void skill_fm_done(struct skill_fm *fm);

/*
 * Rust's split_whitespace().join(" ") of s[0..len) (Unicode White_Space):
 * malloc'd and NUL-terminated, its length in *ret_len (may be NULL), or NULL.
 */
char *skill_fm_single_line(const char *s, size_t len, size_t *ret_len);

/* Unicode scalar values in valid UTF-8 s[0..len). */
size_t skill_fm_char_count(const char *s, size_t len);

struct yaml_node_s;
/*
 * A YAML scalar that serde reads as null (~, null, empty, !!null) in the
 * document loaded from src: an explicit tag such as !!str makes "~" a string.
 */
bool skill_fm_yaml_null(const struct yaml_node_s *v, const char *src);
