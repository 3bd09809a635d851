"""What ``toolreplay record`` costs a client: start-up and the HTTP proxy's time a call.

    python bench/record.py [--rounds 10] [--calls 300]

Start-up: the time from starting the server (directly, or ``toolreplay record -o OUT -- SERVER``)
to the first ``initialize`` answer on its stdout, for server-everything (npm, from
``tests/servers/node_modules/.bin``), mcp-server-time (PyPI, beside this interpreter) and a
shell script that answers at once (what is left is the proxy's own path to the answer);
direct and recorded starts alternate, round after round.

The other recorders run side by side when installed (beside this interpreter or on PATH):
mcp-vcr's stdio proxy in the start-up rows, mcp-recorder's HTTP proxy in the HTTP rows (each
has only the one). HTTP: server-everything in Streamable HTTP mode, asked directly and through
``toolreplay record --listen ... --target ...``, one ``tools/call`` of ``echo`` at a time on a
kept-alive connection, the endpoints taking turns call after call, so all see the same
machine. Prints the median and the 99th percentile of each, the difference from direct and
the ratio to it, and each proxy's CPU time a call (from ``/proc``, where there is one). With
``PYTHONPATH=OTHER/src`` it runs another copy of toolreplay (the code before a change);
``--against OTHER/src`` runs that copy too, as one more HTTP endpoint in the same rounds, so
the two are compared call by call on the same machine. Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx2 as httpx

HERE = Path(__file__).resolve().parent
NODE_BIN = HERE.parent / "tests" / "servers" / "node_modules" / ".bin"
BIN = Path(sys.executable).parent
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    },
}
INSTANT = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 0,
        "result": {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {}},
    }
)
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def toolreplay() -> list[str]:
    script = BIN / "toolreplay"
    return [str(script)] if script.exists() else [sys.executable, "-m", "toolreplay"]


def first_answer(argv: list[str]) -> float:
    """Seconds from starting ``argv`` to the first line it writes after an ``initialize`` request."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    elapsed = time.perf_counter() - start
    proc.stdin.close()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if b'"result"' not in line:
        raise SystemExit(f"{' '.join(argv)} did not answer initialize: {line[:200]!r}")
    return elapsed


def startup(rounds: int, folder: Path) -> None:
    instant = folder / "instant.sh"  # answers at once: what is left is the proxy's own path
    instant.write_text(f"#!/bin/sh\nread line\necho '{INSTANT}'\nread line\n", encoding="utf-8")
    instant.chmod(0o755)
    servers = {
        "server-everything": [str(NODE_BIN / "mcp-server-everything")],
        "mcp-server-time": [str(BIN / "mcp-server-time")],
        "instant (sh)": [str(instant)],
    }
    print(f"start-up: time to the first initialize answer, median (best) of {rounds}, alternating")
    for name, server in servers.items():
        if not Path(server[0]).exists():
            print(f"  {name}: not installed, skipped")
            continue
        out = folder / f"{name}.jsonl"
        plans = {
            "direct": server,
            "toolreplay record": [*toolreplay(), "record", "--force", "-o", str(out), "--", *server],
        }
        plans.update((other, [*argv, *server]) for other, argv in other_stdio_proxies(folder).items())
        times: dict[str, list[float]] = {key: [] for key in plans}
        for argv in plans.values():  # warm the caches; not timed
            first_answer(argv)
        for _ in range(rounds):
            for key, argv in plans.items():
                times[key].append(first_answer(argv))
        direct = statistics.median(times["direct"])
        print(f"  {name}: direct {direct * 1000:.1f} ms (best {min(times['direct']) * 1000:.1f})")
        for key in list(plans)[1:]:
            through = statistics.median(times[key])
            print(
                f"    {key:18} {through * 1000:7.1f} ms (best {min(times[key]) * 1000:.1f})"
                f"   +{(through - direct) * 1000:.1f} ms  {through / direct:.2f}x"
            )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{proc.args!r} exited {proc.returncode} before listening")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise SystemExit(f"{proc.args!r} did not listen on {port}")


class Endpoint:
    """One MCP session over a kept-alive connection; ``call`` times one ``tools/call``."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.client = httpx.Client(timeout=30)
        self.headers = dict(ACCEPT)
        answer = self.client.post(url, json=INITIALIZE, headers=self.headers)
        answer.raise_for_status()
        session = answer.headers.get("mcp-session-id")
        if session:
            self.headers["mcp-session-id"] = session
        self.headers["mcp-protocol-version"] = "2025-06-18"
        self.client.post(
            url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=self.headers
        )
        self.ident = 0

    def call(self) -> float:
        self.ident += 1
        body = {
            "jsonrpc": "2.0",
            "id": self.ident,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": f"call {self.ident}"}},
        }
        start = time.perf_counter()
        answer = self.client.post(self.url, json=body, headers=self.headers)
        text = answer.read()
        elapsed = time.perf_counter() - start
        if answer.status_code != 200 or f"call {self.ident}".encode() not in text:
            raise SystemExit(f"{self.url}: {answer.status_code} {text[:200]!r}")
        return elapsed


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def installed(name: str) -> str | None:
    """Another recorder's command, beside this interpreter or on PATH."""
    here = BIN / name
    return str(here) if here.exists() else shutil.which(name)


