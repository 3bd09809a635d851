"""record --listen and serve --listen over real sockets: who they let in (Host, Origin), how large a
body they take and how long they wait for a request (toolreplay/capture/listen.py)."""

from __future__ import annotations

import http.client
import http.server
import json
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from tests.mcp_agent import (
    SERVER_CMD,
    TIMEOUT,
    TOOLREPLAY,
    after_ready,
    dump,
    free_port,
    server_env,
    stop,
    wait_for_port,
)
from toolreplay.capture.listen import MAX_BODY_BYTES, SECONDS_VARIABLE
from toolreplay.cli import cli

#: the deadline the servers under test get for a request, in seconds
DEADLINE = 1.0
ALLOWED = "http://app.example:8080"
INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
).encode()
HOST_REFUSED = (
    "Host {} is not a name this server answers to (loopback names and addresses, the address it listens"
    " on, and the hosts of --allow-origin)"
)
ORIGIN_REFUSED = "Origin {} is not allowed (loopback origins are; --allow-origin adds others)"
TOO_LARGE = f"the request body is over the {MAX_BODY_BYTES} bytes a request may have"


def _start(argv: list[str], port: int) -> subprocess.Popen[bytes]:
    env = server_env(**{SECONDS_VARIABLE: str(DEADLINE)})
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    wait_for_port(port, process)
    return process


class _Target(http.server.BaseHTTPRequestHandler):
    """A target that answers every POST with a JSON body and keeps the headers each one came with."""

    protocol_version = "HTTP/1.1"
    seen: list[dict[str, str]]

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.seen.append({k.lower(): v for k, v in self.headers.items()})
        body = b'{"jsonrpc": "2.0", "id": 1, "result": {}}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        pass


class _Listening:
    """A ``record --listen`` or ``serve --listen`` under test, with ``--allow-origin`` ALLOWED."""

    def __init__(self, argv: list[str]) -> None:
        self.serves = "serve" in argv
        self.port = free_port()
        self.process = _start(
            [*argv, "--listen", f"127.0.0.1:{self.port}", "--allow-origin", ALLOWED], self.port
        )

    def stop(self) -> list[str]:
        """Stop it: its stderr lines (after serve's ready line)."""
        status, err = stop(self.process)
        assert status == 0
        return (after_ready(err) if self.serves else err).decode().splitlines()


@pytest.fixture(params=["record", "serve"])
def listening(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[_Listening, list[dict[str, str]]]]:
    """``record --listen`` in front of a target that keeps the headers of what reaches it, or
    ``serve --listen`` of a recording: (the command, what the target saw)."""
    seen: list[dict[str, str]] = []
    target = None
    if request.param == "record":
        handler = type("Target", (_Target,), {"seen": seen})
        target = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        target.daemon_threads = True
        threading.Thread(target=target.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{target.server_address[1]}/mcp"
        argv = [*TOOLREPLAY, "record", "-o", str(tmp_path / "run.jsonl"), "--target", url]
    else:
        recording = tmp_path / "run.jsonl"
        recording.write_text(
            '{"args":{},"index":0,"response":{"content":[]},"tool":"echo"}\n', encoding="ascii"
        )
        argv = [*TOOLREPLAY, "serve", str(recording)]
    command = _Listening(argv)
    try:
        yield command, seen
    finally:
        if command.process.poll() is None:
            stop(command.process)
        if target is not None:
            target.shutdown()
            target.server_close()


def _post(port: int, headers: dict[str, str], body: bytes = INITIALIZE) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        conn.putrequest("POST", "/mcp", skip_host="Host" in headers)
        sent = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        }
        sent.setdefault("Content-Length", str(len(body)))
        for name, value in sent.items():
            conn.putheader(name, value)
        conn.endheaders(body if sent["Content-Length"] == str(len(body)) else None)
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


def _error(body: bytes) -> str:
    message = json.loads(body)
    assert (message["jsonrpc"], message["id"], message["error"]["code"]) == ("2.0", None, -32600)
    text: str = message["error"]["message"]
    return text


