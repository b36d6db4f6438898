/* SPDX-License-Identifier: MIT */
/*
 * src/exec/environ.c: the child's environment (PROTOCOL.md §8.1: inherit,
 * the default excludes, exclude, set, includeOnly, metadata, env on top, a
 * PTY's SHELL), the shell snapshot's filter and overlay, and program lookup
 * (exec candidates; a PTY's start directory and the reference PTY library's
 * resolution and its "Unable to spawn" texts). The test sets the server's
 * own environment (clearenv) so that `inherit` sees known variables; JSON
 * comes through jrpc_parse, as on the wire.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "environ.h"
#include "jsonrpc.h"
#include "tests.h"

static struct jrpc_msg msg;

/* The params of a request carrying JSON text p (an object). */
static json_t *json(const char *p)
{
	char text[2048];
	int n = snprintf(text, sizeof(text), "{\"id\":1,\"method\":\"m\",\"params\":%s}", p);

	jrpc_msg_done(&msg);
	ASSERT_EQ(0, jrpc_parse(text, (size_t)n, 64, &msg));
	ASSERT_TRUE(msg.params != NULL);
	return msg.params;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* v as "A=1 B=2", in its order. */
static const char *in_order(char **v)
{
	static char out[2048];
	size_t o = 0;

	out[0] = 0;
	for (size_t i = 0; v[i]; i++)
		o += (size_t)snprintf(out + o, sizeof(out) - o, "%s%s", i ? " " : "", v[i]);
	return out;
}

/* The same sorted: the order of an environment is the layer's business, its set the wire's. */
static const char *joined(char **v)
{
	size_t n = 0;

	while (v[n])
		n++;
	qsort(v, n, sizeof(*v), cmp);
	return in_order(v);
}

/* The server's environment every case starts from. */
static void server_environ(void)
{
	static const char *const vars[][2] = {
		{ "HOME", "/home/srv" }, { "PATH", "/srv/bin:/bin" }, { "LANG", "C.UTF-8" },
		{ "FOO", "foo" },	  { "MY_KEY", "k" },		{ "api_token", "t" },
		{ "SecretThing", "s" }, { "FROB", "frob" },
	};

	clearenv();
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		ASSERT_EQ(0, setenv(vars[i][0], vars[i][1], 1));
}

static const struct {
	const char *policy, *metadata, *env; /* JSON; policy and metadata may be NULL */
	bool tty;
	const char *want;
} build_cases[] = {
	{ NULL, NULL, "{\"A\":\"1\",\"B\":\"\"}", false, "A=1 B=" },
	{ NULL, NULL, "{\"\":\"dropped\",\"A\":\"x=y\"}", false, "A=x=y" },
	{ "{\"inherit\":\"none\"}", NULL, "{}", false, "" },
	/* core: only HOME, LANG, LOGNAME, PATH, SHELL, TMPDIR, USER of the server's */
	{ "{\"inherit\":\"core\"}", NULL, "{}", false, "HOME=/home/srv LANG=C.UTF-8 PATH=/srv/bin:/bin" },
	/* all, less the default excludes (*KEY*, *SECRET*, *TOKEN*, any case) */
	{ "{\"inherit\":\"all\"}", NULL, "{}", false,
	  "FOO=foo FROB=frob HOME=/home/srv LANG=C.UTF-8 PATH=/srv/bin:/bin" },
	{ "{\"inherit\":\"all\",\"ignoreDefaultExcludes\":true}", NULL, "{}", false,
	  "FOO=foo FROB=frob HOME=/home/srv LANG=C.UTF-8 MY_KEY=k PATH=/srv/bin:/bin SecretThing=s "
	  "api_token=t" },
	/* exclude: globs, any case */
	{ "{\"inherit\":\"all\",\"exclude\":[\"f*\",\"LAN?\"]}", NULL, "{}", false,
	  "HOME=/home/srv PATH=/srv/bin:/bin" },
	/* set: after the excludes (a set *TOKEN* stays), over inherited values */
	{ "{\"inherit\":\"core\",\"set\":{\"GH_TOKEN\":\"g\",\"HOME\":\"/h\",\"n\":1}}", NULL, "{}",
	  false, "GH_TOKEN=g HOME=/h LANG=C.UTF-8 PATH=/srv/bin:/bin" },
	/* includeOnly: last, over everything the policy made */
	{ "{\"inherit\":\"all\",\"set\":{\"X\":\"x\"},\"includeOnly\":[\"h*\",\"X\"]}", NULL, "{}",
	  false, "HOME=/home/srv X=x" },
	{ "{\"inherit\":\"core\",\"includeOnly\":[]}", NULL, "{}", false,
	  "HOME=/home/srv LANG=C.UTF-8 PATH=/srv/bin:/bin" }, /* empty: no filter */
	/* env on top of the policy and the metadata */
	{ "{\"inherit\":\"core\",\"set\":{\"A\":\"set\"}}", NULL, "{\"A\":\"env\",\"PATH\":\"/p\"}",
	  false, "A=env HOME=/home/srv LANG=C.UTF-8 PATH=/p" },
	{ NULL, "{\"threadId\":\"t1\",\"toolCallId\":\"c1\"}", "{}", false,
	  "CODEX_THREAD_ID=t1 CODEX_TOOL_CALL_ID=c1" },
	{ NULL, "{\"threadId\":\"t1\",\"toolCallId\":7}", "{\"CODEX_THREAD_ID\":\"mine\"}", false,
	  "CODEX_THREAD_ID=mine" },
	/* a PTY gets the login shell unless SHELL is set */
	{ NULL, NULL, "{}", true, "SHELL=/bin/login-sh" },
	{ NULL, NULL, "{\"SHELL\":\"/bin/mine\"}", true, "SHELL=/bin/mine" },
	{ "{\"inherit\":\"none\",\"set\":{\"SHELL\":\"/bin/set\"}}", NULL, "{}", true, "SHELL=/bin/set" },
};

TEST(build)
{
	for (size_t i = 0; i < sizeof(build_cases) / sizeof(build_cases[0]); i++) {
		json_t *pol = NULL, *meta = NULL, *env;
		char **envp = NULL;
		const char *got;

		server_environ();
		/* each parse replaces the last message: take references */
		if (build_cases[i].policy)
			pol = json_incref(json(build_cases[i].policy));
		if (build_cases[i].metadata)
			meta = json_incref(json(build_cases[i].metadata));
		env = json_incref(json(build_cases[i].env));
		ASSERT_EQ(0, environ_build(env, pol, meta, build_cases[i].tty, "/bin/login-sh", &envp));
		got = joined(envp);
		if (strcmp(got, build_cases[i].want) != 0)
			tests_fail(__FILE__, __LINE__, "case %zu: got \"%s\", wanted \"%s\"", i, got,
				   build_cases[i].want);
		environ_strv_free(envp);
		json_decref(pol);
		json_decref(meta);
		json_decref(env);
	}
	jrpc_msg_done(&msg);
}

TEST(build_refuses_nul_bytes)
{
	static const char *const envs[] = {
		"{\"A\":\"x\\u0000y\"}",
		"{\"A\\u0000B\":\"x\"}",
	};
	char **envp = (char **)1;

	for (size_t i = 0; i < sizeof(envs) / sizeof(envs[0]); i++)
		ASSERT_EQ(-EILSEQ, environ_build(json(envs[i]), NULL, NULL, false, NULL, &envp));
	ASSERT_TRUE(envp == (char **)1); /* untouched */
	/* a name holding a NUL in the policy's set */
	server_environ();
	{
		json_t *pol = json_incref(json("{\"set\":{\"K\\u0000\":\"v\"}}"));

		ASSERT_EQ(-EILSEQ, environ_build(json("{}"), pol, NULL, false, NULL, &envp));
		json_decref(pol);
	}
	ASSERT_TRUE(envp == (char **)1);
	jrpc_msg_done(&msg);
}

TEST(filter_and_overlay)
{
	char *src[] = { "A=1", "B=2", "MY_SECRET=s", "noequals", NULL };
	char *over[] = { "B=3", "C=4", "D=5", NULL };
	char **v;

	/* no policy: a copy (entries without '=' dropped) */
	ASSERT_EQ(0, environ_filter_policy(src, NULL, &v));
	ASSERT_STREQ("A=1 B=2 MY_SECRET=s", joined(v));
	environ_strv_free(v);
	/* a policy applies to src whatever `inherit` says */
	ASSERT_EQ(0, environ_filter_policy(src, json("{\"inherit\":\"none\",\"exclude\":[\"b\"]}"), &v));
	ASSERT_STREQ("A=1", joined(v));
	environ_strv_free(v);
	/* over on top of base, except the names keep has */
	ASSERT_EQ(0, environ_overlay(src, over, json("{\"C\":true}"), &v));
	ASSERT_STREQ("A=1 B=3 D=5 MY_SECRET=s", joined(v));
	environ_strv_free(v);
	jrpc_msg_done(&msg);
}

TEST(exec_candidates)
{
	static const struct {
		const char *argv0, *path; /* path NULL: none in envp */
		const char *want;
	} cases[] = {
		{ "/bin/ls", "/a", "/bin/ls" },
		{ "sub/tool", "/a", "sub/tool" },
		{ "ls", "/a:/b", "/a/ls /b/ls" },
		{ "ls", "/a::/b", "/a/ls ./ls /b/ls" }, /* an empty entry: the cwd */
		{ "ls", "", "./ls" },
		{ "", "/a:/b", "" },
		{ "ls", NULL, "/srv/bin/ls /bin/ls" }, /* the server's PATH, in order */
	};

	server_environ();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char pathvar[64], *envp[] = { "X=1", pathvar, NULL }, **v;

		snprintf(pathvar, sizeof(pathvar), "PATH=%s", cases[i].path ? cases[i].path : "");
		if (!cases[i].path)
			envp[1] = NULL;
		ASSERT_EQ(0, environ_exec_candidates(cases[i].argv0, envp, &v));
		ASSERT_STREQ(cases[i].want, in_order(v)); /* PATH's order */
		environ_strv_free(v);
	}
}

