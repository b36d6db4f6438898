/* SPDX-License-Identifier: MIT */
/*
 * file: URI <-> native path, emulating the reference: WHATWG URL parsing as the
 * Rust `url` crate does it (special-scheme rules for file:), then to_file_path.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errmsg.h"
#include "file-uri.h"
#include "hex.h"

static const char hex_digits[] = "0123456789ABCDEF";

/* A growable string; every function leaves it NUL-terminated. */
struct sbuf {
	char *p;
	size_t len, cap;
};

static int sbuf_reserve(struct sbuf *b, size_t extra)
{
	size_t want;
	char *n;

	if (extra > SIZE_MAX / 2 - b->len)
		return -ENOMEM;
	want = b->len + extra + 1;
	if (want <= b->cap)
		return 0;
	if (want < b->cap * 2)
		want = b->cap * 2;
	n = realloc(b->p, want);
	if (!n)
		return -ENOMEM;
	b->p = n;
	b->cap = want;
	return 0;
}

static int sbuf_put(struct sbuf *b, const char *s, size_t n)
{
	if (sbuf_reserve(b, n) < 0)
		return -ENOMEM;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

static int sbuf_putc(struct sbuf *b, char c)
{
	return sbuf_put(b, &c, 1);
}

static int is_c0_or_space(unsigned char c)
{
	return c <= 0x20;
}

static char ascii_lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* WHATWG path percent-encode set (url crate <= 2.5.8): C0, space, " # < > ? ` { }, >= 0x7F. */
static int in_path_set(unsigned char c)
{
	return c < 0x21 || c >= 0x7F || c == '"' || c == '#' || c == '<' || c == '>' || c == '?' ||
	       c == '`' || c == '{' || c == '}';
}

/* The url crate's SPECIAL_PATH_SEGMENT set used by Url::from_file_path: path set + / % \ */
static int in_segment_set(unsigned char c)
{
	return in_path_set(c) || c == '/' || c == '%' || c == '\\';
}

static int put_pct(struct sbuf *b, unsigned char c)
{
	char e[3] = { '%', hex_digits[c >> 4], hex_digits[c & 0xF] };

	return sbuf_put(b, e, 3);
}

/* Case-insensitive match of s[0..n) against lower-case lit. */
static int eq_lower(const char *s, size_t n, const char *lit)
{
	if (strlen(lit) != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (ascii_lower(s[i]) != lit[i])
			return 0;
	return 1;
}

static int is_single_dot(const char *s, size_t n)
{
	return eq_lower(s, n, ".") || eq_lower(s, n, "%2e");
}

static int is_double_dot(const char *s, size_t n)
{
	return eq_lower(s, n, "..") || eq_lower(s, n, ".%2e") || eq_lower(s, n, "%2e.") ||
	       eq_lower(s, n, "%2e%2e");
}

static int is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* WHATWG "Windows drive letter": ALPHA followed by ':' or '|' (normalized: ':' only). */
static int is_drive_letter(const char *s, size_t n, int normalized)
{
	return n == 2 && is_alpha(s[0]) && (s[1] == ':' || (!normalized && s[1] == '|'));
}


/*
 * Lexically normalises an absolute path: collapses '/' runs, drops '.', resolves
 * '..' (never above the root) and any trailing slash. In place; s starts with '/'.
 */
static void normalize_abs(char *s)
{
	char *w = s; /* write cursor; s[0] == '/' stays */
	const char *r = s;

	while (*r) {
		const char *seg;
		size_t n;

		while (*r == '/')
			r++;
		seg = r;
		while (*r && *r != '/')
			r++;
		n = (size_t)(r - seg);
		if (n == 0 || (n == 1 && seg[0] == '.'))
			continue;
		if (n == 2 && seg[0] == '.' && seg[1] == '.') {
			/* drop the last written "/segment" (nothing to drop at the root) */
			while (w > s && *--w != '/')
				;
			continue;
		}
		/* w points at the end of the output (or at s when only the root was written) */
		*w++ = '/';
		memmove(w, seg, n);
		w += n;
	}
	if (w == s)
		*w++ = '/';
	*w = '\0';
}

/* Appends one WHATWG path segment buffer (raw input bytes) to the serialized path sp. */
static int path_push(struct sbuf *sp, const char *seg, size_t n, int *first)
{
	int r;

	r = sbuf_putc(sp, '/');
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)seg[i];

		/* ("C|" stays as it is: the reference reads file:///C| as the path /C|) */
		r = in_path_set(c) ? put_pct(sp, c) : sbuf_putc(sp, (char)c);
		if (r < 0)
			return r;
	}
	*first = 0;
	return 0;
}

