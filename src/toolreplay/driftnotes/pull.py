"""The drift-note rule over a pull request's own diff, as findings (the hooks can be skipped).

The pre-commit guard (:mod:`toolreplay.driftnotes.guard`) judges one commit; here the same
rule is judged over ``base...head`` (:func:`~toolreplay.driftnotes.guard.check_range`)
with the baselines and the notes folder of the base commit's configuration, and every refusal becomes a
finding on the file it is about, so it shows up as an annotation, in the job summary and
in the PR comment like any other finding.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from toolreplay.analyses.judging import Judging, judging_of
from toolreplay.config import Config
from toolreplay.driftnotes.base_settings import PullRange, base_decides, config_prefix, judged_config
from toolreplay.driftnotes.changes import BaselineChange
from toolreplay.driftnotes.guard import (
    GuardResult,
    Problem,
    check_range,
    existing_notes,
    note_command,
    note_name,
    unguarded_warning,
)
from toolreplay.driftnotes.review import commits, lock_change, review_of
from toolreplay.driftnotes.settings import (
    GuardSettings,
    judged_files,
    judged_patterns,
    recorded_config,
    settings_change,
    settings_of,
)
from toolreplay.errors import InputError
from toolreplay.escape import one_line, quote
from toolreplay.findings import Finding, Line, Report, Review
from toolreplay.git import Git, GitError, check_revision
from toolreplay.kinds import (
    DRIFT_GUARD_CHANGED,
    DRIFT_NOTE_UNCHECKED,
    GUARD_KINDS,
    INVALID_DRIFT_NOTE,
    MISSING_DRIFT_NOTE,
    UNGUARDED_SEALED_FILE,
)
from toolreplay.volatile_rules import Rule

COMMAND = "drift-note"


@dataclass(frozen=True, slots=True, kw_only=True)
class DriftOutcome:
    """The reports to add to the run, and one plain line saying what was checked."""

    reports: tuple[Report, ...]
    status: str


def check_pull_request(config: Config, pull: PullRange | None, *, workspace: str) -> DriftOutcome:
    """Judge the pull request's change of the baselines; findings for what fails.

    The range is judged with the base commit's configuration (the one in the same folder
    as ``config``; the hook's defaults when the base has none), so a pull request cannot
    change what counts as a baseline for itself; a change of those settings is reported.
    """
    if pull is None:
        return _outside_pull_request(config)
    config_file = _relative(Path(config.source).resolve(), workspace)
    try:
        return _judge_range(config, pull, workspace, config_file)
    except _Unchecked as err:
        return _unchecked(config_file, str(err))


class _Unchecked(Exception):
    """A step of judging the range could not be taken; the message says why."""


@contextmanager
def _or_unchecked(what: str, *errors: type[Exception]) -> Iterator[None]:
    """``errors`` inside the block leave the rule unchecked: ``what``, then the error."""
    try:
        yield
    except errors as err:
        raise _Unchecked(f"{what}: {err}") from err


def _judge_range(config: Config, pull: PullRange, workspace: str, config_file: str) -> DriftOutcome:
    """The rule over ``pull``'s range with the base commit's settings (``_Unchecked`` when a step fails)."""
    git = Git(cwd=workspace)
    span = f"{pull.base[:12]}...{pull.head[:12]}"
    with _or_unchecked(f"git cannot compare {span}", GitError):
        top = git.top()
        for rev in (pull.base, pull.head):
            git.run("cat-file", "-e", f"{check_revision(rev)}^{{commit}}")
        span_commits = commits(git, pull.base, pull.head)
    prefix = config_prefix(config, top)
    if prefix is None:
        raise _Unchecked("the configuration lies outside the git work tree")
    with _or_unchecked("the base commit's configuration cannot be read", InputError, GitError):
        recorded = recorded_config(Git(cwd=top), pull.base, prefix, name=pull.base[:12])
    base_source = _base_source(recorded, pull, prefix)
    before = settings_of(recorded, prefix=prefix, source=base_source, default=recorded is None)
    after = settings_of(config, prefix=prefix, source=f"{config_file} (this pull request)", default=False)
    warnings = _settings_findings(before, after, recorded, config, config_file)
    # every file this configuration's check reads as a baseline is judged: the head may add patterns
    patterns = judged_patterns(before, after)
    if not patterns and not judged_files(before, after):
        return DriftOutcome(
            reports=_warning_reports(warnings, span_commits),
            status=f"drift notes: no baselines configured in {base_source}, nothing to check",
        )
    files = judged_files(before, after)
    with _or_unchecked(f"git could not diff {span}", GitError):
        result = check_range(
            git, pull.base, pull.head, patterns=patterns, notes_dir=before.notes_dir, files=files
        )
    where = partial(_in_workspace, top, workspace)
    warnings += _unguarded(result, patterns, where)
    with _or_unchecked(f"git could not read {span}", GitError):
        taken = existing_notes(git, before.notes_dir, [pull.head]) if result.problems else frozenset()
    context = _Context(
        where=where, notes_dir=before.notes_dir, base=pull.base, commits=span_commits, taken=taken, git=git
    )
    judging = _review_judging(config, pull, workspace) if result.changes else Judging()
    reports = _reports(result, context, judging=judging)
    reports += list(_warning_reports(warnings, span_commits))
    status = _range_status(result, span) + _judged_with(warnings, base_source)
    return DriftOutcome(reports=tuple(sorted(reports, key=lambda r: r.path)), status=status)


def _review_judging(config: Config, pull: PullRange, workspace: str) -> Judging:
    """What a changed baseline's two versions are compared with: what ``check`` judges the range
    with (the base commit's rules, mutators and lock), its contract drift explained by the lock's
    change."""
    judged = judged_config(config, pull, workspace=workspace, tree=False).config
    return judging_of(judged, explain=lock_change(config, pull.base))


def _base_source(recorded: Config | None, pull: PullRange, prefix: str) -> str:
    """Where the range's settings come from: the base commit's configuration, or the defaults."""
    if recorded is not None:
        return recorded.source
    folder = f"{prefix}/" if prefix else ""
    return f"the defaults (none in {pull.base[:12]}:{folder})"


def _in_workspace(top: str, workspace: str, path: str) -> str:
    """A path from the repository root, as the workspace names it."""
    return _relative(Path(top, path), workspace)


def _unguarded(result: GuardResult, patterns: Sequence[str], where: Callable[[str], str]) -> list[Finding]:
    """A finding for each sealed file the range changes that no baseline pattern covers."""
    return [
        Finding(
            kind=UNGUARDED_SEALED_FILE,
            index=None,
            tool="",
            path=where(path),
            message=one_line(unguarded_warning(path, patterns)),
        )
        for path in result.unguarded
    ]


def _judged_with(warnings: Sequence[Finding], base_source: str) -> str:
    """The status's note that the pull request changes the settings the range is judged with."""
    if not any(f.kind == DRIFT_GUARD_CHANGED for f in warnings):
        return ""
    return f" (judged with the settings of {base_source}; this pull request changes them)"


def _outside_pull_request(config: Config) -> DriftOutcome:
    """No range to judge: the run is not a pull request's."""
    if not config.baselines:
        return DriftOutcome(reports=(), status="drift notes: no baselines configured, nothing to check")
    return DriftOutcome(
        reports=(), status="drift notes: not a pull request, so there is no base...head range to check"
    )


def _range_status(result: GuardResult, span: str) -> str:
    if result.problems:
        return f"drift notes: {len(result.problems)} problem(s) in {span}, see the findings"
    if result.changes:
        return f"drift notes: every baseline change in {span} has its note"
    return f"drift notes: no sealed baseline changes in {span}"


def _volatile_change(base: Config | None, head: Config) -> list[str]:
    """The volatile rules a pull request adds or changes (a removed rule only compares more)."""
    kept = set(base.volatile) if base is not None else set()
    added = [(n, rule) for n, rule in enumerate(head.volatile) if rule not in kept]
    if not added:
        return []
    shown = ", ".join(_rule_text(n, rule) for n, rule in added)
    return [
        f"volatile: this pull request adds or widens {shown}; what a rule masks is never compared"
        " (over this range the base's rules are used)"
    ]


def _rule_text(n: int, rule: Rule) -> str:
    """A volatile rule by its number in the configuration, its tool, where and what it masks."""
    what = f"pattern {quote(rule.pattern)}" if rule.pattern is not None else "the whole value"
    return f"rule {n + 1} (tool {quote(rule.tool)}, at {quote(rule.at)}, {what})"


def _settings_findings(
    before: GuardSettings, after: GuardSettings, base: Config | None, head: Config, config_file: str
) -> list[Finding]:
    """A finding when the pull request changes the guard's settings or whether its findings fail."""
    parts = []
    change = settings_change(before, after)
    if change is not None:
        parts.append(change)
    parts += _code_settings_change(base, head)
    parts += _volatile_change(base, head)
    parts += _fail_on_change(base, head)
    if not parts:
        return []
    return [
        Finding(
            kind=DRIFT_GUARD_CHANGED,
            index=None,
            tool="",
            path=config_file,
            message=one_line("; ".join(parts)),
        )
    ]


def _fail_on_change(base: Config | None, head: Config) -> list[str]:
    """The guard's kinds whose failing the pull request's configuration changes."""
    was = base_decides(base)
    parts = []
    for kind in GUARD_KINDS:
        if was[kind] != head.fails(kind):
            now = "fail the build" if head.fails(kind) else "no longer fail the build"
            parts.append(
                f"fail_on: {kind} findings {now} with this pull request's configuration"
                " (over this range they fail as the base's configuration says)"
            )
    return parts


#: settings that name the code check runs (in a child process), and the lock its tools are held to
CODE_KEYS = {
    "tools_source": "the code check runs, in a child process",
    "tools_lock": "the lock check holds the tools to",
}


def _code_settings_change(base: Config | None, head: Config) -> list[str]:
    """A pull request that adds or changes tools_source or tools_lock: reviewers see it."""
    parts = []
    for key, what in CODE_KEYS.items():
        was, now = (getattr(base, key) if base is not None else None), getattr(head, key)
        if was != now:
            parts.append(f"{key} {_setting(was)} -> {_setting(now)} ({what})")
    return parts


def _setting(value: str | tuple[str, ...] | None) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, str):
        return quote(value)
    return "[" + ", ".join(quote(v) for v in value) + "]"


