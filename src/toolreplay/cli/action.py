"""``toolreplay action``: what the GitHub Action runs (action.yml at the repository root).

It runs ``check`` with the configuration, judges the drift-note rule over the pull
request's own diff, and hands the result to GitHub: annotations, the job summary, an
optional SARIF file, the one sticky PR comment, a JSON report and the step outputs.

Every line it prints, on stdout and stderr alike, is either a workflow command built by
:func:`~toolreplay.escape.workflow_command` (values escaped) or text passed
through :func:`~toolreplay.escape.inert`, so nothing read from a transcript,
a path or GitHub's answers can start a workflow command. The token is never printed.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath

import click

from toolreplay.check import run_check
from toolreplay.cli.action_accept import action_accept_cmd, step_exit_code
from toolreplay.cli.base import EXIT_CLEAN, EXIT_FINDINGS, atomic_output, plural
from toolreplay.cli.gate import tally
from toolreplay.config import Config, load_config, unmatched_globs
from toolreplay.driftnotes.base_settings import PullRange, judged_config, judged_fail_on
from toolreplay.driftnotes.pull import DriftOutcome, check_pull_request
from toolreplay.errors import InputError
from toolreplay.escape import workflow_command
from toolreplay.extras import installed
from toolreplay.findings import CheckInfo, Report
from toolreplay.gate import FailPolicy, describe
from toolreplay.github.action import (
    REPORT_NAME,
    Settings,
    divergence,
    parse_fail_on,
    pull_head_from_env,
    pull_range_from_env,
    settings_from_env,
    write_outputs,
)
from toolreplay.github.annotations import echo, plan_annotations
from toolreplay.github.comment import (
    CommentTarget,
    failure_warning,
    publish_report,
    pygithub,
    route_pygithub_log,
    target_from_env,
)
from toolreplay.github.summary import write_summary
from toolreplay.kinds import REPORT_ERROR, gated_level
from toolreplay.report import RENDERERS
from toolreplay.report.json import render_json
from toolreplay.report.merge import merge_shards, read_shard_report
from toolreplay.report.sarif import render_sarif
from toolreplay.report.text import render_text
from toolreplay.shards import DRIFT_SHARD, Shard, check_info, parse_shard


@click.group(name="action", invoke_without_command=True, cls=click.Group)
@click.pass_context
def action_cmd(ctx: click.Context) -> None:
    """What the GitHub Action runs: check, annotate, summarise, comment, set outputs.

    Its command accept obeys a maintainer's /toolreplay accept comment (the input command: accept).

    Settings come from the environment that action.yml sets: TOOLREPLAY_CONFIG,
    TOOLREPLAY_FAIL_ON (kinds separated by commas, any, or none), TOOLREPLAY_COMMENT,
    TOOLREPLAY_ANNOTATIONS (true or false), TOOLREPLAY_SARIF (a path), TOOLREPLAY_TOKEN,
    TOOLREPLAY_COMMENT_AUTHOR, and GitHub's own GITHUB_* and RUNNER_TEMP variables.
    Exit 1 when a finding fails the build (per fail-on), 2 on a usage error.
    """
    if ctx.invoked_subcommand is not None:
        return
    read: list[Settings] = []

    def run() -> int:
        read.append(settings_from_env())
        return run_action(read[0])

    code = step_exit_code(ctx, run)
    _exit_code_output(read[0] if read else None, code)
    ctx.exit(code)


def _shard(settings: Settings) -> Shard | None:
    """The shard input, parsed (None: the whole check); refused alongside merge."""
    if settings.shard and settings.merge:
        raise InputError("inputs shard and merge: give one (a matrix job runs a shard, the final job merges)")
    return parse_shard(settings.shard) if settings.shard else None


def _exit_code_output(settings: Settings | None, code: int) -> None:
    """The step's exit-code output of a run that ended in an error (publish sets it otherwise)."""
    if code not in (EXIT_CLEAN, EXIT_FINDINGS) and settings is not None and settings.output:
        write_outputs(settings.output, {"exit-code": str(code)})


def run_action(settings: Settings) -> int:
    """Everything the Action does, in order; returns the exit code.

    With ``shard`` it only checks that shard and writes its JSON report (the verdict is the
    merge's); with ``merge`` it checks nothing and publishes the merged shards' reports.
    """
    shard = _shard(settings)
    if settings.merge:
        return _merge_and_publish(settings)
    config = _config(settings)
    pull = pull_range_from_env()
    # which findings fail is the base commit's decision, not the PR's
    fail_on = judged_fail_on(config, config.fail_on, pull, workspace=settings.workspace, from_config=True)
    policy = parse_fail_on(settings.fail_on, fail_on)
    for warning in [*config.unread, *unmatched_globs(config)]:
        click.echo(workflow_command("warning", f"toolreplay: {warning}", title="toolreplay"))
    drift = _drift_rule(config, pull, shard, settings.workspace)
    # what is compared, the lock and the code that runs are the base commit's decision too (the
    # drift-note rule above reports the pull request's change of them)
    judged = judged_config(config, pull, workspace=settings.workspace)
    _preload(settings)
    checked = run_check(judged.config, shard=shard, lock_base=_base(pull), source_root=judged.source_root)
    reports, status = _with_drift(rebase(checked, config, settings.workspace), drift, shard)
    if shard is not None:
        return _write_shard(
            settings, reports, check_info(config, base=None, shard=shard, fail_on=fail_on), status
        )
    return publish(settings, reports, policy, status, base=_base(pull))


