"""``toolreplay hook drift-note``: the guard that refuses a baseline change without its drift note."""

from __future__ import annotations

from collections.abc import Sequence

import click

from toolreplay.cli.base import EXIT_CLEAN, EXIT_FINDINGS
from toolreplay.driftnotes.guard import (
    DEFAULT_BASELINES,
    DEFAULT_NOTES_DIR,
    GuardResult,
)
from toolreplay.driftnotes.hook import judge_hook, undo_amend
from toolreplay.escape import inert, quote
from toolreplay.git import Git


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
    text, refused = _judged(git, mode, base, head, patterns, notes_dir)
    click.echo(inert(text), nl=False)
    ctx.exit(EXIT_FINDINGS if refused else EXIT_CLEAN)


def _judged(
    git: Git, mode: str, base: str | None, head: str, patterns: tuple[str, ...], notes_dir: str | None
) -> tuple[str, bool]:
    """The guard's verdict as text (an amend it refuses undone), and whether it refuses."""
    settings, result, warnings, amended = judge_hook(git, mode, base, head, patterns, notes_dir)
    text = render(result, notes_dir=settings.notes_dir, mode=mode, warnings=warnings)
    if amended is not None and result.problems:
        text += undo_amend(git, amended)
    return text, bool(result.problems)


def _check_options(base: str | None, head: str, rewrite: str | None) -> None:
    if base is None and head != "HEAD":
        raise click.UsageError("--head only applies with --base")
    if base is not None and rewrite is not None:
        raise click.UsageError("--base and --post-rewrite judge different things: give one")


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
    accepted = ", ".join(f"{quote(c.baseline)} by {_notes_of(result, c.baseline)}" for c in result.changes)
    return f"drift notes: every baseline change has its note ({accepted})"


def _notes_of(result: GuardResult, baseline: str) -> str:
    """The notes that accept ``baseline``'s change, as the passing line names them."""
    return " and ".join(quote(n.path) for n in result.notes if n.baseline == baseline) or "no note"