static void path_pop(struct sbuf *sp)
{
	char *last = sp->len ? strrchr(sp->p, '/') : NULL;

	if (!last)
		return;
	/* url quirk: a lone normalized drive letter segment is never popped. */
	if (last == sp->p && is_drive_letter(sp->p + 1, sp->len - 1, 0)) /* "C:" and "C|" stay */
		return;
	sp->len = (size_t)(last - sp->p);
	sp->p[sp->len] = '\0';
}

/* The WHATWG path state for a special URL over in[0..n), '/' and '\' both separators. */
static int parse_path(const char *in, size_t n, struct sbuf *sp)
{
	size_t i = 0;
	int first = 1, r;

	if (sbuf_reserve(sp, 0) < 0)
		return -ENOMEM;
	sp->p[0] = '\0';
	if (i < n && (in[i] == '/' || in[i] == '\\'))
		i++;
	for (;;) {
		size_t start = i, len;
		int at_end;

		while (i < n && in[i] != '/' && in[i] != '\\')
			i++;
		len = i - start;
		at_end = i >= n;
		if (is_double_dot(in + start, len)) {
			path_pop(sp);
			if (at_end)
				r = sbuf_putc(sp, '/');
			else
				r = 0;
		} else if (is_single_dot(in + start, len)) {
			r = at_end ? sbuf_putc(sp, '/') : 0;
		} else {
			r = path_push(sp, in + start, len, &first);
		}
		if (r < 0)
			return r;
		if (at_end)
			break;
		i++; /* skip the separator */
	}
	if (sp->len == 0)
		return sbuf_putc(sp, '/');
	return 0;
}

/* Percent-decodes s[0..n) into a new string; *ret_has_nul reports a decoded NUL. */
static char *pct_decode(const char *s, size_t n, int *ret_has_nul)
{
	char *out = malloc(n + 1), *w = out;

	if (!out)
		return NULL;
	*ret_has_nul = 0;
	for (size_t i = 0; i < n; i++) {
		int hi = -1, lo = -1;

		if (s[i] == '%' && i + 2 < n) {
			hi = unhexchar((unsigned char)s[i + 1]);
			lo = unhexchar((unsigned char)s[i + 2]);
		}
		if (hi >= 0 && lo >= 0) {
			*w = (char)(hi << 4 | lo);
			i += 2;
		} else {
			*w = s[i];
		}
		if (*w == '\0')
			*ret_has_nul = 1;
		w++;
	}
	*w = '\0';
	return out;
}

static int is_special_scheme(const char *s)
{
	return strcmp(s, "http") == 0 || strcmp(s, "https") == 0 || strcmp(s, "ws") == 0 ||
	       strcmp(s, "wss") == 0 || strcmp(s, "ftp") == 0;
}

/* Forbidden domain code points (WHATWG), checked on the percent-decoded host. */
static int forbidden_domain_char(unsigned char c)
{
	return c <= 0x20 || c == 0x7F || strchr("#%/:<>?@[\\]^|", c) != NULL;
}

/*
 * Parses the file host buffer h[0..n). Returns 0 with *ret_host NULL (local)
 * or a malloc'd serialized host, or a negative errno with *reterr_msg set.
 */
/*
 * WHATWG's IPv4 number: decimal, 0x/0X hex or 0-prefixed octal; "" (after a
 * bare 0x) is 0. Returns 0 with *ret, or -EINVAL; values beyond 2^32 saturate.
 */
static int ipv4_number(const char *s, size_t n, uint64_t *ret)
{
	unsigned base = 10;
	uint64_t v = 0;

	if (n == 0)
		return -EINVAL;
	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
		n -= 2;
	} else if (n >= 2 && s[0] == '0') {
		base = 8;
		s++;
		n--;
	}
	for (size_t i = 0; i < n; i++) {
		int d = s[i] >= '0' && s[i] <= '9' ? s[i] - '0'
			: s[i] >= 'a' && s[i] <= 'f' ? s[i] - 'a' + 10 : 99;

		if ((unsigned)d >= base)
			return -EINVAL;
		v = v * base + (unsigned)d;
		if (v > UINT32_MAX)
			v = (uint64_t)UINT32_MAX + 1; /* too big whatever follows */
	}
	*ret = v;
	return 0;
}

