"""Cassettes for agents that reach their tools over MCP (the pytest plugin's ``toolreplay_mcp``).

Each server a test starts (stdio) or reaches (Streamable HTTP) has a cassette of its own.
In a mode that records, the agent's client talks to ``toolreplay record --seal`` in front of
the real server; in replay it talks to ``toolreplay serve`` on the cassette, and the real
server is never started. The agent only gets different parameters (a
``StdioServerParameters``, a URL); nothing in it changes.

Nothing is written while the test runs: a recording goes to a temporary folder, and
:meth:`McpCassettes.finish` writes the cassette and its lock whole (temp file + rename)
when the test passed. What a test must be shown (a call the cassette lacks, a contract that
changed, a cassette that ``serve`` refuses) is raised here as the library's errors or handed
to ``fail`` as one line; the pytest plugin turns them into the test's failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit, urlunsplit

from toolreplay import sdk
from toolreplay.analyses.volatile import Volatile
from toolreplay.canonical import canonical
from toolreplay.capture.serve import load_checked, load_records
from toolreplay.contracts.lock import ToolContract, ToolLock, load_lock
from toolreplay.errors import ToolreplayError
from toolreplay.escape import one_line, quote
from toolreplay.files import SEALED_SUFFIX, session_path
from toolreplay.library.cassette import REDO, explain_drift, lock_path, text_drift, write_cassette
from toolreplay.library.failures import SnapshotMissError, ToolDriftError
from toolreplay.library.snapshot import Snapshot, match_key
from toolreplay.limits import DEFAULT_BUDGET_SECONDS
from toolreplay.state_command import parse_state_command
from toolreplay.transcript import Record, read_links

if TYPE_CHECKING:
    from mcp import StdioServerParameters

    from toolreplay.config import Config

#: how the CLI is started: the same interpreter, so the same toolreplay
TOOLREPLAY = (sys.executable, "-m", "toolreplay")
#: seconds a started proxy or ``serve --listen`` has to listen, and to stop when asked
START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
_PORT_ATTEMPTS = 3

#: (cassette path, the name messages give it) for a server name; None is the test's own cassette
CassetteFor = Callable[[str | None], tuple[str, str]]


@dataclass(slots=True, kw_only=True)
class McpCassette:
    """One server's cassette in one test: where it is, and what the test does with it."""

    path: str
    label: str
    mode: str
    folder: str
    #: whether the cassette existed when the test asked for the server
    existed: bool = False
    #: whether this test records the server (else it replays the cassette)
    recording: bool = False
    process: subprocess.Popen[bytes] | None = None
    records: tuple[Record, ...] = ()

    @property
    def transcript(self) -> str:
        """Where the proxy writes the recording while the test runs."""
        return os.path.join(self.folder, "recording" + SEALED_SUFFIX)

    @property
    def lock(self) -> str:
        """Where the proxy writes the tools the server listed."""
        return os.path.join(self.folder, "recording.lock.json")

    @property
    def misses(self) -> str:
        """Where ``serve`` appends the calls the cassette does not hold."""
        return os.path.join(self.folder, "misses.jsonl")


