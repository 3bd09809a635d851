"""The real MCP servers from the registries start and list their tools through the SDK client."""

from __future__ import annotations

import subprocess

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.realservers import node_server, python_server


def _tools(argv: list[str]) -> set[str]:
    async def listed() -> set[str]:
        params = StdioServerParameters(command=argv[0], args=argv[1:])
        with anyio.fail_after(60):
            async with Client(stdio_client(params)) as client:
                return {tool.name for tool in (await client.list_tools()).tools}

    return anyio.run(listed)


@pytest.mark.parametrize(
    ("argv", "tool"),
    [
        (lambda tmp: python_server("time"), "get_current_time"),
        (lambda tmp: [*python_server("git"), "--repository", str(tmp)], "git_status"),
        (lambda tmp: node_server("memory"), "create_entities"),
        (lambda tmp: [*node_server("filesystem"), str(tmp)], "create_directory"),
        (lambda tmp: node_server("everything"), "echo"),
    ],
    ids=["mcp-server-time", "mcp-server-git", "server-memory", "server-filesystem", "server-everything"],
)
def test_a_real_server_lists_its_tools(argv, tool, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Each installed server answers tools/list with its known tools (the install steps work)."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert tool in _tools(argv(tmp_path))
