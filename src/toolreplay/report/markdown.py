"""The ``markdown`` format: the job summary and PR comment body, a table per file.

Everything that comes from a transcript, a path or a message is untrusted and goes
through :func:`md_code`: one line, inside a code span (no Markdown, HTML, @-mention or
issue reference is live there), with a zero-width joiner after every ``@`` and ``<`` so
even a raw read of the body holds no mention, tag or ``<!--`` (the sticky comment's
marker cannot be forged), and ``|`` escaped so a table cell cannot be split.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING

from toolreplay.escape import one_line, quote
from toolreplay.findings import Finding
from toolreplay.kinds import (
    DRIFT_GUARD_CHANGED,
    KIND_ORDER,
    MISSING_DRIFT_NOTE,
    REPORT_ERROR,
    gated_level,
)
from toolreplay.report.inert import MAX_CELL, defuse, md_code
from toolreplay.report.links import Links, link_to, linked, links_from_env
from toolreplay.report.review import (
    OPEN_CHANGES,
    View,
    accept_block,
    change_item,
    guard_block,
    is_guard_change,
    more_line,
    review_block,
)

if TYPE_CHECKING:
    from toolreplay.findings import CheckInfo, Report

_SAFE_WORD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.-]*$")


def _word(text: str) -> str:
    """Our own labels (kinds, header keys, commands) as plain text when they are plain words."""
    return text if _SAFE_WORD.match(text) else md_code(text)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def html_text(text: str, *, max_len: int = MAX_CELL) -> str:
    """Untrusted text inside our own HTML (a ``<summary>``): one line, escaped, no mention."""
    body = one_line(text)
    if len(body) > max_len:
        body = body[: max_len - 1] + "…"
    return html.escape(defuse(body), quote=True)


#: with more failing files than this, their blocks start folded
OPEN_BLOCKS = 3


def _pairs(report: Report, lead: str = "") -> str:
    """The header lines as ``key: `value` · ...`` (values may carry untrusted text)."""
    if not report.header:
        return ""
    return lead + " · ".join(
        f"{_word(line.key)}: {md_code(line.text, in_table=False)}" for line in report.header
    )


def _where(report: Report, f: Finding, links: Links | None) -> str:
    """Which file, record and line a finding is about; the line linked to the head commit."""
    file = f.path or report.path
    in_run = file != report.path
    parts = [f"run {md_code(file)}"] if in_run else []
    parts += _record_place(f, file, links)
    if in_run and f.related is not None:
        parts.append(f"baseline index {f.related}")
    if f.index is None and not f.line:
        # about the file as a whole (a drift note, a contract): link the file itself
        parts.append(linked("whole file", link_to(links, file)))
    return " · ".join(parts)


def _record_place(f: Finding, file: str, links: Links | None) -> list[str]:
    """The record's index and its line, linked to the head commit."""
    parts = [f"index {f.index}"] if f.index is not None else []
    if f.line:
        parts.append(linked(f"line {f.line}", link_to(links, file, f.line)))
    return parts


def _rows(
    report: Report,
    findings: Sequence[Finding],
    links: Links | None,
    cell: int | None,
    fails: Callable[[str], bool],
) -> list[str]:
    """One row per finding, at its level under the gate (an advisory kind is a warning); the same
    finding from several runs is one row naming the runs."""
    rows = []
    for group in _grouped(report, findings):
        f = group[0]
        level = gated_level(f.kind, fails)
        where = _group_where(report, group, links)
        text = _without_run(f) if len(group) > 1 else f.text
        rows.append(f"| {where} | {level} | {_word(f.kind)} | {md_code(text, max_len=cell)} |")
    return rows


def _group_where(report: Report, group: list[Finding], links: Links | None) -> str:
    """Where a group of findings is: :func:`_where` of the first, naming every run when there are several."""
    where = _where(report, group[0], links)
    if len(group) == 1:
        return where
    runs = ", ".join(md_code(g.path) for g in group)
    return f"runs {runs} · " + where.split(" · ", 1)[-1]


