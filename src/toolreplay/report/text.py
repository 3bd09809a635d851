"""The plain text report (docs/spec.md §2.1, compatible with toolreplay 0.6)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from toolreplay.escape import inert, one_line

if TYPE_CHECKING:
    from toolreplay.findings import CheckInfo, Finding, Report


def render_text(
    reports: Sequence[Report], *, check: CheckInfo | None = None, fails: Callable[[str], bool] | None = None
) -> str:
    """Header lines, then one ``index N: kind: message`` line per finding.

    A finding about a tool contract rather than a call (no index) prints as
    ``TOOL: message``, e.g. ``search: schema (breaking): /properties/q/maxLength 500 -> 200``.

    With several files each block is preceded by ``== FILE`` so lines stay attributable.
    """
    blocks = [_block(report, named=len(reports) > 1) for report in reports]
    # printed in a workflow step's log, a planted "::" or "##[" must start nothing
    return inert("\n".join(blocks)) + "\n" if blocks else ""


def _block(report: Report, *, named: bool) -> str:
    """One file's lines: its name (``named``: one of several), header, findings and errors."""
    lines = [f"== {one_line(report.path)}"] if named else []
    lines.extend(f"{one_line(line.shown_label)}: {one_line(line.text)}" for line in report.header)
    lines.extend(_finding_line(f) for f in report.findings)
    lines.extend(one_line(error) for error in report.errors)
    return "\n".join(lines)


def _finding_line(f: Finding) -> str:
    """``index N: kind: message`` for a call, ``TOOL: message`` for a tool's contract."""
    if f.index is not None:
        return f"index {f.index}: {f.kind}: {one_line(f.message)}"
    return one_line(f.text) if f.tool else f"{f.kind}: {one_line(f.message)}"
