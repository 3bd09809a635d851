"""A hostile MCP server for the capture tests: it writes raw JSON-RPC lines that a real client
may take otherwise than a naive recorder would (it is the peer under test, not a stub).

It answers ``initialize`` and ``tools/list`` properly; each ``tools/call`` is answered as the
tool's name says (see ``ANSWERS``). Run: ``python hostile.py [ignore-eof PIDFILE | http PORT]``: with
``ignore-eof`` it goes on running after its input closes, ignores SIGTERM too, and writes its
process id to PIDFILE (so that a test can end it whatever happens).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

ERROR = {"code": -32000, "message": "no", "data": {"why": [1]}}
TEXT = {"content": [{"type": "text", "text": "first"}], "isError": False}
OTHER = {"content": [{"type": "text", "text": "second"}], "isError": False}


def out(*lines: str) -> None:
    sys.stdout.write("".join(line + "\n" for line in lines))
    sys.stdout.flush()


def answer(ident: Any, result: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": ident, "result": result})


def text_result(raw_value: str) -> str:
    """A result whose structuredContent holds a raw JSON value text (NaN, 1e400, ...)."""
    return '{"content":[{"type":"text","text":"odd"}],"structuredContent":{"v":' + raw_value + "}}"


# what each tool's call is answered with: the lines written, given the request's id
ANSWERS = {
    "string_id": lambda i: [answer(str(i), TEXT)],
    "string_then_int": lambda i: [answer(str(i), TEXT), answer(i, OTHER)],
    "batch_then_plain": lambda i: ["[" + answer(i, TEXT) + "]", answer(i, OTHER)],
    "duplicate_key": lambda i: [f'{{"jsonrpc":"2.0","id":{i},"result":{{"content":[],"content":[]}}}}'],
    "nan": lambda i: [f'{{"jsonrpc":"2.0","id":{i},"result":{text_result("NaN")}}}'],
    "huge_number": lambda i: [f'{{"jsonrpc":"2.0","id":{i},"result":{text_result("1e400")}}}'],
    "error_data": lambda i: [json.dumps({"jsonrpc": "2.0", "id": i, "error": ERROR})],
    "float_id": lambda i: [answer(int(i), TEXT)],
    "hang": lambda i: [],
}
TOOLS = [{"name": name, "inputSchema": {"type": "object"}} for name in [*ANSWERS, "die"]]


def answers(message: dict[str, Any]) -> list[str]:
    """The lines that answer one message (none for a notification)."""
    method, ident = message.get("method"), message.get("id")
    if method == "initialize":
        info = {"name": "hostile", "version": "1.0.0"}
        hello = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": info}
        return [answer(ident, hello)]
    if method == "tools/list":
        return [answer(ident, {"tools": TOOLS})]
    if method == "tools/call":
        name = message["params"]["name"]
        if name == "die":
            sys.exit(1)
        return ANSWERS[name](ident)
    return [] if ident is None else [answer(ident, {})]


def serve_http(port: int) -> None:
    """Streamable HTTP: each POST is answered with its lines as server-sent events."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            lines = answers(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200 if lines else 202)
            self.send_header("Content-Type", "text/event-stream")
            body = "".join(f"event: message\ndata: {line}\n\n" for line in lines).encode()
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self.send_error(405)

        do_DELETE = do_GET

        def log_message(self, *args: Any) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def main() -> None:
    if sys.argv[1:2] == ["http"]:
        serve_http(int(sys.argv[2]))
    ignore_eof = sys.argv[1:2] == ["ignore-eof"]
    if ignore_eof:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        with open(sys.argv[2], "w", encoding="ascii") as pidfile:
            pidfile.write(str(os.getpid()))
    for line in sys.stdin:
        out(*answers(json.loads(line)))
    while ignore_eof:
        time.sleep(1)


if __name__ == "__main__":
    main()
