"""Where the real MCP servers the tests run against live, and how to start them.

The Python ones (mcp-server-git, mcp-server-time) install from PyPI with requirements-dev.txt;
the Node ones (server-everything, -memory, -filesystem, -sequential-thinking, the conformance
suite, and the TypeScript SDK whose client tests/servers/twin_client.mjs is) from npm
with ``npm install --ignore-scripts --prefix tests/servers`` (both steps of the README's test
command). A test that needs a server that is not installed is skipped on a developer's machine
and fails under CI, where a missing install step must not pass as a skip.

The Python servers start warm (:func:`warm`, tests/prefork.py) outside CI: forked from one
process per test run that has imported the MCP SDK once, which saves each start about 0.9 s of CPU.
In CI, or with ``TOOLREPLAY_COLD_SERVERS`` set, every server is started as users start it.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import signal
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
#: the folder of the run's one zygote, and the process it serves (:func:`share_servers`)
SHARED, OWNER = "TOOLREPLAY_TEST_ZYGOTE", "TOOLREPLAY_TEST_ZYGOTE_OWNER"


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
    return warm([_require(PYTHON_BIN / f"mcp-server-{name}", "pip install -r requirements-dev.txt")])


def typescript_client(script: str) -> list[str]:
    """The command line of ``script`` (in tests/servers), a Node program that uses the TypeScript
    MCP SDK's client (``@modelcontextprotocol/sdk`` from npm)."""
    _require(NODE_BIN.parent / "@modelcontextprotocol" / "sdk" / "package.json", NPM)
    return ["node", str(NODE_BIN.parent.parent / script)]


def conformance() -> list[str]:
    """The official MCP conformance suite's command line."""
    return [_require(NODE_BIN / "conformance", NPM)]


class Zygote:
    """A zygote and the launchers of its scripts this process wrote.

    Started here (ending when this process ends), or, given ``shared`` (a folder an xdist
    controller made, :func:`share_servers`), the one zygote of the whole run: the first worker
    that needs it starts it there, and it ends when the controller ends.
    """

    def __init__(self, preload: list[str], *, shared: str | None = None) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="toolreplay-prefork-"))
        home, owner = (Path(shared), int(os.environ[OWNER])) if shared else (self.folder, os.getpid())
        self.address = str(home / "zygote")
        self.process: subprocess.Popen[bytes] | None = None  # the zygote, if this process started it
        with open(home / "lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one start, whichever worker comes first
            if not (home / "pid").exists():
                argv = [
                    sys.executable,
                    str(ROOT / "tests" / "prefork.py"),
                    "zygote",
                    self.address,
                    str(owner),
                ]
                self.process = subprocess.Popen(
                    [*argv, *preload], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
                )
                (home / "pid").write_text(str(self.process.pid))
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
        end_zygote(self.folder)


def end_zygote(folder: Path) -> None:
    """End the zygote started in ``folder`` (if one was) and remove the folder."""
    with contextlib.suppress(FileNotFoundError, ProcessLookupError, ValueError):
        os.kill(int((folder / "pid").read_text()), signal.SIGKILL)
    shutil.rmtree(folder, ignore_errors=True)


_servers: Zygote | None = None


def warm(argv: list[str]) -> list[str]:
    """The command line ``argv`` (``python SCRIPT ARGS`` or a console script of this venv) started
    warm: a launcher that forks the script from the zygote (the run's one, under xdist), which
    has imported :data:`PRELOAD`. Cold (``argv`` itself) in CI, where ``TOOLREPLAY_COLD_SERVERS``
    is set, and for any other command line."""
    global _servers
    if COLD or script_of(argv) is None:
        return argv
    if _servers is None:
        _servers = Zygote(PRELOAD, shared=os.environ.get(SHARED))
    return _servers.command(argv)


def share_servers() -> None:
    """In the xdist controller, before its workers start: a folder where the first worker that
    starts a server starts the zygote for all of them (each worker's own would import the SDK
    again), ended with this process. Nothing starts if no test starts a Python server."""
    if COLD or SHARED in os.environ:
        return
    folder = Path(tempfile.mkdtemp(prefix="toolreplay-prefork-"))
    os.environ[SHARED], os.environ[OWNER] = str(folder), str(os.getpid())
    atexit.register(end_zygote, folder)


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
