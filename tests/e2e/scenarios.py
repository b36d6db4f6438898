"""End-to-end scenarios for tests/e2e/run.py.

Each scenario scripts the mock model as a generator (see mock_model.py): it
yields the model's output items for the current request and receives the
ToolResult of its last tool call (the text the CLI sent back to the model).
Checks go through ctx.check()/ctx.expect_in(); post() runs after the CLI has
exited and can inspect the exec-server transcript (ctx.rpc(), ctx.notifications())
and the work directory.

Plain remote mode (run.py --remote) has no transcript (the relay is encrypted end to
end): ctx.transcript is False, and a check that can only be made on the transcript is
skipped by name (ctx.skip(...), listed on the PASS/FAIL line) while the rest of the
scenario runs - the tool output the model got, files and processes on the host, and
run.py's relay-log checks stand for it. --forward mode has the transcript.

Tools exposed by codex 0.169.0 to the model used here ("gpt-5.5" family):
  exec_command {cmd, workdir?, tty?, yield_time_ms?, login?, shell?, max_output_tokens?}
  write_stdin  {session_id (number), chars?, yield_time_ms?, max_output_tokens?}
  view_image   {path}
  apply_patch  FREEFORM custom tool: the raw "*** Begin Patch ... *** End Patch" text
exec_command / write_stdin answer with text like
  "Chunk ID: ..\nWall time: ..\nProcess exited with code 0\nOriginal token count: ..\nOutput:\n..."
or "Process running with session ID <n>" while the command is still running.
"""
import base64
import os
import re
import subprocess
import time

from mock_model import custom_tool_call, function_call, message

# 1x1 PNG (also used by the recorded real-client image scenario)
PIXEL_PNG_B64 = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAA"
                 "AABJRU5ErkJggg==")

EXIT_RE = re.compile(r"Process exited with code (-?\d+)")
SESSION_RE = re.compile(r"session ID (\d+)")


def exit_code(text):
    m = EXIT_RE.search(text or "")
    return int(m.group(1)) if m else None


def session_id(text):
    m = SESSION_RE.search(text or "")
    return int(m.group(1)) if m else None


def b64(s):
    return base64.b64encode(s.encode()).decode()


class Scenario:
    name = "?"
    doc = ""
    model = "gpt-5.5"      # a model whose tool set has exec_command, write_stdin, apply_patch, view_image
    cli_args = []
    sandbox = "danger-full-access"  # codex exec -s <mode>
    prompt = "run the scripted e2e scenario"

    def setup(self, ctx):
        pass

    def script(self, ctx):
        raise NotImplementedError

    def post(self, ctx):
        pass

    # helpers ------------------------------------------------------------------
    @staticmethod
    def exec_command(ctx, cmd, **kw):
        args = {"cmd": cmd}
        args.update(kw)
        return [function_call("exec_command", args, ctx.call_id())]

    @staticmethod
    def write_stdin(ctx, sid, chars="", **kw):
        args = {"session_id": sid, "chars": chars}
        args.update(kw)
        return [function_call("write_stdin", args, ctx.call_id())]

    @staticmethod
    def started(ctx, needle):
        """process/start requests whose argv mentions needle -> [(params, reply)]"""
        return [(p, r) for p, r in ctx.rpc("process/start")
                if needle in " ".join((p or {}).get("argv") or [])]

    def check_remote_process(self, ctx, needle, tty=None, exit_code_=None, closed=True):
        """The command really ran on the exec-server: start ok, exited/closed notifications.
        Plain remote mode has no transcript (the relay is encrypted): run.check_relay() and
        the tool output stand for it."""
        if not ctx.transcript:
            ctx.skip("process/start+exited+closed")
            return None
        st = self.started(ctx, needle)
        if not ctx.check(st, "no process/start for a command containing %r on the exec-server"
                         % needle):
            return None
        params, reply = st[0]
        ctx.check(reply and "result" in reply, "process/start failed: %r" % (reply,))
        if tty is not None:
            ctx.check(params.get("tty") is tty, "process/start tty=%r, want %r"
                      % (params.get("tty"), tty))
        pid = params["processId"]
        if exit_code_ is not None:
            ex = ctx.notifications("process/exited", pid)
            ctx.check(ex and ex[0].get("exitCode") == exit_code_,
                      "process/exited for %s: %r (want exitCode %d)" % (pid, ex, exit_code_))
        if closed:
            ctx.check(ctx.notifications("process/closed", pid), "no process/closed for %s" % pid)
        return pid


