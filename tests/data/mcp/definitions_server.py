"""A real MCP server (the SDK's low-level Server) that lists the tool definitions of a JSON file.

Run: ``python definitions_server.py TOOLS.json``; TOOLS.json is a list of MCP tool definitions
(``name``, ``description``, ``inputSchema``, ...), read at start. Every call of ``add`` answers
``{"sum": a + b}`` as JSON text, whatever the definitions say: only what it says about itself
changes between two files.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

with open(sys.argv[1], encoding="utf-8") as listed:
    TOOLS = [types.Tool.model_validate(definition) for definition in json.load(listed)]


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    answer = json.dumps({"sum": args.get("a", 0) + args.get("b", 0)})
    return types.CallToolResult(content=[types.TextContent(type="text", text=answer)])


async def main() -> None:
    server = Server("definitions", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
