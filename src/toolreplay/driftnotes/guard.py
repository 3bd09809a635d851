"""The drift-note guard: no sealed baseline changes without a note accepting that exact change.

It looks at the change git is about to commit, never at the working tree: the entries
of ``git diff --cached --raw -z -M`` (run with the inherited environment, so a
temporary index that ``git commit PATH`` sets in ``GIT_INDEX_FILE`` is the one read),
and the blobs that diff names on each side (``git cat-file blob OID``). ``--raw``
carries the same status letters as ``--name-status`` plus the object id of both
sides, so the committed and the staged content are read by id, not looked up again
by a path that could be misparsed.

A baseline is a regular file whose path matches one of the patterns (``fnmatch`` on the
path from the repository root, where ``*`` also matches ``/``; ``driftnotes/settings.py`` makes
them from the configuration). A symlink or a submodule a pattern matches or reaches into is
refused whatever the note (git stores no file of this repository there). Each change of one is:

* added: ``from`` is the genesis value, ``to`` the staged head;
* modified (or its file type changed): ``from`` is the head committed at HEAD, ``to``
  the staged head;
* deleted: ``from`` is the committed head and the note has no ``to``;
* renamed: a deletion of the old path plus an addition of the new one, each judged
  on its own (so renaming a baseline to a name outside the patterns is a deletion).

The staged file must be an intact chain (no note can accept a broken one). The
committed head is the head of the committed chain's intact prefix, so a baseline that
was committed broken can still be repaired with a note. Every Markdown file staged
under the notes folder is parsed as a drift note and must be valid.

The same checks run over two commits (:func:`check_range`), for a CI job that
repeats the rule on a pull request's diff, since a local hook can be skipped.
"""

from __future__ import annotations

import os
import posixpath
import shlex
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from toolreplay.driftnotes.changes import (
    BaselineChange,
    baseline_changes,
    file_changes,
    genesis_head,
    is_baseline,
)
from toolreplay.errors import InputError
from toolreplay.escape import one_line, quote
from toolreplay.files import SEALED_SUFFIX, SESSION_SUFFIX
from toolreplay.git import (
    GITLINK,
    Entry,
    Git,
    GitError,
    check_revision,
    decode_path,
    parse_raw_diff,
)

# The chain and the reader are imported where a sealed file changed (_chain), YAML where a note
# is staged (staged_notes): most commits change neither, and the hook's start-up is paid on every commit.
if TYPE_CHECKING:
    from toolreplay.driftnotes.note import DriftNote

DEFAULT_BASELINES: tuple[str, ...] = (f"*{SEALED_SUFFIX}",)
DEFAULT_NOTES_DIR = "drift-notes"


@dataclass(frozen=True, slots=True, kw_only=True)
class Problem:
    """Why the commit is refused: one baseline change (or one bad note) and what to do."""

    subject: str
    lines: tuple[str, ...]
    baseline: str | None = None
    #: the drift note this problem is about (an invalid note), from the repository root
    note: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GuardResult:
    """What the guard saw and what it refuses; an empty ``problems`` lets the commit through."""

    changes: tuple[BaselineChange, ...]
    notes: tuple[DriftNote, ...]
    problems: tuple[Problem, ...]
    #: sealed transcripts (``*.sealed.jsonl``) added or changed outside the baseline patterns
    unguarded: tuple[str, ...] = ()


def is_note(path: str, notes_dir: str) -> bool:
    return path.startswith(notes_dir + "/") and path.endswith(".md")


def normalize_dir(notes_dir: str) -> str:
    folder = notes_dir.replace("\\", "/").strip("/")
    while folder.startswith("./"):
        folder = folder[2:]
    if not folder or folder == ".":
        raise InputError("the drift-notes folder must be a folder inside the repository, not its root")
    return folder


def staged_notes(git: Git, entries: Iterable[Entry], notes_dir: str) -> tuple[list[DriftNote], list[Problem]]:
    """Parse every Markdown file the entries add or change under the notes folder."""
    notes, problems = [], []
    for entry in entries:
        path = entry.new_path
        if path is None or entry.new_oid is None or not is_note(path, notes_dir):
            continue
        # here, not at the top: YAML (a third of the hook's imports) only for a commit with notes
        from toolreplay.driftnotes.note import parse_note

        try:
            notes.append(parse_note(git.blob(entry.new_oid), path))
        except InputError as err:
            problems.append(
                Problem(
                    subject=f"drift note {quote(path)} is not valid",
                    lines=(
                        one_line(str(err)),
                        "fix it, or unstage it: git restore --staged -- " + _shell(path),
                    ),
                    note=path,
                )
            )
    return notes, problems


