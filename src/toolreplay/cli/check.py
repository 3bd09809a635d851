"""``toolreplay check``: what CI and the GitHub Action run."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from toolreplay.check import run_check_with_status
from toolreplay.cli.base import EXIT_CLEAN, EXIT_FINDINGS, warn
from toolreplay.cli.formats import format_option
from toolreplay.cli.gate import fail_on_option, fail_policy, tally
from toolreplay.config import Config, load_config, unmatched_globs
from toolreplay.driftnotes.base_settings import PullRange, judged_fail_on
from toolreplay.findings import CheckInfo, Report, masked_text, masked_total, stale_rules
from toolreplay.report import RENDERERS
from toolreplay.report.merge import merge_shards, read_shard_report
from toolreplay.shards import check_info, parse_shard


@click.command(name="check")
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
@click.option(
    "--shard",
    "shard_spec",
    metavar="K/N",
    help="Run only shard K of N (a CI matrix job); toolreplay merge puts the JSON reports together.",
)
@fail_on_option
@format_option
@click.pass_context
def check_cmd(
    ctx: click.Context,
    config_path: Path | None,
    jobs: int | None,
    base: str | None,
    shard_spec: str | None,
    fail_on: str | None,
    fmt: str,
) -> None:
    """Run every analysis the configuration names over every matching file.

    Reads [tool.toolreplay] from pyproject.toml or a toolreplay.toml (the nearest one from
    here up, or --config). Exit 1 when a finding of a kind in fail_on (or --fail-on; default:
    every kind but the advisory ones) or an unreadable file is reported.

    With --shard K/N, only the files of shard K (by a hash of their path) are checked, and
    the drift-note rule of --base runs in shard 1 only.
    """
    if shard_spec is not None and fail_on:
        # merge holds every shard to the configuration's fail_on: a shard's own would be refused there
        raise click.UsageError("--fail-on does not go with --shard: set fail_on in the configuration")
    shard = parse_shard(shard_spec) if shard_spec is not None else None
    config = load_config(config_path)
    for warning in [*config.unread, *unmatched_globs(config)]:
        warn(warning)
    kinds = _failing_kinds(config, fail_on, base)
    RENDERERS[fmt]  # (imported before check may run the project's code, docs/spec.md §7.1)
    reports, status = run_check_with_status(config, jobs=jobs, base=base, shard=shard)
    info = check_info(config, base=base, shard=shard, drift=status, fail_on=kinds)
    ctx.exit(finish(reports, info, fmt))


def _failing_kinds(config: Config, fail_on: str | None, base: str | None) -> frozenset[str] | None:
    """The kinds that fail: --fail-on, else the config's fail_on (with --base: the base commit's)."""
    kinds = fail_policy(config, fail_on, []).kinds
    if base is None:
        return kinds
    # whether the drift-note rule's findings fail is the base commit's decision, not the PR's
    pull = PullRange(base=base, head="HEAD")
    return judged_fail_on(config, kinds, pull, workspace=str(config.root), from_config=fail_on is None)


def finish(reports: Sequence[Report], info: CheckInfo, fmt: str) -> int:
    """Print the report of a check (or of merged shards) and return its exit code.

    ``check`` and ``merge`` both end here, so they print the same bytes for the same run.
    """
    click.echo(RENDERERS[fmt](reports, check=info), nl=False)
    findings, failing, errors = tally(reports, info.fails)
    masked = masked_total(reports)
    if fmt == "text":
        counts = f"{findings} findings, {failing} failing, {errors} unreadable"
        _totals(f"total: {len(reports)} reports, {counts}", info.drift, masked)
    _warn_stale(masked)
    return EXIT_FINDINGS if failing or errors else EXIT_CLEAN


def _totals(total: str, drift: str | None, masked: list[int] | None) -> None:
    """The text report's closing lines: the totals, the drift-note rule's line, the masked values."""
    click.echo(total)
    if drift is not None:
        # the rule ran even when it found nothing: say what it saw (no baseline change, every note)
        click.echo(drift)
    if masked is not None:
        click.echo(f"masked: {masked_text(masked)}")


def _warn_stale(masked: list[int] | None) -> None:
    """A warning for each volatile rule that masked nothing."""
    for warning in stale_rules(masked) if masked is not None else ():
        warn(warning)


@click.command(name="merge")
@click.argument("paths", metavar="REPORT.json...", nargs=-1, required=True)
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path),
    help="Also hold the reports to this configuration and to the checkout it is in (commit, files).",
)
@format_option
@click.pass_context
def merge_cmd(ctx: click.Context, paths: tuple[str, ...], config_path: Path | None, fmt: str) -> None:
    """Render the JSON reports of check --shard K/N, every shard once, as one check.

    The output and exit code are those of one unsharded check with the same configuration.
    Reports of another toolreplay version, configuration, --base, commit or inputs, a shard
    given twice, overlapping files or a missing shard are refused (exit 2). With --config the
    shards must also have judged this checkout: its commit, its files, that configuration.
    """
    config = load_config(config_path) if config_path is not None else None
    for warning in config.unread if config is not None else ():
        warn(warning)
    info, reports = merge_shards([read_shard_report(p) for p in paths], config=config)
    ctx.exit(finish(reports, info, fmt))
