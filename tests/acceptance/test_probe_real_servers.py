"""toolreplay probe against real MCP servers from the registries: a verdict you can act on (issue 26)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.conftest import invoke
from tests.mcp_agent import DECLARE_ALL, TIMEOUT, TOOLREPLAY, record_calls, refuse
from tests.realservers import node_server, python_server

HOSTILE = Path(__file__).resolve().parent.parent / "data" / "mcp" / "probe_hostile.py"


def _probe(*args: str) -> subprocess.CompletedProcess[str]:
    """``toolreplay probe ARGS`` in-process (the server it asks is a real process): exit code, output."""
    code, out, err = invoke(CliRunner(), "probe", *args)
    return subprocess.CompletedProcess(["probe", *args], code, out, err)


def _probe_process(*args: str) -> subprocess.CompletedProcess[str]:
    """``toolreplay probe ARGS`` in a process of its own: its stderr holds everything printed there."""
    argv = [*TOOLREPLAY, "probe", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT * 2, check=False)


def test_memory_read_after_a_write_is_not_probed_alone_and_sequence_replays_it(tmp_path: Path) -> None:
    """server-memory: search_nodes recorded after create_entities is not asked of a fresh server
    (it used to be silent-drift); create_entities is not re-run; --sequence replays both, stable."""
    store = tmp_path / "memory.jsonl"
    os.environ["MEMORY_FILE_PATH"] = str(store)
    try:
        entity = {"name": "ada", "entityType": "person", "observations": ["wrote notes"]}
        out, _ = record_calls(
            tmp_path,
            node_server("memory"),
            [("create_entities", {"entities": [entity]}), ("search_nodes", {"query": "ada"})],
        )
        store.unlink()
        alone = _probe(str(out), "--", *node_server("memory"))
        assert (alone.returncode, alone.stdout) == (
            0,
            "calls: 2\n"
            "asked: 0\n"
            "tool 'create_entities': not-probed (not known read-only)\n"
            "tool 'search_nodes': not-probed (after index 0 changed state)\n"
            "findings: 0\n",
        ), alone.stderr
        assert not store.exists()  # create_entities was not re-run: nothing was written
        sequence = _probe(str(out), "--sequence", "--", *node_server("memory"))
        assert (sequence.returncode, sequence.stdout) == (
            0,
            "calls: 2\nasked: 2\ntool 'create_entities': stable\ntool 'search_nodes': stable\nfindings: 0\n",
        ), sequence.stderr
        refused = _probe(str(out), "--sequence", "--target", "http://127.0.0.1:9/mcp")
        assert refused.returncode == 2 and "--sequence needs a server it starts afresh" in refused.stderr
    finally:
        del os.environ["MEMORY_FILE_PATH"]


@pytest.mark.slow
def test_git_diff_after_git_add_is_not_probed(tmp_path: Path) -> None:
    """mcp-server-git: git_diff_unstaged after git_add is 'after index 0 changed state', not drift."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.txt").write_text("one\n", encoding="utf-8")
    server = [*python_server("git"), "--repository", str(repo)]
    out, _ = record_calls(
        tmp_path,
        server,
        [
            ("git_add", {"repo_path": str(repo), "files": ["a.txt"]}),
            ("git_diff_unstaged", {"repo_path": str(repo)}),
        ],
    )
    subprocess.run(["git", "-C", str(repo), "reset", "-q"], check=True)
    (repo / "a.txt").write_text("two\n", encoding="utf-8")
    result = _probe(str(out), "--", *server)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "tool 'git_diff_unstaged': not-probed (after index 0 changed state)\n" in result.stdout
    assert "silent-drift" not in result.stdout


@pytest.mark.slow
def test_filesystem_create_directory_is_never_re_run(tmp_path: Path) -> None:
    """server-filesystem: create_directory (readOnlyHint false) is not re-run unless --allow names it."""
    root = tmp_path / "root"
    root.mkdir()
    server = [*node_server("filesystem"), str(root)]
    made = root / "made"
    out, _ = record_calls(tmp_path, server, [("create_directory", {"path": str(made)})])
    made.rmdir()
    result = _probe(str(out), "--", *server)
    assert (result.returncode, result.stdout) == (
        0,
        "calls: 1\nasked: 0\ntool 'create_directory': not-probed (not known read-only)\nfindings: 0\n",
    ), result.stderr
    assert not made.exists()
    allowed = _probe(str(out), "--allow", "create_directory", "--", *server)
    assert allowed.returncode == 0 and "tool 'create_directory': stable\n" in allowed.stdout
    assert made.is_dir()  # the user's --allow re-runs it