class Basic(Scenario):
    name = "basic"
    doc = "(a) exec_command; stdout and exit code reach the model"

    def script(self, ctx):
        r = yield self.exec_command(
            ctx, "echo hello-from-remote-%s; uname -s; pwd; grep ^Seccomp: /proc/self/status"
            % ctx.mark, yield_time_ms=10000)
        ctx.expect_in("hello-from-remote-%s\n" % ctx.mark, r.text, "tool output")
        ctx.expect_in("Linux", r.text, "tool output")
        ctx.expect_in(ctx.workdir, r.text, "tool output (pwd)")
        ctx.check(exit_code(r.text) == 0, "exit code 0 not reported: %r" % r.text[-400:])
        if ctx.sandbox != "danger-full-access":
            # visible without a transcript: the command ran under a seccomp filter
            ctx.check(re.search(r"Seccomp:\s*2", r.text),
                      "-s %s: the command ran without a seccomp filter: %r"
                      % (ctx.sandbox, r.text[-300:]))
        yield [message("basic done")]

    def post(self, ctx):
        self.check_remote_process(ctx, "hello-from-remote-" + ctx.mark, tty=False, exit_code_=0)
        if ctx.transcript:
            st = self.started(ctx, "hello-from-remote-" + ctx.mark)
            want = ctx.sandbox != "danger-full-access"
            ctx.check(not st or bool(st[0][0].get("sandbox")) == want,
                      "-s %s: process/start sandbox %r" % (ctx.sandbox, st and
                                                          st[0][0].get("sandbox")))


class ExitCode(Scenario):
    name = "exitcode"
    doc = "(a') stdout + stderr and a non-zero exit code reach the model"

    def script(self, ctx):
        r = yield self.exec_command(
            ctx, "echo out-%s; echo err-%s >&2; exit 3" % (ctx.mark, ctx.mark),
            yield_time_ms=10000)
        ctx.expect_in("out-" + ctx.mark, r.text, "stdout in tool output")
        ctx.expect_in("err-" + ctx.mark, r.text, "stderr in tool output")
        ctx.check(exit_code(r.text) == 3, "exit code 3 not reported: %r" % r.text[-400:])
        yield [message("exitcode done")]

    def post(self, ctx):
        self.check_remote_process(ctx, "out-" + ctx.mark, tty=False, exit_code_=3)


class Poll(Scenario):
    name = "poll"
    doc = "(b) long-running command polled with write_stdin (empty input) until it exits"

    def script(self, ctx):
        m = ctx.mark
        r = yield self.exec_command(
            ctx, "echo start-poll-%s; sleep 2; echo mid-poll-%s; sleep 2; echo done-poll-%s"
            % (m, m, m), yield_time_ms=500)
        sid = session_id(r.text)
        ctx.check(sid is not None and exit_code(r.text) is None,
                  "first yield should report a running session: %r" % r.text[-400:])
        ctx.expect_in("start-poll-" + m, r.text, "first yield output")
        seen = r.text
        polls = 0
        while sid is not None and exit_code(r.text) is None and polls < 8:
            polls += 1
            r = yield self.write_stdin(ctx, sid, "", yield_time_ms=3000)
            seen += r.text
        ctx.check(polls >= 1, "no write_stdin poll was needed")
        ctx.check(exit_code(r.text) == 0, "last poll did not report exit 0: %r" % r.text[-400:])
        ctx.expect_in("mid-poll-" + m, seen, "polled output")
        ctx.expect_in("done-poll-" + m, seen, "polled output")
        yield [message("poll done")]

    def post(self, ctx):
        self.check_remote_process(ctx, "start-poll-" + ctx.mark, tty=False, exit_code_=0)


