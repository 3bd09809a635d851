"""What a recording proxy learns from watching one MCP session's messages go by.

The proxy hands a copy of each message to a :class:`Session`, which pairs each
``tools/call`` request with the answer the *client* will take for it, and keeps the tools'
contracts from the last ``tools/list`` answer. The client's reading is the MCP SDK's
(:mod:`toolreplay.capture.wire`): an answer it refuses (a batch, an id ``4.0``) answers
nothing, a second answer to the same request is dropped, ``"1"`` answers ``1``, and a
request the client cancelled takes no answer. A message the session cannot read is
still passed on, and a warning says it was not looked at.

JSON-RPC ids are per direction: a request from the client and one from the server (a
sampling request) may share an id, so only client requests are paired with server answers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from toolreplay import sdk
from toolreplay.canonical import canonical, decode
from toolreplay.capture import wire
from toolreplay.capture.exchange import EXCHANGED, Exchange, notification, progress_token
from toolreplay.contracts.definitions import ToolDefinition, import_definitions
from toolreplay.contracts.lock import ToolContract, ToolLock
from toolreplay.contracts.text import text_of_tool
from toolreplay.errors import InputError
from toolreplay.escape import quote
from toolreplay.limits import MAX_RECORD_BYTES
from toolreplay.transcript import Record

#: Where the 2026 protocol revision stamps the server's identity on a result.
SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """One answered ``tools/call``: what becomes a transcript record.

    ``ident`` is the request's id as the client sent it. ``unkept`` says why the answer the
    client would take cannot be recorded as sent (then ``response`` is empty): the proxy
    answers the client with an error instead, and records that.
    """

    tool: str
    args: dict[str, Any]
    response: dict[str, Any]
    fingerprint: str | None
    ident: Any = None
    unkept: str = ""
    #: the digest of the tool's contract text as the server last listed it
    text_digest: str | None = None
    #: the notifications the server sent while it answered, in order (capture/exchange.py)
    notifications: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Observed:
    """What one message meant: a finished call, a new tool list, and what to warn about."""

    calls: tuple[Call, ...] = ()
    tools_listed: bool = False
    #: answered requests other than tools/call (capture/exchange.py)
    exchanges: tuple[Exchange, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(slots=True)
class _Pending:
    method: str
    params: dict[str, Any]
    ident: Any = None
    notifications: list[dict[str, Any]] = field(default_factory=list)

    def named(self) -> str:
        """A ``tools/call`` as messages name it: ``'tool' (id N)``."""
        return f"{quote(str(self.params.get('name')))} (id {canonical(self.ident)})"


@dataclass(slots=True)
class Session:
    """The state of one MCP session as seen by the proxy.

    ``check_result`` is asked about every recorded ``tools/call`` result and returns a
    problem (a string) when the result is not a valid ``CallToolResult``; the call is
    recorded as sent all the same, and the problem becomes a warning.
    """

    check_result: Callable[[dict[str, Any]], str | None] = lambda result: None
    version: str = ""
    contracts: dict[str, ToolContract] = field(default_factory=dict)
    _pending: dict[str, _Pending] = field(default_factory=dict)
    _page: dict[str, ToolContract] = field(default_factory=dict)

    def from_client(self, raw: bytes, channel: str = "") -> Observed:
        """Look at a line the client sent to the server.

        ``channel`` keeps exchanges apart whose ids may repeat (each HTTP request of the
        Streamable HTTP transport is answered on its own response); stdio has one.
        """
        messages, problem = _messages(raw)
        if problem:
            return Observed(warnings=(problem,))
        warnings = [self._read_client(message, channel) for message in messages]
        return Observed(warnings=tuple(warning for warning in warnings if warning))

    def _read_client(self, message: dict[str, Any], channel: str) -> str:
        """Take one message of the client's as an MCP peer reads it; a warning, or ""."""
        read = wire.read_decoded(message)
        if read is None:  # a method [1], params that are not an object...
            return _NOT_JSONRPC
        if isinstance(read, sdk.mcp_types.JSONRPCNotification):
            return self._client_notification(read.method, message, channel)
        if isinstance(read, sdk.mcp_types.JSONRPCRequest) and _paired(read.method):
            return self._ask(read.method, message, channel)
        return ""

    def _client_notification(self, method: str, message: dict[str, Any], channel: str) -> str:
        """A cancellation forgets its request; an id the SDK does not take is warned about."""
        if method == "notifications/cancelled":
            self._cancel(message, channel)
        elif "id" in message and _paired(method):
            # an id 4.0, true or null: the SDK reads a notification, which nothing answers
            return (
                f"{method} with id {quote(canonical(message['id']))} is not a request an MCP"
                " peer accepts (ids are integers or strings); passed on, not recorded"
            )
        return ""

    def _ask(self, method: str, message: dict[str, Any], channel: str) -> str:
        """Remember a request until its answer; a problem when it cannot be paired."""
        ident = message["id"]
        key = channel + wire.correlation(ident)
        if key in self._pending:
            # which request an answer is for cannot be told: neither is recorded
            self._pending[key] = _Pending(method="", params={})
            return (
                f"request id {quote(canonical(ident))} is used again before its answer;"
                " neither request is recorded"
            )
        params = message.get("params")
        self._pending[key] = _Pending(
            method=method, params=params if isinstance(params, dict) else {}, ident=ident
        )
        return ""

    def _cancel(self, message: dict[str, Any], channel: str) -> None:
        """A cancelled request takes no answer: its sender ignores one that comes after."""
        params = message.get("params")
        ident = wire.as_request_id(params.get("requestId") if isinstance(params, dict) else None)
        if ident is not None:
            self._pending.pop(channel + wire.correlation(ident), None)

    def from_server(self, raw: bytes, channel: str = "", *, first_answers: bool = False) -> Observed:
        """Look at a line the server sent to the client; answered calls come back in order.

        With ``first_answers`` the first answer on ``channel`` answers its request whatever
        its id (the SDK's client takes an HTTP request's event stream so).
        """
        if not raw.strip():
            return Observed()
        try:
            value = decode(raw, max_bytes=MAX_RECORD_BYTES, what="message")
        except InputError as err:
            return self._unreadable(raw, err.problem, channel, first_answers)
        return self._decoded(value, channel, first_answers)

    def _decoded(self, value: Any, channel: str, first_answers: bool) -> Observed:
        """Look at a message of the server's the strict decoder read."""
        if _is_batch(value):
            return Observed(warnings=(self._batch(value, channel),))
        message = wire.read_decoded(value)
        if message is None:
            return Observed(warnings=(_NOT_JSONRPC,))
        self._remember_version(value)
        if isinstance(message, sdk.mcp_types.JSONRPCNotification):
            self._notified(value, channel)
            return Observed()
        if not isinstance(message, sdk.mcp_types.JSONRPCResponse | sdk.mcp_types.JSONRPCError):
            return Observed()  # a request of the server's own
        return self._response(value, message, channel, first_answers)

    def _response(self, value: dict[str, Any], message: Any, channel: str, first_answers: bool) -> Observed:
        """What an answer the client takes means: a finished call, an exchange, or nothing."""
        pending = self._answered(message.id, channel, first_answers)
        if pending is None or not pending.method:
            return Observed()
        if pending.method != "tools/call":
            exchanges = (_exchange(pending, value, message),)
            if pending.method == "tools/list":
                took, problems = self._take_tools(pending.params, value)
                return Observed(tools_listed=took, warnings=problems, exchanges=exchanges)
            return Observed(exchanges=exchanges)
        call, problem = self._call(pending, message)
        return Observed(calls=(call,) if call is not None else (), warnings=(problem,) if problem else ())

    def _notified(self, message: dict[str, Any], channel: str) -> None:
        """Keep a notification with the request it came with: a progress notification with the
        request that asked under its token, any other with the one request waiting on ``channel``."""
        waiting = self._waiting(message, channel)
        if len(waiting) == 1 and waiting[0].method:
            waiting[0].notifications.append(notification(message))

    def _waiting(self, message: dict[str, Any], channel: str) -> list[_Pending]:
        """The requests on ``channel`` a notification may come with (a progress one: those that
        asked under its token)."""
        params = message.get("params")
        waiting = [pending for key, pending in self._pending.items() if key.startswith(channel)]
        if message.get("method") != "notifications/progress" or not isinstance(params, dict):
            return waiting
        token = canonical(params.get("progressToken"))
        return [pending for pending in waiting if canonical(progress_token(pending.params)) == token]

    def _answered(self, ident: Any, channel: str, first_answers: bool) -> _Pending | None:
        """Take the request an answer with ``ident`` answers for the client, if one waits."""
        if first_answers:
            key = next((key for key in self._pending if key.startswith(channel)), None)
        else:
            key = None if ident is None else channel + wire.correlation(ident)
        return None if key is None else self._pending.pop(key, None)

    def _unreadable(self, raw: bytes, problem: str, channel: str, first_answers: bool) -> Observed:
        """A line the strict decoder refuses: does the client take it as an answer all the same?"""
        pending = self._raw_answered(raw, channel, first_answers)
        tool, args = _called(pending.params) if pending is not None else ("", None)
        if pending is None or pending.method != "tools/call" or not tool or args is None:
            return Observed(warnings=(f"unreadable: {problem}; passed on, not looked at",))
        fingerprint, _ = self._listed(tool)
        call = Call(
            tool=tool, args=args, response={}, fingerprint=fingerprint, ident=pending.ident, unkept=problem
        )
        return Observed(calls=(call,))

    def _raw_answered(self, raw: bytes, channel: str, first_answers: bool) -> _Pending | None:
        """The request a line the strict decoder refuses answers for the client, if one waits."""
        message = wire.read_raw(raw)
        if not isinstance(message, sdk.mcp_types.JSONRPCResponse | sdk.mcp_types.JSONRPCError):
            return None
        return self._answered(message.id, channel, first_answers)

    def _batch(self, items: list[Any], channel: str) -> str:
        """A batch answers nothing for an MCP client (the SDK's refuses it); say which calls it meant to."""
        answered = [self._call_answered(item, channel) for item in items]
        meant = [pending.named() for pending in answered if pending is not None]
        said = f" (it meant to answer tools/call {', '.join(meant)}: not recorded)" if meant else ""
        return f"a JSON-RPC batch, which an MCP client refuses{said}; passed on, not looked at"

    def _call_answered(self, item: Any, channel: str) -> _Pending | None:
        """The ``tools/call`` on ``channel`` that a batch's ``item`` would answer, if one waits."""
        if not isinstance(item, dict) or not isinstance(item.get("id"), int | str):
            return None
        pending = self._pending.get(channel + wire.correlation(item["id"]))
        return pending if pending is not None and pending.method == "tools/call" else None

    def awaits_call(self, channel: str = "") -> bool:
        """Whether a ``tools/call`` on ``channel`` waits for its answer (no SDK needed to tell)."""
        return any(key.startswith(channel) and p.method == "tools/call" for key, p in self._pending.items())

    def unanswered(self, channel: str = "") -> tuple[str, ...]:
        """The ``tools/call`` requests on ``channel`` still waiting for an answer (forgotten now)."""
        keys = [key for key in self._pending if key.startswith(channel)]
        waiting = [self._pending.pop(key) for key in keys]
        return tuple(pending.named() for pending in waiting if pending.method == "tools/call")

    def lock(self) -> ToolLock:
        """The contracts of the tools the server listed last."""
        return ToolLock.of(self.contracts.values())

    def _remember_version(self, message: dict[str, Any]) -> None:
        result = message.get("result")
        if not isinstance(result, dict):
            return
        info = result.get("serverInfo")  # the initialize handshake
        if not isinstance(info, dict):
            info = stamped_info(result)  # the 2026 revision's stamp
        if isinstance(info, dict) and isinstance(info.get("version"), str):
            self.version = info["version"]

    def _take_tools(self, params: dict[str, Any], message: dict[str, Any]) -> tuple[bool, tuple[str, ...]]:
        """Take a tools/list answer: whether it listed tools, and the problems of its definitions."""
        result = message.get("result")
        tools = result.get("tools") if isinstance(result, dict) else None
        if not isinstance(tools, list):
            return False, ()
        if not params.get("cursor"):
            self._page = {}  # a first page starts the list afresh
        imported = import_definitions(_definitions(tools), version=self.version, path="tools/list")
        self._page.update((contract.name, contract) for contract in imported.contracts)
        self.contracts = dict(self._page)
        return True, imported.warnings

    def _call(self, pending: _Pending, message: Any) -> tuple[Call | None, str]:
        tool, args = _called(pending.params)
        if not tool:
            return None, "a tools/call without a tool name was answered; not recorded"
        if args is None:
            return None, f"tools/call of {quote(tool)} has arguments that are not an object; not recorded"
        response, problem = self._call_response(tool, message)
        if response is None:
            return None, ""  # not an answer yet: the client will call again with the input
        fingerprint, text_digest = self._listed(tool)
        call = Call(
            tool=tool,
            args=args,
            response=response,
            fingerprint=fingerprint,
            ident=pending.ident,
            text_digest=text_digest,
            notifications=tuple(pending.notifications),
        )
        return call, problem

    def _listed(self, tool: str) -> tuple[str | None, str | None]:
        """The fingerprint and contract-text digest of ``tool`` as last listed (None: not listed)."""
        contract = self.contracts.get(tool)
        if contract is None:
            return None, None
        return contract.fingerprint, contract.text_digest

    def _call_response(self, tool: str, message: Any) -> tuple[dict[str, Any] | None, str]:
        """The response a tools/call answer records (None: not an answer yet), and its problem."""
        if isinstance(message, sdk.mcp_types.JSONRPCError):
            # as the client reads it: the code an integer, the data kept
            return {"error": message.error.model_dump(exclude_none=True)}, ""
        result: dict[str, Any] = message.result
        if result.get("resultType") == "input_required":
            return None, ""
        said = self.check_result(result)
        if not said:
            return result, ""
        return result, (
            f"the result of tools/call of {quote(tool)} is not a valid CallToolResult ({said});"
            " recorded as sent"
        )


