"""capture/listen.py: the one rule record --listen and serve --listen let requests in by."""

from __future__ import annotations

import json

import pytest

from toolreplay.capture.listen import (
    MAX_BODY_BYTES,
    REQUEST_SECONDS,
    SECONDS_VARIABLE,
    Admission,
    request_seconds,
)
from toolreplay.errors import InputError

ALLOWED = ("http://app.example:8080", "HTTPS://Tools.Example:443")


def _status(listen: str, *headers: tuple[str, str]) -> int | None:
    refusal = Admission.of(listen, ALLOWED).refusal([(k.encode(), v.encode()) for k, v in headers])
    return None if refusal is None else refusal.status


@pytest.mark.parametrize(
    ("listen", "headers", "status"),
    [
        # Host: loopback names and addresses, any port; the address listened on; an allowed origin's host
        ("127.0.0.1", [("host", "127.0.0.1:8001")], None),
        ("127.0.0.1", [("host", "localhost")], None),
        ("127.0.0.1", [("host", "LOCALHOST.:8001")], None),
        ("127.0.0.1", [("host", "127.9.9.9")], None),
        ("127.0.0.1", [("host", "[::1]:8001")], None),
        ("127.0.0.1", [("host", "[::ffff:127.0.0.1]")], None),
        ("127.0.0.1", [("host", "app.example:8001")], None),
        ("127.0.0.1", [("host", "tools.example")], None),
        ("10.1.2.3", [("host", "10.1.2.3:8001")], None),
        ("mcp.lan", [("host", "MCP.lan:8001")], None),
        ("127.0.0.1", [("host", "evil.example")], 421),
        ("127.0.0.1", [("host", "localhost.evil.example")], 421),
        ("127.0.0.1", [("host", "127.0.0.1.evil.example")], 421),
        ("127.0.0.1", [("host", "10.1.2.3")], 421),
        ("127.0.0.1", [("host", "user@localhost")], 421),
        ("127.0.0.1", [("host", "localhost/x")], 421),
        ("127.0.0.1", [("host", "")], 421),
        ("127.0.0.1", [], 421),
        ("127.0.0.1", [("host", "localhost"), ("host", "evil.example")], 421),
        # every interface: not a name a client may use (browsers reach 0.0.0.0 as this machine)
        ("0.0.0.0", [("host", "0.0.0.0:8001")], 421),
        ("::", [("host", "[::]:8001")], 421),
        ("0.0.0.0", [("host", "10.1.2.3:8001")], 421),
        ("0.0.0.0", [("host", "127.0.0.1:8001")], None),
        # Origin: absent, loopback (any port, http or https), or allowed as compared
        ("127.0.0.1", [("host", "localhost"), ("origin", "http://localhost:5173")], None),
        ("127.0.0.1", [("host", "localhost"), ("origin", "https://127.0.0.1")], None),
        ("127.0.0.1", [("host", "localhost"), ("origin", "http://[::1]:6274")], None),
        ("127.0.0.1", [("host", "localhost"), ("origin", "http://APP.example:8080")], None),
        ("127.0.0.1", [("host", "localhost"), ("origin", "https://tools.example")], None),
        ("127.0.0.1", [("host", "localhost"), ("origin", "http://app.example")], 403),
        ("127.0.0.1", [("host", "localhost"), ("origin", "http://tools.example")], 403),
        ("127.0.0.1", [("host", "localhost"), ("origin", "http://evil.example")], 403),
        ("127.0.0.1", [("host", "localhost"), ("origin", "null")], 403),
        ("127.0.0.1", [("host", "localhost"), ("origin", "")], 403),
        ("127.0.0.1", [("host", "localhost"), ("origin", "file://")], 403),
        ("127.0.0.1", [("host", "localhost"), ("origin", "http://localhost.evil.example")], 403),
        ("127.0.0.1", [("host", "localhost"), ("origin", "http://localhost"), ("origin", "null")], 403),
        # a bad Host is named first, whatever the Origin
        ("127.0.0.1", [("host", "evil.example"), ("origin", "null")], 421),
        # a declared body over the limit: refused before it is read
        ("127.0.0.1", [("host", "localhost"), ("content-length", str(MAX_BODY_BYTES))], None),
        ("127.0.0.1", [("host", "localhost"), ("content-length", str(MAX_BODY_BYTES + 1))], 413),
    ],
)
def test_who_is_let_in(listen: str, headers: list[tuple[str, str]], status: int | None) -> None:
    """Host names a loopback name, the address listened on or an allowed origin's host; Origin, when
    sent, is loopback or allowed; a body declared over the limit is refused."""
    assert _status(listen, *headers) == status


def test_a_refusal_is_a_json_rpc_error_that_quotes_the_header_on_one_line() -> None:
    """The body is a JSON-RPC error with id null; the header is quoted, clipped and kept on one line."""
    refusal = Admission.of("127.0.0.1").refusal(
        [(b"host", b"localhost"), (b"origin", b"http://e\x1b[31m" + b"x" * 200)]
    )
    assert refusal is not None
    body = json.loads(refusal.body())
    assert body["jsonrpc"] == "2.0" and body["id"] is None and body["error"]["code"] == -32600
    message = body["error"]["message"]
    assert message.startswith("Origin 'http://e\\x1b[31mxxx") and "...' is not allowed" in message
    assert dict(refusal.headers())[b"Connection"] == b"close"


@pytest.mark.parametrize(
    "origin",
    ["null", "*", "app.example", "ftp://app.example", "http://app.example/", "http://a:0", "http://u@a"],
)
def test_allow_origin_takes_only_an_origin(origin: str) -> None:
    """--allow-origin is scheme://host[:port] as a browser sends it; anything else is refused (exit 2)."""
    with pytest.raises(InputError) as err:
        Admission.of("127.0.0.1", [origin])
    assert str(err.value).startswith(f"--allow-origin '{origin}' is not an origin")


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (None, REQUEST_SECONDS),
        ("1.5", 1.5),
        ("0", REQUEST_SECONDS),
        ("inf", REQUEST_SECONDS),
        ("x", REQUEST_SECONDS),
    ],
)
def test_request_seconds(monkeypatch: pytest.MonkeyPatch, value: str | None, seconds: float) -> None:
    """The environment may shorten the deadline (a positive, finite number); else it is 30 s."""
    if value is None:
        monkeypatch.delenv(SECONDS_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(SECONDS_VARIABLE, value)
    assert request_seconds() == seconds
