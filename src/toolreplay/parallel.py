"""Seal, verify and replay large files on every core, with the sequential code's exact results.

Parsing and canonical encoding dominate, and they are independent per line; only the
chain itself (each digest feeding the next ``prev``) is sequential. So the file is cut
into byte ranges, each worker process reads its own range from the file (the lines that
start in it) and sends back only what the sequential part needs: for verify, four values
per range (links, first index, first ``prev``, last digest); for replay, two 16-byte
digests per call; for seal, the canonical text around each link's chain values, which
this process hashes in order. A bounded number of ranges is in flight, so memory stays
flat however large the file.

Anything unusual (a refused line, an index out of order, a broken link) makes the caller
rerun the sequential path, which then reports exactly what it always reports: the
parallel path is an accelerator, never a second opinion.
"""

from __future__ import annotations

import hashlib
import os
from array import array
from binascii import hexlify
from collections import deque
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING, TypeVar

from toolreplay.chain import ascii_parts, fast_link, fast_parts, link_digest, sealed_size
from toolreplay.errors import InputError
from toolreplay.limits import MAX_RECORD_BYTES
from toolreplay.transcript import GENESIS, parse_line

if TYPE_CHECKING:
    from concurrent.futures import Future


#: files smaller than this are faster to handle in one process (workers fork in milliseconds
#: on Linux; a run's own start-up is about a tenth of a second)
PARALLEL_MIN_BYTES = 8 * 1024 * 1024
#: bytes of the file each worker task reads, at most; smaller files are cut finer, down to
#: MIN_CHUNK_BYTES, so that every worker has several ranges to read
CHUNK_BYTES = 4 * 1024 * 1024
MIN_CHUNK_BYTES = 1024 * 1024

T = TypeVar("T")


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


