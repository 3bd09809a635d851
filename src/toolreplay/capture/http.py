"""The Streamable HTTP proxy: a reverse proxy in front of an MCP server's URL.

Every HTTP request is sent on to the target (same method, path, query, headers and
body, less the hop-by-hop headers and ``Accept-Encoding``, so that the answer arrives
readable) and its response streams back byte for byte, event by event (an answer the
recording cannot keep as sent is replaced by the error it recorded). A POST body is a JSON-RPC message
(or batch) from the client; the answer comes on that POST's own response, as one JSON
body or as a stream of server-sent events, each ``data`` one message. Each POST is its own
channel, so ids that several clients reuse never pair across requests.

HTTP/1.1 is spoken on both sides by h11 (the protocol library uvicorn and httpx use) over
asyncio's streams, with nothing else on the way: the request goes on to the target in one
write, the client's request is shown to the recording while the target works on it, and
whatever the target's answer completes goes back to the client in one write, once recorded.
Connections to the target are kept alive and reused; none is shared by two requests at once.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import itertools
import re
from collections.abc import Iterator
from http import HTTPStatus
from typing import Any, NoReturn
from urllib.parse import urlsplit

import h11

from toolreplay.capture.listen import (
    MAX_BODY_BYTES,
    TOO_LARGE,
    Admission,
    Refusal,
    drain,
    request_seconds,
    stop_signals,
)
from toolreplay.capture.recording import Recording
from toolreplay.capture.stdio import LineSplitter
from toolreplay.capture.upstream import HOP_BY_HOP, READ, Target, Upstream
from toolreplay.errors import InputError
from toolreplay.escape import one_line, quote

_TEXT = [(b"content-type", b"text/plain; charset=utf-8")]
#: how h11 shows the bytes of a line it refuses
_BYTES_REPR = re.compile(r"""bytearray\((b'(?:[^'\\]|\\.)*'|b"(?:[^"\\]|\\.)*")\)""")


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


def check_target(target: str) -> str:
    """The target URL, refused unless it is an http(s) URL with a host and a valid port."""
    parts = urlsplit(target)
    try:
        valid = parts.scheme in ("http", "https") and bool(parts.hostname) and (parts.port or 1) > 0
    except ValueError:  # a port that is not a number, or out of range
        valid = False
    if not valid:
        raise InputError(f"--target {target!r} is not an http:// or https:// URL")
    return target


def serve_proxy(host: str, port: int, target: str, recording: Recording, admission: Admission) -> None:
    """Listen on ``host:port`` and proxy to ``target``'s origin until SIGINT or SIGTERM, letting in
    the requests ``admission`` admits."""
    asyncio.run(Proxy(target, recording, admission).serve(host, port))


class BrokeOff(Exception):
    """The target broke off its answer: the client's response is cut off too, not ended cleanly."""


class _Client:
    """One client connection, HTTP/1.1 spoken by h11."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.h11 = h11.Connection(h11.SERVER)
        #: while an event stream goes to the client: the task that reads from it, done when it leaves
        self.watcher: asyncio.Task[None] | None = None
        self._leave: Any = None

    async def next_event(self) -> Any:
        """The client's next h11 event, reading as much as it takes."""
        if self.watcher is not None:  # it stops reading before anything else reads
            await asyncio.wait((self.watcher,))
            self.watcher = None
        while (event := self.h11.next_event()) is h11.NEED_DATA:
            self.h11.receive_data(await self.reader.read(READ))
        return event

    def write(self, *events: Any, before: bytes = b"") -> None:
        """``before`` and the bytes h11 writes for ``events``, in one write."""
        self.writer.write(before + _send(self.h11, *events))

    def watch(self, task: asyncio.Task[Any]) -> None:
        """Until :meth:`unwatch`, read from the client while its answer streams, and cancel
        ``task`` when the client closes its side (what it sends meanwhile is kept for h11)."""
        if self.watcher is not None:
            return

        async def watch() -> None:
            with contextlib.suppress(OSError):
                while data := await self.reader.read(READ):
                    self.h11.receive_data(data)

        def leave(_: object) -> None:
            task.cancel()

        self.watcher = asyncio.ensure_future(watch())
        self.watcher.add_done_callback(leave)
        self._leave = leave

    def close(self) -> None:
        """Stop reading from the client, and close its connection."""
        if self.watcher is not None:
            self.watcher.cancel()
        self.writer.close()

    def left(self) -> bool:
        """Whether the client closed its side while it was watched."""
        return self.watcher is not None and self.watcher.done() and not self.watcher.cancelled()

    def unwatch(self) -> None:
        """Stop watching (the next read from the client waits until the watcher has stopped)."""
        if self.watcher is not None:
            self.watcher.remove_done_callback(self._leave)
            self.watcher.cancel()


