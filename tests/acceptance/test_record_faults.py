"""record's faults and start-up: an upstream that breaks off, and the documented client config."""

from __future__ import annotations

import http.client
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from tests.mcp_agent import TIMEOUT, TOOLREPLAY, free_port, server_env, stop, wait_for_port

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


@pytest.mark.slow
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
    assert lines[0].startswith(f"toolreplay: warning: the target {target} broke off its answer: ")
    assert lines[1:] == [f"toolreplay: recorded 0 calls to {out}"]


def _start(argv: list[str], port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=server_env())
    wait_for_port(port, process)
    return process