def byte_ranges(size: int, chunk: int, *, tail: int = 0) -> list[tuple[int, int]]:
    """[start, end) ranges covering ``size`` bytes; each line belongs to the range it starts in.

    The last ``tail`` bytes are cut four times finer: the ranges end together, rather than
    one worker finishing a whole range alone while the others wait."""
    bulk = max(size - tail, 0)
    ranges = [(start, min(start + chunk, bulk)) for start in range(0, bulk, chunk)]
    step = max(chunk // 4, 1)
    ranges += [(start, min(start + step, size)) for start in range(bulk, size, step)]
    return ranges or [(0, 0)]


class RangeLines:
    """The lines that start in [start, end) of a file, read as ``transcript.iter_lines`` reads
    them: iterating yields (line number within the range, from 1; line without its ending)
    for every non-blank line, and ``lines`` is then the number of lines read, blank ones
    too. A line over the record cap raises Fallback: the sequential path names it.

    The range is read in one call and split in C (a 4 MiB range holds thousands of lines:
    a ``readline`` each costs as much as checking some of them). In a range without CR or
    empty lines a line of blanks is yielded too, uncut: the readers refuse it, and the
    caller falls back to the sequential path, which skips it."""

    def __init__(self, stream: IO[bytes], start: int, end: int) -> None:
        self.stream, self.start, self.end = stream, start, end
        self.lines = 0

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        data = self._read()
        if not data:
            return
        lines = data.split(b"\n")
        ended = data.endswith(b"\n")
        if ended:
            lines.pop()
        last = len(lines)
        # (b"" in lines, not b"\n\n" in data: a two-byte search of a repeated byte is slow)
        if b"\r" not in data and b"" not in lines:
            # the usual range: no CR, no empty line. A line of blanks, if any, reaches the
            # fast and exact readers, which refuse it, and the caller falls back.
            if max(map(len, lines)) > MAX_RECORD_BYTES:
                raise Fallback
            self.lines = last
            yield from enumerate(lines, 1)
            return
        yield from _unusual_lines(lines, ended)
        self.lines = last

    def _read(self) -> bytes:
        """The range's bytes: from its first whole line to the end of the line it ends in."""
        stream = self.stream
        position = _whole_line_start(stream, self.start)
        if position >= self.end:
            return b""
        data = stream.read(self.end - position)
        if data and not data.endswith(b"\n"):  # the last line goes on past the range
            data += stream.readline(MAX_RECORD_BYTES + 2)
        return data


def _whole_line_start(stream: IO[bytes], position: int) -> int:
    """Where the first line that starts at or after ``position`` starts (a line ``position`` is
    inside belongs to the range before)."""
    stream.seek(max(position - 1, 0))
    if not position or stream.read(1) == b"\n":
        return position
    rest = stream.readline(MAX_RECORD_BYTES + 2)
    if not rest.endswith(b"\n") and len(rest) > MAX_RECORD_BYTES:
        raise Fallback
    return position + len(rest)


def _unusual_lines(lines: list[bytes], ended: bool) -> Iterator[tuple[int, bytes]]:
    """A range's lines when some end in CR or are blank: (number, line without its CR) of each non-blank."""
    last = len(lines)
    for number, raw in enumerate(lines, 1):
        if len(raw) > MAX_RECORD_BYTES:
            raise Fallback
        if raw.endswith(b"\r") and (ended or number < last):
            raw = raw[:-1]
        # the usual line starts a record; any other may be blank (or white space first)
        if raw[:1] != b"{" and not raw.strip(b" \t\r"):
            continue
        yield number, raw


# --- what each worker computes over its range ------------------------------------------------


# a link line as a worker writes it: zeros where the chain values go, for the sequential part
_DIGEST_OPEN = b',"digest":"'
_DIGEST_SLOT = b"0" * 64 + b'"'
_PREV_SLOT = b"0" * 64
_OPEN, _SLOT = len(_DIGEST_OPEN), len(_DIGEST_SLOT)


def seal_range(path: str, start: int, end: int) -> tuple[int, int, bytes, array[int]] | None:
    """(records, first index, their link lines, where the chain values go in them) of a
    range; None on any doubt. The lines are the links as ``chain.link_digest`` writes them,
    each ending in a newline, with zeros where ``digest`` and ``prev`` go; for each line the
    offsets of those two and of its end (before the newline), counted from the first line."""
    texts: list[bytes] = []
    marks: array[int] = array("q")
    first = expected = -1
    at = 0
    try:
        with open(path, "rb") as stream:
            for number, raw in RangeLines(stream, start, end):
                parts = fast_parts(raw)
                if parts is None:
                    record, _ = parse_line(raw, line=number)
                    parts = (record.index, *ascii_parts(record))
                index, head, middle, tail = parts
                if first < 0:
                    first = expected = index
                if index != expected or sealed_size(head, middle, tail) > MAX_RECORD_BYTES:
                    return None
                expected += 1
                texts += (head, _DIGEST_OPEN, _DIGEST_SLOT, middle, _PREV_SLOT, tail, b"\n")
                digest_at = at + len(head) + _OPEN
                prev_at = digest_at + _SLOT + len(middle)
                at = prev_at + 64 + len(tail)
                marks.extend((digest_at, prev_at, at))
                at += 1
    except (InputError, Fallback):
        return None
    return max(expected - first, 0), first, b"".join(texts), marks


def verify_range(path: str, start: int, end: int) -> tuple[int, int, str, str] | None:
    """(links, first index, first prev, last digest) of a range whose links each check out
    and follow one another; None on any doubt (the sequential walk then names the break)."""
    count = first = 0
    first_prev = prev = ""
    try:
        with open(path, "rb") as stream:
            for number, raw in RangeLines(stream, start, end):
                quick = fast_link(raw) or _exact_link(raw, number)
                if quick is None:
                    return None
                index, link_prev, digest = quick
                if count == 0:
                    first, first_prev = index, link_prev
                elif index != first + count or link_prev != prev:
                    return None
                prev = digest
                count += 1
    except (InputError, Fallback):
        return None
    return count, first, first_prev, prev


def _exact_link(raw: bytes, number: int) -> tuple[int, str, str] | None:
    """(index, prev, digest) of a link the fast check could not vouch for, read the exact way;
    None when its digest or its canonical line is not what the file holds."""
    record, value = parse_line(raw, sealed=True, line=number)
    digest, line = link_digest(record, value["prev"])
    if digest != value["digest"] or line.encode("ascii") != raw:
        return None
    return record.index, value["prev"], digest


# --- the sequential part, in this process ----------------------------------------------------


def over_ranges(path: str, func: Callable[[str, int, int], T]) -> Iterator[T]:
    """``func(path, start, end)`` over the file's byte ranges on every core, the results in the
    ranges' order (a bounded number in flight). Raises Fallback when the file cannot be sized."""
    # The pool's module (multiprocessing, concurrent.futures, ctypes) only now: most runs (small
    # files) never start one, and every command's start-up counts
    from toolreplay.pool import process_pool

    try:
        size = os.path.getsize(path)
    except OSError as err:  # the sequential path names it
        raise Fallback from err
    with process_pool(workers()) as pool:
        window: deque[Future[T]] = deque()
        chunk = min(CHUNK_BYTES, max(MIN_CHUNK_BYTES, size // (8 * workers())))
        for start, end in byte_ranges(size, chunk, tail=workers() * chunk):
            window.append(pool.submit(func, path, start, end))
            if len(window) >= 2 * workers():
                yield window.popleft().result()
        while window:
            yield window.popleft().result()


def seal_blocks(path: str) -> Iterator[str]:
    """The sealed lines of a transcript file, computed on every core, a range's lines at a
    time (each line ending in a newline). Raises Fallback on any doubt.

    The workers write each link whole but for its two chain values; this process only fills
    those in, in order: ``prev`` first, then the digest over the line without its digest
    member (``chain.parts_of``), hashed in place."""
    prev = GENESIS.encode("ascii")
    expected = 0
    sha256 = hashlib.sha256
    for result in over_ranges(path, seal_range):
        if result is None:
            raise Fallback
        count, first, blob, marks = result
        if count and first != expected:
            raise Fallback
        expected += count
        lines = bytearray(blob)
        view = memoryview(lines)
        at = 0
        spots = marks.tolist()  # (a list's items are ready-made ints: an array makes one per read)
        for digest_at, prev_at, end in zip(spots[0::3], spots[1::3], spots[2::3], strict=True):
            lines[prev_at : prev_at + 64] = prev
            digest = sha256(view[at : digest_at - _OPEN])
            digest.update(view[digest_at + _SLOT : end])
            prev = hexlify(digest.digest())
            lines[digest_at : digest_at + 64] = prev
            at = end + 1
        view.release()
        yield lines.decode("ascii")


def verify_head(path: str) -> tuple[int, str]:
    """(links, head) of an intact sealed file, computed on every core. Raises Fallback on any doubt."""
    prev = GENESIS
    position = 0
    for result in over_ranges(path, verify_range):
        if result is None:
            raise Fallback
        count, first, first_prev, last = result
        if count == 0:
            continue
        if first != position or first_prev != prev:
            raise Fallback
        prev = last
        position += count
    return position, prev