def _warning_reports(findings: Sequence[Finding], span: tuple[str, str]) -> tuple[Report, ...]:
    """A report per warning; a change of the guard's settings with both commits (the comment links
    the configuration as it was and as the pull request has it)."""
    return tuple(
        Report(
            command=COMMAND,
            path=f.path,
            findings=(f,),
            review=Review(base=span[0], head=span[1]) if f.kind == DRIFT_GUARD_CHANGED else None,
        )
        for f in findings
    )


def _relative(path: Path, workspace: str) -> str:
    rel = os.path.relpath(path, os.path.realpath(workspace))
    return Path(rel).as_posix()


def _unchecked(config_file: str, reason: str) -> DriftOutcome:
    finding = Finding(
        kind=DRIFT_NOTE_UNCHECKED,
        index=None,
        tool="",
        path=config_file,
        message=one_line(f"the drift-note rule was not checked: {reason}"),
    )
    report = Report(command=COMMAND, path=config_file, findings=(finding,))
    return DriftOutcome(reports=(report,), status="drift notes: NOT checked (see the finding)")


def _message(problem: Problem, notes_dir: str, command: str | None = None) -> str:
    """The guard's refusal as one line for a pull request.

    The heads are left out (the report's header carries them), and the hook's advice to
    stage the note "in this same commit" becomes adding it to the pull request; ``command``
    replaces the hook's (which measures from HEAD) with one that works from the pull request's head.
    """
    details = [line.strip() for line in problem.lines if not line.startswith(_HOOK_ADVICE)]
    if any(line.startswith("fix it, or unstage it") for line in problem.lines):
        details.append("fix it in this pull request")
    details += _write_note(problem, notes_dir, command)
    return one_line(f"{problem.subject}: {'; '.join(details)}")


