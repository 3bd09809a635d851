"""Determinism across a baseline and its runs (docs/spec.md §3.4): identical calls (same tool,
same arguments, the same state-changing calls before it in its own transcript) grouped by a
digest, and whose answers disagreed. Groups past :data:`OBSERVE_GROUPS` go through buckets,
so memory does not grow with the transcripts."""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from toolreplay.analyses.calltable import DIGEST_SIZE, HAS_STATE, ROW, CallTable, Column
from toolreplay.analyses.judging import ToolBehaviour, is_mutator

#: Identical-call groups held at once by the determinism verdicts (about 250 bytes each).
OBSERVE_GROUPS = 80_000


@dataclass(frozen=True, slots=True, kw_only=True)
class SilentDrift:
    """A run's first call of ``tool`` whose answer differs from an identical call's of a run."""

    #: the run (1 for the first run; 0 is the baseline) and the call's position in it
    source: int
    position: int
    tool: str
    #: the identical call it disagrees with (in the same run, or an earlier one)
    first_source: int
    first_position: int
    #: how many more calls of the tool in that run disagree so
    more: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Observed:
    """What grouping identical calls found."""

    #: tools whose identical calls disagreed anywhere
    silent: frozenset[str]
    #: tools whose calls agreed with the baseline's identical calls
    agreed: frozenset[str]
    #: each run's first silent drift of each tool, by run, then tool
    drifts: tuple[SilentDrift, ...]


#: one observation of a deterministic call: its group (the call and the state-changing calls
#: before it, as one digest), response digest, source, position and tool number
_OBSERVATION = struct.Struct("<16s16sIQI")


def _observations(
    sources: Sequence[CallTable], behaviour: Mapping[str, ToolBehaviour], mutators: frozenset[str]
) -> Iterator[tuple[bytes, bytes, int, int, int]]:
    """Every call whose responses are compared, in order: baseline first, then each run."""
    names = sources[0].store.names
    compared = [behaviour.get(t) is None or behaviour[t].deterministic for t in names]
    changes = [is_mutator(t, behaviour, mutators) for t in names]
    for source, table in enumerate(sources):
        yield from _table_observations(source, table, compared, changes)


def _table_observations(
    source: int, table: CallTable, compared: list[bool], changes: list[bool]
) -> Iterator[tuple[bytes, bytes, int, int, int]]:
    """The compared calls of one source, each grouped with the state-changing calls before it."""
    history = b""
    keys = table.keys.scan()
    for position, (key, row) in enumerate(zip(keys, table.rows.scan(), strict=True)):
        response, _, _, _, flags, tool, _, _ = ROW.unpack(row)
        if compared[tool]:
            group = hashlib.blake2b(key + history, digest_size=DIGEST_SIZE).digest()
            yield group, response, source, position, tool
        if changes[tool] or flags & HAS_STATE:
            history = hashlib.blake2b(history + key, digest_size=DIGEST_SIZE).digest()


def observe(
    sources: Sequence[CallTable],
    behaviour: Mapping[str, ToolBehaviour],
    mutators: frozenset[str],
    groups: int | None = None,
) -> Observed:
    """Group identical calls: the tools that disagreed anywhere, those that agreed with the
    baseline, and each run's first silent drift of each tool.

    Source 0 is the baseline. A disagreement between two run observations is a silent drift
    at the later one (a disagreement with the baseline is behaviour drift's business).

    Identical calls are grouped by a digest of the call and the state-changing calls before
    it. With more observations than ``groups`` they are first dealt, by that digest, into
    as many buckets as it takes for each to hold about ``groups``, and the buckets are
    grouped one after the other: a group lies whole in one bucket, and each bucket keeps
    the order of the calls, so the verdicts and findings are the ones of one pass.
    """
    groups = OBSERVE_GROUPS if groups is None else groups
    tables = sources
    total = sum(len(table) for table in tables)
    names = tables[0].store.names
    silent: set[str] = set()
    agreed: set[str] = set()
    # per run source and tool number: how many silent drifts, and the first one as
    # (position, source and position of the call it disagrees with)
    found: dict[tuple[int, int], int] = {}
    first: dict[tuple[int, int], tuple[int, int, int]] = {}

    def group(observations: Iterable[tuple[bytes, bytes, int, int, int]]) -> None:
        seen: dict[bytes, tuple[bytes | None, tuple[int, int, bytes] | None]] = {}
        for key, response, source, position, tool in observations:
            baseline, run = seen.get(key, (None, None))
            if source == 0:
                if baseline is None:
                    seen[key] = (response, run)
                elif baseline != response:
                    silent.add(names[tool])
                continue
            if baseline is not None:
                (agreed if baseline == response else silent).add(names[tool])
            if run is None:
                seen[key] = (baseline, (source, position, response))
            elif run[2] != response:
                silent.add(names[tool])
                found[source, tool] = found.get((source, tool), 0) + 1
                if (source, tool) not in first or position < first[source, tool][0]:
                    first[source, tool] = (position, run[0], run[1])

    for observations in _buckets(tables, behaviour, mutators, total, groups):
        group(observations)
    drifts = tuple(
        SilentDrift(
            source=source,
            position=position,
            tool=names[tool],
            first_source=first_source,
            first_position=first_position,
            more=found[source, tool] - 1,
        )
        for (source, tool), (position, first_source, first_position) in sorted(first.items())
    )
    return Observed(silent=frozenset(silent), agreed=frozenset(agreed), drifts=drifts)


_Observation = tuple[bytes, bytes, int, int, int]


def _buckets(
    tables: Sequence[CallTable],
    behaviour: Mapping[str, ToolBehaviour],
    mutators: frozenset[str],
    total: int,
    groups: int,
) -> Iterator[Iterable[_Observation]]:
    """The ``total`` observations in one pass when they are at most ``groups``, else dealt by their
    group's digest into as many buckets as it takes for each to hold about ``groups``."""
    if total <= groups:
        yield _observations(tables, behaviour, mutators)
        return
    buckets = -(-total // groups)
    columns = [Column(tables[0].store, _OBSERVATION.size, chunk=512) for _ in range(buckets)]
    for observation in _observations(tables, behaviour, mutators):
        columns[int.from_bytes(observation[0][:8], "little") % buckets].append(
            _OBSERVATION.pack(*observation)
        )
    for column in columns:
        column.finish()
        yield (_OBSERVATION.unpack(item) for item in column.scan())
