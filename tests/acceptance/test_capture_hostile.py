"""toolreplay record in front of a hostile server (tests/data/mcp/hostile.py), driven by the MCP
SDK's own client: the recording holds what the client was answered, or an error both saw."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.mcp_agent import (
    INITIALIZE,
    INITIALIZED,
    TIMEOUT,
    TOOLREPLAY,
    PipeAgent,
    dump,
    free_port,
    request,
    server_env,
    stop,
    wait_for_port,
)
from toolreplay.capture import stdio
from toolreplay.capture.recording import UNKEPT_CODE, UNKEPT_MESSAGE, Recording

HOSTILE = [sys.executable, str(Path(__file__).resolve().parent.parent / "data" / "mcp" / "hostile.py")]
SECOND = {"content": [{"type": "text", "text": "second"}], "isError": False}
FIRST = {"content": [{"type": "text", "text": "first"}], "isError": False}


def _record(tmp_path: Path, tool: str) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    """Call ``tool`` once through the proxy with the SDK client: (what it saw, the records, stderr)."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.shared.exceptions import MCPError

    out, err = tmp_path / "run.jsonl", tmp_path / "stderr.txt"
    argv = [*TOOLREPLAY, "record", "-o", str(out), "--", *HOSTILE]
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=server_env())

    async def session() -> dict[str, Any]:
        with err.open("w", encoding="utf-8") as errlog, anyio.fail_after(TIMEOUT):
            async with Client(stdio_client(params, errlog=errlog)) as client:
                await client.list_tools()
                try:
                    return dump(await client.call_tool(tool, {}))
                except MCPError as error:
                    return {"error": error.error.model_dump(exclude_none=True)}

    saw = anyio.run(session)
    records = [json.loads(line) for line in out.read_text(encoding="ascii").splitlines()]
    return saw, records, err.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("tool", "answer"),
    [("string_id", FIRST), ("string_then_int", FIRST), ("batch_then_plain", SECOND)],
    ids=["string-id", "string-then-int", "batch-then-plain"],
)
def test_the_recorded_answer_is_the_one_the_client_took(tmp_path: Path, tool: str, answer: Any) -> None:
    """An answer with id "1" answers request 1 (it was not recorded at all); of "1" then 1 the client
    takes the first (the second was recorded); a batch the client refuses is not recorded, the
    plain answer after it is (the batch was), and the batch is one warning naming the call."""
    saw, records, err = _record(tmp_path, tool)
    assert saw == answer
    assert [(r["tool"], r["response"]) for r in records] == [(tool, answer)]
    assert err.endswith(f"toolreplay: recorded 1 call to {tmp_path / 'run.jsonl'}\n")
    if tool == "batch_then_plain":
        assert re.search(
            r"^toolreplay: warning: server message \d+: a JSON-RPC batch, which an MCP client refuses"
            r" \(it meant to answer tools/call 'batch_then_plain' \(id \d+\): not recorded\);"
            r" passed on, not looked at$",
            err,
            re.MULTILINE,
        )


@pytest.mark.parametrize(
    ("tool", "problem"),
    [
        ("duplicate_key", 'duplicate key "content"'),
        ("nan", "NaN is not valid JSON (NaN and Infinity are refused)"),
        ("huge_number", "number 1e400 is too large: it would become infinity"),
    ],
)
def test_an_answer_the_recording_cannot_keep_becomes_an_error_both_see(
    tmp_path: Path, tool: str, problem: str
) -> None:
    """A result the client would read (duplicate keys, NaN, 1e400) but a transcript cannot hold is
    replaced by an error: the client sees it and the record holds it (it was left out, the client
    had the answer)."""
    saw, records, err = _record(tmp_path, tool)
    error = {"code": UNKEPT_CODE, "message": f"{UNKEPT_MESSAGE} ({problem})"}
    assert saw == {"error": error}
    assert [(r["tool"], r["response"]) for r in records] == [(tool, {"error": error})]
    said = f"tools/call of '{tool}': {problem}; the client is answered with an error instead"
    assert [line for line in err.splitlines() if said in line] == [
        f"toolreplay: warning: server message 4: {said}, and that is recorded"
    ]