def other_http_proxies(target: str, folder: Path) -> dict[str, Callable[[int], list[str]]]:
    """The other recorders' Streamable HTTP proxies, when installed (mcp-vcr has none)."""
    found: dict[str, Callable[[int], list[str]]] = {}
    recorder = installed("mcp-recorder")
    if recorder is not None:
        cassette = str(folder / "mcp-recorder.json")
        origin = target.rsplit("/mcp", 1)[0]  # it appends the client's path to its target
        found["mcp-recorder"] = lambda port: [
            recorder,
            "record",
            "--target",
            origin,
            "--port",
            str(port),
            "--output",
            cassette,
        ]
    return found


def other_stdio_proxies(folder: Path) -> dict[str, list[str]]:
    """The other recorders' stdio proxies, when installed (mcp-recorder has none)."""
    vcr = installed("mcp-vcr")
    return {} if vcr is None else {"mcp-vcr": [vcr, "record", "-o", str(folder / "mcp-vcr"), "--"]}


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user and system) process ``pid`` has used so far; None without ``/proc``."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def http(calls: int, folder: Path, against: str | None = None) -> None:
    server_bin = NODE_BIN / "mcp-server-everything"
    if not server_bin.exists():
        print("HTTP: server-everything is not installed (npm install --prefix tests/servers), skipped")
        return
    started: list[subprocess.Popen[bytes]] = []
    pids: dict[str, int] = {}

    def start(argv: list[str], port: int, env: dict[str, str] | None = None) -> None:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        started.append(proc)
        wait_for(port, proc)

    try:
        server_port = free_port()
        start([str(server_bin), "streamableHttp"], server_port, {**os.environ, "PORT": str(server_port)})
        target = f"http://127.0.0.1:{server_port}/mcp"
        urls = {"direct": target}
        port = free_port()
        out = str(folder / "http.jsonl")
        listen = f"127.0.0.1:{port}"
        start([*toolreplay(), "record", "--force", "-o", out, "--listen", listen, "--target", target], port)
        urls["toolreplay record"] = f"http://127.0.0.1:{port}/mcp"
        pids["toolreplay record"] = started[-1].pid
        if against is not None:
            port, out = free_port(), str(folder / "http-against.jsonl")
            argv = [sys.executable, "-m", "toolreplay", "record", "--force", "-o", out]
            env = {**os.environ, "PYTHONPATH": against}
            start([*argv, "--listen", f"127.0.0.1:{port}", "--target", target], port, env)
            urls[f"record ({against})"] = f"http://127.0.0.1:{port}/mcp"
            pids[f"record ({against})"] = started[-1].pid
        for name, argv in other_http_proxies(target, folder).items():
            port = free_port()
            try:
                start(argv(port), port)
            except SystemExit as err:
                print(f"  {name}: did not start ({err}), skipped")
                continue
            urls[name] = f"http://127.0.0.1:{port}/mcp"
            pids[name] = started[-1].pid
        endpoints = {name: Endpoint(url) for name, url in urls.items()}
        for endpoint in endpoints.values():  # warm up; not timed
            for _ in range(20):
                endpoint.call()
        times: dict[str, list[float]] = {name: [] for name in endpoints}
        before = {name: cpu_seconds(pid) for name, pid in pids.items()}
        for _ in range(calls):
            for name, endpoint in endpoints.items():
                times[name].append(endpoint.call())
        after = {name: cpu_seconds(pid) for name, pid in pids.items()}
    finally:
        for proc in reversed(started):
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
    base50, base99 = statistics.median(times["direct"]), p99(times["direct"])
    print(f"HTTP: one tools/call (echo) at a time, {calls} calls each, alternating")
    for name, values in times.items():
        m50, m99 = statistics.median(values), p99(values)
        used, was = after.get(name), before.get(name)
        cpu = (
            f"   CPU {(used - was) / calls * 1000:.2f} ms a call"
            if used is not None and was is not None
            else ""
        )
        print(
            f"  {name:24} p50 {m50 * 1000:6.2f} ms (+{(m50 - base50) * 1000:5.2f}, {m50 / base50:.2f}x)"
            f"   p99 {m99 * 1000:6.2f} ms ({m99 / base99:.2f}x){cpu}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--only", choices=["startup", "http"])
    parser.add_argument("--against", metavar="SRC", help="also run the toolreplay in SRC (HTTP rows)")
    ns = parser.parse_args()
    print(f"{os.cpu_count()} cores; toolreplay: {' '.join(toolreplay())}")
    with tempfile.TemporaryDirectory() as tmp:
        if ns.only in (None, "startup"):
            startup(ns.rounds, Path(tmp))
        if ns.only in (None, "http"):
            http(ns.calls, Path(tmp), ns.against)
    if shutil.which("node") is None:
        print("(node is not on PATH: the npm server could not run)")


if __name__ == "__main__":
    main()
