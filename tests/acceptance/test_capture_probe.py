"""toolreplay probe: a recording asked again of a live SDK server, over stdio."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from tests.mcp_agent import SERVER_CMD, TIMEOUT, TOOLREPLAY, free_port
from toolreplay.cli import cli

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("echo", {"text": "x"}),
    ("clock", {"zone": "utc"}),
    ("fail", {"reason": "r"}),
    ("write_note", {"text": "n"}),
    ("erase_notes", {}),
    ("clock", {"zone": "utc"}),
]


async def _agent(argv: list[str], env: dict[str, str]) -> None:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    with anyio.fail_after(TIMEOUT):
        async with Client(stdio_client(params)) as client:
            await client.list_tools()
            for tool, args in CALLS:
                await client.call_tool(tool, args)


@pytest.mark.slow
def test_probe_catches_changed_answers_and_contracts_and_never_reruns_a_mutator(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Against the same server every tool is stable (exit 0); after the clock's answers and echo's
    schema change, probe names both drifts (exit 1), and write_note is never called again."""
    import os

    notes = tmp_path / "notes.txt"
    for key, value in {"NOTES_FILE": str(notes), "CLOCK_SEED": "1", "SERVER_VERSION": "1.0.0"}.items():
        monkeypatch.setenv(key, value)
    out, lock = tmp_path / "run.sealed.jsonl", tmp_path / "tools.lock.json"
    record = [*TOOLREPLAY, "record", "-o", str(out), "--seal", "--lock", str(lock), "--", *SERVER_CMD]
    anyio.run(_agent, record, dict(os.environ))
    assert notes.read_text(encoding="utf-8") == "n\nerased\n"

    # without a lock: write_note is named a mutator, erase_notes says it is destructive itself
    same = runner.invoke(
        cli, ["probe", str(out), "--mutator", "write_note", "--", *SERVER_CMD], catch_exceptions=False
    )
    assert (same.exit_code, same.output) == (
        0,
        "calls: 6\n"
        "asked: 3\n"
        "tool 'clock': stable\n"
        "tool 'echo': stable\n"
        "tool 'erase_notes': not-probed (changes state)\n"
        "tool 'fail': stable\n"
        "tool 'write_note': not-probed (changes state)\n"
        "findings: 0\n",
    )

    # the config's mutators decide as --mutator does: write_note is not asked again
    (tmp_path / "toolreplay.toml").write_text('mutators = ["write_note"]\n')
    monkeypatch.chdir(tmp_path)
    configured = runner.invoke(cli, ["probe", str(out), "--", *SERVER_CMD], catch_exceptions=False)
    assert (configured.exit_code, configured.stdout) == (0, same.output)
    assert configured.stderr == "toolreplay: using config toolreplay.toml (mutators)\n"
    assert notes.read_text(encoding="utf-8") == "n\nerased\n"
    (tmp_path / "toolreplay.toml").unlink()

    monkeypatch.setenv("CLOCK_SEED", "2")
    monkeypatch.setenv("SCHEMA_LIMIT", "5")
    probe = ["probe", str(out), "--lock", str(lock), "--format", "json", "--", *SERVER_CMD]
    changed = runner.invoke(cli, probe)
    assert changed.exit_code == 1, changed.output
    report = json.loads(changed.output)["reports"][0]
    assert report["summary"] == {
        "calls": 6,
        "asked": 3,
        "tool 'clock'": "silent-drift",
        "tool 'echo'": "stable",
        "tool 'erase_notes'": "not-probed",
        "tool 'fail'": "stable",
        "tool 'write_note'": "not-probed",
        "findings": 2,
    }
    recorded = json.loads(lock.read_text(encoding="ascii"))["tools"]["echo"]["fingerprint"]
    assert [(f["index"], f["kind"], f["line"]) for f in report["findings"]] == [
        (0, "tool-drift", 1),
        (1, "silent-drift", 2),
    ]
    assert report["findings"][0]["message"].startswith(
        f"tool 'echo' was recorded with fingerprint {recorded}, is now "
    )
    assert report["findings"][1]["message"] == (
        "tool 'clock' answered the call recorded at index 1 differently live, first at"
        ' \'/content/0/text\': recorded "utc: 1", live "utc: 2"'
    )
    assert notes.read_text(encoding="utf-8") == "n\nerased\n"  # the mutators ran once: when recorded


def test_probe_needs_a_server(runner: CliRunner, tmp_path: Path) -> None:
    """Neither a command nor --target is a usage error (exit 2)."""
    empty = tmp_path / "run.jsonl"
    empty.write_bytes(b"")
    result = runner.invoke(cli, ["probe", str(empty)])
    assert result.exit_code == 2
    assert "give the server's command line after -- or --target URL (one of them)" in result.output


def test_probe_of_a_server_that_dies_at_start(runner: CliRunner, tmp_path: Path) -> None:
    """A server that exits at once is one line naming the command and its last words (exit 2)."""
    import sys

    empty = tmp_path / "run.jsonl"
    empty.write_bytes(b"")
    dying = tmp_path / "dying.py"
    dying.write_text("import sys\nprint('missing API key', file=sys.stderr)\nsys.exit(1)\n", encoding="utf-8")
    result = runner.invoke(cli, ["probe", str(empty), "--timeout", "20", "--", sys.executable, str(dying)])
    assert result.exit_code == 2
    assert result.output.startswith(
        f"toolreplay: error: mcp:{sys.executable} {dying}: cannot talk to the MCP server: "
    )
    assert result.output.endswith("; the server's last words: missing API key\n")
    assert len(result.output.splitlines()) == 1


def test_probe_names_an_unreachable_target_without_its_credentials(runner: CliRunner, tmp_path: Path) -> None:
    """A --target URL that cannot be reached is one line naming its origin only: the URL's
    credentials and query (an API key) stay out of the message a CI log keeps."""
    empty = tmp_path / "run.jsonl"
    empty.write_bytes(b"")
    port = free_port()
    url = f"http://agent:s3cret@127.0.0.1:{port}/mcp?api_key=TOPSECRET"
    result = runner.invoke(cli, ["probe", str(empty), "--timeout", "20", "--target", url])
    assert result.exit_code == 2
    assert result.output.startswith(
        f"toolreplay: error: http://127.0.0.1:{port}: cannot talk to the MCP server: "
    )
    assert "s3cret" not in result.output and "TOPSECRET" not in result.output
    assert len(result.output.splitlines()) == 1


@pytest.mark.slow
def test_probe_warns_about_a_tool_listed_twice_with_different_schemas(tmp_path: Path) -> None:
    """A live tools/list that names a tool twice with different schemas is one warning line on
    stderr (the first definition is the one fingerprinted); it used to pass without a word."""
    import subprocess
    import sys

    server = Path(__file__).resolve().parent.parent / "data" / "mcp" / "duplicate_tools.py"
    transcript = tmp_path / "run.jsonl"
    record = {"index": 0, "tool": "echo", "args": {}, "response": {"content": []}}
    transcript.write_text(json.dumps(record) + "\n", encoding="utf-8")
    argv = [*TOOLREPLAY, "probe", str(transcript), "--", sys.executable, str(server)]
    result = subprocess.run(argv, capture_output=True, timeout=TIMEOUT, check=False)
    assert result.stderr.decode() == (
        "toolreplay: warning: tools/list: tool 'echo': defined again with a different schema;"
        " the first definition (/) is kept\n"
    )