/*
 * A host that ends in a number is an IPv4 address (WHATWG URL): parsed and
 * re-serialised dotted (1.2.3 -> 1.2.0.3, 0x7f.1 -> 127.0.0.1) in *host, or
 * -EINVAL ("invalid IPv4 address"). Other hosts are left alone. The host is
 * lower-case here.
 */
static int ipv4_host(char **host)
{
	const char *h = *host, *parts[5];
	size_t lens[5], np = 0, n = strlen(h);
	uint64_t v[4], addr = 0, last;
	char out[16];

	if (n && h[n - 1] == '.')
		n--; /* one trailing dot is dropped */
	if (n == 0)
		return 0;
	/* ends in a number: the last part is all digits, or an IPv4 number */
	{
		const char *l = h + n;
		size_t ll = 0;
		bool digits = true;

		while (l > h && l[-1] != '.')
			l--, ll++;
		for (size_t i = 0; i < ll; i++)
			digits = digits && l[i] >= '0' && l[i] <= '9';
		if (!(ll && digits) && ipv4_number(l, ll, &last) < 0)
			return 0;
	}
	for (const char *p = h, *e = h + n;; ) {
		const char *d = memchr(p, '.', (size_t)(e - p));

		if (np == 4)
			return -EINVAL;
		parts[np] = p;
		lens[np++] = d ? (size_t)(d - p) : (size_t)(e - p);
		if (!d)
			break;
		p = d + 1;
	}
	for (size_t i = 0; i < np; i++) {
		if (ipv4_number(parts[i], lens[i], &v[i]) < 0)
			return -EINVAL;
		if (i < np - 1 && v[i] > 255)
			return -EINVAL;
	}
	if (v[np - 1] >= (uint64_t)1 << (8 * (5 - np)))
		return -EINVAL;
	addr = v[np - 1];
	for (size_t i = 0; i < np - 1; i++)
		addr += v[i] << (8 * (3 - i));
	snprintf(out, sizeof(out), "%u.%u.%u.%u", (unsigned)(addr >> 24), (unsigned)(addr >> 16 & 255),
		 (unsigned)(addr >> 8 & 255), (unsigned)(addr & 255));
	{
		char *dup = strdup(out);

		if (!dup)
			return -ENOMEM;
		free(*host);
		*host = dup;
	}
	return 0;
}

static int parse_host(const char *h, size_t n, char **ret_host, char **reterr_msg)
{
	bool v6 = n > 0 && h[0] == '[';
	char *host;
	int has_nul, r;

	*ret_host = NULL;
	if (n == 0)
		return 0;
	if (v6) {
		struct in6_addr a;
		char lit[INET6_ADDRSTRLEN + 2], tmp[INET6_ADDRSTRLEN];
		char inner[64];

		if (h[n - 1] != ']' || n - 2 >= sizeof(inner))
			return errmsg_set(reterr_msg, -EINVAL, "invalid URI: invalid IPv6 address");
		memcpy(inner, h + 1, n - 2);
		inner[n - 2] = '\0';
		if (inet_pton(AF_INET6, inner, &a) != 1 || !inet_ntop(AF_INET6, &a, tmp, sizeof(tmp)))
			return errmsg_set(reterr_msg, -EINVAL, "invalid URI: invalid IPv6 address");
		(void)snprintf(lit, sizeof(lit), "[%s]", tmp);
		host = strdup(lit);
		if (!host)
			return -ENOMEM;
		*ret_host = host;
		return 0;
	}

	host = pct_decode(h, n, &has_nul);
	if (!host)
		return -ENOMEM;
	/*
	 * The url crate runs IDNA (with the URL deny list) before its own check
	 * of forbidden code points, so those fail as an IDN error.
	 */
	for (char *c = host; *c; c++) {
		*c = ascii_lower(*c);
		if (forbidden_domain_char((unsigned char)*c)) {
			free(host);
			return errmsg_set(reterr_msg, -EINVAL,
					  "invalid URI: invalid international domain name");
		}
	}
	if (has_nul || host[0] == '\0') {
		free(host);
		return errmsg_set(reterr_msg, -EINVAL,
				  "invalid URI: invalid international domain name");
	}
	if (strcmp(host, "localhost") == 0) {
		free(host);
		return 0;
	}
	r = ipv4_host(&host);
	if (r < 0) {
		free(host);
		return r == -EINVAL ? errmsg_set(reterr_msg, r, "invalid URI: invalid IPv4 address") : r;
	}
	*ret_host = host;
	return 0;
}

static int native_to_path(const char *uri, char **ret_path)
{
	char *p = strdup(uri);

	if (!p)
		return -ENOMEM;
	normalize_abs(p);
	*ret_path = p;
	return 0;
}