/* A scratch tree: bin/tool (executable), bin/plain (not), bin/dir/ (a directory). */
static char scratch[64];

static void make_tree(void)
{
	char p[128];
	int fd;

	snprintf(scratch, sizeof(scratch), "/tmp/uexec-test-environ-XXXXXX");
	ASSERT_TRUE(mkdtemp(scratch) != NULL);
	snprintf(p, sizeof(p), "%s/bin", scratch);
	ASSERT_EQ(0, mkdir(p, 0755));
	snprintf(p, sizeof(p), "%s/bin/dir", scratch);
	ASSERT_EQ(0, mkdir(p, 0755));
	snprintf(p, sizeof(p), "%s/bin/tool", scratch);
	ASSERT_TRUE((fd = open(p, O_CREAT | O_WRONLY, 0755)) >= 0);
	close(fd);
	snprintf(p, sizeof(p), "%s/bin/plain", scratch);
	ASSERT_TRUE((fd = open(p, O_CREAT | O_WRONLY, 0644)) >= 0);
	close(fd);
}

/* t with each '@' replaced by the scratch directory. */
static void with_scratch(char *out, size_t size, const char *t)
{
	size_t o = 0;

	for (; *t && o + sizeof(scratch) < size; t++)
		if (*t == '@')
			o += (size_t)snprintf(out + o, size - o, "%s", scratch);
		else
			out[o++] = *t;
	out[o] = 0;
}

