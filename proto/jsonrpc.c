/* SPDX-License-Identifier: MIT */
/*
 * JSON-RPC envelope decoding with jansson, classified the way the reference's
 * serde untagged enum does it.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hex.h"
#include "json-check.h"
#include "jsonrpc.h"

unsigned jrpc_nesting_depth(const char *buf, size_t len, unsigned limit, size_t *ret_col)
{
	unsigned depth = 0, max = 0;
	bool in_str = false, esc = false;

	for (size_t i = 0; i < len; i++) {
		char c = buf[i];

		if (in_str) {
			if (esc)
				esc = false;
			else if (c == '\\')
				esc = true;
			else if (c == '"')
				in_str = false;
			continue;
		}
		if (c == '"') {
			in_str = true;
		} else if (c == '[' || c == '{') {
			depth++;
			if (depth > max) {
				max = depth;
				if (max > limit) {
					if (ret_col)
						*ret_col = i + 1;
					return max;
				}
			}
		} else if ((c == ']' || c == '}') && depth > 0) {
			depth--;
		}
	}
	return max;
}

/*
 * Integers beyond 63 bits.
 *
 * serde_json reads a non-negative integer below 2^64 as a u64, and any other
 * integer that does not fit 64 bits as an f64; jansson's integers are
 * long long and it refuses the whole text on an overflow. So, when it does,
 * the text is rewritten: an integer in [2^63, 2^64) becomes the negative
 * literal of its two's-complement value (its bits, read as a long long),
 * and is remembered; any other oversized integer gets a ".0" and is read as
 * the double serde reads. After parsing, the json_t of each remembered value
 * is registered, so that jrpc_u64() gives its exact value while the message
 * lives. A value that also appears in the text as a genuine negative literal
 * is not rewritten that way (it becomes a double): the registry stays exact.
 */
#define BIG_MAX 64

static struct {
	const json_t *v[BIG_MAX];
	size_t n;
} big_registry;

/*
 * Reads the integer token digits[0..n) (no sign). Returns 0 when it fits in a
 * u64 (*ret set), 1 when larger.
 */
static int digits_u64(const char *d, size_t n, uint64_t *ret)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned x = (unsigned)(d[i] - '0');

		if (v > (UINT64_MAX - x) / 10)
			return 1;
		v = v * 10 + x;
	}
	*ret = v;
	return 0;
}

struct num_tok {
	size_t start, end; /* [start, end) in the text, sign included */
	bool neg, integer;
};

/* Next number token outside strings at or after *pos; false at the end. */
static bool next_number(const char *buf, size_t len, size_t *pos, struct num_tok *t)
{
	size_t i = *pos;

	while (i < len) {
		if (buf[i] == '"') {
			for (i++; i < len && buf[i] != '"'; i += buf[i] == '\\' ? 2 : 1)
				;
			i++;
			continue;
		}
		if (buf[i] == '-' || (buf[i] >= '0' && buf[i] <= '9')) {
			t->start = i;
			t->neg = buf[i] == '-';
			t->integer = true;
			if (t->neg)
				i++;
			while (i < len && ((buf[i] >= '0' && buf[i] <= '9') || buf[i] == '.' || buf[i] == 'e' ||
					   buf[i] == 'E' || buf[i] == '+' || buf[i] == '-')) {
				if (buf[i] == '.' || buf[i] == 'e' || buf[i] == 'E')
					t->integer = false;
				i++;
			}
			t->end = i;
			*pos = i;
			return true;
		}
		i++;
	}
	*pos = len;
	return false;
}

/* The two's-complement value of a token, if it is an integer in [2^63, 2^64). */
static bool token_is_big_u64(const char *buf, const struct num_tok *t, uint64_t *ret)
{
	uint64_t v;

	if (t->neg || !t->integer || digits_u64(buf + t->start, t->end - t->start, &v) != 0)
		return false;
	if (v <= (uint64_t)INT64_MAX)
		return false;
	*ret = v;
	return true;
}

/*
 * The first BIG_MAX integers in [2^63, 2^64) of the text, and for each
 * whether its long long also stands in the text as a genuine negative
 * literal (then it is read as a double instead). Two linear passes, whatever
 * the number of tokens.
 */
