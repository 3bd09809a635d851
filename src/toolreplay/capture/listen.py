"""What ``record --listen`` and ``serve --listen`` let in: one rule for both (docs/capture.md).

A web page can make a browser send requests to any address, loopback included, and a name it
controls can be made to resolve to one (DNS rebinding); the MCP specification has servers check
``Origin``. So every request to a listening capture command is held to :class:`Admission`
before anything reads its body or forwards it:

- ``Host`` must name the machine as a local client does: a loopback name or address
  (``localhost``, ``127.0.0.1``, ``[::1]``), the address listened on (unless that is every
  interface, ``0.0.0.0`` or ``::``), or the host of an origin ``--allow-origin`` names; else 421;
- ``Origin``, when sent, must be a loopback origin (``http://localhost:5173``) or one
  ``--allow-origin`` names; ``null`` and any other origin are 403;
- a body declared over :data:`MAX_BODY_BYTES` is 413 at once (one sent in chunks when it gets
  there);
- the whole request must arrive within :func:`request_seconds` of the connection opening or the
  previous answer ending, or the connection is closed.

A refusal is a JSON-RPC error (``id`` null) with the connection closed after it. ``record``'s
proxy (:mod:`toolreplay.capture.http`) and ``serve``'s uvicorn (:mod:`toolreplay.capture.serve`)
apply it; the SDK's own check of these headers is switched off there, as this one replaces it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import math
import os
import re
import signal
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from toolreplay.errors import InputError
from toolreplay.escape import quote
from toolreplay.limits import MAX_RECORD_BYTES

#: the largest request body taken: a transcript line's limit (a larger message cannot be recorded)
MAX_BODY_BYTES = MAX_RECORD_BYTES
#: seconds a client has to send a whole request (head and body) from the connection's start or
#: the end of the previous answer; an answer that takes long (an event stream) is not limited
REQUEST_SECONDS = 30.0
#: the environment variable that sets another number of seconds (the tests use a short one)
SECONDS_VARIABLE = "TOOLREPLAY_REQUEST_SECONDS"
#: the JSON-RPC error code of a refusal (invalid request)
REFUSED_CODE = -32600

_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[^\s:/@\[\]?#]+)(?::([0-9]{1,5}))?")
_ORIGIN = re.compile(r"(https?)://(\[[0-9A-Fa-f:.]+\]|[^\s:/@\[\]?#]+)(?::([0-9]{1,5}))?", re.IGNORECASE)
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: how much of a refused header a message quotes
_SHOWN = 100


def parse_listen(listen: str, option: str = "--listen") -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as (host, port); ``option`` names it in the error."""
    host, sep, port = listen.rpartition(":")
    number = _port(port)
    if not sep or not host or number is None:
        raise InputError(f"{option} {listen!r} is not HOST:PORT")
    return host.strip("[]"), number


def _port(text: str) -> int | None:
    """A port number from 1 to 65535, or None when ``text`` is not one."""
    # (isascii: str.isdigit takes digits int() refuses, such as "²"; five digits at most)
    if not (text.isascii() and text.isdigit() and len(text) <= 5):
        return None
    return int(text) if 0 < int(text) < 65536 else None


#: seconds the requests being answered get once a listening capture command is told to stop (an
#: event stream a client keeps open must not hold it forever)
GRACE = 5.0


async def drain(connections: dict[asyncio.Task[None], bool]) -> None:
    """Cancel each connection's task that is not answering a request (False); give the busy ones
    :data:`GRACE` seconds to finish, then cancel those too."""
    for task, busy in list(connections.items()):
        if not busy:
            task.cancel()
    if not connections:
        return
    _, late = await asyncio.wait(list(connections), timeout=GRACE)
    for task in late:
        task.cancel()
    if late:
        await asyncio.wait(late)


@contextlib.contextmanager
def stop_signals() -> Iterator[asyncio.Event]:
    """An event SIGINT and SIGTERM set until the block ends (then their handlers are put back)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def stopped(*_: object) -> None:
        loop.call_soon_threadsafe(stop.set)

    previous = {signum: signal.signal(signum, stopped) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def request_seconds() -> float:
    """:data:`REQUEST_SECONDS`, or the positive number of seconds :data:`SECONDS_VARIABLE` gives."""
    try:
        seconds = float(os.environ.get(SECONDS_VARIABLE, REQUEST_SECONDS))
    except ValueError:
        return REQUEST_SECONDS
    return seconds if seconds > 0 and math.isfinite(seconds) else REQUEST_SECONDS


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request is not let in: the HTTP status and the message of its JSON-RPC error."""

    status: int
    message: str

    def body(self) -> bytes:
        error = {"jsonrpc": "2.0", "id": None, "error": {"code": REFUSED_CODE, "message": self.message}}
        return json.dumps(error, ensure_ascii=True, separators=(",", ":")).encode("ascii")

    def headers(self) -> list[tuple[bytes, bytes]]:
        return [
            (b"Content-Type", b"application/json"),
            (b"Content-Length", str(len(self.body())).encode()),
            (b"Connection", b"close"),
        ]


