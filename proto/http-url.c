/* SPDX-License-Identifier: MIT */
/*
 * http:/https: URL parsing for http/request: see http-url.h for what is
 * normalised and how. The WHATWG URL standard's "special scheme" paths are
 * followed step by step where a client can see the difference (the request
 * target, the Host header, the Referer, error texts).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "hex.h"
#include "http-url.h"

/* WHATWG percent-encode sets, as bit tests on one byte (C0 controls, space and non-ASCII in all). */
enum pe_set { PE_FRAGMENT, PE_QUERY, PE_PATH, PE_USERINFO };

static bool must_encode(unsigned char ch, enum pe_set set)
{
	if (ch <= 0x20 || ch >= 0x7f)
		return true;
	switch (set) {
	case PE_FRAGMENT:
		return strchr("\"<>`", ch) != NULL;
	case PE_QUERY: /* the special-query set */
		return strchr("\"#<>'", ch) != NULL;
	case PE_PATH:
		return strchr("\"#<>?`{}", ch) != NULL;
	case PE_USERINFO:
		return strchr("\"#<>?`{}/:;=@[\\]^|", ch) != NULL;
	}
	return true;
}

static int append_encoded(struct buf *b, const char *p, size_t n, enum pe_set set)
{
	static const char hex[] = "0123456789ABCDEF";

	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)p[i];
		char e[3] = { '%', hex[ch >> 4], hex[ch & 15] };
		int q = must_encode(ch, set) ? buf_append(b, e, 3) : buf_append(b, &p[i], 1);

		if (q < 0)
			return q;
	}
	return 0;
}

/* Percent-decodes p[0..n) into a new NUL-terminated string (*ret_len bytes; may hold NULs). */
static char *pct_decode(const char *p, size_t n, size_t *ret_len)
{
	char *out = malloc(n + 1);
	size_t o = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '%' && i + 2 < n && unhexchar((unsigned char)p[i + 1]) >= 0 && unhexchar((unsigned char)p[i + 2]) >= 0) {
			out[o++] = (char)(unhexchar((unsigned char)p[i + 1]) << 4 | unhexchar((unsigned char)p[i + 2]));
			i += 2;
		} else {
			out[o++] = p[i];
		}
	}
	out[o] = '\0';
	if (ret_len)
		*ret_len = o;
	return out;
}

/* ---- hosts ---- */

/* One WHATWG IPv4 number: decimal, 0x hex or 0-prefixed octal. -1 when it is none. */
static long long ipv4_number(const char *p, size_t n)
{
	int base = 10;
	long long v = 0;

	if (n >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
		n -= 2;
		if (n == 0)
			return 0;
	} else if (n >= 2 && p[0] == '0') {
		base = 8;
		p++;
		n--;
	}
	if (n == 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int d = unhexchar((unsigned char)p[i]);

		if (d < 0 || d >= base)
			return -1;
		v = v * base + d;
		if (v > 0xffffffffll * 256)
			v = 0xffffffffll * 256; /* saturate: too big either way */
	}
	return v;
}

/* The last label decides whether a host is an IPv4 address (WHATWG "ends in a number"). */
static bool ends_in_number(const char *h, size_t n)
{
	size_t end = n, start;

	if (end > 0 && h[end - 1] == '.') {
		if (end == 1)
			return false;
		end--;
	}
	start = end;
	while (start > 0 && h[start - 1] != '.')
		start--;
	if (start == end)
		return false;
	if (strspn(h + start, "0123456789") >= end - start)
		return true;
	/* Or a hex number ("0x7f", "0x"). */
	return end - start >= 2 && h[start] == '0' && (h[start + 1] == 'x' || h[start + 1] == 'X') &&
	       ipv4_number(h + start, end - start) >= 0;
}

