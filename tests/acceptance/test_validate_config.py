"""validate recognises pyproject.toml's [tool.toolreplay] table and keeps checking the other
files when one cannot be read or its kind cannot be told."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import SAMPLES
from toolreplay.cli import cli


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_pyproject_is_checked_as_the_config(runner: CliRunner, folder: Path) -> None:
    """validate pyproject.toml checks its [tool.toolreplay] table against the config schema."""
    (folder / "pyproject.toml").write_text(
        '[project]\nname = "x"\n[tool.toolreplay]\nfail_on = ["tool_drift"]\n'
    )
    result = runner.invoke(cli, ["validate", "pyproject.toml"], catch_exceptions=False)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == "pyproject.toml: invalid"
    assert lines[1].startswith("pyproject.toml: 'tool_drift' is not one of [")
    (folder / "pyproject.toml").write_text('[tool.toolreplay]\ntranscripts = ["runs/*.jsonl"]\n')
    result = runner.invoke(cli, ["validate", "pyproject.toml"], catch_exceptions=False)
    assert (result.exit_code, result.stdout) == (0, "pyproject.toml: valid\n")


def test_pyproject_without_the_table_says_so(runner: CliRunner, folder: Path) -> None:
    """A pyproject.toml with no [tool.toolreplay] is not silently valid."""
    (folder / "pyproject.toml").write_text('[project]\nname = "x"\n')
    result = runner.invoke(cli, ["validate", "pyproject.toml"], catch_exceptions=False)
    assert (result.exit_code, result.stdout) == (
        1,
        "pyproject.toml: invalid\npyproject.toml: has no [tool.toolreplay] table\n",
    )


def test_an_unknown_kind_does_not_stop_the_other_files(runner: CliRunner, folder: Path) -> None:
    """notes.txt is one error line (exit 2); the transcript after it is still checked and reported."""
    (folder / "notes.txt").write_text("hi\n")
    (folder / "run.jsonl").write_bytes((SAMPLES / "session-clean.jsonl").read_bytes())
    (folder / "bad.jsonl").write_text('{"index": 0}\n')
    result = runner.invoke(cli, ["validate", "notes.txt", "run.jsonl", "bad.jsonl"], catch_exceptions=False)
    assert result.exit_code == 2
    assert result.stdout.startswith("== run.jsonl\nresult: valid\n== bad.jsonl\nresult: invalid\n")
    assert result.stderr == (
        "toolreplay: error: notes.txt: cannot tell the kind of file from its name; pass --kind"
        " (config, drift-note, report, scope, sealed, signature, tool-lock, transcript)\n"
    )
