"""``toolreplay scope``: its own module, so commands that need no JSON Schema start without jsonschema."""

from __future__ import annotations

import click

from toolreplay.analyses.scope import check_scope, load_scope
from toolreplay.cli.base import Seconds
from toolreplay.cli.defaults import announce, config_option, path_setting, read_config, setting
from toolreplay.cli.formats import emit, format_option
from toolreplay.config import Config
from toolreplay.findings import Line, Report, sort_findings
from toolreplay.limits import DEFAULT_BUDGET_SECONDS
from toolreplay.transcript import read_transcript


@click.command(name="scope")
@click.argument("transcript")
@click.argument("scope_file", metavar="[SCOPE]", required=False)
@click.option(
    "--pattern-budget",
    type=Seconds(),
    default=None,
    metavar="SECONDS",
    help="Total time the scope's argument patterns may take on TRANSCRIPT; calls left unjudged "
    "are scope-unjudged findings (default: the config's pattern_budget_seconds, "
    f"else {DEFAULT_BUDGET_SECONDS:g}).",
)
@config_option
@format_option
@click.pass_context
def scope_cmd(
    ctx: click.Context,
    transcript: str,
    scope_file: str | None,
    pattern_budget: float | None,
    config_file: str | None,
    fmt: str,
) -> None:
    """Check TRANSCRIPT against the tools and arguments SCOPE allows (default: the config's scope)."""
    config = read_config(config_file)
    used: list[str] = []
    scope_file = _scope_file(config, scope_file, used)
    pattern_budget = _pattern_budget(config, pattern_budget, used)
    announce(config, used)
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


def _scope_file(config: Config | None, scope_file: str | None, used: list[str]) -> str:
    """SCOPE, else the config's scope."""
    scope = path_setting(scope_file, config, "scope", used)
    if scope is None:
        raise click.UsageError(
            "give SCOPE, or set scope in the config ([tool.toolreplay] or toolreplay.toml)"
        )
    return scope


def _pattern_budget(config: Config | None, pattern_budget: float | None, used: list[str]) -> float:
    """--pattern-budget, else the config's pattern_budget_seconds, else the default."""
    chosen = setting(pattern_budget, config, "pattern_budget_seconds", used)
    return DEFAULT_BUDGET_SECONDS if chosen is None else float(chosen)