@pytest.mark.slow
def test_everything_capabilities_and_the_wire_numbers(tmp_path: Path) -> None:
    """server-everything: probe declares sampling, elicitation and roots (so the tools that need them
    are still listed), and compares the answer as sent: get-annotated-message's priority 1 is not 1.0."""
    out, _ = record_calls(
        tmp_path,
        node_server("everything"),
        [("get-annotated-message", {"messageType": "error", "includeImage": False}), ("get-roots-list", {})],
        declare=True,
    )
    assert '"priority":1}' in out.read_text(encoding="utf-8")
    result = _probe(str(out), "--", *node_server("everything"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "tool 'get-annotated-message': stable\n" in result.stdout
    assert "tool-drift" not in result.stdout
    # listed again: probe's client declares roots as the recorded one did, and refuses the request;
    # when the request comes during the call, that call's answer is not compared
    roots = next(line for line in result.stdout.splitlines() if line.startswith("tool 'get-roots-list'"))
    assert roots in (
        "tool 'get-roots-list': stable",
        "tool 'get-roots-list': not-probed (the server asked the client 'roots/list' during the call,"
        " which probe refuses)",
    )


def _session(recording: Path) -> tuple[dict[str, Any], list[str]]:
    """The client's initialize params and the tools last listed, from a recording's session file."""
    lines = (recording.parent / (recording.name + ".mcp")).read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    initialize = next(r["args"] for r in records if r["tool"] == "initialize")
    listing = [r for r in records if r["tool"] == "tools/list"][-1]
    return initialize, sorted(tool["name"] for tool in listing["response"]["result"]["tools"])


def _client_options(declares: str) -> dict[str, Any]:
    from mcp.types import Implementation, SamplingCapability, SamplingToolsCapability

    if declares == "nothing":
        return {}
    if declares == "roots":
        return {"list_roots_callback": refuse}
    return {
        **DECLARE_ALL,
        "sampling_capabilities": SamplingCapability(tools=SamplingToolsCapability()),
        "client_info": Implementation(name="agent-under-test", version="7.1"),
    }


@pytest.mark.slow
@pytest.mark.parametrize("declares", ["nothing", "roots", "everything"])
def test_probe_declares_what_the_recorded_client_declared(tmp_path: Path, declares: str) -> None:
    """probe's client declares the capabilities (sampling's sub-fields too) and clientInfo the
    recorded client declared, so server-everything lists exactly the tools it listed then: none
    gated on a capability the recorded client lacked, every one gated on one it had (seen by
    recording probe's own session with toolreplay record)."""
    out, _ = record_calls(
        tmp_path, node_server("everything"), [("echo", {"message": "hi"})], client=_client_options(declares)
    )
    asked = tmp_path / "probe-side.jsonl"
    result = _probe(str(out), "--", *TOOLREPLAY, "record", "-o", str(asked), "--", *node_server("everything"))
    assert result.returncode == 0, result.stdout + result.stderr
    # server-everything asks a client that declares roots for them 350 ms after initialize (a
    # timer of its own): a call under way at that moment is not probed, as docs/capture.md says
    raced = "tool 'echo': not-probed (the server asked the client 'roots/list' during the call, which probe"
    assert "tool 'echo': stable\n" in result.stdout or (
        declares != "nothing" and raced + " refuses)\n" in result.stdout
    )
    recorded, listed = _session(out)
    declared, listed_live = _session(asked)
    assert declared["capabilities"] == recorded["capabilities"]
    assert declared["clientInfo"] == recorded["clientInfo"]
    assert listed_live == listed
    gated = {"get-roots-list", "trigger-elicitation-request", "trigger-sampling-request"}
    assert (
        gated & set(listed)
        == {
            "nothing": set(),
            "roots": {"get-roots-list"},
            "everything": gated,
        }[declares]
    )


def test_a_recorded_initialize_no_client_sends_isrefused(runner: CliRunner, tmp_path: Path) -> None:
    """A session file whose initialize no MCP client could send is one line naming file, line and
    pointer (exit 2), before any server starts."""
    out = tmp_path / "run.jsonl"
    out.write_text("", encoding="utf-8")
    initialize = {
        "index": 0,
        "tool": "initialize",
        "args": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"sampling": True},
            "clientInfo": {"name": "a", "version": "1"},
        },
        "response": {
            "result": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "serverInfo": {"name": "s", "version": "1"},
            }
        },
    }
    (tmp_path / "run.jsonl.mcp").write_text(json.dumps(initialize) + "\n", encoding="utf-8")
    code, stdout, stderr = invoke(runner, "probe", str(out), "--", str(tmp_path / "never-started"))
    assert (code, stdout) == (2, "")
    assert stderr == (
        f"toolreplay: error: {out}.mcp:1: the recorded initialize is not one an MCP client sends:"
        " Input should be a valid dictionary or instance of SamplingCapability"
        " (at /args/capabilities/sampling)\n"
    )