def test_error_data_is_recorded(tmp_path: Path) -> None:
    """A JSON-RPC error's data reaches the record as the client saw it (it was dropped)."""
    saw, records, _ = _record(tmp_path, "error_data")
    error = {"code": -32000, "message": "no", "data": {"why": [1]}}
    assert saw == {"error": error}
    assert [r["response"] for r in records] == [{"error": error}]


def test_a_request_id_no_mcp_peer_accepts_is_a_warning(tmp_path: Path) -> None:
    """A tools/call with the id 4.0 (answered as 4 by a lenient server) cannot be paired as an MCP
    client pairs: one warning line names it (it was dropped silently), and nothing is recorded."""
    out = tmp_path / "run.jsonl"
    agent = PipeAgent([*TOOLREPLAY, "record", "-o", str(out), "--", *HOSTILE], env=server_env())
    agent.ask(INITIALIZE)
    agent.send(INITIALIZED)
    answer = agent.ask(request(4.0, "tools/call", {"name": "float_id"}))  # type: ignore[arg-type]
    status, _, err = agent.finish()
    assert status == 0
    assert json.loads(answer)["id"] == 4
    assert err.decode().splitlines() == [
        "toolreplay: warning: client message 3: tools/call with id '4.0' is not a request an MCP peer"
        " accepts (ids are integers or strings); passed on, not recorded",
        f"toolreplay: recorded 0 calls to {out}",
    ]


@pytest.mark.slow
def test_a_server_that_ignores_eof_is_stopped(tmp_path: Path) -> None:
    """A server that outlives the client's EOF (and ignores SIGTERM) is killed within a bound, with
    one warning line (record hung for good)."""
    out, pidfile = tmp_path / "run.jsonl", tmp_path / "server.pid"
    argv = [*TOOLREPLAY, "record", "-o", str(out), "--", *HOSTILE, "ignore-eof", str(pidfile)]
    agent = PipeAgent(argv, env=server_env())
    agent.ask(INITIALIZE)
    began = time.monotonic()
    try:
        _, err = agent.process.communicate(timeout=10)  # closes the proxy's input
    finally:
        with contextlib.suppress(ProcessLookupError):  # the server must not outlive a failed test
            os.kill(int(pidfile.read_text(encoding="ascii")), signal.SIGKILL)
        agent.process.kill()
        agent.process.communicate(timeout=TIMEOUT)
    assert time.monotonic() - began < 10
    assert agent.process.returncode == 128 + 9
    assert err.decode().splitlines() == [
        "toolreplay: warning: the MCP server was still running 5 s after the client closed its input;"
        " stopped with SIGKILL (2 s after SIGTERM)",
        f"toolreplay: recorded 0 calls to {out}",
    ]


