"""The snapshot server: an MCP server that answers from a recording and runs nothing.

With the recording's session file (capture/exchange.py), ``initialize``, ``server/discover``,
``tools/list``, resources, prompts, completions and the logging level are answered as the
server answered them (a request the session does not hold is a miss, never an answer made
up), and a request's notifications are sent again, in order, before its answer; a server
that spoke only the ``initialize`` handshake is served so (its clients fall back as they
did). A recording without one (made before) gets a ``tools/list`` of the recorded tools
(with their input schemas, and the contract text a tool lock holds, when one is given).
The transports are capture/serving.py's.
``tools/call`` is answered by :class:`toolreplay.library.snapshot.Snapshot`: the k-th
identical call gets the k-th recorded response, the last one after that, counted per
session (each session starts at the recording's start). An unrecorded call is a tool
error whose text starts ``snapshot miss:``; any other unrecorded request is a JSON-RPC
error whose message starts so; a recorded JSON-RPC error is answered as that error again.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from toolreplay import sdk
from toolreplay.analyses.difference import clipped, excerpts
from toolreplay.analyses.fingerprint_diff import Difference, compare_locks
from toolreplay.analyses.volatile import Volatile
from toolreplay.canonical import canonical
from toolreplay.capture.exchange import (
    CAPABILITY_METHODS,
    EXCHANGED,
    SUBSCRIBE_METHODS,
    without_meta,
)
from toolreplay.capture.replies import Initialize, cache_hints, notify, params_model, raise_recorded, shaped
from toolreplay.capture.session import listed_lock, stamped_info
from toolreplay.chain import verify_stream
from toolreplay.contracts.lock import ToolContract, ToolLock
from toolreplay.errors import InputError, ToolreplayError
from toolreplay.escape import quote
from toolreplay.files import SEALED_SUFFIX, session_path
from toolreplay.library.failures import ContractTextDriftError, SnapshotMissError, ToolDriftError
from toolreplay.library.snapshot import Snapshot
from toolreplay.transcript import Record, open_input, read_links, read_transcript

if TYPE_CHECKING:
    from mcp.server.context import HandlerResult, ServerRequestContext
    from mcp.server.lowlevel import Server

#: What ``tools/call`` answers with when the recording does not hold the call.
MISS_PREFIX = "snapshot miss: "
#: The input schema of a recorded tool when no lock says more: any object.
ANY_OBJECT: dict[str, Any] = {"type": "object"}


class BrokenRecordingError(ToolreplayError):
    """A sealed recording whose chain does not verify: it is not served."""


def load_records(path: str) -> tuple[Record, ...]:
    """The records of a transcript or sealed transcript; a sealed one must verify."""
    return _load(path, sealed=path.endswith(SEALED_SUFFIX))


def load_session(path: str) -> tuple[Record, ...] | None:
    """The records of the session file beside recording ``path`` (None when it has none);
    sealed, and verified, when the recording is."""
    beside = session_path(path)
    if path == "-" or not os.path.lexists(beside):
        return None
    return _load(beside, sealed=path.endswith(SEALED_SUFFIX))


def _load(path: str, *, sealed: bool) -> tuple[Record, ...]:
    if sealed:
        stream = open_input(path)
        try:
            state = verify_stream(stream, path)
        finally:
            stream.close()
        if state.broken is not None:
            raise BrokenRecordingError(
                f"{path}: the chain is broken at index {state.broken.position}"
                f" ({state.broken.reason}); run toolreplay verify"
            )
        return tuple(link.record for link in read_links(path))
    return tuple(read_transcript(path))


class SessionLockError(ToolreplayError):
    """The session file's ``tools/list`` disagrees with the lock: serve would advertise tools the
    lock does not pin (docs/spec.md §8)."""


def check_session_lock(path: str, session: Sequence[Record] | None, lock: ToolLock) -> None:
    """Raise :class:`SessionLockError` naming the first tool the session file of recording ``path``
    lists otherwise than ``lock`` pins it, and what differs (as ``fingerprint-diff`` words it)."""
    listed = listed_lock(session) if session else None
    differences = _differences(listed, lock) if listed is not None else []
    if not differences:
        return
    tool = differences[0].tool
    what = "; ".join(d.text() for d in differences if d.tool == tool)
    raise SessionLockError(
        f"{session_path(path)}: its tools/list disagrees with the lock for tool {quote(tool)}: {what}"
    )


def _differences(listed: ToolLock, lock: ToolLock) -> list[Difference]:
    """How the tools a session file listed differ from what ``lock`` pins of them."""
    pinned = ToolLock.of(c for name, c in lock.tools.items() if name in listed.tools)
    return compare_locks(pinned, listed)


def check_lock(records: Sequence[Record], lock: ToolLock) -> None:
    """Raise :class:`ToolDriftError` for the first recorded call whose fingerprint the lock does not
    have, or :class:`ContractTextDriftError` for one whose contract-text digest it does not have."""
    for record in records:
        _check_record(record, lock.tools.get(record.tool))


def _check_record(record: Record, contract: ToolContract | None) -> None:
    """Raise when ``contract`` (the lock's, None when it has none) does not pin the recorded call's."""
    live = contract.fingerprint if contract is not None else None
    if record.fingerprint is not None and live != record.fingerprint:
        raise ToolDriftError(tool=record.tool, recorded=record.fingerprint, live=live, index=record.index)
    text = contract.text_digest if contract is not None else None
    if record.text_digest is not None and text is not None and text != record.text_digest:
        raise ContractTextDriftError(
            tool=record.tool, recorded=record.text_digest, live=text, index=record.index
        )


def tool_list(records: Sequence[Record], lock: ToolLock | None) -> list[dict[str, Any]]:
    """The ``tools/list`` entries: every recorded tool, in name order."""
    tools = []
    for name in sorted({record.tool for record in records}):
        contract = lock.tools.get(name) if lock is not None else None
        tools.append(_listed(name, contract))
    return tools


def _listed(name: str, contract: ToolContract | None) -> dict[str, Any]:
    """One ``tools/list`` entry: the lock's schema and the recorded contract text, when it pins the tool."""
    if contract is None:
        return {"name": name, "inputSchema": ANY_OBJECT}
    schema = contract.schema if isinstance(contract.schema, dict) else ANY_OBJECT
    # annotations only as the server sent them: none invented
    return {"name": name, "inputSchema": schema, **_said(contract.text)}


def _said(text: dict[str, Any] | None) -> dict[str, Any]:
    """The recorded contract text as ``tools/list`` fields: what the agent read when it was recorded."""
    if text is None:
        return {}
    out: dict[str, Any] = {key: text[key] for key in ("title", "description") if key in text}
    if "annotations" in text:
        out["annotations"] = dict(text["annotations"])
    if isinstance(text.get("output_schema"), dict):
        out["outputSchema"] = text["output_schema"]
    return out


def server_identity(records: Sequence[Record]) -> tuple[str, str]:
    """(name, version) of the recorded server, from the identity stamped on its answers."""
    for record in records:
        info = stamped_info(record.response)
        if info is not None and isinstance(info.get("name"), str):
            version = info.get("version")
            return info["name"], version if isinstance(version, str) else ""
    return "toolreplay-snapshot", ""


#: what a miss is told to, besides the client: (tool, arguments)
OnMiss = Callable[[str, dict[str, Any]], None]


def answer(
    snapshot: Snapshot, tool: str, args: dict[str, Any], on_miss: OnMiss | None = None
) -> dict[str, Any]:
    """The recorded answer as a ``CallToolResult`` object; ``MCPError`` for a recorded error."""
    try:
        response = snapshot.serve(tool, args, live=None, check=False)
    except SnapshotMissError as miss:
        if on_miss is not None:
            on_miss(tool, args)
        return tool_error(MISS_PREFIX + str(miss))
    except InputError as err:  # a volatile rule's pattern that could not mask the arguments in time
        return tool_error(str(err))
    if set(response) == {"error"}:
        raise_recorded(response)
    return response


def tool_error(text: str) -> dict[str, Any]:
    """A ``CallToolResult`` object that reports a tool error."""
    return {"content": [{"type": "text", "text": text}], "isError": True}


#: the JSON-RPC error code of a request (other than tools/call) the recording does not hold
MISS_CODE = -32602


@dataclass(slots=True)
class _Replay:
    """One session's place in the recording: each session starts at the recording's start."""

    calls: Snapshot
    asked: Snapshot

    def restarted(self) -> _Replay:
        """A new session's place: the recording's start (the recording itself shared, not copied)."""
        return _Replay(calls=self.calls.restarted(), asked=self.asked.restarted())


#: Streamable HTTP sessions open at once: a client that opens one more is answered 503 until one ends
MAX_SESSIONS = 1000
#: seconds a Streamable HTTP session may go without a request before it is ended (and its place freed)
SESSION_IDLE_TIMEOUT = 30 * 60


class Sessions:
    """Each live session's place in the recording, by its session id.

    A session's place is freed when its connection ends: the client ends the session (HTTP
    ``DELETE``), it goes :data:`SESSION_IDLE_TIMEOUT` seconds without a request, or the server
    stops. Requests without a session (stdio's one session, the 2026 revision's requests over
    HTTP) share one place, which lasts as long as the server.
    """

    def __init__(self) -> None:
        self._held: dict[str, _Replay] = {}
        self._shared: _Replay | None = None

    def __len__(self) -> int:
        """How many sessions' places are held (the shared one not counted)."""
        return len(self._held)

    def place(self, ctx: ServerRequestContext[Any], start: _Replay) -> _Replay:
        """The place of the session ``ctx`` came in, at ``start``'s when the session is new."""
        connection = sdk.connection(ctx)
        key = connection.session_id
        if key is None:
            if self._shared is None:
                self._shared = start.restarted()
            return self._shared
        held = self._held.get(key)
        if held is None:
            held = self._held[key] = start.restarted()
            connection.exit_stack.callback(self._held.pop, key, None)
        return held


@dataclass(slots=True)
class Recorded:
    """What a snapshot server answers from: the tool calls, and the session file when there is one."""

    records: Sequence[Record]
    session: Sequence[Record] | None = None
    #: the notifications sent while a tools/call was answered, by the call's index
    notes: dict[int, list[Any]] = field(default_factory=dict)
    asked: list[Record] = field(default_factory=list)
    initialize: dict[str, Any] | None = None
    #: the config's volatile rules: a tool call is looked up without what they mask in its arguments
    volatile: Any = ()

    def __post_init__(self) -> None:
        for record in self.session or ():
            if record.tool == "tools/call":
                self._keep_notes(record)
            else:
                self._keep_asked(record)
        if self.initialize is None:
            self.initialize = _from_discover(self.asked)

    def _keep_notes(self, record: Record) -> None:
        """Keep the notifications a session file recorded for the tool call at its ``index``."""
        index, notes = record.args.get("index"), record.response.get("notifications")
        if isinstance(index, int) and isinstance(notes, list):
            self.notes[index] = notes

    def _keep_asked(self, record: Record) -> None:
        """Keep a request other than tools/call; the first ``initialize`` result is the handshake's."""
        self.asked.append(record)
        result = record.response.get("result")
        if record.tool == "initialize" and self.initialize is None and isinstance(result, dict):
            self.initialize = result

    def methods(self) -> set[str]:
        """The methods served from the session file: those it holds, and those the server declared."""
        held = {record.tool for record in self.asked if record.tool in EXCHANGED}
        capabilities = (self.initialize or {}).get("capabilities")
        if isinstance(capabilities, dict):
            held.update(_declared(capabilities))
        held.discard("initialize")
        return held


def _declared(capabilities: dict[str, Any]) -> set[str]:
    """The methods a server's declared capabilities say it answers."""
    methods = {method for name, of in CAPABILITY_METHODS.items() if name in capabilities for method in of}
    resources = capabilities.get("resources")
    if isinstance(resources, dict) and resources.get("subscribe"):
        methods.update(SUBSCRIBE_METHODS)
    return methods


def _from_discover(asked: Sequence[Record]) -> dict[str, Any] | None:
    """The ``initialize`` result a session recorded with the 2026 revision stands for: the recorded
    ``server/discover`` answer's capabilities and instructions, and the identity its results were
    stamped with (what a client of that revision reads as the server's info); None without one."""
    for record in asked:
        result = record.response.get("result")
        if record.tool == "server/discover" and isinstance(result, dict):
            return _as_initialize(result)
    return None


def _as_initialize(discovered: dict[str, Any]) -> dict[str, Any]:
    """A ``server/discover`` result as the ``initialize`` result it stands for."""
    out: dict[str, Any] = {"capabilities": discovered.get("capabilities", {})}
    info = stamped_info(discovered)
    if info is not None:
        out["serverInfo"] = info
    if isinstance(discovered.get("instructions"), str):
        out["instructions"] = discovered["instructions"]
    return out


def miss_message(method: str, params: dict[str, Any], miss: SnapshotMissError) -> str:
    """The message of the error a request the recording does not hold is answered with."""
    text = f"{MISS_PREFIX}no recorded {method} request has the params {clipped(params, 200)}"
    if miss.nearest_index is None:
        return text + f"; the recording never asks {method}"
    if miss.pointer is None:
        return text
    recorded, given = excerpts(miss.recorded_value, miss.given_value, 80, absent="(absent)")
    return (
        f"{text}; the nearest recorded one differs at {quote(miss.pointer)}:"
        f" recorded {recorded}, given {given}"
    )


def build_server(
    records: Sequence[Record],
    lock: ToolLock | None,
    session: Sequence[Record] | None = None,
    on_miss: OnMiss | None = None,
    *,
    volatile: Volatile | None = None,
    sessions: Sessions | None = None,
    path: str = "",
) -> Server[Any]:
    """The low-level SDK server that answers from ``records`` (and the session file's ``session``);
    ``on_miss`` hears of each tool call the recording does not hold, and a call is looked up
    without what the ``volatile`` rules mask in its arguments (``path``: the recording's file, for
    messages). Each session's place in the recording is kept in ``sessions`` (a new
    :class:`Sessions` when not given)."""
    recorded = Recorded(records=records, session=session, volatile=volatile or ())
    name, version = _identity(recorded)
    # indexed once, before the first request: a volatile rule that cannot mask a recorded call's
    # arguments in time stops serve here, naming the rule
    start = _Replay(
        calls=Snapshot(recorded.records, volatile=recorded.volatile, path=path),
        asked=Snapshot(recorded.asked),
    )
    handlers = _Handlers(
        recorded=recorded,
        tools=[sdk.types.Tool.model_validate(tool) for tool in tool_list(records, lock)],
        places=sessions if sessions is not None else Sessions(),
        start=start,
        on_miss=on_miss,
    )
    # the SDK's own server/discover answer (a handshake-era recording holds none) says them too
    server: Server[Any] = sdk.Server(
        name,
        version=version,
        instructions=_instructions(recorded),
        on_list_tools=handlers.list_tools,
        cache_hints=cache_hints(),
    )
    server.add_request_handler("tools/call", sdk.types.CallToolRequestParams, handlers.call_tool)
    for method in _held(recorded, session) if session is not None else ():
        server.add_request_handler(method, params_model(method), handlers.asked)
    if recorded.initialize is not None:
        server.middleware.append(Initialize(recorded.initialize))
    return server


def _instructions(recorded: Recorded) -> str | None:
    """The instructions the recorded server gave (in its ``initialize`` result), if it gave any."""
    instructions = (recorded.initialize or {}).get("instructions")
    return instructions if isinstance(instructions, str) else None


def _held(recorded: Recorded, session: Sequence[Record]) -> list[str]:
    """The methods answered from the session file, in name order. A recorded session answers
    tools/list as recorded, and a handshake-era one answers server/discover as recorded (a miss
    when never asked): nothing is made up in their place."""
    held = recorded.methods() | {"tools/list"}
    if handshake_only(session):
        held.add("server/discover")
    return sorted(held)


def _identity(recorded: Recorded) -> tuple[str, str]:
    """(name, version) the snapshot server gives: the recorded ``initialize`` result's, else the
    identity stamped on the recorded answers."""
    name, version = server_identity(recorded.records)
    info = (recorded.initialize or {}).get("serverInfo")
    if isinstance(info, dict):
        name, version = str(info.get("name", name)), str(info.get("version", version))
    return name, version


@dataclass(frozen=True, slots=True, kw_only=True)
class _Handlers:
    """The snapshot server's request handlers: each session answered from its place in the recording."""

    recorded: Recorded
    tools: list[Any]
    places: Sessions
    start: _Replay
    on_miss: OnMiss | None

    def replay(self, ctx: ServerRequestContext[Any]) -> _Replay:
        return self.places.place(ctx, self.start)

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: sdk.types.PaginatedRequestParams | None
    ) -> sdk.types.ListToolsResult:
        return sdk.types.ListToolsResult(tools=self.tools)

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: sdk.types.CallToolRequestParams
    ) -> HandlerResult:
        calls = self.replay(ctx).calls
        calls.last = None
        response = answer(calls, params.name, dict(params.arguments or {}), self.on_miss)
        if calls.last is not None:
            await notify(ctx, self.recorded.notes.get(calls.last.index, ()))
        try:
            sdk.types.CallToolResult.model_validate(response)
        except ValueError:
            response = tool_error(f"the recorded response of {params.name!r} is not a valid CallToolResult")
        return shaped(ctx, response)

    async def asked(self, ctx: ServerRequestContext[Any], params: Any) -> HandlerResult:
        """Any other request: the recorded answer to the same method and params."""
        given = without_meta(dict(ctx.params or {}))
        try:
            response = self.replay(ctx).asked.serve(ctx.method, given, live=None, check=False)
        except SnapshotMissError as miss:
            raise sdk.MCPError(code=MISS_CODE, message=miss_message(ctx.method, given, miss)) from None
        await notify(ctx, response.get("notifications", ()))
        raise_recorded(response)
        result = response.get("result")
        return shaped(ctx, result if isinstance(result, dict) else {})


