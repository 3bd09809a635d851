"""Calls held as fixed-size digests, so ``diff`` runs in the same memory whatever its inputs' size.

Comparing a baseline with a run (docs/spec.md §3.4) needs, per call, only which calls are
identical and whether two responses or two post-call states are: 16-byte BLAKE2b digests
of the canonical texts answer that. A :class:`CallTable` keeps per call its call key's
digest (for the alignment) and one fixed-size row: the digests of its response and state,
its fingerprint and contract-text digest, a tool number, its line and where that line starts in
its file. Both
go, a chunk at a time, to one temporary file (the :class:`Store`'s), so what stays in
memory does not grow with the number of calls. The few calls whose values a finding's
message quotes are read again from their file by that offset.

A digest stands for its text: two texts with the same 16-byte digest would be taken as
equal, at odds of about 2**-128 per pair.
"""

from __future__ import annotations

import hashlib
import struct
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any, cast

from toolreplay.analyses.volatile import Volatile
from toolreplay.limits import MAX_RECORD_BYTES
from toolreplay.transcript import Record, open_input, parse_line, parse_links, parse_transcript

#: bytes of every digest held per call
DIGEST_SIZE = 16
#: a call's row: response digest, state digest, fingerprint (8 bytes), contract-text digest
#: (32 bytes), flags, tool number, line, offset of the line in its file
ROW = struct.Struct("<16s16s8s32sBIQQ")
HAS_STATE = 1
_HAS_FINGERPRINT = 2
#: the record's index is not its position (only a sealed run can say so: see ``odd``)
_ODD_INDEX = 4
_HAS_TEXT = 8
_NO_DIGEST = bytes(DIGEST_SIZE)
_NO_FINGERPRINT = bytes(8)
_NO_TEXT = bytes(32)
#: items per chunk of a column: a full chunk goes to the temporary file
CHUNK = 4096
#: bytes of columns' last, partial chunks kept in memory, over every table, once they are complete
RESIDENT_TAILS = 4 * 1024 * 1024
_EMPTY: dict[str, Any] = {}


def digest(text: str) -> bytes:
    """The 16-byte digest of a canonical text (ASCII: canonical JSON escapes everything else)."""
    return hashlib.blake2b(text.encode("ascii"), digest_size=DIGEST_SIZE).digest()


class Store:
    """What every table of one comparison shares: the temporary file and the tool names.

    The file is made only when a column fills a chunk, so a small comparison never
    touches the disk. Use it as a context manager: leaving it removes the file.
    """

    def __init__(self, volatile: Volatile | None = None) -> None:
        #: the volatile rules every table of the comparison masks its calls by (None: none)
        self.volatile = volatile if volatile else None
        self._file: IO[bytes] | None = None
        self._end = 0
        self.resident = 0
        #: tool number -> tool name, and back
        self.names: list[str] = []
        self.numbers: dict[str, int] = {}
        #: copies of streams that cannot be read twice, closed with the store
        self.spools: list[IO[bytes]] = []

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        for spool in self.spools:
            spool.close()
        self.spools.clear()

    def number(self, tool: str) -> int:
        found = self.numbers.get(tool)
        if found is None:
            found = self.numbers[tool] = len(self.names)
            self.names.append(tool)
        return found

    def put(self, data: bytes | bytearray) -> int:
        """Append ``data`` to the temporary file; return where it starts."""
        if self._file is None:
            self._file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close(), with the store
        offset = self._end
        self._file.seek(offset)
        self._file.write(data)
        self._end += len(data)
        return offset

    def get(self, offset: int, size: int) -> bytes:
        assert self._file is not None
        self._file.seek(offset)
        return self._file.read(size)


class Column:
    """Fixed-size items appended in order and read back by position range."""

    def __init__(self, store: Store, size: int, chunk: int | None = None) -> None:
        self._store = store
        self.size = size
        self._chunk = CHUNK if chunk is None else chunk
        self._chunk_bytes = size * self._chunk
        #: where each written chunk starts in the store's file
        self._written: list[int] = []
        self._tail = bytearray()
        self.count = 0

    def append(self, item: bytes) -> None:
        self._tail += item
        self.count += 1
        if len(self._tail) == self._chunk_bytes:
            self._written.append(self._store.put(self._tail))
            self._tail = bytearray()

    def finish(self) -> None:
        """No more items: the partial last chunk stays in memory only while all such are small."""
        if self._tail and self._store.resident + len(self._tail) > RESIDENT_TAILS:
            self._written.append(self._store.put(self._tail))
            self._tail = bytearray()
        self._store.resident += len(self._tail)

    def read(self, start: int, stop: int) -> bytes:
        """Items ``start`` to ``stop`` (exclusive), concatenated."""
        parts = []
        while start < stop:
            chunk, first = divmod(start, self._chunk)
            n = min(stop - start, self._chunk - first)
            if chunk < len(self._written):
                parts.append(self._store.get(self._written[chunk] + first * self.size, n * self.size))
            else:
                parts.append(bytes(self._tail[first * self.size : (first + n) * self.size]))
            start += n
        return b"".join(parts)

    def items(self, start: int, stop: int) -> list[bytes]:
        data = self.read(start, stop)
        size = self.size
        return [data[k : k + size] for k in range(0, len(data), size)]

    def scan(self, start: int = 0, stop: int | None = None) -> Iterator[bytes]:
        """Every item from ``start`` to ``stop``, read a chunk at a time."""
        stop = self.count if stop is None else stop
        size = self.size
        for begin in range(start, stop, self._chunk):
            data = self.read(begin, min(stop, begin + self._chunk))
            for k in range(0, len(data), size):
                yield data[k : k + size]


