"""Seal and verify large files on every core, with the sequential code's exact results.

Parsing and canonical encoding dominate, and they are independent per line; only the
chain itself (each digest feeding the next ``prev``) is sequential. So the file is read
in chunks cut at line ends, worker processes parse and encode each chunk, and this
process walks the chain over their results in order, with a bounded number of chunks in
flight so memory stays flat however large the file.

Anything unusual (a refused line, an index out of order, a broken link) makes the caller
rerun the sequential path, which then reports exactly what it always reports: the
parallel path is an accelerator, never a second opinion.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

from toolreplay.canonical import MAX_RECORD_BYTES
from toolreplay.chain import fast_link, fast_parts, link_digest, parts_of
from toolreplay.errors import InputError
from toolreplay.transcript import GENESIS, iter_lines, open_input, parse_line

#: files smaller than this are faster to handle in one process
PARALLEL_MIN_BYTES = 32 * 1024 * 1024
CHUNK_BYTES = 1024 * 1024


class Fallback(Exception):
    """The parallel path met something only the sequential path may report."""


def workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def worth_it(path: str) -> bool:
    try:
        return workers() > 1 and os.path.getsize(path) >= PARALLEL_MIN_BYTES
    except OSError:
        return False


def read_chunks(stream: IO[bytes], size: int = CHUNK_BYTES) -> Iterator[tuple[int, bytes]]:
    """Yield (line number of the chunk's first line, bytes ending at a line end)."""
    line = 1
    carry = b""
    while True:
        block = stream.read(size)
        if not block:
            if carry:
                yield line, carry
            return
        data = carry + block
        cut = data.rfind(b"\n") + 1
        if cut == 0 and len(data) <= MAX_RECORD_BYTES + 2:
            carry = data  # one long line so far; the reader refuses it once it is over the cap
            continue
        if cut == 0:
            cut = len(data)
        yield line, data[:cut]
        line += data.count(b"\n", 0, cut)
        carry = data[cut:]


@dataclass(frozen=True, slots=True)
class SealParts:
    """What a worker computes for one record: index, line and the three text parts."""

    index: int
    line: int
    head: str
    middle: str
    tail: str


def _lines(first: int, data: bytes) -> Iterator[tuple[int, bytes]]:
    for number, raw in iter_lines(io.BytesIO(data), ""):
        yield first + number - 1, raw


def seal_chunk(first: int, data: bytes) -> list[SealParts] | None:
    """Parse a chunk of a transcript; None when any line is refused (a line over the size
    cap included: the sequential path names it, with the file's name and line)."""
    out = []
    try:
        for number, raw in _lines(first, data):
            parts = fast_parts(raw)
            if parts is None:
                record, _ = parse_line(raw, line=number)
                parts = (record.index, *parts_of(record))
            out.append(SealParts(parts[0], number, parts[1], parts[2], parts[3]))
    except InputError:
        return None
    return out


def verify_chunk(first: int, data: bytes) -> list[tuple[int, str, str]] | None:
    """(index, prev, digest) of each link of a chunk that checks out on its own; None on any doubt."""
    out = []
    try:
        for number, raw in _lines(first, data):
            quick = fast_link(raw)
            if quick is None:
                record, value = parse_line(raw, sealed=True, line=number)
                digest, line = link_digest(record, value["prev"])
                if digest != value["digest"] or line.encode("ascii") != raw:
                    return None
                quick = (record.index, value["prev"], digest)
            out.append(quick)
    except InputError:
        return None
    return out


def _pool() -> ProcessPoolExecutor:
    # imported here: most runs (small files) never start a pool, and start-up counts
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(max_workers=workers(), mp_context=multiprocessing.get_context("spawn"))


def _ordered_results(path: str, func: object) -> Iterator[object]:
    stream = open_input(path)
    try:
        with _pool() as pool:
            window: deque[Future[object]] = deque()
            for first, data in read_chunks(stream):
                window.append(pool.submit(func, first, data))  # type: ignore[arg-type]
                if len(window) >= 2 * workers():
                    yield window.popleft().result()
            while window:
                yield window.popleft().result()
    finally:
        stream.close()


def seal_lines(path: str) -> Iterator[str]:
    """Sealed lines of a transcript file, computed on every core. Raises Fallback on any doubt."""
    prev = GENESIS
    expected = 0
    for result in _ordered_results(path, seal_chunk):
        if result is None:
            raise Fallback
        for parts in result:  # type: ignore[attr-defined]
            if parts.index != expected:
                raise Fallback
            expected += 1
            body = parts.head + parts.middle + prev + parts.tail
            digest = hashlib.sha256(body.encode("ascii")).hexdigest()
            line = parts.head + ',"digest":"' + digest + '"' + parts.middle + prev + parts.tail
            if len(line) > MAX_RECORD_BYTES:
                raise Fallback  # the sequential path names it
            yield line
            prev = digest


def verify_head(path: str) -> tuple[int, str]:
    """(links, head) of an intact sealed file, computed on every core. Raises Fallback on any doubt."""
    prev = GENESIS
    position = 0
    for result in _ordered_results(path, verify_chunk):
        if result is None:
            raise Fallback
        for index, stored_prev, digest in result:  # type: ignore[attr-defined]
            if index != position or stored_prev != prev:
                raise Fallback
            prev = digest
            position += 1
    return position, prev
