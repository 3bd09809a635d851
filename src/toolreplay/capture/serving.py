"""How the snapshot server (capture/serve.py) is reached: one session over stdio, or Streamable HTTP
at ``http://HOST:PORT/mcp`` until SIGINT or SIGTERM, to the requests :class:`Admission` lets in.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable, Iterator
from types import FrameType
from typing import TYPE_CHECKING, Any

import h11

from toolreplay import sdk
from toolreplay.capture.listen import MAX_BODY_BYTES, Admission, request_seconds
from toolreplay.capture.serve import MAX_SESSIONS, SESSION_IDLE_TIMEOUT
from toolreplay.errors import InputError

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server


def serve_stdio(server: Server[Any], *, handshake: bool = False) -> None:
    """Serve one session over stdin and stdout until the client closes it."""

    async def run() -> None:
        async with sdk.stdio_server() as (read, write):
            if not handshake:
                await server.run(read, write, server.create_initialization_options())
                return
            options = server.create_initialization_options()
            async with server.lifespan(server) as state:
                await sdk.serve_loop(server, read, write, lifespan_state=state, init_options=options)

    sdk.anyio.run(run)


def serve_http(
    server: Server[Any],
    host: str,
    port: int,
    admission: Admission,
    ready: Callable[[str], None] | None = None,
) -> None:
    """Serve Streamable HTTP at ``http://HOST:PORT/mcp`` until SIGINT or SIGTERM, to the requests
    ``admission`` lets in (the SDK's own Host and Origin check gives way to it: one rule for
    ``record`` and ``serve``; its body limit is the same)."""
    app = server.streamable_http_app(
        host=host,
        transport_security=sdk.TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=MAX_BODY_BYTES,
        max_sessions=MAX_SESSIONS,
        session_idle_timeout=SESSION_IDLE_TIMEOUT,
    )
    run_until_stopped(_Admitted(app, admission), host, port, ready=ready)


class _Admitted:
    """An ASGI app that answers only the requests :class:`Admission` lets in; the others get its
    refusal before their body is read."""

    def __init__(self, app: Any, admission: Admission) -> None:
        self.app, self.admission = app, admission

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        refusal = self.admission.refusal(scope["headers"]) if scope["type"] == "http" else None
        if refusal is None:
            await self.app(scope, receive, send)
            return
        print(f"toolreplay: warning: refused a request: {refusal.message}", file=sys.stderr)
        headers = [(name.lower(), value) for name, value in refusal.headers()]
        await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
        await send({"type": "http.response.body", "body": refusal.body()})


def _timed() -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol, with a connection closed when its request has not arrived whole
    within :func:`request_seconds` of the connection opening or the previous answer ending
    (uvicorn waits without end for a request begun, or for the first)."""
    seconds = request_seconds()

    class Timed(sdk.H11Protocol):
        deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            if self.deadline is not None:
                self.deadline.cancel()
            super().connection_lost(exc)

        def _arm(self) -> None:
            if self.deadline is not None:
                self.deadline.cancel()
            self.deadline = self.loop.call_later(seconds, self._expired)

        def _expired(self) -> None:
            self.deadline = None
            # a request read whole is being answered (an event stream may take long): it stays
            if self.conn.their_state is not h11.DONE and not self.transport.is_closing():
                self.transport.close()

    return Timed


def run_until_stopped(app: Any, host: str, port: int, *, ready: Callable[[str], None] | None = None) -> None:
    """Serve an ASGI app until SIGINT or SIGTERM, then return (uvicorn would re-raise the signal).
    ``ready`` hears the endpoint's URL once the socket listens (its port, when ``port`` is 0)."""

    class _Uvicorn(sdk.uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield  # the handlers below stop it instead

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if self.started and ready is not None and self.servers:
                bound = self.servers[0].sockets[0].getsockname()[1]
                shown = f"[{host}]" if ":" in host else host
                ready(f"http://{shown}:{bound}/mcp")

    # an open event stream (a client's GET) must not hold the shutdown forever
    # (log_config None: uvicorn's records go where the SDK's go, not to handlers of its own)
    config = sdk.uvicorn.Config(
        app,
        host=host,
        port=port,
        http=_timed(),
        log_level="warning",
        log_config=None,
        timeout_graceful_shutdown=5,
    )
    server = _Uvicorn(config)

    def stop(signum: int, frame: FrameType | None) -> None:
        server.should_exit = True

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.run()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if not server.started:
        raise InputError(f"cannot listen on {host}:{port}")
