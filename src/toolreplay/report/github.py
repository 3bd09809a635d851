"""The ``github`` format: workflow-command annotations, then the text report, all inert."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from toolreplay.escape import inert
from toolreplay.findings import gate_of
from toolreplay.github.annotations import plan_annotations
from toolreplay.kinds import gated_level
from toolreplay.report.text import render_text

if TYPE_CHECKING:
    from toolreplay.findings import CheckInfo, Report


def render_github(
    reports: Sequence[Report], *, check: CheckInfo | None = None, fails: Callable[[str], bool] | None = None
) -> str:
    """Annotations for the best-ranked findings, a note on what GitHub's caps left out,
    and the plain text report. Only the annotation lines start a workflow command.

    A finding of a kind that does not fail the run (``fails``, else the check's fail_on) is a
    ``::warning``, whatever its kind's level: an ``::error`` always means the run failed."""
    gate = gate_of(check, fails)
    plan = plan_annotations(reports, level=lambda kind: gated_level(kind, gate))
    lines = [a.command() for a in plan.shown]
    note = plan.note()
    if note:
        lines.append(inert(note))
    out = "\n".join(lines) + "\n" if lines else ""
    return out + inert(render_text(reports))