class Proxy:
    """The proxy: each client connection's requests, one after the other, sent on to the target
    and answered with what it answers, the messages shown to the recording on the way."""

    def __init__(self, target: str, recording: Recording, admission: Admission) -> None:
        self.target = Target(target)
        self.recording = recording
        self.admission = admission
        self.channels = itertools.count()
        #: each client connection's task, and whether it is answering a request right now
        self.open: dict[asyncio.Task[None], bool] = {}
        self.stopping = False

    async def serve(self, host: str, port: int) -> None:
        """Listen until SIGINT or SIGTERM; then let the open requests finish (:func:`drain`)."""
        try:
            server = await asyncio.start_server(self.connected, host, port)
        except OSError as err:
            raise InputError(f"cannot listen on {host}:{port}") from err
        try:
            with stop_signals() as stop:
                await stop.wait()
        finally:
            server.close()
            await self._drain()
            self.target.close()

    async def _drain(self) -> None:
        """Stop: close the idle client connections, let the busy ones finish (:func:`drain`)."""
        self.stopping = True
        await drain(self.open)

    async def connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One client connection, until it closes (or asks to), or the proxy stops."""
        task = asyncio.current_task()
        assert task is not None
        self.open[task] = False
        client = _Client(reader, writer)
        try:
            while not self.stopping and await self._exchange(client, task):
                client.h11.start_next_cycle()
        except (asyncio.CancelledError, OSError, h11.ProtocolError):
            pass  # the proxy stops, or the client left: its connection ends here
        except Exception as err:  # a bug: one line, and the proxy goes on with the other clients
            self.recording.warn(f"the proxy failed on a request: {type(err).__name__}: {err}; please report")
        finally:
            del self.open[task]
            client.close()

    async def _exchange(self, client: _Client, task: asyncio.Task[None]) -> bool:
        """One request of the client's, answered; whether its connection can take another."""
        asked = await self._request(client)
        if asked is None:
            return False
        self.open[task] = True
        if not await self.forward(client, *asked):
            return False
        self.open[task] = False
        return client.h11.our_state is h11.DONE and client.h11.their_state is h11.DONE

    async def _request(self, client: _Client) -> tuple[h11.Request, bytes] | None:
        """The client's next request and its whole body, once it is let in (capture/listen.py);
        None when the client is done, was refused, or did not send it all in time."""
        try:
            return await asyncio.wait_for(self._admitted(client), request_seconds())
        except TimeoutError:  # a client that sends half a request holds no connection for long
            return None
        except h11.RemoteProtocolError as err:  # not HTTP/1.1: answered as h11 says, then closed
            with contextlib.suppress(h11.LocalProtocolError):
                client.write(*_whole(err.error_status_hint, _TEXT, _refusal(err).encode()))
            return None

    async def _admitted(self, client: _Client) -> tuple[h11.Request, bytes] | None:
        event = await client.next_event()
        if not isinstance(event, h11.Request):
            return None
        refusal = self.admission.refusal(event.headers)
        if refusal is not None:  # before a byte of the body is read, or anything forwarded
            self._refuse(client, refusal)
            return None
        if client.h11.they_are_waiting_for_100_continue:
            client.write(h11.InformationalResponse(status_code=100, headers=[]))
        body = bytearray()
        while isinstance(part := await client.next_event(), h11.Data):
            body += part.data
            if len(body) > MAX_BODY_BYTES:  # a body sent in chunks, without its length
                self._refuse(client, TOO_LARGE)
                return None
        return event, bytes(body)

    def _refuse(self, client: _Client, refusal: Refusal) -> None:
        """Answer with ``refusal`` (the connection closes after it), and say so on stderr."""
        self.recording.warn(f"refused a request: {refusal.message}")
        client.write(*_whole(refusal.status, refusal.headers(), refusal.body()))

    async def forward(self, client: _Client, request: h11.Request, body: bytes) -> bool:
        """Send one request on to the target and its answer back; whether the connection goes on."""
        channel = f"h{next(self.channels)}:"
        sent = await self._sent(client, request, body, channel)
        if sent is None:
            return True
        upstream, head = sent
        try:
            if await self._answer(client, upstream, head, request.method, channel):
                return True
            self._unanswered(request, channel, "left")
            return False
        except BrokeOff:
            upstream.close()
            return False
        except asyncio.CancelledError:
            self._unanswered(request, channel, "stopped" if self.stopping else "left")
            raise
        finally:
            self._unanswered(request, channel)

    async def _sent(
        self, client: _Client, request: h11.Request, body: bytes, channel: str
    ) -> tuple[Upstream, h11.Response] | None:
        """Send the request on: the connection and the head of the target's answer; None when the
        target cannot be reached (the client is answered 502)."""
        shown = request.method != b"POST" or not body
        upstream: Upstream | None = None
        try:
            upstream = await self.target.connect()
            outgoing = self.target.request(request, body)
            upstream.writer.write(_send(upstream.h11, outgoing, h11.Data(data=body), h11.EndOfMessage()))
            if not shown:
                shown = True
                self.recording.from_client(body, channel)  # while the target works on it
            return upstream, await upstream.response()
        except (OSError, h11.ProtocolError) as err:  # the target is down or broke off: a 502
            _close(upstream)
            if not shown:
                self.recording.from_client(body, channel)
            self._unreachable(client, request, channel, err)
            return None
        except asyncio.CancelledError:  # stopped before the target's answer began
            _close(upstream)
            self._unanswered(request, channel, "stopped")
            raise

    def _unreachable(self, client: _Client, request: h11.Request, channel: str, err: Exception) -> None:
        """Answer 502 when the target is down or broke off before its answer, and say so on stderr."""
        problem = f"cannot reach the target {self.target.url}: {type(err).__name__}: {err}"
        self.recording.warn(problem)
        client.write(*_whole(502, _TEXT, b"" if request.method == b"HEAD" else problem.encode()))
        self._unanswered(request, channel)

    async def _answer(
        self, client: _Client, upstream: Upstream, head: h11.Response, method: bytes, channel: str
    ) -> bool:
        """The target's answer to the client; whether the client connection goes on."""
        headers = [(k, v) for k, v in head.headers.raw_items() if k.lower() not in HOP_BY_HOP]
        start = h11.Response(status_code=head.status_code, headers=headers, reason=head.reason)
        if not _event_stream(head):
            await self._whole_answer(client, upstream, start, headers, method, channel)
        elif not await self._events(client, upstream, start, channel):
            upstream.close()  # the client left mid-stream: the target's stream is dropped too
            return False
        self.target.release(upstream)
        return True

    async def _whole_answer(
        self,
        client: _Client,
        upstream: Upstream,
        start: h11.Response,
        headers: list[tuple[bytes, bytes]],
        method: bytes,
        channel: str,
    ) -> None:
        """An answer that is not an event stream: read whole, recorded, then sent to the client."""
        body = await self._body(client, upstream, start)
        if body.strip():
            replacement = self.recording.from_server(body, channel)
            body = replacement if replacement is not None else body
        if method != b"HEAD" and start.status_code not in (204, 304):
            headers.append((b"Content-Length", str(len(body)).encode()))
        if not client.writer.is_closing():
            client.write(*_whole(start.status_code, headers, body, start.reason))

    async def _body(self, client: _Client, upstream: Upstream, start: h11.Response) -> bytes:
        """A body that is not an event stream, read whole (the recording may have to replace it)."""
        body = bytearray()
        try:
            while True:
                event = upstream.h11.next_event()
                if event is h11.NEED_DATA:
                    await upstream.receive()
                elif isinstance(event, h11.Data):
                    body += event.data
                else:
                    return bytes(body)
        except (OSError, h11.ProtocolError) as err:
            self._broke_off(err, client, _send(client.h11, start), bytes(body))

    async def _events(self, client: _Client, upstream: Upstream, start: h11.Response, channel: str) -> bool:
        """An event stream: each event goes on once it is recorded (an answer the recording cannot
        keep is replaced by the error it recorded), until it ends (True) or the client leaves
        (False). What one read from the target completes goes to the client in one write."""
        out = bytearray(_send(client.h11, start))
        splitter = EventSplitter()
        task = asyncio.current_task()
        assert task is not None
        try:
            await self._relay(client, upstream, splitter, out, channel)
        except asyncio.CancelledError:
            if not client.left():
                raise
            task.uncancel()  # the client went away: the stream ends here
            return False
        except (OSError, h11.ProtocolError) as err:
            self._broke_off(err, client, bytes(out), splitter.rest())
        finally:
            client.unwatch()
        rest = splitter.rest()
        client.write(*([h11.Data(data=rest)] if rest else []), h11.EndOfMessage(), before=bytes(out))
        return True

    async def _relay(
        self, client: _Client, upstream: Upstream, splitter: EventSplitter, out: bytearray, channel: str
    ) -> None:
        """Pass the target's events on until its stream ends; ``out`` holds what is not yet written."""
        task = asyncio.current_task()
        assert task is not None
        while True:
            event = upstream.h11.next_event()
            if event is h11.NEED_DATA:
                if out:
                    client.writer.write(bytes(out))
                    out.clear()
                client.watch(task)  # from the first wait on (an answer read whole needs none)
                await upstream.receive()
            elif isinstance(event, h11.Data):
                out += self._passed(client, splitter, event.data, channel)
            else:
                return

    def _passed(self, client: _Client, splitter: EventSplitter, chunk: bytes, channel: str) -> bytes:
        """The events ``chunk`` completes, framed for the client."""
        out = bytearray()
        for block, data in splitter.blocks(chunk):
            if data is None:
                out += block
                continue
            # the SDK's client takes the first answer on a request's event stream as its answer
            replacement = self.recording.from_server(data, channel, first_answers=True)
            out += block if replacement is None else b"event: message\ndata: " + replacement + b"\n\n"
        return _send(client.h11, h11.Data(data=bytes(out))) if out else b""

    def _broke_off(self, err: Exception, client: _Client, sent: bytes, tail: bytes) -> NoReturn:
        """The target broke off mid-answer: so does the client's answer, after what the target
        sent (the connection closes without the body's end)."""
        self.recording.warn(f"the target {self.target.url} broke off its answer: {type(err).__name__}: {err}")
        client.write(*([h11.Data(data=tail)] if tail else []), before=sent)
        raise BrokeOff from None

    def _unanswered(self, request: h11.Request, channel: str, why: str = "ended") -> None:
        """One warning naming the calls on ``channel`` the target did not answer, and why: its
        response ``ended`` first, the client ``left`` first, or record was ``stopped`` first (its
        grace over, or a second interrupt); they are forgotten."""
        unanswered = self.recording.unanswered(channel)
        if not unanswered:
            return
        calls = f"tools/call {', '.join(unanswered)}; not recorded"
        if why == "stopped":
            self.recording.warn(f"record stopped before the target answered {calls}")
        elif why == "left":
            self.recording.warn(f"the client left before the target answered {calls}")
        else:
            path = request.target.partition(b"?")[0].decode("latin-1")
            method = request.method.decode("latin-1")
            self.recording.warn(f"the target's response to {method} {path} ended before it answered {calls}")


