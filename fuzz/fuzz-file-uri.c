/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: file: URI -> native path (proto/file-uri.h), with the round
 * trip path -> file_uri_from_path -> file_uri_to_path giving the same path.
 *
 * Input: byte 0 bit 0 is allow_native; the rest is the URI (the function sees
 * it up to the first NUL; callers with NULs go through file_uri_to_pathn).
 */
#include <errno.h>
#include <string.h>

#include "file-uri.h"
#include "fuzz.h"

/* A first segment that is a Windows drive letter ("/c:" or "/c:/..."). */
static bool starts_with_drive_letter(const char *path)
{
	char c = path[1];

	return ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) && path[2] == ':' &&
	       (path[3] == '/' || path[3] == '\0');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *uri, *path = NULL, *msg = NULL, *again = NULL, *u;
	bool allow_native;
	int r;

	if (size < 1 || size > 1 << 16)
		return 0;
	allow_native = data[0] & 1;
	uri = malloc(size);
	FUZZ_CHECK(uri);
	memcpy(uri, data + 1, size - 1);
	uri[size - 1] = '\0';

	r = file_uri_to_path(uri, allow_native, &path, &msg);
	if (r < 0) {
		FUZZ_CHECK(r == -EINVAL || r == -EREMOTE || r == -ENOMEM);
		FUZZ_CHECK(!path);
		if (r != -ENOMEM)
			FUZZ_CHECK(msg && msg[0] != '\0');
		free(msg);
		free(uri);
		return 0;
	}
	FUZZ_CHECK(r == 0 && path && !msg);
	fuzz_check_normal_path(path);

	/*
	 * path -> URI -> the same path. Except for a first segment that is a
	 * Windows drive letter ("/c:..." read as a native path): as a URI the
	 * reference refuses it on Linux, like a remote host.
	 */
	u = file_uri_from_path(path);
	FUZZ_CHECK(u && strncmp(u, "file:///", 8) == 0);
	r = file_uri_to_path(u, false, &again, &msg);
	if (starts_with_drive_letter(path)) {
		FUZZ_CHECK(r == -EREMOTE && !again && msg);
		free(msg);
		msg = NULL;
	} else {
		if (r != 0)
			fprintf(stderr, "path '%s' -> '%s' -> %d '%s'\n", path, u, r, msg ? msg : "");
		FUZZ_CHECK(r == 0);
		FUZZ_CHECK(strcmp(again, path) == 0);
	}
	free(again);
	again = NULL;

	/* Normal paths stay as they are when read as native paths. */
	r = file_uri_to_path(path, true, &again, &msg);
	FUZZ_CHECK(r == 0 && strcmp(again, path) == 0);

	free(again);
	free(u);
	free(path);
	free(uri);
	return 0;
}
