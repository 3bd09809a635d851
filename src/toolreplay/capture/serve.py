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
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from toolreplay import sdk
from toolreplay.analyses.difference import clipped, excerpts
from toolreplay.analyses.fingerprint_diff import compare_locks
from toolreplay.analyses.volatile import Volatile
from toolreplay.canonical import canonical
from toolreplay.capture.exchange import (
    CAPABILITY_METHODS,
    EXCHANGED,
    SUBSCRIBE_METHODS,
    progress_token,
    without_meta,
)
from toolreplay.capture.session import SERVER_INFO_META, listed_lock
from toolreplay.chain import verify_stream
from toolreplay.contracts.lock import ToolLock
from toolreplay.errors import InputError, ToolreplayError
from toolreplay.escape import inert, quote
from toolreplay.files import SEALED_SUFFIX, session_path
from toolreplay.library.errors import ContractTextDriftError, SnapshotMissError, ToolDriftError
from toolreplay.library.snapshot import Snapshot
from toolreplay.transcript import Record, open_input, read_links, read_transcript

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
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
    if listed is None:
        return
    pinned = ToolLock.of(c for name, c in lock.tools.items() if name in listed.tools)
    differences = compare_locks(pinned, listed)
    if not differences:
        return
    tool = differences[0].tool
    what = "; ".join(d.text() for d in differences if d.tool == tool)
    raise SessionLockError(
        f"{session_path(path)}: its tools/list disagrees with the lock for tool {quote(tool)}: {what}"
    )


def check_lock(records: Sequence[Record], lock: ToolLock) -> None:
    """Raise :class:`ToolDriftError` for the first recorded call whose fingerprint the lock does not
    have, or :class:`ContractTextDriftError` for one whose contract-text digest it does not have."""
    for record in records:
        contract = lock.tools.get(record.tool)
        if record.fingerprint is not None:
            live = contract.fingerprint if contract is not None else None
            if live != record.fingerprint:
                raise ToolDriftError(
                    tool=record.tool, recorded=record.fingerprint, live=live, index=record.index
                )
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
        tool: dict[str, Any] = {"name": name, "inputSchema": ANY_OBJECT}
        if contract is not None:
            tool["inputSchema"] = contract.schema if isinstance(contract.schema, dict) else ANY_OBJECT
            tool.update(_said(contract.text))  # annotations only as the server sent them: none invented
        tools.append(tool)
    return tools


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
        meta = record.response.get("_meta")
        info = meta.get(SERVER_INFO_META) if isinstance(meta, dict) else None
        if isinstance(info, dict) and isinstance(info.get("name"), str):
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
        _raise_recorded(response)
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
                index, notes = record.args.get("index"), record.response.get("notifications")
                if isinstance(index, int) and isinstance(notes, list):
                    self.notes[index] = notes
                continue
            self.asked.append(record)
            result = record.response.get("result")
            if record.tool == "initialize" and self.initialize is None and isinstance(result, dict):
                self.initialize = result
        if self.initialize is None:
            self.initialize = _from_discover(self.asked)

    def methods(self) -> set[str]:
        """The methods served from the session file: those it holds, and those the server declared."""
        held = {record.tool for record in self.asked if record.tool in EXCHANGED}
        capabilities = (self.initialize or {}).get("capabilities")
        if isinstance(capabilities, dict):
            for name, methods in CAPABILITY_METHODS.items():
                if name in capabilities:
                    held.update(methods)
            resources = capabilities.get("resources")
            if isinstance(resources, dict) and resources.get("subscribe"):
                held.update(SUBSCRIBE_METHODS)
        held.discard("initialize")
        return held


