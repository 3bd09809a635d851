"""A hostile read-only MCP server for probe's tests: ``garbage`` writes a line that is not JSON-RPC
before its answer, ``hang`` never answers, ``die`` exits mid-call, ``badnote`` sends a progress
notification the SDK's model refuses (its params carry a workflow command) before its answer;
with ``--noisy-list``, so does ``tools/list``. Every tool says readOnlyHint."""

from __future__ import annotations

import json
import sys
from typing import Any

#: a progress notification without a token or progress, its params a legacy workflow command
BAD_NOTE = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"n": "##[set-output name=x;]1"}}
NOISY_LIST = sys.argv[1:] == ["--noisy-list"]
TOOLS = [
    {"name": name, "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}}
    for name in ("garbage", "hang", "die", "badnote")
]


def out(*messages: Any) -> None:
    sys.stdout.write("".join((m if isinstance(m, str) else json.dumps(m)) + "\n" for m in messages))
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if method == "initialize":
        info = {"name": "probe-hostile", "version": "1.0.0"}
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": info}
        out({"jsonrpc": "2.0", "id": ident, "result": result})
    elif method == "tools/list":
        out(*([BAD_NOTE] if NOISY_LIST else []), {"jsonrpc": "2.0", "id": ident, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        name = message["params"]["name"]
        if name == "die":
            sys.exit(1)
        if name == "garbage":
            answer = {"content": [{"type": "text", "text": "ok"}], "isError": False}
            out("this is not JSON-RPC", {"jsonrpc": "2.0", "id": ident, "result": answer})
        if name == "badnote":
            answer = {"content": [{"type": "text", "text": "ok"}], "isError": False}
            out(BAD_NOTE, {"jsonrpc": "2.0", "id": ident, "result": answer})
    elif ident is not None:
        out({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "no such method"}})