@dataclass(slots=True)
class McpCassettes:
    """What ``toolreplay_mcp`` hands a test: :meth:`stdio` and :meth:`http` for each server.

    ``cassette_for`` names a server's cassette; ``fail`` ends the test with one line and
    does not return. Call :meth:`finish` after the test, then :meth:`close` (always).
    """

    cassette_for: CassetteFor
    mode: str
    why: str
    fail: Callable[[str], NoReturn]
    #: the project's configuration, whose volatile rules (docs/spec.md §3.6) match calls as
    #: ``serve`` does: an argument they mask does not count (None: no configuration)
    config: Config | None = None
    servers: list[McpCassette] = field(default_factory=list)

    def stdio(
        self,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        *,
        name: str | None = None,
        state_command: str | Sequence[str] = (),
    ) -> StdioServerParameters:
        """The parameters that start the server ``command args``, recorded or replayed.

        ``env`` and ``cwd`` are the real server's (a recording proxy passes them on, and its
        state commands run there); ``name`` names the cassette of a second server in the test
        (default: the command's file name); ``state_command`` is ``record --state-command``'s
        (each ``CMD`` or ``TOOL=CMD``; default: the configuration's ``state_command``).
        """
        if isinstance(args, str):
            raise TypeError("args is a sequence of arguments, not one string")
        server = self._server(name if name is not None else Path(command).name)
        if server.recording:
            self._check_command(command, env, cwd)
            argv = [*TOOLREPLAY[1:], *self._record_args(server, state_command)]
            return sdk.StdioServerParameters(
                command=TOOLREPLAY[0],
                args=[*argv, "--", command, *args],
                env=dict(env) if env is not None else None,
                cwd=os.fspath(cwd) if cwd is not None else None,
            )
        return sdk.StdioServerParameters(
            command=TOOLREPLAY[0], args=[*TOOLREPLAY[1:], *self._serve_args(server)]
        )

    def http(self, url: str, *, name: str | None = None, state_command: str | Sequence[str] = ()) -> str:
        """A URL for the Streamable HTTP server at ``url``: a recording proxy in front of it, or
        ``toolreplay serve`` on the cassette; either listens on a free port of 127.0.0.1 until
        the test ends. ``name`` names the cassette of a second server (default: the URL's host);
        ``state_command`` as for :meth:`stdio` (the commands run in pytest's working folder)."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            self.fail(f"toolreplay: {url!r} is not an http:// or https:// URL")
        server = self._server(name if name is not None else parts.hostname or "http")
        if server.recording:
            record = self._record_args(server, state_command)
            port = self._start(
                server,
                lambda port: [*record, "--listen", f"127.0.0.1:{port}", "--target", url],
                what=f"the recording proxy in front of {url}",
            )
            return urlunsplit(("http", f"127.0.0.1:{port}", parts.path, parts.query, ""))
        serve = self._serve_args(server)
        port = self._start(
            server, lambda port: [*serve, "--listen", f"127.0.0.1:{port}"], what="toolreplay serve"
        )
        return f"http://127.0.0.1:{port}/mcp"

    def _record_args(self, server: McpCassette, state_command: str | Sequence[str]) -> list[str]:
        """``record``'s arguments for ``server``: sealed, with its lock, the project's
        configuration and the test's state commands."""
        argv = ["record", "-o", server.transcript, "--seal", "--lock", server.lock]
        if self.config is not None:
            argv += ["--config", self.config.source]
        commands = [state_command] if isinstance(state_command, str) else list(state_command)
        for command in commands:
            try:
                parse_state_command(command)
            except ValueError as err:
                self.fail(f"toolreplay: state_command {command!r} {err}")
            argv += ["--state-command", command]
        return argv

    def _server(self, name: str) -> McpCassette:
        """A new server's cassette: the test's own for the first one, then one named after each."""
        if not isinstance(name, str) or not name:
            raise TypeError("a server's name is a non-empty string")
        path, label = self.cassette_for(None if not self.servers else name)
        if any(server.path == path for server in self.servers):
            self.fail(
                f"toolreplay: two servers of this test would share the cassette {label}:"
                " give each its own name= (each server has a cassette of its own)"
            )
        existed = os.path.exists(path)
        recording = self._recording(label, existed=existed)
        server = McpCassette(
            path=path,
            label=label,
            mode=self.mode,
            folder=tempfile.mkdtemp(prefix="toolreplay-mcp-"),
            existed=existed,
            recording=recording,
        )
        self.servers.append(server)
        return server

    def _recording(self, label: str, *, existed: bool) -> bool:
        """Whether the record mode records the server of the cassette ``label``; the test fails
        when it would replay a cassette that does not exist."""
        recording = self.mode in ("all", "new_episodes") or (self.mode == "once" and not existed)
        if not recording and not existed:
            self.fail(
                f"toolreplay: there is no cassette {label} and the record mode is {self.mode} ({self.why}):"
                " record it where the server is reachable and commit it"
            )
        return recording

    def _check_command(
        self, command: str, env: Mapping[str, str] | None, cwd: str | os.PathLike[str] | None
    ) -> None:
        """Fail now, in one line, when the real server cannot be started (the client would only
        see its connection closed)."""
        if not _findable(command, env, cwd):
            self.fail(f"toolreplay: cannot start the MCP server {command!r} to record it: not found")

    def _serve_args(self, server: McpCassette) -> list[str]:
        """``serve``'s arguments, after the checks ``serve`` makes before it starts (so the test
        fails with its reason, not with a closed connection)."""
        lock = lock_path(server.path)
        try:
            server.records, _ = load_checked(server.path, load_lock(lock) if os.path.exists(lock) else None)
        except ToolreplayError as err:
            self.fail(f"toolreplay serve refuses the cassette {server.label}: {one_line(str(err))}")
        argv = ["serve", server.path, "--misses", server.misses]
        if self.config is not None and self.config.volatile:
            argv += ["--config", self.config.source]
        return [*argv, "--lock", lock] if os.path.exists(lock) else argv

    def _start(self, server: McpCassette, argv: Callable[[int], list[str]], *, what: str) -> int:
        """Start a listening CLI process on a free port; its port, or the test fails with its reason."""
        reason = ""
        for attempt in range(_PORT_ATTEMPTS):
            port = _free_port()
            log = os.path.join(server.folder, f"stderr-{attempt}.log")
            with open(log, "wb") as err:
                server.process = subprocess.Popen(
                    [*TOOLREPLAY, *argv(port)],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                )
            if _listening(port, server.process):
                return port
            _stop(server.process)
            server.process = None
            reason = _last_line(log)
            if "cannot listen on" not in reason:  # another process took the port: try another one
                break
        self.fail(f"toolreplay: {what} did not start: {reason or 'it exited without a word'}")

    def finish(self, passed: bool) -> tuple[list[str], BaseException | None]:
        """Stop the servers, then write what the test recorded (only if it ``passed``).

        Returns the outcome of each cassette (``replayed``, ``recorded``, ``unsaved``) and
        the first error the test must show: a :class:`SnapshotMissError`, a
        :class:`ToolDriftError` (each with notes), or a recording that cannot be read.
        """
        self.stop()
        outcomes: list[str] = []
        problem: BaseException | None = None
        for server in self.servers:
            outcome, error = self._outcome(server, passed)
            problem = problem or error
            if outcome:
                outcomes.append(outcome)
        return outcomes, problem

    def _outcome(self, server: McpCassette, passed: bool) -> tuple[str, BaseException | None]:
        """One server's outcome, and the error the test must show for it (None: none)."""
        try:
            return self._finish(server, passed), None
        except (SnapshotMissError, ToolDriftError) as err:
            return "unsaved" if server.recording else "replayed", err
        except (OSError, ToolreplayError) as err:
            return "unsaved", ToolreplayError(f"the recording of {server.label} cannot be read: {err}")

    def _finish(self, server: McpCassette, passed: bool) -> str:
        if not server.recording:
            self._check_misses(server)
            return "replayed"
        new = _recorded(server.transcript)
        session = _session(server.transcript)
        lock = load_lock(server.lock) if _exists(server.lock) else None
        old: tuple[Record, ...] = ()
        if server.mode == "new_episodes" and server.existed:
            old = load_records(server.path)
            new, session = self._appended(server, old, new, session, lock)
        unwritten = _unwritten(server, new, session, passed=passed)
        if unwritten is not None:
            return unwritten
        if lock is None:  # the session never listed its tools: keep what the cassette's lock knew
            lock = _kept_lock(server.path, old)
        write_cassette(server.path, (*old, *new), lock, session)
        return "recorded"

    def _appended(
        self,
        server: McpCassette,
        old: tuple[Record, ...],
        new: tuple[Record, ...],
        session: tuple[Record, ...] | None,
        lock: ToolLock | None,
    ) -> tuple[tuple[Record, ...], tuple[Record, ...] | None]:
        """``new_episodes``: the recorded calls the cassette does not hold yet, and the merged
        session file (after the drift check against the live server's ``lock``)."""
        if lock is not None:
            self._check_drift(server, old, lock)
        volatile = self._volatile()
        held = {match_key(record.tool, record.args, volatile) for record in old}
        kept = [record for record in new if match_key(record.tool, record.args, volatile) not in held]
        session = merged_session(
            _session(server.path), session, {r.index: len(old) + i for i, r in enumerate(kept)}
        )
        return tuple(kept), session

    def _check_drift(self, server: McpCassette, old: Sequence[Record], live: ToolLock) -> None:
        """Raise :class:`ToolDriftError` for the first recorded call whose tool the server lists with
        another fingerprint, else :class:`ContractTextDriftError` for the first whose tool it lists with
        another contract text (the cassettes' one judgement, :func:`text_drift`)."""
        __tracebackhide__ = True
        self._check_fingerprints(server, old, live)
        err = text_drift(old, live.tools, lock_path(server.path))
        if err is not None:
            raise err

    def _check_fingerprints(self, server: McpCassette, old: Sequence[Record], live: ToolLock) -> None:
        __tracebackhide__ = True
        for record in old:
            recorded = record.fingerprint
            contract: ToolContract | None = live.tools.get(record.tool)
            now = contract.fingerprint if contract is not None else None
            if recorded is None or recorded == now:
                continue
            err = ToolDriftError(tool=record.tool, recorded=recorded, live=now, index=record.index)
            for note in _drift_notes(server, record, contract):
                err.add_note(note)
            raise err

    def _check_misses(self, server: McpCassette) -> None:
        """Raise the first call ``serve`` could not answer as :class:`SnapshotMissError`."""
        __tracebackhide__ = True
        misses = _misses(server.misses)
        if not misses:
            return
        first: dict[str, Any] = misses[0]
        try:
            Snapshot(server.records, volatile=self._volatile() or ()).serve(
                first["tool"], first["args"], live=None, check=False
            )
        except SnapshotMissError as miss:
            miss.add_note(
                f"cassette {server.label} does not record this call and the record mode is"
                f" {server.mode} ({self.why}); re-record it (--toolreplay-record-mode=new_episodes or all)"
                " if the call is intended"
            )
            more = f"; {len(misses) - 1} more call(s) missed too" if len(misses) > 1 else ""
            miss.add_note(f"the agent was answered with a tool error starting 'snapshot miss:'{more}")
            raise miss.with_traceback(None) from None

    def _volatile(self) -> Volatile | None:
        rules = self.config.volatile if self.config is not None else ()
        budget = self.config.pattern_budget_seconds if self.config is not None else DEFAULT_BUDGET_SECONDS
        return Volatile(rules, budget=budget) if rules else None

    def stop(self) -> None:
        """Stop every process the fixture started (the proxies and ``serve --listen``)."""
        for server in self.servers:
            if server.process is not None:
                _stop(server.process)
                server.process = None

    def close(self) -> None:
        """Stop the processes and remove the temporary folders, whatever happened."""
        self.stop()
        for server in self.servers:
            shutil.rmtree(server.folder, ignore_errors=True)


