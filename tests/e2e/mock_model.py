"""A scripted stand-in for the model endpoint the Codex CLI talks to.

The CLI (0.169.0, custom `model_providers.<id>` with `wire_api = "responses"`)
POSTs an OpenAI Responses API request to `<base_url>/responses` with
`"stream": true` and expects a `text/event-stream` reply made of
`event: <type>` / `data: <json>` blocks:

  response.created           {"response": {"id": ...}}
  response.output_item.done  {"item": <function_call | custom_tool_call | message>}  (one per item)
  response.completed         {"response": {"id": ..., "usage": {...}}}

The next request carries the whole conversation in `input`, including
`function_call_output` / `custom_tool_call_output` items whose `call_id` matches
the call we made; that is how the tool result comes back to us.

A scenario's script is a generator: it yields a list of output items (the
model's answer to the current request) and receives a `ToolResult` describing
the tool output of the last call it made. When the generator returns, any
further request gets a plain "done" message and is counted as unexpected.
"""
import http.server
import json
import threading
import time


def function_call(name, args, call_id):
    return {"type": "function_call", "id": "fc_" + call_id, "call_id": call_id, "name": name,
            "arguments": json.dumps(args)}


def custom_tool_call(name, text, call_id):
    return {"type": "custom_tool_call", "id": "ctc_" + call_id, "call_id": call_id, "name": name,
            "input": text}


def message(text, msg_id="msg_final"):
    return {"type": "message", "role": "assistant", "id": msg_id,
            "content": [{"type": "output_text", "text": text}]}


def sse(events):
    out = []
    for ev in events:
        out.append("event: %s\ndata: %s\n\n" % (ev["type"], json.dumps(ev)))
    return "".join(out).encode()


def response_events(resp_id, items):
    evs = [{"type": "response.created", "response": {"id": resp_id}}]
    for it in items:
        evs.append({"type": "response.output_item.done", "item": it})
    evs.append({"type": "response.completed", "response": {
        "id": resp_id,
        "usage": {"input_tokens": 0, "input_tokens_details": None, "output_tokens": 0,
                  "output_tokens_details": None, "total_tokens": 0}}})
    return evs


class ToolResult:
    """The tool output the CLI sent back for one call."""

    def __init__(self, call_id, item):
        self.call_id = call_id
        self.item = item
        self.text = ""
        self.images = []
        if item is None:
            return
        out = item.get("output")
        if isinstance(out, dict) and "content" in out:  # defensive: {"content": ...} form
            out = out["content"]
        if isinstance(out, str):
            self.text = out
        elif isinstance(out, list):
            parts = []
            for c in out:
                if not isinstance(c, dict):
                    continue
                if "text" in c:
                    parts.append(c["text"])
                if c.get("type") in ("input_image", "image") or "image_url" in c:
                    self.images.append(c.get("image_url"))
            self.text = "\n".join(parts)

    @property
    def found(self):
        return self.item is not None

    def __repr__(self):
        return "ToolResult(%s, %r, images=%d)" % (self.call_id, self.text[:200], len(self.images))


def find_output(body, call_id):
    for it in body.get("input") or []:
        if isinstance(it, dict) and it.get("call_id") == call_id and \
                it.get("type") in ("function_call_output", "custom_tool_call_output"):
            return it
    return None


class MockModel:
    def __init__(self, script, log_path, record=None):
        """script: generator as described in the module docstring.
        log_path: JSONL file receiving every HTTP request (method, path, headers, body)."""
        self.script = script
        self.log = open(log_path, "a", buffering=1)
        self.lock = threading.Lock()
        self.turn_requests = 0
        self.extra_requests = 0
        self.results = []          # ToolResult per call, in order
        self.errors = []           # protocol problems seen by the mock
        self.last_call_id = None
        self.started = False
        self.done = False
        self.final = None
        self.resp_n = 0
        self.httpd = None

    # -- scripting -------------------------------------------------------------
    def _next_items(self, body):
        with self.lock:
            try:
                if self.done:
                    self.extra_requests += 1
                    return [message("done")]
                if not self.started:
                    self.started = True
                    items = next(self.script)
                else:
                    res = ToolResult(self.last_call_id, find_output(body, self.last_call_id)) \
                        if self.last_call_id else ToolResult(None, None)
                    if self.last_call_id and not res.found:
                        self.errors.append("request %d has no output for call %s"
                                           % (self.turn_requests, self.last_call_id))
                    self.results.append(res)
                    items = self.script.send(res)
            except StopIteration:
                if self.done:
                    self.extra_requests += 1
                self.done = True
                return [message("done")]
            except Exception as e:  # a bug in a script: finish the turn cleanly
                self.errors.append("script raised %r" % (e,))
                self.done = True
                return [message("script error")]
            self.last_call_id = None
            for it in items:
                if it.get("type") in ("function_call", "custom_tool_call"):
                    self.last_call_id = it["call_id"]
            if self.last_call_id is None:
                self.done = True   # a final answer ends the script
                for it in items:
                    if it.get("type") == "message":
                        self.final = "".join(c.get("text", "") for c in it.get("content", []))
            return items

    def final_text(self):
        """The text of the script's final answer (None before it was given)."""
        return self.final

    # -- HTTP --------------------------------------------------------------------
    def start(self):
        mock = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _record(self, body):
                mock.log.write(json.dumps({"t": time.time(), "method": self.command,
                                           "path": self.path, "headers": dict(self.headers),
                                           "body": body}) + "\n")

            def _send(self, code, ctype, data):
                self.send_response(code)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._record(None)
                self._send(404, "application/json", b'{"error":{"message":"not found"}}')

            def do_POST(self):
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                self._record(body)
                if not self.path.rstrip("/").endswith("/responses"):
                    self._send(404, "application/json", b'{"error":{"message":"not found"}}')
                    return
                kind = "turn"
                try:
                    meta = json.loads(self.headers.get("x-codex-turn-metadata") or "{}")
                    kind = meta.get("request_kind", "turn")
                except ValueError:
                    pass
                if kind != "turn":
                    # auxiliary requests (titles, compaction, ...): answer neutrally
                    items = [message("ok")]
                else:
                    mock.turn_requests += 1
                    items = mock._next_items(body)
                with mock.lock:
                    mock.resp_n += 1
                    rid = "resp_%d" % mock.resp_n
                self._send(200, "text/event-stream", sse(response_events(rid, items)))

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return "http://127.0.0.1:%d/v1" % self.httpd.server_address[1]

    def stop(self):
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()
