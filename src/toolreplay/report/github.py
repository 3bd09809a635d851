"""The ``github`` format: workflow-command annotations, then the text report, all inert."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from toolreplay.escape import inert
from toolreplay.github.annotations import plan_annotations
from toolreplay.report.text import render_text

if TYPE_CHECKING:
    from toolreplay.reports import CheckInfo, Report


def render_github(reports: Sequence[Report], *, check: CheckInfo | None = None) -> str:
    """Annotations for the best-ranked findings, a note on what GitHub's caps left out,
    and the plain text report. Only the annotation lines start a workflow command."""
    # imported here: toolreplay.github.annotations itself imports from this package

    plan = plan_annotations(reports)
    lines = [a.command() for a in plan.shown]
    note = plan.note()
    if note:
        lines.append(inert(note))
    out = "\n".join(lines) + "\n" if lines else ""
    return out + inert(render_text(reports))
