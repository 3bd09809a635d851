"""The MCP session beside the tool calls: what ``record`` keeps so ``serve`` is the server again.

A recording ``OUT`` holds one record per ``tools/call``; the session file ``OUT.mcp``
(``files.SESSION_SUFFIX``) holds the rest of what the server answered: the ``initialize``
result, every page of ``tools/list``, resources, prompts, completions, the logging level,
and the notifications the server sent while it answered a request. It is itself a
transcript (sealed when ``OUT`` is), so the strict reader and ``verify`` apply unchanged,
and readers of ``OUT`` alone (every analysis, older versions) never see it. Each record:

- ``tool``: the MCP method (``resources/read``);
- ``args``: the request's ``params`` as the client sent them, less ``_meta`` (progress
  tokens and request metadata differ from run to run);
- ``response``: ``{"result": ...}`` as the server sent it, or ``{"error": ...}`` as the
  client read it, and ``"notifications"``, the server's notifications for that request
  in the order sent, when there were any.

Notifications sent while a ``tools/call`` was answered are a record with ``tool``
``tools/call``, ``args`` ``{"index": N}`` (the call's record in ``OUT``) and a response
holding only ``"notifications"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: the requests whose answers the session file keeps (``tools/call`` goes to the recording itself)
EXCHANGED = frozenset(
    {
        "initialize",
        "server/discover",
        "tools/list",
        "resources/list",
        "resources/read",
        "resources/templates/list",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "logging/setLevel",
    }
)

#: which methods a capability the server declared in ``initialize`` stands for
CAPABILITY_METHODS: dict[str, tuple[str, ...]] = {
    "tools": ("tools/list",),
    "resources": ("resources/list", "resources/read", "resources/templates/list"),
    "prompts": ("prompts/list", "prompts/get"),
    "completions": ("completion/complete",),
    "logging": ("logging/setLevel",),
}
SUBSCRIBE_METHODS = ("resources/subscribe", "resources/unsubscribe")


@dataclass(frozen=True, slots=True, kw_only=True)
class Exchange:
    """One answered request other than ``tools/call``, with the notifications that came with it."""

    method: str
    params: dict[str, Any]
    response: dict[str, Any]
    notifications: tuple[dict[str, Any], ...] = ()

    def record(self) -> tuple[str, dict[str, Any], dict[str, Any]]:
        """(tool, args, response) of its record in the session file."""
        response = dict(self.response)
        if self.notifications:
            response["notifications"] = list(self.notifications)
        return self.method, without_meta(self.params), response


def without_meta(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` less ``_meta``: what identifies a request from one run to the next."""
    return {key: value for key, value in params.items() if key != "_meta"}


def progress_token(params: dict[str, Any]) -> Any:
    """The progress token a request asks its progress notifications under (None: none)."""
    meta = params.get("_meta")
    return meta.get("progressToken") if isinstance(meta, dict) else None


def notification(message: dict[str, Any]) -> dict[str, Any]:
    """A notification as the session file keeps it: its method and params as sent."""
    out: dict[str, Any] = {"method": message.get("method")}
    if "params" in message:
        out["params"] = message["params"]
    return out
