"""Compare runs with a sealed baseline call by call (docs/spec.md §3.4).

The baseline and each run are aligned on their canonical calls (the longest blocks of
identical calls, as ``difflib`` finds them), so one inserted or skipped call is one
``agent-drift`` rather than a cascade. Aligned pairs are then compared: contract
fingerprints (``tool-drift``), responses (``behavior-drift``), post-call state
(``effect-drift``) and whether a mutating call recorded its state at all
(``audit-incomplete``). Only the first difference of each kind becomes a finding;
the rest are counted.

Per tool a determinism verdict compares *identical* calls across the baseline and all
runs: same tool, same arguments and the same mutating calls before it in its own
transcript (so a read after a write is not compared with a read before it). A mutating
call is a declared mutator (``mutators``, or the lock's ``mutates``) or any call that
recorded its post-call ``state``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from difflib import SequenceMatcher
from typing import TYPE_CHECKING, Any

from toolreplay.analyses.replay import DEFAULT_MUTATORS
from toolreplay.canonical import canonical
from toolreplay.findings import Change, Finding, quote
from toolreplay.locate import pointer_token
from toolreplay.transcript import Record

if TYPE_CHECKING:
    from toolreplay.contracts.lock import ToolLock

#: Finding kinds of a baseline diff, in report order.
DRIFT_KINDS: tuple[str, ...] = (
    "agent-drift",
    "tool-drift",
    "behavior-drift",
    "effect-drift",
    "audit-incomplete",
    "silent-drift",
)
#: Determinism verdicts, one per tool the runs called.
VERDICTS: tuple[str, ...] = ("no-dependency", "stable", "silent-drift", "baseline-unavailable")

#: The silent-drift rule rests on which calls change state; this says how to declare one.
SILENT_HINT = (
    " (if a call between them changes state, declare its tool with --mutator or mutators in the config)"
)

_VALUE_LIMIT = 60
#: Post-call state values are fingerprints: shown whole up to a SHA-512 digest with a prefix.
_STATE_LIMIT = 160
#: Largest middle (baseline calls x run calls) aligned without difflib's autojunk heuristic.
MAX_EXACT_ALIGN = 4_000_000
_SECONDS_PER_DAY = 86400
#: what the freshness check says of a baseline no commit has yet
NOT_COMMITTED = "not committed yet"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolBehaviour:
    """What a tool lock declares about one tool (docs/spec.md §1.5); None means "not declared"."""

    fingerprint: str | None = None
    deterministic: bool = True
    mutates: bool | None = None
    #: the locked contract's version, shown beside its fingerprint
    version: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunDiff:
    """How one run compares with the baseline."""

    path: str
    calls: int
    aligned: int
    #: every difference found, by kind (only the first of each kind is a finding)
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
        return any(run.findings for run in self.runs) or "silent-drift" in self.verdicts.values()


@dataclass(frozen=True, slots=True, kw_only=True)
class Freshness:
    """The age check of a baseline against its last git commit."""

    committed: str
    max_age_days: int
    stale: bool
    #: no commit has the baseline yet: its age starts with its first commit
    uncommitted: bool = False


# --- the tool lock, as far as the diff needs it ---------------------------------------


def lock_behaviour(path: str) -> dict[str, ToolBehaviour]:
    """Per-tool ``fingerprint``, ``deterministic`` and ``mutates`` from a tool lock (docs/spec.md §1.5)."""
    from toolreplay.contracts.lock import load_lock

    return behaviour_of(load_lock(path))


def behaviour_of(lock: ToolLock) -> dict[str, ToolBehaviour]:
    """What the diff needs of each contract in a loaded lock."""
    return {
        name: ToolBehaviour(
            fingerprint=c.fingerprint, deterministic=c.deterministic, mutates=c.mutates, version=c.version
        )
        for name, c in lock.tools.items()
    }


# --- freshness -------------------------------------------------------------------------


def check_freshness(commit_time: int | None, *, now: int, max_age_days: int) -> Freshness:
    """Is a baseline last committed at ``commit_time`` older than ``max_age_days`` at ``now``?

    Both times are Unix seconds; ``now`` is passed in so the rule is testable and the
    report shows only the commit date, never the current time. A baseline no commit has
    yet (``None``) is not stale: it is about to be committed, and its age starts then.
    """
    if commit_time is None:
        return Freshness(committed=NOT_COMMITTED, max_age_days=max_age_days, stale=False, uncommitted=True)
    committed = datetime.fromtimestamp(commit_time, tz=UTC).strftime("%Y-%m-%d")
    stale = now - commit_time > max_age_days * _SECONDS_PER_DAY
    return Freshness(committed=committed, max_age_days=max_age_days, stale=stale)


# --- JSON value differences ------------------------------------------------------------

#: stands for a member present on one side only of a difference
ABSENT: Any = object()
_ABSENT = ABSENT


def first_difference(old: Any, new: Any, pointer: str = "") -> tuple[str, Any, Any] | None:
    """The first JSON pointer (in canonical key order) where two values differ, with both values.

    A member present on one side only is reported with a private "absent" marker on the other.
    """
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(old.keys() | new.keys()):
            found = first_difference(
                old.get(key, _ABSENT), new.get(key, _ABSENT), pointer + "/" + pointer_token(key)
            )
            if found:
                return found
        return None
    if isinstance(old, list) and isinstance(new, list):
        for i in range(max(len(old), len(new))):
            a = old[i] if i < len(old) else _ABSENT
            b = new[i] if i < len(new) else _ABSENT
            found = first_difference(a, b, f"{pointer}/{i}")
            if found:
                return found
        return None
    if old is _ABSENT or new is _ABSENT or canonical(old) != canonical(new):
        return pointer, old, new
    return None


def show_value(value: Any, limit: int = _VALUE_LIMIT) -> str:
    """A value for a message: its canonical JSON, clipped to ``limit``; ``no value`` when missing.

    Canonical JSON is ASCII with every control character escaped, so it is already
    one safe line and self-delimiting (strings keep their double quotes).
    """
    if value is _ABSENT:
        return "no value"
    text = canonical(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def _change(difference: tuple[str, Any, Any] | None, limit: int = _VALUE_LIMIT) -> Change | None:
    if difference is None:  # pragma: no cover - callers compare canonical texts first
        return None
    pointer, old, new = difference
    return Change(pointer=pointer, baseline=show_value(old, limit), run=show_value(new, limit))


def _where(difference: tuple[str, Any, Any] | None, limit: int = _VALUE_LIMIT) -> str:
    if difference is None:  # pragma: no cover - callers compare canonical texts first
        return ""
    pointer, old, new = difference
    return (
        f": at {quote(pointer)} the baseline has {show_value(old, limit)},"
        f" the run has {show_value(new, limit)}"
    )


# --- the diff --------------------------------------------------------------------------


def _is_mutator(tool: str, behaviour: Mapping[str, ToolBehaviour], mutators: frozenset[str]) -> bool:
    declared = behaviour.get(tool)
    if declared is not None and declared.mutates is not None:
        return declared.mutates
    return tool in mutators


class _Collector:
    """Keeps the first finding of each kind and counts every difference."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.counts: dict[str, int] = {}
        self.first: dict[str, Finding] = {}

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
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if kind not in self.first:
            self.first[kind] = Finding(
                kind=kind,
                index=index,
                tool=tool,
                message=message,
                path=self.path,
                line=line,
                related=related,
                change=change,
            )


