"""What an MCP client makes of a JSON-RPC message: the MCP SDK's own models decide.

The recording holds what the client was answered, so the proxy reads each message as the
SDK's client reads it (``mcp_types.jsonrpc_message_adapter``) and pairs answers with
requests as its dispatcher does (``coerce_request_id``: the string ``"7"`` answers the
request ``7``). A batch, an id that is neither an integer nor a string (``4.0``, ``true``),
a result that is not an object: the SDK's client refuses the message, so it answers nothing.
"""

from __future__ import annotations

from typing import Any

from mcp.shared.dispatcher import as_request_id, coerce_request_id
from mcp_types import (
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from toolreplay.canonical import canonical

__all__ = [
    "JSONRPCError",
    "JSONRPCNotification",
    "JSONRPCRequest",
    "JSONRPCResponse",
    "as_request_id",
    "correlation",
    "read_decoded",
    "read_raw",
]


def read_decoded(value: Any) -> JSONRPCMessage | None:
    """The message a client reads from a value the strict decoder gave (None: it refuses it).

    The strict decoder gives the value the SDK's JSON parser would (it refuses duplicate
    keys, ``NaN`` and overflowing numbers, where the two could differ), so validating the
    decoded value is validating the line, without parsing it twice.
    """
    try:
        return jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValidationError:
        return None


def read_raw(raw: bytes) -> JSONRPCMessage | None:
    """The message a client reads from a line the strict decoder refused (None: it refuses it too)."""
    try:
        return jsonrpc_message_adapter.validate_json(raw, by_name=False)
    except ValidationError:
        return None


def correlation(ident: int | str) -> str:
    """The key under which a client pairs an answer with its request (``"7"`` and ``7`` are one)."""
    return canonical(coerce_request_id(ident))
