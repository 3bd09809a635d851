"""Which guarded files a change touches, with both heads: each entry of ``git diff --raw``
that adds, modifies, deletes or renames a baseline (or its tool lock or session file), the
committed head and the staged one, and why an entry is no file the guard can judge (a symlink,
a submodule). The chain's reader is imported only when a sealed file changed."""

from __future__ import annotations

import fnmatch
import hashlib
import io
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from toolreplay.escape import one_line, quote
from toolreplay.files import SESSION_SUFFIX
from toolreplay.git import GITLINK, REGULAR_MODES, Entry, Git


@dataclass(frozen=True, slots=True, kw_only=True)
class BaselineChange:
    """One sealed baseline this commit adds, modifies or deletes, with both heads."""

    baseline: str
    #: added, modified, deleted, renamed to ..., renamed from ...
    action: str
    from_head: str
    #: the staged head; None for a deletion, or when the staged file is not an intact chain
    to_head: str | None
    #: why the staged file is not an intact sealed chain (no note can accept it)
    broken: str | None = None
    #: heads this baseline passed through before ``to``: a note naming one of them is stale
    older_heads: frozenset[str] = frozenset()
    #: why the staged entry is not a file the guard can judge (a symlink, a submodule): no note accepts it
    refused: str | None = None
    #: what the file is, for messages: a baseline, or the tool lock or a baseline's session file
    #: (whose head is its bytes' digest)
    kind: str = "baseline"


class _Chain(NamedTuple):  # (a tuple: a dataclass costs a millisecond of every commit's start-up)
    head: str
    digests: tuple[str, ...]
    broken: str | None


def genesis_head() -> str:
    """The genesis value (the ``from`` of a baseline added): the head of a chain of no link."""
    return _chain(b"", "").head


def _head_of(chain: _Chain | None) -> str:
    """A committed chain's head; the genesis value where there is none (a new baseline)."""
    return chain.head if chain is not None else genesis_head()


def _chain(raw: bytes, path: str) -> _Chain:
    """Walk a sealed blob; on a parse error or a break, stop at the intact prefix."""
    # the chain and its reader (orjson, the decoders) only now: most commits change no sealed file
    from toolreplay.chain import intact_prefix

    state, digests, error = intact_prefix(io.BytesIO(raw), path)
    problem = None if error is None else one_line(str(error))
    if state.broken is not None and problem is None:
        b = state.broken
        problem = one_line(f"{path}:{b.line}: chain broken at index {b.position}: {b.reason}")
    return _Chain(head=state.head, digests=digests, broken=problem)


def is_baseline(path: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(path, pattern) for pattern in patterns)


def _older(after: _Chain, from_head: str, before: _Chain | None) -> frozenset[str]:
    """Heads the baseline had before the staged one: its chain's prefixes and the committed versions."""
    older = {from_head, *after.digests}
    if before is not None:
        older |= set(before.digests)
    older.discard(after.head)
    return frozenset(older)


def _added_or_modified(git: Git, path: str, oid: str, action: str, before: _Chain | None) -> BaselineChange:
    after = _chain(git.blob(oid), path)
    from_head = _head_of(before)
    return BaselineChange(
        baseline=path,
        action=action,
        from_head=from_head,
        to_head=None if after.broken else after.head,
        broken=after.broken,
        older_heads=_older(after, from_head, before),
    )


def file_head(raw: bytes) -> str:
    """The head of a guarded file that is not a chain (the tool lock): the SHA-256 of its bytes."""
    return hashlib.sha256(raw).hexdigest()


def is_session_file(path: str, patterns: Sequence[str]) -> bool:
    """Whether ``path`` is a baseline's session file (``BASELINE.mcp``, what ``serve`` answers with):
    guarded with its baseline, one sealed unit (docs/spec.md §6)."""
    return path.endswith(SESSION_SUFFIX) and is_baseline(path[: -len(SESSION_SUFFIX)], patterns)


