"""The lock keeps what a person declared: ``fingerprint -o L --force`` and ``record --lock L --force``
keep the behaviour flags of the lock they replace and say so; and a server started by
``fingerprint --mcp`` gets the caller's environment and pins its ``serverInfo.version``, as
``record`` and ``probe`` do, so their locks agree."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

import anyio
import pytest
from click.testing import CliRunner

from tests.acceptance.test_contracts_cli import github_pair
from tests.mcp_agent import SERVER_CMD, TIMEOUT, TOOLREPLAY, server_env
from tests.realservers import python_server
from toolreplay.cli import cli


def _declare(lock: Path, tool: str, **flags: bool | str) -> None:
    """Edit the lock by hand, as a person does."""
    data = json.loads(lock.read_text(encoding="ascii"))
    data["tools"][tool].update(flags)
    lock.write_text(json.dumps(data, indent=2), encoding="ascii")


def _tools(lock: Path) -> dict[str, Any]:
    tools: dict[str, Any] = json.loads(lock.read_text(encoding="ascii"))["tools"]
    return tools


def test_fingerprint_force_keeps_the_declared_flags_and_names_a_changed_contract(
    runner: CliRunner, tmp_path: Path
) -> None:
    """Re-fingerprinting over a lock keeps the flags and the note a person set, one line per tool
    saying what was kept; a tool whose contract changed is named with its old and new fingerprint."""
    old, new = github_pair(tmp_path)
    lock = tmp_path / "tools.lock.json"
    assert runner.invoke(cli, ["fingerprint", "-o", str(lock), str(old)]).exit_code == 0
    _declare(lock, "get_file_contents", deterministic=False, note="answers carry the date")
    _declare(lock, "search_code", mutates=True, idempotent=True)
    was = _tools(lock)["search_code"]["fingerprint"]

    result = runner.invoke(cli, ["fingerprint", "-o", str(lock), "--force", str(new)], catch_exceptions=False)
    assert result.exit_code == 0
    tools = _tools(lock)
    assert tools["get_file_contents"]["deterministic"] is False
    assert tools["get_file_contents"]["note"] == "answers carry the date"
    assert (tools["search_code"]["mutates"], tools["search_code"]["idempotent"]) == (True, True)
    now = tools["search_code"]["fingerprint"]
    assert now != was
    assert result.stderr == (
        f"toolreplay: {lock}: kept what it declared for tool 'get_file_contents': deterministic false,"
        " note 'answers carry the date'\n"
        f"toolreplay: {lock}: kept what it declared for tool 'search_code', whose contract changed"
        f" ({was} -> {now}): mutates true, idempotent true; check that it still holds\n"
    )
    # the tools the new source adds take what it says; a lock is still one fingerprint-diff reads
    assert tools["list_tags"]["deterministic"] is True
    assert runner.invoke(cli, ["fingerprint-diff", str(lock), str(lock)]).exit_code == 0


def test_an_unreadable_old_lock_is_replaced_with_a_warning(runner: CliRunner, tmp_path: Path) -> None:
    """A lock that cannot be read is replaced (--force), and the warning says nothing of it was kept."""
    old, _ = github_pair(tmp_path)
    lock = tmp_path / "tools.lock.json"
    lock.write_text("{not json", encoding="ascii")
    result = runner.invoke(cli, ["fingerprint", "-o", str(lock), "--force", str(old)], catch_exceptions=False)
    assert result.exit_code == 0
    assert result.stderr.startswith(f"toolreplay: warning: {lock}")
    assert result.stderr.endswith("; what it declared is not kept\n")
    assert "actions_list" in _tools(lock)


async def _ask(
    argv: list[str], env: dict[str, str], calls: list[tuple[str, dict[str, Any]]], errlog: TextIO = sys.stderr
) -> None:
    """An SDK client that lists the tools and makes ``calls``; the process's stderr goes to ``errlog``."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    with anyio.fail_after(TIMEOUT):
        async with Client(stdio_client(params, errlog=errlog)) as client:
            await client.list_tools()
            for tool, args in calls:
                await client.call_tool(tool, args)


@pytest.mark.slow
def test_record_force_keeps_what_the_lock_declared(runner: CliRunner, tmp_path: Path) -> None:
    """record --lock L --force over a lock where the clock was declared not deterministic keeps
    that (the server says nothing of it) and says so; the new recording is written as usual."""
    out, lock = tmp_path / "run.jsonl", tmp_path / "tools.lock.json"
    record = [*TOOLREPLAY, "record", "-o", str(out), "--lock", str(lock), "--force", "--", *SERVER_CMD]
    anyio.run(_ask, record, server_env(), [("clock", {"zone": "utc"})])
    assert _tools(lock)["clock"]["deterministic"] is True
    _declare(lock, "clock", deterministic=False)

    with (tmp_path / "stderr.txt").open("w+", encoding="utf-8") as errlog:
        anyio.run(_ask, record, server_env(), [("clock", {"zone": "utc"})], errlog)
        errlog.seek(0)
        said = errlog.read()
    kept = f"toolreplay: {lock}: kept what it declared for tool 'clock': deterministic false\n"
    assert kept in said
    assert _tools(lock)["clock"]["deterministic"] is False
    assert _tools(lock)["echo"]["deterministic"] is True
    assert len(out.read_text(encoding="utf-8").splitlines()) == 1


@pytest.mark.slow
def test_fingerprint_mcp_passes_the_callers_environment(runner: CliRunner, tmp_path: Path) -> None:
    """SCHEMA_LIMIT=5 toolreplay fingerprint --mcp fingerprints the server as the environment
    configures it: fingerprint-diff names echo's tightened bound instead of a silent 0 drifted."""
    plain, drifted = tmp_path / "plain.lock.json", tmp_path / "drifted.lock.json"
    args = ["fingerprint", "--mcp", "--", *SERVER_CMD]
    assert runner.invoke(cli, [*args[:1], "-o", str(plain), *args[1:]]).exit_code == 0
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SCHEMA_LIMIT", "5")
        assert runner.invoke(cli, [*args[:1], "-o", str(drifted), *args[1:]]).exit_code == 0
    result = runner.invoke(cli, ["fingerprint-diff", str(plain), str(drifted)], catch_exceptions=False)
    assert result.exit_code == 1
    assert "tools drifted: 1\n" in result.stdout and "echo: schema" in result.stdout


@pytest.mark.slow
def test_fingerprint_mcp_pins_the_version_record_pins(runner: CliRunner, tmp_path: Path) -> None:
    """The real mcp-server-time fingerprinted by fingerprint --mcp and by record --lock gives the
    same lock (both pin its serverInfo.version): fingerprint-diff finds nothing."""
    server = python_server("time")
    recorded, live = tmp_path / "recorded.lock.json", tmp_path / "live.lock.json"
    out = tmp_path / "run.jsonl"
    record = [*TOOLREPLAY, "record", "-o", str(out), "--lock", str(recorded), "--", *server]
    anyio.run(_ask, record, dict(os.environ), [("get_current_time", {"timezone": "UTC"})])
    result = runner.invoke(cli, ["fingerprint", "-o", str(live), "--mcp", "--", *server])
    assert result.exit_code == 0, result.output
    versions = {contract["version"] for contract in _tools(live).values()}
    assert versions == {contract["version"] for contract in _tools(recorded).values()}
    assert versions != {""}
    assert live.read_bytes() == recorded.read_bytes()
    diff = runner.invoke(cli, ["fingerprint-diff", str(recorded), str(live)], catch_exceptions=False)
    assert diff.exit_code == 0 and "tools drifted: 0\n" in diff.stdout