static size_t find_bigs(const char *buf, size_t len, uint64_t *vals, bool *collides)
{
	struct num_tok t;
	size_t pos = 0, n = 0;
	uint64_t v;

	while (n < BIG_MAX && next_number(buf, len, &pos, &t))
		if (token_is_big_u64(buf, &t, &v)) {
			collides[n] = false;
			vals[n++] = v;
		}
	for (pos = 0; n && next_number(buf, len, &pos, &t);) {
		if (!t.neg || !t.integer || digits_u64(buf + t.start + 1, t.end - t.start - 1, &v) != 0)
			continue;
		for (size_t i = 0; i < n; i++)
			if ((uint64_t)0 - vals[i] == v)
				collides[i] = true;
	}
	return n;
}

/* Whether the number token reads as an infinite double (1e999, 400 digits). */
static bool token_is_infinite(const char *buf, const struct num_tok *t)
{
	size_t n = t->end - t->start;
	char small[64], *text = n < sizeof(small) ? small : malloc(n + 1);
	bool inf;

	if (!text)
		return n > 310; /* OOM: only a token this long can be infinite; decide by length */
	memcpy(text, buf + t->start, n);
	text[n] = 0;
	inf = isinf(strtod(text, NULL));
	if (text != small)
		free(text);
	return inf;
}

/*
 * The detail for a request id that is no RequestId: an integer token beyond
 * 64 bits that fits 128 bits is reported as the reference's number reader
 * sees it; anything else does not match the enum.
 */
static int cmp_digits(const char *a, size_t na, const char *b)
{
	size_t nb = strlen(b);

	if (na != nb)
		return na < nb ? -1 : 1;
	return memcmp(a, b, na);
}

static size_t skip_string(const char *buf, size_t len, size_t i)
{
	for (i++; i < len && buf[i] != '"'; i += buf[i] == '\\' ? 2 : 1)
		;
	return i + 1;
}

