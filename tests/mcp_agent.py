"""Helpers for the capture tests: the real test MCP server, and real clients talking to it.

The agent is either the MCP SDK's own ``Client`` (in the test process) or a raw pipe that
writes JSON-RPC lines byte for byte (to prove the proxy changes no byte and to kill it
mid-session).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

SERVER = Path(__file__).resolve().parent / "data" / "mcp" / "server.py"
#: the command that runs the test server over stdio
SERVER_CMD = [sys.executable, str(SERVER)]
#: the command that runs toolreplay's CLI in a child process
TOOLREPLAY = [sys.executable, "-m", "toolreplay"]
#: every wait in these tests is bounded by this many seconds
TIMEOUT = 60.0


def server_env(**extra: str) -> dict[str, str]:
    """The environment for a test server: quiet, deterministic, with ``extra`` set."""
    env = dict(os.environ)
    env.update({"PYTHONUNBUFFERED": "1", "SERVER_VERSION": "1.0.0"}, **extra)
    return env


def dump(result: Any) -> dict[str, Any]:
    """A pydantic result from the SDK as the JSON object it came as."""
    data: dict[str, Any] = result.model_dump(by_alias=True, exclude_unset=True, mode="json")
    return data


def request(ident: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode() + b"\n"


INITIALIZE = request(
    0,
    "initialize",
    {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "pipe", "version": "0"}},
)
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'

_UNREAD = "not a JSON-RPC message an MCP peer reads; passed on, not looked at"
#: client messages record cannot judge, each with the warning it gives: passed on, and the session goes on
MALFORMED: list[tuple[bytes, str]] = [
    (b'{"jsonrpc":"2.0","id":9,"method":[1]}', _UNREAD),
    (b'{"jsonrpc":"2.0","id":10,"method":{}}', _UNREAD),
    (b'{"jsonrpc":"2.0","id":11,"method":"tools/call","params":[1]}', _UNREAD),
    (b'{"jsonrpc":"2.0","id":12,"method":"tools/list","params":"x"}', _UNREAD),
    (b'[{"jsonrpc":"2.0","id":13,"method":[1]}]', _UNREAD),
    (b'{"jsonrpc":"2.0","method":{"a":1}}', _UNREAD),
    (b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":[14]}', _UNREAD),
    (b'{"jsonrpc":"2.0","id":15,"result":[1]}', _UNREAD),
    (b'{"jsonrpc":"2.0","id":16,"error":"no"}', _UNREAD),
    (
        b'{"jsonrpc":"2.0","id":[17],"method":"tools/call","params":{"name":"echo"}}',
        "tools/call with id '[17]' is not a request an MCP peer accepts (ids are integers or strings);"
        " passed on, not recorded",
    ),
]


class PipeAgent:
    """A client that writes raw lines to a process's stdin and reads its stdout line by line."""

    def __init__(
        self, argv: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> None:
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
        self.received: list[bytes] = []

    @property
    def stdin(self) -> IO[bytes]:
        assert self.process.stdin is not None
        return self.process.stdin

    def send(self, line: bytes) -> None:
        self.stdin.write(line)
        self.stdin.flush()

    def ask(self, line: bytes) -> bytes:
        """Send a request and return the next line (asked one at a time, the server answers in order)."""
        self.send(line)
        assert self.process.stdout is not None
        answer = self.process.stdout.readline()
        self.received.append(answer)
        return answer

    def answer_to(self, ident: int) -> dict[str, Any]:
        """The first line from now on that answers request ``ident`` (others are skipped), within
        :data:`TIMEOUT`; an AssertionError when output ends or the time runs out without it."""
        assert self.process.stdout is not None
        stdout = self.process.stdout
        found: queue.Queue[dict[str, Any] | None] = queue.Queue()

        def read() -> None:
            for line in stdout:
                with contextlib.suppress(ValueError):
                    message = json.loads(line)
                    if isinstance(message, dict) and message.get("id") == ident:
                        found.put(message)
                        return
            found.put(None)

        threading.Thread(target=read, daemon=True).start()
        try:
            answer = found.get(timeout=TIMEOUT)
        except queue.Empty:
            answer = None
        if answer is None:
            raise AssertionError(f"request {ident} was never answered")
        return answer

    def finish(self) -> tuple[int, bytes, bytes]:
        """Close stdin; return (exit status, the rest of stdout, stderr)."""
        rest, err = self.process.communicate(timeout=TIMEOUT)
        return self.process.returncode, rest, err


#: the one line serve says once it answers (docs/spec.md §8)
READY = re.compile(rb"toolreplay: serving .+ \(\d+ recorded calls?\) at (stdio|http://\S+/mcp)\n")


def after_ready(err: bytes) -> bytes:
    """serve's stderr after its ready line, which must be its first."""
    found = READY.match(err)
    assert found is not None, err
    return err[found.end() :]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    """Block until something accepts connections on 127.0.0.1:port (or the process died)."""
    import socket
    import time

    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"{process.args!r} exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on port {port}")


def stop(process: subprocess.Popen[bytes]) -> tuple[int, bytes]:
    """SIGTERM a process started by a test; return its exit status and stderr."""
    process.terminate()
    try:
        _, err = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        try:
            _, err = process.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:  # killed, yet its output never ends: a child holds it
            raise AssertionError(f"{process.args!r}: a process it started still holds its output") from None
    return process.returncode, err or b""


async def refuse(*_: Any) -> Any:
    """A client callback that answers every request from the server with an error."""
    from mcp.types import ErrorData

    return ErrorData(code=-1, message="no")


#: the SDK client's options that declare sampling, elicitation and roots
DECLARE_ALL = {"sampling_callback": refuse, "elicitation_callback": refuse, "list_roots_callback": refuse}


def record_calls(
    tmp: Path,
    server: list[str],
    calls: list[tuple[str, dict[str, Any]]],
    *,
    declare: bool = False,
    client: dict[str, Any] | None = None,
) -> tuple[Path, Path]:
    """Record ``calls`` through ``toolreplay record`` with the SDK's client (``client``: its
    options; ``declare``: sampling, elicitation and roots); the transcript ``tmp/run.jsonl`` and lock."""
    import anyio
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    out, lock = tmp / "run.jsonl", tmp / "tools.lock.json"
    argv = [*TOOLREPLAY, "record", "-o", str(out), "--lock", str(lock), "--", *server]
    extra: dict[str, Any] = dict(DECLARE_ALL) if declare else dict(client or {})

    async def agent() -> None:
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
        with anyio.fail_after(TIMEOUT):
            async with Client(stdio_client(params), **extra) as client:
                await client.list_tools()
                for tool, args in calls:
                    await client.call_tool(tool, args)

    anyio.run(agent)
    return out, lock