def test_record_and_serve_let_in_loopback_and_allowed_origins_only(
    listening: tuple[_Listening, list[dict[str, str]]],
) -> None:
    """A Host that is no loopback name or allowed origin's host is 421 and an Origin that is neither
    loopback nor allowed (null included) 403, each with a JSON-RPC error and one warning line, and
    none reaches the target; loopback and allowed ones pass (record forwarded any Host, as the
    target's own, and both let any Origin in)."""
    command, seen = listening
    port = command.port
    refused = [
        (_post(port, {"Host": "evil.example"}), 421, HOST_REFUSED.format("'evil.example'")),
        (_post(port, {"Origin": "http://evil.example"}), 403, ORIGIN_REFUSED.format("'http://evil.example'")),
        (_post(port, {"Origin": "null"}), 403, ORIGIN_REFUSED.format("'null'")),
    ]
    passed = [
        _post(port, {"Origin": ALLOWED}),
        _post(port, {"Host": f"app.example:{port}"}),
        _post(port, {"Origin": "http://localhost:5173", "Host": f"localhost:{port}"}),
    ]
    err = command.stop()
    assert [(status, _error(body)) for (status, body), _, _ in refused] == [(s, m) for _, s, m in refused]
    assert [status for status, _ in passed] == [200, 200, 200]
    assert err[:3] == [f"toolreplay: warning: refused a request: {message}" for _, _, message in refused]
    if seen:  # record: exactly the requests let in reached the target, with the Origin the client sent
        assert [headers.get("origin") for headers in seen] == [ALLOWED, None, "http://localhost:5173"]


