"""Golden CLI cases: each folder under tests/cases/cli/ is one command, its output and exit code.

A case folder holds ``args`` (one argument per line; ``{case}`` and ``{samples}`` are replaced
by the case folder and samples/ paths, relative to the repository root), ``expected.out`` and
``exit``. Adding a case is adding a folder. ``UPDATE_GOLDEN=1`` rewrites expected files.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import ROOT
from toolreplay.cli import cli

CASES = sorted(p for p in (ROOT / "tests" / "cases" / "cli").iterdir() if p.is_dir())


def case_args(case: Path) -> list[str]:
    lines = (case / "args").read_text(encoding="utf-8").splitlines()
    rel = case.relative_to(ROOT).as_posix()
    return [line.replace("{case}", rel).replace("{samples}", "samples") for line in lines if line]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden(case: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command prints exactly the recorded output and exits with the recorded code."""
    monkeypatch.chdir(ROOT)
    result = runner.invoke(cli, case_args(case), catch_exceptions=False)
    if os.environ.get("UPDATE_GOLDEN"):
        (case / "expected.out").write_text(result.stdout + result.stderr, encoding="utf-8")
        (case / "exit").write_text(f"{result.exit_code}\n")
    assert result.stdout + result.stderr == (case / "expected.out").read_text(encoding="utf-8")
    assert result.exit_code == int((case / "exit").read_text())


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_rerun_is_byte_identical(
    case: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs of the same case print the same bytes."""
    monkeypatch.chdir(ROOT)
    first = runner.invoke(cli, case_args(case), catch_exceptions=False)
    second = runner.invoke(cli, case_args(case), catch_exceptions=False)
    assert first.stdout_bytes == second.stdout_bytes


JSON_CASES = [c for c in CASES if "--format\njson" in (c / "args").read_text()]


@pytest.mark.parametrize("case", JSON_CASES, ids=[c.name for c in JSON_CASES])
def test_json_reports_match_their_schema(case: Path) -> None:
    """Every golden JSON report validates against schemas/report.schema.json."""
    import json

    from toolreplay.schemas import validator

    report = json.loads((case / "expected.out").read_text(encoding="utf-8"))
    assert list(validator("report").iter_errors(report)) == []


def test_version_is_x_y_z(runner: CliRunner) -> None:
    """`toolreplay version` prints `toolreplay X.Y.Z` (docs/spec.md §2), the installed package's version."""
    import re
    from importlib.metadata import version

    result = runner.invoke(cli, ["version"], catch_exceptions=False)
    assert re.fullmatch(r"toolreplay \d+\.\d+\.\d+\n", result.output)
    assert result.output == f"toolreplay {version('toolreplay')}\n"


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_flag_prints_what_version_prints(runner: CliRunner, flag: str) -> None:
    """`toolreplay --version` (and -V) works, and prints exactly what `toolreplay version` prints."""
    result = runner.invoke(cli, [flag], catch_exceptions=False)
    assert result.exit_code == 0
    assert result.output == runner.invoke(cli, ["version"], catch_exceptions=False).output
