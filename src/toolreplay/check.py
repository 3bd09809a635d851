"""``toolreplay check``: every configured analysis over every matching file (docs/spec.md §5, §7).

One report per file, in path order, whatever order the work finished in. A file that
cannot be read is reported in its own report (as an error) instead of stopping the run,
so one broken transcript does not hide the findings of the others.

What runs, by configuration:

- every baseline (``baselines`` globs): its chain is verified; with ``max_baseline_age_days``
  its last git commit date is checked; and the runs paired with it are diffed against it.
  A run pairs with a baseline by name: ``runs/checkout.jsonl`` and ``runs/checkout-2.jsonl``
  pair with ``baselines/checkout.sealed.jsonl`` (the longest matching baseline name wins);
- every transcript (``transcripts`` globs, sealed files excluded): replay, the scope when
  ``scope`` is set, and its per-call fingerprints against ``tools_lock`` when set. The lock
  also declares which tools mutate (overriding ``mutators`` for those tools) and which are
  not deterministic (their responses are not compared);
- with ``base`` (``check --base REF``): the drift-note rule over ``REF...HEAD``, as the
  GitHub Action enforces it on a pull request (:mod:`toolreplay.driftnotes.pull`), judged first;
- with ``tools_lock`` and ``tools_source``: the source's code runs in a child process (after the
  drift-note rule); the lock is judged against it as ``fingerprint-diff`` judges two locks, runs or
  not, what changed per tool words the ``tool-drift`` findings, and every recorded call (of a run or
  a baseline) is validated against the source's changed input schemas; a child that fails is a
  ``tools-source-failed`` finding (:mod:`toolreplay.analyses.tools_source`).

With ``shard`` (``check --shard K/N``) only the jobs of shard K run, and the drift-note rule
only in shard 1 (:mod:`toolreplay.shards`).
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from toolreplay.analyses.baseline import diff_tables
from toolreplay.analyses.calltable import CallTable, read_table
from toolreplay.analyses.fingerprint_diff import (
    FingerprintCheck,
)
from toolreplay.analyses.freshness import check_freshness
from toolreplay.analyses.integrity import chain_broken, stale_baseline
from toolreplay.analyses.judging import Judging, judging_of
from toolreplay.analyses.replay import replay
from toolreplay.analyses.schema_break import SchemaBreaks, schema_breaks
from toolreplay.analyses.scope import Scope, ScopeJudge, load_scope
from toolreplay.analyses.tools_source import ran_code, source_contracts
from toolreplay.analyses.volatile import Volatile
from toolreplay.chain import ChainState, verify
from toolreplay.config import Config, named_file
from toolreplay.contracts.lock import ToolLock, declared_mutators, declared_nondeterministic, load_lock
from toolreplay.driftnotes.base_settings import PullRange, judged_config
from toolreplay.driftnotes.guard import note_name
from toolreplay.driftnotes.pull import check_pull_request
from toolreplay.driftnotes.review import lock_change
from toolreplay.driftnotes.settings import unjudged_baseline
from toolreplay.errors import InputError
from toolreplay.escape import one_line, quote
from toolreplay.files import SEALED_SUFFIX
from toolreplay.findings import Finding, Line, Report, masked_line, replay_header, sort_findings
from toolreplay.git import last_commit_time
from toolreplay.kinds import NOTE_ACCEPTS
from toolreplay.limits import DEFAULT_BUDGET_SECONDS, raised_recursion_limit
from toolreplay.shards import DRIFT_SHARD, Shard, covered_files, shard_of
from toolreplay.transcript import Record, read_links, read_transcript
from toolreplay.volatile_rules import Rule

#: with fewer files than this, starting worker processes costs more than it saves
PARALLEL_MIN_FILES = 16


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """What every job needs from the configuration (picklable, for worker processes)."""

    mutators: frozenset[str]
    state_aware: bool
    scope: str | None = None
    lock: str | None = None
    max_age_days: int | None = None
    now: int = 0
    pattern_budget: float = DEFAULT_BUDGET_SECONDS
    notes: str | None = None
    #: tool -> what changed between the lock and the tools_source (fingerprint-diff's words)
    explain: tuple[tuple[str, str], ...] = ()
    #: tool -> the tools_source's input schema (canonical JSON), where it differs from the lock's
    changed_schemas: tuple[tuple[str, str], ...] = ()
    #: the config's volatile rules
    volatile: tuple[Rule, ...] = ()
    #: what a baseline and its runs are judged with (the configuration's rules, mutators and lock)
    judging: Judging = field(default_factory=Judging)


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    """One file to check. ``path`` is how reports name it: relative to the config's folder."""

    kind: str  # "transcript" | "baseline"
    path: str
    absolute: str
    settings: Settings
    #: for a baseline: the runs paired with it, as (path, absolute path)
    runs: tuple[tuple[str, str], ...] = field(default=())
    #: for a baseline: why the drift-note guard could not judge it (it is then refused, not read)
    refused: str | None = None


