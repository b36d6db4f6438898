/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: http/request URLs (proto/http-url.h). A parsed URL's href is
 * printable ASCII, parses again to itself (normalisation is idempotent), and
 * its target starts with '/'; a refusal names its reason. With a second part
 * (after the first NUL) the input is a base URL and a redirect Location, and
 * the joined URL must obey the same rules.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "http-url.h"

static void check_url(const struct http_url_parts *u)
{
	struct http_url_parts again;

	FUZZ_CHECK(u->host && u->host[0] && u->target && u->target[0] == '/' && u->href);
	for (const char *p = u->href; *p; p++)
		FUZZ_CHECK((unsigned char)*p > 0x20 && (unsigned char)*p < 0x7f);
	FUZZ_CHECK(u->href_origin_len <= u->href_fragment && u->href_fragment <= strlen(u->href));
	FUZZ_CHECK(http_url_parts_parse(u->href, strlen(u->href), &again, NULL, NULL, 0) == 0);
	FUZZ_CHECK(strcmp(again.href, u->href) == 0 && strcmp(again.target, u->target) == 0);
	FUZZ_CHECK(strcmp(again.host, u->host) == 0 && again.port == u->port && again.tls == u->tls);
	http_url_parts_done(&again);
}

static void check_result(int r, const struct http_url_parts *u, const char *reason,
			 const char *scheme)
{
	if (r == 0) {
		check_url(u);
		return;
	}
	FUZZ_CHECK(r == -EINVAL || r == -EPROTONOSUPPORT || r == -ENOMEM);
	FUZZ_CHECK(!u->host && !u->href && !u->target);
	if (r == -EINVAL)
		FUZZ_CHECK(reason && reason[0]);
	if (r == -EPROTONOSUPPORT)
		FUZZ_CHECK(scheme[0] != '\0');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data, *nul = memchr(data, 0, size), *reason = NULL;
	struct http_url_parts u, base;
	char scheme[16] = "";
	int r;

	if (size > 1 << 14)
		return 0;
	if (!nul) {
		r = http_url_parts_parse(s, size, &u, &reason, scheme, sizeof(scheme));
		check_result(r, &u, reason, scheme);
		if (r == 0)
			http_url_parts_done(&u);
		return 0;
	}
	if (http_url_parts_parse(s, (size_t)(nul - s), &base, NULL, NULL, 0) < 0)
		return 0;
	r = http_url_parts_join(&base, nul + 1, size - (size_t)(nul - s) - 1, &u, &reason, scheme,
				sizeof(scheme));
	check_result(r, &u, reason, scheme);
	if (r == 0)
		http_url_parts_done(&u);
	http_url_parts_done(&base);
	return 0;
}
