/* SPDX-License-Identifier: MIT */
/*
 * The shell side of shell snapshots: the script a login shell runs to print
 * its state, the parsing of what it printed, and the state script the
 * command sources before it runs (shell-snapshot.h).
 *
 * The capture prints sections, each after a marker "\0<nonce>:<name>\0".
 * The nonce is random per capture, so a startup file's output (printed
 * before the first marker, and ignored) cannot forge one. Only shell
 * builtins print the state; the environment comes from env(1) -0, which
 * keeps any byte of a value. Filtering and quoting happen here, in C, not
 * in the user's shell, whose functions may shadow the tools a script would
 * use.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "environ.h"
#include "macro.h"
#include "shell-snapshot.h"

static const char *const sec_names[] = {
	[SNAP_SEC_SHOPT] = "shopt", [SNAP_SEC_SETO] = "seto",       [SNAP_SEC_FUNCS] = "funcs",
	[SNAP_SEC_ALIASES] = "aliases", [SNAP_SEC_ENV] = "env", [SNAP_SEC_END] = "end",
};

/*
 * Per shell: the interactive startup file a login shell does not read by
 * itself (bash reads ~/.bashrc only when interactive; zsh likewise
 * ~/.zshrc), and the builtins that print each section ("" for none).
 */
struct shell_script {
	const char *rc;
	const char *mark; /* how to print a marker: a printf builtin that cannot be an alias */
	const char *sec[SNAP_SEC_END];
};

static const struct shell_script scripts[] = {
	[SNAP_BASH] = {
		.rc = "if [ -z \"${BASH_ENV-}\" ] && [ -n \"${HOME-}\" ] && [ -r \"$HOME/.bashrc\" ]; "
		      "then . \"$HOME/.bashrc\"; fi\n",
		.mark = "builtin printf",
		.sec = { "builtin shopt -p", "builtin set +o", "builtin declare -f",
			 "builtin alias -p", "env -0 2>/dev/null || command -p env -0" },
	},
	[SNAP_ZSH] = {
		.rc = "if [ -r \"${ZDOTDIR:-${HOME-}}/.zshrc\" ]; then . \"${ZDOTDIR:-$HOME}/.zshrc\"; fi\n",
		.mark = "builtin printf",
		.sec = { "", "builtin setopt", "builtin typeset -f", "builtin alias -L",
			 "env -0 2>/dev/null || command -p env -0" },
	},
	[SNAP_SH] = {
		/* $ENV, which an interactive sh reads. */
		.rc = "if [ -n \"${ENV-}\" ] && [ -r \"$ENV\" ] && [ ! -d \"$ENV\" ]; then . \"$ENV\"; fi\n",
		.mark = "\\printf",
		/*
		 * POSIX sh cannot list its functions; its aliases are not kept either,
		 * as 0.171.0 does not keep them (its sh capture drops them): the options
		 * and the environment.
		 */
		.sec = { "", "set +o", "", "", "env -0 2>/dev/null || command -p env -0" },
	},
};

char *snap_capture_script(enum snap_shell sh, const char *nonce)
{
	const struct shell_script *s = &scripts[sh];
	struct buf b = { 0 };
	int r = 0;

	/*
	 * Whether a sourced /dev/fd path can be opened here (the sandbox may
	 * hide /proc): `case` is a reserved word, so no function or alias can
	 * stand in for the test. The answer picks the replay (fd or environment).
	 */
	r |= buf_printf(&b,
			"if case . in .) ;; esac 2>/dev/null </dev/fd/%d; then %s '\\0%%s\\0' "
			"'%s:fd1'; else %s '\\0%%s\\0' '%s:fd0'; fi\n",
			SNAP_FD, s->mark, nonce, s->mark, nonce);
	r |= buf_printf(&b, "%s", s->rc);
	for (size_t i = 0; i < SNAP_SEC_END; i++)
		r |= buf_printf(&b, "%s '\\0%%s\\0' '%s:%s'\n%s\n", s->mark, nonce, sec_names[i],
				s->sec[i][0] ? s->sec[i] : ":");
	r |= buf_printf(&b, "%s '\\0%%s\\0' '%s:%s'\n", s->mark, nonce, sec_names[SNAP_SEC_END]);
	if (r < 0 || buf_append(&b, "", 1) < 0) {
		buf_done(&b);
		return NULL;
	}
	return (char *)b.data;
}

static const char *find(const char *hay, size_t n, const char *needle, size_t m)
{
	return m <= n ? memmem(hay, n, needle, m) : NULL;
}

int snap_parse_sections(enum snap_shell sh, const char *out, size_t len, const char *nonce,
			struct snap_sections *ret)
{
	char mark[96];
	const char *p, *end = out + len;
	int n;