static int parse_ipv4(const char *h, size_t n, char *out, size_t cap)
{
	long long parts[4], addr;
	size_t np = 0, i = 0;

	if (n > 0 && h[n - 1] == '.')
		n--;
	while (i <= n) {
		size_t j = i;

		while (j < n && h[j] != '.')
			j++;
		if (np == 4)
			return -EINVAL;
		parts[np] = ipv4_number(h + i, j - i);
		if (parts[np] < 0)
			return -EINVAL;
		np++;
		i = j + 1;
	}
	for (size_t k = 0; k + 1 < np; k++)
		if (parts[k] > 255)
			return -EINVAL;
	if (parts[np - 1] >= 1ll << (8 * (5 - np)))
		return -EINVAL;
	addr = parts[np - 1];
	for (size_t k = 0; k + 1 < np; k++)
		addr += parts[k] << (8 * (3 - k));
	snprintf(out, cap, "%lld.%lld.%lld.%lld", addr >> 24 & 255, addr >> 16 & 255, addr >> 8 & 255,
		 addr & 255);
	return 0;
}

/*
 * WHATWG's IPv6 serialisation: lower-case hex pieces, the first longest run
 * of two or more zero pieces as "::", never a dotted IPv4 tail (inet_ntop
 * writes ::ffff:1.2.3.4 where the reference writes ::ffff:102:304).
 */
static void ipv6_serialize(const uint8_t a[16], char *out, size_t cap)
{
	unsigned piece[8];
	int best = -1, best_len = 1, run = -1, n = 0;
	size_t o = 0;

	for (int i = 0; i < 8; i++)
		piece[i] = (unsigned)a[2 * i] << 8 | a[2 * i + 1];
	for (int i = 0; i <= 8; i++) {
		if (i < 8 && piece[i] == 0) {
			if (run < 0)
				run = i;
			continue;
		}
		if (run >= 0 && i - run > best_len) {
			best = run;
			best_len = i - run;
		}
		run = -1;
	}
	for (int i = 0; i < 8 && o < cap; i++) {
		if (i == best) {
			n = snprintf(out + o, cap - o, "%s", i == 0 ? "::" : ":");
			o += (size_t)n;
			i += best_len - 1;
			continue;
		}
		n = snprintf(out + o, cap - o, "%x%s", piece[i], i < 7 ? ":" : "");
		o += (size_t)n;
	}
}

static int parse_host(const char *p, size_t n, struct http_url_parts *u, const char **reason)
{
	char tmp[64];
	size_t len;
	char *h;

	if (n > 0 && p[0] == '[') {
		struct in6_addr a6;

		if (n < 2 || p[n - 1] != ']' || n - 2 >= sizeof(tmp)) {
			*reason = "invalid IPv6 address";
			return -EINVAL;
		}
		memcpy(tmp, p + 1, n - 2);
		tmp[n - 2] = '\0';
		if (inet_pton(AF_INET6, tmp, &a6) != 1) {
			*reason = "invalid IPv6 address";
			return -EINVAL;
		}
		ipv6_serialize(a6.s6_addr, tmp, sizeof(tmp));
		u->ipv6 = true;
		u->host = strdup(tmp);
		return u->host ? 0 : -ENOMEM;
	}
	if (n == 0) {
		*reason = "empty host";
		return -EINVAL;
	}
	h = pct_decode(p, n, &len);
	if (!h)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)h[i];

		if (ch <= 0x20 || ch >= 0x7f || strchr("#%/:<>?@[\\]^|", ch)) {
			free(h);
			*reason = "invalid international domain name";
			return -EINVAL;
		}
		if (ch >= 'A' && ch <= 'Z')
			h[i] = (char)(ch + 32);
	}
	if (len == 0) {
		free(h);
		*reason = "empty host";
		return -EINVAL;
	}
	if (ends_in_number(h, len)) {
		int q = parse_ipv4(h, len, tmp, sizeof(tmp));

		free(h);
		if (q < 0) {
			*reason = "invalid IPv4 address";
			return q;
		}
		h = strdup(tmp);
		if (!h)
			return -ENOMEM;
	}
	u->host = h;
	return 0;
}

/* ---- paths ---- */

static bool is_dot(const char *s, size_t n)
{
	return (n == 1 && s[0] == '.') || (n == 3 && strncasecmp(s, "%2e", 3) == 0);
}

