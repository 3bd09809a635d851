"""fingerprint --timeout bounds the connection and the handshake of --mcp and --target, as probe's
does: a server that never answers initialize, one that ignores SIGTERM too, and an endpoint that
accepts and never replies each end within it (exit 2, one line, no lock written)."""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from toolreplay.cli import cli

#: how long a fingerprint with --timeout 2 may take: the timeout, and stopping the server
BOUND = 15
MUTE = "import time\ntime.sleep(3600)\n"
DEAF = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(3600)\n"


def _fingerprint(runner: CliRunner, args: list[str]) -> tuple[int, str, float]:
    started = time.monotonic()
    result = runner.invoke(cli, ["fingerprint", "--timeout", "2", *args], catch_exceptions=False)
    return result.exit_code, result.output, time.monotonic() - started


@pytest.mark.parametrize("script", [MUTE, DEAF], ids=["mute", "ignores-sigterm"])
def test_a_server_that_never_answers_initialize_costs_the_timeout(
    runner: CliRunner, tmp_path: Path, script: str
) -> None:
    """A stdio server that never answers the handshake is stopped after --timeout: exit 2, one line."""
    server = tmp_path / "server.py"
    server.write_text(script, encoding="utf-8")
    out = tmp_path / "tools.lock.json"
    status, output, took = _fingerprint(runner, ["-o", str(out), "--mcp", "--", sys.executable, str(server)])
    assert (status, took < BOUND, out.exists()) == (2, True, False)
    assert output == (
        f"toolreplay: error: mcp:{sys.executable} {server}: it did not finish within 2 s and was stopped\n"
    )


def test_an_endpoint_that_accepts_and_never_replies_costs_the_timeout(
    runner: CliRunner, tmp_path: Path
) -> None:
    """A --target whose socket accepts the connection and never replies costs --timeout: exit 2."""
    out = tmp_path / "tools.lock.json"
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        status, output, took = _fingerprint(
            runner, ["-o", str(out), "--target", f"http://127.0.0.1:{port}/mcp"]
        )
    assert (status, took < BOUND, out.exists()) == (2, True, False)
    assert output == (
        f"toolreplay: error: http://127.0.0.1:{port}: the MCP server did not list its tools within 2 s\n"
    )