def _from_discover(asked: Sequence[Record]) -> dict[str, Any] | None:
    """The ``initialize`` result a session recorded with the 2026 revision stands for: the recorded
    ``server/discover`` answer's capabilities and instructions, and the identity its results were
    stamped with (what a client of that revision reads as the server's info); None without one."""
    for record in asked:
        result = record.response.get("result")
        if record.tool != "server/discover" or not isinstance(result, dict):
            continue
        out: dict[str, Any] = {"capabilities": result.get("capabilities", {})}
        meta = result.get("_meta")
        info = meta.get(SERVER_INFO_META) if isinstance(meta, dict) else None
        if isinstance(info, dict):
            out["serverInfo"] = info
        if isinstance(result.get("instructions"), str):
            out["instructions"] = result["instructions"]
        return out
    return None


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
    tools = [sdk.types.Tool.model_validate(tool) for tool in tool_list(records, lock)]
    name, version = server_identity(records)
    if recorded.initialize is not None and isinstance(recorded.initialize.get("serverInfo"), dict):
        info = recorded.initialize["serverInfo"]
        name, version = str(info.get("name", name)), str(info.get("version", version))
    places = sessions if sessions is not None else Sessions()
    # indexed once, before the first request: a volatile rule that cannot mask a recorded call's
    # arguments in time stops serve here, naming the rule
    start = _Replay(
        calls=Snapshot(recorded.records, volatile=recorded.volatile, path=path),
        asked=Snapshot(recorded.asked),
    )

    def replay(ctx: ServerRequestContext[Any]) -> _Replay:
        return places.place(ctx, start)

    async def list_tools(
        ctx: ServerRequestContext[Any], params: sdk.types.PaginatedRequestParams | None
    ) -> sdk.types.ListToolsResult:
        return sdk.types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: sdk.types.CallToolRequestParams
    ) -> HandlerResult:
        calls = replay(ctx).calls
        calls.last = None
        response = answer(calls, params.name, dict(params.arguments or {}), on_miss)
        if calls.last is not None:
            await _notify(ctx, recorded.notes.get(calls.last.index, ()))
        try:
            sdk.types.CallToolResult.model_validate(response)
        except ValueError:
            response = tool_error(f"the recorded response of {params.name!r} is not a valid CallToolResult")
        return _shaped(ctx, response)

    async def asked(ctx: ServerRequestContext[Any], params: Any) -> HandlerResult:
        """Any other request: the recorded answer to the same method and params."""
        given = without_meta(dict(ctx.params or {}))
        try:
            response = replay(ctx).asked.serve(ctx.method, given, live=None, check=False)
        except SnapshotMissError as miss:
            raise sdk.MCPError(code=MISS_CODE, message=miss_message(ctx.method, given, miss)) from None
        await _notify(ctx, response.get("notifications", ()))
        _raise_recorded(response)
        result = response.get("result")
        return _shaped(ctx, result if isinstance(result, dict) else {})

    instructions = (recorded.initialize or {}).get("instructions")
    # the SDK's own server/discover answer (a handshake-era recording holds none) says them too
    server: Server[Any] = sdk.Server(
        name,
        version=version,
        instructions=instructions if isinstance(instructions, str) else None,
        on_list_tools=list_tools,
        cache_hints=_cache_hints(),
    )
    server.add_request_handler("tools/call", sdk.types.CallToolRequestParams, call_tool)
    if session is not None:
        # a recorded session answers tools/list as recorded, and a handshake-era one answers
        # server/discover as recorded (a miss when never asked): nothing is made up in their place
        held = recorded.methods() | {"tools/list"}
        if handshake_only(session):
            held.add("server/discover")
        for method in sorted(held):
            server.add_request_handler(method, _params_model(method), asked)
    if recorded.initialize is not None:
        server.middleware.append(_Initialize(recorded.initialize))
    return server


