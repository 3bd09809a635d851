"""Replay a transcript against itself: non-determinism and redundant calls (docs/spec.md §3.1, §3.2)."""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from hashlib import sha256
from typing import Any, NamedTuple

import orjson

from toolreplay.analyses.volatile import Volatile
from toolreplay.canonical import canonical
from toolreplay.config import DEFAULT_MUTATORS
from toolreplay.errors import InputError
from toolreplay.escape import quote
from toolreplay.findings import Finding
from toolreplay.kinds import NON_DETERMINISM, REDUNDANT_CALL
from toolreplay.parallel import Fallback, RangeLines, over_ranges
from toolreplay.transcript import (
    Record,
    fitting_record,
    iter_lines,
    no_hidden_loss,
    open_input,
    out_of_order,
    parse_line,
)

#: What a non-determinism finding adds when a mutator ran between the two calls: in the 0.6
#: default the two are still compared, and the reader should know which knob stops that.
ACROSS_MUTATOR = " (a mutator ran in between: state_aware = false in the config compares across it)"
#: What a redundant-call finding adds outside the 0.6-compatible ``replay`` report: the rule
#: rests on which tools are declared to change state.
UNDECLARED_MUTATOR = " (if it changes state, declare it with --mutator or mutators in the config)"


class Call(NamedTuple):
    """What replay needs of a record: where it is, its tool, and two 128-bit digests
    (:func:`value_digest`), of its call (tool and arguments) and of its response. Small,
    so the parallel reader's workers send these rather than records, and a tuple: one is
    made per line, and a tuple is the cheapest object to make."""

    #: the record's index
    position: int
    line: int
    tool: str
    key: bytes
    response: bytes
    #: the record carries post-call ``state``, which makes it a mutating call whatever its tool
    stated: bool = False


def value_digest(value: Any) -> bytes:
    """A 128-bit digest of a JSON value: two values have the same one exactly when they have
    the same canonical text (docs/spec.md §1.2), the equality replay compares by.

    It hashes orjson's text with sorted keys rather than the canonical text: a one-to-one
    function of the value as well (sorted keys, shortest round-trip doubles, each string
    written one way), which only spells non-ASCII characters and small doubles otherwise, so
    nothing has to be escaped or respelled. Where orjson cannot write the value (an integer
    beyond 64 bits) the canonical text is hashed behind a NUL byte, which no orjson text
    starts with. SHA-256 cut to 16 bytes: OpenSSL's SHA-256 takes half the time of
    hashlib's BLAKE2b on a kilobyte.
    """
    try:
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        text = b"\x00" + canonical(value).encode("ascii")
    return sha256(text).digest()[:16]


def call_of(record: Record, volatile: Volatile | None = None, source: str = "") -> Call:
    """The :class:`Call` of a record (a whole one: ``transcript.slim`` leaves no values).

    Under ``volatile`` rules for its tool, its digests are of its masked texts (counted for ``source``).
    """
    if volatile is not None and volatile.for_tool(record.tool):
        masked = volatile.texts(record, source)
        return Call(
            record.index,
            record.line,
            record.tool,
            _text_digest(masked.call_key),
            _text_digest(masked.response),
            record.state is not None,
        )
    return Call(
        record.index,
        record.line,
        record.tool,
        value_digest({"args": record.args, "tool": record.tool}),
        value_digest(record.response),
        record.state is not None,
    )


def _text_digest(text: str) -> bytes:
    """A 128-bit digest of a masked comparison text (:mod:`toolreplay.analyses.volatile`),
    behind a byte no orjson text starts with; identical calls always take the same way."""
    return sha256(b"\x01" + text.encode("utf-8", "surrogatepass")).digest()[:16]


