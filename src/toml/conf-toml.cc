// SPDX-License-Identifier: MIT
/*
 * The configuration file's TOML parser (conf-parse.h): toml++ behind a C function,
 * in the style of src/env/toml-filter.cc. Only the top level matters: every
 * key is an option name, its value a string, an integer, a float or a boolean;
 * other types are reported by name so that the caller can say what was wrong.
 */
#include <toml++/toml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

extern "C" {
#include "conf-parse.h"
}

namespace {

char *dup_cstr(const std::string &s)
{
	char *p = static_cast<char *>(malloc(s.size() + 1));

	if (p)
		memcpy(p, s.c_str(), s.size() + 1);
	return p;
}

const char *type_name(const toml::node &n)
{
	switch (n.type()) {
	case toml::node_type::string:
		return "a string";
	case toml::node_type::integer:
		return "an integer";
	case toml::node_type::boolean:
		return "a boolean";
	case toml::node_type::floating_point:
		return "a float";
	case toml::node_type::array:
		return "an array";
	case toml::node_type::table:
		return "a table";
	default:
		return "a date/time";
	}
}

} // namespace

extern "C" int server_conf_parse(const char *text, size_t size, struct server_conf_entry **ret,
				 size_t *ret_n, char **ret_err)
{
	*ret = nullptr;
	*ret_n = 0;
	*ret_err = nullptr;
	try {
		toml::table doc;
		try {
			doc = toml::parse(std::string_view(text, size));
		} catch (const toml::parse_error &e) {
			*ret_err = dup_cstr("line " + std::to_string(e.source().begin.line) + ", column " +
					    std::to_string(e.source().begin.column) + ": " +
					    std::string(e.description()));
			return *ret_err ? -EINVAL : -ENOMEM;
		}

		/* toml++ sorts keys; report them in document order. */
		std::vector<std::pair<const toml::key *, const toml::node *>> keys;
		for (auto &&[k, v] : doc)
			keys.emplace_back(&k, &v);
		std::sort(keys.begin(), keys.end(), [](const auto &a, const auto &b) {
			const auto &x = a.first->source().begin, &y = b.first->source().begin;
			return x.line != y.line ? x.line < y.line : x.column < y.column;
		});

		auto *e = static_cast<server_conf_entry *>(calloc(keys.size() + 1, sizeof(server_conf_entry)));
		if (!e)
			return -ENOMEM;
		size_t n = 0;
		for (const auto &[k, v] : keys) {
			server_conf_entry &x = e[n++];
			std::string value;

			x.type_name = type_name(*v);
			if (auto s = v->as_string(); s && s->get().find('\0') != std::string::npos) {
				x.type = SERVER_CONF_OTHER; /* cannot be an argument */
				x.type_name = "a string holding a NUL byte";
			} else if (s) {
				x.type = SERVER_CONF_STRING;
				value = s->get();
			} else if (auto i = v->as_integer()) {
				x.type = SERVER_CONF_INTEGER;
				value = std::to_string(i->get());
			} else if (auto d = v->as_floating_point(); d && std::isfinite(d->get())) {
				/* Fixed notation, the shortest that reads back: 0.5, not 5e-01 or 0.50000000000000000. */
				char buf[400];
				auto res = std::to_chars(buf, buf + sizeof(buf), d->get(), std::chars_format::fixed);

				if (res.ec != std::errc()) {
					x.type = SERVER_CONF_OTHER;
					x.type_name = "a float too large";
				} else {
					x.type = SERVER_CONF_FLOAT;
					value.assign(buf, res.ptr);
				}
			} else if (d) {
				x.type = SERVER_CONF_OTHER;
				x.type_name = "a float that is not finite";
			} else if (auto b = v->as_boolean()) {
				x.type = SERVER_CONF_BOOLEAN;
				value = b->get() ? "true" : "false";
			} else {
				x.type = SERVER_CONF_OTHER;
			}
			x.key = dup_cstr(std::string(k->str()));
			x.value = dup_cstr(value);
			if (!x.key || !x.value) {
				server_conf_entries_free(e, n);
				return -ENOMEM;
			}
		}
		*ret = e;
		*ret_n = n;
		return 0;
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	} catch (...) {
		return -ENOMEM;
	}
}

extern "C" void server_conf_entries_free(struct server_conf_entry *e, size_t n)
{
	if (!e)
		return;
	for (size_t i = 0; i < n; i++) {
		free(e[i].key);
		free(e[i].value);
	}
	free(e);
}
