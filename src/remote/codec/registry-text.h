/* SPDX-License-Identifier: MIT */
/* Text helpers shared by registry.c and registry-response.c (not part of registry.h). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* s without Unicode whitespace at both ends (Rust's str::trim); *len in and out. */
const char *registry_trim(const char *s, size_t *len);
/* True when s is empty or only whitespace. */
bool registry_blank(const char *s);
/* ASCII case-insensitive prefix test. */
bool registry_ieq_prefix(const char *s, const char *prefix);
