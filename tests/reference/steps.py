"""Exchange scripts replayed against the reference exec-server and uexec.

A script is {"name", "doc", "handshake" (default True: initialize + initialized
first), "steps": [...]}; each step is a dict with an "op" (see diffharness.run_script):

  req          send {"id", "method", "params"} and record the response
               (id defaults to a fresh integer; "nowait": True sends only;
               "summarize": "read" records a process/read result without chunk
               boundaries/nextSeq)
  await        record the response to an earlier nowait request
  notify       send a notification (no observation)
  raw          send raw text; "expect_id" records the response with that id
  quiet        record every frame arriving within `secs` (expect none)
  sleep        pause
  wait_output  wait until a process's output contains `text`
  collect      wait for process/closed; record concatenated output per stream,
               exit events, closed count, seq invariants ("exact": True records the
               notifications verbatim - only for deterministic chunking)
  expect_closed  record whether the server closed the connection within `timeout`
  close        send a Close frame, record the outcome
  order        record the arrival order of the responses with the given ids
  body_deltas  wait for the terminal http/request/bodyDelta of `request_id`; record the
               body, whether seq ran from 1, the terminal delta (chunking ignored)

"allow": [...] lists KNOWN_DIFFS accepted for that step. A script's "files" ({path: text})
are written (after removing its "clean" directories) before both servers restart, for state
a server reads at start-up ("$CODEXHOMEPATH" is their shared CODEX_HOME). "$CWDURI" / "$CWDPATH"
are replaced by the shared work directory (file: URI / native path).
"$HTTPURL" ("http://127.0.0.1:PORT"), "$HTTPADDR" and "$HTTPPORT" are replaced by the harness's
local HTTP server (http_fixture.py).

To add methods (fs/*), append scripts to SCRIPTS; nothing else needs changing.
"""

SH = "/bin/sh"
PATH_ENV = {"PATH": "/usr/bin:/bin"}


def req(method, params=None, label=None, **kw):
    st = {"op": "req", "method": method}
    if params is not None:
        st["params"] = params
    st["label"] = label or method
    st.update(kw)
    return st


def start(pid, script, tty=False, label=None, env=None, **extra):
    p = {"processId": pid, "argv": [SH, "-c", script], "cwd": "$CWDURI",
         "env": dict(PATH_ENV) if env is None else env, "tty": tty}
    p.update(extra)
    return req("process/start", p, label=label or "start %s" % pid)


def collect(pid, exact=False, timeout=15, **kw):
    return dict({"op": "collect", "pid": pid, "exact": exact, "timeout": timeout,
                 "label": "collect %s" % pid}, **kw)


def read(pid, label, summarize=None, **params):
    p = {"processId": pid}
    p.update(params)
    st = req("process/read", p, label=label)
    if summarize:
        st["summarize"] = summarize
    return st


def write(pid, data, write_id, label, **kw):
    import base64
    return req("process/write", {"processId": pid, "chunk": base64.b64encode(
        data.encode()).decode(), "writeId": write_id}, label=label, **kw)


# deterministic chunking: separate writes with pauses (4, 6, 8, 2 bytes)
CHUNKY = ("printf out1; sleep 0.3; printf err-01 >&2; sleep 0.3; printf out2-xyz; sleep 0.3; "
          "printf ok; sleep 0.3; exit 3")

