"""The MCP SDK, as toolreplay uses it: the one module that imports it (the ``mcp`` extra).

Every part of the SDK (and of what it brings: anyio, pydantic, uvicorn, httpx) that toolreplay
uses is a name of this module, imported the first time it is used: ``sdk.types.Tool``,
``sdk.Client(...)``. So the modules that speak MCP import this one at their top, and a command
that never touches the SDK never pays for it (importing it takes longer than most servers take
to start).

Without the extra, the first use is an ``InputError`` that says how to install it (the commands
that need the SDK check for it before they start anything: ``toolreplay.extras.require``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from toolreplay.errors import InputError
from toolreplay.extras import install_hint
from toolreplay.lazy import module_attribute

if TYPE_CHECKING:
    import anyio as anyio
    import httpx2 as httpx2
    import mcp_types as mcp_types
    import uvicorn as uvicorn
    from mcp import Client as Client
    from mcp import StdioServerParameters as StdioServerParameters
    from mcp import types as types
    from mcp.client.stdio import stdio_client as stdio_client
    from mcp.client.streamable_http import streamable_http_client as streamable_http_client
    from mcp.server.caching import CACHEABLE_METHODS as CACHEABLE_METHODS
    from mcp.server.caching import CacheHint as CacheHint
    from mcp.server.connection import Connection as Connection
    from mcp.server.context import ServerRequestContext as ServerRequestContext
    from mcp.server.lowlevel import Server as Server
    from mcp.server.runner import serve_loop as serve_loop
    from mcp.server.stdio import stdio_server as stdio_server
    from mcp.server.transport_security import TransportSecuritySettings as TransportSecuritySettings
    from mcp.shared.exceptions import MCPError as MCPError
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS as MODERN_PROTOCOL_VERSIONS
    from pydantic import TypeAdapter as TypeAdapter
    from pydantic import ValidationError as ValidationError
    from uvicorn.protocols.http.h11_impl import H11Protocol as H11Protocol

#: each name this module gives: ``"module"`` or ``"module:attribute"``
PARTS: dict[str, str] = {
    "CACHEABLE_METHODS": "mcp.server.caching:CACHEABLE_METHODS",
    "CacheHint": "mcp.server.caching:CacheHint",
    "Client": "mcp:Client",
    "H11Protocol": "uvicorn.protocols.http.h11_impl:H11Protocol",
    "Connection": "mcp.server.connection:Connection",
    "MCPError": "mcp.shared.exceptions:MCPError",
    "MODERN_PROTOCOL_VERSIONS": "mcp_types.version:MODERN_PROTOCOL_VERSIONS",
    "Server": "mcp.server.lowlevel:Server",
    "ServerRequestContext": "mcp.server.context:ServerRequestContext",
    "StdioServerParameters": "mcp:StdioServerParameters",
    "TransportSecuritySettings": "mcp.server.transport_security:TransportSecuritySettings",
    "TypeAdapter": "pydantic:TypeAdapter",
    "ValidationError": "pydantic:ValidationError",
    "anyio": "anyio",
    "httpx2": "httpx2",
    "mcp_types": "mcp_types",
    "serve_loop": "mcp.server.runner:serve_loop",
    "stdio_client": "mcp.client.stdio:stdio_client",
    "stdio_server": "mcp.server.stdio:stdio_server",
    "streamable_http_client": "mcp.client.streamable_http:streamable_http_client",
    "types": "mcp.types",
    "uvicorn": "uvicorn",
}


#: the loggers the SDK and what it brings log under: its modules' (``mcp.*``, ``mcp_types.*``), its
#: client session's and server entry's own (``client``, ``server``) and its HTTP stack's
LOGGERS = ("mcp", "mcp_types", "client", "server", "httpx2", "uvicorn", "starlette", "sse_starlette")


class _Routed(logging.Handler):
    def __init__(self, to: Callable[[logging.LogRecord], None]) -> None:
        super().__init__(logging.WARNING)
        self.to = to

    def emit(self, record: logging.LogRecord) -> None:
        self.to(record)


@contextmanager
def logs_routed(to: Callable[[logging.LogRecord], None]) -> Iterator[None]:
    """Hand the SDK's log records (warnings and worse) to ``to``, and none to the terminal.

    Left alone, Python prints them on stderr, tracebacks and all, and they quote what the other
    side sent (a server's notification params, a client's request): the caller says what is worth
    saying, in one line of its own.
    """
    handler = _Routed(to)
    loggers = [logging.getLogger(name) for name in LOGGERS]
    before = [logger.propagate for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.propagate = False
    try:
        yield
    finally:
        for logger, propagate in zip(loggers, before, strict=True):
            logger.removeHandler(handler)
            logger.propagate = propagate


def _part(name: str) -> Any:
    try:
        return module_attribute(globals(), PARTS, name)
    except ModuleNotFoundError as err:
        raise InputError(f"this needs the MCP SDK ({err.name} is missing): {install_hint('mcp')}") from None


if not TYPE_CHECKING:  # the type checker sees the imports above: a misspelt name is its error

    def __getattr__(name: str) -> Any:
        return _part(name)


def connection(ctx: ServerRequestContext[Any]) -> Connection:
    """The connection a request came on: its session id, and the teardown the SDK runs when it ends
    (the low-level server's request context reaches it only through the session it carries)."""
    found: Connection = ctx.session._connection
    return found


def load(*names: str) -> None:
    """Import the parts ``names`` now (for a command that will need them soon)."""
    for name in names:
        _part(name)
