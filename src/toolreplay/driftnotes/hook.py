"""The drift-note guard as the pre-commit hook runs it (docs/spec.md §6): which change it judges
(the staged one, an amended commit, or a range), with which settings (the options, else the
configuration git records on the judged side), and the verdict. A refused amend is undone."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple

from toolreplay.driftnotes.guard import (
    GuardResult,
    check_commit,
    check_range,
    check_staged,
    normalize_dir,
    unguarded_warning,
)
from toolreplay.driftnotes.settings import (
    GuardSettings,
    config_folders,
    judged_files,
    judged_patterns,
    recorded_config,
    settings_change,
    settings_of,
    staged_configs,
)
from toolreplay.errors import InputError
from toolreplay.escape import one_line, quote
from toolreplay.files import normal_glob
from toolreplay.git import Git, GitError

if TYPE_CHECKING:
    from toolreplay.config import Config


def judge_hook(
    git: Git, mode: str, base: str | None, head: str, patterns: tuple[str, ...], notes_dir: str | None
) -> tuple[GuardSettings, GuardResult, list[str], Amend | None]:
    """The guard's settings, its verdict, its warnings, and the amended commit (in ``amend`` mode)."""
    # the configuration as the judged side records it: the base, the amended commit, or staged
    rev = {"range": base, "amend": "HEAD"}.get(mode)
    if rev is not None:
        # a range or a commit reads from the object store, which a bare repository or a
        # .git folder has too: without a work tree this names the problem. (The staged path
        # asks only where a step needs the root: in a .git folder it judges the repository's
        # own index; in a bare repository git diffs an empty index, and a baseline deleted
        # there reaches the question through the drift notes it looks for.)
        git.top()
    settings = _settings(git, rev, patterns, notes_dir)
    amended = _amended(git) if mode == "amend" else None
    if base is not None:
        settings, result, warnings = _judge_range(git, settings, base, head, patterns, notes_dir)
    else:
        result, warnings = _judge_commit(git, settings, amended), []
    warnings += [unguarded_warning(path, settings.patterns) for path in result.unguarded]
    return settings, result, warnings, amended


def _judge_commit(git: Git, settings: GuardSettings, amended: Amend | None) -> GuardResult:
    """The amended commit against its parent, else the staged change."""
    if amended is not None:
        return check_commit(
            git, amended.new, patterns=settings.patterns, notes_dir=settings.notes_dir, files=settings.files
        )
    return check_staged(git, patterns=settings.patterns, notes_dir=settings.notes_dir, files=settings.files)


def _judge_range(
    git: Git, settings: GuardSettings, base: str, head: str, patterns: tuple[str, ...], notes_dir: str | None
) -> tuple[GuardSettings, GuardResult, list[str]]:
    """A range judged with the base's settings, what the head names as a baseline judged too (it
    cannot take one away, only add); a warning when the head's settings differ."""
    after = _settings(git, head, patterns, notes_dir)
    change = settings_change(settings, after)
    settings = replace(
        settings, patterns=judged_patterns(settings, after), files=judged_files(settings, after)
    )
    result = check_range(
        git, base, head, patterns=settings.patterns, notes_dir=settings.notes_dir, files=settings.files
    )
    return settings, result, [change] if change is not None else []


def _settings(git: Git, rev: str | None, patterns: tuple[str, ...], notes_dir: str | None) -> GuardSettings:
    """The guard's settings: the options, else the configuration git records at ``rev`` (None: staged)."""
    prefix, config = _recorded(git, rev)
    where = "staged" if rev is None else rev
    if config is not None:
        source = config.source
    else:
        source = f"the defaults (no configuration {'staged' if rev is None else 'in ' + rev})"
    settings = settings_of(config, prefix=prefix, source=source)
    if patterns:
        settings = replace(settings, patterns=_normal(patterns), source=f"--baselines ({where})")
    if notes_dir is not None:
        settings = replace(settings, notes_dir=normalize_dir(notes_dir))
    return settings


def _recorded(git: Git, rev: str | None) -> tuple[str, Config | None]:
    """(its folder, the configuration) git records at ``rev`` (None: staged): the one at the root,
    else the only one in a subfolder (as the pull request's check judges the range with it)."""
    # (every git call here names paths from the root, whatever the folder it runs in)
    try:
        staged = staged_configs(git) if rev is None else None
        config = recorded_config(git, rev, staged=staged)
        if config is not None:
            return "", config
        found = _in_subfolders(git, rev, staged)
    except GitError:
        git.top()  # outside a work tree, this names it; inside one, git's own error stands
        raise
    return found[0] if len(found) == 1 else ("", None)


def _in_subfolders(git: Git, rev: str | None, staged: dict[str, str] | None) -> list[tuple[str, Config]]:
    """(folder, configuration) of each subfolder where git records one at ``rev``."""
    folders = config_folders(git, rev, staged=staged)
    return [(f, c) for f in folders if f and (c := recorded_config(git, rev, f, staged=staged))]


def _normal(patterns: tuple[str, ...]) -> tuple[str, ...]:
    """``--baselines`` as the guard matches them (``./`` and doubled slashes dropped); ``..`` refused."""
    out = []
    for pattern in patterns:
        try:
            out.append(normal_glob(pattern))
        except ValueError as err:
            raise InputError(f"--baselines {quote(pattern)} {err}") from err
    return tuple(out)


class Amend(NamedTuple):  # (a tuple: a dataclass costs a millisecond of every commit's start-up)
    """The commit ``git commit --amend`` replaced and the one it made."""

    old: str | None
    new: str


def _amended(git: Git) -> Amend:
    """HEAD, and the commit it replaced when HEAD's reflog says the last thing was an amend."""
    new = git.revision("HEAD")
    if new is None:
        raise GitError("--post-rewrite amend: HEAD names no commit")
    return Amend(old=_replaced(git, new), new=new)


def _replaced(git: Git, new: str) -> str | None:
    """The commit an amend replaced, when HEAD's reflog says the amend that made ``new`` came last."""
    try:
        out = git.run("log", "-g", "-2", "--format=%H %gs", "HEAD").decode("utf-8", "replace")
    except GitError:
        return None
    return _amended_from([line.split(" ", 1) for line in out.splitlines() if " " in line], new)


def _amended_from(entries: list[list[str]], new: str) -> str | None:
    """The commit of the reflog's second entry, when its first is the amend that made ``new``."""
    if len(entries) == 2 and entries[0][0] == new and entries[0][1].startswith("commit (amend)"):
        return entries[1][0]
    return None


def undo_amend(git: Git, amended: Amend) -> str:
    """Put HEAD back on the commit the amend replaced; the index (the user's work) stays as it is."""
    if amended.old is None:
        reason = "git's reflog does not name the commit it replaced"
    else:
        try:
            message = "toolreplay drift-note guard: amend refused"
            git.run("update-ref", "-m", message, "HEAD", amended.old, amended.new)
        except GitError as err:
            reason = one_line(str(err))
        else:
            return (
                f"\nThe amend was undone: HEAD is back at {amended.old[:12]}, and what you amended with is"
                " still staged.\nAdd the note and run git commit --amend again"
                f" (the refused commit was {amended.new[:12]}).\n"
            )
    return f"\nThe amend could NOT be undone ({reason}): fix the commit and amend again.\n"
