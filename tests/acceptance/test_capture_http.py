"""record and serve over Streamable HTTP on 127.0.0.1, with a real SDK server and client."""

from __future__ import annotations

import contextlib
import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from tests.mcp_agent import SERVER_CMD, TIMEOUT, TOOLREPLAY, dump, free_port, server_env, stop, wait_for_port
from toolreplay.cli import cli

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("echo", {"text": "hi"}),
    ("slow", {"seconds": 0.1, "tag": "t"}),
    ("greet", {"name": "Zoë"}),
    ("picture", {}),
    ("counter", {}),
    ("counter", {}),
]


async def _ask(url: str) -> tuple[list[dict[str, Any]], int]:
    from mcp import Client

    progress: list[float] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    with anyio.fail_after(TIMEOUT):
        async with Client(url) as client:
            await client.list_tools()
            answers = [dump(await client.call_tool(t, a, progress_callback=on_progress)) for t, a in CALLS]
    return answers, len(progress)


def _start(argv: list[str], port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=server_env())
    wait_for_port(port, process)
    return process


@pytest.mark.slow
def test_record_and_serve_over_streamable_http(runner: CliRunner, tmp_path: Path) -> None:
    """Through the HTTP proxy the client gets the server's answers (progress events included) and
    each call is sealed; probe --target finds the one tool whose answers moved on; served back
    over HTTP, the recording answers the same."""
    out = tmp_path / "run.sealed.jsonl"
    server_port, proxy_port, serve_port = free_port(), free_port(), free_port()
    server = _start([*SERVER_CMD, "http", str(server_port)], server_port)
    try:
        proxy = _start(
            [
                *TOOLREPLAY,
                "record",
                "-o",
                str(out),
                "--seal",
                "--listen",
                f"127.0.0.1:{proxy_port}",
                "--target",
                f"http://127.0.0.1:{server_port}/mcp",
            ],
            proxy_port,
        )
        live, progress = anyio.run(_ask, f"http://127.0.0.1:{proxy_port}/mcp")
        status, err = stop(proxy)
        # the live server's counter has gone on counting: probe sees that, and nothing else
        probe = runner.invoke(cli, ["probe", str(out), "--target", f"http://127.0.0.1:{server_port}/mcp"])
    finally:
        stop(server)
    assert (probe.exit_code, probe.output) == (
        1,
        "calls: 6\n"
        "asked: 5\n"
        "tool 'counter': silent-drift\n"
        "tool 'echo': stable\n"
        "tool 'greet': stable\n"
        "tool 'picture': stable\n"
        "tool 'slow': stable\n"
        "findings: 1\n"
        "index 4: silent-drift: tool 'counter' answered the call recorded at index 4 differently live,"
        ' first at \'/content/0/text\': recorded "1", live "3"\n',
    )
    assert (status, err.decode()) == (0, f"toolreplay: recorded 6 calls to {out}\n")
    assert progress == 1
    records = [json.loads(line) for line in out.read_text(encoding="ascii").splitlines()]
    assert [r["response"] for r in records] == live
    assert [r["structuredContent"] for r in live[4:]] == [{"result": 1}, {"result": 2}]
    verified = runner.invoke(cli, ["verify", str(out)], catch_exceptions=False)
    assert verified.output.startswith("chain: intact\nlinks: 6\n")

    snapshot = _start([*TOOLREPLAY, "serve", str(out), "--listen", f"127.0.0.1:{serve_port}"], serve_port)
    try:
        served, _ = anyio.run(_ask, f"http://127.0.0.1:{serve_port}/mcp")
    finally:
        status, err = stop(snapshot)
    assert served == live
    assert (status, err) == (0, b"")


@pytest.mark.slow
def test_record_over_http_with_the_target_down_answers_502_and_warns_in_one_line(tmp_path: Path) -> None:
    """A target that refuses the connection gets the client a 502 and the proxy one warning line
    per request on stderr, no traceback; the proxy keeps serving and exits 0 when stopped."""
    import urllib.error
    import urllib.request

    out = tmp_path / "run.jsonl"
    proxy_port, dead_port = free_port(), free_port()
    target = f"http://127.0.0.1:{dead_port}/mcp"
    argv = [*TOOLREPLAY, "record", "-o", str(out), "--listen", f"127.0.0.1:{proxy_port}", "--target", target]
    proxy = _start(argv, proxy_port)
    try:
        codes = []
        for _ in range(2):
            request = urllib.request.Request(
                f"http://127.0.0.1:{proxy_port}/mcp",
                data=b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}',
                headers={"Content-Type": "application/json"},
            )
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=TIMEOUT)
            codes.append(refused.value.code)
            refused.value.close()
    finally:
        status, err = stop(proxy)
    assert codes == [502, 502]
    assert status == 0
    warning = (
        f"toolreplay: warning: cannot reach the target {target}: ConnectError: All connection attempts failed"
    )
    assert err.decode().splitlines() == [warning, warning, f"toolreplay: recorded 0 calls to {out}"]


@pytest.mark.slow
def test_record_over_http_with_a_target_that_breaks_off_warns_in_one_line(tmp_path: Path) -> None:
    """A target that promises a longer body than it sends gets one warning line on stderr, no
    traceback; the client's answer ends where the target's did."""
    import socket
    import threading
    import urllib.request

    listener = socket.create_server(("127.0.0.1", 0))
    short_port = listener.getsockname()[1]

    def answer_short() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")

    threading.Thread(target=answer_short, daemon=True).start()
    out = tmp_path / "run.jsonl"
    proxy_port = free_port()
    target = f"http://127.0.0.1:{short_port}/mcp"
    argv = [*TOOLREPLAY, "record", "-o", str(out), "--listen", f"127.0.0.1:{proxy_port}", "--target", target]
    proxy = _start(argv, proxy_port)
    try:
        request = urllib.request.Request(
            f"http://127.0.0.1:{proxy_port}/mcp",
            data=b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}',
            headers={"Content-Type": "application/json"},
        )
        with contextlib.suppress(Exception), urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
            answer.read()
    finally:
        status, err = stop(proxy)
        listener.close()
    lines = err.decode().splitlines()
    assert status == 0
    assert lines[0].startswith(
        f"toolreplay: warning: the target {target} broke off its answer: RemoteProtocolError: "
    )
    assert lines[1:] == [f"toolreplay: recorded 0 calls to {out}"]
