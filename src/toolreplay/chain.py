"""The SHA-256 hash chain over a transcript: seal and verify (SPEC §1.3)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from toolreplay.canonical import canonical
from toolreplay.transcript import GENESIS, Link, Record


def parts_of(record: Record) -> tuple[str, str, str]:
    """The canonical link text of ``record`` around its two chain values.

    Keys sort as args, digest, fingerprint, index, prev, response, state, tool, so with
    ``(head, middle, tail) = parts_of(record)`` the digest input is
    ``head + middle + prev + tail`` and the link line is
    ``head + ',"digest":"' + digest + '"' + middle + prev + tail``.
    """
    head = '{"args":' + record.canon_args
    middle = "" if record.fingerprint is None else ',"fingerprint":' + canonical(record.fingerprint)
    middle += f',"index":{record.index},"prev":"'
    tail = '","response":' + record.canon_response
    if record.canon_state is not None:
        tail += ',"state":' + record.canon_state
    tail += ',"tool":' + canonical(record.tool) + "}"
    return head, middle, tail


def link_digest(record: Record, prev: str) -> tuple[str, str]:
    """Return (digest, canonical link line) for ``record`` chained after ``prev``."""
    head, middle, tail = parts_of(record)
    digest = hashlib.sha256((head + middle + prev + tail).encode("ascii")).hexdigest()
    return digest, head + ',"digest":"' + digest + '"' + middle + prev + tail


def seal(records: Iterable[Record]) -> Iterator[tuple[str, str]]:
    """Yield (digest, canonical link line) for each record, chaining from the genesis value."""
    prev = GENESIS
    for record in records:
        digest, line = link_digest(record, prev)
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
    prev = GENESIS
    count = 0
    for position, link in enumerate(links):
        record = link.record
        if record.index != position:
            reason = f"index {record.index} where the chain requires {position}"
            expected, _ = link_digest(replace(record, index=position), prev)
            return ChainState(links=count, head=prev, broken=_break(position, link, expected, reason))
        expected, line = link_digest(record, prev)
        reason = ""
        if link.prev != prev:
            reason = "prev does not name the digest of the link before it"
        elif link.digest != expected:
            reason = "digest does not match the link's content"
        elif link.raw != line.encode("ascii"):
            reason = "line is not in canonical form (same value, different bytes)"
        if reason:
            return ChainState(links=count, head=prev, broken=_break(position, link, expected, reason))
        prev = expected
        count += 1
    return ChainState(links=count, head=prev, broken=None)


def _break(position: int, link: Link, expected: str, reason: str) -> Break:
    return Break(
        position=position, line=link.record.line, expected=expected, found=link.digest, reason=reason
    )
