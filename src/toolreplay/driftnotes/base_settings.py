"""A pull request's range and the settings it is judged with: the base commit's configuration
decides whether the drift-note rule's findings fail, and which tool lock and tools_source the
range is held to, so a pull request cannot loosen the check of its own change."""

from __future__ import annotations

import atexit
import io
import os
import shutil
import tarfile
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from toolreplay.config import DEFAULT_MUTATORS, Config
from toolreplay.driftnotes.guard import (
    check_range,
    normalize_dir,
)
from toolreplay.driftnotes.review import commits
from toolreplay.driftnotes.settings import (
    in_folder,
    recorded_config,
)
from toolreplay.errors import InputError
from toolreplay.git import Git, GitError, check_revision
from toolreplay.kinds import (
    GUARD_KINDS,
    KINDS,
    kind_fails,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class PullRange:
    """The two commits a pull request's change lies between."""

    base: str
    head: str


def config_prefix(config: Config, top: str) -> str | None:
    """The config's folder from the repository root, POSIX style ("" at the root); None outside."""
    prefix = os.path.relpath(config.root.resolve(), os.path.realpath(top))
    if prefix == os.curdir:
        return ""
    if prefix.startswith(os.pardir):
        return None
    return PurePosixPath(Path(prefix)).as_posix()


def judged_fail_on(
    config: Config,
    fail_on: frozenset[str] | None,
    pull: PullRange | None,
    *,
    workspace: str,
    from_config: bool = False,
) -> frozenset[str] | None:
    """``fail_on`` for a run that judges ``pull``: the base commit's configuration decides.

    ``from_config``: ``fail_on`` is the configuration's own (no ``--fail-on``), so the base's
    ``fail_on`` replaces it whole; else (the command line chose) only whether the drift-note rule's
    findings fail is the base's decision. A pull request could otherwise leave
    ``missing-drift-note`` out of its ``fail_on`` and pass its own baseline change (the change is
    reported as ``drift-guard-changed`` too). Where the base's configuration cannot be read, the
    drift-note kinds fail (the default).
    """
    if pull is None:
        return fail_on
    base = _base_config(config, pull, workspace)
    if from_config and base is not None:
        fail_on = base.fail_on
    return _with_decided(base_decides(base), fail_on)


def _with_decided(decided: dict[str, bool], fail_on: frozenset[str] | None) -> frozenset[str] | None:
    """``fail_on`` with the drift-note kinds failing where ``decided`` says (itself when it agrees)."""
    if all(decided[k] == kind_fails(k, fail_on) for k in GUARD_KINDS):
        return fail_on
    return frozenset(k for k in KINDS if decided.get(k, kind_fails(k, fail_on)))


def base_decides(base: Config | None) -> dict[str, bool]:
    """Whether each of the guard's kinds fails by the base's configuration (without one: they fail)."""
    return {k: base is None or base.fails(k) for k in GUARD_KINDS}


def _base_config(config: Config, pull: PullRange, workspace: str) -> Config | None:
    """The base commit's configuration in ``config``'s folder; None when it has none or it cannot
    be read (then the drift-note kinds fail, as by default)."""
    try:
        top = Git(cwd=workspace).top()
        prefix = config_prefix(config, top)
        if prefix is None:
            return None
        return recorded_config(Git(cwd=top), check_revision(pull.base), prefix, name=pull.base[:12])
    except (InputError, GitError):
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Judged:
    """A run that judges a pull request, as its base commit decides it (docs/spec.md §7.1)."""

    #: the configuration with the base commit's judging settings
    config: Config
    #: where the base's tools_source runs from: the config's folder in a copy of the base commit's
    #: tree (None outside a range, or where the base names no source)
    source_root: Path | None = None


def judged_config(config: Config, pull: PullRange | None, *, workspace: str, tree: bool = True) -> Judged:
    """``config`` for a run that judges ``pull``: with the base commit's judging settings.

    Volatile rules, mutators and state-awareness (what is compared), the time patterns may take,
    the state commands, the tools lock (its path, and
    its content unless a drift note in the range accepts the pull request's change of it) and the
    tools_source (run from the base commit's tree: none of the pull request's code runs) are the
    base's; the pull request's change of them is reported by the drift-note rule. Where the base
    has no configuration, or it cannot be read, nothing is masked, no lock is held and no code runs.
    Without ``tree`` (a run that runs no tools_source: ``note``, a changed baseline's review) no
    copy of the base commit's tree is made, and no tools_source is kept.
    """
    if pull is None:
        return Judged(config=config)
    base = _base_config(config, pull, workspace)
    if base is None:
        bare = replace(config, volatile=(), mutators=DEFAULT_MUTATORS, tools_lock=None, tools_source=None)
        return Judged(config=bare)
    lock = _judged_lock(config, base, pull, workspace)
    source_root = _base_tree(config, pull, workspace) if _runs_source(base, lock, tree=tree) else None
    judged = replace(
        config,
        volatile=base.volatile,
        mutators=base.mutators,
        state_aware=base.state_aware,
        pattern_budget_seconds=base.pattern_budget_seconds,
        state_command=base.state_command,
        state_timeout_seconds=base.state_timeout_seconds,
        tools_lock=lock,
        tools_source=base.tools_source if source_root is not None else None,
    )
    return Judged(config=judged, source_root=source_root)


def _runs_source(base: Config, lock: str | None, *, tree: bool) -> bool:
    """Whether a range's check runs the base's tools_source: it names one, beside a lock, and a copy
    of the base commit's tree is wanted."""
    return tree and base.tools_source is not None and lock is not None


def _judged_lock(config: Config, base: Config, pull: PullRange, workspace: str) -> str | None:
    """The lock a range is judged with: the base's path; the file as it is when it is unchanged or
    a note in the range accepts its change, else the base commit's bytes (in a temporary file)."""
    if base.tools_lock is None:
        return None
    try:
        git = Git(cwd=workspace)
        prefix = config_prefix(config, git.top())
        if prefix is None:
            return None
        name = in_folder(prefix, base.tools_lock)
        start, _ = commits(git, pull.base, pull.head)
        oid = git.file_oid(start, name)
        if oid is None:
            return None  # the base holds no lock there: the pull request's own is not the base's decision
        before = git.blob(oid)
        now = Path(config.root, base.tools_lock)
        if _read(now) == before or _accepted_lock(git, base, pull, prefix, name):
            return base.tools_lock
    except (GitError, InputError):
        return None
    return str(_kept(before, Path(name).name))


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _accepted_lock(git: Git, base: Config, pull: PullRange, prefix: str, name: str) -> bool:
    """Whether a drift note in the range accepts the change of the lock ``name`` (and the work
    tree holds the range's head of it)."""
    notes_dir = normalize_dir(in_folder(prefix, base.drift_notes))
    result = check_range(git, pull.base, pull.head, patterns=(), notes_dir=notes_dir, files=(name,))
    if any(problem.baseline == name for problem in result.problems):
        return False
    head = git.file_oid(pull.head, name)
    return head is not None and _read(Path(git.top(), name)) == git.blob(head)


def _kept(content: bytes, name: str) -> Path:
    """``content`` in a temporary file named ``name`` that lasts as long as this process."""
    folder = Path(tempfile.mkdtemp(prefix="toolreplay-base-"))
    atexit.register(shutil.rmtree, folder, True)
    path = folder / name
    path.write_bytes(content)
    return path


def _base_tree(config: Config, pull: PullRange, workspace: str) -> Path | None:
    """The config's folder in a copy of the commit the range starts from (git archive), which lasts
    as long as this process; None when git cannot make one (then no tools_source runs)."""
    try:
        git = Git(cwd=workspace)
        prefix = config_prefix(config, git.top())
        start, _ = commits(git, pull.base, pull.head)
        archive = git.run("archive", "--format=tar", start)
    except (GitError, InputError):
        return None
    if prefix is None:
        return None
    folder = Path(tempfile.mkdtemp(prefix="toolreplay-base-tree-"))
    atexit.register(shutil.rmtree, folder, True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        # the "data" filter (no links out, no devices) where the interpreter has it (3.11.4 and later;
        # before, the members are a commit's tree as git wrote it)
        if hasattr(tarfile, "data_filter"):
            tar.extractall(folder, filter="data")
        else:  # pragma: no cover
            tar.extractall(folder)
    return folder / prefix if prefix else folder