def _preload(settings: Settings) -> None:
    """Import now what publishing imports later: check may run the project's code (its tools_source,
    in a child), and nothing the judge imports afterwards may come from a disk that code could write."""
    for name in RENDERERS:
        RENDERERS[name]  # (imported when asked for)
    if settings.comment and settings.token and installed("github"):
        pygithub()


def _config(settings: Settings) -> Config:
    """The ``config`` input's configuration, else the one found from here."""
    return load_config(Path(settings.config) if settings.config else None)


def _base(pull: PullRange | None) -> str | None:
    return pull.base if pull else None


def _drift_rule(
    config: Config, pull: PullRange | None, shard: Shard | None, workspace: str
) -> DriftOutcome | None:
    """The drift-note rule over the pull request, in the shard that runs it (judged before check runs
    any of the project's code, its tools_source)."""
    if shard is not None and shard.index != DRIFT_SHARD:
        return None
    return check_pull_request(config, pull, workspace=workspace)


def _with_drift(
    reports: list[Report], drift: DriftOutcome | None, shard: Shard | None
) -> tuple[list[Report], str]:
    """The reports with the drift-note rule's, and its status line (or which shard has it)."""
    if drift is None:
        return reports, f"drift notes: checked by shard {DRIFT_SHARD}/{shard.count if shard else 1}"
    # in the order check and merge print them: by path, a file's own report first
    merged = sorted([*reports, *drift.reports], key=lambda r: (r.path, r.command != "check"))
    return merged, drift.status


def _write_shard(settings: Settings, reports: Sequence[Report], info: CheckInfo, status: str) -> int:
    """A matrix job's part: its text report in the log, its JSON report for the merge job."""
    _echo_text(reports)
    echo(status)
    assert info.shard is not None
    index, count = info.shard
    report_path = os.path.join(settings.runner_temp, f"toolreplay-shard-{index}-of-{count}.json")
    _write(report_path, render_json(reports, check=info))
    findings = sum(len(r.findings) for r in reports)
    echo(f"shard {index}/{count}: {len(reports)} reports, {findings} findings; JSON report: {report_path}")
    if settings.output:
        write_outputs(
            settings.output,
            {
                "findings": str(findings),
                "failing": "",
                "divergence": "",
                "report": report_path,
                "exit-code": "0",
            },
        )
    return EXIT_CLEAN


def shard_files(target: str) -> list[str]:
    """The JSON reports to merge: ``target`` itself, or every ``*.json`` under it, in name order."""
    if os.path.isdir(target):
        found = sorted(str(p) for p in Path(target).rglob("*.json") if p.is_file())
        if not found:
            raise InputError("input merge: no *.json reports in this folder", path=target)
        return found
    return [target]


def _merge_and_publish(settings: Settings) -> int:
    """The merge job: the shards bound to this workflow's checkout (its commit, its files and its
    configuration, the ``config`` input's or the one found from here, as the shard jobs found it)."""
    shards = [read_shard_report(path) for path in shard_files(settings.merge or "")]
    info, reports = merge_shards(shards, config=_config(settings))
    default = None if info.fail_on is None else frozenset(info.fail_on)
    policy = parse_fail_on(settings.fail_on, default)
    status = f"merged {plural(shards[0].numbers[1], 'shard')}; drift notes: see shard 1"
    return publish(settings, reports, policy, status, base=_base(pull_range_from_env()))


def publish(
    settings: Settings, reports: Sequence[Report], policy: FailPolicy, status: str, *, base: str | None = None
) -> int:
    """Annotations, log, job summary, SARIF, JSON report, PR comment and outputs; the exit code
    (``base``: the pull request's, which the accept commands name)."""
    reports = list(reports)
    findings, failing, errors = tally(reports, policy.fails)
    if policy.errors:  # unreadable files fail unless fail-on is none
        failing += errors
    if settings.annotations:
        _annotate(reports, policy, settings.workspace)
    _echo_text(reports)
    echo(
        f"total: {len(reports)} reports, {findings} findings, {failing} failing"
        f" (fail-on: {describe(policy)}), {errors} unreadable"
    )
    echo(status)
    fails = functools.partial(_fails, policy)
    _summarize(reports, fails, base)
    _write_sarif(settings.sarif, reports, fails)
    report_path = os.path.join(settings.runner_temp, REPORT_NAME)
    _write(report_path, render_json(reports))
    _try_comment(reports, settings, fails, base)
    code = EXIT_FINDINGS if failing else EXIT_CLEAN
    if settings.output:
        _write_step_outputs(settings.output, reports, findings, failing, report_path, code)
    return code


