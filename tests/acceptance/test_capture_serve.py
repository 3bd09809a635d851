"""toolreplay serve: a recording answers a real SDK client as the server did, and runs nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from tests.mcp_agent import SERVER_CMD, TIMEOUT, TOOLREPLAY, after_ready, dump, server_env
from toolreplay.cli import cli
from toolreplay.contracts.lock import ToolLock, load_lock, make_contract, save_lock

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("echo", {"text": "hi", "times": 2}),
    ("counter", {}),
    ("picture", {}),
    ("counter", {}),
    ("greet", {"name": "Zoë"}),
    ("fail", {"reason": "no"}),
    ("counter", {}),
]


async def _ask(argv: list[str], calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], list[Any]]:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=argv[0], args=argv[1:], env=server_env())
    with anyio.fail_after(TIMEOUT):
        async with Client(stdio_client(params)) as client:
            names = sorted(tool.name for tool in (await client.list_tools()).tools)
            return names, [dump(await client.call_tool(tool, args)) for tool, args in calls]


@pytest.mark.slow
def test_record_then_serve_answers_as_the_server_did(tmp_path: Path) -> None:
    """A client cannot tell the snapshot from the server for recorded calls; the k-th repeat
    gets the k-th answer (the last after that), and an unrecorded call is a loud tool error."""
    out, lock = tmp_path / "run.sealed.jsonl", tmp_path / "tools.lock.json"
    record = [*TOOLREPLAY, "record", "-o", str(out), "--seal", "--lock", str(lock), "--", *SERVER_CMD]
    _, live = anyio.run(_ask, record, CALLS)
    assert [
        answer["structuredContent"] for answer in live if answer["content"][0].get("text", "").isdigit()
    ] == [
        {"result": 1},
        {"result": 2},
        {"result": 3},
    ]

    extra = [("counter", {}), ("echo", {"text": "ho", "times": 2}), ("nope", {})]
    names, served = anyio.run(_ask, [*TOOLREPLAY, "serve", str(out), "--lock", str(lock)], CALLS + extra)
    assert served[: len(CALLS)] == live
    assert served[len(CALLS)]["structuredContent"] == {"result": 3}  # the last recorded answer again
    assert served[-2] == {
        "content": [
            {
                "type": "text",
                "text": "snapshot miss: no recorded call matches tool 'echo' with args"
                ' {"text":"ho","times":2}; nearest recorded call is index 0, which differs at'
                ' argument \'/text\': recorded "hi", given "ho"',
            }
        ],
        "isError": True,
        "resultType": "complete",
        "_meta": served[-2]["_meta"],
    }
    assert served[-1]["isError"] is True
    assert served[-1]["content"][0]["text"].startswith(
        "snapshot miss: no recorded call matches tool 'nope' with args {};"
        " the recording never calls that tool"
    )
    # the server's own tools/list (from the session file), not a list of the recorded tools
    assert "nope" not in names and {"counter", "echo", "fail", "greet", "picture", "slow"} <= set(names)


def _recording(tmp_path: Path) -> tuple[Path, Path]:
    """A sealed two-call recording of ``echo`` and ``write_note`` and the lock it was made with."""
    echo = make_contract(
        name="echo",
        signature={"name": "echo", "params": [["text", "string", "required"]]},
        schema={"type": "object", "properties": {"text": {"type": "string"}}},
        version="1.0.0",
    )
    note = make_contract(
        name="write_note",
        signature={"name": "write_note", "params": []},
        schema={},
        version="1.0.0",
        mutates=True,
    )
    lock = tmp_path / "tools.lock.json"
    save_lock(ToolLock.of([echo, note]), lock)
    records = [
        {
            "index": 0,
            "tool": "echo",
            "args": {"text": "a"},
            "response": {"content": []},
            "fingerprint": echo.fingerprint,
        },
        {
            "index": 1,
            "tool": "write_note",
            "args": {},
            "response": {"content": []},
            "fingerprint": note.fingerprint,
        },
    ]
    plain = tmp_path / "run.jsonl"
    plain.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="ascii")
    sealed = tmp_path / "run.sealed.jsonl"
    CliRunner().invoke(cli, ["seal", str(plain), "-o", str(sealed)], catch_exceptions=False)
    return sealed, lock


def test_serve_refuses_a_lock_the_recording_drifted_from(runner: CliRunner, tmp_path: Path) -> None:
    """With a lock whose fingerprint for a recorded tool differs, serve refuses to start (exit 1)."""
    sealed, lock_path = _recording(tmp_path)
    lock = load_lock(lock_path)
    changed = make_contract(
        name="echo",
        signature=lock.tools["echo"].signature,
        schema={"type": "object", "properties": {"text": {"type": "string", "maxLength": 5}}},
        version="1.0.0",
    )
    save_lock(ToolLock.of([changed, lock.tools["write_note"]]), lock_path)
    result = runner.invoke(cli, ["serve", str(sealed), "--lock", str(lock_path)], catch_exceptions=False)
    assert result.exit_code == 1
    assert result.output == (
        f"toolreplay: error: tool 'echo' drifted: recorded with fingerprint {lock.tools['echo'].fingerprint}"
        f" (recorded call at index 0), is now {changed.fingerprint}; run `toolreplay fingerprint-diff`"
        " on the two locks to see what changed\n"
    )


def test_serve_refuses_what_is_not_a_transcript(runner: CliRunner, tmp_path: Path) -> None:
    """A file that is not a transcript is one line naming file, line and problem (exit 2)."""
    bad = tmp_path / "notes.jsonl"
    bad.write_text('{"index": 0, "tool": "t"}\n', encoding="ascii")
    result = runner.invoke(cli, ["serve", str(bad)], catch_exceptions=False)
    assert result.exit_code == 2
    assert result.output == f'toolreplay: error: {bad}:1: missing field "args"\n'


def test_serve_refuses_a_broken_chain(runner: CliRunner, tmp_path: Path) -> None:
    """A sealed recording edited after sealing is not served (exit 1, the broken link named)."""
    sealed, _ = _recording(tmp_path)
    sealed.write_bytes(sealed.read_bytes().replace(b'"text":"a"', b'"text":"b"'))
    result = runner.invoke(cli, ["serve", str(sealed)], catch_exceptions=False)
    assert result.exit_code == 1
    assert result.output == (
        f"toolreplay: error: {sealed}: the chain is broken at index 0 (digest does not match the"
        " link's content); run toolreplay verify\n"
    )


@pytest.mark.parametrize("command", [["serve"], ["probe", "--", "true"]], ids=["serve", "probe"])
def test_a_folder_where_the_session_file_goes_is_refused(tmp_path: Path, command: list[str]) -> None:
    """A folder named like the session file (``OUT.mcp``) is an error naming it, not "no session file"."""
    from tests.conftest import SAMPLES, invoke

    run = tmp_path / "run.jsonl"
    run.write_bytes((Path(SAMPLES) / "session-clean.jsonl").read_bytes())
    (tmp_path / "run.jsonl.mcp").mkdir()
    code, out, err = invoke(CliRunner(), command[0], str(run), *command[1:])
    assert (code, out, err) == (2, "", f"toolreplay: error: {run}.mcp: is a directory, not a file\n")


#: a recording as long as the audit's (issue 37): each session held its own index of it, ~1 MB
LONG = 3000


def _long_recording(path: Path) -> Path:
    from toolreplay.transcript import make_record, record_line

    answer = {"content": [{"type": "text", "text": "answer " * 30}]}
    lines = (
        record_line(
            make_record(index=i, tool="lookup", args={"q": f"query {i} " + "x" * 100}, response=answer)
        )
        for i in range(LONG)
    )
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


async def _one_session(url: str, *, end: bool, during: Any = None) -> None:
    """initialize, one tools/call, then (``end``) the session's DELETE; ``during()`` runs while it is open."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    with anyio.fail_after(TIMEOUT):
        async with Client(streamable_http_client(url, terminate_on_close=end), mode="legacy") as client:
            result = await client.call_tool("lookup", {"q": "query 5 " + "x" * 100})
            assert not result.is_error, dump(result)
            if during is not None:
                during()


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads a process's memory from /proc")
def test_sessions_that_end_leave_serve_holding_no_more(tmp_path: Path) -> None:
    """serve --listen, 120 sessions of initialize, tools/call and DELETE against a 3,000-call recording:
    its memory after the last is within 20 MB of after the 20th (each session held ~1 MB for good)."""
    import subprocess

    from tests.mcp_agent import after_ready, free_port, stop, wait_for_port

    run = _long_recording(tmp_path / "run.jsonl")
    port = free_port()
    argv = [*TOOLREPLAY, "serve", str(run), "--listen", f"127.0.0.1:{port}"]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=server_env())
    try:
        wait_for_port(port, process)
        url = f"http://127.0.0.1:{port}/mcp"
        for _ in range(20):
            anyio.run(lambda: _one_session(url, end=True))
        warm = _rss_mb(process.pid)
        for _ in range(100):
            anyio.run(lambda: _one_session(url, end=True))
        grown = _rss_mb(process.pid) - warm
    finally:
        status, err = stop(process)
    assert (status, after_ready(err)) == (0, b"")
    assert grown < 20, f"serve grew by {grown:.0f} MB over 100 ended sessions"


