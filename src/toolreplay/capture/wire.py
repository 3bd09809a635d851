"""What an MCP client makes of a JSON-RPC message: the MCP SDK's own models decide.

The recording holds what the client was answered, so the proxy reads each message as the
SDK's client reads it (``mcp_types.jsonrpc_message_adapter``) and pairs answers with
requests as its dispatcher does (``coerce_request_id``: the string ``"7"`` answers the
request ``7``). A batch, an id that is neither an integer nor a string (``4.0``, ``true``),
a result that is not an object: the SDK's client refuses the message, so it answers nothing.

Importing the SDK takes longer than a server takes to answer ``initialize``, and the first
messages of a session (``initialize`` and its answer, which no recording can replace) need
none of it: the SDK is imported on first use, or by :func:`load` (``record`` calls it with the
recording, :mod:`toolreplay.capture.early`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolreplay import sdk
from toolreplay.canonical import canonical

if TYPE_CHECKING:
    from mcp_types import JSONRPCMessage

#: the SDK's parts this module uses (and :mod:`toolreplay.capture.session`: the message classes).
#: Only ``mcp_types``, the SDK's package of messages: importing any ``mcp.*`` module runs the
#: whole ``mcp`` package's import, three times as long (0.6 s of CPU taken from a starting server)
PARTS = ("mcp_types", "ValidationError")


def load() -> None:
    """Import the SDK's parts now (a command that will need them soon loads them under
    :func:`toolreplay.cli.loading.loading`, so the collector never walks them again)."""
    sdk.load(*PARTS)


def read_decoded(value: Any) -> JSONRPCMessage | None:
    """The message a client reads from a value the strict decoder gave (None: it refuses it).

    The strict decoder gives the value the SDK's JSON parser would (it refuses duplicate
    keys, ``NaN`` and overflowing numbers, where the two could differ), so validating the
    decoded value is validating the line, without parsing it twice.
    """
    try:
        message: JSONRPCMessage = sdk.mcp_types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except sdk.ValidationError:
        return None
    return message


def read_raw(raw: bytes) -> JSONRPCMessage | None:
    """The message a client reads from a line the strict decoder refused (None: it refuses it too)."""
    try:
        message: JSONRPCMessage = sdk.mcp_types.jsonrpc_message_adapter.validate_json(raw, by_name=False)
    except sdk.ValidationError:
        return None
    return message


def as_request_id(value: object) -> int | str | None:
    """A wire value as the SDK's dispatcher takes it for a request id (None: it is none; ``true``
    would be request 1). ``mcp.shared.dispatcher.as_request_id``'s rule, which
    tests/unit/test_wire.py holds this to on generated values (see :data:`PARTS` for why a copy)."""
    if isinstance(value, str | int) and not isinstance(value, bool):
        return value
    return None


def coerce_request_id(ident: int | str) -> int | str:
    """The id a dispatcher correlates (``"7"`` is ``7``): ``mcp.shared.dispatcher.coerce_request_id``'s
    rule, held to it as :func:`as_request_id` is."""
    if isinstance(ident, str):
        try:
            return int(ident)
        except ValueError:
            pass
    return ident


def correlation(ident: int | str) -> str:
    """The key under which a client pairs an answer with its request (``"7"`` and ``7`` are one)."""
    return canonical(coerce_request_id(ident))
