"""The shipped dirty sample gives the replay report of docs/spec.md §2.1."""

from __future__ import annotations

from click.testing import CliRunner

from tests.conftest import SAMPLES
from toolreplay.cli import cli


def test_dirty_replay_matches_spec(runner: CliRunner) -> None:
    """replay on samples/session-dirty.jsonl prints the five lines of docs/spec.md §2.1 and exits 1."""
    result = runner.invoke(cli, ["replay", str(SAMPLES / "session-dirty.jsonl")], catch_exceptions=False)
    assert result.exit_code == 1
    assert result.stdout.splitlines()[:3] == ["calls: 6", "divergence: index 5", "findings: 2"]
