"""Where the real MCP servers the tests run against live, and how to start them.

The Python ones (mcp-server-git, mcp-server-time) install from PyPI with requirements-dev.txt;
the Node ones (server-everything, -memory, -filesystem, and the conformance suite) from npm
with ``npm install --prefix tests/servers`` (both steps of the README's test command). A test that
needs a server that is not installed is skipped on a developer's machine and fails under CI,
where a missing install step must not pass as a skip.

The Python servers start warm (:func:`warm`, tests/prefork.py) outside CI: forked from a process
per test worker that has imported the MCP SDK once, which saves each start about 0.9 s of CPU.
In CI, or with ``TOOLREPLAY_COLD_SERVERS`` set, every server is started as users start it.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.prefork import launcher_text

ROOT = Path(__file__).resolve().parent.parent

NODE_BIN = ROOT / "tests" / "servers" / "node_modules" / ".bin"
PYTHON_BIN = Path(sys.executable).parent
#: servers start as users start them (exec'd, importing the SDK) in CI, or where asked for
COLD = bool(os.environ.get("CI") or os.environ.get("TOOLREPLAY_COLD_SERVERS"))
#: what the zygote imports before it forks: the SDK's server and the PyPI servers' modules
PRELOAD = ["mcp.server.mcpserver", "mcp_server_time", "mcp_server_git"]
#: where the xdist workers find the one zygote their controller started (:func:`share_servers`)
SHARED = "TOOLREPLAY_TEST_ZYGOTE"


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
    return warm([_require(PYTHON_BIN / f"mcp-server-{name}", "pip install -r requirements-dev.txt")])


def conformance() -> list[str]:
    """The official MCP conformance suite's command line."""
    return [_require(NODE_BIN / "conformance", "npm install --prefix tests/servers")]


class Zygote:
    """A zygote (it ends when the process that started it ends), and the launchers of its scripts
    this process wrote; with ``address``, the zygote another process started there."""

    def __init__(self, preload: list[str], *, address: str | None = None) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="toolreplay-prefork-"))
        self.process: subprocess.Popen[bytes] | None = None
        self.address = address or str(self.folder / "zygote")
        if address is None:
            argv = [sys.executable, str(ROOT / "tests" / "prefork.py"), "zygote", self.address, *preload]
            # its stdin is a pipe from this process: when this process ends, however it ends, the
            # zygote reads end-of-file and ends, and its servers with it
            self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
        self.launchers: dict[str, str] = {}
        atexit.register(self.stop)

    def command(self, argv: list[str]) -> list[str]:
        """``argv`` (a Python script of this interpreter and its arguments) run from this zygote."""
        script = script_of(argv)
        assert script is not None, argv
        return [self.launcher(script), *argv[2 if argv[0] == sys.executable else 1 :]]

    def launcher(self, script: str) -> str:
        """An executable named like ``script`` that runs it forked from the zygote."""
        if script not in self.launchers:
            home = self.folder / str(len(self.launchers))
            home.mkdir()
            path = home / Path(script).name
            path.write_text(launcher_text(self.address, script))
            path.chmod(0o755)
            self.launchers[script] = str(path)
        return self.launchers[script]

    def stop(self) -> None:
        if self.process is not None and self.process.stdin is not None:
            self.process.stdin.close()
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


_servers: Zygote | None = None


def warm(argv: list[str]) -> list[str]:
    """The command line ``argv`` (``python SCRIPT ARGS`` or a console script of this venv) started
    warm: a launcher that forks the script from the zygote (the workers share their controller's),
    which has imported
    :data:`PRELOAD`. Cold (``argv`` itself) in CI, where ``TOOLREPLAY_COLD_SERVERS`` is set, and
    for any other command line."""
    global _servers
    if COLD or script_of(argv) is None:
        return argv
    if _servers is None:
        _servers = Zygote(PRELOAD, address=os.environ.get(SHARED))
    return _servers.command(argv)


def share_servers() -> None:
    """Start the zygote here, in the xdist controller before its workers start, for all of them
    (each worker's own would import the SDK again)."""
    global _servers
    if not COLD and _servers is None:
        _servers = Zygote(PRELOAD)
        os.environ[SHARED] = _servers.address


def script_of(argv: list[str]) -> str | None:
    """The Python script ``argv`` runs with this interpreter, if it is that simple."""
    if len(argv) >= 2 and argv[0] == sys.executable and argv[1].endswith(".py"):
        return argv[1]
    if argv and Path(argv[0]).parent == PYTHON_BIN:
        with open(argv[0], "rb") as head:
            line = head.readline()
        interpreter = Path(os.fsdecode(line[2:].strip())) if line.startswith(b"#!") else None
        if (
            interpreter
            and interpreter.parent == PYTHON_BIN
            and interpreter.resolve() == Path(sys.executable).resolve()
        ):
            return argv[0]
    return None
