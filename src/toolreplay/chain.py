"""The SHA-256 hash chain over a transcript: seal and verify (docs/spec.md §1.3)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import IO

import orjson

from toolreplay.canonical import canonical_dump, canonical_str, is_canonical_text
from toolreplay.errors import InputError
from toolreplay.limits import MAX_RECORD_BYTES
from toolreplay.transcript import (
    GENESIS,
    Link,
    Record,
    fields_fit,
    fitting_record,
    iter_lines,
    no_hidden_loss,
    out_of_order,
    parse_line,
    parse_links,
    shape_fits,
)


def parts_of(record: Record) -> tuple[str, str, str]:
    """The canonical link text of ``record`` around its two chain values.

    Keys sort as args, digest, fingerprint, index, prev, response, state, text_digest, tool, so with
    ``(head, middle, tail) = parts_of(record)`` the digest input is
    ``head + middle + prev + tail`` and the link line is
    ``head + ',"digest":"' + digest + '"' + middle + prev + tail``.
    """
    head = '{"args":' + record.canon_args
    middle = "" if record.fingerprint is None else ',"fingerprint":' + canonical_str(record.fingerprint)
    middle += f',"index":{record.index},"prev":"'
    tail = '","response":' + record.canon_response
    if record.canon_state is not None:
        tail += ',"state":' + record.canon_state
    if record.text_digest is not None:
        tail += ',"text_digest":"' + record.text_digest + '"'
    tail += ',"tool":' + canonical_str(record.tool) + "}"
    return head, middle, tail


def link_digest(record: Record, prev: str) -> tuple[str, str]:
    """Return (digest, canonical link line) for ``record`` chained after ``prev``."""
    head, middle, tail = parts_of(record)
    digest = hashlib.sha256((head + middle + prev + tail).encode("ascii")).hexdigest()
    return digest, head + ',"digest":"' + digest + '"' + middle + prev + tail


def seal(records: Iterable[Record]) -> Iterator[tuple[str, str]]:
    """Yield (digest, canonical link line) for each record, chaining from the genesis value.
    A link over the line cap is refused, as ``toolreplay seal`` refuses it."""
    prev = GENESIS
    for record in records:
        digest, line = link_digest(record, prev)
        if len(line) > MAX_RECORD_BYTES:
            raise link_too_long(len(line), line=record.line or None)
        yield digest, line
        prev = digest


@dataclass(frozen=True, slots=True, kw_only=True)
class Break:
    """Where and why a chain stops following."""

    position: int
    line: int
    expected: str
    found: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ChainState:
    """The outcome of walking a sealed transcript."""

    links: int
    head: str
    broken: Break | None


def verify(links: Iterable[Link]) -> ChainState:
    """Recompute the chain; stop at the first link that does not follow.

    At position N the chain requires index N and ``prev`` equal to the digest before
    it. ``expected`` is the digest this link's content would have there; ``found`` is
    the digest stored in the file.
    """
    return _walk(links, prev=GENESIS, start=0)


def intact_prefix(stream: IO[bytes], path: str) -> tuple[ChainState, tuple[str, ...], InputError | None]:
    """A sealed transcript read as far as it goes: the :func:`verify` state of the links before
    the first line that is no link, the digest of each link that follows, and the error that
    stopped the reading (None: every line is a link). The drift-note guard judges a baseline
    committed broken by its intact prefix."""
    links: list[Link] = []
    error = None
    try:
        links.extend(parse_links(stream, path))
    except InputError as err:
        error = err
    state = verify(links)
    return state, tuple(link.digest for link in links[: state.links]), error


def _exact_link(raw: bytes, number: int, path: str) -> Link:
    """Line ``number``'s link, read by the exact reader; its error located in the file."""
    try:
        record, value = parse_line(raw, sealed=True, line=number)
    except InputError as err:
        raise InputError(err.problem, path=path, line=number, pointer=err.pointer) from err
    return Link(record=record, prev=value["prev"], digest=value["digest"], raw=raw)


def _walk(links: Iterable[Link], *, prev: str, start: int) -> ChainState:
    """:func:`verify` from position ``start``, the chain's head there being ``prev``."""
    count = 0
    for position, link in enumerate(links, start):
        record = link.record
        if record.index != position:
            reason = f"index {record.index} where the chain requires {position}"
            expected, _ = link_digest(replace(record, index=position), prev)
            return ChainState(links=count, head=prev, broken=_break(position, link, expected, reason))
        expected, line = link_digest(record, prev)
        reason = _break_reason(link, prev, expected, line)
        if reason:
            return ChainState(links=count, head=prev, broken=_break(position, link, expected, reason))
        prev = expected
        count += 1
    return ChainState(links=count, head=prev, broken=None)


def _break(position: int, link: Link, expected: str, reason: str) -> Break:
    return Break(
        position=position, line=link.record.line, expected=expected, found=link.digest, reason=reason
    )


# --- the fast path over raw lines ------------------------------------------------------------
#
# Sealing and verifying spend their time decoding and re-encoding JSON. These functions do
# each line with one orjson decode and one or two orjson encodes (byte-identical to
# ``canonical`` once ``canonical.canonical_dump`` has fixed the two notations orjson writes
# otherwise), and never build a Record. They only ever answer "this line is fine, here is
# what it holds" or "don't know" (None): the callers then take the exact path above for that
# line, which names the problem precisely. A fast answer is never a second opinion.
#
# They are written flat, with the common record checked inline, because they run once per
# line of files of any size: each test here costs a measurable share of the whole (bench/).

_DIGEST_MEMBER = b',"digest":"'
_PREV_GAP = b'"prev":""'


