"""``toolreplay validate``: its own module, so commands that need no JSON Schema start without jsonschema."""

from __future__ import annotations

from collections.abc import Sequence

import click

from toolreplay.cli.base import EXIT_CLEAN, EXIT_USAGE
from toolreplay.cli.formats import emit, format_option
from toolreplay.errors import InputError
from toolreplay.escape import one_line
from toolreplay.findings import Line, Report
from toolreplay.schemas import SCHEMA_FILES
from toolreplay.validate import validate_file


def _validated_files(files: Sequence[str], kind: str | None) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """Each file that could be read with its problems, and the errors of those that could not."""
    checked: list[tuple[str, list[str]]] = []
    refused: list[str] = []
    for path in files:
        try:
            checked.append((path, validate_file(path, kind)))
        except InputError as err:
            refused.append(str(err))
    return checked, refused


def _validated(path: str, problems: list[str], *, alone: bool) -> Report:
    """One file's report: valid, or invalid with its problems."""
    status = "invalid" if problems else "valid"
    # one key whatever the number of files; the text form of a lone file says its name
    line = Line(key="result", value=status, text=status, label=path if alone else "")
    return Report(command="validate", path=path, header=(line,), errors=tuple(problems))


@click.command(name="validate")
@click.argument("files", nargs=-1, required=True)
@click.option(
    "--kind", type=click.Choice(sorted(SCHEMA_FILES)), help="Kind of every FILE (default: from its name)."
)
@format_option
@click.pass_context
def validate_cmd(ctx: click.Context, files: tuple[str, ...], kind: str | None, fmt: str) -> None:
    """Check each FILE against its published JSON Schema.

    A FILE that cannot be read, or whose kind cannot be told from its name, is one error
    line on stderr and exit 2, after the other FILEs are checked and reported.
    """
    checked, refused = _validated_files(files, kind)
    reports = [_validated(path, problems, alone=len(checked) == 1) for path, problems in checked]
    code = emit(reports, fmt) if reports else EXIT_CLEAN
    for problem in refused:
        click.echo(f"toolreplay: error: {one_line(problem)}", err=True)
    ctx.exit(EXIT_USAGE if refused else code)
