/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: what the environment registry answers (src/remote/codec/registry.h),
 * untrusted bytes from the network. Byte 0 picks the parser (register,
 * connect, validate, error, redacted error, base URL); the rest is the body.
 * Invariants beyond "no crash, no leak": a refusal has a reason and an errno
 * of the documented set; an accepted response has non-blank fields, a ws(s)
 * URL and the requested environment id; an error message is valid UTF-8
 * (empty only when the registry's own message is), and a redacted error's
 * code is a plain identifier.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz.h"
#include "registry.h"
#include "utf8.h"

#define ENV_ID "env-1"

static bool documented(int r)
{
	return r == -EBADMSG || r == -EXDEV || r == -EPROTONOSUPPORT || r == -ENODATA ||
	       r == -EAFNOSUPPORT || r == -ENOKEY || r == -EMSGSIZE || r == -ENOMEM;
}

static void check_url(const char *url)
{
	FUZZ_CHECK(url && (strncasecmp(url, "ws://", 5) == 0 || strncasecmp(url, "wss://", 6) == 0));
}

static bool plain_identifier(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '_' || *s == '.' || *s == '-'))
			return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *body = (const char *)data + 1, *reason = NULL;
	size_t len = size ? size - 1 : 0;
	int r;

	if (size == 0)
		return 0;
	switch (data[0] % 6) {
	case 0: {
		struct registry_registration reg = { 0 };

		r = registry_parse_registration(body, len, ENV_ID, &reg, &reason);
		if (r < 0) {
			FUZZ_CHECK(documented(r) && reason && *reason);
		} else {
			FUZZ_CHECK(strcmp(reg.environment_id, ENV_ID) == 0);
			check_url(reg.url);
			FUZZ_CHECK(reg.executor_registration_id && *reg.executor_registration_id);
		}
		registry_registration_done(&reg);
		break;
	}
	case 1: {
		struct registry_connection con = { 0 };

		r = registry_parse_connection(body, len, ENV_ID, &con, &reason);
		if (r < 0) {
			FUZZ_CHECK(documented(r) && reason && *reason);
		} else {
			check_url(con.url);
			FUZZ_CHECK(con.authorization_len > 0 &&
				   con.authorization_len <= REGISTRY_AUTHORIZATION_MAX);
		}
		registry_connection_done(&con);
		break;
	}
	case 2:
		r = registry_parse_validation(body, len, &reason);
		FUZZ_CHECK(r == 0 || ((r == -EKEYREJECTED || r == -EBADMSG || r == -ENOMEM) && reason));
		break;
	case 3:
	case 4: {
		static struct registry_error e;
		int status = 400 + (int)(len % 200);

		if (data[0] % 6 == 3)
			registry_error_parse(status, body, len, &e);
		else
			registry_error_parse_redacted(status, body, len, &e);
		FUZZ_CHECK(e.status == status);
		FUZZ_CHECK(utf8_is_valid((const uint8_t *)e.message, strlen(e.message)));
		FUZZ_CHECK(e.auth == (status == 401 || status == 403));
		if (data[0] % 6 == 4)
			FUZZ_CHECK(plain_identifier(e.code));
		break;
	}
	case 5: {
		char *s = malloc(len + 1);
		struct registry_url u = { 0 };

		FUZZ_CHECK(s);
		memcpy(s, body, len);
		s[len] = 0;
		r = registry_url_parse(s, &u, &reason);
		FUZZ_CHECK(r == 0 ? u.host != NULL : reason != NULL);
		registry_url_done(&u);
		free(s);
		break;
	}
	}
	return 0;
}
