"""Fingerprint a live MCP server through the official MCP Python SDK (extra ``toolreplay[mcp]``).

The server is started from a command line and spoken to over stdio; its ``tools/list``
(every page) is read and each tool goes through the same path as an MCP JSON
definition, so a live server and a saved ``tools/list`` give the same lock.
"""

from __future__ import annotations

import logging
import os
import shlex
import tempfile
from collections.abc import Sequence
from typing import IO, Any, TextIO

from toolreplay import sdk
from toolreplay.contracts.definitions import ToolDefinition, import_definitions
from toolreplay.contracts.lock import ToolLock
from toolreplay.contracts.text import text_of_tool
from toolreplay.errors import InputError
from toolreplay.escape import one_line, url_shown
from toolreplay.extras import require

#: Seconds allowed for starting the server and listing its tools.
DEFAULT_TIMEOUT = 30.0


def describe(argv: Sequence[str]) -> str:
    """How a server command line is named in messages: ``mcp:`` and the shell-quoted command."""
    return "mcp:" + shlex.join(argv)


def list_mcp_server(
    argv: Sequence[str] | str, *, timeout: float = DEFAULT_TIMEOUT
) -> tuple[list[dict[str, Any]], str]:
    """Start ``argv`` as an MCP stdio server (or ask the Streamable HTTP server at the URL ``argv``):
    its tools as ``tools/list`` JSON objects, and its ``serverInfo.version`` ("" when it gives
    none), the version ``record`` and ``probe`` pin too.

    The server gets this process's environment, as it would started from a shell (the SDK's
    default passes only a few variables, so a server configured through its environment would
    be fingerprinted as another server)."""
    if not argv:
        raise InputError("no MCP server command given")
    require("mcp", "fingerprinting an MCP server")
    # The server's stderr goes to a temp file: quiet on success, quoted on failure. The SDK's log
    # records (a traceback quoting a notification its models refuse) are dropped: they change
    # nothing listed, and the server's text has no place on our stderr.
    with (
        tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog,
        sdk.logs_routed(_dropped),
    ):

        async def fetch() -> tuple[list[dict[str, Any]], str]:
            tools: list[dict[str, Any]] = []
            with sdk.anyio.fail_after(timeout):
                async with sdk.Client(_transport(argv, errlog)) as client:
                    info = client.server_info
                    version = info.version if info is not None else ""
                    cursor: str | None = None
                    while True:
                        page = await client.list_tools(cursor=cursor)
                        tools.extend(
                            tool.model_dump(by_alias=True, exclude_none=True, mode="json")
                            for tool in page.tools
                        )
                        cursor = page.next_cursor
                        if not cursor:
                            return tools, version

        try:
            return sdk.anyio.run(fetch)
        except TimeoutError as err:
            problem = f"the MCP server did not list its tools within {timeout:g} s"
            raise InputError(problem + server_said(errlog), path=_named(argv)) from err
        except Exception as err:  # the SDK and the OS raise many kinds; all mean the same here
            cause = innermost_error(err)
            problem = (
                f"cannot list the tools of the MCP server: {type(cause).__name__}: {one_line(str(cause))}"
            )
            raise InputError(problem + server_said(errlog), path=_named(argv)) from err


def _transport(argv: Sequence[str] | str, errlog: TextIO) -> Any:
    """The SDK's transport to the server: Streamable HTTP to a URL, else stdio to a command started."""
    if isinstance(argv, str):
        return sdk.streamable_http_client(argv)
    params = sdk.StdioServerParameters(command=argv[0], args=list(argv[1:]), env=dict(os.environ))
    return sdk.stdio_client(params, errlog=errlog)


def _named(argv: Sequence[str] | str) -> str:
    """How messages name the server: a URL by its scheme and host only, a command as :func:`describe`."""
    return url_shown(argv) if isinstance(argv, str) else describe(argv)


def url_lock(
    url: str, *, version: str | None, timeout: float = DEFAULT_TIMEOUT
) -> tuple[ToolLock, tuple[str, ...]]:
    """The tool lock of the Streamable HTTP server at ``url`` (nothing runs here: it is asked), with
    ``version`` pinned, else its ``serverInfo.version``; and the warnings of its definitions."""
    tools, server_version = list_mcp_server(url, timeout=timeout)
    imported = import_definitions(
        listed_definitions(tools, path=url_shown(url)),
        version=server_version if version is None else version,
        path=url_shown(url),
    )
    return ToolLock.of(imported.contracts), imported.warnings


def _dropped(record: logging.LogRecord) -> None:
    """A log record of the SDK's, not shown."""


def innermost_error(err: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups from the SDK's task groups."""
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    return err


def server_said(errlog: IO[str]) -> str:
    """The last line the server wrote to stderr, as a clause for an error message."""
    errlog.seek(0)
    lines = [line.strip() for line in errlog.read()[-4000:].splitlines() if line.strip()]
    return f"; the server's last words: {one_line(lines[-1])}" if lines else ""


def listed_definitions(tools: Any, *, path: str) -> list[ToolDefinition]:
    """A server's ``tools/list`` tools (JSON objects, from anywhere: untrusted) as definitions."""
    if not isinstance(tools, list):
        raise InputError("the tools listed are not an array", path=path, pointer="/tools")
    return [_listed(tool, f"/tools/{i}", path) for i, tool in enumerate(tools)]


def _listed(tool: Any, pointer: str, path: str) -> ToolDefinition:
    """One listed tool: an object with a name."""
    if not isinstance(tool, dict):
        raise InputError("the server listed a tool that is not an object", path=path, pointer=pointer)
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise InputError("the server listed a tool without a name", path=path, pointer=pointer)
    annotations = tool.get("annotations")
    return ToolDefinition(
        name=name,
        schema=tool.get("inputSchema", {}),
        shape="mcp",
        annotations=annotations if isinstance(annotations, dict) else None,
        text=text_of_tool(tool),
        pointer=f"{pointer}/inputSchema",
    )
