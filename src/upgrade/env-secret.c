/* SPDX-License-Identifier: MIT */
/*
 * Secrets that reach uexec through its environment, and that the binary an
 * upgrade execs must find there again: remote mode's registry credential
 * (src/main/args-remote.c takes it out of the environment at start, so that
 * no child inherits it, and the exec'd binary reads its arguments and its
 * secrets the same way). It is put back for the execve only (the hand-over,
 * the rollback, the fallback's fresh start) and wiped when an execve fails;
 * the new binary takes it out again first thing, as at any start. The value
 * is never logged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "upgrade-internal.h"
#include "upgrade.h"

static struct {
	char *entry;  /* "NAME=value" (owned): what putenv() points environ at */
	size_t name_len;
	bool put;
} sec;

void upgrade_keep_env_secret(const char *name, const char *value)
{
	size_t n;

	if (sec.entry) {
		explicit_bzero(sec.entry, strlen(sec.entry));
		free(sec.entry);
		sec.entry = NULL;
	}
	if (!name || !value)
		return;
	n = strlen(name) + 1 + strlen(value) + 1;
	sec.entry = malloc(n);
	if (!sec.entry)
		return; /* the new binary then refuses its secrets, and rolls back */
	snprintf(sec.entry, n, "%s=%s", name, value);
	sec.name_len = strlen(name);
}

void upgrade_env_secret_put(bool on)
{
	char name[128];

	if (!sec.entry || on == sec.put || sec.name_len >= sizeof(name))
		return;
	if (on) {
		sec.put = putenv(sec.entry) == 0;
		return;
	}
	memcpy(name, sec.entry, sec.name_len);
	name[sec.name_len] = '\0';
	(void)unsetenv(name); /* environ no longer points at the entry, which stays ours */
	sec.put = false;
}
