"""``toolreplay check``: what CI and the GitHub Action run."""

from __future__ import annotations

from pathlib import Path

import click

from toolreplay.check import run_check_with_status
from toolreplay.cli import EXIT_CLEAN, EXIT_FINDINGS, cli, format_option
from toolreplay.config import load_config
from toolreplay.report import RENDERERS


@cli.command(name="check")
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path),
    help="Config file (default: found from here up).",
)
@click.option("--jobs", type=click.IntRange(min=1), help="Worker processes (default: one per core).")
@click.option(
    "--base",
    metavar="REF",
    help="Also enforce the drift-note rule over REF...HEAD (what a pull request changes).",
)
@format_option
@click.pass_context
def check_cmd(
    ctx: click.Context, config_path: Path | None, jobs: int | None, base: str | None, fmt: str
) -> None:
    """Run every analysis the configuration names over every matching file.

    Reads [tool.toolreplay] from pyproject.toml or a toolreplay.toml (the nearest one from
    here up, or --config). Exit 1 when a finding of a kind in fail_on (default: every kind)
    or an unreadable file is reported.
    """
    config = load_config(config_path)
    reports, status = run_check_with_status(config, jobs=jobs, base=base)
    click.echo(RENDERERS[fmt](reports), nl=False)
    findings = [f for r in reports for f in r.findings]
    failing = [f for f in findings if config.fails(f.kind)]
    errors = sum(len(r.errors) for r in reports)
    if fmt == "text":
        counts = f"{len(findings)} findings, {len(failing)} failing, {errors} unreadable"
        click.echo(f"total: {len(reports)} reports, {counts}")
        if status is not None:
            # the rule ran even when it found nothing: say what it saw (no baseline change, every note)
            click.echo(status)
    ctx.exit(EXIT_FINDINGS if failing or errors else EXIT_CLEAN)