@pytest.mark.slow
def test_time_declared_not_deterministic_is_probed_for_shape(tmp_path: Path) -> None:
    """mcp-server-time: with the lock's deterministic false, get_current_time is compared for its
    shape, not its values (it used to fail on the clock); a shape change still fails."""
    out, lock = record_calls(tmp_path, python_server("time"), [("get_current_time", {"timezone": "UTC"})])
    data = json.loads(lock.read_text(encoding="utf-8"))
    data["tools"]["get_current_time"]["deterministic"] = False
    lock.write_text(json.dumps(data), encoding="utf-8")
    result = _probe(str(out), "--lock", str(lock), "--", *python_server("time"))
    assert (result.returncode, result.stdout) == (
        0,
        "calls: 1\nasked: 1\n"
        "tool 'get_current_time': stable (shape only: declared not deterministic)\nfindings: 0\n",
    ), result.stderr
    record = json.loads(out.read_text(encoding="utf-8"))
    record["response"]["structuredContent"]["is_dst"] = "no"
    out.write_text(json.dumps(record) + "\n", encoding="utf-8")
    changed = _probe(str(out), "--lock", str(lock), "--", *python_server("time"))
    assert changed.returncode == 1, changed.stdout
    assert "answered the call recorded at index 0 with a different shape live" in changed.stdout


@pytest.mark.slow
def test_a_server_that_hangs_or_crashes_fails(tmp_path: Path) -> None:
    """A call that hangs and one whose server dies are unavailable findings (exit 1); the SDK's
    "Connection closed" is not compared as an answer, and a garbage line leaves no traceback."""
    calls = [
        {
            "index": 0,
            "tool": "garbage",
            "args": {},
            "response": {"content": [{"type": "text", "text": "ok"}]},
        },
        {"index": 1, "tool": "hang", "args": {}, "response": {"content": []}},
        {"index": 2, "tool": "die", "args": {}, "response": {"content": []}},
    ]
    out = tmp_path / "run.jsonl"
    out.write_text("".join(json.dumps(c) + "\n" for c in calls), encoding="utf-8")
    result = _probe_process(str(out), "--timeout", "3", "--", sys.executable, str(HOSTILE))
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.splitlines()[:5] == [
        "calls: 3",
        "asked: 3",
        "tool 'die': unavailable",
        "tool 'garbage': stable",
        "tool 'hang': unavailable",
    ]
    assert (
        "index 1: unavailable: tool 'hang' gave no answer to the call recorded at index 1:"
        " no answer within 3 s" in result.stdout
    )
    assert "index 2: unavailable: tool 'die' gave no answer" in result.stdout
    assert "silent-drift" not in result.stdout
    assert "Traceback" not in result.stderr
    assert result.stderr == (
        "toolreplay: warning: the server sent 1 line that an MCP client cannot read (not JSON-RPC); ignored\n"
    )


def test_a_notification_the_sdk_refuses_is_one_inert_line(tmp_path: Path) -> None:
    """A progress notification whose params the SDK's model refuses (they hold '##[set-output ...')
    is one warning line: no traceback, no workflow command, and the probe completes."""
    from tests.runner_sim import commands

    out = tmp_path / "run.jsonl"
    answer = {"content": [{"type": "text", "text": "ok"}]}
    out.write_text(json.dumps({"index": 0, "tool": "badnote", "args": {}, "response": answer}) + "\n")
    result = _probe_process(str(out), "--format", "github", "--", sys.executable, str(HOSTILE))
    assert (result.returncode, result.stdout) == (
        0,
        "calls: 1\nasked: 1\ntool 'badnote': stable\nfindings: 0\n",
    ), result.stderr
    assert "Traceback" not in result.stderr
    assert commands(result.stderr) == []
    (line,) = result.stderr.splitlines()
    assert line.startswith("toolreplay: warning: the MCP SDK refused what the server sent: "), line
    assert "notifications/progress" in line