static void id_error(const char *buf, size_t len, char *err, size_t errsz)
{
	static const char generic[] = "data did not match any variant of untagged enum RequestId";
	size_t i = 0, vs, ve;
	int depth = 0;

	snprintf(err, errsz, "%s", generic);
	/* The top-level member "id" (the text is valid JSON without repeated keys). */
	while (i < len && buf[i] != '{')
		i++;
	for (i++; i < len;) {
		size_t ks, ke;

		while (i < len && buf[i] != '"')
			i++;
		if (i >= len)
			return;
		ks = i + 1;
		i = skip_string(buf, len, i);
		ke = i - 1;
		while (i < len && buf[i] != ':')
			i++;
		for (i++; i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r');)
			i++;
		vs = i;
		/* Skip the value. */
		depth = 0;
		while (i < len) {
			char c = buf[i];

			if (c == '"') {
				i = skip_string(buf, len, i);
				if (!depth)
					break;
				continue;
			}
			if (c == '{' || c == '[')
				depth++;
			else if (c == '}' || c == ']') {
				if (!depth)
					break;
				depth--;
			} else if (c == ',' && !depth)
				break;
			i++;
			if (!depth && (c == '}' || c == ']'))
				break;
		}
		ve = i;
		while (ve > vs && (buf[ve - 1] == ' ' || buf[ve - 1] == '\t' || buf[ve - 1] == '\n' ||
				   buf[ve - 1] == '\r'))
			ve--;
		if (ke - ks == 2 && memcmp(buf + ks, "id", 2) == 0) {
			bool neg = buf[vs] == '-';
			const char *d = buf + vs + neg;
			size_t nd = ve - vs - neg;

			for (size_t k = 0; k < nd; k++)
				if (d[k] < '0' || d[k] > '9')
					return;
			if (!neg && cmp_digits(d, nd, "18446744073709551615") > 0 &&
			    cmp_digits(d, nd, "340282366920938463463374607431768211455") <= 0)
				snprintf(err, errsz, "invalid type: integer `%.*s` as u128, expected any value",
					 (int)(ve - vs), buf + vs);
			else if (neg && cmp_digits(d, nd, "9223372036854775808") > 0 &&
				 cmp_digits(d, nd, "170141183460469231731687303715884105728") <= 0)
				snprintf(err, errsz, "invalid type: integer `%.*s` as i128, expected any value",
					 (int)(ve - vs), buf + vs);
			return;
		}
		if (i < len && buf[i] == ',')
			i++;
		else
			return;
	}
}

/* The big literals of one text (find_bigs) and those registered so far. */
struct big_scan {
	uint64_t found[BIG_MAX];
	bool collides[BIG_MAX];
	size_t n_found, next_big;
	uint64_t *bigs;
	size_t *n_bigs;
};

/*
 * What number token t becomes: its replacement in rep (returns its
 * length), *over when it is to become a float (".0" appended), or neither
 * (returns 0: kept as it is).
 */
static size_t token_replacement(struct big_scan *bs, const char *buf, const struct num_tok *t,
				char *rep, size_t repsz, int *over)
{
	uint64_t v = 0, mag = 0;
	size_t ds;

	*over = 0;
	if (!t->integer) {
		/* Beyond f64 (1e999): a value serde still reads (as a number no field takes). */
		if (!token_is_infinite(buf, t))
			return 0;
		return (size_t)snprintf(rep, repsz, "%s1e308", t->neg ? "-" : "");
	}
	if (token_is_infinite(buf, t))
		return (size_t)snprintf(rep, repsz, "%s1e308", t->neg ? "-" : "");
	if (token_is_big_u64(buf, t, &v)) {
		mag = (uint64_t)0 - v; /* 2^64 - v: the magnitude of its long long */
		/* The i-th big literal of the text is found[i] (find_bigs). */
		if (bs->next_big < bs->n_found && !bs->collides[bs->next_big++]) {
			bs->bigs[(*bs->n_bigs)++] = v;
			return (size_t)snprintf(rep, repsz, "-%llu", (unsigned long long)mag);
		}
		*over = 1;
		return 0;
	}
	ds = t->start + (t->neg ? 1 : 0);
	*over = digits_u64(buf + ds, t->end - ds, &mag);
	if (!*over && t->neg && mag > (uint64_t)INT64_MAX + 1)
		*over = 1;
	if (!*over && !t->neg && mag > (uint64_t)INT64_MAX)
		*over = 1; /* already handled above unless the registry is full */
	return 0;
}

/* Room for need bytes in *out (cap). Returns false (and frees *out) without memory. */
static bool out_reserve(char **out, size_t *cap, size_t need, size_t grow_to)
{
	char *n;

	if (need <= *cap)
		return true;
	n = realloc(*out, grow_to);
	if (!n) {
		free(*out);
		return false;
	}
	*out = n;
	*cap = grow_to;
	return true;
}

/* The rewritten text (see above), NUL-terminated, with its length; NULL on OOM. */
static char *rewrite_big_integers(const char *buf, size_t len, size_t *ret_len, uint64_t *bigs,
				  size_t *n_bigs)
{
	size_t cap = len + 1, o = 0, pos = 0, copied = 0;
	char *out = malloc(cap);
	struct big_scan bs = { .bigs = bigs, .n_bigs = n_bigs };
	struct num_tok t;

	*n_bigs = 0;
	bs.n_found = find_bigs(buf, len, bs.found, bs.collides);
	while (out && next_number(buf, len, &pos, &t)) {
		char rep[32];
		int over;
		size_t rl = token_replacement(&bs, buf, &t, rep, sizeof(rep), &over), need;

		if (!rl && !over)
			continue;
		/* Copy what precedes the token, then the replacement. */
		need = o + (t.start - copied) + (t.end - t.start) + 32;
		if (!out_reserve(&out, &cap, need, need * 2))
			return NULL;
		memcpy(out + o, buf + copied, t.start - copied);
		o += t.start - copied;
		if (rl) {
			memcpy(out + o, rep, rl);
			o += rl;
		} else {
			memcpy(out + o, buf + t.start, t.end - t.start);
			o += t.end - t.start;
			memcpy(out + o, ".0", 2);
			o += 2;
		}
		copied = t.end;
	}
	if (!out || !out_reserve(&out, &cap, o + (len - copied) + 1, o + (len - copied) + 1))
		return NULL;
	memcpy(out + o, buf + copied, len - copied);
	o += len - copied;
	out[o] = 0;
	*ret_len = o;
	return out;
}

/* Registers every integer of the tree whose bits are a remembered big u64. */
static void register_bigs(const json_t *v, const uint64_t *bigs, size_t n_bigs)
{
	const char *k;
	json_t *e;
	size_t i;

	if (json_is_integer(v)) {
		uint64_t bits = (uint64_t)json_integer_value(v);

		for (i = 0; i < n_bigs; i++)
			if (bits == bigs[i] && big_registry.n < BIG_MAX) {
				big_registry.v[big_registry.n++] = v;
				break;
			}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, e) register_bigs(e, bigs, n_bigs);
	} else if (json_is_object(v)) {
		json_object_foreach((json_t *)v, k, e) register_bigs(e, bigs, n_bigs);
	}
}