class Stdin(Scenario):
    name = "stdin"
    doc = "(c) PTY command reading stdin: tty=true, write_stdin with input, echo back"

    def script(self, ctx):
        r = yield self.exec_command(ctx, "[ -t 0 ] && echo on-a-tty-%s; read line; echo got-$line"
                                    % ctx.mark, tty=True, yield_time_ms=500)
        first = r.text
        sid = session_id(r.text)
        ctx.check(sid is not None, "tty command should still be running: %r" % r.text[-400:])
        if sid is None:
            yield [message("stdin aborted")]
            return
        r = yield self.write_stdin(ctx, sid, ctx.mark + "\n", yield_time_ms=3000)
        seen = first + r.text
        polls = 0
        while exit_code(r.text) is None and polls < 4:
            polls += 1
            r = yield self.write_stdin(ctx, sid, "", yield_time_ms=3000)
            seen += r.text
        ctx.expect_in("got-" + ctx.mark, seen, "tool output after write_stdin")
        # (the sandboxed reference may take longer than the first 500 ms yield to start)
        ctx.expect_in("on-a-tty-" + ctx.mark, seen, "stdin is a terminal")
        ctx.check(exit_code(r.text) == 0, "exit 0 not reported: %r" % r.text[-400:])
        yield [message("stdin done")]

    def post(self, ctx):
        pid = self.check_remote_process(ctx, "read line; echo got-$line", tty=True, exit_code_=0)
        if not ctx.transcript:
            ctx.skip("process/write accepted, pty stream")
        if not pid:
            return
        writes = [(p, r) for p, r in ctx.rpc("process/write") if p.get("processId") == pid]
        ctx.check(any(base64.b64decode(p.get("chunk", "")) == (ctx.mark + "\n").encode()
                      and r and r.get("result", {}).get("status") == "accepted"
                      for p, r in writes),
                  "no accepted process/write of the input line: %r" % writes)
        out = b"".join(base64.b64decode(n["chunk"])
                       for n in ctx.notifications("process/output", pid))
        streams = {n["stream"] for n in ctx.notifications("process/output", pid)}
        ctx.check(streams == {"pty"}, "PTY output streams: %r" % streams)
        ctx.check(("got-" + ctx.mark).encode() in out, "PTY output lacks the echo: %r" % out)


class Patch(Scenario):
    name = "patch"
    doc = "(d) apply_patch creates a file (via fs/* on the exec-server); check it on disk"

    def script(self, ctx):
        fname = "patched-%s.txt" % ctx.mark
        patch = ("*** Begin Patch\n*** Add File: %s\n+hello patch %s\n+second line\n"
                 "*** End Patch\n" % (fname, ctx.mark))
        r = yield [custom_tool_call("apply_patch", patch, ctx.call_id())]
        ctx.check(r.found, "no custom_tool_call_output for apply_patch")
        ctx.check(re.search(r"(?i)success|A " + re.escape(fname), r.text),
                  "apply_patch output does not report success: %r" % r.text[-400:])
        r = yield self.exec_command(ctx, "cat " + fname, yield_time_ms=10000)
        ctx.expect_in("hello patch %s\nsecond line" % ctx.mark, r.text, "cat output")
        yield [message("patch done")]

    def post(self, ctx):
        path = os.path.join(ctx.workdir, "patched-%s.txt" % ctx.mark)
        try:
            data = open(path).read()
        except OSError as e:
            ctx.failures.append("patched file missing on disk: %s" % e)
            data = None
        if data is not None:
            ctx.check(data == "hello patch %s\nsecond line\n" % ctx.mark,
                      "patched file content %r" % data)
        if not ctx.transcript:
            ctx.skip("fs/writeFile")
            return
        writes = [(p, r) for p, r in ctx.rpc("fs/writeFile") if p.get("path", "").endswith(
            "patched-%s.txt" % ctx.mark)]
        ctx.check(writes and writes[0][1] and "result" in writes[0][1],
                  "no successful fs/writeFile of the patched file on the exec-server: %r" % writes)