def _agent_drift(
    out: _Collector,
    tag: str,
    base: Sequence[Record],
    run: Sequence[Record],
    i1: int,
    i2: int,
    j1: int,
    j2: int,
) -> None:
    if tag == "replace":
        b, r = base[i1], run[j1]
        change = None
        if b.tool == r.tool:
            difference = first_difference(json.loads(b.canon_args), json.loads(r.canon_args))
            where, change = _where(difference), _change(difference)
            message = (
                f"tool {quote(r.tool)} was called with other arguments than at baseline index {i1}{where}"
            )
        else:
            message = (
                f"the run called tool {quote(r.tool)} where the baseline called {quote(b.tool)} at index {i1}"
            )
        out.add("agent-drift", index=j1, tool=r.tool, related=i1, line=r.line, message=message, change=change)
    elif tag == "insert":
        r = run[j1]
        if i1 < len(base):
            place = f"where the baseline goes on with tool {quote(base[i1].tool)} at index {i1}"
        elif base:
            place = f"after the baseline's last call (index {len(base) - 1})"
        else:
            place = "and the baseline has no calls"
        message = f"the run called tool {quote(r.tool)} {place}"
        related = i1 if i1 < len(base) else None
        out.add("agent-drift", index=j1, tool=r.tool, related=related, line=r.line, message=message)
    else:  # delete: baseline calls the run did not make
        b = base[i1]
        more = f" (and {i2 - i1 - 1} more after it)" if i2 - i1 > 1 else ""
        if j1 < len(run):
            then = f"; it went on with the call at baseline index {i2}"
        else:
            then = f"; the run stopped at index {len(run)}"
        message = f"the run did not make the call to tool {quote(b.tool)} at baseline index {i1}{more}{then}"
        line = run[j1].line if j1 < len(run) else None
        out.add("agent-drift", index=j1, tool=b.tool, related=i1, line=line, message=message)