def _shell(path: str) -> str:
    """The path as one shell word (printed escaped instead when it holds control characters)."""
    if path.isprintable():
        return shlex.quote(path)
    return quote(path)


def note_command(
    baseline: str, notes_dir: str | None = None, taken: Collection[str] = (), *, base: str | None = None
) -> str:
    """The command that writes the drift-note template for ``baseline`` (into ``notes_dir``;
    measured from where a pull request against ``base`` starts, when given).

    The proposed file is one that is not ``taken`` (an earlier note keeps its reasoning):
    ``NAME.md``, else ``NAME-2.md``, ``NAME-3.md`` ...
    """
    command = "toolreplay note " + _shell(baseline)
    if base is not None:
        command += " --base " + _shell(base)
    if notes_dir is not None:
        command += " -o " + _shell(note_name(baseline, notes_dir, taken))
    return command


def note_name(baseline: str, notes_dir: str, taken: Collection[str] = ()) -> str:
    """The note file for ``baseline`` in ``notes_dir`` that is not ``taken``: ``NAME.md``, else
    ``NAME-2.md``, ``NAME-3.md`` ..."""
    name = posixpath.basename(baseline)
    session = name.endswith(SESSION_SUFFIX)  # beside its baseline's note, not in its place
    stem = name.removesuffix(SESSION_SUFFIX).removesuffix(".jsonl").removesuffix(".sealed")
    stem += "-session" if session else ""
    name = f"{notes_dir}/{stem}.md"
    number = 1
    while name in taken:
        number += 1
        name = f"{notes_dir}/{stem}-{number}.md"
    return name


def _describe(note: DriftNote, change: BaselineChange) -> list[str]:
    """How a note on this baseline misses the change: its ``from``, its ``to``, or both."""
    out = []
    if note.from_head != change.from_head:
        what = "the genesis value" if change.from_head == genesis_head() else "the committed head (HEAD)"
        out.append(f"note {quote(note.path)} has from {note.from_head}, but {what} is {change.from_head}")
    to = _to_mismatch(note, change)
    return out if to is None else [*out, to]


def _to_mismatch(note: DriftNote, change: BaselineChange) -> str | None:
    """How a note's ``to`` misses the change's (None when it names it)."""
    where = quote(note.path)
    if note.to_head == change.to_head:
        return None
    if change.to_head is None:
        return f"note {where} has to {note.to_head}, but this commit deletes the baseline: remove 'to'"
    if note.to_head is None:
        return f"note {where} has no 'to' (a deletion), but the staged baseline's head is {change.to_head}"
    if note.to_head in change.older_heads:
        return (
            f"note {where} is stale: its to {note.to_head} is an older head of this baseline;"
            " the baseline changed after the note was written: write the note again"
        )
    return f"note {where} has to {note.to_head}, but the staged head is {change.to_head}"


def _accepted(change: BaselineChange, notes: Sequence[DriftNote], *, chains: bool) -> bool:
    """One note binds the exact change; with ``chains``, notes may also chain from -> ... -> to."""
    if any(n.from_head == change.from_head and n.to_head == change.to_head for n in notes):
        return True
    return chains and change.to_head in _reachable(change.from_head, notes)


def _reachable(start: str, notes: Sequence[DriftNote]) -> set[str | None]:
    """The heads notes lead to from ``start``, one note after another (``start`` included)."""
    reached: set[str | None] = {start}
    frontier: list[str | None] = [start]
    while frontier:
        head = frontier.pop()
        for n in notes:
            if n.from_head == head and n.to_head not in reached:
                reached.add(n.to_head)
                if n.to_head is not None:
                    frontier.append(n.to_head)
    return reached


def judge(
    changes: Sequence[BaselineChange],
    notes: Sequence[DriftNote],
    notes_dir: str,
    *,
    chains: bool = False,
    taken: Collection[str] = (),
) -> list[Problem]:
    """Pure: the changes no staged note accepts exactly, each with why and what to do.

    With ``chains`` (a range of several commits), notes whose heads chain from the
    change's ``from`` to its ``to`` accept it too: one note per commit that changed it.
    ``taken``: the note files that already exist, which the proposed command must not name.
    """
    changed = {c.baseline for c in changes}
    strays = [n for n in notes if n.baseline not in changed]
    problems = []
    for change in changes:
        lines = _unaccepted(change, notes, strays, notes_dir, chains=chains, taken=taken)
        if lines is not None:
            subject = f"{change.kind} {quote(change.baseline)} ({change.action})"
            problems.append(Problem(subject=subject, lines=tuple(lines), baseline=change.baseline))
    return problems


