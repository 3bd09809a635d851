"""``toolreplay hook ...``: the commands the pre-commit hooks run (.pre-commit-hooks.yaml)."""

from __future__ import annotations

from pathlib import Path

import click

from toolreplay.chain import verify
from toolreplay.cli import EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE, cli
from toolreplay.config import Config, find_config, load_config
from toolreplay.errors import InputError
from toolreplay.findings import one_line, quote
from toolreplay.github.annotations import echo, inert
from toolreplay.hooks.drift_note import (
    DEFAULT_BASELINES,
    DEFAULT_NOTES_DIR,
    Git,
    GuardResult,
    check_range,
    check_staged,
    normalize_dir,
)
from toolreplay.transcript import read_links


@cli.group(name="hook")
def hook() -> None:
    """Commands the pre-commit hooks run."""


@hook.command(name="verify")
@click.argument("files", nargs=-1)
@click.pass_context
def verify_hook(ctx: click.Context, files: tuple[str, ...]) -> None:
    """Recompute the hash chain of every sealed FILE; print one line for each.

    Exit 1 when a chain is broken, 2 when a file is not a sealed transcript at all.
    """
    code = EXIT_CLEAN
    for path in files:
        try:
            state = verify(read_links(path))
        except InputError as err:
            echo(one_line(str(err)))
            code = EXIT_USAGE
            continue
        name = one_line(path)
        if state.broken is None:
            echo(f"{name}: chain intact, {state.links} links, head {state.head}")
            continue
        b = state.broken
        echo(
            f"{name}:{b.line}: chain broken at index {b.position}: {b.reason};"
            f" expected {b.expected}, found {b.found}"
        )
        code = max(code, EXIT_FINDINGS)
    ctx.exit(code)


@hook.command(name="drift-note")
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
    " (a CI job on a pull request); notes of successive commits may chain.",
)
@click.option("--head", default="HEAD", show_default=True, metavar="REV", help="With --base: the new side.")
@click.pass_context
def drift_note_hook(
    ctx: click.Context, patterns: tuple[str, ...], notes_dir: str | None, base: str | None, head: str
) -> None:
    """Refuse a commit that changes a sealed baseline without a drift note for that exact change.

    Reads the staged change (the index git commits, GIT_INDEX_FILE included) and never
    the working tree. Exit 0 when every added, modified, renamed or deleted baseline has
    a staged note whose baseline, from and to match; 1 otherwise, saying what to do.
    """
    if base is None and head != "HEAD":
        raise click.UsageError("--head only applies with --base")
    configured = _configured()
    if not patterns and configured is not None and configured.baselines:
        patterns = configured.baselines
    if notes_dir is None:
        notes_dir = configured.drift_notes if configured is not None else DEFAULT_NOTES_DIR
    notes_dir = normalize_dir(notes_dir)
    git = Git()
    chosen = patterns or DEFAULT_BASELINES
    if base is None:
        result = check_staged(git, patterns=chosen, notes_dir=notes_dir)
    else:
        result = check_range(git, base, head, patterns=chosen, notes_dir=notes_dir)
    click.echo(inert(render(result, notes_dir=notes_dir, staged=base is None)), nl=False)
    ctx.exit(EXIT_FINDINGS if result.problems else EXIT_CLEAN)


def _configured() -> Config | None:
    """The project's configuration, when it has one (the hook runs at the repository root)."""
    path = find_config(Path.cwd())
    return None if path is None else load_config(path)


def render(result: GuardResult, *, notes_dir: str, staged: bool) -> str:
    """The guard's verdict as text: one line when it passes, what to do when it refuses."""
    folder = notes_dir + "/"
    if not result.problems:
        if not result.changes:
            return "drift notes: no sealed baseline changes\n"
        accepted = ", ".join(
            f"{quote(c.baseline)} by "
            + (" and ".join(quote(n.path) for n in result.notes if n.baseline == c.baseline) or "no note")
            for c in result.changes
        )
        return f"drift notes: every baseline change has its note ({accepted})\n"
    if staged:
        head = (
            "toolreplay: commit refused: a sealed baseline changes without a drift note for that exact change"
        )
    else:
        head = (
            "toolreplay: a sealed baseline changes in this range without a drift note for that exact change"
        )
    out = [head]
    for problem in result.problems:
        out.append("")
        out.append(problem.subject)
        out.extend("  " + line for line in problem.lines)
    out.append("")
    out.append(f"A drift note is Markdown under {folder}: YAML front matter with baseline, from and to")
    out.append("(no 'to' for a deletion), then why the drift is accepted. See docs/hooks.md.")
    return "\n".join(out) + "\n"