/* WHATWG pre-processing: trim C0/space at both ends, drop every tab and newline. */
static int preprocess(const char *uri, struct sbuf *in)
{
	const char *s = uri, *e = uri + strlen(uri);
	int r;

	while (s < e && is_c0_or_space((unsigned char)*s))
		s++;
	while (e > s && is_c0_or_space((unsigned char)e[-1]))
		e--;
	r = sbuf_reserve(in, (size_t)(e - s));
	if (r < 0)
		return r;
	for (; s < e; s++)
		if (*s != '\t' && *s != '\n' && *s != '\r')
			in->p[in->len++] = *s;
	in->p[in->len] = '\0';
	return 0;
}

/*
 * scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":", lowercased into
 * *ret_scheme. Returns 0, -ENOMEM, or -EINVAL (no scheme: a relative URL).
 */
static int parse_scheme(const struct sbuf *in, char **ret_scheme, char **reterr_msg)
{
	size_t slen = 0;
	char *scheme;

	if (in->len > 0 && is_alpha(in->p[0])) {
		slen = 1;
		while (slen < in->len && (is_alpha(in->p[slen]) || (in->p[slen] >= '0' && in->p[slen] <= '9') ||
					  in->p[slen] == '+' || in->p[slen] == '-' || in->p[slen] == '.'))
			slen++;
		if (slen >= in->len || in->p[slen] != ':')
			slen = 0;
	}
	if (slen == 0)
		return errmsg_set(reterr_msg, -EINVAL, "invalid URI: relative URL without a base");
	scheme = strndup(in->p, slen);
	if (!scheme)
		return -ENOMEM;
	for (char *c = scheme; *c; c++)
		*c = ascii_lower(*c);
	*ret_scheme = scheme;
	return 0;
}

/* The error for a scheme other than file:, in the url crate's order. */
static int refuse_scheme(const char *scheme, const char *rest, char **reterr_msg)
{
	if (is_special_scheme(scheme)) {
		/* special schemes need a non-empty host; the url crate fails before our scheme check */
		const char *h = rest;

		while (*h == '/' || *h == '\\')
			h++;
		if (*h == '\0' || *h == '?' || *h == '#')
			return errmsg_set(reterr_msg, -EINVAL, "invalid URI: empty host");
	}
	return errmsg_set(reterr_msg, -EINVAL, "unsupported path URI scheme `%s`", scheme);
}

/*
 * The file host state: "//" then everything up to the next separator is
 * the host (into *host), unless it is a drive letter (the url crate's
 * quirk: file://C:/x is the path /C:/x). *path_start: where the path
 * begins. Returns 0 or -errno with *reterr_msg.
 */
static int file_host(const char *rest, const char *hier_end, char **host, const char **path_start,
		     char **reterr_msg)
{
	const char *h = rest + 2, *he = h;

	*path_start = rest;
	if (!(hier_end - rest >= 2 && (rest[0] == '/' || rest[0] == '\\') &&
	      (rest[1] == '/' || rest[1] == '\\')))
		return 0;
	while (he < hier_end && *he != '/' && *he != '\\')
		he++;
	if (is_drive_letter(h, (size_t)(he - h), 0)) {
		*path_start = h;
		return 0;
	}
	*path_start = he;
	return parse_host(h, (size_t)(he - h), host, reterr_msg);
}

/*
 * The parsed URL (path sp, host, whether a query or fragment followed) as
 * a local path, or the reference's refusal. Returns 0 with *ret_path, or
 * -errno with *reterr_msg.
 */
static int local_path(struct sbuf *sp, const char *host, bool query, bool fragment,
		      char **ret_path, char **reterr_msg)
{
	char *path;
	int has_nul;

	if (query)
		return errmsg_set(reterr_msg, -EINVAL,
				  "query parameters are not allowed in path URIs");
	if (fragment)
		return errmsg_set(reterr_msg, -EINVAL, "fragments are not allowed in path URIs");
	/*
	 * A Windows drive letter ("C:", not "C|") as the first segment of the
	 * parsed path: the reference refuses it on Linux, as a remote host.
	 */
	if (!host && sp->len >= 3 && is_alpha(sp->p[1]) && sp->p[2] == ':' &&
	    (sp->len == 3 || sp->p[3] == '/')) {
		sp->p[1] = (char)(sp->p[1] & ~0x20); /* shown upper-case */
		return errmsg_set(reterr_msg, -EREMOTE, "'file://%s' is invalid on 'linux'", sp->p);
	}
	path = pct_decode(sp->p, sp->len, &has_nul);
	if (!path)
		return -ENOMEM;
	if (has_nul || host) {
		free(path);
		/* The reference quotes the serialized URL, e.g. 'file://otherhost/a' is invalid on 'linux'. */
		return errmsg_set(reterr_msg, has_nul ? -EINVAL : -EREMOTE,
				  "'file://%s%s' is invalid on 'linux'", host ? host : "", sp->p);
	}
	normalize_abs(path);
	*ret_path = path;
	return 0;
}