	(void)sh;
	memset(ret, 0, sizeof(*ret));
	n = snprintf(mark, sizeof(mark), "%c%s:fd1%c", 0, nonce, 0);
	if (find(out, len, mark, (size_t)n)) {
		ret->fd_ok = true;
	} else {
		n = snprintf(mark, sizeof(mark), "%c%s:fd0%c", 0, nonce, 0);
		if (!find(out, len, mark, (size_t)n))
			return -EBADMSG;
	}
	/* Each section runs from its marker to the next one; all must be there, in order. */
	p = out;
	for (size_t i = 0; i <= SNAP_SEC_END; i++) {
		const char *m;

		n = snprintf(mark, sizeof(mark), "%c%s:%s%c", 0, nonce, sec_names[i], 0);
		m = find(p, (size_t)(end - p), mark, (size_t)n);
		if (!m)
			return -EBADMSG;
		if (i > 0)
			ret->len[i - 1] = (size_t)(m - ret->part[i - 1]);
		p = m + n;
		ret->part[i] = p;
	}
	ret->len[SNAP_SEC_END] = (size_t)(end - p);
	return 0;
}

/* Calls fn for each line of a section (without its newline). */
static int each_line(const char *s, size_t n, int (*fn)(struct buf *b, const char *l, size_t ln,
							enum snap_shell sh),
		     struct buf *b, enum snap_shell sh)
{
	while (s && n > 0) {
		const char *nl = memchr(s, '\n', n);
		size_t ln = nl ? (size_t)(nl - s) : n;
		int r = fn(b, s, ln, sh);

		if (r < 0)
			return r;
		s += ln + (nl ? 1 : 0);
		n -= ln + (nl ? 1 : 0);
	}
	return 0;
}

static bool starts(const char *l, size_t n, const char *p)
{
	size_t k = strlen(p);

	return n >= k && memcmp(l, p, k) == 0;
}

/* bash `shopt -p`: every line but the read-only options (setting them fails). */
static int shopt_line(struct buf *b, const char *l, size_t n, enum snap_shell sh)
{
	(void)sh;
	if (!starts(l, n, "shopt ") || memmem(l, n, "login_shell", 11) ||
	    memmem(l, n, "restricted_shell", 16))
		return 0;
	return buf_printf(b, "%.*s\n", (int)n, l);
}

/*
 * Options: the ones that are on (bash, sh: `set -o NAME` lines of `set +o`;
 * zsh: `setopt` names, each one a non-default setting). privileged stays
 * off: the command's shell runs with -p only to skip its startup files.
 */
static int seto_line(struct buf *b, const char *l, size_t n, enum snap_shell sh)
{
	if (sh == SNAP_ZSH)
		return n ? buf_printf(b, "setopt %.*s\n", (int)n, l) : 0;
	if (!starts(l, n, "set -o ") || memmem(l, n, "privileged", 10))
		return 0;
	return buf_printf(b, "%.*s\n", (int)n, l);
}

/* Aliases: bash and zsh print definitions to run. */
static int alias_line(struct buf *b, const char *l, size_t n, enum snap_shell sh)
{
	(void)sh;
	return n ? buf_printf(b, "%.*s\n", (int)n, l) : 0;
}

char *snap_render_state(enum snap_shell sh, const struct snap_sections *s, size_t *ret_len)
{
	struct buf b = { 0 };
	int r = 0;

	r |= buf_printf(&b, "# uexec shell snapshot\n");
	/* The startup files' aliases would otherwise clash with the functions defined below. */
	r |= buf_printf(&b, "unalias -a 2>/dev/null || true\n");
	r |= each_line(s->part[SNAP_SEC_SHOPT], s->len[SNAP_SEC_SHOPT], shopt_line, &b, sh);
	if (s->len[SNAP_SEC_FUNCS]) {
		r |= buf_append(&b, s->part[SNAP_SEC_FUNCS], s->len[SNAP_SEC_FUNCS]);
		r |= buf_printf(&b, "\n");
	}
	r |= each_line(s->part[SNAP_SEC_SETO], s->len[SNAP_SEC_SETO], seto_line, &b, sh);
	r |= each_line(s->part[SNAP_SEC_ALIASES], s->len[SNAP_SEC_ALIASES], alias_line, &b, sh);
	/* A state made of text: a NUL (in a function body?) would end the shell's read. */
	if (r < 0 || memchr(b.data, 0, b.len) || buf_append(&b, "", 1) < 0) {
		buf_done(&b);
		return NULL;
	}
	*ret_len = b.len - 1;
	return (char *)b.data;
}

/* Splits env -0 output into a strv of NAME=value entries, dropping what is not one. */
int snap_parse_env(const char *s, size_t n, char ***ret)
{
	size_t count = 0, k = 0;
	char **v;

	for (size_t i = 0; i < n; i++)
		count += s[i] == 0;
	v = calloc(count + 2, sizeof(char *));
	if (!v)
		return -ENOMEM;
	while (n > 0) {
		const char *z = memchr(s, 0, n);
		size_t ln = z ? (size_t)(z - s) : n;
		const char *eq = memchr(s, '=', ln);

		/* PWD and OLDPWD are the capture's, not the command's. */
		if (eq && eq != s && !(eq - s == 3 && memcmp(s, "PWD", 3) == 0) &&
		    !(eq - s == 6 && memcmp(s, "OLDPWD", 6) == 0)) {
			v[k] = strndup(s, ln);
			if (!v[k]) {
				environ_strv_free(v);
				return -ENOMEM;
			}
			k++;
		}
		s += ln + (z ? 1 : 0);
		n -= ln + (z ? 1 : 0);
	}
	*ret = v;
	return 0;
}