static void remove_tree(void)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/bin/tool", scratch);
	unlink(p);
	snprintf(p, sizeof(p), "%s/bin/plain", scratch);
	unlink(p);
	snprintf(p, sizeof(p), "%s/bin/dir", scratch);
	rmdir(p);
	snprintf(p, sizeof(p), "%s/bin", scratch);
	rmdir(p);
	rmdir(scratch);
}

TEST(pty_dir)
{
	char buf[256], *home[] = { "HOME=/home/h", NULL }, *none[] = { NULL };

	ASSERT_STREQ("/tmp", environ_pty_dir("/tmp", home, buf, sizeof(buf)));
	ASSERT_STREQ("/home/h", environ_pty_dir("/no/such/dir", home, buf, sizeof(buf)));
	ASSERT_STREQ("/home/h", environ_pty_dir(NULL, home, buf, sizeof(buf)));
	ASSERT_TRUE(environ_pty_dir(NULL, none, buf, sizeof(buf)) != NULL); /* the user's home or / */
	ASSERT_TRUE(buf[0] == '/');
	ASSERT_TRUE(environ_pty_dir("/tmp", home, buf, 4) == NULL); /* does not fit */
}

TEST(pty_resolve)
{
	static const struct {
		const char *argv0, *path; /* path NULL: no PATH; '@' is the scratch dir */
		int r;
		const char *want; /* the resolved path or the message; '@': the scratch dir */
	} cases[] = {
		{ "/abs/prog", NULL, 0, "/abs/prog" },
		{ "./bin/tool", NULL, 0, "@/./bin/tool" },
		{ "./bin/plain", NULL, -ENOENT, "Unable to spawn @/./bin/plain because it is not executable" },
		{ "../x/none", NULL, -ENOENT, "Unable to spawn @/../x/none because it does not exist" },
		{ "./bin/dir", NULL, -ENOENT, "Unable to spawn @/./bin/dir because it is a directory" },
		{ "tool", "bin", 0, "@/bin/tool" }, /* relative entries: joined to the directory */
		{ "tool", "/nowhere:@/bin", 0, "@/bin/tool" },
		{ "plain", "bin:/nowhere", -ENOENT,
		  "Unable to spawn plain because:\n@/bin/plain exists but is not executable.\n"
		  "No viable candidates found in PATH \"bin:/nowhere\"" },
		{ "dir", "bin", -ENOENT,
		  "Unable to spawn dir because:\n@/bin/dir exists but is a directory.\n"
		  "No viable candidates found in PATH \"bin\"" },
		{ "tool", NULL, -ENOENT, "Unable to spawn tool because:\nUnable to resolve the PATH" },
	};

	make_tree();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char pathvar[256], want[512], *envp[] = { pathvar, NULL }, *got = NULL, *m = NULL;
		int r;

		if (cases[i].path) {
			memcpy(pathvar, "PATH=", 5);
			with_scratch(pathvar + 5, sizeof(pathvar) - 5, cases[i].path);
		} else {
			snprintf(pathvar, sizeof(pathvar), "OTHER=1");
		}
		with_scratch(want, sizeof(want), cases[i].want);
		r = environ_pty_resolve(cases[i].argv0, envp, scratch, &got, &m);
		if (r != cases[i].r || strcmp(r ? m : got, want) != 0)
			tests_fail(__FILE__, __LINE__, "case %zu: got %d \"%s\", wanted %d \"%s\"", i, r,
				   r ? m : got, cases[i].r, want);
		ASSERT_TRUE(r ? got == NULL : m == NULL);
		free(got);
		free(m);
	}
	remove_tree();
}

TEST_MAIN()