def file_changes(
    git: Git, entries: Iterable[Entry], files: Collection[str], patterns: Sequence[str] = ()
) -> list[BaselineChange]:
    """The changes of the guarded files that are not chains (``files``, from the root, and the session
    files of the baselines ``patterns`` match): ``from`` and ``to`` are digests of their bytes
    (:func:`file_head`), the genesis value for a file added."""

    def guarded(path: str | None) -> bool:
        return path is not None and (path in files or is_session_file(path, patterns))

    return [change for entry in entries for change in _entry_file_changes(git, entry, guarded)]


def _entry_file_changes(
    git: Git, entry: Entry, guarded: Callable[[str | None], bool]
) -> Iterator[BaselineChange]:
    """The guarded files' changes of one diff entry: its one side, or both sides of a rename."""
    old, new = _guarded_sides(entry, guarded)
    for path in dict.fromkeys(p for p in (old, new) if p is not None):
        before = _file_side(git, entry.old_oid, entry.old_mode) if path == old else None
        after = _file_side(git, entry.new_oid, entry.new_mode) if path == new else None
        if before != after:
            yield _file_change(path, before, after)


def _guarded_sides(entry: Entry, guarded: Callable[[str | None], bool]) -> tuple[str | None, str | None]:
    """The guarded file's path on each side of an entry (None where none is)."""
    # a copy leaves its source alone; its target is an addition
    old = entry.old_path if guarded(entry.old_path) and entry.status != "C" else None
    new = entry.new_path if guarded(entry.new_path) and entry.new_oid is not None else None
    return old, new


def _file_change(path: str, before: str | None, after: str | None) -> BaselineChange:
    """A guarded file's change from head ``before`` to ``after`` (None: it is not there)."""
    return BaselineChange(
        baseline=path,
        action="added" if before is None else "deleted" if after is None else "modified",
        from_head=before or genesis_head(),
        to_head=after,
        kind="session file" if path.endswith(SESSION_SUFFIX) else "tool lock",
    )


def _file_side(git: Git, oid: str | None, mode: str) -> str | None:
    """The digest of one side of a guarded file; None where no regular file is."""
    return file_head(git.blob(oid)) if oid is not None and mode in REGULAR_MODES else None


def baseline_changes(git: Git, entries: Iterable[Entry], patterns: Sequence[str]) -> list[BaselineChange]:
    """The sealed baselines the entries add, modify or delete, with the heads on both sides.

    Only a regular file is a baseline's content: a symlink or a submodule where a baseline
    pattern reaches is a change no note can accept (``refused``), and one on the old side
    counts as no baseline (``from`` is the genesis value).
    """

    return [change for entry in entries for change in _entry_changes(git, entry, patterns)]


def _baseline_path(path: str | None, mode: str, patterns: Sequence[str]) -> str | None:
    """``path`` when a regular file is there and a baseline pattern covers it."""
    return path if path is not None and mode in REGULAR_MODES and is_baseline(path, patterns) else None


def _entry_changes(git: Git, entry: Entry, patterns: Sequence[str]) -> list[BaselineChange]:
    """The baseline changes of one diff entry: none, its one side, or both sides of a rename."""
    old, new = _baseline_sides(entry, patterns)
    before = _committed(git, entry, old)
    in_place = old == entry.new_path
    refused = _refused(entry, before if in_place else None, patterns)
    if refused is None:
        if old is not None and old == new:
            return _modified(git, new, entry.new_oid or "", before)
        return _moved(git, entry, old, new, before)
    if old is None or in_place:
        return [refused]
    return [refused, *_moved(git, entry, old, new, before)]


def _baseline_sides(entry: Entry, patterns: Sequence[str]) -> tuple[str | None, str | None]:
    """The baseline's path on each side of an entry (None where no baseline is)."""
    # a copy leaves its source alone; its target is an addition
    old = _baseline_path(entry.old_path, entry.old_mode, patterns) if entry.status != "C" else None
    new = _baseline_path(entry.new_path, entry.new_mode, patterns) if entry.new_oid is not None else None
    return old, new


