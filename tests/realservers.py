"""Where the real MCP servers the tests run against live, and how to start them.

The Python ones (mcp-server-git, mcp-server-time) install from PyPI with requirements-dev.txt;
the Node ones (server-everything, -memory, -filesystem, -sequential-thinking, the conformance
suite, and the TypeScript SDK whose client tests/servers/twin_client.mjs is) from npm
with ``npm install --ignore-scripts --prefix tests/servers`` (both steps of the README's test
command). A test that needs a server that is not installed is skipped on a developer's machine
and fails under CI, where a missing install step must not pass as a skip.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

NODE_BIN = ROOT / "tests" / "servers" / "node_modules" / ".bin"
PYTHON_BIN = Path(sys.executable).parent


NPM = "npm install --ignore-scripts --prefix tests/servers"


def _require(path: Path, how: str) -> str:
    if path.exists() and (path.suffix or shutil.which(str(path))):
        return str(path)
    message = f"{path.name} is not installed ({how})"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def node_server(name: str) -> list[str]:
    """The command line of an npm MCP server: ``everything``, ``memory``, ``filesystem``,
    ``sequential-thinking``."""
    return [_require(NODE_BIN / f"mcp-server-{name}", NPM)]


def python_server(name: str) -> list[str]:
    """The command line of a PyPI MCP server: ``git`` or ``time``."""
    return [_require(PYTHON_BIN / f"mcp-server-{name}", "pip install -r requirements-dev.txt")]


def typescript_client(script: str) -> list[str]:
    """The command line of ``script`` (in tests/servers), a Node program that uses the TypeScript
    MCP SDK's client (``@modelcontextprotocol/sdk`` from npm)."""
    _require(NODE_BIN.parent / "@modelcontextprotocol" / "sdk" / "package.json", NPM)
    return ["node", str(NODE_BIN.parent.parent / script)]


def conformance() -> list[str]:
    """The official MCP conformance suite's command line."""
    return [_require(NODE_BIN / "conformance", NPM)]