class Image(Scenario):
    name = "image"
    doc = "(e) a command writes a PNG, then view_image returns it to the model"

    def script(self, ctx):
        fname = "pixel-%s.png" % ctx.mark
        r = yield self.exec_command(
            ctx, "printf %%s %s | base64 -d > %s && echo wrote-%s" % (PIXEL_PNG_B64, fname, ctx.mark),
            yield_time_ms=10000)
        ctx.expect_in("wrote-" + ctx.mark, r.text, "tool output")
        r = yield [function_call("view_image", {"path": fname}, ctx.call_id())]
        ctx.check(r.found, "no function_call_output for view_image")
        ctx.check(r.images, "view_image output carries no image: %r" % (r.item,))
        if r.images:
            url = r.images[0] or ""
            ctx.check(url.startswith("data:image/png;base64,"), "image url %r" % url[:80])
            try:
                raw = base64.b64decode(url.split(",", 1)[1])
                ctx.check(raw == base64.b64decode(PIXEL_PNG_B64),
                          "image bytes differ from the PNG on disk: %r" % raw[:40])
            except Exception as e:  # noqa: BLE001
                ctx.failures.append("image data url undecodable: %r" % e)
        yield [message("image done")]

    def post(self, ctx):
        self.check_remote_process(ctx, "wrote-" + ctx.mark, tty=False, exit_code_=0)
        # the model got the PNG's exact bytes (checked in script()) and the file is on the host
        ctx.check(os.path.exists(os.path.join(ctx.workdir, "pixel-%s.png" % ctx.mark)),
                  "the PNG is missing on the host")
        if not ctx.transcript:
            ctx.skip("fs/readFile")
            return
        reads = [(p, r) for p, r in ctx.rpc("fs/readFile")
                 if p.get("path", "").endswith("pixel-%s.png" % ctx.mark)]
        ctx.check(reads and reads[0][1] and reads[0][1].get("result", {}).get("dataBase64")
                  == PIXEL_PNG_B64,
                  "no fs/readFile of the PNG returning its bytes: %r" % reads)


class Kill(Scenario):
    name = "kill"
    doc = "(f) a running command is abandoned at the end of the turn: terminate kills it"

    def script(self, ctx):
        # the child sleep carries the marker in its argv too (exec -a), so that the pgrep
        # below sees the whole process tree, not just the shell
        r = yield self.exec_command(ctx, "echo sleeping-%s; (exec -a sleeping-%s-child sleep 30);"
                                    " echo woke" % (ctx.mark, ctx.mark), yield_time_ms=1000)
        ctx.expect_in("sleeping-" + ctx.mark, r.text, "first yield")
        ctx.check(session_id(r.text) is not None, "should still be running: %r" % r.text[-300:])
        yield [message("kill done (leaving the sleep behind)")]

    def post(self, ctx):
        if ctx.transcript:
            st = self.started(ctx, "sleeping-" + ctx.mark)
            if not ctx.check(st, "no process/start for the sleep"):
                return
            pid = st[0][0]["processId"]
            terms = [r for p, r in ctx.rpc("process/terminate") if p.get("processId") == pid]
            ctx.check(terms and any(r and r.get("result", {}).get("running") is True
                                    for r in terms),
                      "no process/terminate answered running:true: %r" % terms)
        else:
            ctx.skip("process/terminate answered running:true")
        # the shell and its sleep must be gone from the host
        deadline = time.time() + 3
        alive = True
        while time.time() < deadline:
            alive = subprocess.run(["pgrep", "-f", "sleeping-" + ctx.mark],
                                   stdout=subprocess.DEVNULL).returncode == 0
            if not alive:
                break
            time.sleep(0.2)
        ctx.check(not alive, "process group still alive after terminate")