@cache
def _scope(path: str) -> Scope:
    return load_scope(path)


@cache
def _lock(path: str) -> ToolLock:
    return load_lock(path)


def check_transcript(job: Job) -> Report:
    """Replay, scope and contract fingerprints of one transcript, in one report."""
    settings = job.settings
    try:
        mutators, nondeterministic = _declared(settings)
        with contextlib.ExitStack() as stack:
            analyses = _streamed_analyses(stack, job)
            volatile = Volatile(settings.volatile, budget=settings.pattern_budget)
            records = _fed(read_transcript(job.absolute), [feed for feed, _ in analyses])
            result = replay(
                # the matches of the rules' patterns, a batch of records at a time
                volatile.ahead(records, job.path),
                mutators=mutators,
                state_aware=settings.state_aware,
                nondeterministic=nondeterministic,
                path=job.path,
                hints=True,
                volatile=volatile,
            )
            findings = [*result.findings, *(f for _, found in analyses for f in found())]
    except InputError as err:
        return Report(command="check", path=job.path, errors=(_relocate(err, job.path),))
    findings = sort_findings(findings)
    header = replay_header(result.calls, result.divergence, len(findings))
    if settings.volatile:
        header += (masked_line(volatile.counts(job.path)),)
    return Report(command="check", path=job.path, header=header, findings=tuple(findings))


def _declared(settings: Settings) -> tuple[frozenset[str], frozenset[str]]:
    """The mutators, and the tools declared non-deterministic: the config's, as the lock amends them."""
    if settings.lock is None:
        return settings.mutators, frozenset()
    lock = _lock(settings.lock)
    return declared_mutators(lock, settings.mutators), declared_nondeterministic(lock)


#: an analysis fed each record as replay reads it, and what it found in the end
_StreamedAnalysis = tuple[Callable[[Record], None], Callable[[], Sequence[Finding]]]


def _streamed_analyses(stack: contextlib.ExitStack[bool | None], job: Job) -> list[_StreamedAnalysis]:
    """The analyses the settings ask for beside replay (scope, contract fingerprints, schema breaks),
    fed in the same pass over the file; those that run a worker are entered on ``stack``."""
    settings = job.settings
    analyses: list[_StreamedAnalysis] = []
    if settings.scope is not None:
        scope = ScopeJudge(_scope(settings.scope), path=job.path, pattern_budget=settings.pattern_budget)
        judge = stack.enter_context(scope)
        analyses.append((judge.feed, lambda: judge.result().findings))
    if settings.lock is not None:
        fingerprints = FingerprintCheck(_lock(settings.lock), path=job.path, explain=dict(settings.explain))
        analyses.append((fingerprints.feed, lambda: fingerprints.result().findings))
    if settings.changed_schemas:
        breaks = stack.enter_context(SchemaBreaks(_changed(settings), path=job.path))
        analyses.append((breaks.feed, lambda: breaks.findings))
    return analyses


def _fed(records: Iterable[Record], sinks: Sequence[Callable[[Record], None]]) -> Iterator[Record]:
    """``records``, each handed to every sink on its way through."""
    for record in records:
        for sink in sinks:
            sink(record)
        yield record


