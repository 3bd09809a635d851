"""``record --otlp``: an OTLP/HTTP trace receiver that records the tool calls it is sent.

An agent's OpenTelemetry exporter POSTs ``ExportTraceServiceRequest`` bodies to ``/v1/traces``,
binary protobuf (``application/x-protobuf``) or JSON (``application/json``), plain or with
``Content-Encoding: gzip`` (or ``deflate``). Each is decoded by :mod:`toolreplay.capture.otlp_proto`
and its tool calls written by :class:`toolreplay.capture.traces.TraceFiles`, before the answer
goes back, as the OTLP specification's "OTLP/HTTP Response" says: 200 with an
``ExportTraceServiceResponse`` (its ``partial_success`` naming the spans rejected, if any), else
a 4xx with a ``google.rpc.Status`` whose message says why, encoded as the request was. Whom it
answers, how large a body it takes and how long it waits for one is
:mod:`toolreplay.capture.listen`'s rule, as for ``record --listen`` and ``serve --listen``.

HTTP/1.1 is spoken by h11 over asyncio's streams, as the Streamable HTTP proxy does. SIGINT or
SIGTERM stops it: no new request is read, those being answered get :data:`listen.GRACE` seconds, and
every transcript is closed whole. docs/spec.md §8.1.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import h11

from toolreplay.capture import otlp_proto
from toolreplay.capture.listen import (
    MAX_BODY_BYTES,
    TOO_LARGE,
    Admission,
    Refusal,
    drain,
    parse_listen,
    request_seconds,
    stop_signals,
)
from toolreplay.capture.traces import TraceFiles
from toolreplay.errors import InputError
from toolreplay.escape import one_line

#: the path OTLP/HTTP sends traces to
PATH = b"/v1/traces"
#: the media types taken: whether each is JSON
MEDIA_TYPES = {b"application/x-protobuf": False, b"application/json": True}
#: the content codings taken: the ``wbits`` zlib reads each with (None: the body as it is)
CODINGS: dict[bytes, int | None] = {b"": None, b"identity": None, b"gzip": 16 + zlib.MAX_WBITS, b"deflate": 0}
_READ = 65536


@dataclass(frozen=True, slots=True)
class Answer:
    """An HTTP answer: status, body (already encoded), whether it is JSON, and whether the
    connection closes after it (a refusal, or a request whose body was not read)."""

    status: int
    body: bytes
    as_json: bool
    close: bool = False
    allow: bool = False

    def events(self, head: bool = False) -> list[Any]:
        """The answer's h11 events (to a HEAD request: without the body)."""
        media = b"application/json" if self.as_json else b"application/x-protobuf"
        headers = [(b"Content-Type", media), (b"Content-Length", str(len(self.body)).encode())]
        if self.allow:
            headers.append((b"Allow", b"POST"))
        if self.close:
            headers.append((b"Connection", b"close"))
        reason = HTTPStatus(self.status).phrase.encode()
        body = [] if head else [h11.Data(data=self.body)]
        return [
            h11.Response(status_code=self.status, headers=headers, reason=reason),
            *body,
            h11.EndOfMessage(),
        ]


def failure(status: int, message: str, as_json: bool, *, close: bool = False, allow: bool = False) -> Answer:
    """A 4xx answer: a ``Status`` whose message says why."""
    return Answer(status, otlp_proto.status(message, as_json), as_json, close=close, allow=allow)


def receive(
    host: str,
    port: int,
    files: TraceFiles,
    admission: Admission,
    *,
    ready: Callable[[str], None],
) -> None:
    """Receive traces on ``host:port`` into ``files`` until SIGINT or SIGTERM; ``ready`` gets the
    URL once the socket listens (and the signals are taken)."""
    asyncio.run(Receiver(files, admission).serve(host, port, ready))


