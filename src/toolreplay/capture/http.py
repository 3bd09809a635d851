"""The Streamable HTTP proxy: a reverse proxy in front of an MCP server's URL.

Every HTTP request is sent on to the target (same method, path, query, headers and
body, less the hop-by-hop headers and ``Accept-Encoding``, so that the answer arrives
readable) and its response streams back byte for byte, event by event (an answer the
recording cannot keep as sent is replaced by the error it recorded). A POST body is a JSON-RPC message
(or batch) from the client; the answer comes on that POST's own response, as one JSON
body or as a stream of server-sent events, each ``data`` one message. Each POST is its own
channel, so ids that several clients reuse never pair across requests.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import signal
import threading
from collections.abc import AsyncIterator, Iterator
from types import FrameType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from toolreplay.capture.recording import Recording
from toolreplay.capture.stdio import LineSplitter
from toolreplay.errors import InputError

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

_HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"host",
        b"content-length",
        b"accept-encoding",
    }
)


class EventSplitter:
    """Split a ``text/event-stream`` body into its events, whatever the chunking."""

    def __init__(self) -> None:
        self._lines = LineSplitter()
        self._data: list[bytes] = []
        self._block = bytearray()

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        """The data of every event ``chunk`` completes."""
        for _, data in self.blocks(chunk):
            if data is not None:
                yield data

    def blocks(self, chunk: bytes) -> Iterator[tuple[bytes, bytes | None]]:
        """Each block (the bytes up to a blank line) ``chunk`` completes, with its event's data
        (None for a block without data: comments, ids, retry times)."""
        for raw in self._lines.feed(chunk):
            self._block += raw
            line = raw.removesuffix(b"\n").removesuffix(b"\r")
            if not line:
                block, data = bytes(self._block), b"\n".join(self._data) if self._data else None
                self._block.clear()
                self._data = []
                yield block, data
            elif line.startswith(b"data:"):
                data = line[5:]
                self._data.append(data[1:] if data.startswith(b" ") else data)

    def rest(self) -> bytes:
        """The bytes of an event the stream ended before finishing."""
        rest = bytes(self._block) + self._lines.rest()
        self._block.clear()
        self._data = []
        return rest


class BrokeOff(Exception):
    """The target broke off its answer: the client's response is cut off too, not ended cleanly."""


class _QuietBrokeOff(logging.Filter):
    """Keeps uvicorn from logging a traceback for a response cut off on purpose (the proxy warned)."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
            error = error.exceptions[0]
        return not isinstance(error, BrokeOff)


def check_target(target: str) -> str:
    """The target URL, refused unless it is an http(s) URL with a host."""
    parts = urlsplit(target)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InputError(f"--target {target!r} is not an http:// or https:// URL")
    return target


def serve_proxy(host: str, port: int, target: str, recording: Recording) -> None:
    """Listen on ``host:port`` and proxy to ``target``'s origin until interrupted."""
    import httpx2 as httpx  # the HTTP client the MCP SDK itself depends on
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse, StreamingResponse
    from starlette.routing import Route

    origin = urlsplit(target)
    lock = threading.Lock()
    channels = itertools.count()
    client = httpx.AsyncClient(timeout=None)

    async def forward(request: Request) -> Response:
        channel = f"h{next(channels)}:"
        body = await request.body()
        if request.method == "POST" and body:
            with lock:
                recording.from_client(body, channel)
        headers = [(k, v) for k, v in request.headers.raw if k.lower() not in _HOP_BY_HOP]
        url = origin._replace(path=request.url.path, query=request.url.query).geturl()
        try:
            upstream = await client.send(
                client.build_request(request.method, url, headers=headers, content=body), stream=True
            )
        except httpx.HTTPError as err:  # the target is down or broke off: the client gets a 502
            problem = f"cannot reach the target {target}: {type(err).__name__}: {err}"
            recording.warn(problem)
            return PlainTextResponse(problem, status_code=502)
        events = "text/event-stream" in upstream.headers.get("content-type", "")

        async def relay() -> AsyncIterator[bytes]:
            # each event (or a whole JSON body) goes on once it is recorded, so that an answer
            # the recording cannot keep can still be replaced by the error it recorded
            splitter = EventSplitter()
            whole = bytearray()
            try:
                async for chunk in upstream.aiter_raw():
                    if events:
                        out = bytearray()
                        for block, data in splitter.blocks(chunk):
                            out += block if data is None else _event(block, data)
                        if out:
                            yield bytes(out)
                    else:
                        whole += chunk
                if whole.strip():
                    with lock:
                        replacement = recording.from_server(bytes(whole), channel)
                    whole = bytearray(replacement) if replacement is not None else whole
                tail = bytes(whole) + splitter.rest()
                if tail:
                    yield tail
            except httpx.HTTPError as err:  # the target broke off mid-answer: so does the client's answer
                recording.warn(f"the target {target} broke off its answer: {type(err).__name__}: {err}")
                tail = bytes(whole) + splitter.rest()
                if tail:
                    yield tail  # what the target did send, as it sent it
                raise BrokeOff from None  # the server drops the connection: no clean end of the body
            finally:
                await upstream.aclose()
                _unanswered(channel)

        def _event(block: bytes, data: bytes) -> bytes:
            with lock:
                # the SDK's client takes the first answer on a request's event stream as its answer
                replacement = recording.from_server(data, channel, first_answers=True)
            return block if replacement is None else b"event: message\ndata: " + replacement + b"\n\n"

        def _unanswered(channel: str) -> None:
            with lock:
                unanswered = recording.unanswered(channel)
            if unanswered:
                recording.warn(
                    f"the target's response to {request.method} {request.url.path} ended before it answered"
                    f" tools/call {', '.join(unanswered)}; not recorded"
                )

        response = StreamingResponse(relay(), status_code=upstream.status_code)
        # raw, so repeated headers (several Set-Cookie) stay as the server sent them
        response.raw_headers = [(k, v) for k, v in upstream.headers.raw if k.lower() not in _HOP_BY_HOP]
        return response

    methods = ["GET", "POST", "DELETE", "PUT", "PATCH", "OPTIONS", "HEAD"]
    quiet = _QuietBrokeOff()
    logging.getLogger("uvicorn.error").addFilter(quiet)
    try:
        run_until_stopped(Starlette(routes=[Route("/{path:path}", forward, methods=methods)]), host, port)
    finally:
        logging.getLogger("uvicorn.error").removeFilter(quiet)


def run_until_stopped(app: Any, host: str, port: int) -> None:
    """Serve an ASGI app until SIGINT or SIGTERM, then return (uvicorn would re-raise the signal)."""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield  # the handlers below stop it instead

    # an open event stream (a client's GET) must not hold the shutdown forever
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=5)
    server = Server(config)

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