static bool is_registered_big(const json_t *v)
{
	for (size_t i = 0; i < big_registry.n; i++)
		if (big_registry.v[i] == v)
			return true;
	return false;
}

static bool big_numbers; /* the last parsed message's text was rewritten (load) */

bool jrpc_had_big_numbers(void)
{
	return big_numbers;
}

int jrpc_u64(const json_t *v, uint64_t *ret)
{
	if (!json_is_integer(v))
		return -EINVAL;
	if (json_integer_value(v) >= 0 || is_registered_big(v)) {
		*ret = (uint64_t)json_integer_value(v);
		return 0;
	}
	return -ERANGE;
}

json_t *jrpc_copy_clamped(const json_t *v)
{
	const char *k;
	size_t i, klen;
	json_t *e, *c;

	if (json_is_integer(v) && is_registered_big(v))
		return json_integer(INT64_MAX);
	if (json_is_array(v)) {
		c = json_array();
		json_array_foreach((json_t *)v, i, e)
			if (!c || json_array_append_new(c, jrpc_copy_clamped(e)) < 0) {
				json_decref(c);
				return NULL;
			}
		return c;
	}
	if (json_is_object(v)) {
		c = json_object();
		json_object_keylen_foreach((json_t *)v, k, klen, e)
			if (!c || json_object_setn_new_nocheck(c, k, klen, jrpc_copy_clamped(e)) < 0) {
				json_decref(c);
				return NULL;
			}
		return c;
	}
	return json_deep_copy(v);
}

void jrpc_integer_text(const json_t *v, char *buf, size_t size)
{
	if (is_registered_big(v))
		snprintf(buf, size, "%llu", (unsigned long long)(uint64_t)json_integer_value(v));
	else
		snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
}

/*
 * Object keys holding U+0000.
 *
 * serde reads "\u0000" in a key like any other character (an unknown field is
 * ignored, a map key keeps it), but jansson's parser refuses such a key and
 * with it the whole message. jansson can store these keys (json_object_setn),
 * it only cannot parse them. So when the parser says so, every "\u0000" escape
 * inside a key is swapped for the escape of a private-use character that
 * appears nowhere in the text (same length, so later error columns stay
 * right), the text is parsed, and the marked keys are put back with their
 * NUL bytes. Handlers compare keys with jrpc_key_is(), which sees the whole
 * key, and an env map with such a key is refused as the reference refuses it.
 */
#define PUA_FIRST 0xE000u
#define PUA_COUNT 0x1900u /* U+E000..U+F8FF */

/* Returns a private-use code point absent from buf (raw or escaped), or 0. */
static unsigned pick_marker(const char *buf, size_t len)
{
	static const size_t words = PUA_COUNT / 64;
	uint64_t seen[PUA_COUNT / 64] = { 0 };
	const unsigned char *u = (const unsigned char *)buf;

	for (size_t i = 0; i < len; i++) {
		unsigned cp = 0x110000;

		if (u[i] == '\\' && i + 5 < len && buf[i + 1] == 'u') {
			int h[4];

			cp = 0;
			for (int j = 0; j < 4; j++) {
				h[j] = unhexchar((unsigned char)buf[i + 2 + j]);
				cp = cp << 4 | (unsigned)(h[j] < 0 ? 0 : h[j]);
			}
			if (h[0] < 0 || h[1] < 0 || h[2] < 0 || h[3] < 0)
				cp = 0x110000;
		}
		if (u[i] == '\\') {
			i++; /* the escaped character opens nothing */
		} else if ((u[i] & 0xF0) == 0xE0 && i + 2 < len) {
			cp = (u[i] & 0x0Fu) << 12 | (u[i + 1] & 0x3Fu) << 6 | (u[i + 2] & 0x3Fu);
		}
		if (cp >= PUA_FIRST && cp < PUA_FIRST + PUA_COUNT)
			seen[(cp - PUA_FIRST) / 64] |= 1ull << ((cp - PUA_FIRST) % 64);
	}
	for (size_t w = 0; w < words; w++)
		if (~seen[w])
			return PUA_FIRST + (unsigned)(w * 64 + (size_t)__builtin_ctzll(~seen[w]));
	return 0;
}

