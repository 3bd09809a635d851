"""toolreplay serve: a recording answers a real SDK client as the server did, and runs nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from tests.mcp_agent import SERVER_CMD, TIMEOUT, TOOLREPLAY, dump, server_env
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