static bool is_dotdot(const char *s, size_t n)
{
	if (n == 2)
		return s[0] == '.' && s[1] == '.';
	if (n == 4)
		return (s[0] == '.' && strncasecmp(s + 1, "%2e", 3) == 0) ||
		       (strncasecmp(s, "%2e", 3) == 0 && s[3] == '.');
	return n == 6 && strncasecmp(s, "%2e%2e", 6) == 0;
}

/* Appends the normalised path of p[0..n) (which starts after the authority) to b. */
static int append_path(struct buf *b, const char *p, size_t n)
{
	size_t base = b->len, i = 0;
	int q = 0;

	if (n > 0 && (p[0] == '/' || p[0] == '\\'))
		i = 1;
	for (;;) {
		size_t j = i;
		bool last;

		while (j < n && p[j] != '/' && p[j] != '\\')
			j++;
		last = j >= n;
		if (is_dotdot(p + i, j - i)) {
			/* Drop the previous segment (the buffer holds "/seg/seg..."). */
			while (b->len > base && b->data[b->len - 1] != '/')
				b->len--;
			if (b->len > base)
				b->len--;
			if (last)
				q = buf_append(b, "/", 1);
		} else if (is_dot(p + i, j - i)) {
			if (last)
				q = buf_append(b, "/", 1);
		} else {
			q = buf_append(b, "/", 1);
			if (q >= 0)
				q = append_encoded(b, p + i, j - i, PE_PATH);
		}
		if (q < 0 || last)
			break;
		i = j + 1;
	}
	if (q >= 0 && b->len == base)
		q = buf_append(b, "/", 1);
	return q;
}

/* ---- the parser ---- */

