"""``toolreplay hook drift-note``: the guard that refuses a baseline change without its drift note."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple

import click

from toolreplay.cli.base import EXIT_CLEAN, EXIT_FINDINGS
from toolreplay.driftnotes.guard import (
    DEFAULT_BASELINES,
    DEFAULT_NOTES_DIR,
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
from toolreplay.escape import inert, one_line, quote
from toolreplay.files import normal_glob
from toolreplay.git import Git, GitError

if TYPE_CHECKING:
    from toolreplay.config import Config


@click.command(name="drift-note")
@click.option(
    "--baselines",
    "patterns",
    multiple=True,
    metavar="PATTERN",
    help=f"Which files are sealed baselines: fnmatch on the path from the repository root, where * also"
    f" matches /. Repeatable. [default: baselines of the configuration, else {', '.join(DEFAULT_BASELINES)}]",
)
@click.option(
    "--notes-dir",
    metavar="DIR",
    help="The folder (from the repository root) whose Markdown files are drift notes."
    f" [default: drift_notes of the configuration, else {DEFAULT_NOTES_DIR}]",
)
@click.option(
    "--base",
    metavar="REV",
    help="Judge the change from the merge base of REV and --head to --head instead of the staged change"
    " (a CI job on a pull request), with REV's configuration; notes of successive commits may chain.",
)
@click.option("--head", default="HEAD", show_default=True, metavar="REV", help="With --base: the new side.")
@click.option(
    "--post-rewrite",
    "rewrite",
    type=click.Choice(["amend", "rebase"]),
    envvar="PRE_COMMIT_REWRITE_COMMAND",
    help="Run as git's post-rewrite hook (pre-commit passes it in PRE_COMMIT_REWRITE_COMMAND): after"
    " 'amend', judge the amended commit against its parent and undo the amend when it is refused.",
)
@click.pass_context
def drift_note_hook(
    ctx: click.Context,
    patterns: tuple[str, ...],
    notes_dir: str | None,
    base: str | None,
    head: str,
    rewrite: str | None,
) -> None:
    """Refuse a commit that changes a sealed baseline without a drift note for that exact change.

    Reads the staged change (the index git commits, GIT_INDEX_FILE included) and the
    configuration staged at the repository root (else the only one staged in a subfolder),
    never the working tree. Exit 0 when
    every added, modified, renamed or deleted baseline has a staged note whose baseline,
    from and to match; 1 otherwise, saying what to do.
    """
    _check_options(base, head, rewrite)
    if rewrite == "rebase":
        click.echo("drift notes: a rebase is not judged here; the pull request's check (--base) judges it")
        ctx.exit(EXIT_CLEAN)
    git = Git()  # the root is asked of git only where a step needs it: a hook's start-up counts
    # what is judged: the range from --base, the amended commit, or the staged change
    mode = "range" if base is not None else rewrite or "staged"
    settings, result, warnings, amended = _judged(git, mode, base, head, patterns, notes_dir)
    text = render(result, notes_dir=settings.notes_dir, mode=mode, warnings=warnings)
    if amended is not None and result.problems:
        text += _undo(git, amended)
    click.echo(inert(text), nl=False)
    ctx.exit(EXIT_FINDINGS if result.problems else EXIT_CLEAN)


def _judged(
    git: Git, mode: str, base: str | None, head: str, patterns: tuple[str, ...], notes_dir: str | None
) -> tuple[GuardSettings, GuardResult, list[str], _Amend | None]:
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


def _judge_commit(git: Git, settings: GuardSettings, amended: _Amend | None) -> GuardResult:
    """The amended commit against its parent, else the staged change."""
    if amended is not None:
        return check_commit(
            git, amended.new, patterns=settings.patterns, notes_dir=settings.notes_dir, files=settings.files
        )
    return check_staged(git, patterns=settings.patterns, notes_dir=settings.notes_dir, files=settings.files)


def _check_options(base: str | None, head: str, rewrite: str | None) -> None:
    if base is None and head != "HEAD":
        raise click.UsageError("--head only applies with --base")
    if base is not None and rewrite is not None:
        raise click.UsageError("--base and --post-rewrite judge different things: give one")


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


class _Amend(NamedTuple):  # (a tuple: a dataclass costs a millisecond of every commit's start-up)
    """The commit ``git commit --amend`` replaced and the one it made."""

    old: str | None
    new: str


def _amended(git: Git) -> _Amend:
    """HEAD, and the commit it replaced when HEAD's reflog says the last thing was an amend."""
    new = git.revision("HEAD")
    if new is None:
        raise GitError("--post-rewrite amend: HEAD names no commit")
    return _Amend(old=_replaced(git, new), new=new)


def _replaced(git: Git, new: str) -> str | None:
    """The commit an amend replaced, when HEAD's reflog says the amend that made ``new`` came last."""
    try:
        out = git.run("log", "-g", "-2", "--format=%H %gs", "HEAD").decode("utf-8", "replace")
    except GitError:
        return None
    entries = [line.split(" ", 1) for line in out.splitlines() if " " in line]
    if len(entries) == 2 and entries[0][0] == new and entries[0][1].startswith("commit (amend)"):
        return entries[1][0]
    return None


def _undo(git: Git, amended: _Amend) -> str:
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


def render(result: GuardResult, *, notes_dir: str, mode: str = "staged", warnings: Sequence[str] = ()) -> str:
    """The guard's verdict as text: one line when it passes, what to do when it refuses.

    ``mode``: ``staged`` (a commit being made), ``amend`` (a commit amended) or ``range``.
    Warnings follow, one line each.
    """
    if not result.problems:
        out = [_passed(result), *(f"warning: {w}" for w in warnings)]
        return "\n".join(out) + "\n"
    out = [_REFUSED[mode], *_problem_lines(result)]
    out.append("")
    out.append(f"A drift note is Markdown under {notes_dir}/: YAML front matter with baseline, from and to")
    out.append("(no 'to' for a deletion), then why the drift is accepted. See docs/hooks.md.")
    if warnings:
        out.append("")
        out += [f"warning: {w}" for w in warnings]
    return "\n".join(out) + "\n"


#: the refusal's first line, by what was judged
_REFUSED = {
    "staged": "toolreplay: commit refused: a sealed baseline changes without a drift note for that"
    " exact change",
    "amend": "toolreplay: amend refused: the amended commit changes a sealed baseline without a drift"
    " note for that exact change",
    "range": "toolreplay: a sealed baseline changes in this range without a drift note for that exact change",
}


def _problem_lines(result: GuardResult) -> list[str]:
    """Each problem: a blank line, its subject, and its lines indented."""
    out: list[str] = []
    for problem in result.problems:
        out += ["", problem.subject, *("  " + line for line in problem.lines)]
    return out


def _passed(result: GuardResult) -> str:
    """The one line of a guard that passes: no change, or each change and the notes that accept it."""
    if not result.changes:
        return "drift notes: no sealed baseline changes"
    accepted = ", ".join(
        f"{quote(c.baseline)} by "
        + (" and ".join(quote(n.path) for n in result.notes if n.baseline == c.baseline) or "no note")
        for c in result.changes
    )
    return f"drift notes: every baseline change has its note ({accepted})"