#: the hook's lines a pull request's message leaves out or says its own way
_HOOK_ADVICE = ("from:", "to:", "then explain", "write the note:", "fix it, or unstage it")


def _write_note(problem: Problem, notes_dir: str, command: str | None) -> list[str]:
    """The hook's advice to write a note (with ``command`` instead, when given), for a pull request."""
    writes = [line for line in problem.lines if line.startswith("write the note:")]
    if not writes:
        return []
    if command is not None:
        writes = [f"write the note: {command}"]
    return [*writes, f"then explain the drift in it and add it under {notes_dir}/ in this pull request"]


def _accepted_by(result: GuardResult, baseline: str) -> str:
    """``accepted by 'drift-notes/x.md'``: the note (or notes, chained over a range) that accept it."""
    notes = " and ".join(quote(n.path) for n in result.notes if n.baseline == baseline)
    return f"accepted by {notes}" if notes else "accepted"


@dataclass(frozen=True, slots=True, kw_only=True)
class _Context:
    """What the reports of a range need beside the guard's result."""

    where: Callable[[str], str]
    notes_dir: str
    #: the base as given (what the printed commands name) and the two commits (merge base, head)
    base: str
    commits: tuple[str, str]
    #: the note files that exist at the head, from the repository root
    taken: frozenset[str]
    git: Git


