"""A baseline a pull request changes, as a reviewer approves it (docs/spec.md §1.6).

The PR comment shows, for each changed baseline, the note that accepts the change and what
differs between the base's version and the head's, as ``toolreplay diff`` finds it: the
git diff of a sealed file is canonical JSON nobody reads.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from toolreplay.analyses.baseline import diff_baseline
from toolreplay.analyses.fingerprint_diff import explain_drift
from toolreplay.analyses.judging import Judging
from toolreplay.canonical import decode
from toolreplay.chain import verify
from toolreplay.config import Config
from toolreplay.contracts.lock import load_lock, parse_lock
from toolreplay.driftnotes.changes import BaselineChange
from toolreplay.driftnotes.guard import GuardResult
from toolreplay.errors import InputError
from toolreplay.findings import Finding, Review, sort_findings
from toolreplay.git import Git, GitError
from toolreplay.transcript import Record, parse_links

if TYPE_CHECKING:
    from toolreplay.driftnotes.note import DriftNote

#: how :func:`~toolreplay.analyses.fingerprint_diff.explain_drift` leads what changed
SOURCE_LEAD = "the tool source differs from the lock: "
#: a note's reason longer than this is shortened in a review (the note itself holds all of it)
MAX_REASON = 600


def commits(git: Git, base: str, head: str) -> tuple[str, str]:
    """The commit a pull request starts from (the merge base, as ``base...head`` diffs) and its head."""
    start = git.run("merge-base", base, head).decode("ascii", "replace").strip()
    end = git.run("rev-parse", "--verify", "--quiet", f"{head}^{{commit}}").decode("ascii", "replace").strip()
    return start, end


def review_of(
    git: Git,
    change: BaselineChange,
    result: GuardResult,
    *,
    base: str,
    head: str,
    judging: Judging,
) -> Review:
    """The change to one baseline between ``base`` and ``head`` (commits), with the notes that accept it."""
    notes = [n for n in result.notes if n.baseline == change.baseline]
    return Review(
        base=base,
        head=head,
        note=" and ".join(n.path for n in notes) or None,
        reason=_reason(notes),
        kinds=_kinds(notes),
        changes=tuple(_changes(git, change, base=base, head=head, judging=judging)),
    )


def _kinds(notes: Sequence[DriftNote]) -> tuple[str, ...]:
    """The kinds the notes accept, sorted."""
    return tuple(sorted({k for n in notes for k in n.kinds}))


def _reason(notes: Sequence[DriftNote]) -> str:
    """The notes' reasons, one paragraph each, shortened past :data:`MAX_REASON`."""
    reason = "\n\n".join(n.prose.strip() for n in notes if n.prose.strip())
    if len(reason) > MAX_REASON:
        return reason[: MAX_REASON - 1] + "…"
    return reason


def _changes(
    git: Git,
    change: BaselineChange,
    *,
    base: str,
    head: str,
    judging: Judging,
) -> list[Finding]:
    """``diff`` of the head's baseline against the base's, judged as ``check`` judges the range;
    none for a new, deleted or broken one."""
    old = _records(git, base, change.baseline)
    new = _records(git, head, change.baseline)
    if old is None or new is None:
        return []
    result = diff_baseline(old, [(change.baseline, new)], judging)
    return sort_findings([f for run in result.runs for f in run.findings])


def _records(git: Git, rev: str, path: str) -> Sequence[Record] | None:
    """The records of ``path`` at ``rev``; None when it is not there or not an intact chain."""
    try:
        oid = git.file_oid(rev, path)
        if oid is None:
            return None
        links = list(parse_links(io.BytesIO(git.blob(oid)), f"{rev[:12]}:{path}"))
    except (GitError, InputError):
        return None
    if verify(links).broken:
        return None
    return [link.record for link in links]  # whole: the volatile rules mask their values


def lock_change(config: Config, base: str) -> dict[str, str]:
    """What changed per tool between the config's tools_lock where a pull request against ``base``
    starts and the lock as it is now, as ``fingerprint-diff`` words it (the explanation of a
    ``tool-drift`` whose old contract only the base's lock still holds). Empty without a lock, or
    when git or either lock cannot tell: an explanation is never a reason to fail."""
    if config.tools_lock is None:
        return {}
    lock = Path(config.root, config.tools_lock)
    try:
        git = Git(cwd=str(config.root))
        top = git.top()
        name = Path(os.path.relpath(os.path.realpath(lock), os.path.realpath(top))).as_posix()
        start = git.run("merge-base", base, "HEAD").decode("ascii", "replace").strip()
        oid = git.file_oid(start, name)
        if oid is None or name.startswith(".."):
            return {}
        before = parse_lock(decode(git.blob(oid), what="tool lock"), path=f"{start[:12]}:{name}")
        changed = explain_drift(before, load_lock(lock))
    except (GitError, InputError):
        return {}
    lead = f"the lock changed since {start[:12]}: "
    return {tool: lead + text.removeprefix(SOURCE_LEAD) for tool, text in changed.items()}