def test_the_stop_warning_is_said_before_the_session_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The warning about a server stopped after the client's input ended comes from the thread that
    read that input; the session waits for it, however slowly it is said (it was cut off when
    record's main thread got to the end first: seen as a flaky test under load)."""
    monkeypatch.setattr(stdio, "EOF_GRACE", 0.2)
    monkeypatch.setattr(stdio, "KILL_GRACE", 0.2)
    pidfile = tmp_path / "server.pid"
    said: list[str] = []

    def slow_warn(message: str) -> None:
        time.sleep(0.5)
        said.append(message)

    client_to_proxy, proxy_from_client = os.pipe()
    proxy_to_client, client_from_proxy = os.pipe()

    def client() -> None:  # initializes (the server ignores SIGTERM by then), then leaves
        os.write(proxy_from_client, INITIALIZE)
        with os.fdopen(proxy_to_client, "rb") as answers:
            answers.readline()
            os.close(proxy_from_client)

    leaving = threading.Thread(target=client, daemon=True)
    leaving.start()
    recording = Recording(str(tmp_path / "run.jsonl"), warn=said.append)
    try:
        status = stdio.proxy(
            [*HOSTILE, "ignore-eof", str(pidfile)],
            recording,
            stdin_fd=client_to_proxy,
            stdout_fd=client_from_proxy,
            warn=slow_warn,
        )
    finally:
        leaving.join(TIMEOUT)
        recording.close()
        for fd in (client_to_proxy, client_from_proxy):
            os.close(fd)
    assert status == 128 + signal.SIGKILL
    assert said == [
        "the MCP server was still running 0.2 s after the client closed its input;"
        " stopped with SIGKILL (0.2 s after SIGTERM)"
    ]


def test_a_server_that_dies_mid_call_names_the_calls_left_unanswered(tmp_path: Path) -> None:
    """A server that exits with two calls in flight: the client gets no answer, and one stderr line
    names both calls (nothing was said)."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    out, err = tmp_path / "run.jsonl", tmp_path / "stderr.txt"
    argv = [*TOOLREPLAY, "record", "-o", str(out), "--", *HOSTILE]
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=server_env())
    failures: list[str] = []

    async def call(client: Any, tool: str) -> None:
        try:
            await client.call_tool(tool, {})
        except Exception as error:  # the SDK says the connection closed; which class is its business
            failures.append(tool)
            assert "closed" in str(error).lower(), error

    async def session() -> None:
        with err.open("w", encoding="utf-8") as errlog, anyio.fail_after(TIMEOUT):
            async with Client(stdio_client(params, errlog=errlog)) as client:
                await client.list_tools()
                async with anyio.create_task_group() as group:
                    group.start_soon(call, client, "hang")
                    await anyio.sleep(0.5)  # "hang" is asked first
                    group.start_soon(call, client, "die")

    anyio.run(session)
    assert sorted(failures) == ["die", "hang"]
    lines = err.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and lines[1] == f"toolreplay: recorded 0 calls to {out}"
    assert re.fullmatch(
        r"toolreplay: warning: the MCP server exited \(status 1\) before it answered tools/call"
        r" 'hang' \(id \d+\), 'die' \(id \d+\); not recorded",
        lines[0],
    )


def test_over_streamable_http_the_recording_holds_what_the_client_was_answered(tmp_path: Path) -> None:
    """Through the HTTP proxy (server-sent events) the first of two answers is the one recorded, a
    NaN result reaches client and record as the same error, and error data is kept."""
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    out = tmp_path / "run.jsonl"
    server_port, proxy_port = free_port(), free_port()
    server = subprocess.Popen([*HOSTILE, "http", str(server_port)], env=server_env())
    proxy = None
    try:
        wait_for_port(server_port, server)
        argv = [*TOOLREPLAY, "record", "-o", str(out), "--listen", f"127.0.0.1:{proxy_port}"]
        target = f"http://127.0.0.1:{server_port}/mcp"
        proxy = subprocess.Popen([*argv, "--target", target], stderr=subprocess.PIPE, env=server_env())
        wait_for_port(proxy_port, proxy)

        async def session() -> list[dict[str, Any]]:
            saw: list[dict[str, Any]] = []
            with anyio.fail_after(TIMEOUT):
                async with Client(f"http://127.0.0.1:{proxy_port}/mcp") as client:
                    for tool in ("string_then_int", "nan", "error_data"):
                        try:
                            saw.append(dump(await client.call_tool(tool, {})))
                        except MCPError as error:
                            saw.append({"error": error.error.model_dump(exclude_none=True)})
            return saw

        saw = anyio.run(session)
        _, err = stop(proxy)
    finally:
        if proxy is not None and proxy.poll() is None:
            stop(proxy)
        stop(server)
    records = [json.loads(line) for line in out.read_text(encoding="ascii").splitlines()]
    assert [r["response"] for r in records] == saw
    problem = "NaN is not valid JSON (NaN and Infinity are refused)"
    assert saw == [
        FIRST,
        {"error": {"code": UNKEPT_CODE, "message": f"{UNKEPT_MESSAGE} ({problem})"}},
        {"error": {"code": -32000, "message": "no", "data": {"why": [1]}}},
    ]
    assert f"tools/call of 'nan': {problem}; the client is answered with an error instead" in err.decode()
