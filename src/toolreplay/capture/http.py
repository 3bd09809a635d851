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

import asyncio
import contextlib
import itertools
import logging
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any, NoReturn
from urllib.parse import urlsplit

from toolreplay.capture.recording import Recording
from toolreplay.capture.stdio import LineSplitter
from toolreplay.errors import InputError

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
    quiet = _QuietBrokeOff()
    logging.getLogger("uvicorn.error").addFilter(quiet)
    try:
        run_until_stopped(Forwarder(target, recording), host, port)
    finally:
        logging.getLogger("uvicorn.error").removeFilter(quiet)


class Forwarder:
    """The proxy as a bare ASGI app: per request, little more than the two HTTP exchanges.

    One pooled client keeps its connections to the target alive; a JSON answer is read whole
    (the recording may have to replace it) and goes on in one piece with its length; an event
    stream goes on event by event, until the target ends it or the client goes away.
    """

    def __init__(self, target: str, recording: Recording) -> None:
        import httpx2 as httpx  # the HTTP client the MCP SDK itself depends on

        self.httpx = httpx
        self.target = target
        self.origin = urlsplit(target)
        self.recording = recording
        self.lock = threading.Lock()
        self.channels = itertools.count()
        self.client = httpx.AsyncClient(timeout=None)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await self.client.aclose()
            await send({"type": "lifespan.shutdown.complete"})
        elif scope["type"] == "http":
            await self.forward(scope, receive, send)

    async def forward(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        channel = f"h{next(self.channels)}:"
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        method = scope["method"]
        if method == "POST" and body:
            with self.lock:
                self.recording.from_client(bytes(body), channel)
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in _HOP_BY_HOP]
        path = scope.get("raw_path") or scope["path"].encode()
        url = self.origin._replace(path=path.decode("latin-1"), query=scope["query_string"].decode("latin-1"))
        httpx = self.httpx
        try:
            request = self.client.build_request(method, url.geturl(), headers=headers, content=bytes(body))
            upstream = await self.client.send(request, stream=True)
        except httpx.HTTPError as err:  # the target is down or broke off: the client gets a 502
            problem = f"cannot reach the target {self.target}: {type(err).__name__}: {err}"
            self.recording.warn(problem)
            await _answer(send, 502, [(b"content-type", b"text/plain; charset=utf-8")], problem.encode())
            return
        # raw, so repeated headers (several Set-Cookie) stay as the server sent them
        out = [(k, v) for k, v in upstream.headers.raw if k.lower() not in _HOP_BY_HOP]
        try:
            if "text/event-stream" in upstream.headers.get("content-type", ""):
                await self._events(upstream, out, channel, receive, send)
            else:
                await self._whole(upstream, out, channel, method, send)
        finally:
            await upstream.aclose()
            self._unanswered(method, scope["path"], channel)

    async def _whole(self, upstream: Any, headers: list[Any], channel: str, method: str, send: Any) -> None:
        """A body that is not an event stream: read whole, recorded, then sent in one piece."""
        whole = bytearray()
        try:
            async for chunk in upstream.aiter_raw():
                whole += chunk
        except self.httpx.HTTPError as err:
            await send({"type": "http.response.start", "status": upstream.status_code, "headers": headers})
            await self._broke_off(err, bytes(whole), send)
        if whole.strip():
            with self.lock:
                replacement = self.recording.from_server(bytes(whole), channel)
            whole = bytearray(replacement) if replacement is not None else whole
        if method != "HEAD" and upstream.status_code not in (204, 304):
            headers = [*headers, (b"content-length", str(len(whole)).encode())]
        await _answer(send, upstream.status_code, headers, bytes(whole))

    async def _events(self, upstream: Any, headers: list[Any], channel: str, receive: Any, send: Any) -> None:
        """An event stream: each event goes on once it is recorded (an answer the recording
        cannot keep is replaced by the error it recorded), until it ends or the client leaves."""
        task = asyncio.current_task()
        assert task is not None
        gone = asyncio.ensure_future(_disconnected(receive))

        def leave(_: object) -> None:
            task.cancel()

        gone.add_done_callback(leave)
        splitter = EventSplitter()
        try:
            await send({"type": "http.response.start", "status": upstream.status_code, "headers": headers})
            try:
                async for chunk in upstream.aiter_raw():
                    out = bytearray()
                    for block, data in splitter.blocks(chunk):
                        out += block if data is None else self._event(block, data, channel)
                    if out:
                        await send({"type": "http.response.body", "body": bytes(out), "more_body": True})
            except self.httpx.HTTPError as err:
                await self._broke_off(err, splitter.rest(), send)
            await send({"type": "http.response.body", "body": splitter.rest(), "more_body": False})
        except asyncio.CancelledError:
            if not gone.done() or gone.cancelled():
                raise
            task.uncancel()  # the client went away: the stream ends here
        finally:
            gone.remove_done_callback(leave)
            gone.cancel()

    def _event(self, block: bytes, data: bytes, channel: str) -> bytes:
        with self.lock:
            # the SDK's client takes the first answer on a request's event stream as its answer
            replacement = self.recording.from_server(data, channel, first_answers=True)
        return block if replacement is None else b"event: message\ndata: " + replacement + b"\n\n"

    async def _broke_off(self, err: Exception, tail: bytes, send: Any) -> NoReturn:
        """The target broke off mid-answer: so does the client's answer, after what the target sent."""
        self.recording.warn(f"the target {self.target} broke off its answer: {type(err).__name__}: {err}")
        if tail:
            await send({"type": "http.response.body", "body": tail, "more_body": True})
        raise BrokeOff from None  # the server drops the connection: no clean end of the body

    def _unanswered(self, method: str, path: str, channel: str) -> None:
        with self.lock:
            unanswered = self.recording.unanswered(channel)
        if unanswered:
            self.recording.warn(
                f"the target's response to {method} {path} ended before it answered"
                f" tools/call {', '.join(unanswered)}; not recorded"
            )


async def _disconnected(receive: Any) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _answer(send: Any, status: int, headers: list[Any], body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


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
