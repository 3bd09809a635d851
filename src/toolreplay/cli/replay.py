"""``toolreplay replay``: a transcript against itself."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable

import click

from toolreplay import parallel
from toolreplay.analyses.replay import Call, ReplayResult, file_calls, read_calls, replay_calls
from toolreplay.analyses.volatile import Volatile
from toolreplay.cli.base import mutator_option
from toolreplay.cli.defaults import (
    announce,
    config_option,
    mutators_and_lock,
    read_config,
    setting,
    volatile_of,
)
from toolreplay.cli.formats import emit, format_option
from toolreplay.findings import Report, masked_line, replay_header, sort_findings


@click.command(name="replay")
@click.argument("transcript")
@mutator_option
@click.option(
    "--state-aware/--no-state-aware",
    default=None,
    help="Do not report non-determinism across a call to a mutator (default: the config's"
    " state_aware, else off, as in 0.6).",
)
@click.option(
    "--tools",
    "lock_path",
    metavar="LOCK",
    help="Tool lock (default: the config's tools_lock): its mutates flags decide for the tools it"
    " names, and tools it declares not deterministic are not reported for non-determinism.",
)
@config_option
@format_option
@click.pass_context
def replay_cmd(
    ctx: click.Context,
    transcript: str,
    mutators: tuple[str, ...],
    state_aware: bool | None,
    lock_path: str | None,
    config_file: str | None,
    fmt: str,
) -> None:
    """Replay TRANSCRIPT against itself: non-determinism and redundant calls.

    A call to a mutator (a --mutator tool, the config's mutators, a tool the lock says
    mutates, or any call that recorded its state) is never redundant. Non-determinism is
    reported across mutators unless --state-aware (0.6's default; check is state-aware).
    """
    chosen, state_aware, nondeterministic, volatile = _replay_settings(
        config_file, mutators, lock_path, state_aware
    )
    judge = functools.partial(
        replay_calls,
        mutators=chosen,
        state_aware=bool(state_aware),
        nondeterministic=nondeterministic,
        path=transcript,
    )
    result = _replay(transcript, judge, volatile)
    findings = sort_findings(result.findings)
    header = replay_header(result.calls, result.divergence, len(findings))
    if volatile is not None:
        header += (masked_line(volatile.counts(transcript)),)
    report = Report(command="replay", path=transcript, header=header, findings=tuple(findings))
    code = emit([report], fmt)
    if result.across_mutators and fmt == "text":
        # the report keeps 0.6's lines byte for byte; the knob is named beside it, on stderr
        click.echo(
            f"toolreplay: note: {result.across_mutators} non-determinism finding(s) compare calls with a"
            " mutator between them (0.6's default); --state-aware, or state_aware = true in the config,"
            " compares only calls with no state change between them",
            err=True,
        )
    ctx.exit(code)


def _replay_settings(
    config_file: str | None, mutators: tuple[str, ...], lock_path: str | None, state_aware: bool | None
) -> tuple[frozenset[str], bool | None, frozenset[str], Volatile | None]:
    """(mutators, state-aware, tools declared not deterministic, volatile rules): the flags, else
    the config's and its lock's."""
    config = read_config(config_file)
    used: list[str] = []
    chosen, lock_path = mutators_and_lock(config, mutators, lock_path, used)
    state_aware = setting(state_aware, config, "state_aware", used)
    volatile = volatile_of(config, used)
    announce(config, used)
    if lock_path is None:
        return chosen, state_aware, frozenset(), volatile
    # the lock's reader (and jsonschema, which checks a lock's argument schemas) only with a lock
    from toolreplay.contracts.lock import declared_mutators, declared_nondeterministic, load_lock

    lock = load_lock(lock_path)
    return declared_mutators(lock, chosen), state_aware, declared_nondeterministic(lock), volatile


def _replay(
    transcript: str, judge: Callable[[Iterable[Call]], ReplayResult], volatile: Volatile | None
) -> ReplayResult:
    """Judge a transcript's calls, on every core when the file is worth it (and no volatile
    rule masks: the parallel reader's workers digest the raw texts)."""
    if volatile is None and transcript != "-" and parallel.worth_it(transcript):
        # a refused line or an index out of order: the sequential reader names it
        with contextlib.suppress(parallel.Fallback):
            return judge(file_calls(transcript))
    return judge(read_calls(transcript, volatile))
