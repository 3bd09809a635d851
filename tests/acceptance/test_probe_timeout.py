"""probe --timeout bounds the whole conversation: a server that never answers the handshake, an
endpoint that accepts and never replies, and a server hung mid-call each end within it."""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.mcp_agent import SERVER_CMD, record_calls
from toolreplay.cli import cli

#: how long a probe with --timeout 2 may take: the timeout, and the SDK's teardown of the server
BOUND = 15


def _probe(runner: CliRunner, args: list[str]) -> tuple[int, str, float]:
    started = time.monotonic()
    result = runner.invoke(cli, ["probe", *args], catch_exceptions=False)
    return result.exit_code, result.output, time.monotonic() - started


@pytest.mark.slow
def test_a_server_that_never_answers_initialize_is_unavailable(runner: CliRunner, tmp_path: Path) -> None:
    """A stdio server that reads nothing and never answers costs --timeout, not minutes: exit 2,
    one line saying the handshake got no answer."""
    empty = tmp_path / "run.jsonl"
    empty.write_bytes(b"")
    mute = tmp_path / "mute.py"
    mute.write_text("import time\ntime.sleep(3600)\n", encoding="utf-8")
    status, output, took = _probe(runner, [str(empty), "--timeout", "2", "--", sys.executable, str(mute)])
    assert (status, took < BOUND) == (2, True)
    assert output == (
        f"toolreplay: error: mcp:{sys.executable} {mute}: the MCP server did not complete the"
        " handshake within 2 s (unavailable)\n"
    )


def test_an_endpoint_that_accepts_and_never_replies_is_unavailable(runner: CliRunner, tmp_path: Path) -> None:
    """A --target whose socket accepts the connection and never replies costs --timeout: exit 2."""
    empty = tmp_path / "run.jsonl"
    empty.write_bytes(b"")
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        status, output, took = _probe(
            runner, [str(empty), "--timeout", "2", "--target", f"http://127.0.0.1:{port}/mcp"]
        )
    assert (status, took < BOUND) == (2, True)
    assert output == (
        f"toolreplay: error: http://127.0.0.1:{port}: the MCP server did not complete the"
        " handshake within 2 s (unavailable)\n"
    )


@pytest.mark.slow
def test_a_server_hung_mid_call_stops_the_probe(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call with no answer within --timeout is unavailable, and the calls after it are not asked
    (unavailable, saying why) instead of each waiting out the timeout; exit 1."""
    calls: list[tuple[str, dict[str, Any]]] = [("echo", {"text": "x"})]
    calls += [("slow", {"seconds": 0.01, "tag": "t"})] + [("echo", {"text": str(n)}) for n in range(4)]
    out, _ = record_calls(tmp_path, SERVER_CMD, calls)
    monkeypatch.setenv("SLOW_HANG", "1")
    status, output, took = _probe(runner, [str(out), "--timeout", "2", "--format", "json", "--", *SERVER_CMD])
    assert (status, took < BOUND) == (1, True)
    findings = json.loads(output)["reports"][0]["findings"]
    assert [(finding["kind"], finding["index"]) for finding in findings] == [
        ("unavailable", index) for index in range(1, 6)
    ]
    assert findings[0]["message"].endswith(": no answer within 2 s")
    assert {finding["message"].split(": ", 1)[1] for finding in findings[1:]} == {
        "not asked: an earlier call got no answer within 2 s"
    }
