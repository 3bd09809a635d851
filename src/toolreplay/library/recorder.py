"""Write tool calls to a transcript as they happen, optionally sealed link by link."""

from __future__ import annotations

import os
from typing import Any

from toolreplay.canonical import MAX_RECORD_BYTES
from toolreplay.chain import link_digest, link_too_long
from toolreplay.errors import InputError
from toolreplay.transcript import GENESIS, Record, make_record, record_line


class Recorder:
    """Append each call to a transcript file, one canonical line per call, flushed at once.

    With ``seal=True`` the file is a sealed transcript (``*.sealed.jsonl``): each line is
    a link chained to the one before (docs/spec.md §1.3), so ``toolreplay verify`` accepts it
    and :attr:`head` is the digest to anchor. The file is created (or truncated) when
    the recorder is made; use it as a context manager or call :meth:`close`.
    """

    def __init__(self, path: str | os.PathLike[str], *, seal: bool = False) -> None:
        self.path = os.fspath(path)
        self.sealed = seal
        self.count = 0
        self.head = GENESIS
        self._out = open(self.path, "w", encoding="ascii", newline="\n")  # noqa: SIM115

    def record(
        self,
        *,
        tool: str,
        args: dict[str, Any],
        response: dict[str, Any],
        fingerprint: str | None = None,
        state: dict[str, str] | None = None,
        text_digest: str | None = None,
    ) -> Record:
        """Write one call and return its record (an ``InputError`` if it is not valid JSON)."""
        record = make_record(
            index=self.count,
            tool=tool,
            args=args,
            response=response,
            fingerprint=fingerprint,
            state=state,
            text_digest=text_digest,
        )
        return self.write(record)

    def write(self, record: Record) -> Record:
        """Write ``record``, made with :attr:`count` as its index, as the next line; return it."""
        if record.index != self.count:
            raise ValueError(f"record {record.index} is not the next one ({self.count})")
        if self.sealed:
            digest, line = link_digest(record, self.head)
        else:
            digest, line = self.head, record_line(record)
        if len(line) > MAX_RECORD_BYTES:  # never write a line the reader refuses
            if self.sealed:
                raise link_too_long(len(line))
            raise InputError(f"the line would be {len(line)} bytes, over the {MAX_RECORD_BYTES}-byte limit")
        self.head = digest
        self._out.write(line + "\n")
        self._out.flush()
        self.count += 1
        return record

    def close(self) -> None:
        self._out.close()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