def fast_call(raw: bytes, line: int) -> Call | None:
    """The :class:`Call` of a transcript line without building its record; None where only
    the exact reader may answer. The texts :func:`value_digest` hashes prove, as chain's
    fast path does with canonical texts, that orjson lost no duplicate key and no integer
    beyond 64 bits: they hold the canonical texts' colons and ``+`` signs."""
    fitting = fitting_record(raw, sealed=False)
    if fitting is None:
        return None
    value, colons = fitting
    tool, response, state = value["tool"], value["response"], value.get("state")
    try:
        key = orjson.dumps({"args": value["args"], "tool": tool}, option=orjson.OPT_SORT_KEYS)
        answer = orjson.dumps(response, option=orjson.OPT_SORT_KEYS)
        after = b"" if state is None else orjson.dumps(state, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        return None
    # the line's colons: one per top-level key (the key text has two: "args" and "tool")
    canonical_colons = len(value) - 2 + key.count(b":") + answer.count(b":") + after.count(b":")
    if not no_hidden_loss(raw, colons, canonical_colons, key, answer, after):
        return None
    return Call(
        value["index"],
        line,
        tool,
        sha256(key).digest()[:16],
        sha256(answer).digest()[:16],
        state is not None,
    )


def read_calls(path: str, volatile: Volatile | None = None) -> Iterator[Call]:
    """The calls of a transcript file ("-" for stdin) in order: ``call_of`` of each record
    ``read_transcript`` reads, with its refusals, fast where :func:`fast_call` can answer
    (and no ``volatile`` rule names the call's tool)."""
    stream = open_input(path)
    try:
        read = _read_calls(iter_lines(stream, path), volatile, path)
        if volatile is not None:  # the matches of the rules' patterns, a batch of records at a time
            read = volatile.ahead(read, path, _record_read)
        for read_call in read:
            yield read_call if isinstance(read_call, Call) else call_of(read_call, volatile, path)
    finally:
        if path != "-":
            stream.close()


def _record_read(read: Call | Record) -> Record | None:
    return read if isinstance(read, Record) else None


def _read_calls(
    lines: Iterable[tuple[int, bytes]], volatile: Volatile | None, path: str
) -> Iterator[Call | Record]:
    """Each line's call, or its record where the exact reader reads it (the fast path could not
    answer, or a rule masks the call), refused here in the file's order."""
    for expected, (number, raw) in enumerate(lines):
        read: Call | Record | None = fast_call(raw, number)
        if read is None or (volatile is not None and volatile.for_tool(read.tool)):
            read = _exact_record(raw, number, path)
        position = read.position if isinstance(read, Call) else read.index
        if position != expected:
            raise out_of_order(position, expected, path=path, line=number)
        yield read


def _exact_record(raw: bytes, number: int, path: str) -> Record:
    """Line ``number``'s record, read by the exact reader; its error located in the file."""
    try:
        return parse_line(raw, line=number)[0]
    except InputError as err:
        raise InputError(err.problem, path=path, line=number, pointer=err.pointer) from err


# --- the same calls read on every core (parallel.py's pool), for a large file -----------------


def replay_range(path: str, start: int, end: int) -> tuple[int, array[int], list[str], bytes] | None:
    """The calls of a range's records, packed small for the trip back: (lines in the range,
    blank ones too; of each call its index, its line counted from the range's first line as 1
    and whether it records state; each call's tool; each call's key and response digests,
    back to back); None on any doubt."""
    numbers: array[int] = array("q")
    tools: list[str] = []
    digests: list[bytes] = []
    try:
        with open(path, "rb") as stream:
            lines = RangeLines(stream, start, end)
            for number, raw in lines:
                call = fast_call(raw, number) or call_of(parse_line(raw, line=number)[0])
                numbers.extend((call.position, call.line, call.stated))
                tools.append(call.tool)
                digests += (call.key, call.response)
    except (InputError, Fallback, OverflowError):  # OverflowError: an index past a signed 64-bit
        return None
    return lines.lines, numbers, tools, b"".join(digests)


def file_calls(path: str) -> Iterator[Call]:
    """The calls of a transcript file in order, as :func:`call_of` makes them from
    its records, computed on every core. Raises Fallback on any doubt (a refused line, an
    index out of order): only the sequential reader names those."""
    base = 0
    expected = 0
    for result in over_ranges(path, replay_range):
        if result is None:
            raise Fallback
        lines, numbers, tools, digests = result
        positions = range(expected, expected + len(tools))
        if numbers[0::3] != array("q", positions):
            raise Fallback
        spots = range(0, 32 * len(tools), 32)
        rows = zip(positions, numbers[1::3].tolist(), tools, spots, numbers[2::3], strict=True)
        for position, line, tool, at, stated in rows:
            key, response = digests[at : at + 16], digests[at + 16 : at + 32]
            yield Call(position, base + line, tool, key, response, stated != 0)
        expected += len(tools)
        base += lines


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplayResult:
    calls: int
    divergence: int | None
    findings: list[Finding]
    #: non-determinism findings whose two calls have a mutator between them (0.6 mode only)
    across_mutators: int = 0


def replay(
    records: Iterable[Record],
    *,
    mutators: frozenset[str] = DEFAULT_MUTATORS,
    state_aware: bool = False,
    nondeterministic: frozenset[str] = frozenset(),
    path: str = "",
    hints: bool = False,
    volatile: Volatile | None = None,
) -> ReplayResult:
    """Find non-determinism and redundant calls in one transcript.

    Non-determinism: the first response to each distinct call is remembered; a later
    identical call with another response is reported against it. In the default
    (0.6) mode that holds even across a mutating call; with ``state_aware`` a call to
    a mutator forgets what was remembered, since the world may have changed.

    Tools in ``nondeterministic`` (a tool lock's ``deterministic: false``) are expected to
    answer differently, so their responses are not compared.

    Redundancy: a call is redundant when the call just before it is the identical
    call and that tool is not a mutator, so nothing could have changed in between.

    A mutator is a tool in ``mutators`` or any call that recorded its post-call ``state``.
    With ``hints`` the messages name the knobs the rule rests on: how to declare a
    mutator, and ``state_aware`` for non-determinism across one. The ``replay`` text
    report keeps the 0.6 wording, so it leaves them out and counts ``across_mutators``.

    Under ``volatile`` rules two calls or two responses are compared with their volatile
    values masked (the count goes to ``path``).
    """
    return replay_calls(
        (call_of(record, volatile, path) for record in records),
        mutators=mutators,
        state_aware=state_aware,
        nondeterministic=nondeterministic,
        path=path,
        hints=hints,
    )


#: distinct calls replay keeps in a dict, the fastest lookup; past it they move to FirstCalls
DICT_CALLS = 100_000
#: a first sighting's value: its index and the number of mutating calls up to it, then its
#: response digest; an index that does not fit below _WIDE (a library caller's records may
#: carry any integer) is kept aside and packed as _WIDE
_FIRST = struct.Struct(">QQ")
_WIDE = 2**64 - 1
_KEY, _VALUE = 16, 32


class FirstCalls:
    """The first sighting of each distinct call, in a third of a dict's memory.

    A dict costs about 180 bytes a call (two objects and a slot), which makes 110 MB for the
    600,000 distinct calls of a 1 GB transcript. Here a call's 14 last key bytes and its
    32-byte value sit back to back in one of 65,536 byte arrays, chosen by the key's first
    two bytes: about 55 bytes a call. A lookup searches one array of a few hundred bytes
    (a key found at a position that is not an entry's start is not one).
    """

    _ENTRY = _KEY - 2 + _VALUE

    def __init__(self, calls: dict[bytes, bytes]) -> None:
        self._buckets: dict[bytes, bytearray] = {}
        for key, value in calls.items():
            self[key] = value

    def get(self, key: bytes) -> bytes | None:
        bucket = self._buckets.get(key[:2])
        if bucket is None:
            return None
        rest, size = key[2:], self._ENTRY
        at = bucket.find(rest)
        while at >= 0:
            if at % size == 0:
                return bytes(bucket[at + _KEY - 2 : at + size])
            at = bucket.find(rest, at + 1)
        return None

    def __setitem__(self, key: bytes, value: bytes) -> None:
        bucket = self._buckets.get(key[:2])
        if bucket is None:
            self._buckets[key[:2]] = bytearray(key[2:] + value)
        else:
            bucket += key[2:]
            bucket += value


def replay_calls(
    calls: Iterable[Call],
    *,
    mutators: frozenset[str] = DEFAULT_MUTATORS,
    state_aware: bool = False,
    nondeterministic: frozenset[str] = frozenset(),
    path: str = "",
    hints: bool = False,
) -> ReplayResult:
    """:func:`replay` over the records' calls (see :func:`call_of`)."""
    # Remember 128-bit digests, not texts: memory then grows with the number of distinct
    # calls, whatever the size of the responses. The value packs the first index (8 bytes),
    # the number of mutating calls before it (8 bytes) and the response digest into one
    # bytes object: about 180 bytes a call in a dict, about 55 once FirstCalls holds them.
    first: dict[bytes, bytes] | FirstCalls = {}
    wide: dict[bytes, int] = {}  # the first index of a call, where it does not fit _FIRST
    distinct = 0
    mutations = 0
    across = 0
    findings: list[Finding] = []
    divergence: int | None = None
    previous_key: bytes | None = None
    previous_index = -1
    count = 0
    for record in calls:
        count += 1
        key, response = record.key, record.response
        mutator = record.tool in mutators or record.stated
        if key == previous_key and not mutator:
            findings.append(_redundant(record, previous_index, path=path, hints=hints))
        seen = first.get(key)
        if seen is None:
            # a mutator's own state change counts as "in between" for its next identical call
            position = record.position
            if not 0 <= position < _WIDE:
                wide[key], position = position, _WIDE
            first[key] = _FIRST.pack(position, mutations + mutator) + response
            distinct += 1
            if distinct == DICT_CALLS:
                first = _compacted(first)
        elif seen[16:] != response and record.tool not in nondeterministic:
            finding, crossed = _differing(record, seen, wide, mutations, path=path, hints=hints)
            findings.append(finding)
            across += crossed
            if divergence is None:
                divergence = record.position
        if mutator:
            mutations += 1
            if state_aware:
                first, distinct, wide = {}, 0, {}
        previous_key, previous_index = key, record.position
    return ReplayResult(calls=count, divergence=divergence, findings=findings, across_mutators=across)


def _compacted(first: dict[bytes, bytes] | FirstCalls) -> FirstCalls:
    """``first``, moved into a :class:`FirstCalls` (once the dict holds ``DICT_CALLS`` calls)."""
    return first if isinstance(first, FirstCalls) else FirstCalls(first)


def _differing(
    record: Call, seen: bytes, wide: dict[bytes, int], mutations: int, *, path: str, hints: bool
) -> tuple[Finding, bool]:
    """The non-determinism of a call answered otherwise than the identical call first ``seen``, and
    whether a mutator ran between the two."""
    earlier, before = _FIRST.unpack_from(seen)
    crossed = before != mutations
    earlier = wide[record.key] if earlier == _WIDE else earlier
    return _nondeterministic(record, earlier, path=path, hint=hints and crossed), crossed


def _redundant(record: Call, previous_index: int, *, path: str, hints: bool) -> Finding:
    return Finding(
        kind=REDUNDANT_CALL,
        index=record.position,
        tool=record.tool,
        related=previous_index,
        path=path,
        line=record.line,
        message=(
            f"tool {quote(record.tool)} repeats the identical call at index "
            f"{previous_index} with no state change between them" + (UNDECLARED_MUTATOR if hints else "")
        ),
    )


def _nondeterministic(record: Call, earlier: int, *, path: str, hint: bool) -> Finding:
    """``hint``: say that a mutator ran between the two calls."""
    return Finding(
        kind=NON_DETERMINISM,
        index=record.position,
        tool=record.tool,
        related=earlier,
        path=path,
        line=record.line,
        message=(
            f"tool {quote(record.tool)} returned a different response than the "
            f"identical call at index {earlier}" + (ACROSS_MUTATOR if hint else "")
        ),
    )
