"""How the snapshot server (capture/serve.py) writes its recorded answers for one session: the
recorded ``initialize`` result, results shaped to the session's protocol revision, recorded errors
raised as they were, and the recorded notifications sent again."""

from __future__ import annotations

import sys
import warnings
from typing import TYPE_CHECKING, Any

from toolreplay import sdk
from toolreplay.capture.exchange import progress_token
from toolreplay.capture.session import SERVER_INFO_META
from toolreplay.escape import inert, quote

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext


class Initialize:
    """Answers ``initialize`` with the recorded result; only the protocol version is the SDK's
    (it negotiates with this client, and the session goes on in that version)."""

    def __init__(self, result: dict[str, Any]) -> None:
        self.result = result

    async def __call__(self, ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method != "initialize" or not isinstance(result, dict):
            return result
        return {**self.result, "protocolVersion": result.get("protocolVersion")}


def cache_hints() -> dict[Any, Any]:
    """The SDK's own freshness hint (``sdk.CacheHint()``: immediately stale, private) for each method
    whose 2026 answer requires one: a recorded older answer gets it as the SDK's server would add it
    (a recorded ``ttlMs`` or ``cacheScope`` wins)."""
    return {method: sdk.CacheHint() for method in sdk.CACHEABLE_METHODS}


#: the fields of a result only the 2026 revision has (a handshake-era session never carries them)
MODERN_FIELDS = ("resultType", "cacheScope", "ttlMs")


def shaped(ctx: ServerRequestContext[Any], result: dict[str, Any]) -> dict[str, Any]:
    """A recorded result as the SDK writes it for the session's protocol revision: as recorded,
    with the ``resultType`` the 2026 revision requires when the recorded server (older) sent none;
    in a handshake-era session, without the fields and the identity stamp only the 2026 revision
    has (the server recorded in that revision answers a handshake-era client without them)."""
    if ctx.protocol_version in sdk.MODERN_PROTOCOL_VERSIONS:
        return result if "resultType" in result else {**result, "resultType": "complete"}
    return _handshake_era(result)


def _handshake_era(result: dict[str, Any]) -> dict[str, Any]:
    """A recorded result without the fields and the identity stamp only the 2026 revision has."""
    if not any(key in result for key in MODERN_FIELDS):
        return result
    out = {key: value for key, value in result.items() if key not in MODERN_FIELDS}
    meta = out.get("_meta")
    if isinstance(meta, dict) and SERVER_INFO_META in meta:
        _unstamp(out, meta)
    return out


def _unstamp(out: dict[str, Any], meta: dict[str, Any]) -> None:
    """Drop the 2026 identity stamp from ``out``'s ``_meta`` (and the ``_meta`` left empty)."""
    rest = {key: value for key, value in meta.items() if key != SERVER_INFO_META}
    out.pop("_meta")
    if rest:
        out["_meta"] = rest


def params_model(method: str) -> Any:
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


def raise_recorded(response: dict[str, Any]) -> None:
    """Raise the recorded JSON-RPC error (``{"error": ...}``) as it was, ``data`` and all."""
    error = response.get("error")
    if "result" not in response and isinstance(error, dict):
        code, message = error.get("code"), error.get("message")
        raise sdk.MCPError(
            code=code if isinstance(code, int) else -32603,
            message=message if isinstance(message, str) else "",
            data=error.get("data"),
        )


async def notify(ctx: ServerRequestContext[Any], notes: Any) -> None:
    """Send the recorded notifications of a request again, in order, on that request's stream.

    A progress notification goes under the progress token this request asked for (none
    asked: none sent); a log message goes as the SDK sends one (at the level the session asked for).
    """
    token = progress_token(dict(ctx.params or {}))
    for note in notes if isinstance(notes, list | tuple) else ():
        method, params = _parts(note)
        try:
            await _send(ctx, method, params, token)
        except sdk.ValidationError:
            said = f"a recorded notification {quote(str(method))} is not one the SDK can send; not sent"
            print(f"toolreplay: warning: {inert(said)}", file=sys.stderr)


def _parts(note: Any) -> tuple[Any, dict[str, Any]]:
    """A recorded notification's method (None: none) and a copy of its params (``{}``: none)."""
    if not isinstance(note, dict):
        return None, {}
    params = note.get("params")
    return note.get("method"), dict(params) if isinstance(params, dict) else {}


async def _send(ctx: ServerRequestContext[Any], method: Any, params: dict[str, Any], token: Any) -> None:
    """Send one recorded notification as the SDK's server would (a progress one only under ``token``)."""
    if method == "notifications/message":
        await _send_log(ctx, params)
        return
    if method == "notifications/progress":
        if token is None:
            return
        params["progressToken"] = token
    notification = sdk.TypeAdapter(sdk.types.ServerNotification).validate_python(
        {"method": method, "params": params}, by_name=False
    )
    await ctx.session.send_notification(notification, related_request_id=ctx.request_id)


async def _send_log(ctx: ServerRequestContext[Any], params: dict[str, Any]) -> None:
    """Send a recorded log message through the SDK's own logging call."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the SDK's deprecation of logging (2026-07-28)
        await ctx.session.send_log_message(
            params.get("level"),  # type: ignore[arg-type]
            params.get("data"),
            params.get("logger"),
            related_request_id=ctx.request_id,
        )
