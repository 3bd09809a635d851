"""record's faults and start-up: an upstream that breaks off, and the documented client config."""

from __future__ import annotations

import http.client
import json
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import ROOT
from tests.mcp_agent import SERVER, TIMEOUT, TOOLREPLAY, dump, free_port, server_env, stop, wait_for_port

#: what a target that breaks off sends before it closes the connection, per kind of body
BROKEN = {
    "json": b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    b'{"jsonrpc": "2.0", "id": 1, "res',
    "sse": b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    b'18\r\nevent: message\ndata: {"j\r\n',
}


def _breaking_target(head_and_part: bytes) -> tuple[socket.socket, int]:
    """A real HTTP server on 127.0.0.1 that answers one request with a body it breaks off."""
    listener = socket.create_server(("127.0.0.1", 0))

    def answer() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(head_and_part)

    threading.Thread(target=answer, daemon=True).start()
    return listener, listener.getsockname()[1]


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_target_that_breaks_off_breaks_the_clients_response_too(tmp_path: Path, kind: str) -> None:
    """When the target's body stops mid-way, the client's response through the proxy stops too
    (an incomplete body, never a clean 200), after the bytes the target did send; one warning
    line, no traceback."""
    listener, port = _breaking_target(BROKEN[kind])
    out = tmp_path / "run.jsonl"
    proxy_port = free_port()
    target = f"http://127.0.0.1:{port}/mcp"
    argv = [*TOOLREPLAY, "record", "-o", str(out), "--listen", f"127.0.0.1:{proxy_port}", "--target", target]
    proxy = _start(argv, proxy_port)
    received = b""
    try:
        conn = http.client.HTTPConnection("127.0.0.1", proxy_port, timeout=TIMEOUT)
        body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
        conn.request("POST", "/mcp", body=body, headers={"Content-Type": "application/json"})
        answer = conn.getresponse()
        assert answer.status == 200
        with pytest.raises(http.client.IncompleteRead) as cut:
            answer.read()
        received = cut.value.partial
        conn.close()
    finally:
        status, err = stop(proxy)
        listener.close()
    sent = BROKEN[kind].split(b"\r\n\r\n", 1)[1]
    assert received == (sent if kind == "json" else b'event: message\ndata: {"j')
    lines = err.decode().splitlines()
    assert status == 0
    assert lines[0].startswith(
        f"toolreplay: warning: the target http://127.0.0.1:{port} broke off its answer: "
    )
    assert lines[1:] == [f"toolreplay: recorded 0 calls to {out}"]


def _start(argv: list[str], port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=server_env())
    wait_for_port(port, process)
    return process


def _documented_configs() -> list[tuple[str, dict[str, Any]]]:
    """Each client config (``"command": "toolreplay"``) in the README and docs/capture.md."""
    found = []
    for doc in ("README.md", "docs/capture.md"):
        text = (ROOT / doc).read_text(encoding="utf-8")
        for block in re.findall(r"```json\n(.*?)```", text, flags=re.S):
            if '"command": "toolreplay"' in block:
                for name, server in json.loads(block)["mcpServers"].items():
                    found.append((f"{doc}:{name}", server))
    return found


def _session(command: str, args: list[str]) -> dict[str, Any]:
    """A real SDK client session over stdio: list the tools, call echo once."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def run() -> dict[str, Any]:
        params = StdioServerParameters(command=command, args=args, env=server_env())
        with anyio.fail_after(TIMEOUT):
            async with Client(stdio_client(params)) as client:
                await client.list_tools()
                return dump(await client.call_tool("echo", {"text": "hi"}))

    return anyio.run(run)


def _recorded(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.slow
@pytest.mark.parametrize(("where", "config"), _documented_configs(), ids=lambda v: str(v).split(":")[0])
def test_the_documented_client_config_records_as_written(
    tmp_path: Path, where: str, config: dict[str, Any]
) -> None:
    """The client configs the docs give, run with exactly their args by the SDK's client (paths
    pointed at this machine), record the session; none puts "--" in args."""
    assert config["command"] == "toolreplay"
    assert "--" not in config["args"], where
    here = {"python": sys.executable, "/home/me/servers/docs_server.py": str(SERVER)}
    args = [here.get(a, a.replace("/home/me/runs/", f"{tmp_path}/")) for a in config["args"]]
    answer = _session(str(Path(sys.executable).parent / "toolreplay"), args)
    assert answer["content"][0]["text"] == "hi"
    out = Path(args[args.index("-o") + 1])
    assert [(r["tool"], r["args"]) for r in _recorded(out)] == [("echo", {"text": "hi"})]


def test_the_servers_own_options_follow_records_without_a_double_dash(tmp_path: Path) -> None:
    """After record's options, the server's command line is the server's, its options included
    (here python's -u and an -o that record also has), with no "--" before it."""
    out = tmp_path / "run.jsonl"
    args = ["record", "-o", str(out), sys.executable, "-u", str(SERVER), "stdio", "-o", "its-own"]
    answer = _session(str(Path(sys.executable).parent / "toolreplay"), args)
    assert answer["content"][0]["text"] == "hi"
    assert [r["tool"] for r in _recorded(out)] == ["echo"]
