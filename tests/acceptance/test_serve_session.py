"""toolreplay serve is the recorded server again: its initialize, tools/list, resources, prompts,
notifications and errors as recorded, each session from the recording's start (real servers and client)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

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
from tests.realservers import node_server

DOC = "demo://resource/static/document/architecture.md"


async def _everything(argv: list[str], *, miss: bool = False) -> dict[str, Any]:
    """One agent session against server-everything (or its snapshot): what the client saw."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.shared.exceptions import MCPError

    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    seen: dict[str, Any] = {}
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=server_env())
    with anyio.fail_after(TIMEOUT):
        async with Client(stdio_client(params)) as client:
            seen["server"] = [dump(client.server_info), dump(client.server_capabilities), client.instructions]
            seen["tools"] = dump(await client.list_tools())
            seen["resources"] = dump(await client.list_resources())
            seen["templates"] = dump(await client.list_resource_templates())
            seen["read"] = dump(await client.read_resource(DOC))
            seen["prompts"] = dump(await client.list_prompts())
            seen["prompt"] = dump(await client.get_prompt("args-prompt", {"city": "Lyon"}))
            seen["long"] = dump(
                await client.call_tool(
                    "trigger-long-running-operation",
                    {"duration": 0.3, "steps": 3},
                    progress_callback=on_progress,
                )
            )
            seen["progress"] = list(progress)
            seen["echo"] = dump(await client.call_tool("echo", {"message": "hi"}))
            seen["phantom"] = dump(await client.call_tool("no-such-tool", {}))
            try:
                await client.read_resource("demo://resource/static/document/nope.md")
            except MCPError as err:
                seen["unread"] = [err.error.code, err.error.message, err.error.data]
            if miss:
                try:
                    await client.read_resource("demo://resource/static/document/features.md")
                except MCPError as err:
                    seen["miss"] = [err.error.code, err.error.message]
    return seen


@pytest.mark.slow
def test_serve_answers_everything_a_real_server_answered(tmp_path: Path) -> None:
    """Against server-everything (npm): initialize, every tools/list field, resources, templates,
    prompts, a call's progress notifications and tool answers are served exactly as recorded; a
    tool that was only called is not listed, and an unrecorded resource read is a loud miss."""
    out = tmp_path / "run.sealed.jsonl"
    live = anyio.run(
        _everything, [*TOOLREPLAY, "record", "-o", str(out), "--seal", "--", *node_server("everything")]
    )
    assert len(live["progress"]) == 3
    assert "no-such-tool" not in [tool["name"] for tool in live["tools"]["tools"]]
    kept = [json.loads(line) for line in Path(f"{out}.mcp").read_text(encoding="ascii").splitlines()]
    assert [record["tool"] for record in kept][-2:] == ["tools/call", "resources/read"]
    assert kept[-2]["args"] == {"index": 0} and len(kept[-2]["response"]["notifications"]) == 3

    assert live["unread"][0] == -32602  # the server's own error, recorded and answered again

    served = anyio.run(lambda: _everything([*TOOLREPLAY, "serve", str(out)], miss=True))
    assert served.pop("miss") == [
        -32602,
        "snapshot miss: no recorded resources/read request has the params"
        ' {"uri":"demo://resource/static/document/features.md"}; the nearest recorded one differs at'
        " '/uri': recorded \"demo://resource/static/document/architecture.md\","
        ' given "demo://resource/static/document/features.md"',
    ]
    assert served == live


async def _counts(url: str, times: int) -> list[Any]:
    from mcp import Client

    with anyio.fail_after(TIMEOUT):
        async with Client(url, mode="legacy") as client:
            return [(await client.call_tool("counter", {})).structured_content for _ in range(times)]


def _start(argv: list[str], port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=server_env())
    wait_for_port(port, process)
    return process


@pytest.mark.slow
def test_each_http_session_starts_at_the_recordings_start(tmp_path: Path) -> None:
    """Over Streamable HTTP every session (its own Mcp-Session-Id) gets the k-th recorded answer
    for its k-th identical call, whatever other sessions asked before."""
    out = tmp_path / "run.jsonl"
    port = free_port()
    server_port, proxy_port = free_port(), free_port()
    server = _start([*SERVER_CMD, "http", str(server_port)], server_port)
    try:
        proxy = _start(
            [
                *TOOLREPLAY,
                "record",
                "-o",
                str(out),
                "--listen",
                f"127.0.0.1:{proxy_port}",
                "--target",
                f"http://127.0.0.1:{server_port}/mcp",
            ],
            proxy_port,
        )
        live = anyio.run(_counts, f"http://127.0.0.1:{proxy_port}/mcp", 3)
        stop(proxy)
    finally:
        stop(server)
    assert live == [{"result": 1}, {"result": 2}, {"result": 3}]

    snapshot = _start([*TOOLREPLAY, "serve", str(out), "--listen", f"127.0.0.1:{port}"], port)
    try:
        first = anyio.run(_counts, f"http://127.0.0.1:{port}/mcp", 2)
        second = anyio.run(_counts, f"http://127.0.0.1:{port}/mcp", 4)
    finally:
        status, err = stop(snapshot)
    assert first == [{"result": 1}, {"result": 2}]
    assert second == [{"result": 1}, {"result": 2}, {"result": 3}, {"result": 3}]
    assert (status, after_ready(err)) == (0, b"")


async def _listed_and_called(url: str, mode: str) -> list[Any]:
    from mcp import Client

    with anyio.fail_after(TIMEOUT):
        async with Client(url, mode=mode) as client:
            tools = [tool.name for tool in (await client.list_tools()).tools]
            return [tools, (await client.call_tool("counter", {})).structured_content]


@pytest.mark.slow
def test_a_handshake_recording_answers_every_protocol_over_http(tmp_path: Path) -> None:
    """A session recorded with the initialize handshake (no server/discover) is served over
    Streamable HTTP to the SDK client in its default mode (the 2026 revision, whose tools/list
    needs what the recorded answer lacks) and in legacy mode: both list and call as recorded."""
    out = tmp_path / "run.jsonl"
    server_port, proxy_port, port = free_port(), free_port(), free_port()
    server = _start([*SERVER_CMD, "http", str(server_port)], server_port)
    try:
        listen, target = f"127.0.0.1:{proxy_port}", f"http://127.0.0.1:{server_port}/mcp"
        argv = [*TOOLREPLAY, "record", "-o", str(out), "--listen", listen, "--target", target]
        proxy = _start(argv, proxy_port)
        live = anyio.run(_listed_and_called, f"http://127.0.0.1:{proxy_port}/mcp", "legacy")
        stop(proxy)
    finally:
        stop(server)
    assert live[1] == {"result": 1}

    snapshot = _start([*TOOLREPLAY, "serve", str(out), "--listen", f"127.0.0.1:{port}"], port)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        served = [anyio.run(_listed_and_called, url, mode) for mode in ("auto", "legacy")]
    finally:
        status, err = stop(snapshot)
    assert served == [live, live]
    assert (status, after_ready(err)) == (0, b"")
