"""End to end: a real MCP server (the SDK's MCPServer over stdio) fingerprinted, changed, and diffed."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from toolreplay.cli import cli

SERVER = textwrap.dedent(
    """
    from typing import Annotated

    from pydantic import Field
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    server = MCPServer("docs")

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True, idempotentHint=True))
    def search(query: Annotated[str, Field(max_length=MAX_LENGTH)], limit: int = 10) -> str:
        \"\"\"Search the docs.\"\"\"
        return query

    @server.tool()
    def write_note(path: str, text: str) -> str:
        \"\"\"Write a note.\"\"\"
        return path

    if __name__ == "__main__":
        server.run()
    """
)


def start_and_fingerprint(runner: CliRunner, tmp_path: Path, max_length: int, lock: Path) -> None:
    server = tmp_path / f"server_{max_length}.py"
    server.write_text(SERVER.replace("MAX_LENGTH", str(max_length)), encoding="utf-8")
    result = runner.invoke(
        cli,
        [
            "fingerprint",
            "-o",
            str(lock),
            "--version",
            "1.0",
            "--mcp",
            "--",
            sys.executable,
            str(server),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output


@pytest.mark.slow
def test_live_mcp_server_schema_change_is_breaking_drift(runner: CliRunner, tmp_path: Path) -> None:
    """fingerprint --mcp reads the live server's tools; tightening maxLength shows as breaking drift."""
    before, after = tmp_path / "before.tools.lock.json", tmp_path / "after.tools.lock.json"
    start_and_fingerprint(runner, tmp_path, 500, before)
    lock = json.loads(before.read_text(encoding="ascii"))["tools"]
    assert sorted(lock) == ["search", "write_note"]
    assert lock["search"]["signature"]["params"] == [
        ["limit", "integer", "optional"],
        ["query", "string", "required"],
    ]
    assert lock["search"]["schema"]["properties"]["query"]["maxLength"] == 500
    # hints: read-only + idempotent; no annotations at all is MCP's worst case
    assert (lock["search"]["mutates"], lock["search"]["idempotent"]) == (False, True)
    assert (lock["write_note"]["mutates"], lock["write_note"]["idempotent"]) == (True, False)

    start_and_fingerprint(runner, tmp_path, 200, after)
    result = runner.invoke(cli, ["fingerprint-diff", str(before), str(after)], catch_exceptions=False)
    assert result.exit_code == 1
    assert result.output == (
        "tools recorded: 2\n"
        "tools live: 2\n"
        "tools drifted: 1\n"
        "breaking: 1\n"
        "findings: 1\n"
        "search: schema (breaking): /properties/query/maxLength 500 -> 200\n"
    )


def test_server_that_fails_to_start_is_a_usage_error(runner: CliRunner, tmp_path: Path) -> None:
    """A command that is not an MCP server gives one line and exit 2, not a traceback."""
    broken = tmp_path / "broken.py"
    broken.write_text("import sys\nsys.exit(3)\n", encoding="utf-8")
    result = runner.invoke(
        cli,
        ["fingerprint", "--timeout", "10", "--mcp", "--", sys.executable, str(broken)],
        catch_exceptions=False,
    )
    assert result.exit_code == 2
    assert result.output.startswith(f"toolreplay: error: mcp:{sys.executable} {broken}: ")
    assert len(result.output.splitlines()) == 1


def test_what_the_sdk_logs_while_listing_stays_off_stderr() -> None:
    """fingerprint --mcp's worker, as the runner starts it, lists the tools of a server that sends a
    notification the SDK's model refuses (its params a workflow command): the tools are listed,
    and its stderr stays empty (no traceback quoting the server)."""
    import subprocess

    hostile = Path(__file__).resolve().parent.parent / "data" / "mcp" / "probe_hostile.py"
    request = {"mcp": [sys.executable, str(hostile), "--noisy-list"], "timeout": 60}
    worker = [sys.executable, "-P", "-B", "-m", "toolreplay.contracts._source_worker", json.dumps(request)]
    done = subprocess.run(worker, capture_output=True, text=True, timeout=120, check=False)
    assert (done.returncode, done.stderr) == (0, "")
    answer = json.loads(done.stdout)
    assert [tool["name"] for tool in answer["tools"]] == ["garbage", "hang", "die", "badnote"]