class SandboxWorkspaceWrite(Scenario):
    name = "sandbox-ws"
    sandbox = "workspace-write"
    doc = ("(issue 5) -s workspace-write: a command writing inside the workspace succeeds, a "
           "write outside fails with sandboxDenied: true, apply_patch writes through the "
           "sandboxed fs path")

    def setup(self, ctx):
        self.outside = os.path.join(ctx.outdir, "outside")
        os.makedirs(self.outside, exist_ok=True)

    def script(self, ctx):
        m = ctx.mark
        r = yield self.exec_command(
            ctx, "echo in-%s > inside-%s.txt && cat inside-%s.txt && grep ^Seccomp: /proc/self/status"
            % (m, m, m), yield_time_ms=10000)
        ctx.check(exit_code(r.text) == 0, "inside write failed: %r" % r.text[-400:])
        ctx.expect_in("in-" + m, r.text, "inside command output")
        ctx.check(re.search(r"Seccomp:\s*2", r.text), "no seccomp filter: %r" % r.text[-300:])
        r = yield self.exec_command(
            ctx, "echo out-%s > %s/x-%s" % (m, self.outside, m), yield_time_ms=10000)
        ctx.check(exit_code(r.text) not in (0, None), "outside write did not fail: %r" % r.text[-400:])
        ctx.expect_in("Read-only file system", r.text, "outside write error")
        # (issue 14) a failure that only prints the heuristic's words
        r = yield self.exec_command(
            ctx, "echo 'permission denied: pd-%s' >&2; exit 1" % m, yield_time_ms=10000)
        ctx.check(exit_code(r.text) == 1, "pd command: %r" % r.text[-400:])
        # ... and a refused socket() whose error is swallowed (uexec: a `denials` member)
        r = yield self.exec_command(
            ctx, "/usr/bin/python3 -c 'import socket; socket.socket()' 2>/dev/null || exit 3; "
            "echo sw-%s" % m, yield_time_ms=10000)
        ctx.check(exit_code(r.text) == 3, "swallowed command: %r" % r.text[-400:])
        patch = ("*** Begin Patch\n*** Add File: ws-patched-%s.txt\n+patched %s\n*** End Patch\n"
                 % (m, m))
        r = yield [custom_tool_call("apply_patch", patch, ctx.call_id())]
        ctx.check(r.found, "no custom_tool_call_output for apply_patch")
        ctx.check(re.search(r"(?i)success", r.text),
                  "apply_patch output does not report success: %r" % r.text[-400:])
        yield [message("sandbox-ws done")]

    def post(self, ctx):
        m = ctx.mark
        inside = self.check_remote_process(ctx, "inside-" + m, exit_code_=0)
        outside = self.check_remote_process(ctx, "out-" + m)
        words = self.check_remote_process(ctx, "pd-" + m, exit_code_=1)
        swallowed = self.check_remote_process(ctx, "sw-" + m, exit_code_=3)
        if ctx.transcript:
            # with denial evidence (uexec's uexecDenialEvidence capability) the words alone
            # are no denial; the reference's heuristic says they are
            caps = [((rep or {}).get("result") or {}).get("environmentInfo", {}).get(
                "capabilities", {}) for _, rep in ctx.rpc("initialize")]
            evidence = any(c.get("uexecDenialEvidence") is True for c in caps)
            for pid, want in ((inside, False), (outside, True), (words, not evidence),
                              (swallowed, evidence)):
                ex = ctx.notifications("process/exited", pid) if pid else []
                ctx.check(ex and ex[0].get("sandboxDenied") is want,
                          "process/exited of %s: %r (want sandboxDenied %r)" % (pid, ex, want))
            ex = ctx.notifications("process/exited", swallowed) if swallowed else []
            if evidence:
                ctx.check(ex and any(d.get("syscall") == 41 for d in ex[0].get("denials", [])),
                          "no socket() denial on process/exited: %r" % ex)
            starts = [rep for p, rep in ctx.rpc("process/start") if p.get("sandbox")]
            ctx.check(starts and all(rep and rep.get("result", {}).get("sandboxType")
                                     == "linuxSeccomp" for rep in starts),
                      "sandboxed starts: %r" % starts)
        else:
            ctx.skip("sandboxDenied, sandboxType")
        ctx.check(not os.path.exists(os.path.join(self.outside, "x-" + m)),
                  "the outside write reached the host")
        ctx.check(os.path.exists(os.path.join(ctx.workdir, "inside-%s.txt" % m)),
                  "the inside write is missing on the host")
        path = os.path.join(ctx.workdir, "ws-patched-%s.txt" % m)
        ctx.check(os.path.exists(path) and open(path).read() == "patched %s\n" % m,
                  "apply_patch result missing on the host")
        for name in (".agents", ".codex"):
            ctx.check(not os.path.exists(os.path.join(ctx.workdir, name)),
                      "synthetic %s left behind in the workspace" % name)


