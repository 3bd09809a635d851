"""The ``markdown`` format: the job summary and PR comment body, a table per file.

Everything that comes from a transcript, a path or a message is untrusted and goes
through :func:`md_code`: one line, inside a code span (no Markdown, HTML, @-mention or
issue reference is live there), with a zero-width joiner after every ``@`` and ``<`` so
even a raw read of the body holds no mention, tag or ``<!--`` (the sticky comment's
marker cannot be forged), and ``|`` escaped so a table cell cannot be split.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from toolreplay.findings import one_line
from toolreplay.report.kinds import kind_info

if TYPE_CHECKING:
    from toolreplay.report import Report

#: Longest untrusted text shown in one cell; the full text is in the text and JSON reports.
MAX_CELL = 400
ZWJ = "\u200d"
_SAFE_WORD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.-]*$")
_BACKTICKS = re.compile(r"`+")


def defuse(text: str) -> str:
    """Break ``@name`` mentions and ``<`` tags or comments with a zero-width joiner."""
    return text.replace("@", "@" + ZWJ).replace("<", "<" + ZWJ)


def md_code(text: str, *, in_table: bool = True, max_len: int = MAX_CELL) -> str:
    """Untrusted text as an inert inline code span (one line, backtick-safe fence)."""
    body = one_line(text)
    if len(body) > max_len:
        body = body[: max_len - 1] + "…"
    body = defuse(body)
    if in_table:
        # GFM splits table cells before it parses code spans; an escaped pipe stays in the cell
        body = body.replace("|", "\\|")
    if not body:
        return "` `"
    longest = max((len(run) for run in _BACKTICKS.findall(body)), default=0)
    fence = "`" * (longest + 1)
    if body[0] in "` " or body[-1] in "` ":
        body = f" {body} "
    return f"{fence}{body}{fence}"


def _word(text: str) -> str:
    """Our own labels (kinds, header keys, commands) as plain text when they are plain words."""
    return text if _SAFE_WORD.match(text) else md_code(text)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _pairs(report: Report, lead: str = "") -> str:
    """The header lines as ``key: `value` · ...`` (values may carry untrusted text)."""
    if not report.header:
        return ""
    return lead + " · ".join(
        f"{_word(line.key)}: {md_code(line.text, in_table=False)}" for line in report.header
    )


def _rows(report: Report) -> list[str]:
    rows = []
    for f in report.findings:
        line = str(f.line) if f.line else ""
        level = kind_info(f.kind).level
        index = "" if f.index is None else f.index
        rows.append(f"| {index} | {line} | {level} | {_word(f.kind)} | {md_code(f.text)} |")
    for error in report.errors:
        rows.append(f"| | | error | {_word('report-error')} | {md_code(error)} |")
    return rows


def _render(reports: Sequence[Report], keep: int | None) -> str:
    findings = sum(len(r.findings) for r in reports)
    errors = sum(len(r.errors) for r in reports)
    failed = [r for r in reports if r.failed]
    clean = [r for r in reports if not r.failed]
    # a file can have two reports (a baseline's check and its drift-note rule): count it once
    files = len({r.path for r in reports})
    out = ["### toolreplay report", ""]
    if failed:
        what = _plural(findings, "finding")
        if errors:
            what += f" and {_plural(errors, 'error')}"
        out.append(f"**{what}** in {len({r.path for r in failed})} of {_plural(files, 'file')}.")
    else:
        out.append(f"No findings in {_plural(files, 'file')}.")
    budget = keep
    hidden_rows = 0
    hidden_files = 0
    for report in failed:
        rows = _rows(report)
        if budget is not None and budget <= 0:
            hidden_rows += len(rows)
            hidden_files += 1
            continue
        if budget is not None:
            hidden_rows += max(0, len(rows) - budget)
            rows = rows[:budget]
            budget -= len(rows)
        out += ["", f"#### {md_code(report.path, in_table=False)} ({_word(report.command)})"]
        if report.header:
            out += ["", _pairs(report)]
        out += ["", "| index | line | level | kind | message |", "| ---: | ---: | --- | --- | --- |", *rows]
    if clean and (budget is None or budget > 0):
        out += ["", f"<details><summary>{_plural(len(clean), 'file')} without findings</summary>", ""]
        out += [f"- {md_code(r.path, in_table=False)} ({_word(r.command)}){_pairs(r, ': ')}" for r in clean]
        out += ["", "</details>"]
    elif clean:
        hidden_files += len(clean)
    if hidden_rows or hidden_files:
        parts = [_plural(hidden_rows, "row")] if hidden_rows else []
        parts += [_plural(hidden_files, "further file")] if hidden_files else []
        what = " and ".join(parts)
        out += [
            "",
            f"> Trimmed to fit GitHub's size limit: {what} not shown. "
            "The text, JSON and SARIF reports hold everything.",
        ]
    return "\n".join(out) + "\n"


def render_markdown(
    reports: Sequence[Report], *, limit: int | None = None, size: Callable[[str], int] = len
) -> str:
    """The Markdown report; with ``limit``, trimmed (with a note) so ``size(result) <= limit``.

    Rows are kept in report order, as many as fit; ``size`` measures characters by
    default (a PR comment's limit) or bytes (``lambda s: len(s.encode())``, the summary's).
    """
    full = _render(reports, None)
    if limit is None or size(full) <= limit:
        return full
    total = sum(len(r.findings) + len(r.errors) for r in reports)
    lo, hi = 0, total  # the largest keep whose rendering fits
    if size(_render(reports, 0)) > limit:
        note = (
            "### toolreplay report\n\n"
            "> The report is too large to show here; see the text, JSON or SARIF report.\n"
        )
        return note if size(note) <= limit else ""
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if size(_render(reports, mid)) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return _render(reports, lo)