def fingerprint_message(
    tool: str, recorded: str, other: str, *, side: str = "", against: str = "the lock", explain: str = ""
) -> str:
    """The one wording of a ``tool-drift`` between two fingerprints, whichever check found it.

    ``side`` says where the call was recorded ("in the run", "in the baseline (index 3)"),
    ``against`` what holds the other fingerprint; ``explain`` is what changed, as
    ``fingerprint-diff`` words it, when the tool source is known.
    """
    where = f" {side}" if side else ""
    text = f"tool {quote(tool)} was called with fingerprint {recorded}{where}; {against} has {other}"
    return text + (f"; {explain}" if explain else "")


def _fingerprint_drift(
    b: Record | None,
    r: Record,
    declared: ToolBehaviour | None,
    explain: Mapping[str, str],
    lock_checks_runs: bool,
) -> str | None:
    """The tool-drift message of a run call (and the baseline call it aligns with, if any)."""
    tool = r.tool
    locked = declared.fingerprint if declared else None
    shown = locked or ""
    if locked and declared is not None and declared.version:
        shown = f"{locked} (version {canonical(declared.version)})"
    why = explain.get(tool, "")
    if b is not None and b.fingerprint and r.fingerprint and b.fingerprint != r.fingerprint:
        if not lock_checks_runs and locked and r.fingerprint != locked:
            return None  # the run's own check against the lock reports this call
        return fingerprint_message(
            tool,
            r.fingerprint,
            b.fingerprint,
            side="in the run",
            against=f"the baseline (index {b.index})",
            explain=why,
        )
    if not locked:
        return None
    if b is not None and b.fingerprint and b.fingerprint != locked:
        return fingerprint_message(
            tool, b.fingerprint, shown, side=f"in the baseline (index {b.index})", explain=why
        )
    if lock_checks_runs and r.fingerprint and r.fingerprint != locked:
        return fingerprint_message(tool, r.fingerprint, shown, side="in the run", explain=why)
    return None


def _compare_pair(
    out: _Collector,
    b: Record,
    r: Record,
    behaviour: Mapping[str, ToolBehaviour],
    mutators: frozenset[str],
    explain: Mapping[str, str] | None = None,
    lock_checks_runs: bool = True,
) -> None:
    explain = explain or {}
    tool, declared = r.tool, behaviour.get(r.tool)

    def add(kind: str, message: str, change: Change | None = None) -> None:
        out.add(kind, index=r.index, tool=tool, related=b.index, line=r.line, message=message, change=change)

    drift = _fingerprint_drift(b, r, declared, explain, lock_checks_runs)
    if drift is not None:
        add("tool-drift", drift)
    # a tool the lock declares non-deterministic: its responses are not compared, its effects are
    nondeterministic = declared is not None and not declared.deterministic
    if r.canon_response != b.canon_response and not nondeterministic:
        difference = first_difference(json.loads(b.canon_response), json.loads(r.canon_response))
        where = _where(difference)
        add(
            "behavior-drift",
            f"tool {quote(tool)} returned a different response than at baseline index {b.index}{where}",
            _change(difference),
        )
    elif b.canon_state is not None and r.canon_state is not None and b.canon_state != r.canon_state:
        difference = first_difference(b.state, r.state)
        where = _where(difference, _STATE_LIMIT)
        same = "returned the same response as" if r.canon_response == b.canon_response else "was called as"
        add(
            "effect-drift",
            f"tool {quote(tool)} {same} at baseline index {b.index} but left a different state{where}",
            _change(difference, _STATE_LIMIT),
        )
    # A baseline that recorded a call's post-state says its effect matters, whatever the
    # mutators list or a declaration says: a run that drops it (a re-execution without a
    # state function) is unaudited, not a pass.
    dropped = b.state is not None and r.state is None
    if dropped or (_is_mutator(tool, behaviour, mutators) and (b.state is None or r.state is None)):
        missing = (
            "neither side records"
            if b.state is None and r.state is None
            else ("the baseline does not record" if b.state is None else "the run does not record")
        )
        add(
            "audit-incomplete",
            (
                f"tool {quote(tool)} changes state but {missing} its post-call state"
                f" (baseline index {b.index}): its effect cannot be compared"
            ),
        )