class SandboxReadOnly(Scenario):
    name = "sandbox-ro"
    sandbox = "read-only"
    doc = "(issue 5) -s read-only: reads work, a write in the workspace fails with sandboxDenied"

    def script(self, ctx):
        m = ctx.mark
        r = yield self.exec_command(ctx, "cat /etc/hostname >/dev/null && echo read-ok-%s && "
                                    "grep ^Seccomp: /proc/self/status" % m, yield_time_ms=10000)
        ctx.expect_in("read-ok-" + m, r.text, "read command output")
        ctx.check(re.search(r"Seccomp:\s*2", r.text), "no seccomp filter: %r" % r.text[-300:])
        r = yield self.exec_command(ctx, "echo ro-%s > ro-%s.txt" % (m, m), yield_time_ms=10000)
        ctx.check(exit_code(r.text) not in (0, None), "read-only write did not fail: %r"
                  % r.text[-400:])
        yield [message("sandbox-ro done")]

    def post(self, ctx):
        m = ctx.mark
        pid = self.check_remote_process(ctx, "ro-%s > ro-" % m)
        if ctx.transcript:
            ex = ctx.notifications("process/exited", pid) if pid else []
            ctx.check(ex and ex[0].get("sandboxDenied") is True,
                      "process/exited of the denied write: %r" % ex)
        else:
            ctx.skip("sandboxDenied")
        ctx.check(not os.path.exists(os.path.join(ctx.workdir, "ro-%s.txt" % m)),
                  "the read-only write reached the host")