#: reads a call's full record again, from its position, line and offset
Loader = Callable[[int, int, int], Record]


def _contract_fields(record: Record) -> tuple[int, bytes, bytes]:
    """A record's contract digests as a row holds them, and the flags saying which it recorded."""
    flags, fingerprint, text = 0, _NO_FINGERPRINT, _NO_TEXT
    if record.fingerprint is not None:
        flags |= _HAS_FINGERPRINT
        fingerprint = bytes.fromhex(record.fingerprint)
    if record.text_digest is not None:
        flags |= _HAS_TEXT
        text = bytes.fromhex(record.text_digest)
    return flags, fingerprint, text


def _contract_digests(flags: int, fingerprint: bytes, text: bytes) -> tuple[str | None, str | None]:
    """A row's fingerprint and contract-text digest as a record holds them (None: not recorded)."""
    return (
        fingerprint.hex() if flags & _HAS_FINGERPRINT else None,
        text.hex() if flags & _HAS_TEXT else None,
    )


class CallTable:
    """The calls of one transcript, as digests; see the module's docstring."""

    def __init__(self, store: Store, loader: Loader, source: str | None = "") -> None:
        self.store = store
        #: whose count the values masked in this table go to (None: another report counts them)
        self.source = source
        self.keys = Column(store, DIGEST_SIZE)
        self.rows = Column(store, ROW.size)
        self._loader = loader
        #: position -> record index, for the records whose index is not their position
        self.odd: dict[int, int] = {}
        #: the tools called, and the first call of each tool that recorded a fingerprint (a
        #: contract-text digest)
        self.tools: set[str] = set()
        self.recorded: dict[str, Record] = {}
        self.described: dict[str, Record] = {}

    def __len__(self) -> int:
        return self.keys.count

    def add(self, record: Record, offset: int = 0) -> None:
        position = self.keys.count
        tool = record.tool
        call_key, response, after = self._texts(record)
        flags, fingerprint, text = _contract_fields(record)
        state = _NO_DIGEST
        if after is not None:
            flags |= HAS_STATE
            state = digest(after)
        if record.index != position:
            flags |= _ODD_INDEX
            self.odd[position] = record.index
        self.keys.append(digest(call_key))
        row = ROW.pack(
            digest(response),
            state,
            fingerprint,
            text,
            flags,
            self.store.number(tool),
            record.line,
            offset,
        )
        self.rows.append(row)
        self.tools.add(tool)
        self._note_contracts(record, position, row)

    def _texts(self, record: Record) -> tuple[str, str, str | None]:
        """The record's call key, response and state texts, masked where the volatile rules say."""
        if self.store.volatile is None:
            return record.call_key, record.canon_response, record.canon_state
        masked = self.store.volatile.texts(record, self.source)
        return masked.call_key, masked.response, masked.state

    def _note_contracts(self, record: Record, position: int, row: bytes) -> None:
        """Keep the first call of a tool that recorded a fingerprint (a contract-text digest)."""
        tool = record.tool
        if record.fingerprint is not None and tool not in self.recorded:
            self.recorded[tool] = self.light(position, row)
        if record.text_digest is not None and tool not in self.described:
            self.described[tool] = self.light(position, row)

    def finish(self) -> CallTable:
        self.keys.finish()
        self.rows.finish()
        return self

    def index(self, position: int) -> int:
        return self.odd.get(position, position)

    def light(self, position: int, row: bytes | None = None) -> Record:
        """The record at ``position`` as its digests: tool, index, line, fingerprint and
        contract-text digest are its own; ``canon_response`` and ``canon_state`` hold digests (equal
        where the texts are) and ``args``, ``response`` and ``state`` are empty. :meth:`full` has
        the values."""
        response, state, fingerprint, text, flags, tool, line, _ = ROW.unpack(
            self.rows.read(position, position + 1) if row is None else row
        )
        recorded, described = _contract_digests(flags, fingerprint, text)
        return Record(
            index=self.odd[position] if flags & _ODD_INDEX else position,
            tool=self.store.names[tool],
            args=_EMPTY,
            response=_EMPTY,
            fingerprint=recorded,
            state=_EMPTY if flags & HAS_STATE else None,
            text_digest=described,
            line=line,
            canon_response=response.decode("latin-1"),
            canon_state=state.decode("latin-1") if flags & HAS_STATE else None,
        )

    def lights(self, start: int, stop: int) -> Iterator[Record]:
        for position, row in enumerate(self.rows.scan(start, stop), start):
            yield self.light(position, row)

    def full(self, position: int) -> Record:
        """The record at ``position`` with its values, read again."""
        _, _, _, _, _, _, line, offset = ROW.unpack(self.rows.read(position, position + 1))
        record = self._loader(position, line, offset)
        # a message quotes what was compared: each volatile value as <volatile>
        return record if self.store.volatile is None else self.store.volatile.shown(record)