def _error_rows(report: Report, cell: int | None, fails: Callable[[str], bool]) -> list[str]:
    """A row per error of the report (a file that could not be read), at its level under the gate."""
    level = gated_level(REPORT_ERROR, fails)
    return [
        f"| | {level} | {_word(REPORT_ERROR)} | {md_code(error, max_len=cell)} |" for error in report.errors
    ]


def _without_run(f: Finding) -> str:
    """A diff finding's message without its ``in run '...': `` lead (several runs share it)."""
    lead = f"in run {quote(f.path)}: "
    return f.text.removeprefix(lead)


def _grouped(report: Report, findings: Sequence[Finding]) -> list[list[Finding]]:
    """Findings that differ only in the run they are about, together (in report order)."""
    groups: dict[tuple[object, ...], list[Finding]] = {}
    for f in findings:
        run = f.path and f.path != report.path
        key = (f.kind, f.index, f.related, f.tool, _without_run(f), f.change) if run else (id(f),)
        groups.setdefault(key, []).append(f)
    return list(groups.values())


def _changes(report: Report, findings: Sequence[Finding], links: Links | None, *, caps: bool) -> list[str]:
    """Drift side by side: at which JSON pointer, the baseline's value and the run's (a long value
    in a fenced block under its line, so nothing is wider than the page); with ``caps`` the first
    few, then how many more and in which tools."""
    changed = [group for group in _grouped(report, findings) if group[0].change is not None]
    if not changed:
        return []
    shown = changed[:OPEN_CHANGES] if caps else changed
    out = ["", "What changed, baseline → run:", ""]
    for group in shown:
        out += change_item(group[0], _group_where(report, group, links), message=False)
    return out + _more_changes(changed[len(shown) :])


def _more_changes(rest: list[list[Finding]]) -> list[str]:
    """How many more changes the caps left out, and in which tools (nothing when none)."""
    if not rest:
        return []
    return ["", more_line([group[0] for group in rest], "the table above says what each one changed.")]


def _verdict(reports: Sequence[Report], fails: Callable[[str], bool]) -> list[str]:
    """The verdict line and, when anything was found, the findings by kind."""
    counts = _kind_counts(reports)
    total = sum(counts.values())
    # a file can have two reports (a baseline's check and its drift-note rule): count it once
    files = _plural(len({r.path for r in reports}), "file")
    if not total:
        return [f"**Passes**: no findings in {files}."]
    return _found_verdict(reports, counts, fails, files)


def _found_verdict(
    reports: Sequence[Report], counts: dict[str, int], fails: Callable[[str], bool], files: str
) -> list[str]:
    """The verdict line when something was found, and the findings by kind."""
    failing = sum(n for kind, n in counts.items() if fails(kind))
    failed = len({r.path for r in reports if r.failed})
    verdict = _verdict_head(sum(counts.values()), failing)
    out = [f"{verdict}, in {failed} of {files} (by level: {_by_level(counts, fails)}).", ""]
    return out + _kind_table(counts, fails)


def _verdict_head(total: int, failing: int) -> str:
    """Whether the findings fail the build, and how many do."""
    if not failing:
        return f"**Passes**: {_plural(total, 'finding')}, none of a kind that fails the build"
    verdict = f"**Fails the build**: {_plural(failing, 'finding')} of kinds that fail it"
    rest = total - failing
    return verdict + f" ({_plural(rest, 'advisory finding')}, folded below)" if rest else verdict


def _by_level(counts: dict[str, int], fails: Callable[[str], bool]) -> str:
    """The findings counted by their level under the gate: ``N error, M warning`` (a level without
    findings left out)."""
    levels: Counter[str] = Counter()
    for kind, n in counts.items():
        levels[gated_level(kind, fails)] += n
    return ", ".join(f"{levels[level]} {level}" for level in ("error", "warning") if levels[level])


def _kind_counts(reports: Sequence[Report]) -> dict[str, int]:
    """How many findings of each kind (a report's errors as ``report-error``)."""
    counts: dict[str, int] = {}
    for r in reports:
        _count_kinds(r, counts)
    return counts


