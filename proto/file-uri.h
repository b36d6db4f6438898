/* SPDX-License-Identifier: MIT */
/*
 * file: URI <-> native absolute path, with the reference server's rules
 * (Rust `url` crate parsing + `to_file_path`), PROTOCOL.md §5.1. No I/O.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/*
 * Parses `uri` (NUL-terminated) into a native absolute path.
 * Accepted: file:///a, file://localhost/a, file:/a, file:////a, FILE:///a (scheme
 * case-insensitive), percent-decoding (incl. %2F -> '/'), raw spaces and raw
 * non-ASCII, dot segments removed lexically (also %2e forms, like the url
 * crate), trailing slash kept off except for "/". WHATWG details kept: '\' is a
 * separator, tabs/newlines are dropped, leading/trailing C0/space trimmed. The
 * decoded path is normalised once more (duplicate '/', '.', '..' from %2F
 * forms), so *ret_path never holds "." or ".." components or "//".
 * If allow_native is true a string starting with a single '/' is accepted as a
 * native absolute path (no percent-decoding) and normalised the same way (the
 * newer seed README's lenient rule). A JSON string with an embedded NUL must be
 * refused by the caller: this function only sees up to the first NUL.
 *
 * Returns 0 and *ret_path (malloc'd, caller frees) on success, else:
 *   -EINVAL  invalid-params error; *reterr_msg is one of
 *            "invalid URI: relative URL without a base",
 *            "unsupported path URI scheme `<scheme>`",
 *            "query parameters are not allowed in path URIs",
 *            "fragments are not allowed in path URIs",
 *            "'<serialized uri>' is invalid on 'linux'" (a %00 in the path),
 *            or another "invalid URI: ..." text ("empty host",
 *            "invalid international domain name", "invalid IPv6 address");
 *   -EREMOTE a non-local host (file://otherhost/x); *reterr_msg is
 *            "'<uri>' is invalid on 'linux'" where <uri> is the serialized URL
 *            (lower-cased scheme and host, dot segments removed, path set
 *            percent-encoded), as the reference prints url.to_string();
 *   -ENOMEM.
 * *reterr_msg is malloc'd (caller frees) and set only on -EINVAL/-EREMOTE
 * (to NULL on an -ENOMEM while formatting it).
 * A decoded NUL byte is rejected with -EINVAL.
 */
int file_uri_to_path(const char *uri, bool allow_native, char **ret_path, char **reterr_msg);

/*
 * The same for uri[0..len), which may hold NUL bytes (a JSON string's
 * "\u0000"): trimmed at both ends, percent-encoded inside (then refused like
 * %00 with the reference's "'<uri>' is invalid on 'linux'"; in a host: an IDN
 * error); a native path holding one: -EINVAL "invalid URI: path contains a NUL byte".
 */
int file_uri_to_pathn(const char *uri, size_t len, bool allow_native, char **ret_path,
		      char **reterr_msg);

/*
 * Formats an absolute native path as "file://" + path, percent-encoding bytes
 * outside the url crate's path-segment set (controls, space, " # < > ? ` { } %,
 * and all non-ASCII bytes; also '\' and DEL). Empty and "." components are
 * dropped like Rust's Path::components(). "/" -> "file:///". Returns a malloc'd
 * string, or NULL with errno ENOMEM, or EINVAL if path does not start with '/'.
 */
char *file_uri_from_path(const char *path);
