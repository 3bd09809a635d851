"""``toolreplay validate``: its own module, so commands that need no JSON Schema start without jsonschema."""

from __future__ import annotations

import click

from toolreplay.cli import cli, emit, format_option
from toolreplay.report import Line, Report
from toolreplay.validate import SCHEMA_FILES, validate_file


@cli.command(name="validate")
@click.argument("files", nargs=-1, required=True)
@click.option(
    "--kind", type=click.Choice(sorted(SCHEMA_FILES)), help="Kind of every FILE (default: from its name)."
)
@format_option
@click.pass_context
def validate_cmd(ctx: click.Context, files: tuple[str, ...], kind: str | None, fmt: str) -> None:
    """Check each FILE against its published JSON Schema."""
    reports = []
    for path in files:
        problems = validate_file(path, kind)
        status = "invalid" if problems else "valid"
        reports.append(
            Report(
                command="validate",
                path=path,
                # one key whatever the number of files; the text form of a lone file says its name
                header=(
                    Line(key="result", value=status, text=status, label=path if len(files) == 1 else ""),
                ),
                errors=tuple(problems),
            )
        )
    ctx.exit(emit(reports, fmt))