def _count_kinds(report: Report, counts: dict[str, int]) -> None:
    """Add one report's findings (and errors) to ``counts``, by kind."""
    for f in report.findings:
        counts[f.kind] = counts.get(f.kind, 0) + 1
    if report.errors:
        counts[REPORT_ERROR] = counts.get(REPORT_ERROR, 0) + len(report.errors)


def _kind_table(counts: dict[str, int], fails: Callable[[str], bool]) -> list[str]:
    """The findings by kind, in the kinds' fixed order."""
    order = {kind: n for n, kind in enumerate((*KIND_ORDER, REPORT_ERROR))}
    out = ["| kind | level | findings | fails the build |", "| --- | --- | ---: | --- |"]
    for kind in sorted(counts, key=lambda k: (order.get(k, len(order)), k)):
        gate = "yes" if fails(kind) else "no"
        out.append(f"| {_word(kind)} | {gated_level(kind, fails)} | {counts[kind]} | {gate} |")
    return out


def _render(
    reports: Sequence[Report],
    keep: int | None,
    fails: Callable[[str], bool],
    links: Links | None,
    view: View,
) -> str:
    """The whole report, with at most ``keep`` finding rows (all with None): the guard's settings
    changes first, then each baseline the pull request changes, then the files that fail the build,
    then those with advisory findings only (folded), then the clean ones."""
    out = ["### toolreplay report", "", *_verdict(reports, fails)]
    for report in reports:
        out += guard_block(report, view)
    out += _reviews(reports, view)
    failing, advisory = _failed_files(reports, fails)
    blocks, budget, hidden_rows = _finding_blocks((failing, advisory), keep, fails, links, view)
    out += blocks[0]
    out += _advisory_files(len(advisory), blocks[1])
    out += _clean_and_hidden(reports, budget, hidden_rows)
    return "\n".join(out) + "\n"


def _clean_and_hidden(reports: Sequence[Report], budget: int | None, hidden_rows: int) -> list[str]:
    """The clean files, when the rows left leave room for them, and what the size limit left out."""
    clean = [r for r in reports if not r.failed and r.review is None]
    if budget is None or budget > 0:
        return _clean_block(clean) + _hidden_note(hidden_rows, 0)
    return _hidden_note(hidden_rows, len(clean))


def _failed_files(
    reports: Sequence[Report], fails: Callable[[str], bool]
) -> tuple[list[Report], list[Report]]:
    """The failed files the sections above do not already show: those that fail the build, and those
    with advisory findings only."""
    shown = [r for r in reports if r.failed and not _told_above(r)]
    failing = [r for r in shown if _fails_build(r, fails)]
    return failing, [r for r in shown if r not in failing]


def _fails_build(report: Report, fails: Callable[[str], bool]) -> bool:
    return (bool(report.errors) and fails(REPORT_ERROR)) or any(fails(f.kind) for f in report.findings)


def _advisory_files(count: int, blocks: list[str]) -> list[str]:
    """The blocks of the files with advisory findings only, folded together."""
    if not blocks:
        return []
    summary = f"{_plural(count, 'file')} with advisory findings only (they do not fail the build)"
    return ["", f"<details><summary>{summary}</summary>", *blocks, "", "</details>"]


def _finding_blocks(
    groups: tuple[list[Report], list[Report]],
    keep: int | None,
    fails: Callable[[str], bool],
    links: Links | None,
    view: View,
) -> tuple[list[list[str]], int | None, int]:
    """The failing files' blocks and the advisory ones', within ``keep`` rows; (blocks, the rows
    left, the rows hidden)."""
    rows = _Rows(keep)
    opened = len(groups[0]) <= OPEN_BLOCKS
    accepted: set[str] = set()
    blocks: list[list[str]] = [[], []]
    for n, group in enumerate(groups):
        for report in group:
            findings = rows.take(report)
            if findings is None:
                continue
            block = _failed_block(report, findings, links, view, fails, opened=opened and n == 0)
            if report.path not in accepted:
                block[-2:-2] = accept_block(report, findings, view.base)
                accepted.add(report.path)
            blocks[n] += block
    return blocks, rows.left, rows.hidden