def _unaccepted(
    change: BaselineChange,
    notes: Sequence[DriftNote],
    strays: Sequence[DriftNote],
    notes_dir: str,
    *,
    chains: bool,
    taken: Collection[str],
) -> list[str] | None:
    """Why no note accepts a change and what to do, one line each; None when a note accepts it."""
    lines = [_from_line(change)]
    if change.refused is not None or change.broken is not None:
        return lines + _unacceptable(change)
    lines.append("to:   " + (change.to_head or "none (deleted)"))
    candidates = [n for n in notes if n.baseline == change.baseline]
    if _accepted(change, candidates, chains=chains):
        return None
    return lines + _what_to_do(change, candidates, strays, notes_dir, chains=chains, taken=taken)


def _from_line(change: BaselineChange) -> str:
    genesis = "  (genesis: new baseline)" if change.from_head == genesis_head() else ""
    return f"from: {change.from_head}{genesis}"


def _unacceptable(change: BaselineChange) -> list[str]:
    """Why no note can accept a change: not a regular file, or not an intact chain."""
    if change.refused is not None:
        return [
            "to:   none: not a regular file",
            change.refused,
            "no note can accept it; a baseline is a regular file of this repository",
        ]
    return [
        "to:   none: the staged file is not an intact sealed chain",
        change.broken or "",
        "no note can accept a broken chain; seal the transcript again (toolreplay seal)",
    ]


def _what_to_do(
    change: BaselineChange,
    candidates: Sequence[DriftNote],
    strays: Sequence[DriftNote],
    notes_dir: str,
    *,
    chains: bool,
    taken: Collection[str],
) -> list[str]:
    """Why the notes there are do not accept a change, and the note to write."""
    lines = [line for note in candidates for line in _describe(note, change)]
    if not candidates:
        lines += _no_candidate(change, strays, notes_dir)
    lines.append(f"write the note: {note_command(change.baseline, notes_dir, taken)}")
    return lines + _after_writing(change, notes_dir, chains=chains)


def _no_candidate(change: BaselineChange, strays: Sequence[DriftNote], notes_dir: str) -> list[str]:
    """That no staged note names the changed file, and what the staged ones name instead."""
    return [
        f"no drift note staged under {notes_dir}/ names this {change.kind}",
        *(
            f"(staged note {quote(n.path)} names {quote(n.baseline)}, which this commit does not change)"
            for n in strays
        ),
    ]


def _after_writing(change: BaselineChange, notes_dir: str, *, chains: bool) -> list[str]:
    """What to do with the note once written: add it to the pull request, or stage it in the commit."""
    if chains:  # a range (a pull request): the note is added to it, not to one commit
        return [f"then explain the drift in it and add it under {notes_dir}/ in this pull request"]
    lines = [f"then explain the drift in it and stage it under {notes_dir}/ in this same commit"]
    if change.kind == "baseline":
        lines.append(f"{ACCEPT_ADVICE} {accept_command(change.baseline)}")
    return lines


#: the pre-commit hook's advice to make a run the baseline instead (over a range the comment names the run)
ACCEPT_ADVICE = "or make a run the baseline, with its notes:"


def accept_command(baseline: str) -> str:
    """``toolreplay accept BASELINE --run RUN --reason WHY`` (RUN and WHY for the person to fill in)."""
    return f"toolreplay accept {_shell(baseline)} --run RUN --reason WHY"


def unguarded(entries: Iterable[Entry], patterns: Sequence[str]) -> list[str]:
    """Sealed transcripts the entries add or change that no baseline pattern covers."""
    return sorted(
        {e.new_path for e in entries if e.new_path is not None and _unguarded(e, e.new_path, patterns)}
    )


def _unguarded(entry: Entry, path: str, patterns: Sequence[str]) -> bool:
    """Whether the entry stages a sealed transcript (a file, not a submodule) outside the patterns."""
    return (
        entry.new_oid is not None
        and entry.new_mode != GITLINK
        and path.endswith(SEALED_SUFFIX)
        and not is_baseline(path, patterns)
    )


def unguarded_warning(path: str, patterns: Sequence[str]) -> str:
    """The warning for a sealed transcript the baseline patterns leave out."""
    return (
        f"{quote(path)} is a sealed transcript, but no baseline pattern"
        f" ({', '.join(quote(p) for p in patterns)}) covers it, so the guard does not judge it;"
        " if it is a baseline, add a pattern for it"
    )


