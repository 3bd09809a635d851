"""The ``--format`` option and printing a command's reports in the format it names."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import click

from toolreplay.cli.base import EXIT_CLEAN, EXIT_FINDINGS
from toolreplay.findings import Report
from toolreplay.report import RENDERERS


def format_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(sorted(RENDERERS)),
        default="text",
        show_default=True,
        help="Report format.",
    )(func)


def emit(reports: Sequence[Report], fmt: str) -> int:
    click.echo(RENDERERS[fmt](reports), nl=False)
    return EXIT_FINDINGS if any(r.failed for r in reports) else EXIT_CLEAN