class _Rows:
    """The finding rows left to show (None: no limit), and how many were left out."""

    def __init__(self, keep: int | None) -> None:
        self.left = keep
        self.hidden = 0

    def take(self, report: Report) -> list[Finding] | None:
        """The report's findings that fit (its errors count as rows too); None when none is left."""
        findings = list(report.findings)
        if self.left is None:
            return findings
        count = len(findings) + len(report.errors)
        self.hidden += max(0, count - max(self.left, 0))
        if self.left <= 0:
            return None
        shown = findings[: self.left]
        self.left -= min(count, self.left)
        return shown


def _clean_block(clean: list[Report]) -> list[str]:
    if not clean:
        return []
    out = ["", f"<details><summary>{_plural(len(clean), 'file')} without findings</summary>", ""]
    out += [f"- {md_code(r.path, in_table=False)} ({_word(r.command)}){_pairs(r, ': ')}" for r in clean]
    return [*out, "", "</details>"]


def _told_above(report: Report) -> bool:
    """A report the guard and review sections already show whole (a settings change, a baseline
    change with at most its missing note)."""
    kinds = {f.kind for f in report.findings}
    if report.errors or not kinds:
        return False
    return kinds == {DRIFT_GUARD_CHANGED} or (report.review is not None and kinds == {MISSING_DRIFT_NOTE})


def _reviews(reports: Sequence[Report], view: View) -> list[str]:
    """Each baseline the pull request changes, accepted or not: the first few open."""
    reviewed = [r for r in reports if r.review is not None and not is_guard_change(r)]
    if not reviewed:
        return []
    out = ["", f"#### {_plural(len(reviewed), 'baseline')} changed by this pull request"]
    for n, report in enumerate(reviewed):
        out += _review(report, view, opened=n < OPEN_BLOCKS or not view.caps)
    return out


def _review(report: Report, view: View, *, opened: bool) -> list[str]:
    """A changed baseline's block, with its own findings and the commands that accept it."""
    assert report.review is not None
    block = review_block(report, report.review, view, opened=opened)
    extra = [f"- **{_word(f.kind)}**: {md_code(f.text, in_table=False)}" for f in report.findings]
    extra = ["", *extra] if extra else []
    block[-2:-2] = [*extra, *accept_block(report, report.findings, view.base)]
    return block


def _failed_block(
    report: Report,
    findings: Sequence[Finding],
    links: Links | None,
    view: View,
    fails: Callable[[str], bool],
    *,
    opened: bool,
) -> list[str]:
    """A file's folded block: its header, its findings' rows (the advisory ones folded below the
    failing ones), what changed and how to accept it."""
    what = ", ".join(
        _plural(n, word)
        for n, word in ((len(report.findings), "finding"), (len(report.errors), "error"))
        if n
    )
    cell = MAX_CELL if view.caps else None
    summary = f"<code>{html_text(report.path)}</code> ({html.escape(report.command)}): {what}"
    out = ["", f"<details{' open' if opened else ''}>", f"<summary>{summary}</summary>", ""]
    if report.header:
        out += [_pairs(report), ""]
    out += _finding_tables(report, findings, links, fails, cell)
    out += _changes(report, findings, links, caps=view.caps)
    return [*out, "", "</details>"]


def _finding_tables(
    report: Report,
    findings: Sequence[Finding],
    links: Links | None,
    fails: Callable[[str], bool],
    cell: int | None,
) -> list[str]:
    """The errors and the findings that fail the build in a table, the advisory ones in a table folded
    below it (not folded when they are all there is)."""
    rows, passing = _rows_by_level(report, findings, links, fails, cell)
    if not rows:
        return _table(passing)
    if not passing:
        return _table(rows)
    label = _plural(len(passing), "advisory finding") + " (they do not fail the build)"
    folded = ["", f"<details><summary>{label}</summary>", "", *_table(passing)]
    return [*_table(rows), *folded, "", "</details>"]