def existing_notes(git: Git, notes_dir: str, revs: Sequence[str | None]) -> frozenset[str]:
    """Note files under ``notes_dir`` in the work tree, and in each of ``revs`` (None: the index)."""
    top = git.top()
    found: set[str] = set()
    for rev in revs:
        found.update(_recorded_notes(git, notes_dir, rev))
    for folder, _dirs, files in os.walk(os.path.join(top, notes_dir)):
        rel = os.path.relpath(folder, top).replace(os.sep, "/")
        found.update(f"{rel}/{name}" for name in files)
    return frozenset(found)


def _recorded_notes(git: Git, notes_dir: str, rev: str | None) -> list[str]:
    """The files git records under ``notes_dir`` at ``rev`` (None: in the index)."""
    if rev is None:
        out = git.run("ls-files", "-z", "--full-name", "--", ":(top,literal)" + notes_dir)
    else:
        out = git.run("ls-tree", "-r", "-z", "--name-only", "--full-tree", rev, "--", notes_dir)
    return [decode_path(p) for p in out.split(b"\0") if p]


def _check(
    git: Git,
    diff_args: Sequence[str],
    patterns: Sequence[str],
    notes_dir: str,
    *,
    chains: bool,
    revs: Callable[[], Sequence[str | None]],
    files: Collection[str] = (),
) -> GuardResult:
    """The guard's verdict on the ``diff_args`` change; ``revs`` gives the revisions whose notes
    are taken (None: the index), asked only when a baseline changes (most commits change none)."""
    folder = normalize_dir(notes_dir)
    try:
        out = git.run(
            "diff",
            "--raw",
            "-z",
            "-M",
            "--no-abbrev",
            "--no-relative",
            "--no-ext-diff",
            "--no-color",
            *diff_args,
        )
    except GitError:
        git.top()  # outside a work tree, this names it; inside one, the diff's own error stands
        raise
    entries = parse_raw_diff(out)
    changes = baseline_changes(git, entries, patterns) + file_changes(git, entries, files, patterns)
    notes, note_problems = staged_notes(git, entries, folder)
    taken = existing_notes(git, folder, revs()) if changes else frozenset()
    problems = note_problems + judge(changes, notes, folder, chains=chains, taken=taken)
    return GuardResult(
        changes=tuple(changes),
        notes=tuple(notes),
        problems=tuple(problems),
        unguarded=tuple(unguarded(entries, patterns)),
    )


def check_staged(
    git: Git,
    *,
    patterns: Sequence[str] = DEFAULT_BASELINES,
    notes_dir: str = DEFAULT_NOTES_DIR,
    files: Collection[str] = (),
) -> GuardResult:
    """Judge the change the next commit would record (HEAD against the index)."""

    def revs() -> list[str | None]:  # a git call, for a commit that changes a baseline only
        return [None, "HEAD"] if git.revision("HEAD") else [None]

    return _check(git, ["--cached"], patterns, notes_dir, chains=False, revs=revs, files=files)


def check_commit(
    git: Git,
    commit: str,
    *,
    patterns: Sequence[str] = DEFAULT_BASELINES,
    notes_dir: str = DEFAULT_NOTES_DIR,
    files: Collection[str] = (),
) -> GuardResult:
    """Judge one commit against its first parent (an amended commit, once git has made it).

    Notes may chain, as over a range: amending a commit that changed a baseline adds a
    note from the head that commit had to the new one.
    """
    parent = git.revision(commit + "^")
    old = parent if parent is not None else git.run("hash-object", "-t", "tree", os.devnull).decode().strip()
    return _check(
        git, [old, commit, "--"], patterns, notes_dir, chains=True, revs=lambda: [commit], files=files
    )


def check_range(
    git: Git,
    base: str,
    head: str,
    *,
    patterns: Sequence[str] = DEFAULT_BASELINES,
    notes_dir: str = DEFAULT_NOTES_DIR,
    files: Collection[str] = (),
) -> GuardResult:
    """Judge a pull request's change: from the merge base of ``base`` and ``head`` to ``head``.

    The notes are those the range adds or changes; several commits may each have changed
    a baseline with their own note, so notes that chain from the range's ``from`` to its
    ``to`` accept it.
    """
    for rev in (base, head):
        check_revision(rev)
    return _check(
        git, [f"{base}...{head}", "--"], patterns, notes_dir, chains=True, revs=lambda: [head], files=files
    )
