"""Write tool calls to a transcript as they happen, optionally sealed link by link."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from toolreplay.chain import link_digest, link_too_long
from toolreplay.errors import InputError
from toolreplay.escape import quote
from toolreplay.library.failures import StateCommandWarning
from toolreplay.library.post_state import StateCommand
from toolreplay.limits import MAX_RECORD_BYTES
from toolreplay.state_command import Command
from toolreplay.transcript import GENESIS, Record, make_record, record_line, with_state


def _warn(text: str) -> None:
    warnings.warn(StateCommandWarning(text), stacklevel=4)


class Recorder:
    """Append each call to a transcript file, one canonical line per call, flushed at once.

    With ``seal=True`` the file is a sealed transcript (``*.sealed.jsonl``): each line is
    a link chained to the one before (docs/spec.md §1.3), so ``toolreplay verify`` accepts it
    and :attr:`head` is the digest to anchor. The file is created (or truncated) when
    the recorder is made; use it as a context manager or call :meth:`close`.

    With ``state_command`` (a :class:`StateCommand`, or the commands to make one), a call
    recorded without a ``state`` gets the state its commands give after it (docs/spec.md §8:
    a call that changes state, or of a tool a command names); a command that fails leaves
    the call without one and says so through ``warn`` (default: a :class:`StateCommandWarning`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        seal: bool = False,
        state_command: StateCommand | str | Command | Sequence[str | Command] | None = None,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        if state_command is not None and not isinstance(state_command, StateCommand):
            state_command = StateCommand(state_command)  # a command that cannot run, before the file is made
        self.state_command = state_command
        self.warn = warn or _warn
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
        mutates: bool | None = None,
    ) -> Record:
        """Write one call and return its record (an ``InputError`` if it is not valid JSON).

        ``mutates`` says whether the tool changes state, for the state commands (None: their
        ``mutators`` decide)."""
        taken = False
        if state is None and self.state_command is not None:
            state, warning = self.state_command.take(tool, args, mutates=mutates, index=self.count)
            if warning:
                self.warn(warning)
            taken = state is not None
        record = make_record(
            index=self.count,
            tool=tool,
            args=args,
            response=response,
            fingerprint=fingerprint,
            state=state,
            text_digest=text_digest,
        )
        digest, line = self._line(record)
        if len(line) > MAX_RECORD_BYTES and taken:
            record, digest, line = self._stateless(record)
        return self._commit(record, digest, line)

    def _stateless(self, record: Record) -> tuple[Record, str, str]:
        """``record`` without the state its state commands gave, which took its line over the
        limit (said in a warning); with its digest and line."""
        self.warn(
            f"the state its state commands gave the call of {quote(record.tool)} at index {record.index}"
            f" would take the line over the {MAX_RECORD_BYTES}-byte limit; the call has no post-call state"
        )
        record = with_state(record, None)
        digest, line = self._line(record)
        return record, digest, line

    def write(self, record: Record) -> Record:
        """Write ``record``, made with :attr:`count` as its index, as the next line; return it."""
        if record.index != self.count:
            raise ValueError(f"record {record.index} is not the next one ({self.count})")
        digest, line = self._line(record)
        return self._commit(record, digest, line)

    def _commit(self, record: Record, digest: str, line: str) -> Record:
        """Write ``line`` (``record``'s, with ``digest`` the head after it) and flush it."""
        if len(line) > MAX_RECORD_BYTES:  # never write a line the reader refuses
            if self.sealed:
                raise link_too_long(len(line))
            raise InputError(f"the line would be {len(line)} bytes, over the {MAX_RECORD_BYTES}-byte limit")
        self.head = digest
        self._out.write(line + "\n")
        self._out.flush()
        self.count += 1
        return record

    def _line(self, record: Record) -> tuple[str, str]:
        """(the head after ``record``, its line)."""
        if self.sealed:
            return link_digest(record, self.head)
        return self.head, record_line(record)

    def close(self) -> None:
        self._out.close()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
