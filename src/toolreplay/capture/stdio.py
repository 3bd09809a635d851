"""The stdio proxy: the server's command runs as a child; bytes go both ways unchanged.

The MCP stdio transport is newline-delimited JSON-RPC. Each complete line is shown to the
recording and forwarded byte for byte, unless it answers a call the recording could not
keep as sent: the client then gets the error that was recorded instead. A trailing partial
line is forwarded when its side closes. A server still running after the client closed its
input is stopped (SIGTERM, then SIGKILL). Reading uses ``os.read`` on the raw descriptors
(no Python buffer, so a thread still blocked on the agent's stdin cannot hold a lock at
exit). The server's stderr is the proxy's own stderr: it passes through untouched.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any

from toolreplay.errors import InputError

if TYPE_CHECKING:  # this module stays light: the server starts before the recording's modules load
    from toolreplay.capture.early import Early
    from toolreplay.capture.recording import Recording

_CHUNK = 1 << 16
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
#: Seconds a server has to exit after its input closes, then after SIGTERM.
EOF_GRACE = 5.0
KILL_GRACE = 2.0


class LineSplitter:
    """Split a byte stream into lines ending in ``\\n``, whatever the chunk boundaries."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        """The complete lines ``chunk`` finishes, each with its ``\\n``."""
        at = chunk.find(b"\n")
        while at >= 0:
            self._buffer += chunk[: at + 1]
            yield bytes(self._buffer)
            self._buffer.clear()
            chunk = chunk[at + 1 :]
            at = chunk.find(b"\n")
        self._buffer += chunk

    def rest(self) -> bytes:
        """What is left after the last ``\\n`` (an unfinished line)."""
        rest = bytes(self._buffer)
        self._buffer.clear()
        return rest


def write_all(fd: int, data: bytes) -> None:
    """Write every byte (``os.write`` may write fewer)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def start_server(argv: Sequence[str]) -> subprocess.Popen[bytes]:
    """Start the MCP server ``argv`` with its stdin and stdout piped to this process."""
    try:
        return subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    except OSError as err:
        raise InputError(f"cannot start the MCP server {argv[0]!r}: {err.strerror or err}") from err


def stop_server(child: subprocess.Popen[bytes]) -> None:
    """Stop a server the proxy will not run after all (closing its input first, as a client would)."""
    with contextlib.suppress(OSError):
        child.stdin.close()  # type: ignore[union-attr]
    try:
        child.wait(timeout=KILL_GRACE)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def proxy(
    server: Sequence[str] | subprocess.Popen[bytes],
    recording: Recording | Early,
    *,
    stdin_fd: int = 0,
    stdout_fd: int = 1,
    warn: Callable[[str], None],
    meanwhile: Callable[[], None] | None = None,
) -> int:
    """Run ``server`` (a command line, or a server :func:`start_server` started) behind the proxy
    until it exits; return its exit status (128+N for signal N).

    ``meanwhile`` runs in this thread while lines already pass both ways (``record`` loads
    the recording so, and attaches it to the :class:`Early` it gave as ``recording``); when it
    raises, the server is stopped and the error goes on.
    """
    child = server if isinstance(server, subprocess.Popen) else start_server(server)
    assert child.stdin is not None and child.stdout is not None
    to_server, from_server = child.stdin.fileno(), child.stdout.fileno()
    lock = threading.Lock()
    answered = False
    client_ended = threading.Event()  # set once the client's input ended: the server is being stopped

    def pump_client() -> None:
        lines = LineSplitter()
        try:
            while chunk := os.read(stdin_fd, _CHUNK):
                for line in lines.feed(chunk):
                    with lock:
                        recording.from_client(line)
                    write_all(to_server, line)
            write_all(to_server, lines.rest())
        except OSError:
            pass  # the server is gone; its exit ends the session
        finally:
            child.stdin.close()  # type: ignore[union-attr]
            client_ended.set()
        _stop_after_eof(child, warn)

    def pump_server() -> None:
        nonlocal answered
        client_gone = False
        lines = LineSplitter()
        while chunk := os.read(from_server, _CHUNK):
            answered = True
            for line in lines.feed(chunk):
                with lock:
                    held = recording.awaits_call()
                if not held:
                    # no answer the recording might replace can be on this line (initialize's
                    # answer, a list, a notification): the client gets it before it is looked at
                    client_gone = client_gone or not _write(stdout_fd, line)
                with lock:
                    replacement = recording.from_server(line)
                if held:
                    line = line if replacement is None else replacement + b"\n"
                    client_gone = client_gone or not _write(stdout_fd, line)
                elif replacement is not None:  # the server answered a call before it was sent it
                    warn(
                        "the server answered a tools/call before the client sent it; the client got the"
                        " answer as sent, the recording has the error that would have replaced it"
                    )
        if not client_gone:
            _write(stdout_fd, lines.rest())

    previous = _forward_signals(child)
    client_side = threading.Thread(target=pump_client, name="client-to-server", daemon=True)
    client_side.start()
    try:
        _run(pump_server, child, meanwhile)
        status = child.wait()
        if client_ended.is_set():
            # it stopped the server, or is about to see it gone: what it says of the stop comes
            # before the end (a daemon thread still running at exit is cut off mid-word)
            client_side.join()
    finally:
        child.stdout.close()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    _say_exit(recording, status, answered, warn)
    return _exit_status(status)