class _Serving:
    """A snapshot server's Streamable HTTP app, served by uvicorn in a thread of the test."""

    def __init__(self, app: Any) -> None:
        import threading

        import uvicorn

        from tests.mcp_agent import free_port

        self.port = free_port()
        # (log_config None: uvicorn leaves the test process's logging as it is, as serve has it)
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", log_config=None)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        import time

        self.thread.start()
        deadline = time.monotonic() + TIMEOUT
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        return f"http://127.0.0.1:{self.port}/mcp"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(TIMEOUT)


def _until(done: Any) -> None:
    import time

    deadline = time.monotonic() + TIMEOUT
    while not done():
        assert time.monotonic() < deadline, "never came about"
        time.sleep(0.02)


@pytest.mark.parametrize("ended", ["by the client (DELETE)", "by the SDK (idle)"])
def test_a_session_that_ends_frees_its_place_in_the_recording(tmp_path: Path, ended: str) -> None:
    """A session holds its place in the recording while it is open; the client's DELETE, or the
    SDK ending it once idle, frees it (it was held for as long as serve ran)."""
    from toolreplay.capture.serve import Sessions, build_server, load_records

    sessions = Sessions()
    server = build_server(load_records(str(_long_recording(tmp_path / "run.jsonl"))), None, sessions=sessions)
    by_client = ended.startswith("by the client")
    # ended by the client: an idle time the test never reaches; else one it waits for
    app = server.streamable_http_app(host="127.0.0.1", session_idle_timeout=3600 if by_client else 2)
    open_ones: list[int] = []

    def held() -> None:
        open_ones.append(len(sessions))

    rounds = 5 if by_client else 2  # (each idle round waits out the idle time)
    with _Serving(app) as url:
        for _ in range(rounds):
            anyio.run(lambda: _one_session(url, end=by_client, during=held))
            _until(lambda: len(sessions) == 0)
    assert open_ones == [1] * rounds


