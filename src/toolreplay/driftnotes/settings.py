"""Where the drift-note guard takes its settings from: what git records, never the working tree.

The baseline patterns and the notes folder decide what the guard judges, so a file git
does not record (an untracked ``toolreplay.toml``, or one in a folder above the
repository) must not change them. The hook reads the configuration staged at the
repository root (``toolreplay.toml``, else ``pyproject.toml`` with ``[tool.toolreplay]``);
a range is judged with its base commit's configuration, and a change of these settings
between the base and the head is reported (:func:`settings_change`), since a pull
request must not decide for itself what its own rule is.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from toolreplay.driftnotes.changes import is_baseline
from toolreplay.driftnotes.guard import DEFAULT_BASELINES, DEFAULT_NOTES_DIR, normalize_dir
from toolreplay.escape import quote
from toolreplay.files import CONFIG_NAMES
from toolreplay.git import Git, check_revision, decode_path

if TYPE_CHECKING:
    from toolreplay.config import Config


@dataclass(frozen=True, slots=True, kw_only=True)
class GuardSettings:
    """What the guard judges: baseline patterns and the notes folder, both from the repository root."""

    patterns: tuple[str, ...]
    notes_dir: str
    #: where they came from, for messages: ``toolreplay.toml (staged)``, ``REV:toolreplay.toml``...
    source: str
    #: the other files a change of which needs a note, from the root: the tool lock (what it declares
    #: decides what check compares)
    files: tuple[str, ...] = ()


def recorded_config(
    git: Git,
    rev: str | None,
    folder: str = "",
    *,
    name: str | None = None,
    staged: Mapping[str, str] | None = None,
) -> Config | None:
    """The configuration git records in ``folder`` (from the root) at ``rev``; None: the index.

    ``name`` stands for ``rev`` in messages (a short commit id).

    ``toolreplay.toml`` first, then ``pyproject.toml`` when it holds ``[tool.toolreplay]``;
    None when there is neither. An invalid one is an :class:`~toolreplay.errors.InputError`.
    ``staged`` is :func:`staged_configs` already asked (for the index: git is then not asked again).
    """
    for file in CONFIG_NAMES:
        path = in_folder(folder, file)
        oid = _recorded_oid(git, rev, path, staged)
        if oid is None:
            continue
        # The configuration's loader (TOML, pathlib) only now: most commits stage no configuration,
        # and the hook's start-up is paid on every commit
        from toolreplay.config import load_recorded

        label = f"{path} (staged)" if rev is None else f"{name or rev}:{path}"
        config = load_recorded(git.blob(oid), path, label=label, top=git.top)
        if config is not None:
            return config
    return None


def in_folder(folder: str, name: str) -> str:
    """``name`` in ``folder`` (from the root; ``""`` is the root), joined as pathlib joins them:
    an absolute ``name`` stands alone, ``.`` parts and doubled slashes go. (By hand: pathlib is a
    start-up cost of every commit, and most commits stage no configuration.)"""
    if not folder:
        return name
    joined = name if name.startswith("/") else f"{folder}/{name}"
    parts = [part for part in joined.split("/") if part not in ("", ".")]
    return ("/" if joined.startswith("/") else "") + "/".join(parts)


def _recorded_oid(git: Git, rev: str | None, path: str, staged: Mapping[str, str] | None) -> str | None:
    """The blob git records at ``path`` in commit ``rev``, or in the index (None), as ``staged`` has it
    when given."""
    if rev is None and staged is not None:
        return staged.get(path)
    return git.file_oid(rev, path)


def staged_configs(git: Git) -> dict[str, str]:
    """The blob of every configuration file staged, anywhere in the repository, by path from
    the root: one git call for :func:`recorded_config` and :func:`config_folders` together
    (the hook runs on every commit)."""
    return git.staged(*(f":(top,glob)**/{n}" for n in CONFIG_NAMES))


def config_folders(git: Git, rev: str | None, *, staged: Mapping[str, str] | None = None) -> list[str]:
    """The folders (from the root, POSIX) where git records a configuration file at ``rev``
    (None: the index), sorted; the root is ``""``. ``staged``: as :func:`recorded_config`'s."""
    paths = list(staged) if rev is None and staged is not None else _recorded_paths(git, rev)
    # (git's paths are clean: no "." or empty parts, so posixpath splits them as pathlib would)
    return sorted({posixpath.dirname(path) for path in paths if posixpath.basename(path) in CONFIG_NAMES})


def _recorded_paths(git: Git, rev: str | None) -> list[str]:
    """The paths git records at ``rev`` (None: the configuration files in the index), from the root."""
    if rev is None:
        out = git.run("ls-files", "-z", "--full-name", "--", *(f":(top,glob)**/{n}" for n in CONFIG_NAMES))
    else:
        out = git.run("ls-tree", "-r", "-z", "--name-only", "--full-tree", check_revision(rev))
    return [decode_path(raw) for raw in out.split(b"\0") if raw]