static int set_scheme_out(const char *s, size_t n, char *out, size_t cap)
{
	if (out && cap) {
		size_t k = n < cap - 1 ? n : cap - 1;

		for (size_t i = 0; i < k; i++)
			out[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
		out[k] = '\0';
	}
	return -EPROTONOSUPPORT;
}

/* The length of a scheme at s (followed by ':'), or 0. */
static size_t scheme_len(const char *s, size_t n)
{
	size_t i = 0;

	if (n == 0 || !((s[0] | 32) >= 'a' && (s[0] | 32) <= 'z'))
		return 0;
	while (i < n && (((s[i] | 32) >= 'a' && (s[i] | 32) <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
			 s[i] == '+' || s[i] == '-' || s[i] == '.'))
		i++;
	return i < n && s[i] == ':' ? i : 0;
}

/* Input cleaning: leading/trailing C0 and spaces off, tabs and newlines anywhere. */
static char *clean(const char *s, size_t n, size_t *ret_len)
{
	char *o;
	size_t k = 0;

	while (n > 0 && (unsigned char)s[0] <= 0x20) {
		s++;
		n--;
	}
	while (n > 0 && (unsigned char)s[n - 1] <= 0x20)
		n--;
	o = malloc(n + 1);
	if (!o)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
			o[k++] = s[i];
	o[k] = '\0';
	*ret_len = k;
	return o;
}

/* Where the raw user name and password lie in the input (for the href, escapes kept). */
struct userinfo_span {
	size_t at, len;       /* the user name in[at..at+len) */
	size_t pw_at, pw_len; /* the password */
};

/* Userinfo in[i..at-1) (at: after the authority's last '@'), percent-decoded into u. */
static int parse_userinfo(const char *in, size_t i, size_t at, struct http_url_parts *u,
			  struct userinfo_span *ui)
{
	size_t ui_end = at - 1, c = i;

	while (c < ui_end && in[c] != ':')
		c++;
	ui->at = i;
	ui->len = c - i;
	ui->pw_at = c + 1;
	ui->pw_len = c < ui_end ? ui_end - c - 1 : 0;
	u->user = pct_decode(in + i, c - i, NULL);
	u->password = c < ui_end ? pct_decode(in + c + 1, ui_end - c - 1, NULL) : NULL;
	if (!u->user || (c < ui_end && !u->password))
		return -ENOMEM;
	if (ui->len == 0 && ui->pw_len == 0) {
		free(u->user);
		free(u->password);
		u->user = u->password = NULL;
	}
	return 0;
}

/* The port separator of in[hp..auth_end): the first ':' outside brackets (auth_end if none). */
static size_t port_separator(const char *in, size_t hp, size_t auth_end)
{
	size_t colon = hp;
	bool br = false;

	while (colon < auth_end && (br || in[colon] != ':')) {
		if (in[colon] == '[')
			br = true;
		else if (in[colon] == ']')
			br = false;
		colon++;
	}
	return colon;
}

/* The digits after the separator; none keeps the scheme's default. */
static int parse_port(const char *p, size_t pn, struct http_url_parts *u, const char **reason)
{
	unsigned long port = 0;

	for (size_t k = 0; k < pn; k++) {
		char ch = p[k];

		if (ch < '0' || ch > '9' || (port = port * 10 + (unsigned long)(ch - '0')) > 65535) {
			*reason = "invalid port number";
			return -EINVAL;
		}
	}
	if (pn > 0)
		u->port = (uint16_t)port;
	return 0;
}

/* u->target: the path, then "?query" (in[auth_end..path_end), in[path_end..q_end)). */
static int build_target(const char *in, size_t n, size_t auth_end, size_t path_end, size_t q_end,
			struct http_url_parts *u)
{
	struct buf b = { 0 };
	int q;

	q = append_path(&b, in + auth_end, path_end - auth_end);
	if (q >= 0 && path_end < n && in[path_end] == '?')
		q = append_encoded(&b, in + path_end, q_end - path_end, PE_QUERY);
	if (q >= 0)
		q = buf_append(&b, "", 1);
	if (q < 0) {
		buf_done(&b);
		return q;
	}
	u->target = (char *)b.data;
	return 0;
}

/* u->href: scheme, userinfo, host, port, the target, then the fragment from in[q_end..n). */
static int build_href(const char *in, size_t n, const struct userinfo_span *ui, size_t q_end,
		      struct http_url_parts *u)
{
	struct buf b = { 0 };
	char portbuf[8];
	int q;

	q = buf_append(&b, u->tls ? "https://" : "http://", u->tls ? 8 : 7);
	/* Userinfo as written, its escapes kept (WHATWG encodes, never decodes it). */
	if (q >= 0 && u->user) {
		q = append_encoded(&b, in + ui->at, ui->len, PE_USERINFO);
		if (q >= 0 && ui->pw_len > 0) {
			q = buf_append(&b, ":", 1);
			if (q >= 0)
				q = append_encoded(&b, in + ui->pw_at, ui->pw_len, PE_USERINFO);
		}
		if (q >= 0)
			q = buf_append(&b, "@", 1);
	}
	if (q >= 0 && u->ipv6)
		q = buf_append(&b, "[", 1);
	if (q >= 0)
		q = buf_append(&b, u->host, strlen(u->host));
	if (q >= 0 && u->ipv6)
		q = buf_append(&b, "]", 1);
	if (q >= 0 && u->port != (u->tls ? 443 : 80)) {
		int k = snprintf(portbuf, sizeof(portbuf), ":%u", u->port);

		q = buf_append(&b, portbuf, (size_t)k);
	}
	u->href_origin_len = b.len;
	if (q >= 0)
		q = buf_append(&b, u->target, strlen(u->target));
	u->href_fragment = b.len;
	if (q >= 0 && q_end < n)
		q = append_encoded(&b, in + q_end, n - q_end, PE_FRAGMENT);
	if (q >= 0)
		q = buf_append(&b, "", 1);
	if (q < 0) {
		buf_done(&b);
		return q;
	}
	u->href = (char *)b.data;
	return 0;
}

static int parse_clean(const char *in, size_t n, struct http_url_parts *u, const char **reason,
		       char *scheme_out, size_t scheme_cap)
{
	size_t sl = scheme_len(in, n), i, auth_end, at, hp, colon, path_end, q_end;
	struct userinfo_span ui = { 0 };
	int q;

	if (sl == 0) {
		*reason = "relative URL without a base";
		return -EINVAL;
	}
	if (sl == 4 && strncasecmp(in, "http", 4) == 0)
		u->tls = false;
	else if (sl == 5 && strncasecmp(in, "https", 5) == 0)
		u->tls = true;
	else
		return set_scheme_out(in, sl, scheme_out, scheme_cap);
	u->port = u->tls ? 443 : 80;
	i = sl + 1;
	while (i < n && (in[i] == '/' || in[i] == '\\'))
		i++;
	auth_end = i;
	while (auth_end < n && !strchr("/\\?#", in[auth_end]))
		auth_end++;
	/* Userinfo ends at the authority's last '@'. */
	at = auth_end;
	while (at > i && in[at - 1] != '@')
		at--;
	hp = at > i ? at : i;
	if (at > i && (q = parse_userinfo(in, i, at, u, &ui)) < 0)
		return q;
	colon = port_separator(in, hp, auth_end);
	if (colon == hp) {
		*reason = "empty host";
		return -EINVAL;
	}
	if (colon < auth_end && (q = parse_port(in + colon + 1, auth_end - colon - 1, u, reason)) < 0)
		return q;
	q = parse_host(in + hp, colon - hp, u, reason);
	if (q < 0)
		return q;
	path_end = auth_end;
	while (path_end < n && in[path_end] != '?' && in[path_end] != '#')
		path_end++;
	q_end = path_end;
	while (q_end < n && in[q_end] != '#')
		q_end++;
	q = build_target(in, n, auth_end, path_end, q_end, u);
	if (q < 0)
		return q;
	return build_href(in, n, &ui, q_end, u);
}

int http_url_parts_parse(const char *s, size_t len, struct http_url_parts *ret, const char **reason,
			 char *scheme_out, size_t scheme_cap)
{
	const char *dummy;
	size_t n;
	char *in;
	int q;

	*ret = (struct http_url_parts){ 0 };
	if (!reason)
		reason = &dummy;
	*reason = NULL;
	in = clean(s, len, &n);
	if (!in)
		return -ENOMEM;
	q = parse_clean(in, n, ret, reason, scheme_out, scheme_cap);
	free(in);
	if (q < 0)
		http_url_parts_done(ret);
	return q;
}

int http_url_parts_join(const struct http_url_parts *base, const char *loc, size_t len,
			struct http_url_parts *ret, const char **reason, char *scheme_out,
			size_t scheme_cap)
{
	struct buf b = { 0 };
	size_t n, path_len;
	char *in;
	int q;

	*ret = (struct http_url_parts){ 0 };
	in = clean(loc, len, &n);
	if (!in)
		return -ENOMEM;
	if (scheme_len(in, n) > 0) {
		q = http_url_parts_parse(in, n, ret, reason, scheme_out, scheme_cap);
		free(in);
		return q;
	}
	path_len = strcspn(base->target, "?");
	if (n >= 2 && (in[0] == '/' || in[0] == '\\') && (in[1] == '/' || in[1] == '\\'))
		q = buf_append(&b, base->tls ? "https:" : "http:", base->tls ? 6 : 5);
	else if (n >= 1 && (in[0] == '/' || in[0] == '\\'))
		q = buf_append(&b, base->href, base->href_origin_len);
	else if (n >= 1 && in[0] == '?')
		q = buf_append(&b, base->href, base->href_origin_len + path_len);
	else if (n == 0 || in[0] == '#')
		q = buf_append(&b, base->href, base->href_fragment);
	else {
		const char *slash = memrchr(base->target, '/', path_len);
		size_t dir = slash ? (size_t)(slash - base->target) + 1 : 0;

		q = buf_append(&b, base->href, base->href_origin_len + dir);
	}
	if (q >= 0)
		q = buf_append(&b, in, n);
	free(in);
	if (q < 0) {
		buf_done(&b);
		return q;
	}
	q = http_url_parts_parse((const char *)b.data, b.len, ret, reason, scheme_out, scheme_cap);
	buf_done(&b);
	return q;
}

bool http_url_same_origin(const struct http_url_parts *a, const struct http_url_parts *b)
{
	return a->tls == b->tls && a->port == b->port && strcmp(a->host, b->host) == 0;
}

void http_url_parts_done(struct http_url_parts *u)
{
	free(u->host);
	if (u->password)
		explicit_bzero(u->password, strlen(u->password));
	free(u->user);
	free(u->password);
	free(u->target);
	free(u->href);
	*u = (struct http_url_parts){ 0 };
}
