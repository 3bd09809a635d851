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
  GitHub Action enforces it on a pull request (``hooks/drift_range.py``), judged first;
- with ``tools_lock`` and ``tools_source``: the source's code runs in a child process (after the
  drift-note rule); the lock is judged against it as ``fingerprint-diff`` judges two locks, runs or
  not, what changed per tool words the ``tool-drift`` findings, and every recorded call (of a run or
  a baseline) is validated against the source's changed input schemas; a child that fails is a
  ``tools-source-failed`` finding (:func:`source_contracts`).

With ``shard`` (``check --shard K/N``) only the jobs of shard K run, and the drift-note rule
only in shard 1; ``toolreplay merge`` puts the shards' reports back together
(:mod:`toolreplay.report.merge`).

A job (a transcript, or a baseline with the runs paired with it) goes to shard
``1 + int(sha256(PATH)[:16], 16) % N``, where PATH is the job's path as reports name it:
relative to the config file's folder, in POSIX form (``runs/checkout.jsonl``), encoded as
UTF-8. The checkout's location and the operating system do not enter it, so every job
lands in exactly one shard, the same one on every machine.

The drift-note rule (``check --base REF``) is about the pull request, not about one file:
shard 1 runs it, the other shards leave it out, and the merge takes it from shard 1.