def table_of(store: Store, records: Sequence[Record], source: str | None = "") -> CallTable:
    """The table of records already in memory (their values are read from the sequence)."""
    table = CallTable(store, lambda position, line, offset: records[position], source)
    for record in records if store.volatile is None else store.volatile.ahead(records, source or ""):
        table.add(record)
    return table.finish()


def _reader(path: str, spool: IO[bytes] | None, sealed: bool) -> Loader:
    def load(position: int, line: int, offset: int) -> Record:
        stream = spool if spool is not None else open_input(path)
        try:
            stream.seek(offset)
            raw = stream.readline(MAX_RECORD_BYTES + 2)
        finally:
            if spool is None:
                stream.close()
        if raw.endswith(b"\n"):  # the line as iter_lines gave it
            raw = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1]
        # the line parsed once already: reading it again cannot fail unless the file changed
        return parse_line(raw, sealed=sealed, line=line)[0]

    return load


def open_twice(store: Store, path: str) -> tuple[IO[bytes], IO[bytes] | None]:
    """Open ``path`` for a first reading; the second stream is where it can be read again
    (None: the path itself). A stream that cannot seek (stdin, a pipe) is copied to a
    temporary file of the store as it is read."""
    stream = open_input(path)
    if path != "-" and stream.seekable():
        return stream, None
    spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed with the store
    store.spools.append(spool)
    return cast(IO[bytes], Tee(stream, spool)), spool


class Tee:
    """A stream that tells where the line it read last starts, and copies what it reads to
    ``spool`` (if any)."""

    def __init__(self, stream: IO[bytes], spool: IO[bytes] | None = None) -> None:
        self._stream = stream
        self._spool = spool
        self.start = 0
        self._position = 0

    def readline(self, limit: int = -1) -> bytes:
        self.start = self._position
        raw = self._stream.readline(limit)
        self._position += len(raw)
        if self._spool is not None:
            self._spool.write(raw)
        return raw

    def close(self) -> None:
        if self._stream is not sys.stdin.buffer:
            self._stream.close()


def _first(read: tuple[Record, int]) -> Record:
    return read[0]


def read_table(
    store: Store, path: str, *, sealed: bool, again: IO[bytes] | None = None, source: str | None = ""
) -> CallTable:
    """The table of a transcript file (``sealed``: of its links), read once, streaming.

    Refuses what :func:`~toolreplay.transcript.read_transcript` (or ``read_links``) refuses,
    with the same one-line errors. ``again`` is a copy of the file already read (see
    :func:`open_twice`), read from its start instead. Values the store's volatile rules
    mask count for ``source`` (``""``: for ``path``; None: not counted, another report counts them).
    """
    spool: IO[bytes] | None
    if again is not None:
        again.seek(0)
        stream, spool = cast(IO[bytes], Tee(again)), again
    else:
        stream, spool = open_twice(store, path)
    tracked = Tee(stream)
    try:
        table = CallTable(store, _reader(path, spool, sealed), path if source == "" else source)
        for record, offset in _records_at(store, tracked, path, sealed=sealed):
            table.add(record, offset)
    finally:
        if again is None:
            stream.close()
    return table.finish()


def _records_at(store: Store, tracked: Tee, path: str, *, sealed: bool) -> Iterable[tuple[Record, int]]:
    """The records of a transcript (``sealed``: of its links) read from ``tracked``, each with the
    offset of its line."""
    records: Iterator[Record]
    if sealed:
        records = (link.record for link in parse_links(cast(IO[bytes], tracked), path))
    else:
        records = parse_transcript(cast(IO[bytes], tracked), path)
    read: Iterable[tuple[Record, int]] = ((record, tracked.start) for record in records)
    if store.volatile is not None:  # the matches of the rules' patterns, a batch at a time
        read = store.volatile.ahead(read, path, _first)
    return read
