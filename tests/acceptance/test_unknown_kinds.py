"""A kind toolreplay does not know is a usage error wherever a list of kinds is read.

A typo in ``fail_on`` (``tool_drift`` for ``tool-drift``) used to switch the gate off for
that kind: ``check`` reported the findings, failed none of them and exited 0.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import SAMPLES
from toolreplay.cli import cli
from toolreplay.gate import known_kinds

KINDS = ", ".join(sorted(known_kinds()))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with a transcript that has findings (redundant call, non-determinism)."""
    shutil.copy(SAMPLES / "session-dirty.jsonl", tmp_path / "dirty.jsonl")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_check_refuses_a_typo_in_fail_on(runner: CliRunner, project: Path) -> None:
    """fail_on = ["tool_drift"] is exit 2: one line naming the file, the bad value and every kind."""
    (project / "toolreplay.toml").write_text('transcripts = ["*.jsonl"]\nfail_on = ["tool_drift"]\n')
    result = runner.invoke(cli, ["check", "--config", "toolreplay.toml"], catch_exceptions=False)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        "toolreplay: error: toolreplay.toml: fail_on: unknown finding kind 'tool_drift';"
        f" the kinds are: {KINDS} ('all' for every kind but the advisory ones, then -KIND to take one out)"
        " (at /fail_on/0)\n"
    )


def test_pyproject_table_is_checked_the_same_way(runner: CliRunner, project: Path) -> None:
    """The [tool.toolreplay] table of pyproject.toml refuses an unknown kind too, at its position."""
    (project / "pyproject.toml").write_text(
        '[tool.toolreplay]\ntranscripts = ["*.jsonl"]\nfail_on = ["non-determinism", "Redundant-Call"]\n'
    )
    result = runner.invoke(cli, ["check"], catch_exceptions=False)
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert "pyproject.toml: fail_on: unknown finding kind 'Redundant-Call';" in result.stderr
    assert result.stderr.endswith(" (at /fail_on/1)\n")


def test_known_kinds_still_limit_what_fails(runner: CliRunner, project: Path) -> None:
    """A correct fail_on keeps its meaning: the findings outside it are reported, exit 0."""
    (project / "toolreplay.toml").write_text('transcripts = ["*.jsonl"]\nfail_on = ["tool-drift"]\n')
    result = runner.invoke(cli, ["check"], catch_exceptions=False)
    assert result.exit_code == 0
    assert result.stdout.endswith("total: 1 reports, 1 findings, 0 failing, 0 unreadable\n")


def test_validate_refuses_the_typo(runner: CliRunner, project: Path) -> None:
    """validate calls the config invalid and names the value and the pointer."""
    (project / "toolreplay.toml").write_text('fail_on = ["tool_drift"]\n')
    result = runner.invoke(cli, ["validate", "toolreplay.toml"], catch_exceptions=False)
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0] == "toolreplay.toml: invalid"
    assert lines[1].startswith("toolreplay.toml: 'tool_drift' is not one of ['agent-drift', ")
    assert lines[1].endswith("] (at /fail_on/0)")
    assert len(lines) == 2