def _unwritten(
    server: McpCassette, new: Sequence[Record], session: Sequence[Record] | None, *, passed: bool
) -> str | None:
    """The outcome of a recording that writes nothing (None: the cassette is written)."""
    if not new and (server.existed or session is None):
        return "replayed" if server.existed and server.mode != "all" else ""
    if not passed:  # a failed test's calls are no baseline
        return "unsaved"
    return None


def _recorded(transcript: str) -> tuple[Record, ...]:
    """The calls the recording proxy wrote to ``transcript`` (none when it wrote nothing)."""
    return tuple(link.record for link in read_links(transcript)) if _exists(transcript) else ()


def _kept_lock(cassette: str, old: Sequence[Record]) -> ToolLock:
    """The lock a cassette keeps when its session never listed its tools: the cassette's own
    lock when calls were kept from it, else an empty one."""
    kept = lock_path(cassette)
    return load_lock(kept) if old and _exists(kept) else ToolLock()


def _session(recording: str) -> tuple[Record, ...] | None:
    """The session file beside ``recording`` (what the proxy saw besides the calls); None without one."""
    beside = session_path(recording)
    return tuple(link.record for link in read_links(beside)) if _exists(beside) else None


def merged_session(
    old: Sequence[Record] | None, new: Sequence[Record] | None, moved: Mapping[int, int]
) -> tuple[Record, ...] | None:
    """The session file of a cassette that ``new_episodes`` appended calls to: the old one, then
    what the new one holds that the old one does not (the same method and params answer as first
    recorded), and the notifications of each appended call under its index in the cassette
    (``moved``: the call's index in the new recording -> its index in the cassette)."""
    if old is None or new is None:
        chosen = new if old is None else old
        return None if chosen is None else tuple(chosen)
    return (*old, *_added(old, new, moved))