def check_baseline(job: Job) -> Report:
    """Verify a sealed baseline, check its age, and diff the runs paired with it."""
    if job.refused is not None:
        return Report(command="check", path=job.path, errors=(str(InputError(job.refused, path=job.path)),))
    try:
        state = verify(read_links(job.absolute))
    except InputError as err:
        return Report(command="check", path=job.path, errors=(_relocate(err, job.path),))
    volatile = job.settings.judging.masking()
    header: list[Line] = []
    findings: list[Finding] = []
    errors: list[str] = []
    # in this order: the masked values are counted as the runs are diffed
    parts = (
        _chain(job, state),
        _breaks(job, state),
        _age(job),
        _runs(job, state, volatile),
        _masked(job, volatile),
    )
    for part in parts:
        header += part.lines
        findings += part.findings
        errors += part.errors
    return Report(
        command="check",
        path=job.path,
        header=tuple(header),
        findings=tuple(sort_findings(findings)),
        errors=tuple(errors),
        notes=job.settings.notes,
        note=vacant_note_path(job) if any(f.kind in NOTE_ACCEPTS for f in findings) else None,
    )


class _Part(NamedTuple):
    """What one of a baseline's checks adds to its report."""

    lines: tuple[Line, ...] = ()
    findings: tuple[Finding, ...] = ()
    errors: tuple[str, ...] = ()


def _chain(job: Job, state: ChainState) -> _Part:
    """Whether the chain is intact, its length and head."""
    status = "broken" if state.broken else "intact"
    lines = (
        Line(key="chain", value=status, text=status),
        Line(key="links", value=state.links, text=str(state.links)),
        Line(key="head", value=state.head, text=state.head),
    )
    return _Part(lines, (chain_broken(state.broken, path=job.path),) if state.broken else ())


def _breaks(job: Job, state: ChainState) -> _Part:
    """The baseline's recorded calls against the tools_source's changed input schemas (``schema-break``),
    as each run's are: whether or not a run is paired with it."""
    if not job.settings.changed_schemas or state.broken:
        return _Part()
    records = (link.record for link in read_links(job.absolute))
    return _Part(findings=tuple(schema_breaks(records, _changed(job.settings), path=job.path)))


def _changed(settings: Settings) -> dict[str, Any]:
    """The tools_source's input schemas that differ from the lock's, by tool."""
    return {tool: json.loads(schema) for tool, schema in settings.changed_schemas}


def _runs(job: Job, state: ChainState, volatile: Volatile) -> _Part:
    """The diff of the runs paired with an intact baseline."""
    if not job.runs or state.broken:
        return _Part()
    # paths as diff's "baseline:" line shows one: plain, one line each (a renderer quotes if it must)
    lines = (Line(key="runs", value=len(job.runs), text=", ".join(one_line(p) for p, _ in job.runs)),)
    try:
        return _Part(lines, tuple(_diff_runs(job, volatile)))
    except InputError as err:
        return _Part(lines, errors=(str(err),))


def _masked(job: Job, volatile: Volatile) -> _Part:
    """The baseline's masked values (each run's are counted in the run's own report)."""
    if not job.settings.volatile:
        return _Part()
    return _Part((masked_line(volatile.counts(job.path)),))


def vacant_note_path(job: Job) -> str | None:
    """Where a note accepting this baseline's drift can go: a file of the notes folder that does
    not exist in the checkout (an earlier note keeps its reasoning), relative like the paths."""
    notes = job.settings.notes
    if notes is None:
        return None
    root = Path(job.absolute[: len(job.absolute) - len(job.path)] or ".")
    folder = root / notes
    taken = (
        {f"{notes}/{p.relative_to(folder).as_posix()}" for p in folder.rglob("*")} if folder.is_dir() else ()
    )
    return note_name(job.path, notes, taken)


def _age(job: Job) -> _Part:
    """The committed line and a stale-baseline finding (or the error) of a baseline's age, when
    the settings limit it."""
    max_age_days = job.settings.max_age_days
    if max_age_days is None:
        return _Part()
    try:
        fresh = check_freshness(
            last_commit_time(job.absolute), now=job.settings.now, max_age_days=max_age_days
        )
    except InputError as err:
        return _Part(errors=(_relocate(err, job.path),))
    line = Line(key="committed", value=fresh.committed, text=fresh.committed)
    return _Part((line,), (stale_baseline(fresh, path=job.path),) if fresh.stale else ())