def fast_parts(raw: bytes) -> tuple[int, bytes, bytes, bytes] | None:
    """(index, head, middle, tail) of a transcript line, as :func:`parts_of` gives them (ASCII bytes)."""
    fitting = fitting_record(raw, sealed=False)
    if fitting is None:
        return None
    value, colons = fitting
    args = value.pop("args")
    value["prev"] = ""  # a placeholder: the rest then sorts and reads as the link does
    try:
        head = canonical_dump(args)
        rest = canonical_dump(value)
    except orjson.JSONEncodeError:
        return None
    if head is None or rest is None:
        return None
    # the line's colons: args' own, one per key but "prev" (rest counts the placeholder)
    if not no_hidden_loss(raw, colons, head.count(b":") + rest.count(b":"), head, rest):
        return None
    gap = rest.index(_PREV_GAP)  # index and fingerprint, the only keys before it, cannot hold it
    return value["index"], b'{"args":' + head, b"," + rest[1:gap] + b'"prev":"', b'"' + rest[gap + 9 :]


def fast_link(raw: bytes) -> tuple[int, str, str] | None:
    """(index, prev, digest) of a sealed line that is canonical and whose digest is its own.

    The line being the canonical text of the value orjson decoded proves what the reader's
    other checks prove: a duplicate key or an integer beyond 64 bits would re-encode otherwise.
    """
    if not shape_fits(raw):
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not is_canonical_text(raw, value):
        return None
    if not fields_fit(value, sealed=True):
        return None
    digest = value["digest"]
    at = raw.find(_DIGEST_MEMBER)  # in canonical text the member follows args
    if raw[at + 11 : at + 75].decode("ascii") != digest:  # raw is ASCII here; digest may not be
        return None
    body = hashlib.sha256(raw[:at])
    body.update(raw[at + 76 :])
    if body.hexdigest() != digest:
        return None  # or the member was found inside args: the exact path decides
    return value["index"], value["prev"], digest


def seal_lines(stream: IO[bytes], path: str) -> Iterator[str]:
    """The sealed lines of an open transcript, fast where it can be and exact everywhere."""
    prev = GENESIS.encode("ascii")
    for expected, (number, raw) in enumerate(iter_lines(stream, path)):
        parts = fast_parts(raw)
        if parts is None:
            try:
                record, _ = parse_line(raw, line=number)
            except InputError as err:
                raise InputError(err.problem, path=path, line=number, pointer=err.pointer) from err
            parts = (record.index, *ascii_parts(record))
        index, head, middle, tail = parts
        if index != expected:
            raise out_of_order(index, expected, path=path, line=number)
        if sealed_size(head, middle, tail) > MAX_RECORD_BYTES:
            raise link_too_long(sealed_size(head, middle, tail), path=path, line=number)
        digest = hashlib.sha256(b"".join((head, middle, prev, tail))).hexdigest().encode("ascii")
        yield b"".join((head, b',"digest":"', digest, b'"', middle, prev, tail)).decode("ascii")
        prev = digest


def ascii_parts(record: Record) -> tuple[bytes, bytes, bytes]:
    """:func:`parts_of` as ASCII bytes, as :func:`fast_parts` gives them."""
    head, middle, tail = parts_of(record)
    return head.encode("ascii"), middle.encode("ascii"), tail.encode("ascii")


def sealed_size(head: bytes, middle: bytes, tail: bytes) -> int:
    """The length of the link line these parts make: the digest member (``,"digest":"``, 64
    hex digits, ``"``) and prev's 64 hex digits join them."""
    return len(head) + len(middle) + len(tail) + 140


def link_too_long(size: int, *, path: str | None = None, line: int | None = None) -> InputError:
    """Why a record cannot be sealed: its link would be a line no reader here takes back.

    The cap is on the line as written (canonical, so every non-ASCII character takes 6 or
    12 bytes as ``\\uXXXX`` escapes, and ``prev`` and ``digest`` add 150), not on the
    line as read: whatever ``seal`` writes, ``verify`` and ``diff`` read.
    """
    return InputError(
        f"the sealed line would be {size} bytes, over the {MAX_RECORD_BYTES}-byte limit on a line"
        " (a link is canonical JSON, non-ASCII escaped as \\uXXXX, with prev and digest added)",
        path=path,
        line=line,
    )


def _break_reason(link: Link, prev: str, expected: str, line: str) -> str:
    """Why a link at its right index breaks the chain whose head is ``prev`` ("": it does not);
    ``expected`` and ``line`` are its digest and canonical line."""
    if link.prev != prev:
        return "prev does not name the digest of the link before it"
    if link.digest != expected:
        return "digest does not match the link's content"
    if link.raw != line.encode("ascii"):
        return "line is not in canonical form (same value, different bytes)"
    return ""


def verify_stream(stream: IO[bytes], path: str) -> ChainState:
    """:func:`verify` over an open sealed transcript, fast for every link that plainly follows.

    A link the fast check cannot vouch for (a malformed line, a break, or merely a line
    the fast decoder declines) is checked exactly, and the walk goes on from there.
    """
    prev = GENESIS
    count = 0
    for position, (number, raw) in enumerate(iter_lines(stream, path)):
        quick = fast_link(raw)
        if quick is not None and quick[0] == position and quick[1] == prev:
            prev = quick[2]
        else:
            state = _walk([_exact_link(raw, number, path)], prev=prev, start=position)
            if state.broken is not None:
                return ChainState(links=count, head=prev, broken=state.broken)
            prev = state.head
        count += 1
    return ChainState(links=count, head=prev, broken=None)
