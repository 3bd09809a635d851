"""The Streamable HTTP proxy's side toward the target (capture/http.py): the target's origin, and
the HTTP/1.1 connections to it (spoken by h11), kept alive and reused between requests."""

from __future__ import annotations

import asyncio
import base64
import ssl
from urllib.parse import SplitResult, unquote, urlsplit

import h11

from toolreplay import sdk
from toolreplay.escape import url_shown

#: the headers that are not sent on (hop-by-hop, or recomputed by the proxy)
HOP_BY_HOP = frozenset(
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
#: at most this many bytes are read from a socket at once
READ = 65536
#: at most this many idle connections to the target are kept for reuse
_IDLE = 20
#: the largest answer head taken from the target (httpx's limit)
_HEAD_LIMIT = 100 * 1024


class Upstream:
    """One connection to the target, HTTP/1.1 spoken by h11."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        # as httpx sizes it: a target's answer head may be larger than a client's request head
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=_HEAD_LIMIT)

    def usable(self) -> bool:
        """Whether a kept connection can take the next request (the target may have closed it)."""
        return self.h11.our_state is h11.IDLE and not self.reader.at_eof() and not self.writer.is_closing()

    async def receive(self) -> None:
        """Read what the target sent next into h11."""
        self.h11.receive_data(await self.reader.read(READ))

    async def response(self) -> h11.Response:
        """The head of the target's answer (informational answers skipped)."""
        while True:
            event = self.h11.next_event()
            if event is h11.NEED_DATA:
                await self._head_part()
            elif isinstance(event, h11.Response):
                return event
            elif not isinstance(event, h11.InformationalResponse):  # a protocol switch nobody asked for
                raise ConnectionError(f"the target answered with {type(event).__name__}, not a response")

    async def _head_part(self) -> None:
        """Read more of the answer's head into h11 (a connection closed before it is an error)."""
        data = await self.reader.read(READ)
        if not data and not self.h11.trailing_data[0]:
            raise ConnectionError("the target closed the connection before it answered")
        self.h11.receive_data(data)

    def close(self) -> None:
        self.writer.close()


class Target:
    """The target's origin, and the connections to it kept alive between requests."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or ""
        self.tls = _tls_context() if parts.scheme == "https" else None
        self.port = parts.port or (443 if self.tls is not None else 80)
        authority = parts.netloc.rpartition("@")[2]
        #: the target as messages name it (to stderr and in a 502 to the client): the origin the
        #: proxy reaches, never the URL's credentials or query (where an API key often sits)
        self.url = url_shown(url)
        self.headers = [(b"Host", authority.encode("idna")), *_credentials(parts)]
        self.idle: list[Upstream] = []

    async def connect(self) -> Upstream:
        """A kept connection the target has not closed, else a new one."""
        while self.idle:
            upstream = self.idle.pop()
            if upstream.usable():
                return upstream
            upstream.close()
        reader, writer = await asyncio.open_connection(
            self.host, self.port, ssl=self.tls, server_hostname=self.host if self.tls else None
        )
        return Upstream(reader, writer)

    def request(self, request: h11.Request, body: bytes) -> h11.Request:
        """``request`` as the target gets it: the client's headers, less the hop-by-hop ones."""
        headers = [*self.headers, *self._passed(request)]
        if body or request.method in (b"POST", b"PUT", b"PATCH"):
            headers.append((b"Content-Length", str(len(body)).encode()))
        return h11.Request(method=request.method, target=_origin_form(request.target), headers=headers)

    def _passed(self, request: h11.Request) -> list[tuple[bytes, bytes]]:
        """The client's headers the target gets: not the hop-by-hop ones, nor its credentials when
        the target URL's replace them."""
        headers = [(k, v) for k, v in request.headers.raw_items() if k.lower() not in HOP_BY_HOP]
        if self.headers[1:]:  # the target URL's credentials replace the client's
            headers = [(k, v) for k, v in headers if k.lower() != b"authorization"]
        return headers

    def release(self, upstream: Upstream) -> None:
        """Keep ``upstream`` for the next request when its exchange ended cleanly."""
        done = upstream.h11.our_state is h11.DONE and upstream.h11.their_state is h11.DONE
        if done and len(self.idle) < _IDLE:
            upstream.h11.start_next_cycle()
            self.idle.append(upstream)
        else:
            upstream.close()

    def close(self) -> None:
        for upstream in self.idle:
            upstream.close()
        self.idle.clear()


def _credentials(parts: SplitResult) -> list[tuple[bytes, bytes]]:
    """The Basic ``Authorization`` header of a URL's user and password (as httpx did), if it has them."""
    if parts.username is None and parts.password is None:
        return []
    secret = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}".encode()
    return [(b"Authorization", b"Basic " + base64.b64encode(secret))]


def _tls_context() -> ssl.SSLContext:
    """The certificates httpx trusts (``SSL_CERT_FILE``, ``SSL_CERT_DIR``, the system's)."""
    return sdk.httpx2.create_ssl_context()  # the HTTP client the MCP SDK depends on


def _origin_form(target: bytes) -> bytes:
    """The path and query of a request target (a client may name the whole URL)."""
    if target.startswith(b"/") or target == b"*":
        return target
    parts = urlsplit(target.decode("latin-1"))
    path = (parts.path or "/") + ("?" + parts.query if parts.query else "")
    return path.encode("latin-1")