def _diff_run(
    path: str,
    base: Sequence[Record],
    run: Sequence[Record],
    base_keys: list[str],
    behaviour: Mapping[str, ToolBehaviour],
    mutators: frozenset[str],
    explain: Mapping[str, str] | None = None,
    lock_checks_runs: bool = True,
) -> tuple[_Collector, int]:
    out = _Collector(path)
    aligned = 0
    explain = explain or {}
    # a call the run makes differently (a new required argument, say) is not aligned, but its
    # contract is still compared: with the baseline's calls of that tool, or with the lock
    recorded: dict[str, Record] = {}
    for b in base:
        if b.fingerprint and b.tool not in recorded:
            recorded[b.tool] = b
    for tag, i1, i2, j1, j2 in align(base_keys, [r.call_key for r in run]):
        if tag == "equal":
            aligned += i2 - i1
            for offset in range(i2 - i1):
                _compare_pair(
                    out, base[i1 + offset], run[j1 + offset], behaviour, mutators, explain, lock_checks_runs
                )
            continue
        _agent_drift(out, tag, base, run, i1, i2, j1, j2)
        for r in run[j1:j2]:
            drift = _fingerprint_drift(
                recorded.get(r.tool), r, behaviour.get(r.tool), explain, lock_checks_runs
            )
            if drift is not None:
                out.add("tool-drift", index=r.index, tool=r.tool, related=None, line=r.line, message=drift)
    return out, aligned


# --- the same comparison, call by call (re-execution) ------------------------------------


def call_drift(recorded: Sequence[Record], run: Sequence[Record], *, path: str = "") -> Finding | None:
    """The ``agent-drift`` of the run's last call held against the recorded call at its position.

    Re-execution does not align: call N must be the recorded call N (same tool, same
    canonical arguments), and a call past the recording's end is an extra one. None when
    the call is the recorded one. Only the run's last call's tool and arguments are read.
    """
    position = len(run) - 1
    out = _Collector(path)
    if position >= len(recorded):
        _agent_drift(out, "insert", recorded, run, len(recorded), len(recorded), position, position + 1)
    elif recorded[position].call_key != run[position].call_key:
        _agent_drift(out, "replace", recorded, run, position, position + 1, position, position + 1)
    return out.first.get("agent-drift")


def stop_drift(recorded: Sequence[Record], run: Sequence[Record], *, path: str = "") -> Finding | None:
    """The ``agent-drift`` of a run that stopped before the recording's last call (None if it did not)."""
    if len(run) >= len(recorded):
        return None
    out = _Collector(path)
    _agent_drift(out, "delete", recorded, run, len(run), len(recorded), len(run), len(run))
    return out.first["agent-drift"]


def compare_call(
    recorded: Record,
    run: Record,
    *,
    path: str = "",
    behaviour: Mapping[str, ToolBehaviour] | None = None,
    mutators: frozenset[str] = DEFAULT_MUTATORS,
) -> tuple[Finding, ...]:
    """What ``diff`` finds in one aligned pair: the recorded call and the same call made again.

    Findings come in :data:`DRIFT_KINDS` order (``tool-drift``, ``behavior-drift`` or
    ``effect-drift``, ``audit-incomplete``), worded as the diff report words them.
    """
    out = _Collector(path)
    _compare_pair(out, recorded, run, behaviour or {}, mutators)
    return tuple(out.first[kind] for kind in DRIFT_KINDS if kind in out.first)


Opcode = tuple[str, int, int, int, int]


def align(old: Sequence[str], new: Sequence[str]) -> list[Opcode]:
    """``difflib``-style opcodes aligning two call sequences.

    The common head and tail are matched first (linear time); ``difflib`` aligns what
    is left between them. A large middle turns on difflib's own "popular element"
    heuristic (``autojunk``), which keeps thousands of identical polling calls from
    making the alignment quadratic, at the price of a coarser alignment there.
    """
    n, m = len(old), len(new)
    head = 0
    while head < min(n, m) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(n, m) - head and old[n - 1 - tail] == new[m - 1 - tail]:
        tail += 1
    mid_old, mid_new = old[head : n - tail], new[head : m - tail]
    ops: list[Opcode] = [("equal", 0, head, 0, head)] if head else []
    exact = len(mid_old) * len(mid_new) <= MAX_EXACT_ALIGN
    matcher = SequenceMatcher(None, mid_old, mid_new, autojunk=not exact)
    ops += [(t, i1 + head, i2 + head, j1 + head, j2 + head) for t, i1, i2, j1, j2 in matcher.get_opcodes()]
    if tail:
        ops.append(("equal", n - tail, n, m - tail, m))
    return ops


@dataclass(slots=True, kw_only=True)
class _Seen:
    """The first observations of one identical call (same call, same mutations before it)."""

    baseline: str | None = None
    run: tuple[int, int, str] | None = None  # (source, index, canonical response)


