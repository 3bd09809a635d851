"""A recording: what the proxy writes as a session's messages go by (docs/capture.md).

Each answered ``tools/call`` is redacted, checked against the transcript rules and
written as one line, flushed at once (chained to the one before with ``seal``), so a
proxy killed at any moment leaves a file whose complete lines read (and verify). The
session's other answers go the same way to the session file beside it (capture/exchange.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from toolreplay.canonical import canonical
from toolreplay.capture.exchange import Exchange
from toolreplay.capture.redact import Redactor
from toolreplay.capture.session import Call, Observed, Session
from toolreplay.contracts.keep import Kept, keep_declared, previous_lock
from toolreplay.contracts.lock import ToolLock, save_lock
from toolreplay.errors import InputError
from toolreplay.escape import quote
from toolreplay.files import session_path, temp_beside
from toolreplay.library.post_state import StateCommand
from toolreplay.library.recorder import Recorder
from toolreplay.limits import MAX_RECORD_BYTES
from toolreplay.transcript import make_record, with_state

_LOCK_PROBLEM = "cannot write the lock: "
#: The JSON-RPC error (internal error) a client gets for an answer that could not be recorded as sent.
UNKEPT_CODE = -32603
UNKEPT_MESSAGE = "toolreplay record could not keep the server's answer as sent, so it answers with this error"


def _check_writable(lock_path: str) -> None:
    """Refuse a lock whose folder cannot take a file (as the lock is written: temp file + rename)."""
    try:
        fd, tmp = temp_beside(os.path.dirname(os.path.abspath(lock_path)))
        os.close(fd)
        os.unlink(tmp)
    except OSError as err:
        raise InputError(_LOCK_PROBLEM + str(err.strerror), path=lock_path) from err


def _looked(look: Callable[[], Observed]) -> Observed:
    """What the session made of a message; a warning when it failed to read it. The proxy never
    decides what is forwarded: a message the reading did not foresee still goes on, unrecorded."""
    try:
        return look()
    except Exception as err:  # a bug, not the message's fault: the session goes on
        return Observed(warnings=(f"not looked at ({type(err).__name__}: {err}); passed on, please report",))


def _recorders(path: str, seal: bool) -> tuple[Recorder, Recorder]:
    """The recorders of the transcript ``path`` and of its session file (neither left open when
    one cannot be written)."""
    try:
        recorder = Recorder(path, seal=seal)
    except OSError as err:
        raise InputError(f"cannot write the transcript: {err.strerror}", path=path) from err
    try:
        return recorder, Recorder(session_path(path), seal=seal)
    except OSError as err:
        recorder.close()
        raise InputError(f"cannot write the session file: {err.strerror}", path=session_path(path)) from err


class Recording:
    """One session's transcript being written, plus the tool lock when ``lock_path`` is given.

    ``warn`` receives one line per problem (a message that could not be read, a call that
    could not be recorded). With ``state_command``, each call that changes state (or whose tool
    a command names) gets the post-call state its commands give once the answer is in, before
    :meth:`from_server` returns; whether a tool changes state is what the lock being written
    declares (with ``lock_path``), else ``tools_lock`` (the configuration's), and for a tool the
    lock does not name, the commands' ``mutators``. Use as a context manager, or call :meth:`close`.
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
        state_command: StateCommand | None = None,
        tools_lock: ToolLock | None = None,
    ) -> None:
        self.redactor = Redactor(redact)
        self.state_command = state_command
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
        #: the lock whose ``mutates`` decide which calls get a state: the one being written (until
        #: the server lists its tools, the one it replaces), else the configuration's
        self.declared = self.previous if lock_path is not None else tools_lock
        #: calls recorded with a post-call state
        self.states = 0
        self.recorder, self.session_file = _recorders(path, seal)

    @property
    def count(self) -> int:
        """Calls recorded so far."""
        return self.recorder.count

    def from_client(self, raw: bytes, channel: str = "") -> None:
        """A line the client sent (before it is forwarded: the request is known before its answer)."""
        self.lines["client"] += 1
        observed = _looked(lambda: self.session.from_client(raw, channel))
        for problem in observed.warnings:
            self.warn(f"client message {self.lines['client']}: {problem}")

    def from_server(self, raw: bytes, channel: str = "", *, first_answers: bool = False) -> bytes | None:
        """A line the server sent: record the call it answers for the client.

        Returns None to pass the line on as it is, or the message the client must get
        instead (a JSON-RPC error, no newline): the answer the client would have taken
        could not be recorded as sent, and the error is what was recorded.
        """
        self.lines["server"] += 1
        observed = _looked(lambda: self.session.from_server(raw, channel, first_answers=first_answers))
        for problem in observed.warnings:
            self.warn(f"server message {self.lines['server']}: {problem}")
        replacement = None
        for call in observed.calls:
            replacement = self._record(call) or replacement
        for exchange in observed.exchanges:
            self._keep(exchange)
        if observed.tools_listed and self.lock_path is not None:
            self._save_lock(self.lock_path)
        return replacement

    def _save_lock(self, lock_path: str) -> None:
        """Write the lock of the tools the server listed last (what the replaced lock declared kept)."""
        lock, self.kept = keep_declared(self.previous, self.session.lock())
        self.declared = lock
        try:
            save_lock(lock, lock_path)
        except OSError as err:  # the session goes on: the transcript matters more than the lock
            self.warn(f"server message {self.lines['server']}: {lock_path}: {_LOCK_PROBLEM}{err.strerror}")

    def awaits_call(self, channel: str = "") -> bool:
        """Whether a ``tools/call`` on ``channel`` waits for its answer: only such an answer may be
        replaced, so any other line can go on to the client before :meth:`from_server` sees it."""
        return self.session.awaits_call(channel)

    def unanswered(self, channel: str = "") -> tuple[str, ...]:
        """The calls on ``channel`` still waiting for an answer, named (``'tool' (id N)``); forgotten now."""
        return self.session.unanswered(channel)

    def _record(self, call: Call) -> bytes | None:
        """Record ``call``; when its answer cannot be kept, record (and return) the error that replaces it."""
        state = self._state_after(call)
        problem = call.unkept or self._write(call, state)
        if not problem:
            return None
        where = f"server message {self.lines['server']}: tools/call of {quote(call.tool)}"
        error = {"code": UNKEPT_CODE, "message": f"{UNKEPT_MESSAGE} ({problem})"}
        if self._write(replace(call, response={"error": error}), state):
            self.warn(f"{where}: {problem}; not recorded")  # not even the error fits: the answer goes on
            return None
        self.warn(f"{where}: {problem}; the client is answered with an error instead, and that is recorded")
        message = {"jsonrpc": "2.0", "id": call.ident, "error": error}
        return json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode("ascii")

    def _state_after(self, call: Call) -> dict[str, str] | None:
        """The call's post-call state from the state commands (None: none applies, or one failed
        and said so), taken now: after the answer, before the client's next message goes on."""
        if self.state_command is None:
            return None
        declared = self.declared.tools.get(call.tool) if self.declared is not None else None
        state, warning = self.state_command.take(
            call.tool,
            call.args,  # as the client sent them: the command looks at what the call touched
            mutates=declared.mutates if declared is not None else None,
            index=self.count,
        )
        if warning:
            self.warn(warning)
        return state

    def _write(self, call: Call, state: dict[str, str] | None = None) -> str:
        """Write ``call`` as the next record; what prevents that ("" when written)."""
        args, response = self.redactor(call.args), self.redactor(call.response)
        try:
            record = make_record(
                index=self.count,
                tool=call.tool,
                args=args,
                response=response,
                fingerprint=call.fingerprint,
                text_digest=call.text_digest,
            )
        except InputError as err:
            return err.problem
        size = len(record.canon_args) + len(record.canon_response) + len(record.tool) + 300
        if size > MAX_RECORD_BYTES:
            return f"the record would be over the {MAX_RECORD_BYTES}-byte limit of a transcript line"
        state = self._fitting(call, self.redactor(state), size)
        if state is not None:
            record = with_state(record, state)
        written = self.recorder.write(record)
        self.states += written.state is not None
        if call.notifications:
            notes = Exchange(
                method="tools/call",
                params={"index": written.index},
                response={},
                notifications=call.notifications,
            )
            self._keep(notes, f"the notifications of tools/call of {quote(call.tool)}")
        return ""

    def _fitting(self, call: Call, state: dict[str, str] | None, size: int) -> dict[str, str] | None:
        """``state``, unless it would take the record of ``call`` (``size`` bytes without it) over
        the line limit: then None, and a warning (the answer matters more than its state)."""
        if state is None or size + len(',"state":') + len(canonical(state)) <= MAX_RECORD_BYTES:
            return state
        self.warn(
            f"the post-call state of tools/call of {quote(call.tool)} at index {self.count} would take"
            f" the record over the {MAX_RECORD_BYTES}-byte limit of a transcript line; the call has no state"
        )
        return None

    def _keep(self, exchange: Exchange, what: str = "") -> None:
        """Write an exchange to the session file; a warning (and nothing written) when it cannot be."""
        tool, args, response = exchange.record()
        try:
            self.session_file.record(tool=tool, args=self.redactor(args), response=self.redactor(response))
        except InputError as err:
            self.warn(
                f"server message {self.lines['server']}: {what or 'the answer to ' + quote(tool)}:"
                f" {err.problem}; not kept in the session file"
            )

    def close(self) -> None:
        self.recorder.close()
        self.session_file.close()

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