_NOT_JSONRPC = "not a JSON-RPC message an MCP peer reads; passed on, not looked at"


def stamped_info(result: dict[str, Any]) -> dict[str, Any] | None:
    """The server's identity the 2026 revision stamps on a result's ``_meta``, if it is there."""
    meta = result.get("_meta")
    info = meta.get(SERVER_INFO_META) if isinstance(meta, dict) else None
    return info if isinstance(info, dict) else None


def _paired(method: str) -> bool:
    """Whether the answer to a request for ``method`` is recorded (the recording or the session file)."""
    return method == "tools/call" or method in EXCHANGED


def _exchange(pending: _Pending, value: dict[str, Any], message: Any) -> Exchange:
    """The answer to a request other than tools/call: the result as sent, the error as read."""
    if isinstance(message, sdk.mcp_types.JSONRPCError):
        response: dict[str, Any] = {"error": message.error.model_dump(exclude_none=True)}
    else:
        response = {"result": value["result"]}
    return Exchange(
        method=pending.method,
        params=pending.params,
        response=response,
        notifications=tuple(pending.notifications),
    )


def _definitions(tools: list[Any]) -> list[ToolDefinition]:
    """The definitions of the listed tools that have a name (others are not tools)."""
    return [
        ToolDefinition(
            name=tool["name"],
            schema=tool.get("inputSchema", {}),
            shape="mcp",
            annotations=tool["annotations"] if isinstance(tool.get("annotations"), dict) else None,
            text=text_of_tool(tool),
        )
        for tool in tools
        if isinstance(tool, dict) and isinstance(tool.get("name"), str) and tool["name"]
    ]


