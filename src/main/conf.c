/* SPDX-License-Identifier: MIT */
/* The configuration file turned into arguments (conf.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "macro.h"

/* A configuration file is a few hundred bytes; refuse anything absurd. */
#define CONF_MAX_BYTES (1u << 20)

static const char *const type_names[] = {
	[SERVER_CONF_STRING] = "a string",
	[SERVER_CONF_INTEGER] = "an integer",
	[SERVER_CONF_BOOLEAN] = "a boolean",
	[SERVER_CONF_FLOAT] = "a float",
	[SERVER_CONF_OTHER] = "another type",
};

/* "a string", "a string or an integer", "a string, an integer or a float". */
static void types_text(unsigned types, char *out, size_t size)
{
	size_t n = 0, left = (size_t)__builtin_popcount(types);

	out[0] = 0;
	for (int t = 0; t < SERVER_CONF_OTHER && n < size; t++) {
		if (!(types & SERVER_CONF_TYPE(t)))
			continue;
		left--;
		n += (size_t)snprintf(out + n, size - n, "%s%s", type_names[t],
				      left == 0 ? "" : left == 1 ? " or " : ", ");
	}
}

static int read_file(const char *path, char **ret, size_t *ret_len, char *err, size_t errsz)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	size_t len = 0;
	char *data;
	ssize_t n;

	if (fd < 0) {
		snprintf(err, errsz, "cannot read config file %s: %s", path, strerror(errno));
		return -EINVAL;
	}
	data = malloc(CONF_MAX_BYTES + 1);
	if (!data) {
		close(fd);
		return -ENOMEM;
	}
	while ((n = read(fd, data + len, CONF_MAX_BYTES + 1 - len)) > 0 && len + (size_t)n <= CONF_MAX_BYTES)
		len += (size_t)n;
	close(fd);
	if (n < 0 || n > 0) {
		snprintf(err, errsz, "cannot read config file %s: %s", path,
			 n < 0 ? strerror(errno) : "larger than 1 MiB");
		free(data);
		return -EINVAL;
	}
	*ret = data;
	*ret_len = len;
	return 0;
}

static int push(struct server_conf_args *a, char *arg)
{
	char **v;

	if (!arg)
		return -ENOMEM;
	v = realloc(a->argv, sizeof(char *) * ((size_t)a->argc + 2));
	if (!v) {
		free(arg);
		return -ENOMEM;
	}
	a->argv = v;
	a->argv[a->argc++] = arg;
	a->argv[a->argc] = NULL;
	return 0;
}

int server_conf_load(const char *path, const struct server_conf_key *keys, size_t n_keys,
		     struct server_conf_args *ret, char *err, size_t errsz)
{
	struct server_conf_args a = { 0 };
	struct server_conf_entry *e = NULL;
	char *text = NULL, *perr = NULL;
	size_t len, n = 0;
	int r;

	r = read_file(path, &text, &len, err, errsz);
	if (r < 0)
		return r;
	r = server_conf_parse(text, len, &e, &n, &perr);
	free(text);
	if (r == -EINVAL)
		snprintf(err, errsz, "config file %s: %s", path, perr);
	free(perr);
	for (size_t i = 0; r >= 0 && i < n; i++) {
		const struct server_conf_key *k = NULL;
		char *arg = NULL;

		for (size_t j = 0; j < n_keys && !k; j++)
			if (strcmp(keys[j].name, e[i].key) == 0)
				k = &keys[j];
		if (!k) {
			snprintf(err, errsz, "config file %s: unknown key '%s'", path, e[i].key);
			r = -EINVAL;
			break;
		}
		if (e[i].type == SERVER_CONF_OTHER || !(k->types & SERVER_CONF_TYPE(e[i].type))) {
			char want[128];

			types_text(k->types, want, sizeof(want));
			snprintf(err, errsz, "config file %s: key '%s' must be %s, not %s", path,
				 e[i].key, want, e[i].type_name);
			r = -EINVAL;
			break;
		}
		if (e[i].type == SERVER_CONF_BOOLEAN && k->bool_args[0]) {
			const char *v = k->bool_args[strcmp(e[i].value, "true") == 0];

			if (asprintf(&arg, "--%s=%s", e[i].key, v) < 0)
				arg = NULL;
		} else if (e[i].type == SERVER_CONF_BOOLEAN) {
			if (strcmp(e[i].value, "true") != 0)
				continue; /* false: the flag is not given */
			if (asprintf(&arg, "--%s", e[i].key) < 0)
				arg = NULL;
		} else if (asprintf(&arg, "--%s=%s", e[i].key, e[i].value) < 0) {
			arg = NULL;
		}
		r = push(&a, arg);
	}
	server_conf_entries_free(e, n);
	if (r < 0) {
		server_conf_args_done(&a);
		return r;
	}
	*ret = a;
	return 0;
}

void server_conf_args_done(struct server_conf_args *a)
{
	for (int i = 0; i < a->argc; i++)
		free(a->argv[i]);
	free(a->argv);
	a->argv = NULL;
	a->argc = 0;
}