def _committed(git: Git, entry: Entry, old: str | None) -> _Chain | None:
    """The chain of the baseline on the entry's old side (None when there is none)."""
    if old is None or entry.old_oid is None:
        return None
    return _chain(git.blob(entry.old_oid), old)


def _modified(git: Git, path: str, oid: str, before: _Chain | None) -> list[BaselineChange]:
    """A baseline changed in place; nothing when only line endings or blank lines changed (the same
    chain, nothing drifted)."""
    change = _added_or_modified(git, path, oid, "modified", before)
    if change.to_head is not None and change.to_head == change.from_head:
        return []
    return [change]


def _moved(
    git: Git, entry: Entry, old: str | None, new: str | None, before: _Chain | None
) -> list[BaselineChange]:
    """A baseline leaving its old path, arriving at its new one, or both (a rename)."""
    changes = []
    if old is not None:
        changes.append(_departure(entry, old, before))
    if new is not None:
        changes.append(_added_or_modified(git, new, entry.new_oid or "", _arrival(entry), None))
    return changes


def _departure(entry: Entry, old: str, before: _Chain | None) -> BaselineChange:
    """A baseline deleted, or renamed away from ``old``."""
    action = "deleted" if entry.new_path is None else f"renamed to {quote(entry.new_path)}"
    head = _head_of(before)
    return BaselineChange(baseline=old, action=action, from_head=head, to_head=None)


def _arrival(entry: Entry) -> str:
    """How the new side of an entry came to be: added, or renamed from its old path."""
    renamed = entry.status == "R" and entry.old_path is not None
    return f"renamed from {quote(entry.old_path or '')}" if renamed else "added"


#: what git stores at a path that is not a regular file, by mode
_NOT_FILES = {"120000": "a symlink", GITLINK: "a submodule"}


def _refused(entry: Entry, before: _Chain | None, patterns: Sequence[str]) -> BaselineChange | None:
    """The change of an entry whose new side is no regular file where a baseline pattern reaches."""
    path, mode = entry.new_path, entry.new_mode
    if path is None or not _irregular_in_reach(entry, path, patterns):
        return None
    return BaselineChange(
        baseline=path,
        action="modified" if entry.status in "MT" else _arrival(entry),
        from_head=_head_of(before),
        to_head=None,
        refused=_not_a_file(path, mode),
    )


def _irregular_in_reach(entry: Entry, path: str, patterns: Sequence[str]) -> bool:
    """Whether an entry's new side (at ``path``) is something other than a regular file, where a
    baseline pattern reaches."""
    if entry.new_oid is None or entry.new_mode in REGULAR_MODES:
        return False
    return is_baseline(path, patterns) or reaches_into(path, patterns)


def _not_a_file(path: str, mode: str) -> str:
    """Why the guard cannot judge what git stores at ``path`` with ``mode``."""
    what = _NOT_FILES.get(mode, "not a regular file")
    return (
        f"{quote(path)} is {what} (mode {mode}), where a baseline pattern reaches: git stores"
        f" {'the name it points to' if mode == '120000' else 'no file of this repository'} there,"
        " so the guard cannot judge the baseline behind it"
    )


def reaches_into(folder: str, patterns: Sequence[str]) -> bool:
    """Whether a pattern, read one folder at a time as ``check``'s glob reads it, could match a file
    under ``folder`` (a submodule or a symlink there hides that file from the guard)."""
    names = folder.split("/")
    return any(_could_reach(names, pattern.split("/")) for pattern in patterns)


def _could_reach(names: Sequence[str], parts: Sequence[str]) -> bool:
    for depth, name in enumerate(names):
        if depth >= len(parts):
            return False
        if parts[depth] == "**":
            return True
        if not fnmatch.fnmatchcase(name, parts[depth]):
            return False
    return len(parts) > len(names)