def _diff_runs(job: Job, volatile: Volatile) -> list[Finding]:
    # calls as digests, as `diff` holds them: memory stays flat whatever the files' size
    judging = job.settings.judging
    with judging.store(volatile) as store:
        baseline = read_table(store, job.absolute, sealed=True, source=job.path)
        runs: list[tuple[str, CallTable]] = []
        for path, absolute in job.runs:
            try:
                # a run is a transcript too: its own report counts its masked values
                runs.append((path, read_table(store, absolute, sealed=False, source=None)))
            except InputError as err:
                raise InputError(err.problem, path=path, line=err.line, pointer=err.pointer) from err
        result = diff_tables(baseline, runs, judging)
    # the findings sit in the baseline's block, so each says which run it is about
    return [
        replace(f, message=f"in run {quote(run.path)}: {f.message}")
        for run in result.runs
        for f in run.findings
    ]


def _relocate(err: InputError, path: str) -> str:
    """The error as the user should read it: with the path relative to the config."""
    return str(InputError(err.problem, path=path, line=err.line, pointer=err.pointer))


def run_job(job: Job) -> Report:
    with raised_recursion_limit():  # a worker process starts with Python's default recursion limit
        return (check_baseline if job.kind == "baseline" else check_transcript)(job)


def pair_runs(baselines: Sequence[str], transcripts: Sequence[str]) -> dict[str, list[str]]:
    """Which transcripts are runs of which baseline, by name (see the module docstring)."""
    stems = sorted(((Path(b).name[: -len(SEALED_SUFFIX)], b) for b in baselines), key=lambda s: -len(s[0]))
    pairs: dict[str, list[str]] = {b: [] for b in baselines}
    for run in transcripts:
        baseline = _baseline_of(Path(run).name.removesuffix(".jsonl"), stems)
        if baseline is not None:
            pairs[baseline].append(run)
    return pairs


def _baseline_of(name: str, stems: list[tuple[str, str]]) -> str | None:
    """The baseline a run of this name belongs to: the longest stem it is, or starts with and a
    ``-`` or ``.``."""
    for stem, baseline in stems:
        if name == stem or name.startswith((stem + "-", stem + ".")):
            return baseline
    return None


def plan(
    config: Config,
    *,
    now: int | None = None,
    explain: tuple[tuple[str, str], ...] = (),
    changed_schemas: tuple[tuple[str, str], ...] = (),
) -> list[Job]:
    """The jobs ``check`` runs for a configuration, in report order (``explain`` and
    ``changed_schemas``: what :func:`source_contracts` found; planning runs none of the
    project's code)."""
    settings = _settings(config, now=now, explain=explain, changed_schemas=changed_schemas)
    baselines, transcripts = covered_files(config)
    pairs = pair_runs(baselines, transcripts)

    def job(kind: str, path: str, runs: tuple[tuple[str, str], ...] = ()) -> Job:
        return Job(kind=kind, path=path, absolute=str(config.root / path), settings=settings, runs=runs)

    jobs = [job("baseline", b, tuple((r, str(config.root / r)) for r in pairs[b])) for b in baselines]
    jobs = [replace(j, refused=unjudged_baseline(config, j.path)) for j in jobs]
    jobs += [job("transcript", t) for t in transcripts]
    return sorted(jobs, key=lambda j: (j.path, j.kind))


def _settings(
    config: Config,
    *,
    now: int | None,
    explain: tuple[tuple[str, str], ...],
    changed_schemas: tuple[tuple[str, str], ...],
) -> Settings:
    """What every job of a configuration is checked with; its scope file and lock read once here."""
    scope, lock = named_file(config, config.scope), named_file(config, config.tools_lock)
    if scope is not None:
        load_scope(scope)  # a bad scope file or lock is the user's usage error, reported once
    if lock is not None:
        _lock(lock)
    return Settings(
        mutators=config.mutators,
        # a mutator separates identical calls in check, as in diff; state_aware = false is 0.6's rule
        state_aware=config.state_aware is not False,
        scope=scope,
        lock=lock,
        max_age_days=config.max_baseline_age_days,
        now=int(time.time()) if now is None else now,
        pattern_budget=config.pattern_budget_seconds,
        notes=config.drift_notes,
        explain=explain,
        changed_schemas=changed_schemas,
        volatile=config.volatile,
        # every run is also checked as a transcript, against the lock: that check reports a run
        # call whose fingerprint the lock does not have, so the diff does not report it again
        judging=judging_of(config, explain=dict(explain), lock_checks_runs=False),
    )


