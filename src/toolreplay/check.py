"""``toolreplay check``: every configured analysis over every matching file (SPEC §5, §7).

One report per file, in path order, whatever order the work finished in. A file that
cannot be read is reported in its own report (as an error) instead of stopping the run,
so one broken transcript does not hide the findings of the others.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import cache

from toolreplay.analyses.replay import replay
from toolreplay.analyses.scope import Scope, check_scope, load_scope
from toolreplay.chain import verify
from toolreplay.config import Config, expand
from toolreplay.errors import InputError
from toolreplay.findings import Finding, quote, sort_findings
from toolreplay.report import Line, Report
from toolreplay.transcript import read_links, read_transcript

#: with fewer files than this, starting worker processes costs more than it saves
PARALLEL_MIN_FILES = 16


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    """One file to check, with the settings it needs (picklable, for worker processes)."""

    kind: str  # "transcript" | "baseline"
    path: str  # as shown in reports: relative to the config's folder
    absolute: str
    mutators: frozenset[str]
    state_aware: bool
    scope: str | None


@cache
def _scope(path: str) -> Scope:
    return load_scope(path)


def check_transcript(job: Job) -> Report:
    """Replay the transcript and check its scope; one report with every finding."""
    try:
        result = replay(
            read_transcript(job.absolute), mutators=job.mutators, state_aware=job.state_aware, path=job.path
        )
        findings = list(result.findings)
        if job.scope is not None:
            findings += check_scope(read_transcript(job.absolute), _scope(job.scope), path=job.path).findings
    except InputError as err:
        return Report(command="check", path=job.path, errors=(_relocate(err, job),))
    findings = sort_findings(findings)
    divergence = result.divergence
    return Report(
        command="check",
        path=job.path,
        header=(
            Line(key="calls", value=result.calls, text=str(result.calls)),
            Line(
                key="divergence",
                value=divergence,
                text="none" if divergence is None else f"index {divergence}",
            ),
            Line(key="findings", value=len(findings), text=str(len(findings))),
        ),
        findings=tuple(findings),
    )


def check_baseline(job: Job) -> Report:
    """Verify a sealed baseline; a broken chain becomes a finding on the link's line."""
    try:
        state = verify(read_links(job.absolute))
    except InputError as err:
        return Report(command="check", path=job.path, errors=(_relocate(err, job),))
    findings: tuple[Finding, ...] = ()
    if state.broken:
        b = state.broken
        findings = (
            Finding(
                kind="chain-broken",
                index=b.position,
                tool="",
                path=job.path,
                line=b.line,
                message=(
                    f"the chain breaks here: {b.reason}; expected digest {b.expected}, found {quote(b.found)}"
                ),
            ),
        )
    return Report(
        command="check",
        path=job.path,
        header=(
            Line(
                key="chain",
                value="broken" if state.broken else "intact",
                text="broken" if state.broken else "intact",
            ),
            Line(key="links", value=state.links, text=str(state.links)),
            Line(key="head", value=state.head, text=state.head),
        ),
        findings=findings,
    )


def _relocate(err: InputError, job: Job) -> str:
    """The error as the user should read it: with the path relative to the config."""
    return str(InputError(err.problem, path=job.path, line=err.line, pointer=err.pointer))


def run_job(job: Job) -> Report:
    return (check_baseline if job.kind == "baseline" else check_transcript)(job)


def plan(config: Config) -> list[Job]:
    """The jobs ``check`` runs for a configuration, in report order."""
    scope = str(config.root / config.scope) if config.scope else None
    if scope is not None:
        load_scope(scope)  # a bad scope file is the user's usage error, reported once
    jobs = []
    baselines = expand(config, config.baselines)
    for path in baselines:
        jobs.append(_job("baseline", path, config, scope))
    for path in expand(config, config.transcripts):
        if not path.endswith(".sealed.jsonl"):
            jobs.append(_job("transcript", path, config, scope))
    return sorted(jobs, key=lambda j: (j.path, j.kind))


def _job(kind: str, path: str, config: Config, scope: str | None) -> Job:
    return Job(
        kind=kind,
        path=path,
        absolute=str(config.root / path),
        mutators=config.mutators,
        state_aware=config.state_aware,
        scope=scope,
    )


def run_check(config: Config, *, jobs: int | None = None) -> list[Report]:
    """Run every job, on worker processes when there are many files; reports in path order."""
    planned = plan(config)
    workers = jobs if jobs is not None else _cores()
    runner: Callable[[Job], Report] = run_job
    if workers > 1 and len(planned) >= PARALLEL_MIN_FILES:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            return list(pool.map(runner, planned, chunksize=4))
    return [runner(job) for job in planned]


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1