def _observe(
    sources: Sequence[tuple[str, Sequence[Record]]],
    behaviour: Mapping[str, ToolBehaviour],
    mutators: frozenset[str],
    collectors: Sequence[_Collector],
) -> tuple[set[str], set[str]]:
    """Group identical calls; return (tools that disagreed anywhere, tools that agreed with the baseline).

    Source 0 is the baseline. A disagreement between two run observations becomes a
    ``silent-drift`` finding at the later one (a disagreement with the baseline is
    behaviour drift's business).
    """
    seen: dict[tuple[str, str], _Seen] = {}
    silent: set[str] = set()
    agreed: set[str] = set()
    for source, (_, records) in enumerate(sources):
        history = ""
        for record in records:
            tool = record.tool
            declared = behaviour.get(tool)
            if declared is None or declared.deterministic:
                group = seen.setdefault((record.call_key, history), _Seen())
                response = record.canon_response
                if source == 0:
                    if group.baseline is None:
                        group.baseline = response
                    elif group.baseline != response:
                        silent.add(tool)
                else:
                    if group.baseline is not None:
                        if group.baseline == response:
                            agreed.add(tool)
                        else:
                            silent.add(tool)
                    if group.run is None:
                        group.run = (source, record.index, response)
                    elif group.run[2] != response:
                        first_source, first_index, _ = group.run
                        silent.add(tool)
                        where = "" if first_source == source else f" of {quote(sources[first_source][0])}"
                        collectors[source - 1].add(
                            "silent-drift",
                            index=record.index,
                            tool=tool,
                            related=first_index if first_source == source else None,
                            line=record.line,
                            message=(
                                f"tool {quote(tool)} returned a different response than the identical call"
                                f" at index {first_index}{where}, after the same state-changing calls"
                                f"{SILENT_HINT}"
                            ),
                        )
            if _is_mutator(tool, behaviour, mutators) or record.state is not None:
                history = hashlib.sha256((history + record.call_key).encode("ascii")).hexdigest()
    return silent, agreed


def diff_baseline(
    baseline: Sequence[Record],
    runs: Sequence[tuple[str, Sequence[Record]]],
    *,
    behaviour: Mapping[str, ToolBehaviour] | None = None,
    mutators: frozenset[str] = DEFAULT_MUTATORS,
    explain: Mapping[str, str] | None = None,
    lock_checks_runs: bool = True,
) -> DiffResult:
    """Compare each ``(path, records)`` run with the baseline records.

    ``behaviour`` holds what a tool lock declares: a tool's ``mutates`` overrides the
    ``mutators`` list for it, ``deterministic: false`` exempts its responses from
    comparison (verdict ``no-dependency``), and its fingerprint is compared with the
    ones recorded. ``explain`` maps a tool to what changed in its contract (the
    ``fingerprint-diff`` lines between the lock and the tool source), added to its
    ``tool-drift``. Without ``lock_checks_runs`` a run call whose fingerprint differs from the
    lock is left to that run's own check against the lock (``check`` runs it), so the same
    call is not reported twice.
    """
    behaviour = behaviour or {}
    base_keys = [record.call_key for record in baseline]
    collectors = []
    aligned_counts = []
    for path, records in runs:
        collector, aligned = _diff_run(
            path, baseline, records, base_keys, behaviour, mutators, explain, lock_checks_runs
        )
        collectors.append(collector)
        aligned_counts.append(aligned)
    silent, agreed = _observe([("", baseline), *runs], behaviour, mutators, collectors)
    called = sorted({record.tool for _, records in runs for record in records})
    verdicts: dict[str, str] = {}
    for tool in called:
        declared = behaviour.get(tool)
        if declared is not None and not declared.deterministic:
            verdicts[tool] = "no-dependency"
        elif tool in silent:
            verdicts[tool] = "silent-drift"
        elif tool in agreed:
            verdicts[tool] = "stable"
        else:
            verdicts[tool] = "baseline-unavailable"
    results = []
    for (path, records), collector, aligned in zip(runs, collectors, aligned_counts, strict=True):
        results.append(
            RunDiff(
                path=path,
                calls=len(records),
                aligned=aligned,
                counts=tuple(
                    (kind, collector.counts[kind]) for kind in DRIFT_KINDS if kind in collector.counts
                ),
                findings=tuple(collector.first[kind] for kind in DRIFT_KINDS if kind in collector.first),
                tools=tuple(sorted({record.tool for record in records})),
            )
        )
    return DiffResult(baseline_calls=len(baseline), runs=tuple(results), verdicts=verdicts)
