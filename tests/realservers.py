"""Where the real MCP servers the tests run against live, and how to start them.

The Python ones (mcp-server-git, mcp-server-time) install from PyPI with requirements-dev.txt;
the Node ones (server-everything, -memory, -filesystem, and the conformance suite) from npm
with ``npm install --prefix tests/servers`` (both steps of the README's test command). A test that
needs a server that is not installed is skipped on a developer's machine and fails under CI,
where a missing install step must not pass as a skip.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

NODE_BIN = ROOT / "tests" / "servers" / "node_modules" / ".bin"
PYTHON_BIN = Path(sys.executable).parent


def _require(path: Path, how: str) -> str:
    if path.exists() and (path.suffix or shutil.which(str(path))):
        return str(path)
    message = f"{path.name} is not installed ({how})"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def node_server(name: str) -> list[str]:
    """The command line of an npm MCP server: ``everything``, ``memory``, ``filesystem``."""
    return [_require(NODE_BIN / f"mcp-server-{name}", "npm install --prefix tests/servers")]


def python_server(name: str) -> list[str]:
    """The command line of a PyPI MCP server: ``git`` or ``time``."""
    return [_require(PYTHON_BIN / f"mcp-server-{name}", "pip install -r requirements-dev.txt")]


def conformance() -> list[str]:
    """The official MCP conformance suite's command line."""
    return [_require(NODE_BIN / "conformance", "npm install --prefix tests/servers")]