def test_what_the_sdk_logs_while_serving_is_one_warning_line(tmp_path: Path) -> None:
    """A client's progress notification the SDK refuses (its params a workflow command) is one
    toolreplay warning line on serve's stderr (it was the SDK's own log line), and serve goes on."""
    from tests.mcp_agent import INITIALIZE, INITIALIZED, PipeAgent, request

    run = tmp_path / "run.jsonl"
    answer = {"content": [{"type": "text", "text": "ok"}]}
    run.write_text(json.dumps({"index": 0, "tool": "t", "args": {}, "response": answer}) + "\n")
    note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"n": "##[set-output name=x;]1"}}
    agent = PipeAgent([*TOOLREPLAY, "serve", str(run)], env=server_env())
    assert json.loads(agent.ask(INITIALIZE))["id"] == 0
    agent.send(INITIALIZED)
    agent.send(json.dumps(note).encode() + b"\n")
    assert json.loads(agent.ask(request(1, "tools/call", {"name": "t"})))["result"] == answer
    status, rest, err = agent.finish()
    assert (status, rest) == (0, b"")
    assert after_ready(err).decode() == (
        "toolreplay: warning: mcp.server.runner: dropped 'notifications/progress': malformed params\n"
    )


def test_serve_says_one_line_once_it_answers(tmp_path: Path) -> None:
    """serve --listen prints one line on stderr once its socket listens: a CI job that waits for the
    line (and nothing else) reaches the URL it names with the SDK's client."""
    import subprocess

    from tests.mcp_agent import free_port, stop

    run = _long_recording(tmp_path / "run.jsonl")
    port = free_port()
    argv = [*TOOLREPLAY, "serve", str(run), "--listen", f"127.0.0.1:{port}"]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=server_env())
    try:
        assert process.stderr is not None
        line = process.stderr.readline().decode()
        url = f"http://127.0.0.1:{port}/mcp"
        assert line == f"toolreplay: serving {run} (3000 recorded calls) at {url}\n"
        anyio.run(lambda: _one_session(url, end=True))
    finally:
        status, err = stop(process)
    assert (status, err) == (0, b"")
