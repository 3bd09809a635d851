"""``toolreplay action accept``: what the Action runs with ``command: accept``, on an ``issue_comment``
event (docs/spec.md §5.2; the work is :mod:`toolreplay.github.approve`'s).

Exit 0 when it accepted and pushed, or the comment is not a ``/toolreplay accept``; 1 when it
refused (and replied why); 2 on a usage error (not an ``issue_comment`` event, no token). Every line
it prints is inert or a workflow command with escaped values; the token is never printed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import click

from toolreplay.cli.accept import accept_unit
from toolreplay.cli.base import EXIT_CLEAN, EXIT_FINDINGS, EXIT_INTERNAL, EXIT_USAGE
from toolreplay.config import nearest_config
from toolreplay.errors import InputError, ToolreplayError
from toolreplay.escape import workflow_command
from toolreplay.extras import install_hint, installed
from toolreplay.github.action import Settings, event_payload, settings_from_env, write_outputs
from toolreplay.github.annotations import echo
from toolreplay.github.approval import Unit
from toolreplay.github.approve import Approver, Comment, Outcome, comment_from_event
from toolreplay.github.branch import Branch
from toolreplay.github.comment import (
    DEFAULT_API_URL,
    failure_reason,
    make_client,
    pygithub,
    route_pygithub_log,
)


@click.command(name="accept")
@click.pass_context
def action_accept_cmd(ctx: click.Context) -> None:
    """Accept what the sticky PR comment listed, on a maintainer's `/toolreplay accept <reason>`.

    Runs on an issue_comment event (GITHUB_EVENT_PATH, GITHUB_API_URL, GITHUB_REPOSITORY): the
    commenter must have write access, the pull request must come from this repository, and its
    head must be the commit the sticky comment described. Then the pull request's branch is
    checked out in GITHUB_WORKSPACE, each listed baseline accepted with the reason as its notes'
    prose, the result committed and pushed, and a reply posted. Exit 1 when refused (with a reply).
    """
    ctx.exit(step_exit_code(ctx, lambda: run_accept(settings_from_env())))


def step_exit_code(ctx: click.Context, run: Callable[[], int]) -> int:
    """``run``'s exit code, or the Action step's for what it raised: a usage error as an ``::error``
    line (2), anything else as an internal error (3; ``--traceback`` lets it through)."""
    try:
        return run()
    except ToolreplayError as err:
        click.echo(workflow_command("error", f"toolreplay: {err}", title="toolreplay"), err=True)
        return EXIT_USAGE
    except Exception as err:
        if ctx.find_root().params.get("traceback"):
            raise
        echo(
            f"toolreplay: internal error: {type(err).__name__}: {err}"
            " (please report this; rerun with --traceback for details)",
            err=True,
        )
        return EXIT_INTERNAL


def run_accept(settings: Settings, environ: dict[str, str] | None = None) -> int:
    """Everything ``action accept`` does; the exit code."""
    env = dict(os.environ if environ is None else environ)
    repository = _repository(env)
    comment = comment_from_event(event_payload(env), repository)
    if comment is None:
        echo("not a new comment on a pull request: nothing to do")
        return EXIT_CLEAN
    _check_can_push(settings)
    outcome = _approved(settings, env, comment)
    _report(outcome, settings)
    return EXIT_FINDINGS if outcome.status == "refused" else EXIT_CLEAN


def _approved(settings: Settings, env: dict[str, str], comment: Comment) -> Outcome:
    """What the approver made of the comment: the units accepted, pushed and replied to, or refused."""
    route_pygithub_log(settings.token)
    branch = Branch(path=settings.workspace, token=settings.token)
    approver = Approver(
        client=make_client(settings.token, env.get("GITHUB_API_URL") or DEFAULT_API_URL),
        branch=branch,
        accept=lambda unit, reason, base: _accept(branch, unit, reason, base, settings.config),
        author=settings.comment_author,
    )
    try:
        return approver.run(comment)
    except (pygithub().error, OSError) as err:  # (requests' errors are OSErrors)
        # (a branch already pushed is said in the log above: only the reply is missing then)
        raise InputError(f"GitHub: {failure_reason(err, settings.token)}") from err


def _repository(env: dict[str, str]) -> str:
    """The repository (owner/name) of the ``issue_comment`` event the runner gave."""
    if env.get("GITHUB_EVENT_NAME") != "issue_comment":
        raise InputError("command accept runs on an issue_comment event (a /toolreplay accept comment)")
    repository = env.get("GITHUB_REPOSITORY", "")
    if "/" not in repository:
        raise InputError("runner variable GITHUB_REPOSITORY: expected owner/name")
    return repository


def _check_can_push(settings: Settings) -> None:
    """A token to push and reply with, and PyGithub to do it."""
    if not settings.token:
        raise InputError("input token: command accept needs a token (contents and pull-requests write)")
    if not installed("github"):
        raise InputError(f"command accept needs PyGithub ({install_hint('github')})")


def _accept(branch: Branch, unit: Unit, reason: str, base: str, config: str | None) -> Sequence[str]:
    """``toolreplay accept`` of one unit, from the work tree's top (where the comment's paths start).
    Refused when the pull request changes the configuration: where the lock and the notes go, and
    what judges, would be the pull request's own choice."""
    os.chdir(branch.path)
    found = nearest_config(config)
    if found is not None and branch.changes(base, found.source):
        raise InputError(
            "the pull request changes toolreplay's configuration: accept its drift from a checkout",
            path=found.source,
        )
    done = accept_unit(unit.baseline, run=unit.run, reason=reason, base=base, config_file=config)
    for kept in done.kept:
        echo(f"toolreplay: {kept}")
    return list(done.written)


def _report(outcome: Outcome, settings: Settings) -> None:
    """The outcome in the log, and the step's outputs."""
    echo(f"/toolreplay accept: {outcome.status}")
    for line in outcome.lines:
        echo(line)
    if settings.output:
        write_outputs(settings.output, {"accepted": outcome.commit or ""})
