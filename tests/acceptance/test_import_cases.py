"""Golden cases for ``toolreplay import``: one folder per case under tests/cases/import/.

A case folder holds ``input.*`` (the trace), ``args`` (the options, e.g. ``--from otel``),
``stderr`` (exactly what is printed there), ``exit`` (the exit code, 0 when absent) and
``expected/`` (every transcript that must be written, byte for byte; absent when nothing
may be written). The fixtures for anthropic, openai-responses and otel are built from the
published shapes (Anthropic Messages content blocks, OpenAI Responses items, OTLP JSON
with the GenAI execute_tool span attributes), including malformed entries.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import ROOT
from toolreplay.cli import cli
from toolreplay.validate import validate_file

CASES = ROOT / "tests" / "cases" / "import"


def _cases() -> list[Path]:
    return sorted(p for p in CASES.iterdir() if p.is_dir())


def _files(directory: Path) -> dict[str, bytes]:
    if not directory.is_dir():
        return {}
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


@pytest.mark.parametrize("case", _cases(), ids=lambda p: p.name)
def test_import_case(case: Path, runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The case's input imports to exactly the expected transcripts, stderr and exit code."""
    (source,) = case.glob("input.*")
    shutil.copy(source, tmp_path / source.name)
    monkeypatch.chdir(tmp_path)
    args = (case / "args").read_text().split()
    result = runner.invoke(cli, ["import", *args, source.name, "-o", "out"], catch_exceptions=False)
    exit_file = case / "exit"
    assert result.exit_code == (int(exit_file.read_text()) if exit_file.exists() else 0)
    assert result.stderr == (case / "stderr").read_text()
    assert result.stdout == ""
    assert _files(tmp_path / "out") == _files(case / "expected")


def test_every_case_is_complete() -> None:
    """Each case folder has its input, options and expected stderr (a typo cannot skip a check)."""
    for case in _cases():
        assert len(list(case.glob("input.*"))) == 1, case.name
        assert (case / "args").is_file(), case.name
        assert (case / "stderr").is_file(), case.name


def test_expected_transcripts_pass_their_schema() -> None:
    """Every transcript a case expects is valid against the published record schema."""
    expected = sorted(CASES.glob("*/expected/*.jsonl"))
    assert expected
    for transcript in expected:
        assert validate_file(str(transcript)) == [], transcript
