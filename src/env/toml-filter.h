/* SPDX-License-Identifier: MIT */
/*
 * TOML key-path projection for environmentConfig/read (PROTOCOL.md §6.5).
 *
 * Implemented in C++ (toml-filter.cc) on top of toml++, because Debian 12 ships
 * no C TOML parser; this header is the whole interface, and no C++ exception
 * crosses it. No I/O: the caller reads the file. toml-filter.cc lives in the
 * TOML module (src/toml/toml-module.h); uexec links toml-load.c's toml_filter(),
 * which loads the module on first use and calls into it.
 *
 * Semantics follow codex-rs (codex-rs/config/src/loader, LocalTomlLayerStack::project):
 *  - the requested key paths form a selector tree; a path that is a prefix of
 *    another selects the whole subtree;
 *  - a table is reduced to its selected keys (document order kept), recursively;
 *  - a non-table value met before the end of a path is kept whole (it still
 *    overrides lower layers);
 *  - if the projected root table is empty the layer is dropped (nested empty
 *    tables are kept, e.g. ["other","nope"] on `[other] key = 1` gives "[other]\n").
 * The kept tree is serialised like the Rust `toml` crate's `toml::to_string`
 * (toml 0.9 / toml_writer, with `preserve_order`).
 */
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One key path: n segments, segment i is seg[i][0..len[i]) (may contain NUL bytes). */
struct toml_key_path {
	const char *const *seg;
	const size_t *len;
	size_t n;
};

/* A parse error: 1-based position and a malloc'd message (caller frees). */
struct toml_filter_error {
	unsigned line;
	unsigned column;
	char *message;
};

/*
 * Parses the TOML document text[0..size) (UTF-8) and projects it on paths[0..n_paths).
 * Returns:
 *   0        *ret_toml is the malloc'd serialisation (NUL-terminated), or NULL when
 *            the projection is empty (no layer);
 *   -EINVAL  the document is not valid TOML; *ret_err is filled;
 *   -ENOMEM  out of memory;
 *   -ELIBACC the TOML module (src/toml/toml-load.c) cannot be loaded; ret_err->message
 *            is the malloc'd reason, naming the path tried.
 * An empty key path (n == 0) selects the whole document.
 */
int toml_filter(const char *text, size_t size, const struct toml_key_path *paths, size_t n_paths,
		char **ret_toml, struct toml_filter_error *ret_err);

#ifdef __cplusplus
}
#endif
