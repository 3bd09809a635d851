"""Compare runs with a sealed baseline call by call (docs/spec.md §3.4).

The baseline and each run are aligned on their canonical calls (the longest blocks of
identical calls, as ``difflib`` finds them), so one inserted or skipped call is one
``agent-drift`` rather than a cascade. Aligned pairs are then compared: contract
fingerprints (``tool-drift``), contract-text digests (``contract-text-drift``: a description
rewritten between the two recordings), responses (``behavior-drift``), post-call state
(``effect-drift``) and whether a mutating call recorded its state at all
(``audit-incomplete``). The first difference of each kind in each tool's calls becomes a
finding, which says how many more calls of that tool differ that way; every one is counted.

Per tool a determinism verdict compares *identical* calls across the baseline and all
runs: same tool, same arguments and the same mutating calls before it in its own
transcript (so a read after a write is not compared with a read before it). A mutating
call is a declared mutator (``mutators``, or the lock's ``mutates``) or any call that
recorded its post-call ``state``.

Calls are compared as digests of their canonical texts (:mod:`toolreplay.analyses.calltable`),
and the values of a call are read again only for the message of a finding, so memory does
not grow with the size of the baseline or the runs; an alignment middle past
``ALIGN_WINDOW`` calls goes a window at a time (:mod:`toolreplay.analyses.align`), and the
verdicts' groups through buckets (:mod:`toolreplay.analyses.determinism`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from toolreplay.analyses.align import align_tables
from toolreplay.analyses.calltable import CallTable, table_of
from toolreplay.analyses.contract_drift import DIGESTS, digest_drift
from toolreplay.analyses.determinism import SilentDrift, observe
from toolreplay.analyses.difference import excerpts, first_difference
from toolreplay.analyses.judging import Judging, ToolBehaviour, is_mutator
from toolreplay.analyses.volatile import Volatile
from toolreplay.config import DEFAULT_MUTATORS
from toolreplay.escape import quote
from toolreplay.findings import Change, Finding
from toolreplay.kinds import (
    AGENT_DRIFT,
    AUDIT_INCOMPLETE,
    BEHAVIOR_DRIFT,
    DRIFT_KINDS,
    EFFECT_DRIFT,
    SILENT_DRIFT,
)
from toolreplay.transcript import Record

#: Determinism verdicts, one per tool the runs called.
VERDICTS: tuple[str, ...] = ("no-dependency", "stable", SILENT_DRIFT, "baseline-unavailable")

#: The silent-drift rule rests on which calls change state; this says how to declare one.
SILENT_HINT = (
    " (if a call between them changes state, declare its tool with --mutator or mutators in the config)"
)

_VALUE_LIMIT = 60
#: Post-call state values are fingerprints: shown whole up to a SHA-512 digest with a prefix.
_STATE_LIMIT = 160


@dataclass(frozen=True, slots=True, kw_only=True)
class RunDiff:
    """How one run compares with the baseline."""

    path: str
    calls: int
    aligned: int
    #: every difference found, by kind (the first of each kind for each tool is a finding)
    counts: tuple[tuple[str, int], ...]
    findings: tuple[Finding, ...]
    #: the tools this run called, sorted
    tools: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DiffResult:
    baseline_calls: int
    runs: tuple[RunDiff, ...]
    #: tool -> verdict, for every tool a run called
    verdicts: Mapping[str, str] = field(default_factory=dict)

    @property
    def drifted(self) -> bool:
        """True when anything drifted or could not be audited: the run is not faithful."""
        return any(run.findings for run in self.runs) or SILENT_DRIFT in self.verdicts.values()


# --- how a difference is shown ----------------------------------------------------------


def _change(difference: tuple[str, Any, Any] | None, limit: int = _VALUE_LIMIT) -> Change | None:
    if difference is None:  # pragma: no cover - callers compare canonical texts first
        return None
    pointer, old, new = difference
    baseline, run = excerpts(old, new, limit)
    return Change(pointer=pointer, baseline=baseline, run=run)


def _where(change: Change | None) -> str:
    if change is None:  # pragma: no cover - callers compare canonical texts first
        return ""
    return f": at {quote(change.pointer)} the baseline has {change.baseline}, the run has {change.run}"


# --- the diff --------------------------------------------------------------------------


class _Collector:
    """Keeps the first finding of each kind for each tool, and counts every difference."""

    def __init__(self, path: str) -> None:
        self.path = path
        #: every difference, by kind
        self.counts: dict[str, int] = {}
        #: (kind, tool) -> the first such difference, as a finding, and how many more there are
        self.first: dict[tuple[str, str], Finding] = {}
        self.rest: dict[tuple[str, str], int] = {}

    def wants(self, kind: str, tool: str) -> bool:
        """Would a difference of ``kind`` in a call of ``tool`` be a finding? If not, :meth:`count`
        it: its message (which may need a call's values read again) is never shown."""
        return (kind, tool) not in self.first

    def count(self, kind: str, tool: str, n: int = 1) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + n
        self.rest[kind, tool] = self.rest.get((kind, tool), 0) + n

    def add(
        self,
        kind: str,
        *,
        index: int,
        tool: str,
        related: int | None,
        line: int | None,
        message: str,
        change: Change | None = None,
    ) -> None:
        if not self.wants(kind, tool):
            self.count(kind, tool)
            return
        self.counts[kind] = self.counts.get(kind, 0) + 1
        self.first[kind, tool] = Finding(
            kind=kind,
            index=index,
            tool=tool,
            message=message,
            path=self.path,
            line=line,
            related=related,
            change=change,
        )

    def findings(self) -> tuple[Finding, ...]:
        """The first finding of each kind for each tool, in report order (kind, then call), each
        saying how many more calls of its tool differ that way."""
        order = {kind: n for n, kind in enumerate(DRIFT_KINDS)}

        def key(item: tuple[str, str]) -> tuple[int, int, str]:
            index = self.first[item].index
            return order[item[0]], -1 if index is None else index, item[1]

        ordered = sorted(self.first, key=key)
        return tuple(_with_rest(self.first[item], self.rest.get(item, 0)) for item in ordered)

    def finding(self, kind: str) -> Finding | None:
        """The first finding of ``kind`` (of one call's comparison: there is one tool)."""
        return next((f for f in self.findings() if f.kind == kind), None)


def _with_rest(finding: Finding, rest: int) -> Finding:
    """``finding``, its message saying how many more calls of its tool differ the same way."""
    if not rest:
        return finding
    calls = "call" if rest == 1 else "calls"
    more = f" (and {rest} more {calls} of this tool with {finding.kind})"
    return replace(finding, message=finding.message + more)


class _Calls(Protocol):
    """A transcript's calls by position: ``light`` has a call's tool, index, line and
    fingerprint (and what tells two responses or states apart), ``full`` its values too."""

    def __len__(self) -> int: ...

    def light(self, position: int) -> Record: ...

    def full(self, position: int) -> Record: ...


class _Listed:
    """Records in memory as :class:`_Calls`."""

    def __init__(self, records: Sequence[Record]) -> None:
        self._records = records

    def __len__(self) -> int:
        return len(self._records)

    def light(self, position: int) -> Record:
        return self._records[position]

    full = light


def _agent_drift(
    out: _Collector,
    tag: str,
    base: _Calls,
    run: _Calls,
    i1: int,
    i2: int,
    j1: int,
    j2: int,
) -> None:
    tool = base.light(i1).tool if tag == "delete" else run.light(j1).tool
    if not out.wants(AGENT_DRIFT, tool):
        out.count(AGENT_DRIFT, tool)
        return
    _AGENT_DRIFT[tag](out, base, run, i1, i2, j1)


def _replaced(out: _Collector, base: _Calls, run: _Calls, i1: int, i2: int, j1: int) -> None:
    """The run called another tool, or the same tool with other arguments, than the baseline."""
    b, r = base.light(i1), run.light(j1)
    if b.tool != r.tool:
        message = (
            f"the run called tool {quote(r.tool)} where the baseline called {quote(b.tool)} at index {i1}"
        )
        out.add(AGENT_DRIFT, index=j1, tool=r.tool, related=i1, line=r.line, message=message)
        return
    difference = first_difference(json.loads(base.full(i1).canon_args), json.loads(run.full(j1).canon_args))
    change = _change(difference)
    where = _where(change)
    message = f"tool {quote(r.tool)} was called with other arguments than at baseline index {i1}{where}"
    out.add(AGENT_DRIFT, index=j1, tool=r.tool, related=i1, line=r.line, message=message, change=change)


def _inserted(out: _Collector, base: _Calls, run: _Calls, i1: int, i2: int, j1: int) -> None:
    """The run made a call the baseline did not."""
    r = run.light(j1)
    message = f"the run called tool {quote(r.tool)} {_insert_place(base, i1)}"
    related = i1 if i1 < len(base) else None
    out.add(AGENT_DRIFT, index=j1, tool=r.tool, related=related, line=r.line, message=message)


def _insert_place(base: _Calls, i1: int) -> str:
    """Where in the baseline an inserted call falls."""
    if i1 < len(base):
        return f"where the baseline goes on with tool {quote(base.light(i1).tool)} at index {i1}"
    if len(base):
        return f"after the baseline's last call (index {len(base) - 1})"
    return "and the baseline has no calls"


def _deleted(out: _Collector, base: _Calls, run: _Calls, i1: int, i2: int, j1: int) -> None:
    """Baseline calls the run did not make."""
    b = base.light(i1)
    more = f" (and {i2 - i1 - 1} more after it)" if i2 - i1 > 1 else ""
    if j1 < len(run):
        then, line = f"; it went on with the call at baseline index {i2}", run.light(j1).line
    else:
        then, line = f"; the run stopped at index {len(run)}", None
    message = f"the run did not make the call to tool {quote(b.tool)} at baseline index {i1}{more}{then}"
    out.add(AGENT_DRIFT, index=j1, tool=b.tool, related=i1, line=line, message=message)


#: an alignment's difference by its opcode's tag
_AGENT_DRIFT: dict[str, Callable[[_Collector, _Calls, _Calls, int, int, int], None]] = {
    "replace": _replaced,
    "insert": _inserted,
    "delete": _deleted,
}


#: gives both records of a pair with their values, when the pair's are light (None: they are not)
_Full = Callable[[], tuple[Record, Record]] | None


def _compare_pair(
    out: _Collector,
    b: Record,
    r: Record,
    behaviour: Mapping[str, ToolBehaviour],
    mutators: frozenset[str],
    explain: Mapping[str, str] | None = None,
    lock_checks_runs: bool = True,
    full: _Full = None,
) -> None:
    """Compare an aligned pair. ``b`` and ``r`` may be light records (digests for texts):
    ``full`` then gives both with their values, asked only for a message that quotes them."""
    explain = explain or {}
    tool, declared = r.tool, behaviour.get(r.tool)

    def add(kind: str, message: str, change: Change | None = None) -> None:
        out.add(kind, index=r.index, tool=tool, related=b.index, line=r.line, message=message, change=change)

    for digest in DIGESTS:
        drift = digest_drift(digest, b, r, declared, explain, lock_checks_runs)
        if drift is not None:
            add(digest.kind, drift)
    kind = _value_drift(b, r, declared)
    if kind is not None:
        _add_value_drift(out, add, kind, (b, r), full)
    unrecorded = _unrecorded_state(b, r, tool, behaviour, mutators)
    if unrecorded is not None:
        add(
            AUDIT_INCOMPLETE,
            (
                f"tool {quote(tool)} changes state but {unrecorded} its post-call state"
                f" (baseline index {b.index}): its effect cannot be compared"
            ),
        )


def _add_value_drift(
    out: _Collector, add: Callable[..., None], kind: str, pair: tuple[Record, Record], full: _Full
) -> None:
    """A pair's value drift as a finding where the collector wants one, else only counted."""
    tool = pair[1].tool
    if not out.wants(kind, tool):
        out.count(kind, tool)
        return
    add(kind, *_VALUE_DRIFT[kind](tool, *(full() if full is not None else pair)))


def _value_drift(b: Record, r: Record, declared: ToolBehaviour | None) -> str | None:
    """Which of an aligned pair's values differ: the response (``behavior-drift``), else the
    post-call state both record (``effect-drift``); None when neither does."""
    # a tool the lock declares non-deterministic: its responses are not compared, its effects are
    nondeterministic = declared is not None and not declared.deterministic
    if r.canon_response != b.canon_response and not nondeterministic:
        return BEHAVIOR_DRIFT
    if b.canon_state is not None and r.canon_state is not None and b.canon_state != r.canon_state:
        return EFFECT_DRIFT
    return None


def _behavior_drift(tool: str, b: Record, r: Record) -> tuple[str, Change | None]:
    """The message and change of a response that differs from the baseline's (full records)."""
    change = _change(first_difference(json.loads(b.canon_response), json.loads(r.canon_response)))
    where = _where(change)
    message = f"tool {quote(tool)} returned a different response than at baseline index {b.index}{where}"
    return message, change


def _effect_drift(tool: str, b: Record, r: Record) -> tuple[str, Change | None]:
    """The message and change of a post-call state that differs from the baseline's (full records)."""
    change = _change(first_difference(b.state, r.state), _STATE_LIMIT)
    same = "returned the same response as" if r.canon_response == b.canon_response else "was called as"
    where = _where(change)
    message = f"tool {quote(tool)} {same} at baseline index {b.index} but left a different state{where}"
    return message, change


def _unrecorded_state(
    b: Record, r: Record, tool: str, behaviour: Mapping[str, ToolBehaviour], mutators: frozenset[str]
) -> str | None:
    """Which side does not record a post-call state that matters, if any.

    A baseline that recorded a call's post-state says its effect matters, whatever the
    mutators list or a declaration says: a run that drops it (a re-execution without a
    state function) is unaudited, not a pass. A mutator's state matters on both sides.
    """
    recorded = (b.state is not None, r.state is not None)
    if recorded == (True, True):
        return None
    if not recorded[0] and not is_mutator(tool, behaviour, mutators):
        return None
    return _UNRECORDED[recorded]


#: which side leaves out a post-call state, by (the baseline records one, the run records one)
_UNRECORDED = {
    (False, False): "neither side records",
    (False, True): "the baseline does not record",
    (True, False): "the run does not record",
}


#: the message and change of a value that differs, by kind
_VALUE_DRIFT: dict[str, Callable[[str, Record, Record], tuple[str, Change | None]]] = {
    BEHAVIOR_DRIFT: _behavior_drift,
    EFFECT_DRIFT: _effect_drift,
}


def _diff_run(path: str, base: CallTable, run: CallTable, judging: Judging) -> tuple[_Collector, int]:
    out = _Collector(path)
    aligned = 0
    behaviour, mutators, explain = judging.behaviour, judging.mutators, judging.explain
    lock_checks_runs = judging.lock_checks_runs
    # a call the run makes differently (a new required argument, say) is not aligned, but its
    # contract is still compared: with the baseline's calls of that tool, or with the lock
    for tag, i1, i2, j1, j2 in align_tables(base, run):
        if tag == "equal":
            aligned += i2 - i1
            pairs = zip(base.lights(i1, i2), run.lights(j1, j2), strict=True)
            for offset, (b, r) in enumerate(pairs):

                def full(i: int = i1 + offset, j: int = j1 + offset) -> tuple[Record, Record]:
                    return base.full(i), run.full(j)

                _compare_pair(out, b, r, behaviour, mutators, explain, lock_checks_runs, full)
            continue
        _agent_drift(out, tag, base, run, i1, i2, j1, j2)
        for r in run.lights(j1, j2):
            _unaligned_contract(out, r, base, behaviour.get(r.tool), explain, lock_checks_runs)
    return out, aligned


def _unaligned_contract(
    out: _Collector,
    r: Record,
    base: CallTable,
    declared: ToolBehaviour | None,
    explain: Mapping[str, str],
    lock_checks_runs: bool,
) -> None:
    """A run call no baseline call aligns with: its contract held to the baseline's calls of that
    tool (their fingerprint, their contract text), or to the lock."""
    for digest in DIGESTS:
        drift = digest_drift(digest, digest.first(base).get(r.tool), r, declared, explain, lock_checks_runs)
        if drift is not None:
            out.add(digest.kind, index=r.index, tool=r.tool, related=None, line=r.line, message=drift)


# --- the same comparison, call by call (re-execution) ------------------------------------


def call_drift(
    recorded: Sequence[Record], run: Sequence[Record], *, path: str = "", volatile: Volatile | None = None
) -> Finding | None:
    """The ``agent-drift`` of the run's last call held against the recorded call at its position.

    Re-execution does not align: call N must be the recorded call N (same tool, same
    canonical arguments, but for what ``volatile`` rules mask), and a call past the
    recording's end is an extra one. None when the call is the recorded one. Only the run's
    last call's tool and arguments are read.
    """
    position = len(run) - 1
    out = _Collector(path)
    old, new = _Listed(recorded), _Listed(run)
    if position >= len(recorded):
        _agent_drift(out, "insert", old, new, len(recorded), len(recorded), position, position + 1)
    elif _key(recorded[position], volatile) != _key(run[position], volatile):
        _agent_drift(out, "replace", old, new, position, position + 1, position, position + 1)
    return out.finding(AGENT_DRIFT)


def _key(record: Record, volatile: Volatile | None) -> str:
    return volatile.texts(record, None).call_key if volatile else record.call_key


def stop_drift(recorded: Sequence[Record], run: Sequence[Record], *, path: str = "") -> Finding | None:
    """The ``agent-drift`` of a run that stopped before the recording's last call (None if it did not)."""
    if len(run) >= len(recorded):
        return None
    out = _Collector(path)
    _agent_drift(out, "delete", _Listed(recorded), _Listed(run), len(run), len(recorded), len(run), len(run))
    return out.finding(AGENT_DRIFT)


def compare_call(
    recorded: Record,
    run: Record,
    *,
    path: str = "",
    behaviour: Mapping[str, ToolBehaviour] | None = None,
    mutators: frozenset[str] = DEFAULT_MUTATORS,
    volatile: Volatile | None = None,
) -> tuple[Finding, ...]:
    """What ``diff`` finds in one aligned pair: the recorded call and the same call made again.

    Findings come in :data:`DRIFT_KINDS` order (``tool-drift``, ``behavior-drift`` or
    ``effect-drift``, ``audit-incomplete``), worded as the diff report words them; under
    ``volatile`` rules the two are compared with their volatile values masked.
    """
    out = _Collector(path)
    if volatile:

        def full() -> tuple[Record, Record]:
            return volatile.shown(recorded), volatile.shown(run)

        b, r = volatile.compared(recorded), volatile.compared(run)
        _compare_pair(out, b, r, behaviour or {}, mutators, full=full)
    else:
        _compare_pair(out, recorded, run, behaviour or {}, mutators)
    return out.findings()


def _silent_drift(out: _Collector, sources: Sequence[tuple[str, CallTable]], drift: SilentDrift) -> None:
    """The first silent drift of a run: its call, and the identical call it disagrees with (in the
    same run, or in an earlier one)."""
    source, position, tool = drift.source, drift.position, drift.tool
    first_source, first_position = drift.first_source, drift.first_position
    table = sources[source][1]
    first_index = sources[first_source][1].index(first_position)
    same = first_source == source
    where = "" if same else f" of {quote(sources[first_source][0])}"
    out.add(
        SILENT_DRIFT,
        index=table.index(position),
        tool=tool,
        related=first_index if same else None,
        line=table.light(position).line,
        message=(
            f"tool {quote(tool)} returned a different response than the identical call"
            f" at index {first_index}{where}, after the same state-changing calls"
            f"{SILENT_HINT}"
        ),
    )


def diff_baseline(
    baseline: Sequence[Record], runs: Sequence[tuple[str, Sequence[Record]]], judging: Judging
) -> DiffResult:
    """:func:`diff_tables` of records in memory: each ``(path, records)`` run with the baseline's."""
    with judging.store() as store:
        return diff_tables(
            table_of(store, baseline),
            [(path, table_of(store, records, path)) for path, records in runs],
            judging,
        )


def diff_tables(baseline: CallTable, runs: Sequence[tuple[str, CallTable]], judging: Judging) -> DiffResult:
    """The one judgement of a baseline and its runs (docs/spec.md §3.4): what differs and which
    differences are findings, decided by ``judging`` alone.

    The tables are of one store, :meth:`Judging.store`'s (their calls masked by its volatile rules);
    any size of transcript goes (see :mod:`toolreplay.analyses.calltable`).
    """
    masked = baseline.store.volatile.rules if baseline.store.volatile is not None else ()
    if masked != judging.volatile:
        raise ValueError("the tables were not read under the judging's volatile rules")
    behaviour = judging.behaviour
    collectors = []
    aligned_counts = []
    for path, table in runs:
        collector, aligned = _diff_run(path, baseline, table, judging)
        collectors.append(collector)
        aligned_counts.append(aligned)
    silent, agreed = _determinism([("", baseline), *runs], judging, collectors)
    called = sorted({tool for _, table in runs for tool in table.tools})
    verdicts = {tool: _verdict(behaviour.get(tool), tool in silent, tool in agreed) for tool in called}
    results = [
        _run_diff(path, table, collector, aligned)
        for (path, table), collector, aligned in zip(runs, collectors, aligned_counts, strict=True)
    ]
    return DiffResult(baseline_calls=len(baseline), runs=tuple(results), verdicts=verdicts)


def _determinism(
    sources: Sequence[tuple[str, CallTable]], judging: Judging, collectors: Sequence[_Collector]
) -> tuple[frozenset[str], frozenset[str]]:
    """Identical calls grouped across the baseline and the runs: each run's silent drifts added to
    its collector; the tools that disagreed anywhere, and those that agreed with the baseline."""
    observed = observe([table for _, table in sources], judging.behaviour, judging.mutators)
    for drift in observed.drifts:
        out = collectors[drift.source - 1]
        _silent_drift(out, sources, drift)
        if drift.more:
            out.count(SILENT_DRIFT, drift.tool, drift.more)
    return observed.silent, observed.agreed


def _verdict(declared: ToolBehaviour | None, silent: bool, agreed: bool) -> str:
    """A tool's determinism verdict: declared non-deterministic, seen to disagree with itself, seen
    to agree with the baseline, or never called as the baseline called it."""
    if declared is not None and not declared.deterministic:
        return "no-dependency"
    if silent:
        return SILENT_DRIFT
    return "stable" if agreed else "baseline-unavailable"


def _run_diff(path: str, table: CallTable, collector: _Collector, aligned: int) -> RunDiff:
    """A run's result: its counts and first findings by kind, in report order."""
    return RunDiff(
        path=path,
        calls=len(table),
        aligned=aligned,
        counts=tuple((kind, collector.counts[kind]) for kind in DRIFT_KINDS if kind in collector.counts),
        findings=collector.findings(),
        tools=tuple(sorted(table.tools)),
    )