/*
 * Copies buf with "\u0000" escapes inside object keys replaced by the
 * escape of the marker. The text already passed jcheck_validate, so strings are
 * well formed. Returns NULL on OOM.
 */
static char *mark_nul_keys(const char *buf, size_t len, unsigned marker)
{
	char *out = malloc(len + 1), esc[16];
	size_t i = 0;

	if (!out)
		return NULL;
	memcpy(out, buf, len);
	out[len] = 0;
	snprintf(esc, sizeof(esc), "\\u%04X", marker);
	while (i < len) {
		size_t start, end, j;

		if (buf[i] != '"') {
			i++;
			continue;
		}
		start = ++i;
		while (i < len && buf[i] != '"')
			i += buf[i] == '\\' ? 2 : 1;
		end = i++;
		j = i;
		while (j < len && (buf[j] == ' ' || buf[j] == '\t' || buf[j] == '\n' || buf[j] == '\r'))
			j++;
		if (j >= len || buf[j] != ':')
			continue;
		for (size_t k = start; k + 6 <= end; k++) {
			if (buf[k] != '\\')
				continue;
			if (memcmp(buf + k, "\\u0000", 6) == 0)
				memcpy(out + k, esc, 6);
			k++; /* skip the escaped character */
		}
	}
	return out;
}

/* Puts NUL bytes back in keys that hold the marker's UTF-8, recursively. */
static json_t *unmark_nul_keys(json_t *v, const char mark[3])
{
	const char *k;
	size_t i, klen;
	json_t *e;

	if (json_is_array(v)) {
		json_array_foreach(v, i, e) json_array_set_new(v, i, unmark_nul_keys(json_incref(e), mark));
		return v;
	}
	if (!json_is_object(v))
		return v;

	bool marked = false;

	json_object_keylen_foreach(v, k, klen, e) {
		json_object_setn_new_nocheck(v, k, klen, unmark_nul_keys(json_incref(e), mark));
		if (memmem(k, klen, mark, 3))
			marked = true;
	}
	if (!marked)
		return v;

	/* Rebuilt in order so handlers still see members as they came. */
	json_t *copy = json_object();

	if (!copy) {
		json_decref(v);
		return NULL;
	}
	json_object_keylen_foreach(v, k, klen, e) {
		char *nk = malloc(klen + 1);
		size_t n = 0;

		if (!nk) {
			json_decref(copy);
			json_decref(v);
			return NULL;
		}
		for (size_t p = 0; p < klen;) {
			if (p + 3 <= klen && memcmp(k + p, mark, 3) == 0) {
				nk[n++] = 0;
				p += 3;
			} else {
				nk[n++] = k[p++];
			}
		}
		/* Two keys may now be equal; the later one wins, as in a serde map. */
		if (json_object_setn_nocheck(copy, nk, n, e) < 0) {
			free(nk);
			json_decref(copy);
			json_decref(v);
			return NULL;
		}
		free(nk);
	}
	json_decref(v);
	return copy;
}

static json_t *load_marked(const char *buf, size_t len, size_t flags, json_error_t *jerr)
{
	unsigned marker = pick_marker(buf, len);
	char mark[3], *text;
	json_t *root;

	if (!marker)
		return NULL; /* every candidate used: keep jansson's error */
	text = mark_nul_keys(buf, len, marker);
	if (!text)
		return NULL;
	mark[0] = (char)(0xE0 | marker >> 12);
	mark[1] = (char)(0x80 | (marker >> 6 & 0x3F));
	mark[2] = (char)(0x80 | (marker & 0x3F));
	root = json_loadb(text, len, flags, jerr);
	free(text);
	return root ? unmark_nul_keys(root, mark) : NULL;
}

static json_t *load_text(const char *buf, size_t len, bool nul_keys, json_error_t *jerr)
{
	const size_t flags = JSON_DECODE_ANY | JSON_ALLOW_NUL;

	return nul_keys ? load_marked(buf, len, flags, jerr) : json_loadb(buf, len, flags, jerr);
}

