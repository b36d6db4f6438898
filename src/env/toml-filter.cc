// SPDX-License-Identifier: MIT
/*
 * TOML key-path projection and serialisation (see toml-filter.h).
 *
 * One of uexec's two C++ files (with src/toml/conf-toml.cc, the --config
 * parser). Debian 12 has no C TOML parser, but it
 * ships toml++ (libtomlplusplus-dev, C++17); writing and fuzzing a TOML 1.0
 * parser of our own for one read-only method was not worth it. Everything
 * toml++ is kept behind the C function toml_filter(): exceptions (parse errors,
 * std::bad_alloc) are caught here and turned into error codes.
 *
 * The parsed document is first converted, projected on the key paths as it goes,
 * into a small ordered tree of our own, because toml++ keeps table keys in a
 * sorted std::map while the reference (`toml` crate with `preserve_order`) keeps
 * document order: entries are re-sorted by the source position of their key,
 * which is where the key was first defined, i.e. the reference's insertion order.
 *
 * The emitter reproduces `toml::to_string` of the Rust `toml` crate (0.9,
 * toml_writer): plain key/values of a table first, then its sub-tables and
 * arrays of tables as `[a.b]` / `[[a.b]]` sections in depth-first order;
 * sections with no key/values of their own that only hold sub-tables are
 * elided; sections are separated by one blank line; arrays and tables inside
 * values are written inline (`[1, 2]`, `{ k = v }`); strings and keys use the
 * first encoding that needs no escapes (basic, literal, multi-line basic,
 * multi-line literal, then escaped basic); floats use the shortest round-trip
 * digits without exponent, with ".0" for integral values.
 *
 * Known differences (toml++ does not keep the information): an offset of
 * "+00:00" prints as "Z"; a time written with ".0" fractional seconds loses
 * them; integers written in hex/octal/binary print in decimal (as in Rust).
 */
#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <string>
#include <utility>
#include <vector>

extern "C" {
#include "toml-filter.h"
}

namespace {

struct Selector {
	bool terminal = false;
	std::map<std::string, Selector> children;