def _refusal(err: h11.RemoteProtocolError) -> str:
    """What a client that did not speak HTTP/1.1 is told: h11's reason, the line it quotes shown
    as text (h11 shows it as ``bytearray(b'...')``), on one line."""
    reason = _BYTES_REPR.sub(
        lambda match: quote(ast.literal_eval(match.group(1)).decode("latin-1")), str(err)
    )
    return one_line(f"not an HTTP/1.1 request: {reason}")


def _close(upstream: Upstream | None) -> None:
    """Close a connection to the target, if one was made."""
    if upstream is not None:
        upstream.close()


def _event_stream(head: h11.Response) -> bool:
    """Whether the target answers with a ``text/event-stream``."""
    return b"text/event-stream" in b",".join(v for k, v in head.headers if k == b"content-type")


def _send(conn: h11.Connection, *events: Any) -> bytes:
    """The bytes h11 writes for ``events``."""
    return b"".join(conn.send(event) or b"" for event in events)


def _whole(
    status: int, headers: list[tuple[bytes, bytes]], body: bytes, reason: bytes | None = None
) -> list[Any]:
    """The events of a whole response (the reason: the target's, else the standard one)."""
    if reason is None:
        reason = HTTPStatus(status).phrase.encode()
    events: list[Any] = [h11.Response(status_code=status, headers=headers, reason=reason)]
    if body:
        events.append(h11.Data(data=body))
    return [*events, h11.EndOfMessage()]
