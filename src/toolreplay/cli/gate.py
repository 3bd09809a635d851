"""``--fail-on`` of ``check``, ``diff`` and ``probe``: which findings set the exit code.

The flag reads as the Action's ``fail-on`` input (:mod:`toolreplay.gate`); without it a
command takes the config's ``fail_on``, else every kind but the advisory ones fails.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import click

from toolreplay.cli.base import EXIT_CLEAN, EXIT_FINDINGS
from toolreplay.errors import InputError
from toolreplay.findings import Report
from toolreplay.gate import FailOnError, FailPolicy, describe, parse_fail_on
from toolreplay.kinds import REPORT_ERROR
from toolreplay.report import RENDERERS

if TYPE_CHECKING:
    from toolreplay.config import Config


def fail_on_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--fail-on",
        "fail_on",
        metavar="KINDS",
        help="Kinds that fail (exit 1), separated by commas; 'all,-audit-incomplete' is every kind"
        " but one; any, none (default: the config's fail_on, else every kind but the advisory ones).",
    )(func)


def fail_policy(config: Config | None, text: str | None, used: list[str]) -> FailPolicy:
    """The flag's policy, else the config's ``fail_on`` (appended to ``used``), else the default."""
    default = _configured_fail_on(config, text, used)
    try:
        return parse_fail_on(text or "", default, name="--fail-on")
    except FailOnError as err:
        raise InputError(str(err)) from err


def _configured_fail_on(config: Config | None, text: str | None, used: list[str]) -> frozenset[str] | None:
    """The config's ``fail_on`` (None: it sets none), said to be used when no flag overrides it."""
    if config is None or config.fail_on is None:
        return None
    if not text:
        used.append("fail_on")
    return config.fail_on


def gated(policy: FailPolicy) -> Callable[[str], bool]:
    """Which kinds fail a gated command's run: the policy's, and a file it could not read."""
    return lambda kind: kind == REPORT_ERROR or policy.fails(kind)


def emit_gated(reports: Sequence[Report], fmt: str, policy: FailPolicy) -> int:
    """Print the reports; exit 1 when a finding of a kind that fails is among them.

    Findings the policy lets pass are still reported (as warnings where a format shows levels,
    so no ``::error`` or SARIF error comes with exit 0), and stderr says how many failed.
    """
    fails = gated(policy)
    click.echo(RENDERERS[fmt](reports, fails=fails), nl=False)
    findings, failing, errors = tally(reports, fails)
    if failing < findings:
        click.echo(
            f"toolreplay: {findings} findings, {failing} failing (fail-on: {describe(policy)})", err=True
        )
    return EXIT_FINDINGS if failing or errors else EXIT_CLEAN


def tally(reports: Sequence[Report], fails: Callable[[str], bool]) -> tuple[int, int, int]:
    """(findings, those of a kind that fails, unreadable files' errors) of the reports."""
    findings = [f for r in reports for f in r.findings]
    return len(findings), sum(1 for f in findings if fails(f.kind)), sum(len(r.errors) for r in reports)
