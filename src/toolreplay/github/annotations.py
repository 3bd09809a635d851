"""GitHub workflow commands: escaping, inert output lines, and ranked annotations.

What the runner does with a step's output, and therefore what we escape:

* @actions/core (``packages/core/src/command.ts``) builds ``::name k=v,k=v::message``;
  ``escapeData`` replaces ``%`` -> ``%25``, ``\\r`` -> ``%0D``, ``\\n`` -> ``%0A``, and
  ``escapeProperty`` does the same plus ``:`` -> ``%3A`` and ``,`` -> ``%2C``
  (``toCommandValue`` first turns a non-string into JSON). GitHub's "Workflow commands for
  GitHub Actions" page documents the same percent-encoding. ``%`` goes first so an
  existing ``%0A`` in the text survives as text.
* actions/runner (``src/Runner.Common/ActionCommand.cs``, ``TryParseV2``) reads the output
  line by line, trims LEADING whitespace, and treats a line as a command when it then
  starts with ``::`` and the name up to the next ``::`` is a registered command. The legacy
  ``TryParse`` is tried too (``ActionCommandManager.TryProcessCommand``) and looks for
  ``##[name]`` ANYWHERE in the line, so that prefix is neutralised wherever it occurs.

So a line we print is safe when it holds no line break, does not start (after leading
whitespace) with ``::``, and contains no ``##[``. :func:`inert` makes any text so; only the
annotation commands built here start with ``::``, and their values are escaped.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from toolreplay.findings import KIND_ORDER
from toolreplay.report.kinds import REPORT_ERROR, Level, kind_info
from toolreplay.report.paths import repo_relative

if TYPE_CHECKING:
    from toolreplay.report import Report

#: GitHub shows at most this many annotations of one type (error, warning, notice) per step ...
PER_STEP_LIMIT = 10
#: ... and at most this many per job.
PER_JOB_LIMIT = 50

# Every boundary str.splitlines() knows, a superset of the runner's \r and \n: text is cut
# into lines wherever any reader of the log might see a new one.
_LINE_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_LEGACY_PREFIX = "##["
_KIND_RANK = {kind: rank for rank, kind in enumerate(KIND_ORDER)}


def escape_data(text: str) -> str:
    """Escape a command's message the way @actions/core's ``escapeData`` does."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a command property's value the way @actions/core's ``escapeProperty`` does."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _ignorable(ch: str) -> bool:
    # What the runner's TrimStart() drops, widened to every space, control and format
    # character so that no definition of "leading whitespace" can expose a "::".
    return ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf", "Zs", "Zl", "Zp")


def _lead(line: str) -> int:
    """How many leading characters a runner might trim from ``line``."""
    n = 0
    while n < len(line) and _ignorable(line[n]):
        n += 1
    return n


def starts_command(line: str) -> bool:
    """Would the runner (or its legacy parser) read this one line as a workflow command?"""
    return line[_lead(line) :].startswith("::") or _LEGACY_PREFIX in line


def _inert_line(line: str) -> str:
    line = line.replace(_LEGACY_PREFIX, "##%5B")
    lead = _lead(line)
    if line[lead:].startswith("::"):
        line = line[:lead] + "%3A" + line[lead + 1 :]
    return line


def inert(text: str) -> str:
    """Make untrusted text safe to print in a workflow step's log.

    Every line of the result (split at ``\\n``, ``\\r`` or any other line boundary) is a
    line of ``text`` that cannot start a workflow command: a leading ``::`` becomes
    ``%3A:`` and any ``##[`` becomes ``##%5B``. Line breaks are normalised to ``\\n``.
    Text that needs no change is returned as it is.
    """
    return "\n".join(_inert_line(line) for line in _LINE_BREAK.split(text))


def echo(text: str, *, err: bool = False) -> None:
    """Print untrusted text in a workflow step's log (stdout or stderr) through :func:`inert`."""
    click.echo(inert(text), err=err)


def workflow_command(
    command: str,
    message: str,
    *,
    file: str | None = None,
    line: int | None = None,
    title: str | None = None,
) -> str:
    """One workflow command line, every value escaped (``::error file=F,line=N,title=T::M``)."""
    props = []
    if file:
        props.append(f"file={escape_property(file)}")
    if line:
        props.append(f"line={line}")
    if title:
        props.append(f"title={escape_property(title)}")
    head = f"::{command} {','.join(props)}" if props else f"::{command}"
    # The message may hold "::" or "##[" as they are: the runner parses this line as our
    # command first (TryParseV2) and only tries the legacy "##[" form when that fails.
    return f"{head}::{escape_data(message)}"


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
        text = self.message if self.index is None else f"index {self.index}: {self.message}"
        if where is None and self.path:
            # outside the repository: GitHub cannot place it, so say where in the text
            text = f"{self.path}{f':{self.line}' if self.line else ''}: {text}"
        return workflow_command(
            self.level,
            text,
            file=where,
            line=self.line if where else None,
            title=f"toolreplay {self.kind}",
        )


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
        for f in report.findings:
            out.append(
                Annotation(
                    level=level_of(f.kind),
                    kind=f.kind,
                    path=f.path or report.path,
                    line=f.line or None,
                    index=f.index,
                    message=f.text,
                )
            )
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
