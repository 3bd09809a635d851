"""A faithful twin: `serve` of a recording made with one SDK client answers another SDK client as
the live server answered it (server info, capabilities, instructions, tools, resources, prompts,
calls), over stdio and Streamable HTTP (docs/spec.md §8).

The clients are the real ones: the Python ``mcp`` SDK's ``Client`` in its default mode (it opens with
``server/discover``, then falls back) and in legacy mode, and the TypeScript SDK's ``Client`` from
npm (tests/servers/twin_client.mjs). The server is npm's server-everything.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.acceptance.test_pytest_mcp import INI, OUTER
from tests.acceptance.test_pytest_plugin import started_as_it_stands
from tests.conftest import ROOT
from tests.mcp_agent import TIMEOUT, TOOLREPLAY, dump, free_port, server_env, stop, wait_for_port
from tests.realservers import node_server, python_server, typescript_client

pytest_plugins = ["pytester"]

REFERENCE = ROOT / "tests" / "data" / "mcp" / "conformance_server.py"
DOC = "demo://resource/static/document/architecture.md"
#: what each client asks of server-everything, the same requests whichever client it is
PLAN: dict[str, Any] = {
    "resources": True,
    "reads": [DOC],
    "prompts": [["args-prompt", {"city": "Lyon"}]],
    "progress": ["trigger-long-running-operation", {"duration": 0.3, "steps": 3}],
    "calls": [
        ["echo", {"message": "hi"}],
        ["get-sum", {"a": 1, "b": 2}],
        ["echo", {"message": "unrecorded"}],
    ],
}


def _thought(number: int, text: str) -> list[Any]:
    args = {"thought": text, "thoughtNumber": number, "totalThoughts": 3, "nextThoughtNeeded": True}
    return ["sequentialthinking", args]


def _convert(time: str) -> list[Any]:
    return [
        "convert_time",
        {"source_timezone": "Europe/Lisbon", "time": time, "target_timezone": "Asia/Tokyo"},
    ]


@dataclass(frozen=True)
class Server:
    """A real server the twin is compared with: how it starts, over which transports, what is asked."""

    name: str
    argv: Callable[[], list[str]]
    transports: tuple[str, ...]
    #: the requests; the last call is never recorded, so the twin must say it misses it
    plan: dict[str, Any]
    #: whether the server answers server/discover (the 2026 revision) too
    modern: bool = False
    #: its command line serving Streamable HTTP on a port (default: ``argv`` and ``streamableHttp``)
    http: Callable[[int], list[str]] | None = None

    def http_argv(self, port: int) -> list[str]:
        return self.http(port) if self.http is not None else [*self.argv(), "streamableHttp"]

    @property
    def recorded_plan(self) -> dict[str, Any]:
        return {**self.plan, "calls": self.plan["calls"][:-1]}


SERVERS = (
    # npm, the TypeScript SDK's server: the initialize handshake only; tools, resources, prompts, progress
    Server("everything", lambda: node_server("everything"), ("stdio", "http"), PLAN),
    # npm: a tool that keeps state from call to call (each process starts afresh)
    Server(
        "sequential-thinking",
        lambda: node_server("sequential-thinking"),
        ("stdio",),
        {"calls": [_thought(1, "first"), _thought(2, "second"), _thought(2, "unrecorded")]},
    ),
    # PyPI, the Python SDK's server: it answers server/discover (the 2026 revision) too
    Server(
        "time",
        lambda: [*python_server("time"), "--local-timezone", "Europe/Lisbon"],
        ("stdio",),
        {"calls": [_convert("11:00"), _convert("12:30")]},
        modern=True,
    ),
    # the Python SDK's server (the conformance suite's reference server): the 2026 revision over HTTP
    Server(
        "reference",
        lambda: [sys.executable, str(REFERENCE)],
        ("http",),
        {
            "resources": True,
            "reads": ["test://static-text"],
            "prompts": [["test_prompt_with_arguments", {"arg1": "a", "arg2": "b"}]],
            "calls": [
                ["test_simple_text", {}],
                ["test_multiple_content_types", {}],
                ["test_error_handling", {}],
            ],
        },
        modern=True,
        http=lambda port: [sys.executable, str(REFERENCE), str(port)],
    ),
)
EVERYTHING = SERVERS[0]

#: a server the client reaches: ("stdio", command line) or ("http", URL)
Target = tuple[str, list[str]]


async def _python(mode: str, target: Target, plan: dict[str, Any]) -> dict[str, Any]:
    """What the Python SDK's client in ``mode`` sees when it runs ``plan`` against ``target``."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.shared.exceptions import MCPError

    async def kept(request: Any) -> Any:
        try:
            return dump(await request)
        except MCPError as err:
            return {"error": [err.error.code, err.error.message]}

    kind, where = target
    server: Any = where[0]
    if kind == "stdio":
        server = stdio_client(StdioServerParameters(command=where[0], args=where[1:], env=server_env()))
    seen: dict[str, Any] = {}
    with anyio.fail_after(TIMEOUT):
        async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
            seen["server"] = [dump(client.server_info), dump(client.server_capabilities), client.instructions]
            seen["tools"] = await kept(client.list_tools())
            if plan.get("progress"):
                progress: list[Any] = []

                async def on_progress(done: float, total: float | None, message: str | None) -> None:
                    progress.append([done, total, message])

                name, args = plan["progress"]
                seen["progress"] = [await kept(client.call_tool(name, args, progress_callback=on_progress))]
                seen["progress"].append(progress)
            if plan.get("resources"):
                seen["resources"] = await kept(client.list_resources())
                seen["templates"] = await kept(client.list_resource_templates())
            seen["reads"] = [await kept(client.read_resource(uri)) for uri in plan.get("reads", ())]
            if plan.get("prompts"):
                seen["promptList"] = await kept(client.list_prompts())
            prompts = plan.get("prompts", ())
            seen["prompts"] = [await kept(client.get_prompt(name, args)) for name, args in prompts]
            seen["calls"] = [await kept(client.call_tool(name, args)) for name, args in plan["calls"]]
    return seen