class ManagedNetwork(Scenario):
    name = "managed-network"
    sandbox = "workspace-write"
    doc = ("(issue 22) the CLI's managed network (NETWORK.md): every command starts with the "
           "executor's proxy; the proxy refuses a local address and an unlisted domain as the "
           "reference's does; a direct connection bypassing it fails")
    # appended to run.py's config.toml ([features] is the last table there)
    config_extra = """network_proxy = true

[sandbox_workspace_write]
network_access = true

[network]
enabled = true
mode = "full"
"""

    def setup(self, ctx):
        import http.server
        import threading

        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Length", "6")
                self.end_headers()
                self.wfile.write(b"origin")

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.port = self.srv.server_address[1]

    def script(self, ctx):
        m, port = ctx.mark, self.port
        r = yield self.exec_command(
            ctx, "echo mn-%s; curl -sS http://127.0.0.1:%d/" % (m, port), yield_time_ms=15000)
        ctx.expect_in("mn-" + m, r.text, "the command ran")
        ctx.expect_in('"reason":"not_allowed_local"', r.text, "local address refused by the proxy")
        r = yield self.exec_command(
            ctx, "echo md-%s; curl -sS http://denied.invalid/" % m, yield_time_ms=15000)
        ctx.expect_in('"reason":"not_allowed"', r.text, "unlisted domain refused by the proxy")
        r = yield self.exec_command(
            ctx, "echo mb-%s; curl -sS --noproxy '*' http://127.0.0.1:%d/ 2>&1; echo rc=$?"
            % (m, port), yield_time_ms=15000)
        ctx.expect_in("rc=7", r.text, "direct connection bypassing the proxy fails")
        ctx.check("origin" not in r.text.split("mb-" + m, 1)[-1], "the origin was reached directly")
        yield [message("managed-network done")]

    def post(self, ctx):
        self.srv.shutdown()
        pid = self.check_remote_process(ctx, "mn-" + ctx.mark)
        if not ctx.transcript or not pid:
            return
        params = self.started(ctx, "mn-" + ctx.mark)[0][0]
        ctx.check(params.get("enforceManagedNetwork") is True and params.get("networkProxy"),
                  "process/start without the managed network: %r" % params)
        decisions = ctx.notifications("network/policyDecision", pid)
        ctx.check(any(d.get("reason") == "not_allowed_local" for d in decisions),
                  "no network/policyDecision for the refusal: %r" % decisions)


class Upgrade(Scenario):
    name = "upgrade"
    doc = ("(h) a live upgrade (SIGUSR2, issue 26) while a command prints: the model gets "
           "every line once, in order, and the exit code (uexec only; the others run it "
           "without the signal)")
    lines = 60

    def script(self, ctx):
        m = ctx.mark
        r = yield self.exec_command(
            ctx, "for i in $(seq 1 %d); do echo up-$i-%s; sleep 0.05; done; %secho done-%s; "
            "exit 5" % (self.lines, m, self.tail, m), yield_time_ms=500)
        sid = session_id(r.text)
        seen = r.text
        ctx.check(sid is not None and exit_code(r.text) is None,
                  "first yield should report a running session: %r" % r.text[-400:])
        if ctx.server_kind == "uexec" and ctx.server_pid:
            ctx.upgrade_server()
        polls = 0
        while sid is not None and exit_code(r.text) is None and polls < 10:
            polls += 1
            r = yield self.write_stdin(ctx, sid, "", yield_time_ms=3000)
            seen += r.text
        ctx.check(exit_code(r.text) == 5, "exit code 5 not reported: %r" % r.text[-400:])
        got = re.findall(r"up-(\d+)-" + m, seen)
        ctx.check(got == [str(i) for i in range(1, self.lines + 1)],
                  "the command's lines are not all there once and in order: %r" % got)
        ctx.expect_in("done-" + m, seen, "the last line")
        self.check_tail(ctx, seen)
        yield [message("upgrade done")]

    tail = ""  # shell run after the lines, before the last one

    def check_tail(self, ctx, seen):
        pass

    def post(self, ctx):
        self.check_remote_process(ctx, "up-$i-" + ctx.mark, tty=False, exit_code_=5)


class UpgradeManagedNetwork(Upgrade):
    name = "upgrade-mn"
    sandbox = "workspace-write"
    doc = ("(h') the upgrade scenario with the CLI's managed network on: the command's proxy "
           "is handed over and still refuses an unlisted domain after the upgrade")
    config_extra = ManagedNetwork.config_extra
    tail = "curl -sS http://denied.invalid/; echo; "

    def check_tail(self, ctx, seen):
        ctx.expect_in('"reason":"not_allowed"', seen,
                      "unlisted domain refused by the proxy after the upgrade")


def all_scenarios():
    return [Basic(), ExitCode(), Poll(), Stdin(), Patch(), Image(), Kill(),
            SandboxWorkspaceWrite(), SandboxReadOnly(), ManagedNetwork(), Upgrade(),
            UpgradeManagedNetwork()]
