"""``toolreplay scope``: its own module, so commands that need no JSON Schema start without jsonschema."""

from __future__ import annotations

import math

import click

from toolreplay.analyses.scope import check_scope, load_scope
from toolreplay.cli import cli, emit, format_option
from toolreplay.ecma import DEFAULT_BUDGET_SECONDS
from toolreplay.findings import sort_findings
from toolreplay.report import Line, Report
from toolreplay.transcript import read_transcript


def _finite(seconds: float) -> float:
    if not math.isfinite(seconds):
        raise click.BadParameter("must be a finite number of seconds")
    return seconds


@cli.command(name="scope")
@click.argument("transcript")
@click.argument("scope_file", metavar="SCOPE")
@click.option(
    "--pattern-budget",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_BUDGET_SECONDS,
    show_default=True,
    metavar="SECONDS",
    help="Total time the scope's argument patterns may take on TRANSCRIPT; calls left unjudged "
    "are scope-unjudged findings.",
    callback=lambda _ctx, _param, value: _finite(value),
)
@format_option
@click.pass_context
def scope_cmd(ctx: click.Context, transcript: str, scope_file: str, pattern_budget: float, fmt: str) -> None:
    """Check TRANSCRIPT against the tools and arguments SCOPE allows."""
    scope = load_scope(scope_file)
    result = check_scope(read_transcript(transcript), scope, path=transcript, pattern_budget=pattern_budget)
    findings = sort_findings(result.findings)
    report = Report(
        command="scope",
        path=transcript,
        header=(
            Line(key="calls", value=result.calls, text=str(result.calls)),
            Line(key="findings", value=len(findings), text=str(len(findings))),
        ),
        findings=tuple(findings),
    )
    ctx.exit(emit([report], fmt))