def _typescript(target: Target, plan: dict[str, Any]) -> dict[str, Any]:
    """What the TypeScript SDK's client sees when it runs ``plan`` against ``target``."""
    kind, where = target
    done = subprocess.run(
        [*typescript_client("twin_client.mjs"), json.dumps(plan), kind, *where],
        capture_output=True,
        text=True,
        timeout=TIMEOUT * 2,
        env=server_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen: dict[str, Any] = json.loads(done.stdout)
    return seen


def sees(client: str, target: Target, plan: dict[str, Any]) -> dict[str, Any]:
    """What ``client`` (``python``, ``legacy``: the Python client's modes; ``typescript``) sees."""
    if client == "typescript":
        return _typescript(target, plan)
    return anyio.run(_python, "auto" if client == "python" else "legacy", target, plan)


def _start(argv: list[str], port: int, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env or server_env()
    )
    wait_for_port(port, process)
    return process


class Live:
    """A real server over one transport, started once for the live answers and the recording (over
    stdio, each client starts its own process)."""

    def __init__(self, server: Server, transport: str) -> None:
        self.server, self.transport = server, transport
        self.process: subprocess.Popen[bytes] | None = None
        if transport == "http":
            self.port = free_port()
            env = server_env(PORT=str(self.port))
            self.process = _start(server.http_argv(self.port), self.port, env)

    @property
    def target(self) -> Target:
        if self.transport == "http":
            return ("http", [f"http://127.0.0.1:{self.port}/mcp"])
        return ("stdio", self.server.argv())

    def sees(self, client: str) -> dict[str, Any]:
        """What ``client`` sees of the live server when it runs the whole plan."""
        return sees(client, self.target, self.server.plan)

    def record(self, client: str, out: Path) -> dict[str, Any]:
        """Record ``client`` running the recorded plan through ``toolreplay record --seal``."""
        record = [*TOOLREPLAY, "record", "-o", str(out), "--seal"]
        plan = self.server.recorded_plan
        if self.transport == "stdio":
            return sees(client, ("stdio", [*record, "--", *self.target[1]]), plan)
        port = free_port()
        proxy = _start([*record, "--listen", f"127.0.0.1:{port}", "--target", self.target[1][0]], port)
        try:
            return sees(client, ("http", [f"http://127.0.0.1:{port}/mcp"]), plan)
        finally:
            stop(proxy)

    def close(self) -> None:
        if self.process is not None:
            stop(self.process)


def served(transport: str, recording: Path, client: str, plan: dict[str, Any]) -> dict[str, Any]:
    """What ``client`` sees from ``toolreplay serve`` of ``recording`` over ``transport``."""
    serve = [*TOOLREPLAY, "serve", str(recording)]
    if transport == "stdio":
        return sees(client, ("stdio", serve), plan)
    port = free_port()
    process = _start([*serve, "--listen", f"127.0.0.1:{port}"], port)
    try:
        return sees(client, ("http", [f"http://127.0.0.1:{port}/mcp"]), plan)
    finally:
        stop(process)


def missed(seen: dict[str, Any], client: str) -> dict[str, Any]:
    """``seen`` less its last call, which must be the twin's miss: a tool error saying so."""
    last = seen["calls"].pop()
    assert last["isError"] is True, last
    assert last["content"][0]["text"].startswith("snapshot miss: "), last
    return comparable(seen, client)


def comparable(seen: dict[str, Any], client: str) -> dict[str, Any]:
    """``seen`` less what the client itself does not see the same way twice: the TypeScript client
    drops a progress notification that arrives on the heels of its answer (live too; on a busy
    machine all three can), so only that the ones it took came in order is checked (the Python
    client's progress is compared whole)."""
    if client == "typescript" and "progress" in seen:
        notes = seen["progress"].pop()
        assert notes == [{"progress": n, "total": 3} for n in range(1, len(notes) + 1)], notes
    return seen


#: (the client that records, the clients that replay): each replays a recording of the other client
PAIRS = [("typescript", ("python", "legacy")), ("python", ("typescript", "legacy"))]


def ignoring_list_changed(capabilities: dict[str, Any]) -> dict[str, Any]:
    """Server capabilities less their ``listChanged`` flags."""
    return {
        name: {key: value for key, value in each.items() if key != "listChanged"}
        if isinstance(each, dict)
        else each
        for name, each in capabilities.items()
    }


#: the case the default tier runs: the TypeScript client (and the legacy one) against serve of a
#: recording the Python client made; the rest of the matrix is the slow tier's
DEFAULT_CASE = "time-stdio-python"

CASES = [
    pytest.param(
        server,
        transport,
        recorder,
        replayers,
        id=f"{server.name}-{transport}-{recorder}",
        marks=() if f"{server.name}-{transport}-{recorder}" == DEFAULT_CASE else pytest.mark.slow,
    )
    for server in SERVERS
    for transport in server.transports
    for recorder, replayers in PAIRS
]


@pytest.mark.parametrize(("server", "transport", "recorder", "replayers"), CASES)
def test_serve_answers_another_client_as_the_live_server_did(
    tmp_path: Path, server: Server, transport: str, recorder: str, replayers: tuple[str, ...]
) -> None:
    """Each client sees from serve what it sees from the live server, whichever client recorded:
    server info and capabilities, instructions, every tool as listed, resources, templates,
    prompts, progress notifications and the recorded calls; the call never recorded is a
    ``snapshot miss:`` tool error."""
    live = Live(server, transport)
    out = tmp_path / "run.sealed.jsonl"
    try:
        live.record(recorder, out)
        direct = {client: comparable(live.sees(client), client) for client in {*replayers, "legacy"}}
    finally:
        live.close()
    for client in replayers:
        twin = missed(served(transport, out, client, server.plan), client)
        # a recording of the initialize handshake alone holds no server/discover answer: the twin of
        # a server that has one (unrecorded) is the handshake-era server the recording shows
        handshake = server.modern and recorder == "typescript" and client == "python"
        live_seen = {**direct["legacy" if handshake else client]}
        live_seen["calls"] = live_seen["calls"][:-1]
        if server.modern and recorder == "python" and client != "python":
            # recorded in the 2026 revision, whose listChanged flags say whether change notifications
            # come on subscriptions/listen: a handshake-era client is told the flags so recorded
            live_seen["server"] = [*live_seen["server"][:1], ignoring_list_changed(live_seen["server"][1])]
            twin["server"] = [*twin["server"][:1], ignoring_list_changed(twin["server"][1])]
        assert twin == live_seen, client


#: the agent of an inner pytest project: it runs the plan with the client it is told through its
#: cassette's server (recorded or replayed) and keeps what it saw
CASSETTE_AGENT = """
import json
import os

from tests.acceptance.test_twin import sees


def test_agent(toolreplay_mcp):
    if os.environ["TWIN_TRANSPORT"] == "stdio":
        command = json.loads(os.environ["TWIN_SERVER"])
        params = toolreplay_mcp.stdio(command[0], command[1:], name="everything")
        target = ("stdio", [params.command, *params.args])
    else:
        target = ("http", [toolreplay_mcp.http(os.environ["TWIN_SERVER"], name="everything")])
    seen = sees(os.environ["TWIN_CLIENT"], target, json.loads(os.environ["TWIN_PLAN"]))
    with open("seen.json", "w") as out:
        json.dump(seen, out)
"""
CASSETTE = "tests/cassettes/test_agent/test_agent.sealed.jsonl"


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_cassette_replays_the_recorded_session(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, transport: str
) -> None:
    """A cassette recorded with the TypeScript client keeps the session beside the calls, and its
    replay answers the Python client (default and legacy mode) as the live server answered it:
    every tool listed, resources, prompts, calls; the unrecorded call fails the test as a miss."""
    for key in OUTER:
        monkeypatch.delenv(key, raising=False)
    started_as_it_stands(monkeypatch)
    pytester.makeini(INI)
    pytester.makepyfile(test_agent=CASSETTE_AGENT)
    live = Live(EVERYTHING, transport)
    try:
        server = live.target[1]
        monkeypatch.setenv("TWIN_SERVER", json.dumps(server) if transport == "stdio" else server[0])
        monkeypatch.setenv("TWIN_TRANSPORT", transport)
        monkeypatch.setenv("TWIN_CLIENT", "typescript")
        monkeypatch.setenv("TWIN_PLAN", json.dumps(EVERYTHING.recorded_plan))
        pytester.runpytest().assert_outcomes(passed=1)
        direct = {client: live.sees(client) for client in ("python", "legacy")}
    finally:
        live.close()
    cassette = pytester.path / CASSETTE
    assert cassette.exists() and Path(f"{cassette}.mcp").exists()
    monkeypatch.setenv(
        "TWIN_SERVER", json.dumps(["/nonexistent/server"]) if transport == "stdio" else server[0]
    )
    monkeypatch.setenv("TWIN_PLAN", json.dumps(PLAN))
    for client in ("python", "legacy"):
        monkeypatch.setenv("TWIN_CLIENT", client)
        replayed = pytester.runpytest("--toolreplay-record-mode=none")
        replayed.assert_outcomes(passed=1, errors=1)  # the agent passes; the cassette's miss fails it
        replayed.stdout.fnmatch_lines(["E *SnapshotMissError: *'echo'*unrecorded*"])
        seen = missed(json.loads((pytester.path / "seen.json").read_text()), client)
        expected = direct[client]
        expected["calls"].pop()
        assert seen == expected, client