def _reports(result: GuardResult, context: _Context, *, judging: Judging) -> list[Report]:
    """One report per changed baseline (with its finding when no note accepts it) and per bad note."""
    problems = {p.baseline: p for p in result.problems if p.baseline is not None}
    reports = [
        _change_report(change, problems.get(change.baseline), result, context, judging=judging)
        for change in result.changes
    ]
    reports += [_invalid_note(problem, context) for problem in result.problems if problem.baseline is None]
    return reports


def _invalid_note(problem: Problem, context: _Context) -> Report:
    """The report of a note that is not valid (on the note's file)."""
    path = context.where(problem.note) if problem.note else ""
    finding = Finding(
        kind=INVALID_DRIFT_NOTE, index=None, tool="", path=path, message=_message(problem, context.notes_dir)
    )
    return Report(command=COMMAND, path=path or quote(problem.subject), findings=(finding,))


def _change_report(
    change: BaselineChange,
    problem: Problem | None,
    result: GuardResult,
    context: _Context,
    *,
    judging: Judging,
) -> Report:
    """A changed baseline's report: the change, its finding and a note name that is free when no
    note accepts it, and the change as a reviewer approves it."""
    path = context.where(change.baseline)
    findings: tuple[Finding, ...] = ()
    note = None
    if problem is not None:
        note = context.where(note_name(change.baseline, context.notes_dir, context.taken))
        findings = (_missing(change, problem, context, path),)
    header = (
        Line(key="change", value=change.action, text=one_line(change.action)),
        Line(key="from", value=change.from_head, text=change.from_head),
        Line(key="to", value=change.to_head, text=change.to_head or "none"),
        Line(
            key="note",
            value="missing" if problem else "accepted",
            text="missing" if problem else _accepted_by(result, change.baseline),
        ),
    )
    review = _review(change, result, context, judging=judging)
    return Report(command=COMMAND, path=path, header=header, findings=findings, note=note, review=review)


def _missing(change: BaselineChange, problem: Problem, context: _Context, path: str) -> Finding:
    """The finding of a change no note accepts, with the command that writes a free note."""
    command = note_command(change.baseline, context.notes_dir, context.taken, base=context.base)
    message = _message(problem, context.notes_dir, command)
    return Finding(kind=MISSING_DRIFT_NOTE, index=None, tool="", path=path, message=message)


def _review(
    change: BaselineChange,
    result: GuardResult,
    context: _Context,
    *,
    judging: Judging,
) -> Review | None:
    """The change as a reviewer approves it; None for a change no note can accept."""
    if change.refused is not None or change.broken is not None or change.kind != "baseline":
        return None
    start, end = context.commits
    review = review_of(context.git, change, result, base=start, head=end, judging=judging)
    return replace(review, note=None if review.note is None else context.where(review.note))
