"""``toolreplay hook verify``: recompute the chain of every sealed file, one line each."""

from __future__ import annotations

import click

from toolreplay.chain import verify
from toolreplay.cli.base import EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE
from toolreplay.errors import InputError
from toolreplay.escape import inert, one_line
from toolreplay.transcript import read_links


def echo(text: str) -> None:
    """Print a line of the hook's output; file names in it are data, never a workflow command."""
    click.echo(inert(text))


@click.command(name="verify")
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