def _write_step_outputs(
    output: str, reports: Sequence[Report], findings: int, failing: int, report_path: str, code: int
) -> None:
    """The step's outputs: the counts, the first divergence, the JSON report's path, the exit code."""
    first = divergence(reports)
    write_outputs(
        output,
        {
            "findings": str(findings),
            "failing": str(failing),
            "divergence": "" if first is None else str(first),
            "report": report_path,
            "exit-code": str(code),
        },
    )


def _echo_text(reports: Sequence[Report]) -> None:
    """The text report in the log (nothing when it is empty)."""
    text = render_text(reports)
    if text:
        echo(text.rstrip("\n"))


def _write_sarif(path: str | None, reports: Sequence[Report], fails: Callable[[str], bool]) -> None:
    if path:
        _write(path, render_sarif(reports, fails=fails))
        echo(f"SARIF: {path}")


def _fails(policy: FailPolicy, kind: str) -> bool:
    """Whether findings of ``kind`` fail the build (a report's errors as ``fail-on`` says)."""
    return policy.errors if kind == REPORT_ERROR else policy.fails(kind)


def _annotate(reports: Sequence[Report], policy: FailPolicy, workspace: str) -> None:
    """The workflow commands that annotate the findings, and a note for those left out."""
    fails = functools.partial(_fails, policy)
    plan = plan_annotations(reports, level=lambda kind: gated_level(kind, fails))
    for annotation in plan.shown:
        click.echo(annotation.command(root=workspace))
    note = plan.note()
    if note:
        echo(note)


def _summarize(reports: Sequence[Report], fails: Callable[[str], bool], base: str | None) -> None:
    summary = write_summary(reports, fails=fails, base=base)
    if summary.written:
        echo(f"job summary: {summary.size} bytes{' (trimmed to fit 1 MiB)' if summary.trimmed else ''}")
    else:
        echo(f"job summary: not written ({summary.reason})")


def _try_comment(
    reports: Sequence[Report], settings: Settings, fails: Callable[[str], bool], base: str | None
) -> None:
    try:
        _comment(reports, settings, fails, base)
    except Exception as err:
        # best effort: whatever goes wrong with the comment, the exit code reflects findings only
        click.echo(failure_warning(err, settings.token))


def rebase(reports: Sequence[Report], config: Config, workspace: str) -> list[Report]:
    """Paths relative to the config's folder made relative to the workspace (the repository root)."""
    prefix = os.path.relpath(config.root.resolve(), os.path.realpath(workspace))
    if prefix == os.curdir or prefix.startswith(os.pardir):
        return list(reports)
    base = PurePosixPath(Path(prefix).as_posix())
    return [_moved_report(r, base) for r in reports]


def _moved_report(r: Report, base: PurePosixPath) -> Report:
    """A report with its paths (its findings', its notes folder and note) under ``base``."""
    return dataclasses.replace(
        r,
        path=_moved(base, r.path),
        findings=tuple(dataclasses.replace(f, path=_moved(base, f.path)) for f in r.findings),
        notes=None if r.notes is None else _moved(base, r.notes),
        note=None if r.note is None else _moved(base, r.note),
    )


def _moved(base: PurePosixPath, path: str) -> str:
    """A relative path under ``base``; an absolute one (or none) as it is."""
    return str(base / path) if path and not os.path.isabs(path) else path


def _write(path: str, text: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with atomic_output(path, replace=True) as out:  # the run's own report, rewritten each run
        out.write(text)


def _comment(
    reports: Sequence[Report], settings: Settings, fails: Callable[[str], bool], base: str | None
) -> None:
    target = _comment_target(settings)
    if target is None or not settings.token:
        return
    route_pygithub_log(settings.token)
    result = publish_report(
        reports,
        target=target,
        token=settings.token,
        author=settings.comment_author,
        fails=fails,
        base=base,
        head=pull_head_from_env(),
    )
    warning = result.warning()
    if warning is not None:
        click.echo(warning)
        return
    echo(f"PR comment: {result.status} ({result.url or 'no URL'})")


def _comment_target(settings: Settings) -> CommentTarget | None:
    """The pull request the comment goes to; None (said in the log) when none is written."""
    if not settings.comment:
        echo("PR comment: off")
        return None
    target = target_from_env()
    if target is None:
        echo("PR comment: skipped, this run is not about a pull request")
        return None
    if not settings.token:
        click.echo(
            workflow_command(
                "warning",
                "toolreplay could not write the PR comment (no token: pass the token input, which "
                "defaults to github.token); the annotations and the job summary still carry the report",
                title="toolreplay comment",
            )
        )
        return None
    return target


action_cmd.add_command(action_accept_cmd)