def _rows_by_level(
    report: Report,
    findings: Sequence[Finding],
    links: Links | None,
    fails: Callable[[str], bool],
    cell: int | None,
) -> tuple[list[str], list[str]]:
    """The rows of the errors and findings that fail the build, and those of the advisory ones."""
    failing = [f for f in findings if fails(f.kind)]
    advisory = [f for f in findings if not fails(f.kind)]
    errors = _error_rows(report, cell, fails)
    failing_errors, passing_errors = (errors, []) if fails(REPORT_ERROR) else ([], errors)
    rows = [*failing_errors, *_rows(report, failing, links, cell, fails)]
    return rows, [*passing_errors, *_rows(report, advisory, links, cell, fails)]


def _table(rows: list[str]) -> list[str]:
    """Finding rows under the table's head; nothing without rows."""
    if not rows:
        return []
    return ["| where | level | kind | message |", "| --- | --- | --- | --- |", *rows]


def _hidden_note(hidden_rows: int, hidden_files: int) -> list[str]:
    """What the size limit left out, if anything."""
    if not (hidden_rows or hidden_files):
        return []
    parts = [f"{hidden_rows} more findings"] if hidden_rows else []
    parts += [_plural(hidden_files, "more file") + " without findings"] if hidden_files else []
    return [
        "",
        f"{' and '.join(parts)} not shown here (GitHub's size limit). "
        "The text, JSON and SARIF reports hold everything.",
    ]


def render_markdown(
    reports: Sequence[Report],
    *,
    check: CheckInfo | None = None,
    fails: Callable[[str], bool] | None = None,
    environ: Mapping[str, str] | None = None,
    limit: int | None = None,
    size: Callable[[str], int] = len,
    base: str | None = None,
    caps: bool = True,
) -> str:
    """The Markdown report; with ``limit``, trimmed (with a note) so ``size(result) <= limit``.

    ``fails`` says which kinds fail the build (default: ``check``'s fail_on, else every
    kind); lines link to the head commit when ``environ`` (default: the process's) holds
    GitHub's ``GITHUB_SERVER_URL``, ``GITHUB_REPOSITORY`` and ``GITHUB_SHA``. Rows are kept
    in report order, as many as fit; ``size`` measures characters by default (a PR
    comment's limit) or bytes (``lambda s: len(s.encode())``, the summary's). ``base`` (default:
    ``check``'s) is the pull request's base, which the printed accept commands name; without
    ``caps`` (the job summary) long values, reasons and a baseline's changes are shown whole.
    """
    fails, base = _from_check(check, fails, base)
    links = links_from_env(environ)
    view = _view(links, base=base, caps=caps)
    render = partial(_render, reports, fails=fails, links=links, view=view)
    full = render(None)
    if limit is None or size(full) <= limit:
        return full
    return _fitted(render, sum(len(r.findings) + len(r.errors) for r in reports), limit, size)


def _from_check(
    check: CheckInfo | None, fails: Callable[[str], bool] | None, base: str | None
) -> tuple[Callable[[str], bool], str | None]:
    """``fails`` and ``base``, ``check``'s where not given (without either, every kind fails)."""
    if check is None:
        return fails or _every_kind, base
    return fails or check.fails, check.base if base is None else base


def _every_kind(kind: str) -> bool:
    return True


def _view(links: Links | None, *, base: str | None, caps: bool) -> View:
    if links is None:
        return View(base=base, caps=caps)
    return View(server=links.server, repository=links.repository, base=base, caps=caps)


def _fitted(render: Callable[[int], str], total: int, limit: int, size: Callable[[str], int]) -> str:
    """The rendering with the most of ``total`` finding rows whose size is within ``limit``; when not
    even the one without rows fits, a line saying the findings are left out (or nothing)."""
    if size(render(0)) > limit:
        note = (
            "### toolreplay report\n\n"
            f"{total} more findings not shown here (GitHub's size limit). "
            "The text, JSON and SARIF reports hold everything.\n"
        )
        return note if size(note) <= limit else ""
    lo, hi = 0, total  # the largest keep whose rendering fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if size(render(mid)) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return render(lo)
