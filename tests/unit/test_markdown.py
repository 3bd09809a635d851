"""The Markdown report: inert untrusted text, intact tables, trimming under a size limit."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolreplay.findings import Finding, Line, Report
from toolreplay.report.inert import ZWJ, md_code
from toolreplay.report.markdown import render_markdown

MENTION = re.compile(r"(?<![\w`])@[A-Za-z0-9]")


def _code_content(span: str) -> str:
    """What a CommonMark code span shows (fence stripped, one padding space each side)."""
    fence = re.match(r"`+", span)
    assert fence is not None
    inner = span[len(fence.group()) : -len(fence.group())]
    if inner.startswith(" ") and inner.endswith(" ") and inner.strip():
        inner = inner[1:-1]
    return inner


@pytest.mark.parametrize("text", ["a`b", "``x``", "`", " lead", "trail ", "x```y`"])
def test_code_span_fence_is_longer_than_any_backtick_run(text: str) -> None:
    """A code span's fence outruns the backticks inside, so the text cannot close it."""
    span = md_code(text, in_table=False)
    fence = re.match(r"`+", span)
    assert fence is not None
    runs = [len(r) for r in re.findall(r"`+", _code_content(span))]
    assert all(n != len(fence.group()) for n in runs)
    assert _code_content(span) == text


@given(st.text())
def test_code_span_is_one_inert_line(text: str) -> None:
    """Any text becomes one line with no live mention, tag, comment or unescaped pipe."""
    span = md_code(text)
    assert "\n" not in span and "\r" not in span
    assert "<!--" not in span
    assert all(span[i + 1 : i + 2] == ZWJ for i, ch in enumerate(span) if ch in "@<")
    assert not MENTION.search(span)
    assert re.search(r"(?<!\\)\|", span) is None


def _report(**kw: object) -> Report:
    return Report(command="replay", path="t.jsonl", **kw)  # type: ignore[arg-type]


def test_table_has_one_row_per_finding_and_error() -> None:
    """Each finding and each file-level error is one table row of four cells."""
    findings = tuple(
        Finding(kind="redundant-call", index=i, tool="t", message=f"m|{i}", path="t.jsonl", line=i + 1)
        for i in range(3)
    )
    body = render_markdown([_report(findings=findings, errors=("bad | thing",))])
    table = body.split("| where | level | kind | message |\n| --- | --- | --- | --- |\n")[1]
    rows = table.split("\n\n")[0].splitlines()
    assert len(rows) == 4
    for row in rows:
        cells = re.split(r"(?<!\\)\|", row)[1:-1]
        assert len(cells) == 4


def test_clean_files_fold_into_details() -> None:
    """Files without findings are listed inside one closed <details> block."""
    body = render_markdown([_report(), Report(command="replay", path="u.jsonl")])
    assert body.count("<details>") == body.count("</details>") == 1
    assert "**Passes**: no findings in 2 files." in body


def test_header_lines_are_shown_as_code() -> None:
    """Header values (which may carry untrusted text) are code spans."""
    body = render_markdown([_report(header=(Line(key="divergence", value=5, text="index 5"),))])
    assert "divergence: `index 5`" in body


def test_trimming_keeps_under_the_limit_with_a_note() -> None:
    """A report larger than the limit is cut at whole rows and says how much was left out."""
    findings = tuple(
        Finding(kind="non-determinism", index=i, tool="t", message="x" * 100, path="t.jsonl", line=i + 1)
        for i in range(500)
    )
    full = render_markdown([_report(findings=findings)])
    body = render_markdown([_report(findings=findings)], limit=10_000)
    assert len(full) > 10_000 >= len(body)
    shown = body.count("| error | non-determinism |")
    assert 0 < shown < 500
    assert f"\n{500 - shown} more findings not shown here (GitHub's size limit)." in body
    assert body.endswith("hold everything.\n")


def test_no_trimming_note_when_it_fits() -> None:
    """Within the limit the body is exactly the full report."""
    report = _report(findings=(Finding(kind="redundant-call", index=1, tool="t", message="m", line=2),))
    assert render_markdown([report], limit=100_000) == render_markdown([report])


def test_trimming_drops_the_clean_file_list_before_any_row() -> None:
    """When only the list of clean files does not fit, every row stays and the note names the files."""
    finding = Finding(kind="redundant-call", index=1, tool="t", message="m", path="t.jsonl", line=2)
    clean = [Report(command="replay", path=f"clean-{i:04d}.jsonl") for i in range(300)]
    reports = [_report(findings=(finding,)), *clean]
    body = render_markdown(reports, limit=2_000)
    assert len(body) <= 2_000
    assert "| warning | redundant-call |" in body
    assert "\n300 more files without findings not shown here (GitHub's size limit)." in body