class Receiver:
    """The receiver: each connection's requests in turn, each answered once its calls are written."""

    def __init__(self, files: TraceFiles, admission: Admission) -> None:
        self.files = files
        self.admission = admission
        #: each connection's task, and whether it is answering a request right now
        self.open: dict[asyncio.Task[None], bool] = {}
        self.stopping = False

    async def serve(self, host: str, port: int, ready: Callable[[str], None]) -> None:
        try:
            server = await asyncio.start_server(self.connected, host, port)
        except OSError as err:
            raise InputError(f"cannot listen on {host}:{port}: {err.strerror or err}") from err
        try:
            with stop_signals() as stop:
                shown = f"[{host}]" if ":" in host else host
                ready(f"http://{shown}:{port}{PATH.decode()}")
                await stop.wait()
        finally:
            server.close()
            await self._drain()

    async def _drain(self) -> None:
        """Stop: close the idle connections, let the busy ones finish (:func:`drain`)."""
        self.stopping = True
        await drain(self.open)

    async def connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One connection, until it closes (or asks to), a refusal closes it, or the receiver stops."""
        task = asyncio.current_task()
        assert task is not None
        self.open[task] = False
        conn = h11.Connection(h11.SERVER)
        try:
            while not self.stopping and await self._exchange(conn, reader, writer, task):
                conn.start_next_cycle()
        except (asyncio.CancelledError, OSError, h11.ProtocolError):
            pass  # the receiver stops, or the client left: its connection ends here
        except Exception as err:  # a bug: one line, and the receiver goes on with the other clients
            self.files.warn(f"the receiver failed on a request: {type(err).__name__}: {err}; please report")
        finally:
            del self.open[task]
            writer.close()

    async def _exchange(
        self, conn: h11.Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, task: Any
    ) -> bool:
        """One request of the connection's, answered; whether the connection can take another."""
        try:
            asked = await asyncio.wait_for(self._request(conn, reader, writer, task), request_seconds())
        except TimeoutError:  # a client that sends half a request holds no connection for long
            return False
        if asked is None:
            return False
        answer, method = asked
        await _send(conn, writer, answer, method)
        self.open[task] = False
        return not answer.close and conn.our_state is h11.DONE and conn.their_state is h11.DONE

    async def _request(
        self, conn: h11.Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, task: Any
    ) -> tuple[Answer, bytes] | None:
        """The answer to the connection's next request, and its method; None when the client is done."""
        try:
            event = await _next(conn, reader)
            if not isinstance(event, h11.Request):
                return None
            self.open[task] = True
            as_json = _media(event.headers) is True
            refusal = self.admission.refusal(event.headers)
            if refusal is not None:  # before a byte of the body is read
                return self._refused(refusal, as_json), event.method
            body = await _body(conn, reader, writer)
        except h11.RemoteProtocolError as err:  # not HTTP/1.1
            return self._failed(400, one_line(f"not an HTTP/1.1 request: {err}"), False, close=True), b""
        if body is None:
            return self._refused(TOO_LARGE, as_json), event.method
        return self.answer(event, body), event.method

    def _refused(self, refusal: Refusal, as_json: bool) -> Answer:
        return self._failed(refusal.status, refusal.message, as_json, close=True)

    def answer(self, request: h11.Request, body: bytes) -> Answer:
        """The answer to a whole request: its calls recorded, or why not."""
        media = _media(request.headers)
        as_json = media is True
        unfit = self._unfit(request, media, as_json)
        if unfit is not None:
            return unfit
        try:
            plain = _decompressed(body, CODINGS[_coding(request.headers)])
            if len(plain) > MAX_BODY_BYTES:
                return self._failed(413, TOO_LARGE.message + " (decompressed)", as_json)
            export = otlp_proto.decode(plain, as_json)
        except otlp_proto.BadPayload as err:
            return self._failed(400, f"not an ExportTraceServiceRequest: {err}", as_json)
        taken = self.files.take(export)
        return Answer(200, otlp_proto.response(taken.rejected, taken.problem, as_json), as_json)

    def _unfit(self, request: h11.Request, media: bool | None, as_json: bool) -> Answer | None:
        """The failure a request is answered with before its body is looked at, if any: another path,
        another method, or a content type or encoding the receiver does not read."""
        path = request.target.partition(b"?")[0]
        if path != PATH:
            shown = one_line(path.decode("latin-1"))
            return self._failed(404, f"no such path: {shown}; traces go to {PATH.decode()}", as_json)
        if request.method != b"POST":
            return self._failed(
                405, f"{one_line(request.method.decode('latin-1'))} is not allowed: POST", as_json, allow=True
            )
        if media is None:
            return self._failed(
                415, "the Content-Type must be application/x-protobuf or application/json", as_json
            )
        if _coding(request.headers) not in CODINGS:
            return self._failed(415, "the Content-Encoding must be gzip, deflate or none", as_json)
        return None

    def _failed(
        self, status: int, message: str, as_json: bool, *, close: bool = False, allow: bool = False
    ) -> Answer:
        """A request answered with a failure, and a warning line saying why."""
        self.files.warn(f"refused a request ({status}): {message}")
        return failure(status, message, as_json, close=close, allow=allow)


