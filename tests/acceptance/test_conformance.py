"""The official MCP conformance suite, run against a server, through `record`, and against `serve` of
that recording: record is transparent, and serve passes what the server passes (docs/capture.md).

The suite is ``@modelcontextprotocol/conformance`` from npm (tests/servers/package.json); its server
scenarios run over Streamable HTTP, each in a session of its own, and each writes its checks to
``results/server-SCENARIO-TIMESTAMP/checks.json`` in the folder it runs in. Two servers: the
registry's server-everything, and the suite's reference server (tests/data/mcp/conformance_server.py,
built from the requirements the scenarios state), which has what every scenario asks for.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.mcp_agent import TIMEOUT, TOOLREPLAY, after_ready, free_port, server_env, stop, wait_for_port
from tests.realservers import conformance, node_server

pytestmark = pytest.mark.slow


REFERENCE = ROOT / "tests" / "data" / "mcp" / "conformance_server.py"
#: the scenarios whose outcome depends on a live client's answer to a server request (docs/capture.md)
EXCEPTED = frozenset({"tools-call-sampling", "tools-call-elicitation", "elicitation-sep1034-defaults"})
RESULTS = re.compile(r"server-(?P<scenario>.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z")
#: how many checks pass (against the server and through record, against serve), as docs/capture.md says
PASSING = {"everything": (9, 9), "reference": (30, 23)}
RAN = re.compile(r"^=== Running scenario: (\S+) ===$", re.MULTILINE)

#: (scenario, check id) -> the check as the suite wrote it, less its timestamp and with the URL as "URL"
Checks = dict[tuple[str, str], dict[str, Any]]


@dataclass(frozen=True, kw_only=True)
class Runs:
    """The suite's checks in the three modes, and what record and serve said on stderr."""

    server: str
    direct: Checks
    recorded: Checks
    served: Checks
    record_stderr: str
    serve_stderr: str


def _suite(url: str, folder: Path) -> Checks:
    """Run every server scenario against ``url`` in ``folder``; read back each scenario's checks.json."""
    folder.mkdir()
    done = subprocess.run(
        [*conformance(), "server", "--url", url],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=TIMEOUT * 3,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr  # 1: some check failed
    ran = RAN.findall(done.stdout)
    assert len(ran) >= 26, done.stdout
    checks: Checks = {}
    for path in sorted(folder.glob("results/*/checks.json")):
        match = RESULTS.fullmatch(path.parent.name)
        assert match, path
        for check in json.loads(path.read_text(encoding="utf-8")):
            del check["timestamp"]
            checks[match["scenario"], check["id"]] = json.loads(json.dumps(check).replace(url, "URL"))
    assert sorted({scenario for scenario, _ in checks}) == sorted(ran)  # every scenario wrote its checks
    return checks


def _start(
    argv: list[str], port: int, log: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    with log.open("wb") as err:  # a file, not a pipe: a chatty server must never block on a full pipe
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, env=env or server_env())
    wait_for_port(port, process)
    return process


def _upstream(name: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    if name == "everything":
        return _start([*node_server("everything"), "streamableHttp"], port, log, server_env(PORT=str(port)))
    return _start([sys.executable, str(REFERENCE), str(port)], port, log)


@pytest.fixture(scope="module", params=["everything", "reference"])
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    """One recording session per server: the suite against it, through record, then against serve of the
    recording with the server stopped (serve runs nothing)."""
    root = tmp_path_factory.mktemp(f"conformance-{request.param}")
    out = root / "run.sealed.jsonl"
    server_port, proxy_port, serve_port = free_port(), free_port(), free_port()
    server = _upstream(request.param, server_port, root / "server.log")
    try:
        target = f"http://127.0.0.1:{server_port}/mcp"
        direct = _suite(target, root / "direct")
        listen = ["--listen", f"127.0.0.1:{proxy_port}", "--target", target]
        proxy = _start(
            [*TOOLREPLAY, "record", "-o", str(out), "--seal", *listen], proxy_port, root / "record.log"
        )
        try:
            recorded = _suite(f"http://127.0.0.1:{proxy_port}/mcp", root / "recorded")
        finally:
            stop(proxy)
    finally:
        stop(server)
    snapshot = _start(
        [*TOOLREPLAY, "serve", str(out), "--listen", f"127.0.0.1:{serve_port}"],
        serve_port,
        root / "serve.log",
    )
    try:
        served = _suite(f"http://127.0.0.1:{serve_port}/mcp", root / "served")
    finally:
        stop(snapshot)
    yield Runs(
        server=request.param,
        direct=direct,
        recorded=recorded,
        served=served,
        record_stderr=(root / "record.log").read_text(encoding="utf-8"),
        serve_stderr=(root / "serve.log").read_text(encoding="utf-8"),
    )


def _passing(checks: Checks) -> set[tuple[str, str]]:
    return {key for key, check in checks.items() if check["status"] == "SUCCESS"}


def _unexcepted(checks: Checks) -> Checks:
    return {key: check for key, check in checks.items() if key[0] not in EXCEPTED}


def test_record_is_transparent(runs: Runs) -> None:
    """Through record, the suite sees the server itself: every check the same, and no warning."""
    assert runs.recorded == runs.direct
    assert re.fullmatch(r"toolreplay: recorded \d+ calls to \S+\n", runs.record_stderr), runs.record_stderr


def test_serve_passes_every_check_the_server_passes(runs: Runs) -> None:
    """Against serve of the recording, every check that passed live passes, except the documented
    scenarios that need a live client's answer; outside those, every check is what it was live."""
    live = _passing(runs.direct) & _passing(runs.recorded)
    assert _passing(runs.served) == {key for key in live if key[0] not in EXCEPTED}
    assert _unexcepted(runs.served) == _unexcepted(runs.direct)
    assert after_ready(runs.serve_stderr.encode()) == b""
    assert (len(live), len(_passing(runs.served))) == PASSING[runs.server]