def run_check(
    config: Config,
    *,
    jobs: int | None = None,
    base: str | None = None,
    shard: Shard | None = None,
    lock_base: str | None = None,
    source_root: Path | None = None,
) -> list[Report]:
    """Run every job (of ``shard``), on worker processes when there are many files; reports in path order."""
    found = run_check_with_status(
        config, jobs=jobs, base=base, shard=shard, lock_base=lock_base, source_root=source_root
    )
    return found[0]


def run_check_with_status(
    config: Config,
    *,
    jobs: int | None = None,
    base: str | None = None,
    shard: Shard | None = None,
    lock_base: str | None = None,
    source_root: Path | None = None,
) -> tuple[list[Report], str | None]:
    """:func:`run_check`, and with ``base`` the drift-note rule's verdict line (None without).

    With ``lock_base`` (default: ``base``), a ``tool-drift`` is explained by what changed between
    the tools_lock where a pull request against it starts and the lock now, unless the
    tools_source explains it."""
    pull = None if base is None else PullRange(base=base, head="HEAD")
    # what is compared, the lock and the code that runs are the base commit's decision (in every
    # shard); the drift-note rule below reports the pull request's own change of them
    judged = judged_config(config, pull, workspace=str(config.root))
    if source_root is None:
        source_root = judged.source_root
    drift_shard = shard is None or shard.index == DRIFT_SHARD
    first, status = _drift_rule(config, pull if drift_shard else None)
    # one shard reports the source (the lock judged against it, or its failure; merge takes such
    # reports from it); the others stop where it failed
    explain, changed, sourced = source_contracts(judged.config, report=drift_shard, source_root=source_root)
    explain = _with_lock_change(config, explain, base if lock_base is None else lock_base)
    first += sourced
    planned = _in_shard(plan(judged.config, explain=explain, changed_schemas=changed), shard)
    # once the project's code has run, no interpreter is started: one would import from the disk
    # that code could write to (docs/spec.md §7.1)
    reports = _run_jobs(planned, 1 if ran_code(judged.config) else jobs)
    if first:
        reports = sorted([*reports, *first], key=lambda r: r.path)
    return reports, status


def _in_shard(planned: list[Job], shard: Shard | None) -> list[Job]:
    """The jobs of one shard (every job without one)."""
    if shard is None:
        return planned
    return [job for job in planned if shard_of(job.path, shard.count) == shard.index]


def _with_lock_change(
    config: Config, explain: tuple[tuple[str, str], ...], lock_base: str | None
) -> tuple[tuple[str, str], ...]:
    """``explain``, and for the tools it leaves out what changed in the lock since ``lock_base``."""
    if lock_base is None:
        return explain
    return tuple(sorted({**lock_change(config, lock_base), **dict(explain)}.items()))


def _drift_rule(config: Config, pull: PullRange | None) -> tuple[list[Report], str | None]:
    """The drift-note rule's reports and verdict line over ``pull`` (none without one)."""
    if pull is None:
        return [], None
    # judged before any of the project's code runs (the tools_source), with the same rule and
    # findings as the GitHub Action applies to a pull request
    outcome = check_pull_request(config, pull, workspace=str(config.root))
    return list(outcome.reports), outcome.status


def _run_jobs(planned: list[Job], jobs: int | None) -> list[Report]:
    """Each job's report, on worker processes when there are enough files."""
    # no more workers than files: each starts an interpreter, and a pool cannot take any number
    workers = min(jobs if jobs is not None else _cores(), len(planned))
    if workers > 1 and len(planned) >= PARALLEL_MIN_FILES:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            return list(pool.map(run_job, planned, chunksize=4))
    return [run_job(job) for job in planned]


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1