def _run(
    pump_server: Callable[[], None], child: subprocess.Popen[bytes], meanwhile: Callable[[], None] | None
) -> None:
    """Pass the server's output on until it ends, in this thread; with ``meanwhile``, in another
    while ``meanwhile`` runs in this one (when it raises, the server is stopped)."""
    if meanwhile is None:
        pump_server()
        return
    server_side = threading.Thread(target=pump_server, name="server-to-client", daemon=True)
    server_side.start()
    try:
        meanwhile()
    except BaseException:
        stop_server(child)
        server_side.join(KILL_GRACE)  # its output ends with it
        raise
    server_side.join()


def _say_exit(recording: Recording | Early, status: int, answered: bool, warn: Callable[[str], None]) -> None:
    """Warn of a server that exited before it said anything, or before it answered calls."""
    if not answered and status != 0:
        warn(f"the MCP server exited with status {_exit_status(status)} before it said anything")
    unanswered = recording.unanswered()
    if unanswered:
        warn(
            f"the MCP server exited (status {_exit_status(status)}) before it answered"
            f" tools/call {', '.join(unanswered)}; not recorded"
        )


def _write(fd: int, data: bytes) -> bool:
    """Write every byte; False when the reader is gone."""
    try:
        write_all(fd, data)
    except OSError:
        return False
    return True


def _stop_after_eof(child: subprocess.Popen[bytes], warn: Callable[[str], None]) -> None:
    """Stop a server that outlives its input: SIGTERM after a grace period, SIGKILL after another.

    (The MCP specification's shutdown for stdio.)
    """
    try:
        child.wait(timeout=EOF_GRACE)
        return
    except subprocess.TimeoutExpired:
        child.terminate()
    try:
        child.wait(timeout=KILL_GRACE)
        how = "SIGTERM"
    except subprocess.TimeoutExpired:
        child.kill()
        how = f"SIGKILL ({KILL_GRACE:g} s after SIGTERM)"
    warn(
        f"the MCP server was still running {EOF_GRACE:g} s after the client closed its input;"
        f" stopped with {how}"
    )


def _exit_status(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def _forward_signals(child: subprocess.Popen[bytes]) -> dict[int, Any]:
    """Pass the signals a client stops its server with on to the real server."""

    def forward(signum: int, frame: FrameType | None) -> None:
        if child.poll() is None:
            child.send_signal(signum)

    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in _FORWARDED:
            previous[signum] = signal.signal(signum, forward)
    return previous
