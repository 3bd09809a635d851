"""Golden cases for ``toolreplay diff``: one folder each under tests/cases/diff/.

A case folder holds ``baseline.sealed.jsonl``, one ``run.jsonl`` or several
``run-N.jsonl``, optionally ``tools.lock.json`` (passed as --tools), the exact
``expected.txt`` and the ``exit_code``. Adding a case is adding a folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from toolreplay.cli import cli

CASES = Path(__file__).resolve().parent.parent / "cases" / "diff"
ALL = sorted(p for p in CASES.iterdir() if p.is_dir())


def _args(case: Path) -> list[str]:
    runs = sorted(p.name for p in case.glob("run*.jsonl"))
    args = ["diff", "baseline.sealed.jsonl", *runs]
    if (case / "tools.lock.json").exists():
        args += ["--tools", "tools.lock.json"]
    return args


@pytest.mark.parametrize("case", ALL, ids=[p.name for p in ALL])
def test_diff_case(case: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """diff prints the case's expected report byte for byte and exits with its code."""
    monkeypatch.chdir(case)
    result = runner.invoke(cli, _args(case), catch_exceptions=False)
    assert result.output == (case / "expected.txt").read_text()
    assert result.exit_code == int((case / "exit_code").read_text())


def test_every_kind_has_a_case() -> None:
    """Each drift kind and each determinism verdict shows up in at least one golden case."""
    text = "".join((case / "expected.txt").read_text() for case in ALL)
    for kind in ("agent-drift", "tool-drift", "behavior-drift", "effect-drift", "audit-incomplete"):
        assert f": {kind}: " in text, kind
    assert ": silent-drift: " in text
    for verdict in ("no-dependency", "stable", "silent-drift", "baseline-unavailable"):
        assert f"': {verdict}\n" in text, verdict


def test_diff_json_is_typed(runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """--format json carries the same findings with both indices, and typed summary values."""
    import json

    case = CASES / "effect-drift"
    monkeypatch.chdir(case)
    result = runner.invoke(cli, [*_args(case), "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 1
    report = json.loads(result.output)["reports"][0]
    assert report["file"] == "run.jsonl"
    assert report["summary"]["baseline links"] == 4
    assert report["summary"]["freshness"] == "not checked"
    assert report["summary"]["tool 'write_file'"] == "stable"
    [finding] = report["findings"]
    where = (finding["kind"], finding["index"], finding["related"], finding["line"])
    assert where == ("effect-drift", 3, 3, 4)


def test_diff_json_validates_against_report_schema(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The JSON diff report of a multi-run case passes the published report schema."""
    import json

    from toolreplay.schemas import validator

    case = CASES / "silent-drift-across-runs"
    monkeypatch.chdir(case)
    result = runner.invoke(cli, [*_args(case), "--format", "json"], catch_exceptions=False)
    errors = list(validator("report").iter_errors(json.loads(result.output)))
    assert errors == []


def test_diff_rerun_is_byte_identical(runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two runs of diff on the same inputs print the same bytes."""
    case = CASES / "silent-drift-across-runs"
    monkeypatch.chdir(case)
    first = runner.invoke(cli, _args(case), catch_exceptions=False).output
    assert runner.invoke(cli, _args(case), catch_exceptions=False).output == first