def handshake_only(session: Sequence[Record] | None) -> bool:
    """Whether the recorded server spoke only the handshake era (the recording holds an
    ``initialize``): then so does the snapshot, and a client that opens with the 2026
    revision's ``server/discover`` gets the recorded answer and falls back as it did."""
    return any(record.tool == "initialize" for record in session or ())


def miss_log(path: str) -> OnMiss:
    """Append each miss to ``path`` as one canonical JSON line ``{"args": ..., "tool": ...}``.

    The file is opened for each miss (append, flushed on close), so a reader sees whole lines
    while the server runs, and a file that cannot be written is refused before the server starts.
    """
    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as err:
        raise InputError(f"cannot write the misses file: {err.strerror}", path=path) from err

    def log(tool: str, args: dict[str, Any]) -> None:
        with open(path, "a", encoding="utf-8") as out:
            out.write(canonical({"tool": tool, "args": args}) + "\n")

    return log


def load_checked(path: str, lock: ToolLock | None) -> tuple[tuple[Record, ...], tuple[Record, ...] | None]:
    """The recording at ``path`` and its session file, after the checks ``serve`` makes before it
    starts: each against ``lock`` when one is given (:func:`check_lock`, :func:`check_session_lock`)."""
    records = load_records(path)
    session = load_session(path)
    if lock is not None:
        check_lock(records, lock)
        check_session_lock(path, session, lock)
    return records, session
