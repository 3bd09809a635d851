"""The job summary: appended to $GITHUB_STEP_SUMMARY, and the file kept under 1 MiB."""

from __future__ import annotations

import re
from pathlib import Path

from toolreplay.findings import Finding, Report
from toolreplay.github.summary import SUMMARY_LIMIT, write_summary


def _report(n: int, width: int = 50) -> Report:
    findings = tuple(
        Finding(kind="redundant-call", index=i, tool="t", message="é" * width, path="t.jsonl", line=i + 1)
        for i in range(n)
    )
    return Report(command="replay", path="t.jsonl", findings=findings)


def test_appends_to_the_step_summary(tmp_path: Path) -> None:
    """The report is appended after what earlier steps wrote, separated by a newline."""
    target = tmp_path / "summary.md"
    target.write_text("# earlier\n", encoding="utf-8")
    result = write_summary([_report(2)], environ={"GITHUB_STEP_SUMMARY": str(target)})
    text = target.read_text(encoding="utf-8")
    assert result.written and not result.trimmed
    assert text.startswith("# earlier\n\n### toolreplay report\n")
    assert text.count("| warning | redundant-call |") == 2


def test_without_the_variable_nothing_is_written() -> None:
    """Outside GitHub Actions the summary is skipped with a reason."""
    result = write_summary([_report(1)], environ={})
    assert not result.written and "GITHUB_STEP_SUMMARY" in result.reason


def test_large_report_is_trimmed_under_one_mebibyte(tmp_path: Path) -> None:
    """A report over 1 MiB (in UTF-8 bytes) is trimmed, with a note, to fit with what is there."""
    target = tmp_path / "summary.md"
    target.write_bytes(b"x" * 1000 + b"\n")
    result = write_summary([_report(12_000)], path=str(target))
    data = target.read_bytes()
    assert result.written and result.trimmed
    assert SUMMARY_LIMIT - 2000 < len(data) <= SUMMARY_LIMIT
    assert re.search(rb"\n\d+ more findings not shown here \(GitHub's size limit\)\.", data)


def test_full_summary_file_is_left_alone(tmp_path: Path) -> None:
    """When earlier steps filled the budget, nothing more is appended."""
    target = tmp_path / "summary.md"
    target.write_bytes(b"x" * SUMMARY_LIMIT)
    result = write_summary([_report(3)], path=str(target))
    assert not result.written
    assert target.stat().st_size == SUMMARY_LIMIT