	void insert(const toml_key_path &p, size_t from)
	{
		if (terminal)
			return;
		if (from == p.n) {
			terminal = true;
			children.clear();
			return;
		}
		children[std::string(p.seg[from], p.len[from])].insert(p, from + 1);
	}
};

enum class Kind { String, Integer, Float, Boolean, Datetime, Array, Table };

struct Value;
using Entries = std::vector<std::pair<std::string, Value>>;

struct Value {
	Kind kind = Kind::Table;
	std::string text; /* String value, or a formatted Datetime */
	int64_t integer = 0;
	double number = 0;
	bool boolean = false;
	std::vector<Value> array;
	Entries table;
};

/* ---- toml++ -> Value, projected on a selector (nullptr = keep everything) ---- */

std::string two(unsigned v)
{
	char b[8];

	snprintf(b, sizeof(b), "%02u", v % 100);
	return b;
}

std::string fmt_date(const toml::date &d)
{
	char b[32];

	snprintf(b, sizeof(b), "%04u-%02u-%02u", (unsigned)d.year, (unsigned)d.month, (unsigned)d.day);
	return b;
}

std::string fmt_time(const toml::time &t)
{
	std::string s = two(t.hour) + ":" + two(t.minute) + ":" + two(t.second);

	if (t.nanosecond) {
		char b[16];

		snprintf(b, sizeof(b), "%09u", (unsigned)(t.nanosecond % 1000000000u));
		std::string frac = b;
		frac.erase(frac.find_last_not_of('0') + 1);
		s += "." + frac;
	}
	return s;
}

std::string fmt_offset(const toml::time_offset &o)
{
	int m = o.minutes;
	char sign = '+';

	if (m == 0)
		return "Z";
	if (m < 0) {
		sign = '-';
		m = -m;
	}
	return std::string(1, sign) + two((unsigned)(m / 60)) + ":" + two((unsigned)(m % 60));
}

bool key_before(const std::pair<const toml::key *, const toml::node *> &a,
		const std::pair<const toml::key *, const toml::node *> &b)
{
	const toml::source_position &x = a.first->source().begin, &y = b.first->source().begin;

	if (x.line != y.line)
		return x.line < y.line;
	if (x.column != y.column)
		return x.column < y.column;
	return a.first->str() < b.first->str();
}

Value convert(const toml::node &n, const Selector *sel)
{
	Value v;

	if (sel && sel->terminal)
		sel = nullptr;
	switch (n.type()) {
	case toml::node_type::table: {
		std::vector<std::pair<const toml::key *, const toml::node *>> kids;

		for (auto &&kv : *n.as_table()) {
			if (sel && !sel->children.count(std::string(kv.first.str())))
				continue;
			kids.emplace_back(&kv.first, &kv.second);
		}
		std::stable_sort(kids.begin(), kids.end(), key_before);
		v.kind = Kind::Table;
		v.table.reserve(kids.size());
		for (auto &k : kids) {
			std::string name(k.first->str());
			const Selector *child = sel ? &sel->children.find(name)->second : nullptr;

			v.table.emplace_back(std::move(name), convert(*k.second, child));
		}
		break;
	}
	case toml::node_type::array:
		/* Not a table: kept whole even if the path goes deeper (codex-rs does the same). */
		v.kind = Kind::Array;
		for (auto &&e : *n.as_array())
			v.array.push_back(convert(e, nullptr));
		break;
	case toml::node_type::string:
		v.kind = Kind::String;
		v.text = n.as_string()->get();
		break;
	case toml::node_type::integer:
		v.kind = Kind::Integer;
		v.integer = n.as_integer()->get();
		break;
	case toml::node_type::floating_point:
		v.kind = Kind::Float;
		v.number = n.as_floating_point()->get();
		break;
	case toml::node_type::boolean:
		v.kind = Kind::Boolean;
		v.boolean = n.as_boolean()->get();
		break;
	case toml::node_type::date:
		v.kind = Kind::Datetime;
		v.text = fmt_date(n.as_date()->get());
		break;
	case toml::node_type::time:
		v.kind = Kind::Datetime;
		v.text = fmt_time(n.as_time()->get());
		break;
	case toml::node_type::date_time: {
		const toml::date_time &dt = n.as_date_time()->get();

		v.kind = Kind::Datetime;
		v.text = fmt_date(dt.date) + "T" + fmt_time(dt.time);
		if (dt.offset)
			v.text += fmt_offset(*dt.offset);
		break;
	}
	default:
		v.kind = Kind::Table;
		break;
	}
	return v;
}

/* ---- strings and keys (toml_writer's TomlStringBuilder / TomlKeyBuilder rules) ---- */

enum class Enc { Bare, Literal, Basic, MlLiteral, MlBasic };

bool is_control(unsigned char c)
{
	return c <= 0x1f || c == 0x7f;
}

void write_encoded(std::string &out, const std::string &s, Enc enc, bool has_newline)
{
	const bool ml = enc == Enc::MlLiteral || enc == Enc::MlBasic;
	const bool escaped = enc == Enc::Basic || enc == Enc::MlBasic;
	const char *delim = enc == Enc::Literal ? "'" : enc == Enc::Basic ? "\"" :
			    enc == Enc::MlLiteral ? "'''" : enc == Enc::MlBasic ? "\"\"\"" : "";

	out += delim;
	if (ml && has_newline)
		out += '\n';
	if (!escaped) {
		out += s;
		out += delim;
		return;
	}
	const unsigned max_quotes = ml ? 2 : 0;
	size_t pos = 0, n = s.size();

	while (pos < n) {
		size_t plain = 0;
		const char *esc = nullptr;
		unsigned quotes = 0;

		for (size_t i = pos; i < n; i++) {
			unsigned char b = (unsigned char)s[i];
			bool stop = false;

			if (b == '"') {
				if (++quotes > max_quotes) {
					esc = "\\\"";
					break;
				}
			} else {
				quotes = 0;
			}
			switch (b) {
			case 0x08: esc = "\\b"; stop = true; break;
			case 0x09: esc = "\\t"; stop = true; break;
			case 0x0a:
				if (!ml) {
					esc = "\\n";
					stop = true;
				}
				break;
			case 0x0c: esc = "\\f"; stop = true; break;
			case 0x0d: esc = "\\r"; stop = true; break;
			case 0x22: break;
			case 0x5c: esc = "\\\\"; stop = true; break;
			default:
				if (is_control(b))
					stop = true;
			}
			if (stop)
				break;
			plain = i + 1 - pos;
		}
		out.append(s, pos, plain);
		pos += plain;
		if (esc) {
			out += esc;
			pos++;
		} else if (pos < n) {
			char u[8];

			snprintf(u, sizeof(u), "\\u%04X", (unsigned)(unsigned char)s[pos]);
			out += u;
			pos++;
		}
	}
	out += delim;
}

void write_string(std::string &out, const std::string &s)
{
	unsigned sq = 0, dq = 0, max_sq = 0, max_dq = 0;
	bool backslash = false, newline = false, codes = false;

	for (unsigned char b : s) {
		sq = b == '\'' ? sq + 1 : 0;
		dq = b == '"' ? dq + 1 : 0;
		max_sq = std::max(max_sq, sq);
		max_dq = std::max(max_dq, dq);
		if (b == '\\')
			backslash = true;
		else if (b == '\n')
			newline = true;
		else if (b != '\t' && is_control(b))
			codes = true;
	}
	Enc enc;
	if (!codes && !backslash && max_dq == 0 && !newline)
		enc = Enc::Basic;
	else if (!codes && max_sq == 0 && !newline)
		enc = Enc::Literal;
	else if (!codes && !backslash && max_dq <= 2)
		enc = Enc::MlBasic;
	else if (!codes && max_sq <= 2)
		enc = Enc::MlLiteral;
	else
		enc = newline ? Enc::MlBasic : Enc::Basic;
	write_encoded(out, s, enc, newline);
}

std::string encode_key(const std::string &k)
{
	bool bare = !k.empty(), sq = false, dq = false, backslash = false, codes = false;
	std::string out;

	for (unsigned char b : k) {
		if (!((b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') ||
		      b == '-' || b == '_'))
			bare = false;
		if (b == '\'')
			sq = true;
		else if (b == '"')
			dq = true;
		else if (b == '\\')
			backslash = true;
		else if (b != '\t' && is_control(b))
			codes = true;
	}
	if (bare)
		out = k;
	else if (!codes && !backslash && !dq)
		write_encoded(out, k, Enc::Basic, false);
	else if (!codes && !sq)
		write_encoded(out, k, Enc::Literal, false);
	else
		write_encoded(out, k, Enc::Basic, false);
	return out;
}

/* ---- numbers ---- */

/* Rust's `{}` for f64: shortest round-trip digits, never an exponent. */
void write_float(std::string &out, double d)
{
	if (std::isnan(d)) {
		out += "nan"; /* the serializer drops the sign of NaN */
		return;
	}
	if (std::isinf(d)) {
		out += d < 0 ? "-inf" : "inf";
		return;
	}
	if (d == 0) {
		out += std::signbit(d) ? "-0.0" : "0.0";
		return;
	}
	char buf[64];
	for (int prec = 0; prec <= 16; prec++) {
		snprintf(buf, sizeof(buf), "%.*e", prec, d);
		if (strtod(buf, nullptr) == d)
			break;
	}
	/* buf = [-]D[.DDD]e(+|-)XX */
	std::string digits;
	const char *p = buf;
	bool neg = false;

	if (*p == '-') {
		neg = true;
		p++;
	}
	for (; *p && *p != 'e'; p++)
		if (*p >= '0' && *p <= '9')
			digits += *p;
	long exp10 = *p == 'e' ? strtol(p + 1, nullptr, 10) : 0;
	while (digits.size() > 1 && digits.back() == '0')
		digits.pop_back();

	long point = exp10 + 1; /* digits before the decimal point */
	std::string s;
	bool integral;

	if (point <= 0) {
		s = "0." + std::string((size_t)-point, '0') + digits;
		integral = false;
	} else if ((size_t)point >= digits.size()) {
		s = digits + std::string((size_t)point - digits.size(), '0');
		integral = true;
	} else {
		s = digits.substr(0, (size_t)point) + "." + digits.substr((size_t)point);
		integral = false;
	}
	if (neg)
		out += '-';
	out += s;
	if (integral)
		out += ".0";
}

/* ---- values and documents ---- */

void write_value(std::string &out, const Value &v)
{
	switch (v.kind) {
	case Kind::String:
		write_string(out, v.text);
		break;
	case Kind::Integer:
		out += std::to_string(v.integer);
		break;
	case Kind::Float:
		write_float(out, v.number);
		break;
	case Kind::Boolean:
		out += v.boolean ? "true" : "false";
		break;
	case Kind::Datetime:
		out += v.text;
		break;
	case Kind::Array: {
		out += '[';
		bool first = true;
		for (const Value &e : v.array) {
			if (!first)
				out += ", ";
			first = false;
			write_value(out, e);
		}
		out += ']';
		break;
	}
	case Kind::Table: {
		out += '{';
		bool first = true;
		for (const auto &kv : v.table) {
			out += first ? " " : ", ";
			first = false;
			out += encode_key(kv.first);
			out += " = ";
			write_value(out, kv.second);
		}
		if (!first)
			out += ' ';
		out += '}';
		break;
	}
	}
}

enum class Strategy { Value, Table, ArrayOfTables };

Strategy strategy(const Value &v)
{
	if (v.kind == Kind::Table)
		return Strategy::Table;
	if (v.kind != Kind::Array || v.array.empty())
		return Strategy::Value;
	for (const Value &e : v.array)
		if (e.kind != Kind::Table)
			return Strategy::Value;
	return Strategy::ArrayOfTables;
}

struct Section {
	bool root = false;
	bool array = false;
	bool has_children = false;
	std::vector<std::string> path; /* encoded keys */
	std::string body;
};

class Document {
	std::vector<Section> secs_;

	size_t add(size_t parent, const std::string &key, bool array)
	{
		Section s;

		secs_[parent].has_children = true;
		s.path = secs_[parent].path;
		s.path.push_back(key);
		s.array = array;
		secs_.push_back(std::move(s));
		return secs_.size() - 1;
	}

	void table(size_t idx, const Entries &t)
	{
		for (const auto &kv : t) {
			std::string key = encode_key(kv.first);

			switch (strategy(kv.second)) {
			case Strategy::Value: {
				std::string line = key + " = ";
				write_value(line, kv.second);
				line += '\n';
				secs_[idx].body += line;
				break;
			}
			case Strategy::Table:
				table(add(idx, key, false), kv.second.table);
				break;
			case Strategy::ArrayOfTables:
				for (const Value &e : kv.second.array)
					table(add(idx, key, true), e.table);
				break;
			}
		}
	}

      public:
	std::string render(const Value &root)
	{
		Section r;

		r.root = true;
		secs_.push_back(std::move(r));
		table(0, root.table);

		std::string out;
		bool first = true;
		for (const Section &s : secs_) {
			bool required = s.root ? !s.body.empty()
					       : (s.array || !s.body.empty() || !s.has_children);
			if (!required)
				continue;
			if (!first)
				out += '\n';
			first = false;
			if (!s.root) {
				out += s.array ? "[[" : "[";
				for (size_t i = 0; i < s.path.size(); i++) {
					if (i)
						out += '.';
					out += s.path[i];
				}
				out += s.array ? "]]\n" : "]\n";
			}
			out += s.body;
		}
		return out;
	}
};

/*
 * toml++ builds and destroys tables recursively, so a dotted key or table header
 * with tens of thousands of segments (a 1 MiB file allows ~500k) overflows the
 * stack. Before parsing, a light lexer estimates the nesting depth of every key
 * (header segments + dotted-key segments + inline tables and arrays) and refuses
 * documents deeper than MAX_DEPTH. Only an estimate: the real parse still decides
 * what is valid TOML.
 */
constexpr unsigned MAX_DEPTH = 256;

class DepthScanner {
	const char *p_, *end_;
	const char *const start_;

	/* Skips a string starting at p_ (on a quote). */
	void skip_string()
	{
		char q = *p_;
		bool ml = end_ - p_ >= 3 && p_[1] == q && p_[2] == q;

		p_ += ml ? 3 : 1;
		while (p_ < end_) {
			if (q == '"' && *p_ == '\\') {
				p_ += 2;
				continue;
			}
			if (!ml && *p_ == '\n')
				return;
			if (*p_ == q) {
				if (!ml) {
					p_++;
					return;
				}
				if (end_ - p_ >= 3 && p_[1] == q && p_[2] == q) {
					p_ += 3;
					while (p_ < end_ && *p_ == q) /* up to two quotes may end the content */
						p_++;
					return;
				}
			}
			p_++;
		}
	}

	void skip_comment()
	{
		while (p_ < end_ && *p_ != '\n')
			p_++;
	}

	/* Counts the segments of a key up to one of `stops` or the end of the line (not consumed). */
	unsigned key_segments(const char *stops)
	{
		unsigned segs = 1;

		while (p_ < end_ && *p_ != '\n' && !memchr(stops, *p_, strlen(stops))) {
			if (*p_ == '"' || *p_ == '\'') {
				skip_string();
				continue;
			}
			if (*p_ == '.')
				segs++;
			p_++;
		}
		return segs;
	}

      public:
	DepthScanner(const char *text, size_t size) : p_(text), end_(text + size), start_(text) {}

	/* Returns the offset where the depth limit is exceeded, or -1. */
	long check()
	{
		unsigned header = 0;
		std::vector<std::pair<char, unsigned>> stack; /* container, depth of its value */

		while (p_ < end_) {
			/* at the start of a line, outside any container */
			while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r' || *p_ == '\n'))
				p_++;
			if (p_ >= end_)
				break;
			if (*p_ == '#') {
				skip_comment();
				continue;
			}
			if (*p_ == '[') {
				bool aot = end_ - p_ >= 2 && p_[1] == '[';

				p_ += aot ? 2 : 1;
				header = key_segments("]") + (aot ? 1 : 0);
				if (header > MAX_DEPTH)
					return p_ - start_;
				skip_comment(); /* the rest of the header line */
				continue;
			}
			/* key = value */
			unsigned depth = header + key_segments("=");
			if (depth > MAX_DEPTH)
				return p_ - start_;
			if (p_ < end_ && *p_ == '=')
				p_++;
			unsigned cur = depth;
			bool in_key = false;
			unsigned key_base = 0;
			while (p_ < end_) {
				char ch = *p_;

				if (in_key) {
					unsigned segs = key_segments("=,}");
					cur = key_base + segs;
					if (cur > MAX_DEPTH)
						return p_ - start_;
					in_key = false;
					if (p_ < end_ && *p_ == '=')
						p_++;
					continue;
				}
				if (ch == '"' || ch == '\'') {
					skip_string();
					continue;
				}
				if (ch == '#') {
					skip_comment();
					continue;
				}
				if (ch == '\n') {
					/* inline tables cannot span lines: only arrays continue */
					while (!stack.empty() && stack.back().first == '{') {
						cur = stack.back().second;
						stack.pop_back();
					}
					if (stack.empty())
						break;
				}
				if (ch == '[' || ch == '{') {
					stack.emplace_back(ch, cur);
					cur++;
					if (cur > MAX_DEPTH)
						return p_ - start_;
					p_++;
					if (ch == '{') {
						in_key = true;
						key_base = cur;
					}
					continue;
				}
				if ((ch == ']' || ch == '}') && !stack.empty()) {
					cur = stack.back().second;
					stack.pop_back();
					p_++;
					continue;
				}
				if (ch == ',' && !stack.empty()) {
					cur = stack.back().second + 1;
					p_++;
					if (stack.back().first == '{') {
						in_key = true;
						key_base = cur;
					}
					continue;
				}
				p_++;
			}
			stack.clear();
		}
		return -1;
	}
};

void offset_position(const char *text, long off, unsigned *line, unsigned *col)
{
	*line = 1;
	*col = 1;
	for (long i = 0; i < off; i++) {
		if (text[i] == '\n') {
			++*line;
			*col = 1;
		} else if (((unsigned char)text[i] & 0xc0) != 0x80) {
			++*col;
		}
	}
}

char *dup_cstr(const std::string &s)
{
	char *p = static_cast<char *>(malloc(s.size() + 1));

	if (p)
		memcpy(p, s.c_str(), s.size() + 1);
	return p;
}

} // namespace

extern "C" int toml_filter(const char *text, size_t size, const struct toml_key_path *paths,
			   size_t n_paths, char **ret_toml, struct toml_filter_error *ret_err)
{
	*ret_toml = nullptr;
	try {
		Selector sel;
		for (size_t i = 0; i < n_paths; i++)
			sel.insert(paths[i], 0);

		long deep = DepthScanner(text, size).check();
		if (deep >= 0) {
			offset_position(text, deep, &ret_err->line, &ret_err->column);
			ret_err->message = dup_cstr("keys are nested more than " +
						    std::to_string(MAX_DEPTH) + " levels deep");
			return ret_err->message ? -EINVAL : -ENOMEM;
		}

		toml::table doc;
		try {
			doc = toml::parse(std::string_view(text, size));
		} catch (const toml::parse_error &e) {
			ret_err->line = e.source().begin.line;
			ret_err->column = e.source().begin.column;
			ret_err->message = dup_cstr(std::string(e.description()));
			return ret_err->message ? -EINVAL : -ENOMEM;
		}

		Value root = convert(doc, &sel);
		if (!sel.terminal && root.table.empty())
			return 0;
		std::string out = Document().render(root);
		*ret_toml = dup_cstr(out);
		return *ret_toml ? 0 : -ENOMEM;
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	} catch (...) {
		return -ENOMEM;
	}
}
