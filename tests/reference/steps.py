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

"allow": [...] lists KNOWN_DIFFS accepted for that step. "$CWDURI" / "$CWDPATH"
are replaced by the shared work directory (file: URI / native path).

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