Every shard report names the commit it judged and a digest of every file the whole check
reads (not only the shard's own), so all shards of one checkout agree on both and a shard of
another commit, or of a checkout with an uncommitted edit, does not.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import multiprocessing
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from toolreplay._version import __version__
from toolreplay.analyses.baseline import diff_tables
from toolreplay.analyses.calltable import CallTable, read_table
from toolreplay.analyses.fingerprint_diff import (
    FingerprintCheck,
    carries_no_versions,
    explain_drift,
    lock_report,
)
from toolreplay.analyses.freshness import check_freshness
from toolreplay.analyses.integrity import chain_broken, stale_baseline
from toolreplay.analyses.judging import Judging, judging_of
from toolreplay.analyses.replay import replay
from toolreplay.analyses.schema_break import SchemaBreaks, changed_schemas, schema_breaks
from toolreplay.analyses.scope import Scope, ScopeJudge, load_scope
from toolreplay.analyses.volatile import Volatile
from toolreplay.canonical import canonical, room_for_depth
from toolreplay.chain import ChainState, verify
from toolreplay.config import Config, expand
from toolreplay.contracts.lock import ToolLock, declared_mutators, declared_nondeterministic, load_lock
from toolreplay.contracts.runner import SourceRunError, work_tree
from toolreplay.contracts.source import is_python_source, source_lock
from toolreplay.driftnotes.base_settings import PullRange, judged_config
from toolreplay.driftnotes.guard import note_name
from toolreplay.driftnotes.pull import check_pull_request
from toolreplay.driftnotes.review import lock_change
from toolreplay.driftnotes.settings import unjudged_baseline
from toolreplay.errors import InputError
from toolreplay.escape import one_line, quote
from toolreplay.files import SEALED_SUFFIX
from toolreplay.findings import Finding, sort_findings
from toolreplay.git import head_commit, last_commit_time
from toolreplay.kinds import NOTE_ACCEPTS, TOOLS_SOURCE_FAILED
from toolreplay.limits import DEFAULT_BUDGET_SECONDS
from toolreplay.reports import CheckInfo, Line, Report, masked_line, replay_header
from toolreplay.transcript import Record, read_links, read_transcript
from toolreplay.volatile_rules import Rule

#: with fewer files than this, starting worker processes costs more than it saves
PARALLEL_MIN_FILES = 16
#: seconds the tools_source's child process may take
SOURCE_TIMEOUT = 30.0
#: the report's command of a tools_source that failed in its child process
SOURCE_COMMAND = "tools-source"


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
            analyses = _fed_analyses(stack, job)
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
_Fed = tuple[Callable[[Record], None], Callable[[], Sequence[Finding]]]


def _fed_analyses(stack: contextlib.ExitStack[bool | None], job: Job) -> list[_Fed]:
    """The analyses the settings ask for beside replay (scope, contract fingerprints, schema breaks),
    fed in the same pass over the file; those that run a worker are entered on ``stack``."""
    settings = job.settings
    analyses: list[_Fed] = []
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
        note=free_note(job) if any(f.kind in NOTE_ACCEPTS for f in findings) else None,
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


def free_note(job: Job) -> str | None:
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
    with room_for_depth():  # a worker process starts with Python's default recursion limit
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
    scope, lock = _beside(config, config.scope), _beside(config, config.tools_lock)
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


def _beside(config: Config, name: str | None) -> str | None:
    """A file the configuration names, from its folder (None when it names none)."""
    return str(config.root / name) if name else None


def covered_files(config: Config) -> tuple[list[str], list[str]]:
    """(baselines, transcripts) the configuration checks, as paths relative to its folder, sorted."""
    baselines = [p for p in expand(config, config.baselines) if p.endswith(SEALED_SUFFIX)]
    transcripts = [p for p in expand(config, config.transcripts) if not p.endswith(SEALED_SUFFIX)]
    return baselines, transcripts


def input_files(config: Config) -> list[tuple[str, str, Path]]:
    """Every file a whole ``check`` of ``config`` reads, as (role, name, location): the baselines
    and transcripts, the scope, the tools lock, and the ``tools_source`` when it is a file that
    check reads (with a lock). A module or a server's command line is no file: the commit binds it."""
    baselines, transcripts = covered_files(config)
    found = [("baseline", b, config.root / b) for b in baselines]
    found += [("transcript", t, config.root / t) for t in transcripts]
    return found + _named_files(config)


def _named_files(config: Config) -> list[tuple[str, str, Path]]:
    """The scope, the tools lock, and with a lock the ``tools_source`` when it is a file."""
    found = []
    if config.scope:
        found.append(("scope", config.scope, config.root / config.scope))
    if config.tools_lock:
        found.append(("tools_lock", config.tools_lock, config.root / config.tools_lock))
        source = config.tools_source
        if isinstance(source, str) and (config.root / source).is_file():
            found.append(("tools_source", source, config.root / source))
    return found


def _ran_code(config: Config) -> bool:
    """Whether the check runs project code: a tools_source that is not a file, beside a lock."""
    source = config.tools_source
    if config.tools_lock is None or source is None:
        return False
    return not isinstance(source, str) or is_python_source(source, root=config.root)


def source_contracts(
    config: Config, *, report: bool = True, source_root: Path | None = None
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...], tuple[Report, ...]]:
    """What changed per tool between the lock and the config's tools_source (none without
    both), the source's input schemas (canonical JSON) that differ from the lock's, against which
    the recorded calls are validated (``schema-break``), and the source's report: the lock judged
    against it, or a tools_source that failed in its child process (none with ``report=False``).

    A module or a server is the project's code (in CI, the pull request's): it runs in a
    child, and a child that dies, hangs, answers garbage or changes the work tree is a
    ``tools-source-failed`` finding (``report=False``: the error itself), never a pass.
    ``source_root``: where the source runs from, when not the config's folder (over a pull
    request's range, the base commit's tree).
    """
    lock = _beside(config, config.tools_lock)
    if lock is None or config.tools_source is None:
        return (), (), ()
    recorded = _lock(lock)  # a bad lock is the user's usage error, before any child runs
    try:
        source, _ = source_lock(
            config.tools_source,
            root=config.root if source_root is None else source_root,
            mutators=config.mutators,
            timeout=SOURCE_TIMEOUT,
            watch=work_tree(config.root),
        )
    except SourceRunError as err:
        if not report:
            raise
        return (), (), (_source_failed(config, err),)
    except InputError as err:
        if source_root is None or not report:
            raise
        # the base commit's source (over a range) is not the pull request's to fix: a finding
        return (), (), (_source_failed(config, err),)
    changed = tuple((tool, canonical(schema)) for tool, schema in changed_schemas(recorded, source).items())
    judged = (_source_judged(config, source, source_root),) if report else ()
    return tuple(sorted(explain_drift(recorded, source).items())), changed, judged


def _source_judged(config: Config, source: ToolLock, source_root: Path | None) -> Report:
    """The tools_lock against the tools_source, as ``fingerprint-diff`` judges them (``tool-drift``,
    ``contract-text-drift``), whether or not a run calls the tools. The lock is the one beside the
    source: over a pull request's range, the base commit's, as its source is."""
    name = str(config.tools_lock)
    recorded = _lock(str((config.root if source_root is None else source_root) / name))
    # over a range the lock may be a temporary copy of the base's: named by its file name
    shown = Path(name).name if Path(name).is_absolute() else name
    return lock_report(
        recorded, source, command=SOURCE_COMMAND, path=shown, unversioned=carries_no_versions(source)
    )


def _source_failed(config: Config, err: InputError) -> Report:
    path = Path(config.source).name
    finding = Finding(
        kind=TOOLS_SOURCE_FAILED,
        index=None,
        tool="",
        path=path,
        message=one_line(f"tools_source failed in its child process, nothing it answered was used: {err}"),
    )
    return Report(command=SOURCE_COMMAND, path=path, findings=(finding,))


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
    reports = _run_jobs(planned, 1 if _ran_code(judged.config) else jobs)
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