def glob_patterns(globs: Sequence[str], prefix: str) -> tuple[str, ...]:
    """The config's baseline globs (relative to its folder, as :func:`~toolreplay.config.normal_glob`
    leaves them) as fnmatch patterns from the repo root: the one matcher of what a baseline is.

    fnmatch's ``*`` also matches ``/``, so a pattern covers every file pathlib's glob finds for
    ``check``, and more; pathlib's ``**/`` may match no folder at all, so a variant without it is
    added. The folder ``prefix`` is a name, not a pattern: its ``*``, ``?`` and ``[`` are escaped.
    """
    folder = prefix.translate(_FNMATCH_SPECIAL) + "/" if prefix else ""
    out: list[str] = []
    for glob in globs:
        for variant in (glob, glob.replace("**/", "")):
            pattern = folder + variant
            if pattern not in out:
                out.append(pattern)
    return tuple(out)


#: fnmatch has no escape character: a special character is matched as the set holding only it
_FNMATCH_SPECIAL = str.maketrans({"*": "[*]", "?": "[?]", "[": "[[]"})


def unjudged_baseline(config: Config, path: str) -> str | None:
    """Why the guard could not judge baseline ``path`` (from the config's folder), or None: what
    ``check`` and ``verify`` refuse to read as a baseline (docs/spec.md §6).

    The guard judges what git stores: a regular file's blob. A symlink (the file, or a folder on
    its way) is stored as the name it points to, and a file inside a submodule (a folder with its
    own ``.git``) as the submodule's commit, so an edit behind either would pass the guard.
    """
    hidden = _hidden(str(config.root), [part for part in path.split("/") if part])
    if hidden is not None:
        return f"{hidden}: {_NOT_JUDGED}"
    if not is_baseline(path, glob_patterns(config.baselines, "")):
        return f"is not matched by the drift-note guard's patterns: {_NOT_JUDGED}"
    return None


def _hidden(root: str, parts: list[str]) -> str | None:
    """Whether the file at ``parts`` under ``root`` is, or lies under, a symlink, or lies in a
    submodule (a folder with its own ``.git``); None when neither."""
    # no pathlib: the drift-note hook imports this module, and its start-up is measured
    here = root
    for depth, part in enumerate(parts):
        here = os.path.join(here, part)
        last = depth == len(parts) - 1
        folder = quote("/".join(parts[: depth + 1]))
        if os.path.islink(here):
            return "is a symlink" if last else f"lies under a symlink ({folder})"
        if not last and os.path.exists(os.path.join(here, ".git")):
            return f"lies in another git repository ({folder}, a submodule, has its own .git)"
    return None


_NOT_JUDGED = (
    "a baseline must be a regular file of this repository, since the drift-note guard judges only"
    " what git stores as a file"
)


def judged_patterns(before: GuardSettings, after: GuardSettings) -> tuple[str, ...]:
    """The patterns a range is judged with: the base's, and any the head adds.

    The head's configuration cannot take a baseline away from the guard, but whatever it names
    as a baseline (what ``check`` reads as one) is judged too, so a file ``check`` treats as a
    baseline is never one the guard lets through without a note.
    """
    return before.patterns + tuple(p for p in after.patterns if p not in before.patterns)


def settings_of(
    config: Config | None, *, prefix: str = "", source: str, default: bool = True
) -> GuardSettings:
    """The guard's settings from ``config`` (in folder ``prefix`` from the root).

    Without a configuration, or one naming no baselines, the patterns are the hook's
    defaults (with ``default``) or none.
    """
    patterns = _baseline_patterns(config, prefix, default=default)
    notes = config.drift_notes if config is not None else DEFAULT_NOTES_DIR
    notes_dir = normalize_dir(in_folder(prefix, notes))
    return GuardSettings(
        patterns=patterns, notes_dir=notes_dir, source=source, files=_lock_files(config, prefix)
    )


def _baseline_patterns(config: Config | None, prefix: str, *, default: bool) -> tuple[str, ...]:
    """The configuration's baseline patterns from the root; without any, the hook's defaults or none."""
    if config is not None and config.baselines:
        return glob_patterns(config.baselines, prefix)
    return DEFAULT_BASELINES if default else ()


def _lock_files(config: Config | None, prefix: str) -> tuple[str, ...]:
    """The tool lock the configuration names, from the root (none without one)."""
    lock = config.tools_lock if config is not None else None
    return (in_folder(prefix, lock).lstrip("/"),) if lock else ()


def judged_files(before: GuardSettings, after: GuardSettings) -> tuple[str, ...]:
    """The tool locks a range is judged with: the base's, and the head's when it names another."""
    return before.files + tuple(f for f in after.files if f not in before.files)


def settings_change(before: GuardSettings, after: GuardSettings) -> str | None:
    """What changes between two versions of the guard's settings, in one line; None when nothing."""
    parts = []
    if before.patterns != after.patterns:
        parts.append(f"baselines {_list(before.patterns)} -> {_list(after.patterns)}")
    if before.notes_dir != after.notes_dir:
        parts.append(f"drift_notes {quote(before.notes_dir)} -> {quote(after.notes_dir)}")
    if not parts:
        return None
    return (
        f"the drift-note guard's settings change ({after.source} against {before.source}):"
        f" {'; '.join(parts)}; this range is judged with {before.source}"
    )


def _list(patterns: Sequence[str]) -> str:
    return "[" + ", ".join(quote(p) for p in patterns) + "]" if patterns else "[] (none)"
