"""The job summary: the Markdown report appended to ``$GITHUB_STEP_SUMMARY``."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from toolreplay.report.markdown import render_markdown

if TYPE_CHECKING:
    from toolreplay.findings import Report

#: GitHub refuses a step summary over 1 MiB (and then shows an error instead of it).
SUMMARY_LIMIT = 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryResult:
    """Where the summary went and how big it was; ``reason`` says why nothing was written."""

    written: bool
    path: str | None = None
    size: int = 0
    trimmed: bool = False
    reason: str = ""


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def _size(path: str) -> int:
    """The size of the summary file so far (0 before the first step writes it)."""
    try:
        return os.path.getsize(path)
    except FileNotFoundError:
        return 0


def write_summary(
    reports: Sequence[Report],
    *,
    path: str | None = None,
    environ: Mapping[str, str] | None = None,
    fails: Callable[[str], bool] | None = None,
    base: str | None = None,
) -> SummaryResult:
    """Append the report to the step summary, trimmed so the whole file stays under 1 MiB.

    Without ``path`` the file is ``$GITHUB_STEP_SUMMARY``; when there is none (not on
    GitHub Actions) nothing is written. Earlier content of the file counts against the limit.
    The summary has none of the comment's caps (long values, reasons and every change of a
    baseline shown whole); only the file's size limit trims it.
    """
    env = os.environ if environ is None else environ
    target = path or env.get("GITHUB_STEP_SUMMARY")
    if not target:
        return SummaryResult(written=False, reason="GITHUB_STEP_SUMMARY is not set")
    existing = _existing_size(target)
    if isinstance(existing, SummaryResult):
        return existing
    separator = "\n" if existing else ""
    budget = SUMMARY_LIMIT - existing - len(separator)
    text, trimmed = _rendered(reports, fails=fails, environ=env, base=base, budget=budget)
    if not text:
        return SummaryResult(written=False, path=target, reason="the summary file is already full")
    return _append(target, separator + text, trimmed=trimmed)


def _existing_size(target: str) -> int | SummaryResult:
    """The size of the summary file so far, or the result of a file that cannot be read."""
    try:
        return _size(target)
    except OSError as err:
        return SummaryResult(written=False, path=target, reason=f"cannot read it: {err.strerror}")


def _rendered(
    reports: Sequence[Report],
    *,
    fails: Callable[[str], bool] | None,
    environ: Mapping[str, str],
    base: str | None,
    budget: int,
) -> tuple[str, bool]:
    """The summary whole (none of the comment's caps), trimmed to ``budget`` bytes when it is
    longer; and whether it was trimmed."""
    full = render_markdown(reports, fails=fails, environ=environ, base=base, caps=False)
    if _utf8_len(full) <= budget:
        return full, False
    text = render_markdown(
        reports, fails=fails, environ=environ, limit=budget, size=_utf8_len, base=base, caps=False
    )
    return text, text != full


def _append(target: str, text: str, *, trimmed: bool) -> SummaryResult:
    try:
        with open(target, "a", encoding="utf-8", newline="\n") as out:
            out.write(text)
    except OSError as err:
        return SummaryResult(written=False, path=target, reason=f"cannot write it: {err.strerror}")
    return SummaryResult(written=True, path=target, size=_utf8_len(text), trimmed=trimmed)