TOO_LARGE = Refusal(413, f"the request body is over the {MAX_BODY_BYTES} bytes a request may have")


def _name(host: str) -> str:
    """A host name as compared: lower case, without brackets or a final dot, an address in its
    usual spelling (``::ffff:127.0.0.1`` is ``127.0.0.1``)."""
    host = host.lower().strip("[]").removesuffix(".")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    mapped = getattr(address, "ipv4_mapped", None)
    return str(mapped or address)


def _loopback(name: str) -> bool:
    try:
        return name == "localhost" or ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _origin(text: str) -> tuple[str, str] | None:
    """(the origin as compared, its host's name), or None when ``text`` is no ``scheme://host[:port]``
    a browser sends (``null`` is none)."""
    found = _ORIGIN.fullmatch(text)
    if found is None:
        return None
    scheme, host, port = found[1].lower(), found[2].lower(), found[3]
    if port is not None and not 0 < int(port) < 65536:
        return None
    shown = "" if port is None or int(port) == _DEFAULT_PORTS[scheme] else f":{int(port)}"
    return f"{scheme}://{host.removesuffix('.')}{shown}", _name(host)


def _allowed_origin(text: str) -> tuple[str, str]:
    """An ``--allow-origin`` value as compared, and its host; refused unless it is an origin."""
    origin = _origin(text)
    if origin is None:
        raise InputError(
            f"--allow-origin {quote(text)} is not an origin: give scheme://host[:port]"
            " (http or https), as a browser sends it"
        )
    return origin


def _unspecified(name: str) -> bool:
    """Whether ``name`` is an address that stands for every interface (``0.0.0.0``, ``::``)."""
    try:
        return ipaddress.ip_address(name).is_unspecified
    except ValueError:
        return False


def _too_long(length: bytes) -> bool:
    """Whether a ``Content-Length`` says the body is past the limit."""
    return length.strip().isdigit() and int(length) > MAX_BODY_BYTES


def _shown(value: bytes) -> str:
    text = value.decode("latin-1")
    return quote(text if len(text) <= _SHOWN else text[:_SHOWN] + "...")


@dataclass(frozen=True, slots=True, kw_only=True)
class Admission:
    """Who a listening capture command answers: see the module's docstring."""

    #: the name of the address listened on ("" when it is every interface)
    listening: str
    #: the origins ``--allow-origin`` names, as compared
    origins: frozenset[str] = frozenset()
    #: the names of their hosts, which ``Host`` may name too
    hosts: frozenset[str] = frozenset()

    @classmethod
    def of(cls, listen_host: str, allowed: Sequence[str] = ()) -> Admission:
        """The rule of ``--listen`` on ``listen_host`` with ``--allow-origin`` ``allowed``."""
        origins = [_allowed_origin(text) for text in allowed]
        name = _name(listen_host)
        return cls(
            listening="" if _unspecified(name) else name,
            origins=frozenset(origin for origin, _ in origins),
            hosts=frozenset(host for _, host in origins),
        )

    def refusal(self, headers: Iterable[tuple[bytes, bytes]]) -> Refusal | None:
        """Why a request with ``headers`` (names in lower case) is refused; None to let it in."""
        named: dict[bytes, list[bytes]] = {}
        for key, value in headers:
            named.setdefault(key.lower(), []).append(value)
        refusal = self._host_refusal(named.get(b"host", [])) or self._origin_refusal(named.get(b"origin", []))
        if refusal is None and any(_too_long(length) for length in named.get(b"content-length", [])):
            return TOO_LARGE
        return refusal

    def _host_refusal(self, hosts: list[bytes]) -> Refusal | None:
        """Why the ``Host`` headers are refused, if they are: one, naming this server, is let in."""
        if len(hosts) != 1:
            return Refusal(421, "a request must have one Host header")
        if not self._host_allowed(hosts[0]):
            return Refusal(
                421,
                f"Host {_shown(hosts[0])} is not a name this server answers to (loopback names and"
                " addresses, the address it listens on, and the hosts of --allow-origin)",
            )
        return None

    def _origin_refusal(self, origins: list[bytes]) -> Refusal | None:
        """Why the ``Origin`` headers are refused, if they are: none, or one allowed, is let in."""
        if len(origins) > 1:
            return Refusal(403, "a request may have one Origin header")
        if origins and not self._origin_allowed(origins[0]):
            return Refusal(
                403,
                f"Origin {_shown(origins[0])} is not allowed (loopback origins are;"
                " --allow-origin adds others)",
            )
        return None

    def _host_allowed(self, value: bytes) -> bool:
        found = _HOST.fullmatch(value.decode("latin-1"))
        if found is None:
            return False
        name = _name(found[1])
        return _loopback(name) or name == self.listening or name in self.hosts

    def _origin_allowed(self, value: bytes) -> bool:
        origin = _origin(value.decode("latin-1"))
        return origin is not None and (_loopback(origin[1]) or origin[0] in self.origins)