#: The shard that runs the drift-note rule of ``--base``.
DRIFT_SHARD = 1
#: digits of a shard number: more shards than that would leave nearly all of them empty
_SHARD_DIGITS = 18


@dataclass(frozen=True, slots=True)
class Shard:
    """Shard ``index`` of ``count`` (1-based)."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(spec: str) -> Shard:
    """``K/N`` with 1 <= K <= N, as decimal numbers; anything else is a usage error."""
    index, count = _numbers(spec)
    if count < 1 or not 1 <= index <= count:
        raise InputError(f"--shard {quote(spec)}: K must be between 1 and N (N at least 1)")
    return Shard(index, count)


def _numbers(spec: str) -> tuple[int, int]:
    """The two whole numbers of ``K/N``."""
    parts = spec.strip().split("/")
    if len(parts) != 2 or not all(_digits(p) for p in parts):
        raise InputError(f"--shard {quote(spec)}: expected K/N, two whole numbers such as 2/4")
    if any(len(p) > _SHARD_DIGITS for p in parts):  # (and int() stops at 4300 digits)
        raise InputError(f"--shard {quote(spec)}: K and N have at most {_SHARD_DIGITS} digits")
    return int(parts[0]), int(parts[1])


def _digits(text: str) -> bool:
    """ASCII digits only (``str.isdigit`` also takes "²")."""
    return text.isascii() and text.isdigit()


def shard_of(path: str, count: int) -> int:
    """The shard (1..count) of the job with this path (see the module docstring)."""
    digest = hashlib.sha256(path.encode("utf-8")).hexdigest()
    return 1 + int(digest[:16], 16) % count


def config_digest(config: Config) -> str:
    """A digest of what the configuration asks for; not of where it lives, nor of its formatting."""
    settings: dict[str, object] = {
        "transcripts": list(config.transcripts),
        "baselines": list(config.baselines),
        "scope": config.scope,
        "tools_lock": config.tools_lock,
        "mutators": sorted(config.mutators),
        "state_aware": config.state_aware,
        "drift_notes": config.drift_notes,
        "max_baseline_age_days": config.max_baseline_age_days,
        "fail_on": None if config.fail_on is None else sorted(config.fail_on),
    }
    settings.update(_later_settings(config))
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def _later_settings(config: Config) -> dict[str, object]:
    """The settings added after the digest's first release, those that are set: the digests of
    configurations without them stay the same."""
    settings: dict[str, object] = {}
    if config.tools_source is not None:
        source = config.tools_source
        settings["tools_source"] = source if isinstance(source, str) else list(source)
    if config.pattern_budget_seconds != DEFAULT_BUDGET_SECONDS:
        settings["pattern_budget_seconds"] = config.pattern_budget_seconds
    if config.volatile:  # shards that mask other values are not one check
        settings["volatile"] = [_rule_setting(r) for r in config.volatile]
    return settings


def _rule_setting(rule: Rule) -> dict[str, str]:
    table = {"tool": rule.tool, "at": rule.at}
    if rule.pattern is not None:
        table["pattern"] = rule.pattern
    return table


def inputs_digest(config: Config) -> str:
    """A digest of every file a whole ``check`` of ``config`` reads: each one's role, its name as
    the configuration gives it, and the SHA-256 of its bytes (null when it cannot be read; check
    then reports it unreadable). Read in pieces, so a large transcript costs no memory."""
    entries = [[role, name, _file_digest(location)] for role, name, location in input_files(config)]
    text = json.dumps(entries, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def _file_digest(location: Path) -> str | None:
    try:
        # a device or a pipe (/dev/zero, a FIFO as the scope) is not opened, nor read to its end
        if not stat.S_ISREG(os.stat(location).st_mode):
            return None
        with open(location, "rb") as stream:
            return hashlib.file_digest(stream, "sha256").hexdigest()
    except OSError:
        return None


def checkout_commit(config: Config) -> str | None:
    """The commit checked out where the configuration lives (None outside git)."""
    return head_commit(str(config.root))


def check_info(
    config: Config,
    *,
    base: str | None,
    shard: Shard | None,
    fail_on: frozenset[str] | None,
    drift: str | None = None,
) -> CheckInfo:
    """What the run was; ``fail_on`` is the run's (the config's, or over a range what
    :func:`toolreplay.driftnotes.pull.judged_fail_on` decided)."""
    return CheckInfo(
        toolreplay=__version__,
        config=config_digest(config),
        fail_on=None if fail_on is None else tuple(sorted(fail_on)),
        base=base,
        shard=None if shard is None else (shard.index, shard.count),
        drift=drift,
        commit=None if shard is None else checkout_commit(config),
        inputs=None if shard is None else inputs_digest(config),
    )
