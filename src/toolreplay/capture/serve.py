"""The snapshot server: an MCP server that answers from a recording and runs nothing.

``tools/list`` names the recorded tools (with their input schemas and behaviour hints
from a tool lock when one is given). ``tools/call`` is answered by
:class:`toolreplay.library.snapshot.Snapshot`: the k-th identical call gets the k-th
recorded response, the last one after that. An unrecorded call is a tool error whose text
starts ``snapshot miss:``; a recorded JSON-RPC error is answered as that error again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from toolreplay.canonical import canonical
from toolreplay.capture.session import SERVER_INFO_META
from toolreplay.chain import verify_stream
from toolreplay.contracts.lock import ToolLock
from toolreplay.errors import InputError, ToolreplayError
from toolreplay.library.errors import ContractTextDriftError, SnapshotMissError, ToolDriftError
from toolreplay.library.snapshot import Snapshot
from toolreplay.transcript import Record, open_input, read_links, read_transcript

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

#: What ``tools/call`` answers with when the recording does not hold the call.
MISS_PREFIX = "snapshot miss: "
#: The input schema of a recorded tool when no lock says more: any object.
ANY_OBJECT: dict[str, Any] = {"type": "object"}


class BrokenRecordingError(ToolreplayError):
    """A sealed recording whose chain does not verify: it is not served."""


def load_records(path: str) -> tuple[Record, ...]:
    """The records of a transcript or sealed transcript; a sealed one must verify."""
    if path.endswith(".sealed.jsonl"):
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
            tool["annotations"] = {
                "readOnlyHint": not contract.mutates,
                "destructiveHint": contract.mutates,
                "idempotentHint": contract.idempotent,
            }
            tool.update(_said(contract.text))
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
    from mcp.shared.exceptions import MCPError

    try:
        response = snapshot.serve(tool, args, live=None, check=False)
    except SnapshotMissError as miss:
        if on_miss is not None:
            on_miss(tool, args)
        return tool_error(MISS_PREFIX + str(miss))
    error = response.get("error")
    if set(response) == {"error"} and isinstance(error, dict):
        code, message = error.get("code"), error.get("message")
        raise MCPError(
            code=code if isinstance(code, int) else -32603,
            message=message if isinstance(message, str) else "",
            data=error.get("data"),
        )
    return response


def tool_error(text: str) -> dict[str, Any]:
    """A ``CallToolResult`` object that reports a tool error."""
    return {"content": [{"type": "text", "text": text}], "isError": True}


def build_server(
    records: Sequence[Record], lock: ToolLock | None, on_miss: OnMiss | None = None
) -> Server[Any]:
    """The low-level SDK server that answers from ``records`` (``on_miss`` hears of each miss)."""
    import mcp.types as types
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server

    snapshot = Snapshot(records)
    tools = [types.Tool.model_validate(tool) for tool in tool_list(records, lock)]
    name, version = server_identity(records)

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        response = answer(snapshot, params.name, dict(params.arguments or {}), on_miss)
        try:
            # a model, so the SDK writes it in the shape the session's protocol revision wants
            return types.CallToolResult.model_validate(response)
        except ValueError:
            return types.CallToolResult.model_validate(
                tool_error(f"the recorded response of {params.name!r} is not a valid CallToolResult")
            )

    return Server(name, version=version, on_list_tools=list_tools, on_call_tool=call_tool)


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


def serve_stdio(server: Server[Any]) -> None:
    """Serve one session over stdin and stdout until the client closes it."""
    import anyio
    from mcp.server.stdio import stdio_server

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


def parse_listen(listen: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as (host, port)."""
    host, sep, port = listen.rpartition(":")
    # (isascii: str.isdigit takes digits int() refuses, such as "²"; five digits at most)
    if (
        not sep
        or not host
        or not (port.isascii() and port.isdigit() and len(port) <= 5)
        or not 0 < int(port) < 65536
    ):
        raise InputError(f"--listen {listen!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


def serve_http(server: Server[Any], host: str, port: int) -> None:
    """Serve Streamable HTTP at ``http://HOST:PORT/mcp`` until SIGINT or SIGTERM."""
    from toolreplay.capture.http import run_until_stopped

    run_until_stopped(server.streamable_http_app(host=host), host, port)
