/* SPDX-License-Identifier: MIT */
/*
 * A skill's agents/openai.yaml (capabilities/discoverV2): its `dependencies`
 * and `policy`, as the reference reads them (serde_yaml into typed structs:
 * any type error anywhere drops the whole file, silently; then tools without
 * a type or value, or with over-long fields, are dropped one by one).
 * Pure (no I/O): the fuzz target calls it directly.
 */
#pragma once

#include <jansson.h>

/*
 * Parses text (UTF-8, NUL-terminated). *deps gets {"tools":[...]} or stays
 * NULL (no usable tool); *policy gets {"allowImplicitInvocation","products"}
 * or stays NULL.
 */
void skill_meta_parse(const char *text, json_t **deps, json_t **policy);