# a workspace-write sandbox object as the real client sends it
SANDBOX_WW = {
    "permissions": {"type": "managed", "file_system": {"type": "restricted", "entries": [
        {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"},
        {"path": {"type": "special", "value": {"kind": "project_roots"}}, "access": "write"},
        {"path": {"type": "special", "value": {"kind": "slash_tmp"}}, "access": "write"}]},
        "network": "restricted"},
    "cwd": "$CWDURI", "workspaceRoots": ["$CWDURI"], "windowsSandboxLevel": "disabled",
    "windowsSandboxProxySettingsMode": "reconcile", "useLegacyLandlock": False}

SCRIPTS = [
    {"name": "handshake", "doc": "initialize/initialized, repeat initialize, info/status",
     "handshake": False, "steps": [
         req("initialize", {"clientName": "uexec-diff", "resumeSessionId": None}, id=1),
         {"op": "notify", "method": "initialized", "params": {}},
         {"op": "quiet", "secs": 0.3, "label": "no reply to initialized"},
         {"op": "notify", "method": "initialized", "params": None},
         req("initialize", {"clientName": "again"}, label="second initialize", id=2),
         req("environment/info", label="environment/info"),
         req("environment/status", label="environment/status (no params)"),
         {"op": "req", "method": "environment/status", "params": None,
          "label": "environment/status null"},
         req("environment/status", {}, label="environment/status {}"),
         req("environment/status", {"x": 1}, label="environment/status non-empty"),
         req("environment/status", label="string id", id="abc"),
         req("environment/status", label="negative id", id=-7),
     ]},
    {"name": "gating", "doc": "methods before initialize / before initialized",
     "handshake": False, "steps": [
         req("process/start", {"processId": "g", "argv": ["true"], "cwd": "$CWDURI",
                               "env": {}, "tty": False}, label="process/start before initialize"),
         req("process/read", {"processId": "g"}, label="process/read before initialize"),
         req("environment/status", label="environment/status before initialize"),
         req("environment/info", label="environment/info before initialize"),
         req("initialize", {"clientName": "uexec-diff"}, id=1),
         req("process/start", {"processId": "g", "argv": ["true"], "cwd": "$CWDURI",
                               "env": {}, "tty": False}, label="process/start before initialized"),
         req("environment/status", label="environment/status before initialized"),
         {"op": "notify", "method": "initialized", "params": {}},
         req("environment/status", label="environment/status after initialized"),
     ]},
    {"name": "gating_fs", "doc": "fs family gating (fs methods land later)",
     "handshake": False, "steps": [
         req("fs/getMetadata", {"path": "$CWDURI"}, label="fs/getMetadata before initialize"),
         req("initialize", {"clientName": "uexec-diff"}, id=1),
         req("fs/getMetadata", {"path": "$CWDURI"}, label="fs/getMetadata before initialized"),
     ]},
    {"name": "parse_errors", "doc": "unparsable messages get id -1 errors", "steps": [
        {"op": "raw", "text": "{bad", "expect_id": -1, "label": "invalid JSON"},
        {"op": "raw", "text": "[]", "expect_id": -1, "label": "array"},
        {"op": "raw", "text": "5", "expect_id": -1, "label": "number"},
        {"op": "raw", "text": '{"id":null,"method":"environment/status"}', "expect_id": -1,
         "label": "null id"},
        {"op": "raw", "text": '{"id":1.5,"method":"environment/status"}', "expect_id": -1,
         "label": "float id"},
        {"op": "raw", "text": '{"id":23}', "expect_id": -1, "label": "no method/result"},
        {"op": "raw", "text": '{"jsonrpc":"2.0","id":24,"method":"environment/status"}',
         "expect_id": 24, "label": "jsonrpc member ignored"},
        req("environment/status", label="still open after parse errors"),
    ]},
    {"name": "nul_in_keys", "doc": "\\u0000 inside object keys (serde reads it; jansson alone "
     "refuses it)", "steps": [
        {"op": "raw", "text": '{"id":31,"method":"environment/status","\\u0000":0}',
         "expect_id": 31, "label": "unknown NUL key ignored"},
        {"op": "raw", "text": '{"id":32,"method\\u0000":"environment/status"}', "expect_id": -1,
         "label": "method-NUL is not method"},
        {"op": "raw", "text": '{"id":33,"method":"environment/status","params":{"x\\u0000":1}}',
         "expect_id": 33, "label": "NUL key makes unit params a map"},
        {"op": "raw", "text": '{"id":34,"method":"process/start","params":{"processId":"n",'
                              '"argv":["/bin/true"],"cwd":"$CWDURI","env":{"A\\u0000B":"x"},'
                              '"tty":false}}', "expect_id": 34, "label": "NUL in env name"},
        {"op": "raw", "text": '{"id":35,"method":"fs/getMetadata","params":{"path\\u0000":1,'
                              '"path":"$CWDURI"}}', "expect_id": 35, "label": "path-NUL ignored"},
        {"op": "raw", "text": '{"id":36,"method":"fs/open","params":{"handleId":"h",'
                              '"path":"$CWDURI/f","mode":"read\\u0000"}}', "expect_id": 36,
         "label": "fs/open mode read-NUL"},
    ]},
    {"name": "unknown_method", "doc": "-32601 texts", "steps": [
        req("process/resize", {"processId": "x"}, label="process/resize",
            allow=["uexec-extension"]),  # a uexec extension (README "Protocol extensions")
        req("shutdown", label="shutdown"),
        req("process/output", {}, label="notification name as request"),
        req("no/such", {}, label="no/such"),
    ]},
    {"name": "process_pipe", "doc": "pipe process: output/exited/closed, exact seqs", "steps": [
        start("p1", CHUNKY),
        collect("p1", exact=True),
        read("p1", "read all after close"),
        start("p2", "echo to-stdout; echo to-stderr >&2; exit 0"),
        collect("p2"),
        start("p3", "kill -TERM $$"),
        collect("p3"),
        start("p4", "echo $FOO-$BAR; env | sort", env={"FOO": "foo", "BAR": "bar"},
              label="start p4 (env is the whole environment)"),
        collect("p4"),
        start("p5", "printf '%s' \"$0\"", arg0="my-arg0", label="start p5 (arg0)"),
        collect("p5"),
        start("p6", "(sleep 0.5; echo grandchild) & echo parent",
              label="start p6 (grandchild keeps stdout open)"),
        collect("p6"),
    ]},
    {"name": "env_policy", "doc": "envPolicy construction and metadata exports", "steps": [
        start("e1", "env | grep -E '^(HOME|USER|LOGNAME|SET1|KEEP_ME|FOO)=' | sort",
              env={"FOO": "from-env"},
              envPolicy={"inherit": "core", "ignoreDefaultExcludes": False, "exclude": [],
                         "set": {"SET1": "s1"}, "includeOnly": []},
              label="start e1 (inherit core + set)"),
        collect("e1"),
        start("e2", "env | grep -E '^(HOME|SET1|FOO|UEXEC_DIFF_[A-Z_]*)=' | sort",
              env={"FOO": "env-wins"},
              envPolicy={"inherit": "none", "ignoreDefaultExcludes": True, "exclude": [],
                         "set": {"SET1": "s1", "FOO": "set-loses", "UEXEC_DIFF_X": "x"},
                         "includeOnly": ["SET*", "FOO"]},
              label="start e2 (inherit none, includeOnly)"),
        collect("e2"),
        start("e3", "echo $CODEX_THREAD_ID/$CODEX_TOOL_CALL_ID/$NO_COLOR",
              env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"},
              metadata={"threadId": "01a2018a-14ae-7dd2-8762-967295022059",
                        "toolCallId": "call_f0352f3cf98f4caf"},
              envPolicy={"inherit": "all", "ignoreDefaultExcludes": True,
                         "exclude": ["CODEX_PERMISSION_PROFILE", "CODEX_VERSION"],
                         "set": {}, "includeOnly": []},
              arg0=None, sandbox=None, enforceManagedNetwork=False, managedNetwork=None,
              label="start e3 (real-client shape, metadata exported)"),
        collect("e3"),
        req("process/start", {"processId": "e4", "argv": ["true"], "cwd": "$CWDURI", "env": {},
                              "tty": False, "envPolicy": {"inherit": "all"}},
            label="envPolicy missing members"),
    ]},
    {"name": "process_pty", "doc": "tty process: stream pty, CRLF, 24x80", "steps": [
        start("t1", "echo hi; tty >/dev/null && echo is-tty; stty size; echo err >&2",
              tty=True),
        collect("t1"),
        start("t2", "exit 5", tty=True),
        collect("t2"),
    ]},
    {"name": "process_read", "doc": "maxBytes/afterSeq/waitMs rules", "steps": [
        start("r1", CHUNKY),
        collect("r1", exact=True),
        read("r1", "no maxBytes"),
        read("r1", "maxBytes 4", maxBytes=4),
        read("r1", "maxBytes 9", maxBytes=9),
        read("r1", "maxBytes 10", maxBytes=10),
        read("r1", "maxBytes 18", maxBytes=18),
        read("r1", "maxBytes 20", maxBytes=20),
        read("r1", "maxBytes 0", maxBytes=0),
        read("r1", "afterSeq 1", afterSeq=1),
        read("r1", "afterSeq 2 maxBytes 6", afterSeq=2, maxBytes=6),
        read("r1", "afterSeq 100", afterSeq=100),
        read("r1", "afterSeq past end with waitMs", afterSeq=100, waitMs=200),
        read("r1", "nulls", afterSeq=None, maxBytes=None, waitMs=None),
        read("nope", "unknown process"),
        read("r1", "negative afterSeq", afterSeq=-1),
        req("process/read", {}, label="missing processId"),
        start("r2", "sleep 0.5; echo late"),
        read("r2", "long poll woken by output", waitMs=3000, summarize="output"),
        collect("r2"),
    ]},
    {"name": "process_write", "doc": "write statuses, writeId de-duplication", "steps": [
        start("w1", "cat", pipeStdin=True, label="start w1 (cat, pipeStdin)"),
        write("w1", "a", "1", "write a id 1"),
        write("w1", "X", "1", "write X id 1 (dup)"),
        write("w1", "b", "2", "write b id 2"),
        write("w1", "Y", "1", "write Y id 1 (dup again)"),
        write("w1", "c\n", "3", "write c id 3"),
        {"op": "wait_output", "pid": "w1", "text": "abc\n", "timeout": 5,
         "label": "output is abc (dups dropped)"},
        req("process/write", {"processId": "w1", "chunk": "", "writeId": "4"},
            label="empty chunk"),
        req("process/write", {"processId": "w1", "chunk": "YQ=="}, label="missing writeId"),
        req("process/write", {"processId": "w1", "chunk": "YQ==", "writeId": ""},
            label="empty writeId"),
        req("process/write", {"processId": "w1", "chunk": "!!!!", "writeId": "5"},
            label="bad base64 symbol"),
        req("process/write", {"processId": "w1", "chunk": "YQ", "writeId": "6"},
            label="bad base64 padding"),
        req("process/terminate", {"processId": "w1"}, label="terminate w1"),
        collect("w1"),
        write("w1", "z", "7", "write after terminate"),
        start("w2", "sleep 0.2", label="start w2 (no pipeStdin)"),
        write("w2", "a", "1", "write to stdin-less process"),
        collect("w2"),
        write("nope", "a", "1", "write to unknown process"),
    ]},
    {"name": "process_write_pty", "doc": "tty write: echo, accepted after exit", "steps": [
        start("tw", "read l; echo got-$l", tty=True),
        write("tw", "xyz\n", "1", "write line"),
        collect("tw"),
        write("tw", "more\n", "2", "write after exit"),
    ]},
    {"name": "signal", "doc": "process/signal interrupt and bad variants", "steps": [
        start("s1", "trap 'echo int; exit 7' INT; echo ready; while :; do sleep 0.1; done"),
        {"op": "wait_output", "pid": "s1", "text": "ready", "label": "wait ready"},
        req("process/signal", {"processId": "s1", "signal": "interrupt"}, label="interrupt"),
        collect("s1"),
        req("process/signal", {"processId": "s1", "signal": "interrupt"},
            label="interrupt finished process"),
        req("process/signal", {"processId": "nope", "signal": "interrupt"},
            label="interrupt unknown"),
        req("process/signal", {"processId": "s1", "signal": "SIGINT"}, label="SIGINT"),
        req("process/signal", {"processId": "s1", "signal": "terminate"}, label="terminate"),
        req("process/signal", {"processId": "s1", "signal": 2}, label="number"),
    ]},
    {"name": "terminate", "doc": "SIGKILL to the group, running flags", "steps": [
        start("k1", "trap '' TERM INT HUP; sleep 30 & echo started; wait"),
        {"op": "wait_output", "pid": "k1", "text": "started", "label": "wait started"},
        req("process/terminate", {"processId": "k1"}, label="terminate running"),
        collect("k1"),
        req("process/terminate", {"processId": "k1"}, label="terminate again"),
        req("process/terminate", {"processId": "nope"}, label="terminate unknown"),
        start("k2", "echo started; sleep 30", tty=True),
        {"op": "wait_output", "pid": "k2", "text": "started", "label": "wait pty started"},
        req("process/terminate", {"processId": "k2"}, label="terminate pty"),
        collect("k2", allow=["pty-signal-exit"]),
    ]},
    {"name": "bad_params", "doc": "process/start parameter errors", "steps": [
        start("b1", "true"),
        collect("b1"),
        start("b1", "true", label="duplicate processId"),
        req("process/start", {"processId": "b2", "cwd": "$CWDURI", "env": {}, "tty": False},
            label="missing argv"),
        req("process/start", {"processId": "b3", "argv": [], "cwd": "$CWDURI", "env": {},
                              "tty": False}, label="empty argv"),
        req("process/start", {"processId": "b4", "argv": ["true"], "cwd": "$CWDURI", "env": {}},
            label="missing tty"),
        req("process/start", {"processId": "b5", "argv": ["true"], "cwd": "$CWDURI",
                              "tty": False}, label="missing env"),
        req("process/start", {"processId": "b6", "argv": ["/nonexistent/prog"],
                              "cwd": "$CWDURI", "env": {}, "tty": False},
            label="program not found"),
        req("process/start", {"processId": "b7", "argv": ["true"],
                              "cwd": "$CWDURI/does-not-exist", "env": PATH_ENV, "tty": False},
            label="cwd missing"),
        req("process/start", {"processId": "b8", "argv": ["true"], "cwd": "relative/dir",
                              "env": PATH_ENV, "tty": False}, label="cwd relative"),
        req("process/start", {"processId": "b9", "argv": ["/bin/true"], "cwd": "$CWDPATH",
                              "env": PATH_ENV, "tty": False}, label="cwd native path",
            allow=["native-path"]),
        req("process/start", {"processId": "b10", "argv": ["true"], "cwd": "http://x/y",
                              "env": PATH_ENV, "tty": False}, label="cwd http scheme"),
        req("process/start", {"processId": "b11", "argv": ["true"], "cwd": "$CWDURI?q=1",
                              "env": PATH_ENV, "tty": False}, label="cwd with query"),
        req("process/start", {"processId": "b12", "argv": ["true"], "cwd": "$CWDURI#f",
                              "env": PATH_ENV, "tty": False}, label="cwd with fragment"),
        req("process/start", {"processId": "b13", "argv": ["true"], "cwd": "$CWDURI",
                              "env": {"A": None}, "tty": False}, label="env null value"),
        req("process/start", {"processId": "b14", "argv": ["true"], "cwd": "$CWDURI",
                              "env": {"A": "x\u0000y"}, "tty": False}, label="env NUL byte"),
        req("process/start", {"processId": "b15", "argv": ["true"], "cwd": "$CWDURI",
                              "env": PATH_ENV, "tty": "yes"}, label="tty not bool"),
        req("process/start", {"processId": "b16", "argv": ["true"], "cwd": "$CWDURI",
                              "env": PATH_ENV, "tty": False,
                              "metadata": {"threadId": "not-a-uuid"}},
            label="metadata threadId not uuid"),
        req("process/start", {"processId": "b17", "argv": ["true"], "cwd": "$CWDURI",
                              "env": PATH_ENV, "tty": False,
                              "sandbox": {"permissions": {"type": "managed"}}},
            label="sandbox missing fields"),
        req("process/start", {"processId": "b18", "argv": [SH, "-c", "echo sandboxed"],
                              "cwd": "$CWDURI", "env": PATH_ENV, "tty": False,
                              "sandbox": SANDBOX_WW},
            label="sandbox workspace-write", allow=["sandbox-refused"]),
        collect("b18", timeout=10, allow=["sandbox-refused-followup"]),
        req("process/start", [1], label="params array"),
        req("process/start", label="params missing"),
        req("process/terminate", {}, label="terminate missing processId"),
        req("process/read", {"processId": 5}, label="read processId number"),
    ]},
    {"name": "stray_notification", "doc": "a notification other than initialized closes",
     "steps": [
         {"op": "notify", "method": "foo/bar", "params": {}},
         {"op": "expect_closed", "timeout": 2, "label": "closed by server"},
     ]},
    {"name": "client_response", "doc": "a response sent by the client closes", "steps": [
        {"op": "raw", "text": '{"id":5,"result":{}}'},
        {"op": "expect_closed", "timeout": 2, "label": "closed by server"},
    ]},
    {"name": "close_frame", "doc": "client Close frame", "steps": [
        req("environment/status", label="status"),
        {"op": "close", "timeout": 3, "label": "close", "allow": ["close-echo"]},
    ]},
    {"name": "concurrency", "doc": "a long poll and a later request on one connection",
     "steps": [
         start("c1", "sleep 3"),
         req("process/read", {"processId": "c1", "waitMs": 1500}, id=501, nowait=True),
         {"op": "sleep", "secs": 0.05},
         req("environment/status", id=502, nowait=True),
         {"op": "order", "ids": [501, 502], "timeout": 5, "label": "response order",
          "allow": ["no-serialise"]},
         {"op": "await", "id": 501, "label": "long poll result"},
         {"op": "await", "id": 502, "label": "status result"},
         req("process/terminate", {"processId": "c1"}, label="terminate c1"),
     ]},
    {"name": "fs_basic", "doc": "fs/getMetadata as the real client uses it", "steps": [
        req("fs/getMetadata", {"path": "$CWDURI/.git", "sandbox": None},
            label="getMetadata missing"),
        req("fs/getMetadata", {"path": "$CWDURI"}, label="getMetadata dir"),
    ]},
]

# ---- fs/readDirectory, fs/walk, fs/remove, fs/copy, fs/canonicalize (§6.16-§6.19, §6.21)
# Both servers run in the same work directory: the script builds its tree with a shell
# command first and removes it at the end. Only steps where uexec matches the reference
# are here (its deliberate differences are covered by tests/integration/test_fs_tree.py).

FS_SETUP = ("rm -rf t && mkdir -p t/dir/sub t/w/.hid/inner t/w/a/b/c t/w/noperm t/one t/cp "
            "&& echo x > t/dir/x.txt && echo y > t/dir/sub/y.txt && echo f > t/w/.hid/inner/f "
            "&& echo deep > t/w/a/b/c/deep.txt && echo hello > t/a.txt && echo 1 > t/one/only "
            "&& ln -s a.txt t/link-a && ln -s dir t/link-dir && ln -s nowhere t/dangling "
            "&& ln -s a t/w/link-a && ln -s . t/w/self && mkfifo t/fifo && echo ok")


def fs_walk(path, label, **opts):
    o = {"maxDepth": 10, "maxDirectories": 100, "maxEntries": 1000,
         "followDirectorySymlinks": False}
    o.update(opts)
    return req("fs/walk", {"path": "$CWDURI/t/" + path, "options": o}, label=label)


def fs_copy(src, dst, recursive, label):
    return req("fs/copy", {"sourcePath": "$CWDURI/t/" + src, "destinationPath": "$CWDURI/t/" + dst,
                           "recursive": recursive}, label=label)


def fs_remove(path, label, **kw):
    return req("fs/remove", dict({"path": "$CWDURI/t/" + path}, **kw), label=label)


SCRIPTS.append({"name": "fs_tree", "doc": "readDirectory, walk, copy, remove, canonicalize",
                "steps": [
    start("fsmk", FS_SETUP),
    collect("fsmk"),
    req("fs/readDirectory", {"path": "$CWDURI/t/one"}, label="readDirectory one entry"),
    req("fs/readDirectory", {"path": "$CWDURI/t/empty-missing"}, label="readDirectory missing"),
    req("fs/readDirectory", {"path": "$CWDURI/t/a.txt"}, label="readDirectory file"),
    req("fs/readDirectory", {"path": "$CWDURI/t/fifo"}, label="readDirectory fifo"),
    req("fs/readDirectory", {"path": "$CWDURI/t/dangling"}, label="readDirectory dangling"),
    req("fs/readDirectory", None, label="readDirectory null params"),
    req("fs/canonicalize", {"path": "$CWDURI/t/link-a"}, label="canonicalize link"),
    req("fs/canonicalize", {"path": "$CWDURI/t/link-dir/"}, label="canonicalize dir link"),
    req("fs/canonicalize", {"path": "$CWDURI/t/dir/../a.txt"}, label="canonicalize dotdot"),
    req("fs/canonicalize", {"path": "$CWDURI/t/dangling"}, label="canonicalize dangling"),
    req("fs/canonicalize", {"path": "$CWDURI/t/a.txt/x"}, label="canonicalize through file"),
    req("fs/canonicalize", {"path": "file:///"}, label="canonicalize root"),
    fs_walk("w", "walk w"),
    fs_walk("w", "walk depth 0", maxDepth=0),
    fs_walk("w", "walk depth 1", maxDepth=1),
    fs_walk("w", "walk entries 2", maxEntries=2),
    fs_walk("w", "walk dirs 1", maxDirectories=1),
    fs_walk("w", "walk dirs 2", maxDirectories=2),
    fs_walk("w", "walk prune", pruneHiddenDirectories=True),
    fs_walk("w", "walk follow", followDirectorySymlinks=True),
    fs_walk("link-dir", "walk root link"),
    fs_walk("link-dir", "walk root link followed", followDirectorySymlinks=True),
    fs_walk("a.txt", "walk root file"),
    fs_walk("missing", "walk root missing"),
    fs_walk("w", "walk zero limit", maxEntries=0),
    fs_walk("w", "walk over maximums", maxDepth=65),
    fs_walk("w", "walk u64 max", maxEntries=18446744073709551615),
    fs_walk("w", "walk negative", maxDepth=-1),
    req("fs/walk", {"path": "$CWDURI/t/w", "options": None}, label="walk options null"),
    req("fs/walk", {"path": "$CWDURI/t/w", "options": {}}, label="walk options empty"),
    req("fs/walk", {"path": "$CWDURI/t/w", "options": [10, 100, 100, False]},
        label="walk options positional"),
    fs_copy("a.txt", "cp/a.txt", False, "copy file"),
    fs_copy("a.txt", "cp/a.txt", False, "copy file onto existing"),
    fs_copy("a.txt", "dir", False, "copy file onto dir"),
    fs_copy("a.txt", "nodir/x", False, "copy missing parent"),
    fs_copy("missing", "cp/m", False, "copy missing source"),
    fs_copy("dir", "cp/dir", False, "copy dir not recursive"),
    fs_copy("dir", "cp/dir", True, "copy dir recursive"),
    fs_copy("dir", "cp/dir", True, "copy dir merge"),
    fs_copy("dir", "cp/new/parents/dir", True, "copy dir missing parents"),
    fs_copy("dir", "dir/sub/inside", True, "copy dir into itself"),
    fs_copy("dir", "link-dir/sub/inside", True, "copy dir into itself via link"),
    fs_copy("dir", "a.txt", True, "copy dir onto file"),
    fs_copy("fifo", "cp/fifo", False, "copy fifo"),
    fs_copy("link-a", "cp/link-a", False, "copy symlink"),
    fs_copy("link-a", "cp/a.txt", False, "copy symlink onto file"),
    fs_walk("cp", "walk copies"),
    fs_remove("cp/a.txt", "remove file"),
    fs_remove("cp/dir", "remove non-empty not recursive", recursive=False),
    fs_remove("cp/dir", "remove tree"),
    fs_remove("cp/missing", "remove missing"),
    fs_remove("cp/missing", "remove missing no force", force=False),
    fs_remove("a.txt/x", "remove through file"),
    fs_remove("link-dir", "remove dir link"),
    fs_remove("link-a", "remove link no-follow not recursive", followSymlinks=False,
              recursive=False),
    fs_walk("", "walk after removals", maxDepth=0),
    req("fs/remove", {"path": "$CWDURI/t", "recursive": "yes"}, label="remove bad recursive"),
    fs_remove("", "remove everything"),
    req("fs/getMetadata", {"path": "$CWDURI/t"}, label="gone"),
]})

# ---- fs/open, fs/readBlock, fs/writeBlock, fs/close with a sandbox (§6.20, §6.11, p11)
# Every path an attacker would try (symlinks out of the workspace, into .git and a denied
# directory, `..`, /proc/self/root) through a streaming handle, next to fs/readFile and
# fs/writeFile of the same path under the same sandbox.

FS_SBX_SETUP = ("rm -rf s && mkdir -p s/work/.git s/work/secret s/outside "
                "&& echo '[core]' > s/work/.git/config && echo inside > s/work/inside.txt "
                "&& echo secret > s/work/secret/s.txt && echo outside > s/outside/existing.txt "
                "&& ln -s ../outside/existing.txt s/work/lnk-file && ln -s ../outside s/work/lnk-dir "
                "&& ln -s secret/s.txt s/work/lnk-secret && ln -s .git/config s/work/lnk-git "
                "&& mkfifo s/work/fifo && echo ok")
FS_SBX_CHECK = ("cat s/outside/existing.txt s/work/.git/config s/work/secret/s.txt s/work/new.txt; "
                "ls s/outside s/work/.git")


def _sbx(write=True, deny=True):
    w = "$CWDURI/s/work"
    entries = [{"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"}]
    if write:
        entries += [
            {"path": {"type": "special", "value": {"kind": "project_roots"}}, "access": "write"},
            {"path": {"type": "special", "value": {"kind": "project_roots", "subpath": ".git"}},
             "access": "read", "missing_path_behavior": "skip"}]
    if deny:
        entries.append({"path": {"type": "path", "path": w + "/secret"}, "access": "deny"})
    return {"permissions": {"type": "managed", "file_system": {"type": "restricted",
                                                               "entries": entries},
                            "network": "restricted"},
            "cwd": w, "policyContext": {"cwd": w, "workspaceRoots": [w]}, "workspaceRoots": [w],
            "userHomeDir": "file:///root", "windowsSandboxLevel": "disabled",
            "useLegacyLandlock": False}


def _sbx_read(path, hid, label, sb=None):
    sb = sb or _sbx()
    uri = "$CWDURI/s/" + path
    return [
        req("fs/readFile", {"path": uri, "sandbox": sb}, label=label + ": readFile"),
        req("fs/open", {"handleId": hid, "path": uri, "sandbox": sb}, label=label + ": open"),
        req("fs/readBlock", {"handleId": hid, "offset": 0, "len": 64}, label=label + ": block"),
        req("fs/close", {"handleId": hid}, label=label + ": close"),
    ]


def _sbx_write(path, hid, label, sb=None):
    sb = sb or _sbx()
    uri = "$CWDURI/s/" + path
    return [
        req("fs/writeFile", {"path": uri, "dataBase64": "", "sandbox": sb},
            label=label + ": writeFile"),
        req("fs/open", {"handleId": hid, "path": uri, "mode": "replace", "sandbox": sb},
            label=label + ": open replace"),
        req("fs/writeBlock", {"handleId": hid, "offset": 0, "chunk": "c3RyZWFtZWQ="},
            label=label + ": writeBlock"),
        req("fs/close", {"handleId": hid}, label=label + ": close"),
    ]


SCRIPTS.append({"name": "fs_stream_sandbox", "doc": "sandboxed fs/open: reads, replace, denials",
                "steps": [
    start("sbxmk", FS_SBX_SETUP),
    collect("sbxmk"),
    *_sbx_read("work/inside.txt", "r1", "read inside"),
    *_sbx_read("outside/existing.txt", "r2", "read outside"),
    *_sbx_read("work/secret/s.txt", "r3", "read denied"),
    *_sbx_read("work/lnk-secret", "r4", "read link to denied"),
    *_sbx_read("work/lnk-dir/../work/secret/s.txt", "r5", "read dotdot to denied"),
    *_sbx_read("work/secret", "r6", "read denied dir"),
    *_sbx_read("work/fifo", "r7", "read fifo"),
    *_sbx_read("work/missing", "r8", "read missing"),
    *_sbx_write("work/new.txt", "w1", "replace inside"),
    req("fs/readBlock", {"handleId": "w1", "offset": 0, "len": 4}, label="replace closed: block"),
    *_sbx_write("outside/new.txt", "w2", "replace outside"),
    *_sbx_write("outside/existing.txt", "w3", "replace outside existing"),
    *_sbx_write("work/lnk-file", "w4", "replace link out"),
    *_sbx_write("work/lnk-dir/new2.txt", "w5", "replace through dir link"),
    *_sbx_write("work/../outside/new3.txt", "w6", "replace dotdot out"),
    *_sbx_write("work/.git/config", "w7", "replace git"),
    *_sbx_write("work/lnk-git", "w8", "replace link to git"),
    *_sbx_write("work/secret/s.txt", "w9", "replace denied"),
    *_sbx_write("work/secret/new.txt", "w10", "replace new in denied"),
    *_sbx_write("work/inside.txt", "w11", "replace under read-only policy",
                sb=_sbx(write=False, deny=False)),
    req("fs/open", {"handleId": "rw", "path": "$CWDURI/s/work/inside.txt", "sandbox": _sbx()},
        label="read handle: open"),
    req("fs/writeBlock", {"handleId": "rw", "offset": 0, "chunk": "eA=="},
        label="read handle: writeBlock"),
    req("fs/open", {"handleId": "rw", "path": "$CWDURI/s/work/inside.txt", "sandbox": _sbx()},
        label="read handle: open again"),
    req("fs/close", {"handleId": "rw"}, label="read handle: close"),
    start("sbxck", FS_SBX_CHECK),
    collect("sbxck"),
]})

# ---- parameter decoding of every method (§3, §4, §6): each required field missing, null,
# of the wrong JSON type, numbers out of range, and an unknown extra field. Paths live under
# $CWDURI/pv (built by the first step), so successful variants touch nothing else.

PV_SETUP = ("rm -rf pv && mkdir -p pv/d/sub && echo hello > pv/f.txt && echo x > pv/d/x "
            "&& touch -d @1700000000 pv/f.txt && echo ok")
PV = "$CWDURI/pv"
# one value of each JSON type that is wrong for the field's kind
WRONG = {"str": [5, True, [], {}], "bool": ["yes", 1, []], "u64": ["5", True, 1.5, {}],
         "arr": ["x", 5, {}], "map": ["x", 5, []], "obj": ["x", 5, True, []]}


def param_variants(method, base, fields, tag, extra_numbers=()):
    """Steps for method: each field of `fields` (name -> (kind, required)) missing (when
    required), null, each wrong JSON type; then an unknown member; then extra_numbers
    (field, value) pairs. `base` is a valid params dict (may contain a {n} placeholder that
    is replaced by a per-variant counter, for ids that must be fresh)."""
    out = []
    n = [0]

    def fresh(p):
        n[0] += 1
        return {k: (v.replace("{n}", str(n[0])) if isinstance(v, str) else v)
                for k, v in p.items()}

    for name, (kind, required) in fields.items():
        if required:
            p = fresh(base)
            p.pop(name, None)
            out.append(req(method, p, label="%s: %s missing" % (tag, name)))
        p = fresh(base)
        p[name] = None
        out.append(req(method, p, label="%s: %s null" % (tag, name)))
        for w in WRONG[kind]:
            p = fresh(base)
            p[name] = w
            out.append(req(method, p, label="%s: %s = %s" % (tag, name, json_text(w))))
    p = fresh(base)
    p["zzUnknownMember"] = {"nested": [1, 2]}
    out.append(req(method, p, label="%s: unknown member" % tag))
    for name, v in extra_numbers:
        p = fresh(base)
        p[name] = v
        out.append(req(method, p, label="%s: %s = %s" % (tag, name, json_text(v))))
    return out


def json_text(v):
    import json
    return json.dumps(v)


BIG_NUMBERS = [0, -1, 18446744073709551615, 18446744073709551616, 9223372036854775808, 1e3,
               1.0, -0.0]

SCRIPTS.append({"name": "params_process", "doc": "process/* parameter decoding", "steps": [
    start("pvmk", PV_SETUP + "; sleep 0.2"),   # output before the exit: seqs are stable
    collect("pvmk"),
    *param_variants("process/start",
                    {"processId": "ps{n}", "argv": ["/bin/true"], "cwd": "$CWDURI",
                     "env": {}, "tty": False},
                    {"processId": ("str", True), "argv": ("arr", True), "cwd": ("str", True),
                     "env": ("map", True), "tty": ("bool", True), "pipeStdin": ("bool", False),
                     "arg0": ("str", False), "envPolicy": ("obj", False),
                     "metadata": ("obj", False), "sandbox": ("obj", False),
                     "enforceManagedNetwork": ("bool", False),
                     "managedNetwork": ("obj", False)}, "start"),
    req("process/start", {"processId": "psargv", "argv": ["/bin/true", 5], "cwd": "$CWDURI",
                          "env": {}, "tty": False}, label="start: argv with a number"),
    req("process/start", {"processId": "psargv2", "argv": [None], "cwd": "$CWDURI",
                          "env": {}, "tty": False}, label="start: argv [null]"),
    req("process/start", {"processId": "psenv", "argv": ["/bin/true"], "cwd": "$CWDURI",
                          "env": {"A": 5}, "tty": False}, label="start: env value number"),
    req("process/start", {"processId": "psenv2", "argv": ["/bin/true"], "cwd": "$CWDURI",
                          "env": {"A": True}, "tty": False}, label="start: env value bool"),
    {"op": "sleep", "secs": 0.5},
    *param_variants("process/read", {"processId": "pvmk"},
                    {"processId": ("str", True), "afterSeq": ("u64", False),
                     "maxBytes": ("u64", False), "waitMs": ("u64", False)}, "read",
                    extra_numbers=[(f, v) for f in ("afterSeq", "maxBytes", "waitMs")
                                   for v in BIG_NUMBERS if not (f == "waitMs" and v and
                                                               not isinstance(v, float)
                                                               and v > 0)]),
    *param_variants("process/write", {"processId": "pvmk", "chunk": "", "writeId": "w{n}"},
                    {"processId": ("str", True), "chunk": ("str", True),
                     "writeId": ("str", True)}, "write"),
    *param_variants("process/signal", {"processId": "nope", "signal": "interrupt"},
                    {"processId": ("str", True), "signal": ("str", True)}, "signal"),
    req("process/signal", {"processId": "nope", "signal": {"interrupt": None}},
        label="signal: map variant"),
    req("process/signal", {"processId": "nope", "signal": {"interrupt": {}}},
        label="signal: map variant with content"),
    req("process/signal", {"processId": "nope", "signal": ""}, label="signal: empty"),
    *param_variants("process/terminate", {"processId": "nope"},
                    {"processId": ("str", True)}, "terminate"),
]})

def fs_walk_opt(key, value):
    """fs/walk with one member of a valid options object replaced ("_drop_": removed)."""
    o = {"maxDepth": 1, "maxDirectories": 5, "maxEntries": 5, "followDirectorySymlinks": False}
    if value == "_drop_":
        o.pop(key)
        what = "dropped"
    else:
        o[key] = value
        what = "= " + json_text(value)
    return req("fs/walk", {"path": PV, "options": o}, label="walk: options.%s %s" % (key, what))


SCRIPTS.append({"name": "params_fs", "doc": "fs/* parameter decoding", "steps": [
    start("pvmk", PV_SETUP),
    collect("pvmk"),
    *param_variants("fs/readFile", {"path": PV + "/f.txt"},
                    {"path": ("str", True), "sandbox": ("obj", False),
                     "followSymlinks": ("bool", False)}, "readFile"),
    *param_variants("fs/writeFile", {"path": PV + "/w.txt", "dataBase64": "aGk="},
                    {"path": ("str", True), "dataBase64": ("str", True),
                     "sandbox": ("obj", False), "followSymlinks": ("bool", False)},
                    "writeFile"),
    *param_variants("fs/createDirectory", {"path": PV + "/mk{n}"},
                    {"path": ("str", True), "recursive": ("bool", False),
                     "sandbox": ("obj", False), "followSymlinks": ("bool", False)},
                    "createDirectory"),
    *param_variants("fs/getMetadata", {"path": PV + "/f.txt"},
                    {"path": ("str", True), "sandbox": ("obj", False),
                     "followSymlinks": ("bool", False)}, "getMetadata"),
    *param_variants("fs/canonicalize", {"path": PV + "/f.txt"},
                    {"path": ("str", True), "sandbox": ("obj", False)}, "canonicalize"),
    *param_variants("fs/readDirectory", {"path": PV + "/d"},
                    {"path": ("str", True), "sandbox": ("obj", False)}, "readDirectory"),
    *param_variants("fs/remove", {"path": PV + "/nothing{n}"},
                    {"path": ("str", True), "recursive": ("bool", False),
                     "force": ("bool", False), "sandbox": ("obj", False),
                     "followSymlinks": ("bool", False)}, "remove"),
    *param_variants("fs/copy", {"sourcePath": PV + "/f.txt", "destinationPath": PV + "/c{n}",
                                "recursive": False},
                    {"sourcePath": ("str", True), "destinationPath": ("str", True),
                     "recursive": ("bool", True), "sandbox": ("obj", False)}, "copy"),
    *param_variants("fs/walk", {"path": PV, "options": {"maxDepth": 1, "maxDirectories": 5,
                                                       "maxEntries": 5,
                                                       "followDirectorySymlinks": False}},
                    {"path": ("str", True), "options": ("obj", True),
                     "sandbox": ("obj", False)}, "walk"),
    *[fs_walk_opt(k, v) for k in ("maxDepth", "maxDirectories", "maxEntries")
      for v in [None, "1", True, 1.5, -1, 18446744073709551616]],
    *[fs_walk_opt(k, v) for k in ("followDirectorySymlinks", "pruneHiddenDirectories")
      for v in [None, "true", 1]],
    *[fs_walk_opt(k, "_drop_") for k in ("maxDepth", "maxDirectories", "maxEntries",
                                         "followDirectorySymlinks")],
    fs_walk_opt("zzUnknown", 1),
    req("fs/walk", {"path": PV, "options": "x"}, label="walk: options string"),
    req("fs/remove", {"path": PV + "/w.txt"}, label="cleanup w.txt"),
]})

SCRIPTS.append({"name": "params_fs_handles", "doc": "fs/open etc. and watchMissing decoding",
                "steps": [
    start("pvmk", PV_SETUP),
    collect("pvmk"),
    *param_variants("fs/open", {"handleId": "h{n}", "path": PV + "/f.txt"},
                    {"handleId": ("str", True), "path": ("str", True),
                     "mode": ("str", False), "sandbox": ("obj", False)}, "open"),
    req("fs/open", {"handleId": "hb", "path": PV + "/f.txt"}, label="open hb"),
    *param_variants("fs/readBlock", {"handleId": "hb", "offset": 0, "len": 4},
                    {"handleId": ("str", True), "offset": ("u64", True),
                     "len": ("u64", True)}, "readBlock",
                    extra_numbers=[(f, v) for f in ("offset", "len") for v in BIG_NUMBERS]),
    req("fs/open", {"handleId": "hw", "path": PV + "/blk.txt", "mode": "replace"},
        label="open hw"),
    *param_variants("fs/writeBlock", {"handleId": "hw", "offset": 0, "chunk": "eA=="},
                    {"handleId": ("str", True), "offset": ("u64", True),
                     "chunk": ("str", True)}, "writeBlock",
                    extra_numbers=[("offset", v) for v in (-1, 1.5, 18446744073709551616)]
                    + [("chunk", c) for c in ("eA", "!!!!", "e A=", "eA==\n")]),
    *param_variants("fs/close", {"handleId": "hb"}, {"handleId": ("str", True)}, "close"),
    req("fs/close", {"handleId": "hw"}, label="close hw"),
    req("fs/readFile", {"path": PV + "/blk.txt"}, label="blk.txt after writes"),
    *param_variants("fs/watchMissing", {"watchId": 1000, "missing": [PV + "/never"]},
                    {"watchId": ("u64", True), "missing": ("arr", True),
                     "present": ("str", False)}, "watchMissing",
                    extra_numbers=[("watchId", v) for v in (-1, 1.5, 18446744073709551616)]),
    req("fs/watchMissing", {"watchId": 5000, "missing": [PV + "/never", 7]},
        label="watchMissing: number in missing"),
    req("fs/watchMissing", {"watchId": 5001, "missing": [PV + "/never"], "present": [PV]},
        label="watchMissing: present array"),
]})

# ---- envelope edge cases: ids of every JSON type, batches, method and params shapes (§3)

def raw(text, expect_id, label):
    return {"op": "raw", "text": text, "expect_id": expect_id, "label": label}


SCRIPTS.append({"name": "envelope_ids", "doc": "request ids of every JSON type, odd envelopes",
                "steps": [
    raw('{"id":0,"method":"environment/status"}', 0, "id 0"),
    raw('{"id":"","method":"environment/status"}', "", "id empty string"),
    raw('{"id":9223372036854775807,"method":"environment/status"}', 9223372036854775807,
        "id i64 max"),
    raw('{"id":-9223372036854775808,"method":"environment/status"}', -9223372036854775808,
        "id i64 min"),
    raw('{"id":9223372036854775808,"method":"environment/status"}', -1, "id 2^63"),
    raw('{"id":-9223372036854775809,"method":"environment/status"}', -1, "id below i64 min"),
    raw('{"id":1e2,"method":"environment/status"}', -1, "id 1e2"),
    raw('{"id":2.0,"method":"environment/status"}', -1, "id 2.0"),
    raw('{"id":-0,"method":"environment/status"}', 0, "id -0"),
    raw('{"id":true,"method":"environment/status"}', -1, "id true"),
    raw('{"id":{},"method":"environment/status"}', -1, "id object"),
    raw('{"id":[],"method":"environment/status"}', -1, "id array"),
    raw('{"id":"\\u00e9\\ud83d\\ude00","method":"environment/status"}', "\u00e9\U0001F600",
        "id non-ASCII string"),
    raw('{"id":"\\ud800","method":"environment/status"}', -1, "id lone surrogate"),
    raw('{"id":"a\\u0000b","method":"environment/status"}', "a\u0000b", "id with NUL"),
    raw('{"id":41,"id":42,"method":"environment/status"}', -1, "duplicate id member"),
    raw('{"id":43,"method":"environment/status","method":"environment/info"}', -1,
        "duplicate method member"),
    raw('{"id":44,"method":5}', -1, "method number"),
    raw('{"id":45,"method":null}', -1, "method null"),
    raw('{"id":46,"method":""}', 46, "method empty"),
    raw('{"id":47,"method":"environment/status","params":"x"}', 47, "params string (unit)"),
    raw('{"id":48,"method":"environment/status","params":5}', 48, "params number (unit)"),
    raw('{"id":49,"method":"environment/status","params":[]}', 49, "params [] (unit)"),
    raw('{"id":50,"method":"process/read","params":"x"}', 50, "params string (struct)"),
    raw('{"id":51,"method":"process/read","params":5}', 51, "params number (struct)"),
    raw('{"id":52,"method":"process/read","params":true}', 52, "params bool (struct)"),
    raw('{"id":53,"method":"process/read","params":[]}', 53, "params [] (struct)"),
    raw('{"id":54,"method":"process/read","params":["nope"]}', 54, "params [id] (struct)"),
    raw('{"id":55,"method":"process/read","params":["nope",0,null,null]}', 55,
        "params positional full"),
    raw('{"id":56,"method":"process/read","params":["nope",0,null,null,1]}', 56,
        "params positional too long"),
    raw('{"id":57,"method":"environment/status","result":{}}', 57, "method and result"),
    raw('{"id":58,"method":"environment/status","error":{"code":1,"message":"x"}}', 58,
        "method and error"),
    raw('{"method":"environment/status","id":59}', 59, "id after method"),
    raw('[{"id":60,"method":"environment/status"}]', -1, "batch of one"),
    raw('[{"id":61,"method":"environment/status"},{"id":62,"method":"environment/status"}]',
        -1, "batch of two"),
    raw('{"id":63,"method":"environment/status"} ', 63, "trailing space"),
    raw('{"id":64,"method":"environment/status"}{"id":65}', -1, "two objects in one frame"),
    raw('\ufeff{"id":66,"method":"environment/status"}', -1, "byte order mark"),
    raw('{"id":67,"method":"environment/status",}', -1, "trailing comma"),
    raw('{"id":68,"method":"environment/status","params":NaN}', -1, "NaN"),
    raw('{"id":69,"method":"environment/status","params":{"x":1e999}}', -1, "1e999"),
    raw('"str"', -1, "string message"),
    raw('null', -1, "null message"),
    raw('', -1, "empty frame"),
    req("environment/status", label="id repeated (a)", id=70),
    req("environment/status", label="id repeated (b)", id=70),
    req("environment/status", label="still open"),
]})

SCRIPTS.append({"name": "unknown_methods", "doc": "method names near the real ones", "steps": [
    req("Process/Start", {}, label="wrong case"),
    req("process/start ", {}, label="trailing space"),
    req("process/", {}, label="family only"),
    req("/", {}, label="slash"),
    req("process\u0000/start", {}, label="embedded NUL"),
    req("fs/rename", {}, label="fs/rename", allow=["uexec-extension"]),
    req("fs/watch", {}, label="fs/watch", allow=["uexec-extension"]),
    req("process/kill", {}, label="process/kill"),
    req("initialized", {}, label="initialized as request"),
    req("x" * 300, {}, label="long name"),
    req("\u00e9t\u00e9", {}, label="non-ASCII name"),
    req("no/such", [1, 2], label="unknown with array params"),
    req("no/such", "x", label="unknown with string params"),
]})

# ---- processes after exit, unknown and duplicate ids, read edge values (§6.6-§6.10)

SCRIPTS.append({"name": "process_after_exit", "doc": "requests on exited/unknown/duplicate ids",
                "steps": [
    start("x1", "echo one; sleep 0.1; echo two >&2; sleep 0.1; exit 4"),
    collect("x1"),
    read("x1", "read exited", summarize="read"),
    read("x1", "read exited afterSeq 2", afterSeq=2),
    read("x1", "read exited afterSeq 3", afterSeq=3),
    read("x1", "read exited afterSeq 4 (closed seq)", afterSeq=4),
    read("x1", "read exited afterSeq far", afterSeq=1000000),
    read("x1", "read exited afterSeq u64 max", afterSeq=18446744073709551615),
    read("x1", "read exited waitMs 1", waitMs=1, summarize="read"),
    read("x1", "read exited waitMs u64 max", waitMs=18446744073709551615, summarize="read"),
    read("x1", "read exited afterSeq far waitMs 300", afterSeq=99, waitMs=300),
    read("x1", "read maxBytes 1", maxBytes=1),
    read("x1", "read maxBytes u64 max", maxBytes=18446744073709551615, summarize="read"),
    req("process/write", {"processId": "x1", "chunk": "YQ==", "writeId": "1"},
        label="write exited (no pipeStdin)"),
    req("process/signal", {"processId": "x1", "signal": "interrupt"}, label="signal exited"),
    req("process/terminate", {"processId": "x1"}, label="terminate exited"),
    start("x1", "true", label="start duplicate of exited"),
    start("x2", "sleep 5", label="start x2 running"),
    start("x2", "true", label="start duplicate of running"),
    read("x2", "read running nothing yet"),
    read("x2", "read running afterSeq far", afterSeq=50),
    req("process/terminate", {"processId": "x2"}, label="terminate running"),
    collect("x2"),
    req("process/terminate", {"processId": "x2"}, label="terminate again"),
    start("", "echo empty-id", label="start empty processId"),
    collect(""),
    read("", "read empty processId", summarize="read"),
    start("a/b c\nd\u00e9", "echo odd-id", label="start odd processId"),
    collect("a/b c\nd\u00e9"),
    start("x" * 5000, "echo long-id", label="start 5000-char processId"),
    collect("x" * 5000),
    req("process/read", {"processId": "nul\u0000id"}, label="read NUL processId"),
    req("process/write", {"processId": "nope", "chunk": "YQ==", "writeId": "1"},
        label="write unknown"),
    req("process/write", {"processId": "nope", "chunk": "!!", "writeId": "1"},
        label="write unknown bad base64"),
    req("process/write", {"processId": "nope", "chunk": "YQ==", "writeId": ""},
        label="write unknown empty writeId"),
    req("process/write", {"processId": "x1", "chunk": "YQ==", "writeId": ""},
        label="write exited empty writeId"),
    req("process/signal", {"processId": "nope", "signal": "interrupt"}, label="signal unknown"),
    start("x3", "cat", pipeStdin=True, label="start x3 cat pipeStdin"),
    req("process/write", {"processId": "x3", "chunk": "aGk=", "writeId": "1"},
        label="write x3"),
    {"op": "wait_output", "pid": "x3", "text": "hi", "timeout": 5, "label": "x3 echoed"},
    req("process/terminate", {"processId": "x3"}, label="terminate x3"),
    collect("x3"),
    req("process/write", {"processId": "x3", "chunk": "aGk=", "writeId": "1"},
        label="write x3 after exit, same writeId"),
    req("process/write", {"processId": "x3", "chunk": "", "writeId": "9"},
        label="write x3 after exit, empty chunk"),
]})

SCRIPTS.append({"name": "process_start_edges", "doc": "env, cwd and argv edge cases", "steps": [
    start("v1", "env | sort", env={"": "empty-name"}, label="env empty name"),
    collect("v1"),
    start("v2", "env | sort", env={"A=B": "x"}, label="env name with ="),
    collect("v2"),
    start("v3", "env | sort", env={"E": ""}, label="env empty value"),
    collect("v3"),
    start("v4", "printf '%s' \"$U\"", env={"U": "\u00e9\U0001F600"}, label="env non-ASCII"),
    collect("v4"),
    start("v5", "env | sort", env={"A\u0000": "x"}, label="env NUL in name"),
    start("v6", "echo $PATH", env={}, label="env without PATH"),
    collect("v6"),
    req("process/start", {"processId": "v7", "argv": ["true"], "cwd": "$CWDURI", "env": {},
                          "tty": False}, label="bare program without PATH"),
    req("process/start", {"processId": "v8", "argv": ["/bin/true", "a\u0000b"],
                          "cwd": "$CWDURI", "env": {}, "tty": False}, label="argv NUL"),
    req("process/start", {"processId": "v9", "argv": [""], "cwd": "$CWDURI", "env": {},
                          "tty": False}, label="argv empty program"),
    req("process/start", {"processId": "v10", "argv": ["/bin/true"], "cwd": "$CWDURI",
                          "env": {}, "tty": False, "arg0": "a\u0000b"}, label="arg0 NUL"),
    req("process/start", {"processId": "v11", "argv": ["/"], "cwd": "$CWDURI",
                          "env": {}, "tty": False}, label="argv directory"),
    req("process/start", {"processId": "v12", "argv": ["/etc/hostname"], "cwd": "$CWDURI",
                          "env": {}, "tty": False}, label="argv not executable"),
    req("process/start", {"processId": "v13", "argv": ["/bin/true"], "cwd": "file:///etc/hostname",
                          "env": {}, "tty": False}, label="cwd is a file"),
    start("v14", "pwd", cwd="$CWDURI/", label="cwd trailing slash"),
    collect("v14"),
    start("v15", "pwd", cwd="file:///", label="cwd root"),
    collect("v15"),
    start("v16", "pwd", cwd="$CWDURI/./.", label="cwd dot segments"),
    collect("v16"),
    req("process/start", {"processId": "v17", "argv": ["/bin/true"], "cwd": "",
                          "env": {}, "tty": False}, label="cwd empty"),
    req("process/start", {"processId": "v18", "argv": ["/bin/true"], "cwd": "file://",
                          "env": {}, "tty": False}, label="cwd file://"),
    req("process/start", {"processId": "v19", "argv": ["/bin/true"], "cwd": "file:///nonexistent%00x",
                          "env": {}, "tty": False}, label="cwd %00"),
    req("process/start", {"processId": "v20", "argv": ["/bin/true"],
                          "cwd": "file:///" + "a" * 5000, "env": {}, "tty": False},
        label="cwd longer than PATH_MAX"),
    req("process/start", {"processId": "v21", "argv": ["/bin/true"],
                          "cwd": "file:///" + "a" * 300, "env": {}, "tty": False},
        label="cwd name longer than NAME_MAX"),
    req("process/start", {"processId": "v22", "argv": ["/" + "b" * 5000], "cwd": "$CWDURI",
                          "env": {}, "tty": False}, label="argv0 longer than PATH_MAX"),
    start("v23", "echo $#; sleep 0.2", tty=True, label="tty with args"),
    collect("v23"),
    start("v24", "stty size; tty >/dev/null && echo tty; sleep 0.2", tty=True, pipeStdin=True,
          label="tty with pipeStdin"),
    collect("v24"),
    start("v25", "read x; echo got-$x", tty=False, pipeStdin=False,
          label="read from /dev/null stdin"),
    collect("v25"),
    start("v26", "ls -l /proc/self/fd | wc -l >/dev/null; echo ok", label="fds"),
    collect("v26"),
]})

# ---- fs/* on odd files: symlinks (dangling, loops, to directories), non-UTF-8 names,
# special files, files where directories are expected and back, empty/relative/long paths,
# trailing slashes, unreadable files, copies onto themselves (§5.1, §6.11-§6.21)

FS_EDGE_SETUP = (
    "rm -rf fe && mkdir -p fe/dir/sub fe/ro fe/full fe/odd && cd fe && echo data > file "
    "&& ln -s file link-file && ln -s dir link-dir && ln -s missing dangling "
    "&& ln -s loop1 loop2 && ln -s loop2 loop1 && ln -s self-loop self-loop "
    "&& mkfifo fifo && printf 'bin' > \"$(printf 'odd/bad\\377name')\" "
    "&& echo secret > noread && chmod 000 noread && echo x > dir/x && echo y > full/y "
    "&& /usr/bin/python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.bind('sock')\" "
    "&& find . -exec touch -h -d @1700000000 {} + && echo ok")
FE = "$CWDURI/fe"


def fe_all(path, tag, skip=()):
    """the read-only fs methods on one path"""
    u = FE + path if path.startswith("/") or not path else path
    out = []
    if "meta" not in skip:
        out.append(req("fs/getMetadata", {"path": u}, label="%s: getMetadata" % tag))
        out.append(req("fs/getMetadata", {"path": u, "followSymlinks": False},
                       label="%s: getMetadata nofollow" % tag))
    out += [req("fs/readFile", {"path": u}, label="%s: readFile" % tag),
            req("fs/readFile", {"path": u, "followSymlinks": False},
                label="%s: readFile nofollow" % tag),
            req("fs/readDirectory", {"path": u}, label="%s: readDirectory" % tag),
            req("fs/canonicalize", {"path": u}, label="%s: canonicalize" % tag),
            req("fs/open", {"handleId": "e", "path": u}, label="%s: open" % tag),
            req("fs/close", {"handleId": "e"}, label="%s: close" % tag)]
    return out


SCRIPTS.append({"name": "fs_edges_read", "doc": "read-side fs methods on odd paths", "steps": [
    start("femk", FS_EDGE_SETUP),
    collect("femk"),
    *fe_all("/dangling", "dangling"),
    *fe_all("/loop1", "loop"),
    *fe_all("/self-loop", "self loop"),
    *fe_all("/link-dir", "link to dir", skip=("meta",)),
    *fe_all("/link-dir/", "link to dir trailing slash", skip=("meta",)),
    *fe_all("/file/", "file trailing slash"),
    *fe_all("/file/x", "file as parent"),
    *fe_all("/fifo", "fifo"),
    *fe_all("/sock", "socket"),
    *fe_all("file:///dev/null", "dev null", skip=("meta",)),
    *fe_all("/odd/bad%FFname", "non-UTF-8 name"),
    req("fs/readDirectory", {"path": FE + "/odd"}, label="readDirectory lossy name"),
    *fe_all("/noread", "unreadable (root reads it)", skip=("meta",)),
    *fe_all("/dir/sub/..", "dot dot", skip=("meta",)),
    *fe_all("", "empty path"),
    *fe_all("fe/file", "relative path"),
    *fe_all("file:///" + "a" * 5000, "longer than PATH_MAX"),
    *fe_all(FE + "/" + "n" * 256, "name longer than NAME_MAX"),
    *fe_all(FE + "/%00", "percent NUL"),
    *fe_all(FE + "/a%2Fb", "percent slash"),
    req("fs/readDirectory", {"path": FE}, label="readDirectory fe"),
    # depth 0: fe/odd's non-UTF-8 name is a documented difference (test_fs_tree.py)
    req("fs/walk", {"path": FE, "options": {"maxDepth": 0, "maxDirectories": 10,
                                            "maxEntries": 100,
                                            "followDirectorySymlinks": True}},
        label="walk fe follow"),
    req("fs/walk", {"path": FE + "/link-dir", "options": {"maxDepth": 3, "maxDirectories": 10,
                                                          "maxEntries": 100,
                                                          "followDirectorySymlinks": True}},
        label="walk through link root"),
    req("fs/walk", {"path": FE + "/loop1", "options": {"maxDepth": 3, "maxDirectories": 10,
                                                       "maxEntries": 100,
                                                       "followDirectorySymlinks": True}},
        label="walk loop root"),
    req("fs/walk", {"path": FE + "/fifo", "options": {"maxDepth": 3, "maxDirectories": 10,
                                                      "maxEntries": 100,
                                                      "followDirectorySymlinks": False}},
        label="walk fifo root"),
    req("fs/readBlock", {"handleId": "none", "offset": 0, "len": 1}, label="readBlock unknown"),
    req("fs/writeBlock", {"handleId": "none", "offset": 0, "chunk": ""},
        label="writeBlock unknown"),
    req("fs/open", {"handleId": "x" * 33, "path": FE + "/file"}, label="open handle 33 bytes"),
    req("fs/open", {"handleId": "\u00e9" * 16, "path": FE + "/file"},
        label="open handle 32 bytes UTF-8"),
    req("fs/close", {"handleId": "\u00e9" * 16}, label="close it"),
    req("fs/open", {"handleId": "r", "path": FE + "/file"}, label="open r"),
    req("fs/readBlock", {"handleId": "r", "offset": 5, "len": 1}, label="readBlock at EOF"),
    req("fs/readBlock", {"handleId": "r", "offset": 4, "len": 1}, label="readBlock last byte"),
    req("fs/readBlock", {"handleId": "r", "offset": 4, "len": 2}, label="readBlock past EOF"),
    req("fs/readBlock", {"handleId": "r", "offset": 0, "len": 5}, label="readBlock exactly all"),
    req("fs/readBlock", {"handleId": "r", "offset": 9223372036854775807, "len": 1},
        label="readBlock offset i64 max"),
    req("fs/readBlock", {"handleId": "r", "offset": 0, "len": 1}, label="readBlock after i64 max"),
    req("fs/readBlock", {"handleId": "r", "offset": 9223372036854775808, "len": 1},
        label="readBlock offset 2^63"),
    req("fs/readBlock", {"handleId": "r", "offset": 0, "len": 1}, label="readBlock after 2^63"),
    req("fs/open", {"handleId": "r2", "path": FE + "/file"}, label="open r2"),
    req("fs/readBlock", {"handleId": "r2", "offset": 18446744073709551615, "len": 1},
        label="readBlock offset u64 max"),
    req("fs/readBlock", {"handleId": "r2", "offset": 0, "len": 1},
        label="readBlock after u64 max"),
    req("fs/open", {"handleId": "r3", "path": FE + "/file"}, label="open r3"),
    req("fs/readBlock", {"handleId": "r3", "offset": 0, "len": 1048577},
        label="readBlock len too big"),
    req("fs/readBlock", {"handleId": "r3", "offset": 0, "len": 1}, label="readBlock after len"),
    req("fs/close", {"handleId": "r3"}, label="close r3"),
    req("fs/close", {"handleId": "r3"}, label="close r3 again"),
]})

SCRIPTS.append({"name": "fs_edges_write", "doc": "write-side fs methods on odd paths", "steps": [
    start("femk", FS_EDGE_SETUP),
    collect("femk"),
    req("fs/writeFile", {"path": FE + "/dangling", "dataBase64": "eA=="},
        label="writeFile through dangling link"),
    req("fs/readFile", {"path": FE + "/missing"}, label="dangling target created"),
    req("fs/writeFile", {"path": FE + "/loop1", "dataBase64": "eA=="}, label="writeFile loop"),
    req("fs/writeFile", {"path": FE + "/link-dir", "dataBase64": "eA=="},
        label="writeFile link to dir"),
    req("fs/writeFile", {"path": FE + "/file/", "dataBase64": "eA=="},
        label="writeFile trailing slash"),
    req("fs/writeFile", {"path": FE + "/new/", "dataBase64": "eA=="},
        label="writeFile new trailing slash"),
    req("fs/writeFile", {"path": FE + "/file/x", "dataBase64": "eA=="},
        label="writeFile under file"),
    req("fs/writeFile", {"path": "file:///dev/null", "dataBase64": "eA=="},
        label="writeFile /dev/null"),
    req("fs/writeFile", {"path": FE + "/sock", "dataBase64": "eA=="}, label="writeFile socket"),
    req("fs/writeFile", {"path": FE, "dataBase64": "eA=="}, label="writeFile dir"),
    req("fs/writeFile", {"path": FE + "/w", "dataBase64": "eA== "}, label="writeFile b64 space"),
    req("fs/writeFile", {"path": FE + "/w", "dataBase64": "eA"}, label="writeFile b64 nopad"),
    req("fs/writeFile", {"path": FE + "/w", "dataBase64": "e"}, label="writeFile b64 len 1"),
    req("fs/writeFile", {"path": FE + "/w", "dataBase64": "eB=="},
        label="writeFile b64 trailing bits"),
    req("fs/writeFile", {"path": FE + "/w", "dataBase64": "eA==eA=="},
        label="writeFile b64 pad inside"),
    req("fs/writeFile", {"path": FE + "/w", "dataBase64": "-_8="}, label="writeFile b64 urlsafe"),
    req("fs/writeFile", {"path": "file:///" + "a" * 5000, "dataBase64": ""},
        label="writeFile longer than PATH_MAX"),
    req("fs/writeFile", {"path": FE + "/" + "n" * 256, "dataBase64": ""},
        label="writeFile name longer than NAME_MAX"),
    req("fs/writeFile", {"path": FE + "/odd/bad%FFname", "dataBase64": "eHg="},
        label="writeFile non-UTF-8 name"),
    req("fs/readFile", {"path": FE + "/odd/bad%FFname"}, label="readFile non-UTF-8 name"),
    req("fs/createDirectory", {"path": FE + "/file"}, label="mkdir on file"),
    req("fs/createDirectory", {"path": FE + "/file/sub"}, label="mkdir under file"),
    req("fs/createDirectory", {"path": FE + "/dangling"}, label="mkdir dangling link"),
    req("fs/createDirectory", {"path": FE + "/loop1"}, label="mkdir loop"),
    req("fs/createDirectory", {"path": FE + "/loop1/x"}, label="mkdir under loop"),
    req("fs/createDirectory", {"path": FE + "/fifo"}, label="mkdir on fifo"),
    req("fs/createDirectory", {"path": FE + "/link-dir", "recursive": False},
        label="mkdir link dir non-recursive"),
    req("fs/createDirectory", {"path": FE + "/nd/", "recursive": False},
        label="mkdir trailing slash"),
    req("fs/createDirectory", {"path": FE + "/a/b/c/", "recursive": True},
        label="mkdir deep trailing slash"),
    req("fs/createDirectory", {"path": "file:///"}, label="mkdir root"),
    req("fs/createDirectory", {"path": "file:///", "recursive": False},
        label="mkdir root non-recursive"),
    req("fs/createDirectory", {"path": "file:///" + "a" * 5000}, label="mkdir PATH_MAX+"),
    req("fs/remove", {"path": FE + "/dangling"}, label="remove dangling"),
    req("fs/remove", {"path": FE + "/loop1"}, label="remove loop link"),
    req("fs/remove", {"path": FE + "/fifo"}, label="remove fifo"),
    req("fs/remove", {"path": FE + "/sock", "recursive": False}, label="remove socket"),
    req("fs/remove", {"path": FE + "/full", "recursive": False},
        label="remove non-empty non-recursive"),
    req("fs/remove", {"path": FE + "/full", "recursive": False, "force": False},
        label="remove non-empty non-recursive no force"),
    req("fs/remove", {"path": FE + "/dir/sub", "recursive": False},
        label="remove empty dir non-recursive"),
    req("fs/remove", {"path": FE + "/file/", "recursive": False}, label="remove file slash"),
    req("fs/remove", {"path": FE + "/file/x", "force": False}, label="remove under file no force"),
    req("fs/remove", {"path": FE + "/link-dir/", "recursive": False},
        label="remove link-dir slash non-recursive"),
    req("fs/remove", {"path": FE + "/odd/bad%FFname"}, label="remove non-UTF-8 name"),
    req("fs/remove", {"path": "file:///" + "a" * 5000}, label="remove PATH_MAX+"),
    req("fs/remove", {"path": "file:///" + "a" * 5000, "force": False},
        label="remove PATH_MAX+ no force"),
    req("fs/copy", {"sourcePath": FE + "/dir", "destinationPath": FE + "/dir", "recursive": True},
        label="copy dir onto itself"),
    req("fs/copy", {"sourcePath": FE + "/dir", "destinationPath": FE + "/dir/",
                    "recursive": True}, label="copy dir onto itself slash"),
    req("fs/copy", {"sourcePath": FE + "/link-dir", "destinationPath": FE + "/dir/in",
                    "recursive": True}, label="copy dir link into target"),
    req("fs/copy", {"sourcePath": FE + "/dangling", "destinationPath": FE + "/dang2",
                    "recursive": False}, label="copy dangling link"),
    req("fs/copy", {"sourcePath": FE + "/loop1", "destinationPath": FE + "/loop3",
                    "recursive": False}, label="copy loop link"),
    req("fs/copy", {"sourcePath": FE + "/sock", "destinationPath": FE + "/sock2",
                    "recursive": False}, label="copy socket"),
    req("fs/copy", {"sourcePath": "file:///dev/null", "destinationPath": FE + "/null2",
                    "recursive": False}, label="copy /dev/null"),
    req("fs/copy", {"sourcePath": FE + "/file", "destinationPath": FE + "/file/x",
                    "recursive": False}, label="copy under file"),
    req("fs/copy", {"sourcePath": FE + "/file", "destinationPath": FE + "/dangling2",
                    "recursive": False}, label="copy to new"),
    req("fs/copy", {"sourcePath": FE + "/file", "destinationPath": FE + "/link-file",
                    "recursive": False}, label="copy onto link to itself"),
    req("fs/readFile", {"path": FE + "/file"}, label="file after copy onto link"),
    req("fs/copy", {"sourcePath": FE + "/full", "destinationPath": FE + "/file",
                    "recursive": True}, label="copy dir onto file"),
    req("fs/copy", {"sourcePath": FE + "/file", "destinationPath": FE + "/fifo",
                    "recursive": False}, label="copy onto fifo"),
    req("fs/copy", {"sourcePath": FE + "/noread", "destinationPath": FE + "/noread2",
                    "recursive": False}, label="copy unreadable (root)"),
    req("fs/copy", {"sourcePath": FE + "/odd/bad%FFname", "destinationPath": FE + "/odd/c%FE",
                    "recursive": False}, label="copy non-UTF-8"),
    req("fs/readDirectory", {"path": FE + "/odd"}, label="odd after writes"),
    req("fs/readDirectory", {"path": FE}, label="fe after writes"),
    req("fs/remove", {"path": FE}, label="cleanup"),
]})

# ---- repeated keys, numbers beyond f64/i64/u64, ids beyond 64 bits, positional params

SCRIPTS.append({"name": "envelope_keys_numbers", "doc": "duplicate keys, huge numbers, NUL names",
                "steps": [
    raw('{"id":41,"id":42,"method":"environment/status"}', -1, "duplicate id"),
    raw('{"id":1,"method":"environment/status","params":{"a":1,"a":2}}', -1,
        "duplicate key in params"),
    raw('{"id":2,"method":"process/read","params":{"processId":"x","afterSeq":1,"afterSeq":2}}',
        -1, "duplicate params field"),
    raw('{"id":3,"method":"process/start","params":{"processId":"d4","argv":["/bin/true"],'
        '"cwd":"$CWDURI","env":{"A":"1","A":"2"},"tty":false}}', -1, "duplicate env name"),
    raw('{"id":4,"method":"environment/status","params":{"z":{"q":1,"q":2}}}', -1,
        "duplicate key nested"),
    raw('{"id":5,"jsonrpc":"2.0","jsonrpc":"2.0","method":"environment/status"}', -1,
        "duplicate jsonrpc"),
    raw('{"id":6,"method":"environment/status","params":{"a":1,"\\u0061":2}}', -1,
        "duplicate key through an escape"),
    raw('{"id":7,"method":"environment/status","params":{"\\u0000":1,"\\u0000":2}}', -1,
        "duplicate NUL key"),
    raw('{"id":8,"method":"environment/status","params":{"a":1,"a":2,}}', -1,
        "duplicate before a syntax error"),
    raw('{"id":9,"method":"environment/status","params":{"a":{"b":1},"a":[1,}}', -1,
        "duplicate before an unfinished array"),
    raw('{"id":10,"method":"environment/status","params":{"a":{"b":1,"c":2},"b":1,"c":2}}', 10,
        "same keys in different objects"),
    raw('[{"a":1,"a":2}]', -1, "duplicate inside a batch"),
    raw('{"id":3,\n"env":{"A":"1",\n  "A":"2"}}', -1, "duplicate on line 3"),
    raw('{"id":10,"method":"environment/status","params":{"a":{"b":1,"c":2},"b":1,'
        '"c":{"a":1,"a":2}}}', -1, "duplicate in a later sibling object"),
    raw('{"id":11,"method":"environment/status","params":{"x":1e999}}', 11, "1e999 in params"),
    raw('{"id":12,"method":"environment/status","params":{"x":-1e999,"y":1e-999}}', 12,
        "-1e999 in params"),
    raw('{"id":13,"method":"process/read","params":{"processId":"x","afterSeq":1e400}}', 13,
        "afterSeq 1e400"),
    raw('{"id":14,"method":"process/read","params":{"processId":"x","afterSeq":1' + "0" * 400
        + '}}', 14, "afterSeq 400 digits"),
    raw('{"id":15,"method":"process/read","params":{"processId":1e400}}', 15,
        "processId 1e400"),
    raw('{"id":16,"method":"process/read","params":{"processId":"x",'
        '"afterSeq":-9223372036854775809}}', 16, "afterSeq below i64"),
    raw('{"id":-9223372036854775809,"method":"environment/status"}', -1, "id below i64"),
    raw('{"id":18446744073709551616,"method":"environment/status"}', -1, "id 2^64"),
    raw('{"id":340282366920938463463374607431768211455,"method":"environment/status"}', -1,
        "id u128 max"),
    raw('{"id":340282366920938463463374607431768211456,"method":"environment/status"}', -1,
        "id beyond u128"),
    raw('{"id":-170141183460469231731687303715884105728,"method":"environment/status"}', -1,
        "id i128 min"),
    raw('{"id":-170141183460469231731687303715884105729,"method":"environment/status"}', -1,
        "id below i128"),
    raw('{"id":1e999,"method":"environment/status"}', -1, "id 1e999"),
    raw('{"method":"environment/status","id":18446744073709551616}', -1, "big id after method"),
    raw('{"id":20,"method":true}', -1, "method true"),
    raw('{"id":21,"method":[]}', -1, "method array"),
    raw('{"id":22,"method":{}}', -1, "method object"),
    raw('{"id":23,"method":"environment/status\\u0000"}', 23, "method with trailing NUL"),
    raw('{"id":24,"method":"process\\u0000/start","params":{}}', 24, "method with NUL inside"),
    raw('{"id":25,"method":"process/read","params":["x",0,null,null,1]}', 25,
        "positional one too many"),
    raw('{"id":26,"method":"process/terminate","params":["x",1]}', 26,
        "positional terminate two"),
    raw('{"id":27,"method":"process/terminate","params":[]}', 27, "positional terminate none"),
    raw('{"id":28,"method":"fs/getMetadata","params":["$CWDURI",null,null,7]}', 28,
        "positional getMetadata four"),
    raw('{"id":29,"method":"fs/walk","params":{"path":"$CWDURI","options":[1,1,1,false,true,5]}}',
        29, "positional walk options six"),
    raw('{"id":30,"method":"initialize","params":[]}', 30, "second initialize, params []"),
    raw('{"id":31,"method":"initialize","params":{}}', 31, "second initialize, params {}"),
    raw('{"id":32,"method":"initialize"}', 32, "second initialize, no params"),
    raw('{"id":33,"method":"initialize","params":{"clientName":"x","resumeSessionId":5}}', 33,
        "second initialize, bad resumeSessionId"),
    raw('{"id":34,"method":"initialize","params":{"clientName":"x"}}', 34,
        "second initialize, valid"),
    req("environment/status", label="still open"),
]})

SCRIPTS.append({"name": "params_nested", "doc": "nested structs as sequences, unit enum maps",
                "steps": [
    req("process/start", {"processId": "n1", "argv": ["/bin/true"], "cwd": "$CWDURI", "env": {},
                          "tty": False, "envPolicy": []}, label="envPolicy []"),
    req("process/start", {"processId": "n2", "argv": ["/bin/true"], "cwd": "$CWDURI", "env": {},
                          "tty": False, "metadata": []}, label="metadata []"),
    req("process/start", {"processId": "n3", "argv": ["/bin/true"], "cwd": "$CWDURI", "env": {},
                          "tty": False, "managedNetwork": []}, label="managedNetwork []"),
    req("process/start", {"processId": "n4", "argv": ["/bin/true"], "cwd": "$CWDURI", "env": {},
                          "tty": False, "sandbox": []}, label="sandbox []"),
    req("fs/readFile", {"path": "$CWDURI", "sandbox": []}, label="fs sandbox []"),
    req("fs/walk", {"path": "$CWDURI", "options": []}, label="walk options []"),
    req("process/signal", {"processId": "n", "signal": {}}, label="signal {}"),
    req("process/signal", {"processId": "n", "signal": {"interrupt": None}},
        label="signal {interrupt: null}"),
    req("process/signal", {"processId": "n", "signal": {"interrupt": {}}},
        label="signal {interrupt: {}}"),
    req("process/signal", {"processId": "n", "signal": {"interrupt": 1}},
        label="signal {interrupt: 1}"),
    req("process/signal", {"processId": "n", "signal": {"a": None, "b": None}},
        label="signal two keys"),
    req("process/signal", {"processId": "n", "signal": {"foo": None}}, label="signal {foo}"),
    req("process/signal", {"processId": "n", "signal": "inter\u0000rupt"}, label="signal NUL"),
    req("process/signal", {"processId": "n", "signal": None}, label="signal null"),
    req("fs/open", {"handleId": "m1", "path": "$CWDURI/nothing", "mode": {}}, label="mode {}"),
    req("fs/open", {"handleId": "m2", "path": "$CWDURI/nothing", "mode": {"a": None, "b": None}},
        label="mode two keys"),
    req("fs/open", {"handleId": "m3", "path": "$CWDURI/nothing", "mode": {"read": None}},
        label="mode {read: null}"),
    req("fs/open", {"handleId": "m4", "path": "$CWDURI/nothing", "mode": {"foo": None}},
        label="mode {foo}"),
    req("environmentConfig/read", {}, label="config {}"),
    req("environmentConfig/read", [], label="config []"),
    req("environmentConfig/read", {"cwd": None, "configPaths": [["a"]], "requirementsPaths": []},
        label="config cwd null"),
    req("environmentConfig/read", {"cwd": "$CWDURI", "configPaths": [["a", 1]],
                                   "requirementsPaths": []}, label="config path number"),
    req("environmentConfig/read", {"cwd": "$CWDURI", "configPaths": [["a"]],
                                   "requirementsPaths": None}, label="config requirements null"),
    req("environmentConfig/read", {"cwd": "relative", "configPaths": [["a"]],
                                   "requirementsPaths": []}, label="config cwd relative"),
]})

# ---- fs/open handles after errors, writeBlock block checks, followSymlinks:false walks

NF_SETUP = ("rm -rf nf && mkdir -p nf/ld && echo hello > nf/f && echo q > nf/ld/q "
            "&& ln -s ld nf/lk && ln -s f nf/lf && echo ok")
NF = "$CWDURI/nf"

SCRIPTS.append({"name": "fs_handle_errors", "doc": "readBlock errors drop the handle; "
                "writeBlock checks its block first", "steps": [
    start("nfmk", NF_SETUP),
    collect("nfmk"),
    req("fs/open", {"handleId": "w", "path": NF + "/out", "mode": "replace"}, label="open w"),
    req("fs/readBlock", {"handleId": "w", "offset": 0, "len": 1}, label="readBlock on replace"),
    req("fs/writeBlock", {"handleId": "w", "offset": 0, "chunk": "eA=="},
        label="writeBlock after it (dropped)"),
    req("fs/open", {"handleId": "w", "path": NF + "/out", "mode": "replace"}, label="open w again"),
    req("fs/writeBlock", {"handleId": "w", "offset": 0, "chunk": ""}, label="writeBlock empty"),
    req("fs/writeBlock", {"handleId": "w", "offset": 0, "chunk": "eA=="},
        label="writeBlock after empty (kept)"),
    req("fs/writeBlock", {"handleId": "w", "offset": 9223372036854775807, "chunk": "eA=="},
        label="writeBlock range i64 max"),
    req("fs/writeBlock", {"handleId": "w", "offset": 9223372036854775806, "chunk": "eHg="},
        label="writeBlock range just over"),
    req("fs/writeBlock", {"handleId": "w", "offset": 9223372036854775808, "chunk": "eA=="},
        label="writeBlock offset 2^63"),
    req("fs/writeBlock", {"handleId": "w", "offset": 0, "chunk": "eQ=="},
        label="writeBlock after range errors (kept)"),
    req("fs/writeBlock", {"handleId": "none", "offset": 0, "chunk": ""},
        label="writeBlock unknown, empty"),
    req("fs/writeBlock", {"handleId": "none", "offset": 9223372036854775807, "chunk": "eA=="},
        label="writeBlock unknown, range"),
    req("fs/writeBlock", {"handleId": "none", "offset": 0, "chunk": "!!"},
        label="writeBlock unknown, bad base64"),
    req("fs/close", {"handleId": "w"}, label="close w"),
    req("fs/readFile", {"path": NF + "/out"}, label="out after writes"),
    req("fs/open", {"handleId": "r", "path": NF + "/f"}, label="open r"),
    req("fs/writeBlock", {"handleId": "r", "offset": 0, "chunk": "eA=="},
        label="writeBlock on read handle"),
    req("fs/readBlock", {"handleId": "r", "offset": 0, "len": 2}, label="readBlock after (kept)"),
    req("fs/readBlock", {"handleId": "r", "offset": 0, "len": 0}, label="readBlock len 0"),
    req("fs/readBlock", {"handleId": "r", "offset": 0, "len": 2},
        label="readBlock after len 0 (kept)"),
    req("fs/readBlock", {"handleId": "r", "offset": 9223372036854775806, "len": 1},
        label="readBlock i64 max - 1"),
    req("fs/readBlock", {"handleId": "r", "offset": 9223372036854775807, "len": 1},
        label="readBlock i64 max"),
    req("fs/readBlock", {"handleId": "r", "offset": 0, "len": 1}, label="readBlock after (dropped)"),
    req("fs/open", {"handleId": "r", "path": NF + "/f"}, label="open r again"),
    req("fs/readBlock", {"handleId": "r", "offset": 18446744073709551615, "len": 1},
        label="readBlock u64 max"),
    req("fs/open", {"handleId": "r", "path": NF + "/f"}, label="open r a third time"),
    req("fs/readBlock", {"handleId": "r", "offset": 9223372036854775808, "len": 1},
        label="readBlock 2^63"),
    req("fs/readBlock", {"handleId": "none", "offset": 18446744073709551615, "len": 1},
        label="readBlock unknown u64 max"),
    req("fs/remove", {"path": NF}, label="cleanup"),
]})

SCRIPTS.append({"name": "fs_nofollow", "doc": "followSymlinks:false through a linked directory",
                "steps": [
    start("nfmk", NF_SETUP),
    collect("nfmk"),
    req("fs/readFile", {"path": NF + "/lk/q", "followSymlinks": False}, label="readFile via link"),
    req("fs/writeFile", {"path": NF + "/lk/q", "dataBase64": "", "followSymlinks": False},
        label="writeFile via link"),
    req("fs/getMetadata", {"path": NF + "/lk/q", "followSymlinks": False},
        label="getMetadata via link"),
    req("fs/createDirectory", {"path": NF + "/lk/new", "followSymlinks": False},
        label="createDirectory via link"),
    req("fs/remove", {"path": NF + "/lk/q", "followSymlinks": False, "recursive": False},
        label="remove via link"),
    req("fs/readFile", {"path": "file:///proc/self/root/etc/hostname", "followSymlinks": False},
        label="readFile via /proc/self"),
    req("fs/readFile", {"path": NF + "/lk", "followSymlinks": False}, label="readFile link"),
    req("fs/readFile", {"path": NF + "/ld", "followSymlinks": False}, label="readFile dir"),
    req("fs/readFile", {"path": "file:///dev/null", "followSymlinks": False},
        label="readFile /dev/null"),
    req("fs/readFile", {"path": NF + "/f", "followSymlinks": False}, label="readFile file"),
    req("fs/writeFile", {"path": "file:///dev/null", "dataBase64": "", "followSymlinks": False},
        label="writeFile /dev/null"),
    req("fs/writeFile", {"path": NF + "/ld", "dataBase64": "", "followSymlinks": False},
        label="writeFile dir"),
    req("fs/writeFile", {"path": NF + "/lf", "dataBase64": "", "followSymlinks": False},
        label="writeFile link"),
    req("fs/writeFile", {"path": NF + "/new", "dataBase64": "eA==", "followSymlinks": False},
        label="writeFile new"),
    req("fs/getMetadata", {"path": NF + "/lk", "followSymlinks": False}, label="getMetadata link"),
    req("fs/getMetadata", {"path": "file:///", "followSymlinks": False}, label="getMetadata root"),
    req("fs/createDirectory", {"path": NF + "/f", "followSymlinks": False},
        label="createDirectory on file"),
    req("fs/createDirectory", {"path": NF + "/lk", "followSymlinks": False},
        label="createDirectory on link"),
    req("fs/createDirectory", {"path": NF + "/ld", "followSymlinks": False},
        label="createDirectory on dir"),
    req("fs/createDirectory", {"path": NF + "/ld", "followSymlinks": False, "recursive": False},
        label="createDirectory on dir non-recursive"),
    req("fs/createDirectory", {"path": NF + "/n1/n2", "followSymlinks": False},
        label="createDirectory new parents"),
    req("fs/createDirectory", {"path": NF + "/n3/n4", "followSymlinks": False,
                               "recursive": False}, label="createDirectory missing parent"),
    req("fs/createDirectory", {"path": NF + "/f", "followSymlinks": True},
        label="createDirectory on file following"),
    req("fs/remove", {"path": NF + "/lk", "followSymlinks": False, "recursive": False},
        label="remove link"),
    req("fs/remove", {"path": NF + "/nothere", "followSymlinks": False, "recursive": False},
        label="remove missing"),
    req("fs/remove", {"path": NF + "/n1", "followSymlinks": False, "recursive": False},
        label="remove non-empty"),
    req("fs/remove", {"path": NF + "/nothere", "followSymlinks": False},
        label="remove recursive no-follow", allow=["remove-nofollow-recursive"]),
    req("fs/readDirectory", {"path": NF + "/n1"}, label="n1 after"),
    req("fs/remove", {"path": NF}, label="cleanup"),
]})

# ---- sizes: sparse huge files, /proc files, blocks ending exactly at the end (§6.12, §6.20)

SZ_SETUP = ("rm -rf sz && mkdir sz && truncate -s 1T sz/huge && truncate -s 536870913 sz/over "
            "&& : > sz/empty && printf 0123456789 > sz/ten && echo ok")
SZ = "$CWDURI/sz"

SCRIPTS.append({"name": "fs_sizes", "doc": "size limit, empty and /proc files, block edges",
                "steps": [
    start("szmk", SZ_SETUP),
    collect("szmk"),
    req("fs/readFile", {"path": SZ + "/huge"}, label="readFile 1 TiB sparse"),
    req("fs/readFile", {"path": SZ + "/over"}, label="readFile 512 MiB + 1"),
    req("fs/readFile", {"path": SZ + "/empty"}, label="readFile empty"),
    req("fs/readFile", {"path": "file:///proc/version"}, label="readFile /proc/version"),
    req("fs/readFile", {"path": "file:///proc/sys/kernel/ostype"}, label="readFile /proc ostype"),
    req("fs/getMetadata", {"path": "file:///proc/version"}, label="getMetadata /proc/version"),
    req("fs/open", {"handleId": "t", "path": SZ + "/ten"}, label="open ten"),
    req("fs/readBlock", {"handleId": "t", "offset": 0, "len": 10}, label="block ending at EOF"),
    req("fs/readBlock", {"handleId": "t", "offset": 5, "len": 5}, label="block 5..10"),
    req("fs/readBlock", {"handleId": "t", "offset": 10, "len": 1}, label="block at EOF"),
    req("fs/readBlock", {"handleId": "t", "offset": 11, "len": 1}, label="block past EOF"),
    # (no MiB-sized answers here: the normalising regexes are quadratic on long tokens)
    req("fs/open", {"handleId": "e", "path": SZ + "/empty"}, label="open empty"),
    req("fs/readBlock", {"handleId": "e", "offset": 0, "len": 1}, label="block of empty"),
    req("fs/open", {"handleId": "h", "path": SZ + "/huge"}, label="open 1 TiB"),
    req("fs/readBlock", {"handleId": "h", "offset": 1099511627775, "len": 4},
        label="block at the end of 1 TiB"),
    req("fs/remove", {"path": SZ}, label="cleanup"),
]})

# ---- program lookup and cwd (§8.3): relative programs, PATH from env, odd PATH entries

PL_SETUP = ("rm -rf pl && mkdir -p pl/bin pl/sub && printf '#!/bin/sh\\necho tool $0\\n' > pl/bin/tool "
            "&& chmod +x pl/bin/tool && printf '#!/bin/sh\\necho local\\n' > pl/sub/here "
            "&& chmod +x pl/sub/here && printf 'not exec' > pl/bin/noexec && mkdir pl/bin/dirprog "
            "&& echo ok")

SCRIPTS.append({"name": "program_lookup", "doc": "argv[0] resolution against env PATH and cwd",
                "steps": [
    start("plmk", PL_SETUP),
    collect("plmk"),
    req("process/start", {"processId": "l1", "argv": ["tool"], "cwd": "$CWDURI",
                          "env": {"PATH": "$CWDPATH/pl/bin"}, "tty": False},
        label="program from env PATH"),
    collect("l1"),
    req("process/start", {"processId": "l2", "argv": ["./here"], "cwd": "$CWDURI/pl/sub",
                          "env": {"PATH": "/usr/bin:/bin"}, "tty": False},
        label="./program relative to cwd"),
    collect("l2"),
    req("process/start", {"processId": "l3", "argv": ["sub/here"], "cwd": "$CWDURI/pl",
                          "env": {"PATH": "/usr/bin:/bin"}, "tty": False},
        label="dir/program relative to cwd"),
    collect("l3"),
    req("process/start", {"processId": "l4", "argv": ["noexec"], "cwd": "$CWDURI",
                          "env": {"PATH": "$CWDPATH/pl/bin"}, "tty": False},
        label="not executable in PATH"),
    req("process/start", {"processId": "l5", "argv": ["dirprog"], "cwd": "$CWDURI",
                          "env": {"PATH": "$CWDPATH/pl/bin"}, "tty": False},
        label="directory in PATH"),
    req("process/start", {"processId": "l6", "argv": ["tool"], "cwd": "$CWDURI",
                          "env": {"PATH": ""}, "tty": False}, label="empty PATH"),
    req("process/start", {"processId": "l7", "argv": ["tool"], "cwd": "$CWDURI/pl/bin",
                          "env": {"PATH": "relative:."}, "tty": False},
        label="relative PATH entries"),
    collect("l7"),
    req("process/start", {"processId": "l8", "argv": ["$CWDPATH/pl/bin/noexec"],
                          "cwd": "$CWDURI", "env": {}, "tty": False},
        label="absolute not executable"),
    req("process/start", {"processId": "l9", "argv": ["$CWDPATH/pl/bin/dirprog"],
                          "cwd": "$CWDURI", "env": {}, "tty": False},
        label="absolute directory"),
    req("process/start", {"processId": "l10", "argv": ["$CWDPATH/pl/bin/tool/x"],
                          "cwd": "$CWDURI", "env": {}, "tty": False},
        label="program under a file"),
    req("process/start", {"processId": "l11", "argv": ["tool"], "cwd": "$CWDURI",
                          "env": {"PATH": "$CWDPATH/pl/bin"}, "tty": True},
        label="program from env PATH, tty"),
    collect("l11"),
    req("process/start", {"processId": "l12", "argv": ["nope-prog"], "cwd": "$CWDURI",
                          "env": {"PATH": "$CWDPATH/pl/bin"}, "tty": True},
        label="missing program, tty"),
    req("process/start", {"processId": "l13", "argv": ["/bin/true"], "cwd": "$CWDURI/pl/bin/tool",
                          "env": {}, "tty": True}, label="cwd a file, tty"),
    req("process/start", {"processId": "l14", "argv": ["/bin/true"], "cwd": "$CWDURI/missing",
                          "env": {}, "tty": True}, label="cwd missing, tty"),
    req("fs/remove", {"path": "$CWDURI/pl"}, label="cleanup"),
]})

# ---- PTY starts resolve the program and directory like the reference's PTY library
# (portable-pty): a cwd that is no directory falls back to HOME; "./x" only under the
# directory; other names only through the child's PATH, with the library's texts.

PT_SETUP = ("rm -rf pt && mkdir -p pt/bin/dirprog && printf x > pt/bin/noexec "
            "&& printf '#!/bin/sh\\necho tool\\nsleep 0.2\\n' > pt/bin/tool && chmod +x pt/bin/tool "
            "&& echo ok")   # (the pause: the reference's events of a PTY exiting at once can race)
PTW, PTB = "$CWDURI/pt", "$CWDPATH/pt/bin"


def pty(pid, argv, env, label, cwd=PTW):
    return req("process/start", {"processId": pid, "argv": argv, "cwd": cwd, "env": env,
                                 "tty": True}, label=label)


SCRIPTS.append({"name": "pty_program_lookup", "doc": "tty:true program and cwd resolution",
                "steps": [
    start("ptmk", PT_SETUP),
    collect("ptmk"),
    pty("a", ["./bin/dirprog"], {}, "./ directory"),
    pty("b", ["./bin/noexec"], {}, "./ not executable"),
    pty("b2", ["./bin/missing"], {}, "./ missing"),
    pty("c", ["./bin/tool"], {}, "./ program"),
    collect("c"),
    pty("l", ["../pt/bin/tool"], {}, "../ program"),
    collect("l"),
    pty("q", ["."], {}, "dot"),
    pty("r", [".."], {}, "dotdot"),
    pty("d", ["noexec"], {"PATH": PTB}, "PATH: not executable"),
    pty("e", ["dirprog"], {"PATH": PTB}, "PATH: directory"),
    pty("f", ["dirprog"], {"PATH": PTB + ":" + PTB + "/:/nonexist"}, "PATH: directory twice"),
    pty("g", ["tool"], {"PATH": "bin"}, "PATH: relative entry"),
    collect("g"),
    pty("h", ["tool"], {"PATH": ":bin"}, "PATH: empty entry first"),
    collect("h"),
    pty("i", ["bin/tool"], {"PATH": "/usr/bin"}, "dir/program not in PATH"),
    pty("j", ["bin/tool"], {"PATH": ""}, "dir/program, empty PATH"),
    collect("j"),
    pty("k", ["x"], {"PATH": "a\"b\\c\td\u00e9"}, "PATH with escapes"),
    pty("e1", ["nope-prog"], {}, "no PATH"),
    pty("e2", ["sh"], {}, "sh without PATH"),
    pty("e3", ["nope-prog"], {"PATH": "/a:/b"}, "not in PATH"),
    pty("e4", ["/nonexistent/prog"], {}, "absolute missing"),
    pty("e5", ["/etc/hostname"], {}, "absolute not executable"),
    pty("e6", ["/"], {}, "absolute directory"),
    pty("m", ["tool"], {"PATH": "bin", "HOME": "$CWDPATH/pt"}, "cwd missing: HOME",
        cwd="$CWDURI/nonexistent"),
    collect("m"),
    pty("m2", ["/bin/sh", "-c", "pwd; sleep 0.2"], {}, "cwd missing: passwd home",
        cwd="$CWDURI/nonexistent"),
    collect("m2"),
    pty("n", ["/bin/sh", "-c", "pwd"], {"HOME": PTB + "/noexec"}, "cwd missing, HOME a file",
        cwd="$CWDURI/nonexistent"),
    pty("o", ["/bin/sh", "-c", "pwd"], {"HOME": "relative"}, "cwd missing, HOME relative",
        cwd="$CWDURI/nonexistent"),
    pty("t", ["tool"], {"PATH": PTB}, "cwd a file", cwd="$CWDURI/pt/bin/tool"),
    collect("t"),
    req("fs/remove", {"path": "$CWDURI/pt"}, label="cleanup"),
]})

# ---- file: URIs (§5.1): hosts (IDNA errors, IPv4 forms), drive letters, NUL bytes

URI_CASES = [
    "file://ho st/x", "file://host:80/x", "file://user@host/x", "file://h%00/x", "file://h<st/x",
    "file://h%20st/x", "file://h^st/x", "file://h|st/x", "file://h%/x", "file://h\u0000/x",
    "file://a..b/x", "file://%41/x", "file://-a/x", "file://a_b/x", "file://a*b/x",
    "file://1.2.3/x", "file://999.1.1.1/x", "file://0x7f.1/x", "file://127.0.0.1./x",
    "file://1.2.3.4.5/x", "file://4294967295/x", "file://4294967296/x", "file://010.0x10.1/x",
    "file://a.1/x", "file://1.a/x", "file://1..2/x", "file://0x/x", "file://09/x",
    "file://1.2.3.256/x", "file://0xffffffffff/x", "file://a.0x1g/x", "file://.1/x",
    "file://1../x", "file://%31.2.3.4/x", "file://[::1]/x", "file://LOCALHOST/tmp",
    "file:///C:/x", "file:///c:/x", "file:///C|/x", "file:///C:", "file:///c:", "file:///C:x",
    "file:///CC:/x", "file://C:/x", "file:///tmp/C:/x", "file:C:/x", "file:///C:/../x",
    "file:///C:/..", "file:///C|/..", "file:///a/../C:",
    "file:///tmp/a\u0000b", "file:///tmp/a%00b", "\u0000file:///tmp\u0000", "file:///%",
    "file:///%zz", "file:/\\x", "file:///tmp\\..", "file:///t\nmp", "file://///tmp",
    "file:", "file://", "file:////", "urn:x", "file:x", "file:tmp",
]

SCRIPTS.append({"name": "file_uri_edges", "doc": "URI hosts, IPv4 forms, drive letters, NULs",
                "steps": [
    *[req("fs/getMetadata", {"path": u}, label="getMetadata %r" % u) for u in URI_CASES],
    req("process/start", {"processId": "u1", "argv": ["/bin/true"], "cwd": "file:///C:/x",
                          "env": {}, "tty": False}, label="cwd drive letter"),
    req("process/start", {"processId": "u2", "argv": ["/bin/true"], "cwd": "file:///tmp/a\u0000b",
                          "env": {}, "tty": False}, label="cwd with a NUL"),
    req("process/start", {"processId": "u3", "argv": ["/bin/true"], "cwd": "file://1.2.3/x",
                          "env": {}, "tty": False}, label="cwd IPv4 host"),
    req("process/start", {"processId": "u4", "argv": ["/bin/true"], "cwd": "file://h%20st/x",
                          "env": {}, "tty": False}, label="cwd bad host"),
    req("environmentConfig/read", {"cwd": "file:///C:/x", "configPaths": [["a"]],
                                   "requirementsPaths": []}, label="config cwd drive letter"),
]})

# ---- managed network (issue 22): process/start.networkProxy decoding and checks -------------
NP_PROXY = {"enabled": True, "enableSocks5": True, "enableSocks5Udp": True,
            "allowUpstreamProxy": False, "dangerouslyAllowAllUnixSockets": False,
            "mode": "full", "domains": None, "unixSockets": None, "allowLocalBinding": False}


def _np(label, proxy=None, top=None, launch=None, allow=None, **extra):
    """A process/start whose networkProxy is {"proxy": NP_PROXY + proxy} + launch (or launch
    itself when given as a non-dict), with extra top-level fields."""
    if launch is None or isinstance(launch, dict):
        p = dict(NP_PROXY)
        p.update(proxy or {})
        lc = {"proxy": p}
        lc.update(launch or {})
    else:
        lc = launch
    params = {"processId": "np-" + label, "argv": ["/bin/true"], "cwd": "$CWDURI", "env": {},
              "tty": False, "networkProxy": lc}
    params.update(top or {})
    params.update(extra)
    st = req("process/start", params, label="networkProxy " + label)
    if allow:
        st["allow"] = allow
    return st


SCRIPTS.append({"name": "network_proxy_params", "doc": "networkProxy decoding, checks, order",
                "steps": [
    _np("not an object", launch=5),
    _np("empty", launch={}),
    _np("empty sequence", launch=[]),
    _np("sequence of the proxy", launch=[dict(NP_PROXY)]),
    _np("sequence too long", launch=[dict(NP_PROXY), {}, None, None, None, 1]),
    _np("proxy null", launch={"proxy": None}),
    _np("proxy number", launch={"proxy": 5}),
    _np("auditMetadata null", launch={"auditMetadata": None}),
    _np("auditMetadata number", launch={"auditMetadata": 5}),
    _np("environmentId number", launch={"environmentId": 5}),
    _np("timeout string", launch={"policyDecisionTimeoutMs": "x"}),
    _np("timeout zero", launch={"policyDecisionTimeoutMs": 0}, proxy={"enabled": False}),
    _np("enabled false", proxy={"enabled": False}),
    _np("enabled string", proxy={"enabled": "yes"}),
    _np("mode bogus", proxy={"mode": "bogus"}),
    _np("mode null", proxy={"mode": None}),
    _np("mode empty map", proxy={"mode": {}}),
    _np("mode map with value", proxy={"mode": {"limited": {}}}),
    _np("domains sequence", proxy={"domains": []}),
    _np("domain value bogus", proxy={"domains": {"a.com": "bogus"}}),
    _np("domain value bool", proxy={"domains": {"a.com": True}}),
    _np("domain empty", proxy={"domains": {"": "allow"}}),
    _np("domain star dot", proxy={"domains": {"*.": "allow"}}),
    _np("domain url", proxy={"domains": {"http://example.com": "allow"}}),
    _np("domain cidr", proxy={"domains": {"10.0.0.0/8": "allow"}}),
    _np("domain double star", proxy={"domains": {"**": "allow"}}),
    _np("domain inner double star", proxy={"domains": {"a**b.com": "allow"}}),
    _np("domain bracket suffix", proxy={"domains": {"[::1]suffix": "allow"}}),
    _np("deny global", proxy={"domains": {"*": "deny"}}),
    _np("deny global apex", proxy={"domains": {"**.*": "deny"}}),
    _np("unix sequence", proxy={"unixSockets": []}),
    _np("unix bogus", proxy={"unixSockets": {"/x": "none"}}),
    _np("unix relative", proxy={"unixSockets": {"rel.sock": "allow"}}),
    _np("unix before domains", proxy={"unixSockets": {"rel.sock": "allow"},
                                      "domains": {"": "allow"}}),
    _np("providers null", proxy={"credentialProviders": None}),
    _np("provider unknown field", proxy={"credentialProviders": {"v": {"type": 1}}}),
    _np("provider auth bogus", proxy={"credentialProviders": {"v": {"auth": ["s"]}}}),
    _np("masking string", proxy={"credentialMasking": "zz"}),
    _np("enabled false beats argv empty", proxy={"enabled": False}, argv=[]),
    _np("managed transparentTcp", top={"managedNetwork": {"transparentTcp": True}},
        proxy={"enabled": False}, allow=["transparent-tcp-0171"]),
    _np("valid", proxy={"domains": {"*.example.com": "allow", "bad.example.com": "deny"}}),
    collect("np-valid"),
]})


# ---- credential masking (credentialMasking / credentialProviders) ---------------------------
# Decoding errors of the providers' members, then what the command sees and what an origin
# started by the command receives through the proxy (printed as yes/no: the placeholders are
# random). /work/notes/credmask-semantics.md.
_CM_REAL = "vendor_abcdefghijklmnopqrstuvwx"
_CM_BASIC = "dXNlcjp2ZW5kb3JfYWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4"  # base64 of user:<real>
_CM_PORT = 28417  # the origin's: fixed, as the provider's prefix names it before the start
_CM_VENDOR = {"env": ["VENDOR_TOKEN"], "patterns": ["^vendor_[a-z]{24}$"]}


def _cm_provider(**kw):
    p = dict(_CM_VENDOR)
    p.update(kw)
    return {"credentialMasking": True, "credentialProviders": {"vendor": p}}


_CM_ORIGIN = (
    "d=$(mktemp -d) && cd \"$d\" && P=" + str(_CM_PORT) + " && "
    "printf '%s\\n' 'import http.server, sys' "
    "'class H(http.server.BaseHTTPRequestHandler):' "
    "'    def do_GET(self):' "
    "'        print(self.path, self.headers.get(\"Authorization\"), self.headers.get(\"X-Api-Key\"), file=open(\"log\", \"a\"), flush=True)' "
    "'        self.send_response(204); self.end_headers()' "
    "'    def log_message(self, *a): pass' "
    "'http.server.ThreadingHTTPServer((\"127.0.0.1\", int(sys.argv[1])), H).serve_forever()' > o.py && "
    "(exec python3 o.py $P >/dev/null 2>&1 &) && "
    "i=0; until curl -s --noproxy '*' -o /dev/null http://127.0.0.1:$P/; do "
    "i=$((i+1)); [ $i -lt 400 ] || break; sleep 0.05; done; : > log; ")

_CM_CHECK = (
    "c() { curl -sS -o /dev/null -x \"$HTTP_PROXY\" \"$@\"; }; "
    "c -H \"Authorization: Bearer $VENDOR_TOKEN\" http://127.0.0.1:$P/v1/a; "
    "c -H \"X-Api-Key: $VENDOR_TOKEN\" http://127.0.0.1:$P/v1/h; "
    "c -H \"Authorization: Bearer $VENDOR_TOKEN\" http://127.0.0.1:$P/v1x; "
    "c -H \"Authorization: token $VENDOR_TOKEN\" http://127.0.0.1:$P/v1/t; "
    "c -u \"user:$VENDOR_TOKEN\" http://127.0.0.1:$P/v1/b; "
    "sed -e \"s/$VENDOR_TOKEN/DUMMY/g\" -e 's/%s/REAL/g' -e 's/Basic %s/Basic-REAL/' "
    "-e 's/Basic [A-Za-z0-9+\\/=]*/Basic-OTHER/' log | sort; "
    "echo \"basic-real=$(grep -c %s log)\"; "
    "pkill -f \"o.py $P\"; cd / && rm -rf \"$d\"" % (_CM_REAL, _CM_BASIC, _CM_BASIC))

_CM_ENV = ("case \"$VENDOR_TOKEN\" in %s) echo vendor=real;; vendor_*) "
           "[ ${#VENDOR_TOKEN} = 31 ] && echo vendor=masked;; *) echo vendor=other;; esac; "
           "case \"$GH_TOKEN\" in ghp_masked*) echo gh=masked ${#GH_TOKEN};; *) echo gh=$GH_TOKEN;; esac; "
           "echo \"emb=${EMB%%%%vendor_*}\" active=$CODEX_NETWORK_PROXY_CREDENTIAL_BROKER_ACTIVE; "
           "echo \"$CODEX_NETWORK_PROXY_BROKERED_CREDENTIALS\" | "
           "sed -e \"s/$VENDOR_TOKEN/V/g\" -e \"s/$GH_TOKEN/G/g\"; "
           "[ \"$SSL_CERT_FILE\" = \"$NODE_EXTRA_CA_CERTS\" ] && [ -r \"$SSL_CERT_FILE\" ] && "
           "grep -c 'BEGIN CERTIFICATE' \"$SSL_CERT_FILE\" >/dev/null && echo ca=readable" % _CM_REAL)


def _cm_run(pid, script, proxy, env=None, shell=("/bin/bash", "-c")):
    """Masking applies to [bash, -c, script] only (the reference's shell form)."""
    p = dict(NP_PROXY)
    p.update(proxy)
    p["domains"] = {"127.0.0.1": "allow"}
    e = dict(PATH_ENV)
    e.update(env or {})
    return start(pid, script, env=e, argv=list(shell) + [script],
                 networkProxy={"proxy": p, "environmentId": "remote", "executionId": "e-" + pid})


SCRIPTS.append({"name": "network_proxy_credentials", "doc": "credential masking: decoding, env, "
                "header substitution toward bound destinations only",
                "steps": [
    _np("masking null", proxy={"credentialMasking": None}),
    _np("provider entry number", proxy={"credentialProviders": {"v": 5}}),
    _np("provider entry empty sequence", proxy={"credentialProviders": {"v": []}}),
    _np("provider env string", proxy={"credentialProviders": {"v": {"env": "s"}}}),
    _np("provider env null", proxy={"credentialProviders": {"v": {"env": None}}}),
    _np("provider patterns number", proxy={"credentialProviders": {"v": {"patterns": 5}}}),
    _np("provider url_prefixes map", proxy={"credentialProviders": {"v": {"url_prefixes": {}}}}),
    _np("provider url_prefix_from_env seq",
        proxy={"credentialProviders": {"v": {"url_prefix_from_env": []}}}),
    _np("provider auth map", proxy={"credentialProviders": {"v": {"auth": [{}]}}}),
    _np("provider auth string", proxy={"credentialProviders": {"v": {"auth": "bearer"}}}),
    _np("provider header seq", proxy={"credentialProviders": {"v": {"header": ["X"]}}}),
    _np("provider prefix number", proxy={"credentialProviders": {"v": {"prefix": 1}}}),
    _cm_run("cm-env", _CM_ENV, _cm_provider(url_prefixes=["https://api.vendor.example/v1"]),
            env={"VENDOR_TOKEN": _CM_REAL, "GH_TOKEN": "ghp_" + "Z" * 36,
                 "EMB": "k=" + _CM_REAL}),
    collect("cm-env", timeout=30),
    _cm_run("cm-sh", _CM_ENV, _cm_provider(url_prefixes=["https://api.vendor.example/v1"]),
            env={"VENDOR_TOKEN": _CM_REAL, "GH_TOKEN": "ghp_" + "Z" * 36}, shell=("/bin/sh", "-c")),
    collect("cm-sh", timeout=30),
    _cm_run("cm-login", _CM_ENV, _cm_provider(url_prefixes=["https://api.vendor.example/v1"]),
            env={"VENDOR_TOKEN": _CM_REAL}, shell=("/bin/bash", "--noprofile", "--norc", "-c")),
    collect("cm-login", timeout=30),
    _cm_run("cm-off", _CM_ENV, dict(_cm_provider(url_prefixes=["https://api.vendor.example/v1"]),
                                    credentialMasking=False),
            env={"VENDOR_TOKEN": _CM_REAL, "GH_TOKEN": "ghp_" + "Z" * 36}),
    collect("cm-off", timeout=30),
    _cm_run("cm-broken", _CM_ENV, _cm_provider(patterns=[".*"], url_prefixes=["https://x.example"]),
            env={"VENDOR_TOKEN": _CM_REAL}),
    collect("cm-broken", timeout=30),
    _cm_run("cm-bearer", _CM_ORIGIN + _CM_CHECK,
            _cm_provider(url_prefixes=["http://127.0.0.1:%d/v1" % _CM_PORT],
                         auth=["bearer", "basic"]), env={"VENDOR_TOKEN": _CM_REAL}),
    collect("cm-bearer", timeout=60),
    _cm_run("cm-dynamic", _CM_ORIGIN + _CM_CHECK,
            _cm_provider(url_prefix_from_env="VP", auth=["header"], header="X-Api-Key"),
            env={"VENDOR_TOKEN": _CM_REAL, "VP": "http://127.0.0.1:%d/v1" % _CM_PORT}),
    collect("cm-dynamic", timeout=60),
]})


# The proxy's answers (not enforced: both servers listen on the host's loopback and name it in
# HTTP_PROXY / ALL_PROXY): refusals of every kind, byte for byte but the date header.
def _np_run(pid, script, start_extra=None, **proxy):
    p = dict(NP_PROXY)
    p.update(proxy)
    env = dict(PATH_ENV)
    return start(pid, script, env=env, networkProxy={"proxy": p, "environmentId": "remote",
                                                      "executionId": "e-" + pid},
                 **(start_extra or {}))


_NP_CURL = "curl -sS -i --max-time 20 %s 2>&1 | grep -iv '^date:'; echo \" rc=$?\""

SCRIPTS.append({"name": "network_proxy_answers", "doc": "the proxy's refusals and failures",
                "steps": [
    _np_run("npa-full", "; ".join(_NP_CURL % a for a in (
        "-x \"$HTTP_PROXY\" http://denied.example:81/x",
        "-x \"$HTTP_PROXY\" http://sub.denied.example/",
        "-x \"$HTTP_PROXY\" http://other.example/",
        "-x \"$HTTP_PROXY\" http://127.0.0.1:9/",
        "-x \"$HTTP_PROXY\" http://[::1]:9/",
        "-x \"$HTTP_PROXY\" -p https://denied.example/",
        "-x \"$HTTP_PROXY\" -p https://other.example:8443/",
        "-x \"$HTTP_PROXY\" -H 'x-unix-socket: /run/x.sock' http://other.example/",
        "-x \"$HTTP_PROXY\" http://127.0.0.2:9/",
        "--socks5-hostname \"${ALL_PROXY#socks5h://}\" http://denied.example/",
        "--socks5-hostname \"${ALL_PROXY#socks5h://}\" http://127.0.0.1:9/",
    )), domains={"denied.example": "deny", "*.denied.example": "deny", "127.0.0.2": "allow",
                 "allowed.example": "allow"}),
    collect("npa-full", timeout=60),
    _np_run("npa-limited", "; ".join(_NP_CURL % a for a in (
        "-x \"$HTTP_PROXY\" -X POST http://127.0.0.2:9/",
        "-x \"$HTTP_PROXY\" -X DELETE http://denied.example/",
        "-x \"$HTTP_PROXY\" -p https://127.0.0.2:9/",
        "-x \"$HTTP_PROXY\" -X PUT -H 'x-unix-socket: /run/x.sock' http://other.example/",
        "--socks5-hostname \"${ALL_PROXY#socks5h://}\" http://127.0.0.2:9/",
    )), mode="limited", domains={"denied.example": "deny", "127.0.0.2": "allow"}),
    collect("npa-limited", timeout=60),
    # a real answer (python's HTTP/1.0 server started by the command): the response head as
    # the client gets it (version, headers kept and dropped), two requests on one connection
    _np_run("npa-forward",
            "d=$(mktemp -d) && cd \"$d\" && echo hi > f && P=$((20000 + $$ % 20000)) && "
            "(exec python3 -m http.server --bind 127.0.0.1 $P >/dev/null 2>&1 &) && "
            "i=0; until curl -s --noproxy '*' -o /dev/null http://127.0.0.1:$P/f; do "
            "i=$((i+1)); [ $i -lt 400 ] || break; sleep 0.05; done; "
            "curl -sS -i -x \"$HTTP_PROXY\" http://127.0.0.1:$P/f http://127.0.0.1:$P/f "
            "-w ' connects=%{num_connects}\\n' | grep -iv '^date:\\|^last-modified:'; "
            "curl -sS -i -0 -x \"$HTTP_PROXY\" http://127.0.0.1:$P/f | grep -iv '^date:\\|^last-modified:'; "
            "pkill -f \"http.server --bind 127.0.0.1 $P\"; cd / && rm -rf \"$d\"",
            domains={"127.0.0.1": "allow"}),
    collect("npa-forward", timeout=60),
    # enforced, under a workspace-write sandbox whose own network is restricted: the proxy
    # is what the command reaches (its refusals), a direct connection is not
    _np_run("npa-restricted", "; ".join(_NP_CURL % a for a in (
        "-x \"$HTTP_PROXY\" http://denied.example/",
        "-x \"$HTTP_PROXY\" http://127.0.0.1:9/",
    )) + "; curl -sS --noproxy '*' --max-time 20 http://192.0.2.1:9/ 2>&1 | "
         "sed 's/after [0-9]* ms/after N ms/'; echo \" rc=$?\"",
        start_extra={"sandbox": SANDBOX_WW, "enforceManagedNetwork": True},
        domains={"denied.example": "deny"}),
    collect("npa-restricted", timeout=60),
]})

# Shell snapshots (shellSnapshotV2): a login profile in the work directory (HOME), commands
# that print their argv, state and environment through the snapshot; the params' checks.
_SNAP_HOME_ENV = {"PATH": "/usr/bin:/bin", "HOME": "$CWDPATH"}
_SNAP_PROFILE = ("alias snapalias='echo alias-works'\n"
                 "snapfunc() { echo \"func-works $1\"; }\n"
                 "export SNAPVAR=from-profile\nshopt -s extglob\nset -o noclobber\n"
                 "echo x >> \"$HOME/captures\"\necho profile-noise\n")
_SNAP_SHOW = ("tr '\\0' '\\n' </proc/$$/cmdline | sed 's|/dev/fd/[0-9]*|/dev/fd/N|'; echo ==; "
              "snapfunc $1; alias; echo V=$SNAPVAR P=$PATH; shopt extglob; set -o | grep noclobber; "
              "env | grep -c __CODEX_SHELL_SNAPSHOT; ls /proc/$$/fd >| \"$HOME/fds\"; "
              "sort -n \"$HOME/fds\" | tr '\\n' ' '; echo; "
              "cat \"$HOME/captures\" | wc -l")


def _snap(scope="snap-scope", name="bash", path="/bin/bash"):
    return {"scopeId": scope, "shell": {"name": name, "path": path}}


def _snap_start(pid, argv, snap, label=None, **extra):
    p = {"processId": pid, "argv": argv, "cwd": "$CWDURI", "env": dict(_SNAP_HOME_ENV),
         "tty": False, "shellSnapshot": snap}
    p.update(extra)
    return req("process/start", p, label=label or "start %s" % pid)


SCRIPTS.append({"name": "shell_snapshot", "doc": "process/start shellSnapshot: replay and checks",
                "steps": [
    start("snap-mk", "rm -f captures; cat > .bash_profile <<'EOF'\n%sEOF\n"
          "printf 'alias shalias=\"echo sh\"\\nexport SHVAR=sh-profile\\n' > .profile"
          % _SNAP_PROFILE),
    collect("snap-mk"),
    _snap_start("snap-1", ["/bin/bash", "-lc", _SNAP_SHOW, "x", "one"], _snap()),
    collect("snap-1"),
    _snap_start("snap-2", ["/bin/bash", "-lc", _SNAP_SHOW, "x", "two"], _snap()),
    collect("snap-2"),
    _snap_start("snap-3", ["/bin/bash", "-lc", _SNAP_SHOW, "x", "three"], _snap("other-scope")),
    collect("snap-3"),
    _snap_start("snap-sh", ["/bin/sh", "-lc", "tr '\\0' '\\n' </proc/$$/cmdline; alias; "
                            "echo V=$SHVAR; env | grep -c __CODEX_SHELL_SNAPSHOT"],
                _snap(name="sh", path="/bin/sh")),
    collect("snap-sh"),
    _snap_start("snap-c", ["/bin/bash", "-c", "echo plain"], _snap(), label="start -c: no snapshot"),
    collect("snap-c"),
    _snap_start("snap-path", ["/bin/bash", "-lc", "echo other-path"], _snap(path="/usr/bin/bash"),
                label="start argv[0] not shell.path"),
    collect("snap-path"),
    _snap_start("snap-fish-echo", ["/bin/echo", "hi"], _snap(name="fish"),
                label="fish, argv not a -lc shell: runs"),
    collect("snap-fish-echo"),
    # The snapshot is prepared (and captured) before the process id is looked at.
    start("snap-dup", "sleep 3"),
    _snap_start("snap-dup", ["/bin/bash", "-lc", "true"], _snap(name="fish"),
                label="duplicate id, fish"),
    _snap_start("snap-dup", ["/bin/bash", "-lc", "true"], _snap(""), label="duplicate id, empty scope"),
    _snap_start("snap-dup", ["/bin/bash", "-lc", "true"], _snap("dup-scope"),
                label="duplicate id, new scope"),
    _snap_start("snap-dup-n", ["/bin/sh", "-c", "cat \"$HOME/captures\" | wc -l"], None,
                label="the duplicate's capture ran"),
    collect("snap-dup-n"),
    req("process/terminate", {"processId": "snap-dup"}, label="terminate snap-dup"),
    collect("snap-dup"),
    _snap_start("snap-e1", ["/bin/bash", "-lc", "true"], _snap(""), label="empty scopeId"),
    _snap_start("snap-e2", ["/bin/echo"], _snap(""), label="empty scopeId, other argv"),
    _snap_start("snap-e3", ["/bin/bash", "-lc", "true"], _snap("x" * 257), label="257-byte scopeId"),
    _snap_start("snap-e4", ["/bin/bash", "-lc", "true"], _snap(name="fish"), label="fish"),
    _snap_start("snap-e5", ["/bin/bash", "-lc", "true"], {"scopeId": 1}, label="scopeId number"),
    _snap_start("snap-e6", ["/bin/bash", "-lc", "true"], {"scopeId": "s"}, label="no shell"),
    _snap_start("snap-e7", ["/bin/bash", "-lc", "true"], {"shell": {"name": "bash", "path": "/bin/bash"}},
                label="no scopeId"),
    _snap_start("snap-e8", ["/bin/bash", "-lc", "true"], {"scopeId": "s", "shell": {"name": "bash"}},
                label="no shell.path"),
    _snap_start("snap-e9", ["/bin/bash", "-lc", "true"], {"scopeId": "s", "shell": []},
                label="shell an array"),
    _snap_start("snap-e10", ["/bin/bash", "-lc", "true"], None, label="shellSnapshot null"),
    collect("snap-e10"),
    # zsh (where installed; elsewhere both servers fail to spawn it alike).
    start("snap-zmk", "printf 'alias zalias=\"echo z\"\\nzfunc() { echo zf; }\\n"
          "export ZVAR=zp\\nsetopt noclobber\\n' > .zprofile"),
    collect("snap-zmk"),
    _snap_start("snap-zsh", ["/usr/bin/zsh", "-lc", "print -rl -- ${(0)\"$(</proc/$$/cmdline)\"} | sed 's|/dev/fd/[0-9]*|/dev/fd/N|'; "
                             "zfunc; alias zalias; echo V=$ZVAR; setopt | grep -x noclobber"],
                _snap(name="zsh", path="/usr/bin/zsh")),
    collect("snap-zsh"),
    # Under a workspace-write sandbox: the command still reads its snapshot.
    _snap_start("snap-sbx", ["/bin/bash", "-lc", _SNAP_SHOW, "x", "sbx"], _snap("sbx-scope"),
                sandbox=SANDBOX_WW),
    collect("snap-sbx"),
    # A capture that fails (.bashrc exits): the command runs as asked, profile and all.
    start("snap-rc", "echo 'exit 3' > .bashrc"),
    collect("snap-rc"),
    _snap_start("snap-fail", ["/bin/bash", "-lc", _SNAP_SHOW, "x", "fail"], _snap("fail-scope")),
    collect("snap-fail"),
    start("snap-clean", "rm -f .bashrc .bash_profile .profile .zprofile captures fds"),
    collect("snap-clean"),
]})

# ---- capability discovery (PROTOCOL.md §6.24; tests/integration/test_discovery.py) ----

def _sh_files(files):
    """A shell script writing files {relative path under $CWDPATH or absolute: bytes/str}."""
    out = []
    for path, data in files.items():
        if isinstance(data, str):
            data = data.encode()
        esc = "".join("\\\\%03o" % b if b < 32 or b > 126 or b in b"'\\\\%" else chr(b)
                      for b in data)
        out.append("mkdir -p \"$(dirname '%s')\" && printf -- '%s' > '%s'" % (path, esc, path))
    return " && ".join(out)


def _fm(name, desc, extra=""):
    return "---\nname: %s\ndescription: %s\n%s---\nbody\n" % (name, desc, extra)


DISC = "$CWDPATH/disc"
DISCU = "$CWDURI/disc"
HOMESK = "$CODEXHOMEPATH/skills"
CACHE = "$CODEXHOMEPATH/plugins/cache"

DISC_V1_FILES = {
    DISC + "/r/.codex-plugin/plugin.json": '{"name":"p1","mcpServers":"./m.json","apps":"../x.json"}',
    DISC + "/r/m.json": '{"m":1}',
    DISC + "/r/skills/s1/SKILL.md": "S1",
    DISC + "/r/skills/s1/agents/openai.yaml": "meta: 1\n",
    DISC + "/r/skills/bad/SKILL.md": b"\xff\xfe",
    DISC + "/r/skills/cut/SKILL.md": b"ab\xe2\x82",
    DISC + "/r/sub dir/.claude-plugin/plugin.json": '{"name":"sub"}',
    DISC + "/r/sub dir/skills/s3/SKILL.md": "S3",
    DISC + "/r/a/b/c/d/e/f/g/SKILL.md": "too deep",
    DISC + "/r/a/b/c/d/e/SKILL.md": "deep enough",
    DISC + "/nested/.cursor-plugin/plugin.json": '{"name":"cur"}',
    DISC + "/nested/x/skills/k/SKILL.md": "k",
    DISC + "/r3/.claude-plugin/plugin.json": "notjson",
    DISC + "/r3/.mcp.json": '{"x":1}',
    DISC + "/file.txt": "x",
}
DISC_V1_SETUP = ("rm -rf %s && %s && ln -s %s/r/skills %s/r/link && "
                 "head -c 1048577 /dev/zero > %s/r/skills/big/SKILL.md"
                 % (DISC, _sh_files(DISC_V1_FILES), DISC, DISC, DISC)).replace(
    "&& head", "&& mkdir -p %s/r/skills/big && head" % DISC)

SCRIPTS.append({"name": "discovery_params", "doc": "discovery parameter decoding", "steps": [
    req("capabilities/discoverV2", None, label="v2 absent"),
    req("capabilities/discoverV2", {}, label="v2 {}"),
    req("capabilities/discoverV2", [], label="v2 []"),
    req("capabilities/discoverV2", {"cwd": 1}, label="v2 cwd number"),
    req("capabilities/discoverV2", {"cwd": "rel"}, label="v2 cwd relative"),
    req("capabilities/discoverV2", {"cwd": "/abs"}, label="v2 cwd native", allow=["native-path"]),
    req("capabilities/discoverV2", {"cwd": "$CWDURI", "sandbox": True}, label="v2 sandbox true"),
    req("capabilities/discoverV2", {"cwd": "$CWDURI", "sandbox": {}}, label="v2 sandbox {}"),
    req("capabilityRoots/discoverV1", None, label="v1 absent"),
    req("capabilityRoots/discoverV1", {}, label="v1 {}"),
    req("capabilityRoots/discoverV1", {"roots": None}, label="v1 roots null"),
    req("capabilityRoots/discoverV1", {"roots": {}}, label="v1 roots map"),
    req("capabilityRoots/discoverV1", {"roots": [1]}, label="v1 root number"),
    req("capabilityRoots/discoverV1", {"roots": [{}]}, label="v1 root {}"),
    req("capabilityRoots/discoverV1", {"roots": [{"id": "r"}]}, label="v1 root no path"),
    req("capabilityRoots/discoverV1", {"roots": [{"id": 5, "path": "$CWDURI"}]}, label="v1 id number"),
    req("capabilityRoots/discoverV1", {"roots": [{"id": "r", "path": True}]}, label="v1 path bool"),
    req("capabilityRoots/discoverV1", {"roots": [{"id": "r", "path": "rel"}]}, label="v1 path rel"),
    req("capabilityRoots/discoverV1", {"roots": [["r", "$CWDURI"]]}, label="v1 root as seq"),
    req("capabilityRoots/discoverV1", {"roots": [{"id": "r", "path": "$CWDURI", "sandbox": True}]},
        label="v1 sandbox true"),
    req("capabilityRoots/discoverV1", {"roots": [{"id": "x", "path": "file:///nonexistent"}] * 129},
        label="v1 129 roots"),
    req("capabilityRoots/discoverV1", {"roots": []}, label="v1 no roots"),
]})

SCRIPTS.append({"name": "discovery_v1", "doc": "capabilityRoots/discoverV1 files, limits, errors",
                "steps": [
    start("dv1", DISC_V1_SETUP),
    collect("dv1"),
    req("capabilityRoots/discoverV1", {"roots": [{"id": "r1", "path": DISCU + "/r"}]},
        label="plugin root, skills, warnings"),
    req("capabilityRoots/discoverV1", {"roots": [
        {"id": "n", "path": DISCU + "/nested/x"}, {"id": "r3", "path": DISCU + "/r3"},
        {"id": "miss", "path": DISCU + "/missing"}, {"id": "file", "path": DISCU + "/file.txt"},
        {"id": "remote", "path": "file://remote/x"}]}, label="ancestors, bad roots, order"),
    start("dv1rm", "rm -rf " + DISC),
    collect("dv1rm"),
]})

DISC_V2_FILES = {
    HOMESK + "/ok/SKILL.md": _fm("ok", "Fine."),
    HOMESK + "/quoted/SKILL.md": _fm('"  a   b  "', "'many   spaces'"),
    HOMESK + "/block/SKILL.md": "---\nname: block\ndescription: |\n  line one\n  line two\n---\n",
    HOMESK + "/repair/SKILL.md": _fm("repair", "Build for AWS: ECS # c"),
    HOMESK + "/short/SKILL.md": _fm("short", "Long.", "metadata:\n  short-description: Short.\n"),
    HOMESK + "/tagged/SKILL.md": _fm("!!str ~", "d"),
    HOMESK + "/noname/SKILL.md": "---\ndescription: dir name\n---\n",
    HOMESK + "/nodesc/SKILL.md": "---\nname: nodesc\n---\n",
    HOMESK + "/nofm/SKILL.md": "text\n",
    HOMESK + "/list/SKILL.md": "---\n- a\n---\n",
    HOMESK + "/.system/sys/SKILL.md": _fm("sys", "hidden dir"),
    HOMESK + "/deps/SKILL.md": _fm("deps", "d"),
    HOMESK + "/deps/agents/openai.yaml": (
        "dependencies:\n  tools:\n    - type: mcp\n      value: srv\n      transport: stdio\n"
        "      oauth:\n        callback_port: 8123\n    - type: env_var\n"
        "policy:\n  allow_implicit_invocation: false\n  products: [codex, CHATGPT, atlas]\n"),
    HOMESK + "/badmeta/SKILL.md": _fm("badmeta", "d"),
    HOMESK + "/badmeta/agents/openai.yaml": "policy:\n  products: [nosuch]\n",
    CACHE + "/mk/alpha/1.9.0/.codex-plugin/plugin.json": '{"name":"alpha-ns"}',
    CACHE + "/mk/alpha/1.10.0/.codex-plugin/plugin.json":
        '{"name":"alpha-ns","interface":{"displayName":"Alpha"}}',
    CACHE + "/mk/alpha/1.10.0/skills/s1/SKILL.md": _fm("s1", "plugin skill"),
    CACHE + "/mk/alpha/.codex-remote-plugin-install.json":
        '{"schema_version":1,"remote_plugin_id":"  rp-1  "}',
    CACHE + "/mk/beta/local/.claude-plugin/plugin.json": "{}",
    CACHE + "/mk/beta/9.0.0/.claude-plugin/plugin.json": "{}",
    CACHE + "/mk/gamma/1.0.0-rc.10/.codex-plugin/plugin.json": '{"name":"gamma"}',
    CACHE + "/mk/gamma/1.0.0-rc.2/.codex-plugin/plugin.json": '{"name":"gamma"}',
    CACHE + "/mk/kappa/1.0.0/.codex-plugin/plugin.json": "notjson",
}
DISC_V2_CLEAN = "rm -rf %s $CODEXHOMEPATH/plugins" % HOMESK

SCRIPTS.append({"name": "discovery_v2", "doc": "capabilities/discoverV2 skills and plugins",
                # written before both servers restart: the reference scans at start-up and
                # caches (uexec scans on every request)
                "clean": [HOMESK, "$CODEXHOMEPATH/plugins"], "files": DISC_V2_FILES,
                "steps": [
    req("capabilities/discoverV2", {"cwd": "$CWDURI"}, label="skills, plugins, warnings"),
    req("capabilities/discoverV2", ["$CWDURI"], label="params as a sequence"),
    req("capabilities/discoverV2", {"cwd": "file://remote/x"}, label="any cwd host"),
    start("dv2rm", DISC_V2_CLEAN),
    collect("dv2rm"),
]})


SCRIPTS.append({"name": "discovery_v2_remote", "doc": "discoverV2: unusable remote install metadata",
                "clean": [HOMESK, "$CODEXHOMEPATH/plugins"], "files": dict(DISC_V2_FILES, **{
                    CACHE + "/mk/alpha/.codex-remote-plugin-install.json": '{"schema_version":2}'}),
                "steps": [
    req("capabilities/discoverV2", {"cwd": "$CWDURI"}, label="location warning first"),
    start("dv2rrm", DISC_V2_CLEAN),
    collect("dv2rrm"),
]})


def _disc_sandbox(deny=()):
    entries = [{"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"}]
    entries += [{"path": {"type": "path", "path": d}, "access": "deny"} for d in deny]
    return {"permissions": {"type": "managed", "file_system": {"type": "restricted",
                                                               "entries": entries},
                            "network": "restricted"},
            "cwd": "$CWDURI", "windowsSandboxLevel": "disabled"}


SCRIPTS.append({"name": "discovery_sandbox", "doc": "discovery under a sandbox: denials are warnings",
                "clean": [DISC, HOMESK], "files": {
                    DISC + "/r/skills/ok/SKILL.md": "ok",
                    DISC + "/r/secret/skills/hid/SKILL.md": "hid",
                    DISC + "/r/skills/den/SKILL.md": "den", HOMESK + "/a/SKILL.md": _fm("a", "d")},
                "steps": [
    req("capabilityRoots/discoverV1", {"roots": [
        {"id": "x", "path": DISCU + "/r", "sandbox": _disc_sandbox(
            [DISCU + "/r/secret", DISCU + "/r/skills/den/SKILL.md"])},
        {"id": "y", "path": DISCU + "/r"}]}, label="v1 denied paths, mixed roots"),
    req("capabilityRoots/discoverV1", {"roots": [
        {"id": "x", "path": DISCU + "/r", "sandbox": _disc_sandbox([DISCU + "/r"])}]},
        label="v1 denied root"),
    req("capabilities/discoverV2", {"cwd": "$CWDURI", "sandbox": _disc_sandbox()},
        label="v2 sandboxed"),
    req("capabilities/discoverV2", {"cwd": "$CWDURI", "sandbox": _disc_sandbox(
        ["$CODEXHOMEURI/skills"])}, label="v2 skills denied"),
    req("capabilities/discoverV2", {"cwd": "$CWDURI", "sandbox": _disc_sandbox(
        ["$CODEXHOMEURI"])}, label="v2 codex home denied"),
    start("dsbrm", "rm -rf %s %s" % (DISC, HOMESK)),
    collect("dsbrm"),
]})

# ---- http/request (PROTOCOL.md §6.23, §7.5) against the harness's local HTTP server ----

def _hr(label, allow=None, **params):
    p = {"method": "GET", "url": "$HTTPURL/echo", "requestId": "r"}
    for k, v in params.items():
        if v is _HR_DEL:
            p.pop(k, None)
        else:
            p[k] = v
    st = req("http/request", p, label=label, timeout=20)
    if allow:
        st["allow"] = allow
    return st


_HR_DEL = object()

SCRIPTS.append({"name": "http_request", "doc": "http/request params, results, redirects, "
                "timeouts and streamed bodies against a local HTTP server", "steps": [
    # serde's decoding
    _hr("no params", method=_HR_DEL, url=_HR_DEL, requestId=_HR_DEL),
    _hr("no url", url=_HR_DEL),
    _hr("no requestId", requestId=_HR_DEL),
    _hr("requestId null", requestId=None),
    _hr("requestId number", requestId=5),
    _hr("method number", method=5),
    _hr("headers null", headers=None),
    _hr("headers map", headers={}),
    _hr("header without name", headers=[{"value": "x"}]),
    _hr("header without value", headers=[{"name": "X", "valueEnvVar": "PATH"}]),
    _hr("header as string", headers=["x"]),
    _hr("body !!", bodyBase64="!!"),
    _hr("body of length 1", bodyBase64="a"),
    _hr("body unpadded", bodyBase64="aGk"),
    _hr("body bad padding", bodyBase64="aG=k"),
    _hr("timeout -1", timeoutMs=-1),
    _hr("timeout string", timeoutMs="5"),
    _hr("timeout float", timeoutMs=1.5),
    _hr("redirectPolicy none", redirectPolicy="none"),
    _hr("redirectPolicy null", redirectPolicy=None),
    _hr("redirectPolicy Follow", redirectPolicy="Follow"),
    _hr("streamResponse null", streamResponse=None),
    _hr("streamResponse string", streamResponse="yes"),
    # serde's sequence form (declaration order) and a unit enum's map form
    req("http/request", ["GET", "http://127.0.0.1:9/", None, None, None, "follow", "r", False],
        label="params as a sequence, headers null"),
    req("http/request", ["GET", "http://127.0.0.1:9/", "r", [], None, None, None, False],
        label="params as a sequence, requestId where headers go"),
    req("http/request", ["GET", "http://127.0.0.1:9/", "r"], label="params as a short sequence"),
    req("http/request", ["GET", "http://127.0.0.1:9/", [], None, 300, {"stop": None}, "r", True],
        label="params as a sequence", timeout=20),
    _hr("redirectPolicy as a map", url="http://127.0.0.1:9/", redirectPolicy={"stop": None}),
    _hr("redirectPolicy map of another variant", redirectPolicy={"x": None}),
    _hr("headers as a string", headers="x"),
    # the request's own checks
    _hr("method empty", method=""),
    _hr("method G(T", method="G(T"),
    _hr("url empty", url=""),
    _hr("url relative", url="not a url"),
    _hr("url http://", url="http://"),
    _hr("url empty host with port", url="http://:8080/"),
    _hr("url bad IPv6", url="http://[::1"),
    _hr("url bad port", url="http://127.0.0.1:99999/"),
    _hr("url space in host", url="http://a b/"),
    _hr("url file", url="file:///etc/hostname"),
    _hr("url FTP", url="FTP://x/"),
    _hr("header name with space", headers=[{"name": "a b", "value": "x"}]),
    _hr("header name empty", headers=[{"name": "", "value": "x"}]),
    _hr("header value with LF", headers=[{"name": "X-A", "value": "a\nb"}]),
    _hr("valueEnvVar unset", headers=[{"name": "X", "value": "v",
                                       "valueEnvVar": "UEXEC_DIFF_NO_SUCH_VAR"}]),
    _hr("valueEnvVar empty name", headers=[{"name": "X", "value": "v", "valueEnvVar": ""}]),
    _hr("valueEnvVar with =", headers=[{"name": "X", "value": "v", "valueEnvVar": "A=B"}]),
    _hr("timeout 0", timeoutMs=0),
    # results
    _hr("GET echo"),
    _hr("lower-case method, query, fragment", method="get",
        url="$HTTPURL/echo?q=1#frag"),
    _hr("POST body, repeated headers, Content-Type", method="POST",
        bodyBase64="aGVsbG8gYm9keQ==", headers=[{"name": "X-A", "value": "1"},
                                                {"name": "x-a", "value": "2"},
                                                {"name": "Content-Type", "value": "text/plain"}]),
    _hr("POST empty body", method="POST", bodyBase64=""),
    _hr("PUT, DELETE-like custom method", method="FOO", bodyBase64="cA=="),
    _hr("valueEnvVar appends CODEX_HOME", headers=[{"name": "X-Env", "value": "v:",
                                                          "valueEnvVar": "CODEX_HOME"}]),
    _hr("Host and Accept given", headers=[{"name": "Host", "value": "h.example"},
                                                {"name": "Accept", "value": "text/x"}]),
    _hr("userinfo", url="http://us%20er:p%40ss@$HTTPADDR/echo"),
    _hr("path normalisation", url="$HTTPURL/a/../echo/./x?y=a b"),
    _hr("HEAD", method="HEAD"),
    _hr("404", url="$HTTPURL/status?code=404&body=nope"),
    _hr("204", url="$HTTPURL/status?code=204"),
    _hr("chunked", url="$HTTPURL/chunked?n=4"),
    _hr("close-delimited", url="$HTTPURL/close-delimited"),
    _hr("closed mid-body", url="$HTTPURL/abort"),
    _hr("bad chunk", url="$HTTPURL/bad-chunk"),
    _hr("refused", url="http://127.0.0.1:9/"),
    # the URL in the error as the reference shows it: no userinfo, the fragment, WHATWG hosts
    _hr("refused, userinfo and fragment", url="http://user:pw@127.0.0.1:9/a#f"),
    _hr("refused, IPv4-mapped IPv6", url="http://[::ffff:127.0.0.1]:9/x", timeoutMs=2000),
    _hr("refused, IPv6 zero runs", url="http://[1:0:0:2:0:0:3:4]:9/", timeoutMs=300),
    _hr("refused, hex IPv4 and escaped host", url="http://0x7f.1:9/"),
    _hr("unknown host, escaped", url="http://h%2Dx.invalid:9/"),
    _hr("https to a plain server", url="https://$HTTPADDR/echo"),
    _hr("timeout before the head", url="$HTTPURL/hang", timeoutMs=300,
        allow=["http-timeout-race"]),
    _hr("timeout in the body", url="$HTTPURL/hang-body", timeoutMs=300),
    # content codings
    _hr("gzip", url="$HTTPURL/gzip"),
    _hr("GZIP (not decoded)", url="$HTTPURL/gzip?as=GZIP"),
    _hr("gzip that is none", url="$HTTPURL/gzip?bad=1"),
    _hr("HEAD gzip", method="HEAD", url="$HTTPURL/gzip"),
    _hr("client's Accept-Encoding", headers=[{"name": "Accept-Encoding", "value": "identity"}]),
    # redirects
    _hr("redirect followed", url="$HTTPURL/redir/302?to=/echo%3Ffrom%3Dr"),
    _hr("redirect stop", url="$HTTPURL/redir/302?to=/echo", redirectPolicy="stop"),
    _hr("POST 301", method="POST", bodyBase64="aGk=", url="$HTTPURL/redir/301?to=/echo",
        headers=[{"name": "Content-Type", "value": "t"}, {"name": "Authorization", "value": "a"}]),
    _hr("POST 303", method="POST", bodyBase64="aGk=", url="$HTTPURL/redir/303?to=/echo"),
    _hr("POST 307", method="POST", bodyBase64="aGk=", url="$HTTPURL/redir/307?to=/echo",
        headers=[{"name": "Content-Type", "value": "t"}]),
    _hr("PUT 301", method="PUT", bodyBase64="aGk=", url="$HTTPURL/redir/301?to=/echo"),
    _hr("HEAD 303", method="HEAD", url="$HTTPURL/redir/303?to=/echo"),
    _hr("own Referer replaced", url="$HTTPURL/redir/302?to=/echo",
        headers=[{"name": "Referer", "value": "mine"}]),
    _hr("across origins",
        url="$HTTPURL/redir/302?to=http://localhost:$HTTPPORT/echo",
        headers=[{"name": "Authorization", "value": "x"}, {"name": "Cookie", "value": "c"},
                 {"name": "X-Keep", "value": "k"}]),
    _hr("10 redirects", url="$HTTPURL/chain/10"),
    _hr("11 redirects", url="$HTTPURL/chain/11"),
    _hr("loop", url="$HTTPURL/loop"),
    _hr("to file:", url="$HTTPURL/redir/302?to=file:///etc/passwd"),
    _hr("to a Location that is no URL", url="$HTTPURL/redir/302?to=http://%5B"),
    # streamed bodies
    _hr("stream chunked", url="$HTTPURL/chunked?n=3", streamResponse=True, requestId="s1"),
    {"op": "body_deltas", "request_id": "s1", "label": "deltas s1"},
    _hr("stream again with s1", url="$HTTPURL/status?code=404&body=nope", streamResponse=True,
        requestId="s1"),
    {"op": "body_deltas", "request_id": "s1", "label": "deltas s1 again"},
    _hr("stream HEAD", method="HEAD", streamResponse=True, requestId="sh"),
    {"op": "body_deltas", "request_id": "sh", "label": "deltas HEAD"},
    _hr("stream closed mid-body", url="$HTTPURL/abort", streamResponse=True, requestId="sa"),
    {"op": "body_deltas", "request_id": "sa", "label": "deltas closed mid-body"},
    _hr("stream gzip", url="$HTTPURL/gzip", streamResponse=True, requestId="sg"),
    {"op": "body_deltas", "request_id": "sg", "label": "deltas gzip"},
    _hr("stream gzip that is none", url="$HTTPURL/gzip?bad=1", streamResponse=True,
        requestId="sgb"),
    {"op": "body_deltas", "request_id": "sgb", "label": "deltas gzip that is none"},
    _hr("stream bad chunk", url="$HTTPURL/bad-chunk", streamResponse=True, requestId="sb"),
    {"op": "body_deltas", "request_id": "sb", "label": "deltas bad chunk"},
    _hr("stream empty requestId", url="$HTTPURL/chunked?n=2", streamResponse=True, requestId=""),
    {"op": "body_deltas", "request_id": "", "label": "deltas empty requestId"},
    _hr("stream that stalls", url="$HTTPURL/hang-body", streamResponse=True, requestId="st",
        timeoutMs=1500),
    _hr("same requestId while it streams", url="$HTTPURL/echo", streamResponse=True,
        requestId="st"),
    _hr("same requestId, buffered", requestId="st"),
    {"op": "body_deltas", "request_id": "st", "label": "deltas of the stalled stream",
     "timeout": 20},
]})
