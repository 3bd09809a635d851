"""A recording: what the proxy writes as a session's messages go by (docs/capture.md).

Each answered ``tools/call`` is redacted, checked against the transcript rules and
written as one line, flushed at once (chained to the one before with ``seal``), so a
proxy killed at any moment leaves a file whose complete lines read (and verify).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from toolreplay.canonical import MAX_RECORD_BYTES
from toolreplay.capture.redact import Redactor
from toolreplay.capture.session import Call, Session
from toolreplay.contracts.keep import Kept, keep_declared, previous_lock
from toolreplay.contracts.lock import ToolLock, save_lock
from toolreplay.errors import InputError
from toolreplay.files import temp_beside
from toolreplay.findings import quote
from toolreplay.library.recorder import Recorder
from toolreplay.transcript import make_record

_LOCK_PROBLEM = "cannot write the lock: "


def _check_writable(lock_path: str) -> None:
    """Refuse a lock whose folder cannot take a file (as the lock is written: temp file + rename)."""
    try:
        fd, tmp = temp_beside(os.path.dirname(os.path.abspath(lock_path)))
        os.close(fd)
        os.unlink(tmp)
    except OSError as err:
        raise InputError(_LOCK_PROBLEM + str(err.strerror), path=lock_path) from err


class Recording:
    """One session's transcript being written, plus the tool lock when ``lock_path`` is given.

    ``warn`` receives one line per problem (a message that could not be read, a call that
    could not be recorded). Use as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        path: str,
        *,
        seal: bool = False,
        lock_path: str | None = None,
        redact: Sequence[str] = (),
        warn: Callable[[str], None],
        check_result: Callable[[dict[str, Any]], str | None] = lambda result: None,
    ) -> None:
        self.redactor = Redactor(redact)
        self.lock_path = lock_path
        self.session = Session(check_result=check_result)
        self.warn = warn
        self.lines = {"client": 0, "server": 0}
        #: the lock being replaced (``--force``): what it declared is kept (toolreplay.contracts.keep)
        self.previous: ToolLock | None = None
        #: what the lock last written kept of it
        self.kept: tuple[Kept, ...] = ()
        if lock_path is not None:
            _check_writable(lock_path)  # before the transcript is created and the server started
            self.previous, problem = previous_lock(lock_path)
            if problem:
                warn(problem)
        try:
            self.recorder = Recorder(path, seal=seal)
        except OSError as err:
            raise InputError(f"cannot write the transcript: {err.strerror}", path=path) from err

    @property
    def count(self) -> int:
        """Calls recorded so far."""
        return self.recorder.count

    def from_client(self, raw: bytes, channel: str = "") -> None:
        """A line the client sent (before it is forwarded: the request is known before its answer)."""
        self.lines["client"] += 1
        observed = self.session.from_client(raw, channel)
        for problem in observed.warnings:
            self.warn(f"client message {self.lines['client']}: {problem}")

    def from_server(self, raw: bytes, channel: str = "") -> None:
        """A line the server sent: record the calls it answers."""
        self.lines["server"] += 1
        observed = self.session.from_server(raw, channel)
        for problem in observed.warnings:
            self.warn(f"server message {self.lines['server']}: {problem}")
        for call in observed.calls:
            self._record(call)
        if observed.tools_listed and self.lock_path is not None:
            try:
                lock, self.kept = keep_declared(self.previous, self.session.lock())
                save_lock(lock, self.lock_path)
            except OSError as err:  # the session goes on: the transcript matters more than the lock
                self.warn(
                    f"server message {self.lines['server']}: {self.lock_path}: {_LOCK_PROBLEM}{err.strerror}"
                )

    def _record(self, call: Call) -> None:
        args, response = self.redactor(call.args), self.redactor(call.response)
        try:
            record = make_record(
                index=self.count, tool=call.tool, args=args, response=response, fingerprint=call.fingerprint
            )
        except InputError as err:
            self.warn(f"tools/call of {quote(call.tool)}: {err.problem}; not recorded")
            return
        size = len(record.canon_args) + len(record.canon_response) + len(record.tool) + 300
        if size > MAX_RECORD_BYTES:
            self.warn(
                f"tools/call of {quote(call.tool)}: the record would be over the {MAX_RECORD_BYTES}-byte"
                " limit of a transcript line; not recorded"
            )
            return
        self.recorder.record(
            tool=record.tool, args=record.args, response=record.response, fingerprint=record.fingerprint
        )

    def close(self) -> None:
        self.recorder.close()

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