def _is_batch(value: Any) -> bool:
    """Whether a decoded message is a JSON-RPC batch: a non-empty array of JSON-RPC messages."""
    return isinstance(value, list) and bool(value) and all(_is_jsonrpc(item) for item in value)


def _is_jsonrpc(item: Any) -> bool:
    return isinstance(item, dict) and item.get("jsonrpc") == "2.0"


def _called(params: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """The tool a ``tools/call`` names ("" when none) and its arguments (None when not an object)."""
    tool = params.get("name")
    args = params.get("arguments", {})
    if args is None:
        args = {}
    return (tool if isinstance(tool, str) else ""), (args if isinstance(args, dict) else None)


def _messages(raw: bytes) -> tuple[list[dict[str, Any]], str]:
    """The JSON-RPC messages on a line (a batch is several), or a problem saying why there are none."""
    if not raw.strip():
        return [], ""
    try:
        value = decode(raw, max_bytes=MAX_RECORD_BYTES, what="message")
    except InputError as err:
        return [], f"unreadable: {err.problem}; passed on, not looked at"
    return _jsonrpc_items(value)


def _jsonrpc_items(value: Any) -> tuple[list[dict[str, Any]], str]:
    """A decoded line's JSON-RPC messages (a batch is several); none when one item is not one."""
    items = value if isinstance(value, list) else [value]
    messages = [item for item in items if _is_jsonrpc(item)]
    if not messages or len(messages) != len(items):
        return [], _NOT_JSONRPC
    return messages, ""


def listed_lock(records: Iterable[Record]) -> ToolLock | None:
    """The contracts of the tools a session file's last ``tools/list`` listed, as ``record --lock``
    wrote them when it was recorded (the version the server's answers gave); None when it lists none."""
    session = Session()
    listed = False
    for record in records:
        result = record.response.get("result")
        message = {"result": result} if isinstance(result, dict) else {}
        session._remember_version(message)  # as the proxy does: every answer may stamp it
        if record.tool == "tools/list":
            listed = session._take_tools(record.args, message)[0] or listed
    return session.lock() if listed else None
