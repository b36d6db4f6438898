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
	char *name;              /* single-line, never empty; NULL: use the directory's name */
	char *description;       /* single-line, never empty */
	char *short_description; /* metadata.short-description, or NULL */
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

/* Rust's split_whitespace().join(" ") (Unicode White_Space): malloc'd, or NULL. */
char *fm_single_line(const char *s, size_t len);

/* Unicode scalar values in a valid UTF-8 string. */
size_t fm_char_count(const char *s);
