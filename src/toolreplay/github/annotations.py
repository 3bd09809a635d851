"""GitHub workflow commands: inert output lines and ranked annotations.

The escaping itself (why a printed line is safe) is :mod:`toolreplay.escape`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from toolreplay.escape import inert, workflow_command
from toolreplay.kinds import KIND_ORDER, REPORT_ERROR, Level, kind_info
from toolreplay.report.paths import repo_relative

if TYPE_CHECKING:
    from toolreplay.findings import Finding, Report

#: GitHub shows at most this many annotations of one type (error, warning, notice) per step ...
PER_STEP_LIMIT = 10
#: ... and at most this many per job.
PER_JOB_LIMIT = 50

_KIND_RANK = {kind: rank for rank, kind in enumerate(KIND_ORDER)}


def echo(text: str, *, err: bool = False) -> None:
    """Print untrusted text in a workflow step's log (stdout or stderr) through :func:`inert`."""
    click.echo(inert(text), err=err)


@dataclass(frozen=True, slots=True, kw_only=True)
class Annotation:
    """A finding as GitHub shows it on a file's line."""

    level: Level
    kind: str
    path: str
    line: int | None
    index: int | None
    message: str

    def sort_key(self) -> tuple[int, int, str, int, str]:
        info = kind_info(self.kind)
        return (
            info.rank,
            _KIND_RANK.get(self.kind, len(_KIND_RANK)),
            self.path,
            -1 if self.index is None else self.index,
            self.message,
        )

    def command(self, *, root: str | None = None) -> str:
        where = repo_relative(self.path, root) if self.path else None
        text = self._text(placed=where is not None)
        return workflow_command(
            self.level,
            text,
            file=where,
            line=self.line if where else None,
            title=f"toolreplay {self.kind}",
        )

    def _text(self, *, placed: bool) -> str:
        """The message, after the call's index; a file outside the repository (GitHub cannot
        place it) is named in the text."""
        text = self.message if self.index is None else f"index {self.index}: {self.message}"
        if placed or not self.path:
            return text
        return f"{self.path}{f':{self.line}' if self.line else ''}: {text}"


@dataclass(frozen=True, slots=True, kw_only=True)
class AnnotationPlan:
    """The annotations to emit, best first, and how many GitHub's caps leave out."""

    shown: tuple[Annotation, ...]
    left_out: int

    @property
    def total(self) -> int:
        return len(self.shown) + self.left_out

    def note(self) -> str | None:
        """The plain line that says what was left out, or None when nothing was."""
        if not self.left_out:
            return None
        return (
            f"toolreplay: {self.left_out} of {self.total} findings are not shown as annotations "
            f"(GitHub shows at most {PER_STEP_LIMIT} errors and {PER_STEP_LIMIT} warnings per step); "
            "the report below and the job summary list all of them"
        )


def _finding_annotation(report: Report, f: Finding, level: Level) -> Annotation:
    """A finding's annotation, on its own file (else the report's) and line, if any."""
    return Annotation(
        level=level,
        kind=f.kind,
        path=f.path or report.path,
        line=f.line or None,
        index=f.index,
        message=f.text,
    )


def collect_annotations(
    reports: Sequence[Report], *, level: Callable[[str], Level] | None = None
) -> list[Annotation]:
    """Every finding and every file-level error of ``reports`` as an annotation.

    ``level`` overrides the kind table's level (the Action shows findings that do not fail
    the build as warnings).
    """
    level_of = level or (lambda kind: kind_info(kind).level)
    out: list[Annotation] = []
    for report in reports:
        out += [_finding_annotation(report, f, level_of(f.kind)) for f in report.findings]
        for error in report.errors:
            out.append(
                Annotation(
                    level=level_of(REPORT_ERROR),
                    kind=REPORT_ERROR,
                    path=report.path,
                    line=None,
                    index=None,
                    message=error,
                )
            )
    return out


def plan_annotations(
    reports: Sequence[Report],
    *,
    per_step: int = PER_STEP_LIMIT,
    per_job: int = PER_JOB_LIMIT,
    level: Callable[[str], Level] | None = None,
) -> AnnotationPlan:
    """Rank the annotations (contract breaks, then non-determinism, then redundancy) and
    keep as many of each level as GitHub will show."""
    ranked = sorted(collect_annotations(reports, level=level), key=Annotation.sort_key)
    used: dict[str, int] = {}
    shown: list[Annotation] = []
    for a in ranked:
        if len(shown) < per_job and used.get(a.level, 0) < per_step:
            used[a.level] = used.get(a.level, 0) + 1
            shown.append(a)
    return AnnotationPlan(shown=tuple(shown), left_out=len(ranked) - len(shown))
