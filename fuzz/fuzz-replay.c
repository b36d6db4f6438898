/* SPDX-License-Identifier: MIT */
/*
 * Replays a corpus through LLVMFuzzerTestOneInput without libFuzzer, so the
 * committed corpora run as regression tests under any compiler (systemd's
 * fuzz-main.c). Arguments are files or directories (every regular file in
 * them, in name order); each input runs a few times to catch state leaking
 * between runs. Each input's name is printed before it runs, so a crash
 * names its reproducer; the exit status is 0 only if every input ran.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

#define RUNS_PER_INPUT 3

static int read_file(const char *path, uint8_t **ret, size_t *ret_len)
{
	FILE *f = fopen(path, "rbe");
	uint8_t *data = NULL;
	size_t len = 0, cap = 0;

	if (!f)
		return -errno;
	for (;;) {
		size_t n;

		if (len == cap) {
			uint8_t *d = realloc(data, cap ? cap * 2 : 4096);

			if (!d) {
				free(data);
				fclose(f);
				return -ENOMEM;
			}
			data = d;
			cap = cap ? cap * 2 : 4096;
		}
		n = fread(data + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	fclose(f);
	*ret = data;
	*ret_len = len;
	return 0;
}

static unsigned n_inputs;

static int run_file(const char *path)
{
	uint8_t *data = NULL, *copy;
	size_t len = 0;
	int r = read_file(path, &data, &len);

	if (r < 0) {
		printf("# %s: %s\n", path, strerror(-r));
		return r;
	}
	printf("# %s\n", path);
	fflush(stdout);
	for (int i = 0; i < RUNS_PER_INPUT; i++) {
		/* A fresh exact-size copy each run, so ASan sees reads past the end. */
		copy = malloc(len ? len : 1);
		if (!copy)
			abort();
		memcpy(copy, data, len);
		(void)LLVMFuzzerTestOneInput(copy, len);
		free(copy);
	}
	free(data);
	n_inputs++;
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir)
{
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d = opendir(dir);
	int r = 0;

	if (!d) {
		r = -errno;
		printf("# %s: %s\n", dir, strerror(-r));
		return r;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **v = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof(*v));

			if (!v)
				abort();
			names = v;
		}
		if (asprintf(&names[n], "%s/%s", dir, de->d_name) < 0)
			abort();
		n++;
	}
	closedir(d);
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		struct stat st;

		if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode) && run_file(names[i]) < 0)
			r = -EIO;
		free(names[i]);
	}
	free(names);
	return r;
}

int main(int argc, char **argv)
{
	int r = 0;

	if (LLVMFuzzerInitialize)
		(void)LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st) < 0) {
			printf("# %s: %s\n", argv[i], strerror(errno));
			r = -ENOENT;
		} else if (S_ISDIR(st.st_mode)) {
			if (run_dir(argv[i]) < 0)
				r = -EIO;
		} else if (run_file(argv[i]) < 0) {
			r = -EIO;
		}
	}
	printf("%u inputs replayed %d times each%s\n", n_inputs, RUNS_PER_INPUT,
	       r < 0 ? ", some could not be read" : "");
	return r < 0 ? 1 : 0;
}
