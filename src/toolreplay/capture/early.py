"""The recording's stand-in while it loads, so that a client's first messages need not wait.

A client waits for ``record`` to answer ``initialize``; loading the recording's modules (and
the MCP SDK) takes longer than most servers take to start, and the CPU it takes is taken from
the starting server. So ``record`` starts the server, starts passing lines both ways, and
loads the recording once the server has said something (:attr:`Early.first`). Until it is attached,
:class:`Early` keeps the lines that no recording needs at once (everything but a client's
``tools/call``, ``tools/list`` or cancellation), in order, and hands them to the recording
when it is attached; a line that needs it waits for it. No ``tools/call`` can wait for its
answer before then, so no server line is held back either.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from toolreplay.canonical import decode
from toolreplay.errors import InputError
from toolreplay.limits import MAX_RECORD_BYTES

if TYPE_CHECKING:
    from toolreplay.capture.recording import Recording

#: client methods whose requests the recording must know before their answers come
_NEEDED = frozenset({"tools/call", "tools/list", "notifications/cancelled"})


def needs_recording(raw: bytes) -> bool:
    """Whether a client's line may be a message the recording must see before it goes on."""
    try:
        value = decode(raw, max_bytes=MAX_RECORD_BYTES, what="message")
    except InputError:
        return bool(raw.strip())  # the recording says what it makes of it
    items = value if isinstance(value, list) else [value]
    return any(not isinstance(item, dict) or _method(item) in _NEEDED for item in items)


def _method(message: dict[str, object]) -> str:
    """The method a message names ("" when it names none: a method ``[1]`` is the recording's
    to judge, and goes on in order with the lines that need no recording)."""
    method = message.get("method")
    return method if isinstance(method, str) else ""


class Early:
    """Stands for a :class:`Recording` until :meth:`attach` gives it the real one."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._attached = threading.Event()
        self._recording: Recording | None = None
        self._backlog: list[tuple[str, bytes]] = []
        #: set by the first line from the server, or the first client line that needs the recording
        self.first = threading.Event()

    def attach(self, recording: Recording) -> None:
        """Hand the lines kept so far to ``recording``, in order, then let everything through."""
        with self._mutex:
            for side, raw in self._backlog:
                if side == "client":
                    recording.from_client(raw)
                else:
                    recording.from_server(raw)  # nothing awaited an answer: nothing to replace
            self._backlog.clear()
            self._recording = recording
        self._attached.set()

    def _wait(self) -> Recording:
        self._attached.wait()
        assert self._recording is not None
        return self._recording

    def from_client(self, raw: bytes) -> None:
        with self._mutex:
            if self._recording is None and not needs_recording(raw):
                self._backlog.append(("client", raw))
                return
        self.first.set()
        self._wait().from_client(raw)

    def from_server(self, raw: bytes) -> bytes | None:
        with self._mutex:
            if self._recording is None:
                self._backlog.append(("server", raw))
                self.first.set()
                return None
        return self._recording.from_server(raw)

    def awaits_call(self) -> bool:
        with self._mutex:
            return self._recording is not None and self._recording.awaits_call()

    def unanswered(self) -> tuple[str, ...]:
        return self._wait().unanswered()
