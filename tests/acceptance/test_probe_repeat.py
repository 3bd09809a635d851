"""probe --repeat N asks each round of a fresh server process: a server's state is not drift."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.mcp_agent import SERVER_CMD, free_port, record_calls, server_env, stop, wait_for_port
from toolreplay.cli import cli


@pytest.mark.slow
def test_repeat_asks_a_fresh_server_each_round(runner: CliRunner, tmp_path: Path) -> None:
    """``counter`` declares readOnlyHint yet counts 1, 2, 3 within one process: --repeat 3 asks
    three processes, each answering 1 as recorded, so the tool is stable (one process said
    silent-drift)."""
    out, _ = record_calls(tmp_path, SERVER_CMD, [("counter", {})])
    argv = ["probe", str(out), "--repeat", "3", "--", *SERVER_CMD]
    result = runner.invoke(cli, argv, catch_exceptions=False)
    assert result.exit_code == 0
    assert result.output == "calls: 1\nasked: 1\ntool 'counter': stable\nfindings: 0\n"


@pytest.mark.slow
def test_repeat_over_a_url_says_it_asks_one_server(runner: CliRunner, tmp_path: Path) -> None:
    """Over --target, probe cannot start the server afresh: all rounds ask it, and a warning says
    that what it keeps can read as drift (here: the counter's 2 and 3)."""
    out, _ = record_calls(tmp_path, SERVER_CMD, [("counter", {})])
    port = free_port()
    server = subprocess.Popen([*SERVER_CMD, "http", str(port)], stderr=subprocess.DEVNULL, env=server_env())
    try:
        wait_for_port(port, server)
        argv = ["probe", str(out), "--repeat", "3", "--target", f"http://127.0.0.1:{port}/mcp"]
        result = runner.invoke(cli, argv, catch_exceptions=False)
    finally:
        stop(server)
    assert result.exit_code == 1
    assert "tool 'counter': silent-drift" in result.stdout
    assert result.stderr == (
        "toolreplay: warning: --repeat asks every round of the one server behind --target (probe cannot"
        " start it afresh): what it keeps between calls can read as drift\n"
    )