int file_uri_to_path(const char *uri, bool allow_native, char **ret_path, char **reterr_msg)
{
	struct sbuf in = {}, sp = {};
	char *host = NULL, *scheme = NULL;
	const char *rest, *hier_end, *q, *f, *path_start;
	int r;

	if (allow_native && uri[0] == '/' && uri[1] != '/')
		return native_to_path(uri, ret_path);

	r = preprocess(uri, &in);
	if (r < 0)
		goto out;
	r = parse_scheme(&in, &scheme, reterr_msg);
	if (r < 0)
		goto out;
	rest = in.p + strlen(scheme) + 1;
	if (strcmp(scheme, "file") != 0) {
		r = refuse_scheme(scheme, rest, reterr_msg);
		goto out;
	}

	/* Query starts at the first '?', fragment at the first '#' (a '?' after '#' is fragment). */
	f = strchr(rest, '#');
	q = strchr(rest, '?');
	if (q && f && q > f)
		q = NULL;
	hier_end = q ? q : (f ? f : rest + strlen(rest));
	r = file_host(rest, hier_end, &host, &path_start, reterr_msg);
	if (r < 0)
		goto out;
	r = parse_path(path_start, (size_t)(hier_end - path_start), &sp);
	if (r < 0)
		goto out;
	r = local_path(&sp, host, q != NULL, f != NULL, ret_path, reterr_msg);
out:
	free(in.p);
	free(sp.p);
	free(host);
	free(scheme);
	return r;
}

char *file_uri_from_path(const char *path)
{
	struct sbuf b = {};
	const char *p = path;
	int any = 0;

	if (path[0] != '/') {
		errno = EINVAL;
		return NULL;
	}
	if (sbuf_put(&b, "file://", 7) < 0)
		goto oom;
	/* Like Rust's Path::components(): empty and "." components vanish, ".." stays. */
	while (*p) {
		const char *seg;
		size_t n;

		while (*p == '/')
			p++;
		seg = p;
		while (*p && *p != '/')
			p++;
		n = (size_t)(p - seg);
		if (n == 0 || (n == 1 && seg[0] == '.'))
			continue;
		any = 1;
		if (sbuf_putc(&b, '/') < 0)
			goto oom;
		for (size_t i = 0; i < n; i++) {
			unsigned char c = (unsigned char)seg[i];

			if ((in_segment_set(c) ? put_pct(&b, c) : sbuf_putc(&b, (char)c)) < 0)
				goto oom;
		}
	}
	if (!any && sbuf_putc(&b, '/') < 0)
		goto oom;
	return b.p;
oom:
	free(b.p);
	errno = ENOMEM;
	return NULL;
}

int file_uri_to_pathn(const char *uri, size_t len, bool allow_native, char **ret_path,
		      char **reterr_msg)
{
	const char *s = uri, *e = uri + len;
	char *copy, *o;
	int r;

	if (!memchr(uri, 0, len))
		return file_uri_to_path(uri, allow_native, ret_path, reterr_msg);
	/* Leading and trailing C0 controls (NULs too) are trimmed, as the URL parser does. */
	while (s < e && is_c0_or_space((unsigned char)*s))
		s++;
	while (e > s && is_c0_or_space((unsigned char)e[-1]))
		e--;
	if (allow_native && s < e && s[0] == '/' && (e - s < 2 || s[1] != '/') && memchr(s, 0, (size_t)(e - s)))
		return errmsg_set(reterr_msg, -EINVAL, "invalid URI: path contains a NUL byte");
	/* Inside, a NUL is percent-encoded like any C0 control of a path. */
	copy = malloc(3 * (size_t)(e - s) + 1);
	if (!copy)
		return -ENOMEM;
	for (o = copy; s < e; s++) {
		if (*s) {
			*o++ = *s;
		} else {
			memcpy(o, "%00", 3);
			o += 3;
		}
	}
	*o = 0;
	r = file_uri_to_path(copy, allow_native, ret_path, reterr_msg);
	free(copy);
	return r;
}