static json_t *load(const char *buf, size_t len, json_error_t *jerr)
{
	uint64_t bigs[BIG_MAX];
	size_t n_bigs = 0, rlen;
	char *rewritten = NULL;
	json_t *root = NULL;
	bool nul_keys = false;

	for (int attempt = 0; attempt < 3 && !root; attempt++) {
		root = rewritten ? load_text(rewritten, rlen, nul_keys, jerr)
				 : load_text(buf, len, nul_keys, jerr);
		if (root)
			break;
		if (json_error_code(jerr) == json_error_null_byte_in_key && !nul_keys) {
			nul_keys = true;
		} else if (json_error_code(jerr) == json_error_numeric_overflow && !rewritten) {
			rewritten = rewrite_big_integers(buf, len, &rlen, bigs, &n_bigs);
			if (!rewritten)
				break;
		} else {
			break;
		}
	}
	big_numbers = root && rewritten;
	free(rewritten);
	if (root && n_bigs)
		register_bigs(root, bigs, n_bigs);
	return root;
}

size_t jrpc_key_len(const char *key)
{
	return json_object_iter_key_len(json_object_key_to_iter(key));
}

bool jrpc_key_is(const char *key, const char *name)
{
	size_t n = strlen(name);

	return jrpc_key_len(key) == n && memcmp(key, name, n) == 0;
}

static bool id_is_valid(const json_t *id)
{
	/* RequestId is i64 or a string: an integer from 2^63 up is neither. */
	return (json_is_integer(id) && !is_registered_big(id)) || json_is_string(id);
}

int jrpc_parse(const char *buf, size_t len, unsigned max_depth, struct jrpc_msg *ret)
{
	json_error_t jerr;
	json_t *root, *method, *id;
	int r;

	memset(ret, 0, sizeof(*ret));
	ret->kind = JRPC_INVALID;
	big_registry.n = 0;
	big_numbers = false;

	/* Syntax errors, nesting and repeated keys with the reference's text and position. */
	r = jcheck_validate_message(buf, len, max_depth, ret->error, sizeof(ret->error),
				    &ret->error_len);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return 0;

	root = load(buf, len, &jerr);
	if (!root) {
		snprintf(ret->error, sizeof(ret->error), "%s at line %d column %d", jerr.text,
			 jerr.line, jerr.column);
		return 0;
	}
	ret->root = root;

	if (!json_is_object(root)) {
		snprintf(ret->error, sizeof(ret->error), "expected a JSON-RPC object");
		return 0;
	}

	id = json_object_get(root, "id");
	method = json_object_get(root, "method");
	if (method) {
		if (!json_is_string(method)) {
			/* serde's message for the method member (a String). */
			snprintf(ret->error, sizeof(ret->error), "invalid type: %s, expected a string",
				 json_is_null(method) ? "null" : json_is_true(method) ? "boolean `true`"
				 : json_is_false(method) ? "boolean `false`" : json_is_number(method) ? "number"
				 : json_is_array(method) ? "sequence" : "map");
			return 0;
		}
		ret->method = json_string_value(method);
		ret->method_len = json_string_length(method);
		ret->params = json_object_get(root, "params");
		if (!id) {
			ret->kind = JRPC_NOTIFICATION;
			return 0;
		}
		if (!id_is_valid(id)) {
			id_error(buf, len, ret->error, sizeof(ret->error));
			return 0;
		}
		ret->id = id;
		ret->kind = JRPC_REQUEST;
		return 0;
	}

	if (json_object_get(root, "result") || json_object_get(root, "error")) {
		ret->kind = JRPC_RESPONSE;
		return 0;
	}
	if (id) {
		snprintf(ret->error, sizeof(ret->error), "missing field `error`");
		return 0;
	}
	snprintf(ret->error, sizeof(ret->error),
		 "data did not match any variant of untagged enum JSONRPCMessage");
	return 0;
}

void jrpc_msg_done(struct jrpc_msg *m)
{
	big_registry.n = 0;
	json_decref(m->root);
	m->root = NULL;
}

char *jrpc_dump(const json_t *msg, size_t *ret_len)
{
	char *s = json_dumps(msg, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);

	if (s && ret_len)
		*ret_len = strlen(s);
	return s;
}