def _added(old: Sequence[Record], new: Sequence[Record], moved: Mapping[int, int]) -> list[Record]:
    """What the new session adds to the old one, in its order."""
    held = {(record.tool, canonical(record.args)) for record in old}
    added: list[Record] = []
    for record in new:
        extra = _appended_record(record, held, moved)
        if extra is not None:
            added.append(extra)
    return added


def _appended_record(record: Record, held: set[tuple[str, str]], moved: Mapping[int, int]) -> Record | None:
    """What ``record`` of the new session adds to the merged one: a call's notification under
    the call's index in the cassette, or a message the old session does not hold; else None."""
    if record.tool != "tools/call":
        return None if (record.tool, canonical(record.args)) in held else record
    index = record.args.get("index")
    if isinstance(index, int) and index in moved:
        return replace(record, args={"index": moved[index]})
    return None


def _exists(path: str) -> bool:
    return os.path.isfile(path) and os.path.getsize(path) > 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _listening(port: int, process: subprocess.Popen[bytes]) -> bool:
    """Wait until something accepts connections on 127.0.0.1:port; False when the process exited."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        with contextlib.suppress(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        time.sleep(0.05)
    return False


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (the CLI stops listening and closes its files), then SIGKILL if it lingers."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _last_line(log: str) -> str:
    """The process's one-line reason: its last ``toolreplay: error:`` line, else its last line."""
    try:
        text = Path(log).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("toolreplay: error:")]
    return one_line((errors or lines or [""])[-1])


def _findable(command: str, env: Mapping[str, str] | None, cwd: str | os.PathLike[str] | None) -> bool:
    """Whether ``command`` names a file (a path, from ``cwd``) or a program on the server's PATH."""
    if os.sep in command or (os.altsep and os.altsep in command):
        return os.path.exists(os.path.join(os.fspath(cwd) if cwd is not None else ".", command))
    search = (env or {}).get("PATH", os.environ.get("PATH", os.defpath))
    return shutil.which(command, path=search) is not None


def _drift_notes(server: McpCassette, record: Record, contract: ToolContract | None) -> list[str]:
    """The notes of a recorded call whose tool the live server lists with another fingerprint
    (``contract``), or no longer lists (None)."""
    if contract is None:
        return [f"the live server no longer lists {quote(record.tool)}", REDO]
    recorded = record.fingerprint or ""
    shown = lock_path(server.label)
    return explain_drift(lock_path(server.path), shown, contract, recorded, against="the live server")


def _misses(path: str) -> list[dict[str, Any]]:
    """The calls ``serve`` appended to ``path`` because the cassette does not hold them."""
    if not _exists(path):
        return []
    with open(path, encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]