def test_a_body_over_the_limit_is_refused_before_it_is_read(
    listening: tuple[_Listening, list[dict[str, str]]],
) -> None:
    """A body declared over the limit gets 413 without a byte of it sent (so it is never read into
    memory), and one sent in chunks gets 413 once it passes the limit; neither reaches the target."""
    command, seen = listening
    port = command.port
    started = time.monotonic()
    status, body = _post(port, {"Content-Length": str(400 * 1024 * 1024)})
    assert (status, _error(body)) == (413, TOO_LARGE)
    assert time.monotonic() - started < DEADLINE  # answered at once, not when the deadline ended it
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"x" * 65536
        for _ in range(MAX_BODY_BYTES // len(chunk) + 1):
            sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 413 ")
    assert seen == []


@pytest.mark.slow
@pytest.mark.parametrize(
    "sent",
    [
        b"",
        b"POST /mcp HTTP/1.1\r\nHost: local",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10\r\n\r\nab",
    ],
    ids=["nothing", "half-a-head", "half-a-body"],
)
def test_a_request_not_sent_whole_in_time_is_closed(
    listening: tuple[_Listening, list[dict[str, str]]], sent: bytes
) -> None:
    """A connection that sends nothing, half a head or half a body is closed once the deadline is
    over (it stayed open as long as the client liked)."""
    command, seen = listening
    with socket.create_connection(("127.0.0.1", command.port), timeout=TIMEOUT) as sock:
        sock.sendall(sent)
        started = time.monotonic()
        assert sock.recv(4096) == b""
        took = time.monotonic() - started
    assert DEADLINE * 0.8 < took < DEADLINE + 5
    assert seen == []


async def _session(url: str, pause: float = 0.0) -> list[dict[str, Any]]:
    """The SDK's client through ``url``: a call slower than the deadline, a pause, two more calls."""
    from mcp import Client

    with anyio.fail_after(TIMEOUT):
        async with Client(url) as client:
            answers = [dump(await client.call_tool("slow", {"seconds": DEADLINE * 1.5, "tag": "late"}))]
            await anyio.sleep(pause)
            answers.append(dump(await client.call_tool("echo", {"text": "hi"})))
            answers.append(dump(await client.call_tool("counter", {})))
    return answers


@pytest.mark.slow
def test_the_sdk_client_is_answered_through_record_and_by_serve(tmp_path: Path) -> None:
    """The MCP SDK's client (no Origin, a loopback Host) works through record and against serve as
    before: an answer that takes longer than the deadline is not cut off, and a session that pauses
    longer than it goes on (its idle connection closed, a new one opened)."""
    out = tmp_path / "run.jsonl"
    server_port, proxy_port, serve_port = free_port(), free_port(), free_port()
    server = _start([*SERVER_CMD, "http", str(server_port)], server_port)
    try:
        argv = [*TOOLREPLAY, "record", "-o", str(out), "--listen", f"127.0.0.1:{proxy_port}"]
        proxy = _start([*argv, "--target", f"http://127.0.0.1:{server_port}/mcp"], proxy_port)
        live = anyio.run(_session, f"http://127.0.0.1:{proxy_port}/mcp", DEADLINE * 1.5)
        status, err = stop(proxy)
    finally:
        stop(server)
    assert (status, err.decode()) == (0, f"toolreplay: recorded 3 calls to {out}\n")
    assert [answer["content"][0]["text"] for answer in live] == ["late", "hi", "1"]
    snapshot = _start([*TOOLREPLAY, "serve", str(out), "--listen", f"127.0.0.1:{serve_port}"], serve_port)
    try:
        served = anyio.run(_session, f"http://127.0.0.1:{serve_port}/mcp", DEADLINE * 1.5)
    finally:
        status, err = stop(snapshot)
        err = after_ready(err)
    assert served == live
    assert (status, err) == (0, b"")


@pytest.mark.slow
def test_serve_on_every_interface_answers_loopback_names_and_allowed_hosts_only(tmp_path: Path) -> None:
    """Listening on 0.0.0.0, a Host of 0.0.0.0 or of another name is 421 (any Origin was let in);
    loopback names are answered, and so is the host of an --allow-origin."""
    recording = tmp_path / "run.jsonl"
    recording.write_text('{"args":{},"index":0,"response":{"content":[]},"tool":"echo"}\n', encoding="ascii")
    port = free_port()
    argv = [*TOOLREPLAY, "serve", str(recording), "--listen", f"0.0.0.0:{port}"]
    process = _start([*argv, "--allow-origin", f"http://mcp.internal:{port}"], port)
    try:
        statuses = [
            _post(port, {"Host": host})[0]
            for host in (
                f"0.0.0.0:{port}",
                f"evil.example:{port}",
                f"127.0.0.1:{port}",
                f"mcp.internal:{port}",
            )
        ]
    finally:
        status, _ = stop(process)
    assert (status, statuses) == (0, [421, 421, 200, 200])


@pytest.mark.parametrize("command", ["record", "serve"])
def test_allow_origin_is_checked_before_anything_starts(
    runner: CliRunner, tmp_path: Path, command: str
) -> None:
    """--allow-origin needs --listen, and takes an origin only: both are exit 2 with one line."""
    recording = tmp_path / "run.jsonl"
    recording.write_text('{"args":{},"index":0,"response":{"content":[]},"tool":"echo"}\n', encoding="ascii")
    if command == "record":
        stdio = ["record", "-o", str(tmp_path / "out.jsonl"), "--allow-origin", ALLOWED, "--", "true"]
        http = ["record", "-o", str(tmp_path / "out.jsonl"), "--target", "http://127.0.0.1:9/mcp"]
    else:
        stdio = ["serve", str(recording), "--allow-origin", ALLOWED]
        http = ["serve", str(recording)]
    without = runner.invoke(cli, stdio, catch_exceptions=False)
    bad = runner.invoke(
        cli, [*http, "--listen", "127.0.0.1:9", "--allow-origin", "null"], catch_exceptions=False
    )
    assert (without.exit_code, without.output.splitlines()[-1]) == (
        2,
        "Error: --allow-origin goes with --listen",
    )
    assert (bad.exit_code, bad.output) == (
        2,
        "toolreplay: error: --allow-origin 'null' is not an origin:"
        " give scheme://host[:port] (http or https), as a browser sends it\n",
    )
    assert not (tmp_path / "out.jsonl").exists()
