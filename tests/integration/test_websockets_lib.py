# SPDX-License-Identifier: MIT
"""Interoperability with a standards-compliant client: the `websockets` library
(PROTOCOL.md §1.3, §1.4, §2.1, §7)."""

import asyncio
import base64
import json

import pytest

from conftest import EVENT_TIMEOUT

# the programs this module's processes run (skipped, with the names, where missing)
pytestmark = pytest.mark.needs_programs("/bin/sh")

websockets = pytest.importorskip("websockets")
T = EVENT_TIMEOUT   # every wait for the server


async def _session(url):
    async with websockets.connect(url, compression=None, max_size=None,
                                  ping_interval=None, open_timeout=T, close_timeout=T) as ws:
        await ws.send(json.dumps({"id": 1, "method": "initialize",
                                  "params": {"clientName": "codex-environment",
                                             "resumeSessionId": None}}))
        init = json.loads(await asyncio.wait_for(ws.recv(), T))
        await ws.send(json.dumps({"method": "initialized", "params": {}}))
        pong_waiter = await ws.ping(b"lib-ping")
        await asyncio.wait_for(pong_waiter, T)
        await ws.send(json.dumps({"id": 2, "method": "process/start", "params": {
            "processId": "lib", "argv": ["/bin/sh", "-c", "echo from-lib; exit 2"],
            "cwd": "file:///tmp", "env": {}, "tty": False, "pipeStdin": False, "arg0": None,
            "sandbox": None}}))
        msgs = []
        while True:
            m = json.loads(await asyncio.wait_for(ws.recv(), T))
            msgs.append(m)
            if m.get("method") == "process/closed":
                break
        await ws.close(1000, "bye")
        return init, msgs, ws.close_code


def test_websockets_library_client(server):
    """§1.3/§1.4/§7: a standard client completes handshake, ping, a process run, and a
    clean close handshake (uexec echoes Close: code 1000, not 1006)."""
    init, msgs, close_code = asyncio.run(_session(server.url))
    assert init["id"] == 1 and "sessionId" in init["result"]
    assert msgs[0] == {"id": 2, "result": {"processId": "lib", "sandboxType": "none"}}
    notes = [m["params"] for m in msgs[1:]]
    assert [n["seq"] for n in notes] == list(range(1, len(notes) + 1))
    out = b"".join(base64.b64decode(m["params"]["chunk"]) for m in msgs
                   if m.get("method") == "process/output")
    assert out == b"from-lib\n"
    exited = [m["params"] for m in msgs if m.get("method") == "process/exited"]
    assert exited == [{"processId": "lib", "seq": exited[0]["seq"], "exitCode": 2,
                       "sandboxDenied": False}]
    assert close_code == 1000


async def _big_message(url, size):
    async with websockets.connect(url, compression=None, max_size=None,
                                  ping_interval=None, open_timeout=T, close_timeout=T) as ws:
        await ws.send(json.dumps({"id": 1, "method": "initialize",
                                  "params": {"clientName": "big"}}))
        await asyncio.wait_for(ws.recv(), T)
        await ws.send(json.dumps({"method": "initialized"}))
        # fragmented by the library (async iterator -> continuation frames)
        text = json.dumps({"id": 2, "method": "process/read",
                           "params": {"processId": "y" * size}})

        async def parts():
            for i in range(0, len(text), 65536):
                yield text[i:i + 65536]

        await ws.send(parts())
        reply = json.loads(await asyncio.wait_for(ws.recv(), T))
        return reply


def test_websockets_library_fragmented_large_message(server):
    """§1.3: a 2 MiB message fragmented by the library is reassembled."""
    reply = asyncio.run(_big_message(server.url, 2 * 1024 * 1024))
    assert reply["id"] == 2
    assert reply["error"]["code"] == -32600
    assert reply["error"]["message"].startswith("unknown process id yyyy")