async def _next(conn: h11.Connection, reader: asyncio.StreamReader) -> Any:
    while (event := conn.next_event()) is h11.NEED_DATA:
        conn.receive_data(await reader.read(_READ))
    return event


async def _send(conn: h11.Connection, writer: asyncio.StreamWriter, answer: Answer, method: bytes) -> None:
    """Write ``answer`` to a request with ``method`` (a HEAD's without its body), in one write."""
    writer.write(b"".join(conn.send(event) or b"" for event in answer.events(method == b"HEAD")))
    await writer.drain()


async def _body(
    conn: h11.Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> bytes | None:
    """The request's whole body (a client waiting for ``100 Continue`` is told to go on); None past
    the body limit, however it was sent."""
    if conn.they_are_waiting_for_100_continue:
        writer.write(conn.send(h11.InformationalResponse(status_code=100, headers=[])) or b"")
    body = bytearray()
    while isinstance(part := await _next(conn, reader), h11.Data):
        body += part.data
        if len(body) > MAX_BODY_BYTES:  # a body sent in chunks, without its length
            return None
    return bytes(body)


def _header(headers: Any, name: bytes) -> bytes:
    return b",".join(value for key, value in headers if key == name).strip().lower()


def _media(headers: Any) -> bool | None:
    """Whether the request's body is JSON (False: protobuf; None: neither)."""
    return MEDIA_TYPES.get(_header(headers, b"content-type").partition(b";")[0].strip())


def _coding(headers: Any) -> bytes:
    return _header(headers, b"content-encoding")


def _decompressed(body: bytes, wbits: int | None) -> bytes:
    """``body`` decoded with ``wbits`` (zlib's: gzip, or deflate as zlib data or raw), refused past
    the body limit without decoding more than one byte beyond it."""
    if wbits is None:
        return body
    tries = (wbits,) if wbits else (zlib.MAX_WBITS, -zlib.MAX_WBITS)  # deflate: zlib data, else raw
    problem = ""
    for bits in tries:
        plain, problem = _inflated(body, bits)
        if plain is not None:
            return plain
    raise otlp_proto.BadPayload(f"the body is not {'gzip' if wbits else 'deflate'} data: {problem}")


def _inflated(body: bytes, bits: int) -> tuple[bytes | None, str]:
    """``body`` decoded with zlib's ``bits`` (one byte past the body limit at most), or why not."""
    reader = zlib.decompressobj(bits)
    try:
        plain = reader.decompress(body, MAX_BODY_BYTES + 1)
    except zlib.error as err:
        return None, str(err)
    if len(plain) > MAX_BODY_BYTES or (reader.eof and not reader.unused_data):
        return plain, ""
    return None, "the compressed body ends early or goes on after its end"


def record_traces(
    otlp: str,
    folder: str,
    *,
    patterns: tuple[str, ...],
    origins: tuple[str, ...],
    force: bool,
    ready: Callable[[str], None],
    warn: Callable[[str], None],
) -> TraceFiles:
    """Receive traces at ``otlp`` into ``folder`` until stopped; the trace files, closed. A port
    alone, or ``:PORT``, listens on loopback only."""
    bare = otlp.lstrip(":")
    host, port = parse_listen(f"127.0.0.1:{bare}" if bare.isdigit() else otlp, "--otlp")
    admission = Admission.of(host, origins)
    with TraceFiles(folder, redact=patterns, force=force, warn=warn) as files:
        receive(host, port, files, admission, ready=ready)
    return files
