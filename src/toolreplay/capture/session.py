"""What a recording proxy learns from watching one MCP session's messages go by.

The proxy forwards every message unchanged and hands a copy of each to a :class:`Session`,
which pairs each ``tools/call`` request with its answer and keeps the tools' contracts from
the last ``tools/list`` answer. It never decides what is forwarded: a message it cannot
read is still passed on, and only a warning says it was not looked at.

JSON-RPC ids are per direction: a request from the client and one from the server (a
sampling request) may share an id, so only client requests are paired with server answers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from toolreplay.canonical import MAX_RECORD_BYTES, canonical, decode
from toolreplay.contracts.definitions import ToolDefinition, import_definitions
from toolreplay.contracts.lock import ToolContract, ToolLock
from toolreplay.contracts.text import text_of_tool
from toolreplay.errors import InputError
from toolreplay.findings import quote

#: Where the 2026 protocol revision stamps the server's identity on a result.
SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """One answered ``tools/call``: what becomes a transcript record."""

    tool: str
    args: dict[str, Any]
    response: dict[str, Any]
    fingerprint: str | None
    #: the digest of the tool's contract text as the server last listed it
    text_digest: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Observed:
    """What one message meant: a finished call, a new tool list, and what to warn about."""

    calls: tuple[Call, ...] = ()
    tools_listed: bool = False
    warnings: tuple[str, ...] = ()


@dataclass(slots=True)
class _Pending:
    method: str
    params: dict[str, Any]


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
        warnings: list[str] = []
        for message in messages:
            method = message.get("method")
            if "id" in message and method in ("tools/call", "tools/list"):
                key = channel + canonical(message["id"])
                if key in self._pending:
                    # which request an answer is for cannot be told: neither is recorded
                    warnings.append(
                        f"request id {quote(canonical(message['id']))} is used again before its answer;"
                        " neither request is recorded"
                    )
                    self._pending[key] = _Pending(method="", params={})
                    continue
                params = message.get("params")
                self._pending[key] = _Pending(
                    method=method, params=params if isinstance(params, dict) else {}
                )
        return Observed(warnings=tuple(warnings))

    def from_server(self, raw: bytes, channel: str = "") -> Observed:
        """Look at a line the server sent to the client; answered calls come back in order."""
        messages, problem = _messages(raw)
        if problem:
            return Observed(warnings=(problem,))
        calls: list[Call] = []
        warnings: list[str] = []
        listed = False
        for message in messages:
            self._remember_version(message)
            if "method" in message or "id" not in message:
                continue  # a notification or a request of the server's own
            pending = self._pending.pop(channel + canonical(message["id"]), None)
            if pending is None or not pending.method:
                continue
            if pending.method == "tools/list":
                took, problems = self._take_tools(pending.params, message)
                listed = took or listed
                warnings.extend(problems)
                continue
            call, problem = self._call(pending.params, message)
            if call is not None:
                calls.append(call)
            if problem:
                warnings.append(problem)
        return Observed(calls=tuple(calls), tools_listed=listed, warnings=tuple(warnings))

    def lock(self) -> ToolLock:
        """The contracts of the tools the server listed last."""
        return ToolLock.of(self.contracts.values())

    def _remember_version(self, message: dict[str, Any]) -> None:
        result = message.get("result")
        if not isinstance(result, dict):
            return
        info = result.get("serverInfo")  # the initialize handshake
        meta = result.get("_meta")
        if not isinstance(info, dict) and isinstance(meta, dict):
            info = meta.get(SERVER_INFO_META)  # the 2026 revision's stamp
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
        definitions = [
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
        imported = import_definitions(definitions, version=self.version, path="tools/list")
        self._page.update((contract.name, contract) for contract in imported.contracts)
        self.contracts = dict(self._page)
        return True, imported.warnings

    def _call(self, params: dict[str, Any], message: dict[str, Any]) -> tuple[Call | None, str]:
        tool = params.get("name")
        if not isinstance(tool, str) or not tool:
            return None, "a tools/call without a tool name was answered; not recorded"
        args = params.get("arguments", {})
        if args is None:
            args = {}
        if not isinstance(args, dict):
            return None, f"tools/call of {quote(tool)} has arguments that are not an object; not recorded"
        problem = ""
        if "error" in message:
            error = message["error"]
            if not isinstance(error, dict):
                return None, f"the error answering tools/call of {quote(tool)} is not an object; not recorded"
            response: dict[str, Any] = {"error": {"code": error.get("code"), "message": error.get("message")}}
        else:
            result = message.get("result")
            if not isinstance(result, dict):
                return None, f"the result of tools/call of {quote(tool)} is not an object; not recorded"
            if result.get("resultType") == "input_required":
                return None, ""  # not an answer yet: the client will call again with the input
            response = result
            said = self.check_result(result)
            if said:
                problem = (
                    f"the result of tools/call of {quote(tool)} is not a valid CallToolResult ({said});"
                    " recorded as sent"
                )
        contract = self.contracts.get(tool)
        call = Call(
            tool=tool,
            args=args,
            response=response,
            fingerprint=contract.fingerprint if contract is not None else None,
            text_digest=contract.text_digest if contract is not None else None,
        )
        return call, problem


def _messages(raw: bytes) -> tuple[list[dict[str, Any]], str]:
    """The JSON-RPC messages on a line (a batch is several), or a problem saying why there are none."""
    if not raw.strip():
        return [], ""
    try:
        value = decode(raw, max_bytes=MAX_RECORD_BYTES, what="message")
    except InputError as err:
        return [], f"unreadable: {err.problem}; passed on, not looked at"
    items = value if isinstance(value, list) else [value]
    messages = [item for item in items if isinstance(item, dict) and item.get("jsonrpc") == "2.0"]
    if not messages or len(messages) != len(items):
        return [], "not a JSON-RPC 2.0 message; passed on, not looked at"
    return messages, ""