class _Initialize:
    """Answers ``initialize`` with the recorded result; only the protocol version is the SDK's
    (it negotiates with this client, and the session goes on in that version)."""

    def __init__(self, result: dict[str, Any]) -> None:
        self.result = result

    async def __call__(self, ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method != "initialize" or not isinstance(result, dict):
            return result
        return {**self.result, "protocolVersion": result.get("protocolVersion")}


def _cache_hints() -> dict[Any, Any]:
    """The SDK's own freshness hint (``sdk.CacheHint()``: immediately stale, private) for each method
    whose 2026 answer requires one: a recorded older answer gets it as the SDK's server would add it
    (a recorded ``ttlMs`` or ``cacheScope`` wins)."""
    return {method: sdk.CacheHint() for method in sdk.CACHEABLE_METHODS}


#: the fields of a result only the 2026 revision has (a handshake-era session never carries them)
MODERN_FIELDS = ("resultType", "cacheScope", "ttlMs")


def _shaped(ctx: ServerRequestContext[Any], result: dict[str, Any]) -> dict[str, Any]:
    """A recorded result as the SDK writes it for the session's protocol revision: as recorded,
    with the ``resultType`` the 2026 revision requires when the recorded server (older) sent none;
    in a handshake-era session, without the fields and the identity stamp only the 2026 revision
    has (the server recorded in that revision answers a handshake-era client without them)."""
    if ctx.protocol_version in sdk.MODERN_PROTOCOL_VERSIONS:
        return result if "resultType" in result else {**result, "resultType": "complete"}
    if not any(key in result for key in MODERN_FIELDS):
        return result
    out = {key: value for key, value in result.items() if key not in MODERN_FIELDS}
    meta = out.get("_meta")
    if isinstance(meta, dict) and SERVER_INFO_META in meta:
        rest = {key: value for key, value in meta.items() if key != SERVER_INFO_META}
        out.pop("_meta")
        if rest:
            out["_meta"] = rest
    return out


def _params_model(method: str) -> Any:
    """The SDK's model of ``method``'s params (they are validated as the real server's SDK would)."""
    models: dict[str, Any] = {
        "resources/read": sdk.types.ReadResourceRequestParams,
        "resources/subscribe": sdk.types.SubscribeRequestParams,
        "resources/unsubscribe": sdk.types.UnsubscribeRequestParams,
        "prompts/get": sdk.types.GetPromptRequestParams,
        "completion/complete": sdk.types.CompleteRequestParams,
        "logging/setLevel": sdk.types.SetLevelRequestParams,
        "server/discover": sdk.types.RequestParams,
    }
    return models.get(method, sdk.types.PaginatedRequestParams)


def _raise_recorded(response: dict[str, Any]) -> None:
    """Raise the recorded JSON-RPC error (``{"error": ...}``) as it was, ``data`` and all."""
    error = response.get("error")
    if "result" not in response and isinstance(error, dict):
        code, message = error.get("code"), error.get("message")
        raise sdk.MCPError(
            code=code if isinstance(code, int) else -32603,
            message=message if isinstance(message, str) else "",
            data=error.get("data"),
        )


async def _notify(ctx: ServerRequestContext[Any], notes: Any) -> None:
    """Send the recorded notifications of a request again, in order, on that request's stream.

    A progress notification goes under the progress token this request asked for (none
    asked: none sent); a log message goes as the SDK sends one (at the level the session asked for).
    """
    token = progress_token(dict(ctx.params or {}))
    for note in notes if isinstance(notes, list | tuple) else ():
        method = note.get("method") if isinstance(note, dict) else None
        params = note.get("params") if isinstance(note, dict) else None
        params = dict(params) if isinstance(params, dict) else {}
        try:
            if method == "notifications/message":
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # the SDK's deprecation of logging (2026-07-28)
                    await ctx.session.send_log_message(
                        params.get("level"),  # type: ignore[arg-type]
                        params.get("data"),
                        params.get("logger"),
                        related_request_id=ctx.request_id,
                    )
                continue
            if method == "notifications/progress":
                if token is None:
                    continue
                params["progressToken"] = token
            notification = sdk.TypeAdapter(sdk.types.ServerNotification).validate_python(
                {"method": method, "params": params}, by_name=False
            )
            await ctx.session.send_notification(notification, related_request_id=ctx.request_id)
        except sdk.ValidationError:
            said = f"a recorded notification {quote(str(method))} is not one the SDK can send; not sent"
            print(f"toolreplay: warning: {inert(said)}", file=sys.stderr)


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
