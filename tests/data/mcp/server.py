"""A small real MCP server (the SDK's MCPServer) for the capture tests.

Tools: ``echo`` (deterministic), ``clock`` (answers change between processes: it reads
the CLOCK_SEED environment variable), ``counter`` (1, 2, 3, ... within a process),
``write_note`` (a mutator without annotations: it appends to the file named by NOTES_FILE),
``erase_notes`` (declared destructive; it appends too), ``picture`` (an
image: base64 PNG bytes), ``big`` (MBs of text), ``greet`` (non-ASCII), ``slow`` (sleeps,
reporting progress; SLOW_HANG=1 makes it never answer), ``fail`` (raises).
Run: ``python server.py [stdio|http PORT]``. SERVER_VERSION sets serverInfo.version;
SCHEMA_LIMIT changes ``echo``'s input schema (a contract change).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

server = MCPServer("capture-test", version=os.environ.get("SERVER_VERSION", "1.0.0"))
READ_ONLY = ToolAnnotations(readOnlyHint=True)
LIMIT = int(os.environ.get("SCHEMA_LIMIT", "1000"))
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f80f0000010101005d0a2db40000000049454e44ae426082"
)


@server.tool(annotations=READ_ONLY)
def echo(text: Annotated[str, Field(max_length=LIMIT)], times: int = 1) -> str:
    """Repeat the text."""
    return text * times


@server.tool(annotations=READ_ONLY)
def clock(zone: str) -> str:
    """An answer that changes from one server process to the next."""
    return f"{zone}: {os.environ.get('CLOCK_SEED', '0')}"


COUNT = [0]


@server.tool(annotations=READ_ONLY)
def counter() -> int:
    """Answers 1, 2, 3, ... within one server process; with COUNTER_FILE, across processes (the
    count kept in that file, as a server keeps state in a database)."""
    kept = Path(os.environ.get("COUNTER_FILE", ""))
    if kept.name:
        COUNT[0] = int(kept.read_text(encoding="ascii")) if kept.exists() else 0
    COUNT[0] += 1
    if kept.name:
        kept.write_text(str(COUNT[0]), encoding="ascii")
    return COUNT[0]


@server.tool()
def write_note(text: str) -> str:
    """Append a note (changes state)."""
    with open(os.environ["NOTES_FILE"], "a", encoding="utf-8") as out:
        out.write(text + "\n")
    return "written"


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True))
def erase_notes() -> str:
    """Declared destructive (it only appends a line, so a test can see it ran)."""
    with open(os.environ["NOTES_FILE"], "a", encoding="utf-8") as out:
        out.write("erased\n")
    return "erased"


@server.tool(annotations=READ_ONLY)
def picture() -> Image:
    """A 1x1 PNG."""
    return Image(data=PNG, format="png")


@server.tool(annotations=READ_ONLY)
def big(megabytes: int) -> str:
    """MBs of text."""
    return ("0123456789abcdef" * 65536) * megabytes


@server.tool(annotations=READ_ONLY)
def greet(name: str) -> str:
    """Non-ASCII, with a character outside the BMP and a raw U+2028."""
    return f"Grüße, {name} — 你好 🎉\u2028!"


@server.tool(annotations=READ_ONLY)
async def slow(seconds: float, tag: str, ctx: Context) -> str:
    """Sleep, reporting progress halfway."""
    await ctx.report_progress(0.5, 1.0, "half way")
    await anyio.sleep(seconds if os.environ.get("SLOW_HANG") != "1" else 3600)
    return tag


@server.tool(annotations=READ_ONLY)
def fail(reason: str) -> str:
    """Always raises: the server answers with a tool error."""
    raise ToolError(reason)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
