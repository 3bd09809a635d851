"""One sealed unit: a baseline's session file (``BASELINE.mcp``, what ``serve`` answers with) is
guarded with it, and ``seal`` carries a run's session file to the baseline's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from tests.acceptance.test_rug_pull import record as rug_record
from tests.gitrepo import Repo, git_env, note
from tests.mcp_agent import TIMEOUT, TOOLREPLAY, server_env
from toolreplay.chain import verify_stream
from toolreplay.cli import cli
from toolreplay.driftnotes.changes import file_head
from toolreplay.transcript import make_record, record_line

BASELINE = "baselines/notes.sealed.jsonl"
SESSION = BASELINE + ".mcp"
CONFIG = 'baselines = ["baselines/*.sealed.jsonl"]\ndrift_notes = "drift-notes"\n'
RUN_CONFIG = CONFIG + 'transcripts = ["runs/*.jsonl"]\ntools_lock = "tools.lock.json"\n'
REASON = "git_log now shows at most 3 commits."


def session_text(required: list[str]) -> str:
    """A session file's one ``tools/list`` answer: ``add_note`` requiring ``required``."""
    schema = {"type": "object", "properties": {n: {"type": "string"} for n in required}, "required": required}
    tools = [{"name": "add_note", "inputSchema": schema}]
    record = make_record(index=0, tool="tools/list", args={}, response={"result": {"tools": tools}})
    return record_line(record) + "\n"


def _cli(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolreplay", *args],
        cwd=repo.path,
        env=git_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _sealed_session(repo: Repo, required: list[str]) -> None:
    """Seal a session file into the baseline's place (as ``seal`` carries it)."""
    repo.write("tmp.jsonl.mcp", session_text(required))
    repo.write("tmp.jsonl", "")
    (repo.path / BASELINE).parent.mkdir(parents=True, exist_ok=True)
    result = CliRunner().invoke(
        cli, ["seal", str(repo.path / "tmp.jsonl"), "-o", str(repo.path / BASELINE), "--force"]
    )
    assert result.exit_code == 0, result.output
    for name in ("tmp.jsonl", "tmp.jsonl.mcp"):
        (repo.path / name).unlink()


def _session_pull(tmp_path: Path) -> tuple[Repo, str]:
    """Base: a baseline with its session file and note. Head: only the session file changed (the
    schema of add_note now requires priority), staged, nothing committed yet."""
    repo = Repo.create(tmp_path / "repo")
    repo.write("toolreplay.toml", CONFIG)
    repo.write_baseline(BASELINE, 2)
    repo.write(SESSION, session_text(["text"]))
    repo.commit_all("base")
    base = repo.head()
    repo.write(SESSION, session_text(["text", "priority"]))
    repo.git("add", "-A")
    return repo, base


def test_seal_carries_the_run_s_session_file_sealed(tmp_path: Path) -> None:
    """``seal RUN -o BASELINE`` seals ``RUN.mcp`` into ``BASELINE.mcp`` (serve reads it sealed); a
    session file that cannot be sealed leaves neither file written."""
    run, out = tmp_path / "run.jsonl", tmp_path / "b.sealed.jsonl"
    run.write_text("")
    Path(f"{run}.mcp").write_text(session_text(["text"]))
    result = CliRunner().invoke(cli, ["seal", str(run), "-o", str(out)])
    assert result.exit_code == 0, result.output
    with open(f"{out}.mcp", "rb") as stream:
        state = verify_stream(stream, f"{out}.mcp")
    assert state.broken is None and state.links == 1
    Path(f"{run}.mcp").write_text("not json\n")
    again = CliRunner().invoke(cli, ["seal", str(run), "-o", str(tmp_path / "c.sealed.jsonl")])
    assert again.exit_code == 2, again.output
    assert not (tmp_path / "c.sealed.jsonl").exists() and not (tmp_path / "c.sealed.jsonl.mcp").exists()


def test_a_change_of_only_the_session_file_needs_a_note(tmp_path: Path) -> None:
    """The rug pull through the file serve answers with: the pre-commit guard, ``hook drift-note
    --base``, ``check --base`` and its comment refuse it without a note (its head the digest of its
    bytes), and the note the advice names (``toolreplay note BASELINE.mcp --base``) accepts it."""
    repo, base = _session_pull(tmp_path)
    staged = _cli(repo, "hook", "drift-note")
    assert staged.returncode == 1, staged.stdout
    assert f"session file '{SESSION}' (modified)" in staged.stdout
    assert f"toolreplay note {SESSION} -o drift-notes/notes-session.md" in staged.stdout
    repo.commit_all("add_note requires priority")
    ranged = _cli(repo, "hook", "drift-note", "--base", base)
    assert ranged.returncode == 1, ranged.stdout
    assert f"session file '{SESSION}' (modified)" in ranged.stdout
    checked = _cli(repo, "check", "--base", base, "--format", "json")
    assert checked.returncode == 1, checked.stdout
    kinds = {r["file"]: [f["kind"] for f in r["findings"]] for r in json.loads(checked.stdout)["reports"]}
    assert kinds[SESSION] == ["missing-drift-note"]
    comment = _cli(repo, "check", "--base", base, "--format", "markdown").stdout
    assert f"toolreplay note {SESSION} --base {base} -o drift-notes/notes-session.md\n" in comment
    written = _cli(repo, "note", SESSION, "--base", base, "-o", "drift-notes/notes-session.md")
    assert written.returncode == 0, written.stderr
    text = (repo.path / "drift-notes/notes-session.md").read_text()
    assert f'to: "{file_head((repo.path / SESSION).read_bytes())}"' in text
    (repo.path / "drift-notes/notes-session.md").write_text(text + "add_note now takes a priority.\n")
    repo.commit_all("note")
    assert _cli(repo, "check", "--base", base).returncode == 0
    assert _cli(repo, "hook", "drift-note", "--base", base).returncode == 0


def test_a_sealed_session_file_is_guarded_by_its_bytes(tmp_path: Path) -> None:
    """A session file sealed with its baseline is judged by the digest of its bytes, like an
    unsealed one: a note naming that digest accepts its change in the same commit."""
    repo = Repo.create(tmp_path / "repo")
    repo.write("toolreplay.toml", CONFIG)
    repo.commit_all("config")
    _sealed_session(repo, ["text"])
    digest = file_head((repo.path / SESSION).read_bytes())
    repo.write("drift-notes/notes-session.md", note(SESSION, "0" * 64, digest))
    empty = "0" * 64  # an empty transcript's head is the genesis value
    repo.write("drift-notes/notes.md", note(BASELINE, "0" * 64, empty))
    repo.git("add", "-A")
    done = _cli(repo, "hook", "drift-note")
    assert done.returncode == 0, done.stdout


async def _served_tools(argv: list[str]) -> dict[str, Any]:
    """What ``serve`` lists to a real MCP SDK client: each tool's input schema by name."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=argv[0], args=argv[1:], env=server_env())
    with anyio.fail_after(TIMEOUT):
        async with Client(stdio_client(params)) as client:
            listed = await client.list_tools()
    return {tool.name: tool.input_schema for tool in listed.tools}


@pytest.mark.slow
def test_one_accept_makes_a_changed_server_s_run_the_baseline(tmp_path: Path) -> None:
    """The issue's case with the real MCP SDK: a baseline recorded from the approved server, the
    server's schema changed (max_count's maximum 10 -> 3), a run recorded against it. After one
    ``toolreplay accept`` (staged), the pre-commit guard, check, check --base main and serve --lock
    pass with no other command, serve advertises the new schema, and the lock keeps its note."""
    for folder in ("approved", "changed"):
        (tmp_path / folder).mkdir()
    approved, approved_lock = rug_record(tmp_path / "approved", "none", seal=True)
    changed, _ = rug_record(tmp_path / "changed", "maximum", seal=False)
    repo = Repo.create(tmp_path / "repo")
    repo.write("toolreplay.toml", RUN_CONFIG)
    for source, target in ((approved, "baselines/git.sealed.jsonl"), (changed, "runs/git.jsonl")):
        for suffix in ("", ".mcp"):
            repo.write(target + suffix, Path(f"{source}{suffix}").read_text())
    declared = json.loads(approved_lock.read_text())
    declared["tools"]["git_log"]["note"] = "reads only"  # what a person declared: accept keeps it
    repo.write("tools.lock.json", json.dumps(declared))
    repo.git("add", "-A")
    repo.git("rm", "-q", "--cached", "-r", "runs")
    repo.git("commit", "-q", "--no-verify", "-m", "base")
    repo.git("checkout", "-q", "-b", "server-changed")
    before = _cli(repo, "check", "--format", "json")
    assert before.returncode == 1, before.stdout
    done = _cli(repo, "accept", "baselines/git.sealed.jsonl", "--run", "runs/git.jsonl", "--reason", REASON)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "wrote baselines/git.sealed.jsonl\nwrote baselines/git.sealed.jsonl.mcp\nwrote tools.lock.json\n"
        "wrote drift-notes/git.md\nwrote drift-notes/git-session.md\nwrote drift-notes/tools.lock.json.md\n"
    )
    assert REASON in (repo.path / "drift-notes/git.md").read_text()
    assert json.loads((repo.path / "tools.lock.json").read_text())["tools"]["git_log"]["note"] == "reads only"
    assert "kept what it declared for tool 'git_log', whose contract changed" in done.stderr
    repo.git("add", "-A")
    staged = _cli(repo, "hook", "drift-note")
    assert staged.returncode == 0, staged.stdout
    repo.git("commit", "-q", "--no-verify", "-m", "accept the new schema")
    for argv in (["check"], ["check", "--base", "main"], ["hook", "drift-note", "--base", "main"]):
        result = _cli(repo, *argv)
        assert result.returncode == 0, (argv, result.stdout, result.stderr)
    baseline, lock = repo.path / "baselines/git.sealed.jsonl", repo.path / "tools.lock.json"
    served = anyio.run(_served_tools, [*TOOLREPLAY, "serve", str(baseline), "--lock", str(lock)])
    assert served["git_log"]["properties"]["max_count"]["maximum"] == 3


def test_accept_refuses_and_writes_nothing(tmp_path: Path) -> None:
    """accept refuses an empty reason, an unreadable run, a run without the session file its baseline
    has, and a run that changes nothing (exit 2, one line), and writes nothing then."""
    repo = Repo.create(tmp_path / "repo")
    repo.write("toolreplay.toml", CONFIG)
    repo.write("runs/same.jsonl", "")
    repo.write("runs/bad.jsonl", "not json\n")
    repo.write("runs/same.jsonl.mcp", "")
    repo.write("runs/other.jsonl", "")
    (repo.path / "baselines").mkdir()
    assert _cli(repo, "seal", "runs/same.jsonl", "-o", BASELINE).returncode == 0
    assert (repo.path / SESSION).is_file()  # carried with the baseline
    repo.commit_all("base")
    cases = {
        ("runs/same.jsonl", " "): "--reason is empty: say why the change is accepted",
        ("runs/bad.jsonl", "why"): "runs/bad.jsonl:1:",
        (
            "runs/other.jsonl",
            "why",
        ): f"runs/other.jsonl: has no session file, and the baseline has one ({SESSION})",
        (
            "runs/same.jsonl",
            "why",
        ): f"{BASELINE}: nothing to accept: the run, its session and the lock",
    }
    for (run, reason), message in cases.items():
        done = _cli(repo, "accept", BASELINE, "--run", run, "--reason", reason)
        assert done.returncode == 2 and message in done.stderr, (run, done.stderr)
        assert len(done.stderr.splitlines()) == 1, done.stderr
        assert repo.git("status", "--porcelain") == "", run


@pytest.mark.slow
def test_serve_lock_refuses_a_session_whose_tools_list_the_lock_does_not_pin(tmp_path: Path) -> None:
    """The recorded calls match the lock, but the session file beside them is the changed server's
    (max_count's maximum 10 -> 3): serve --lock refuses to start (exit 1), naming the session file,
    the tool and what differs, rather than advertise a schema the lock does not pin."""
    for folder in ("approved", "changed"):
        (tmp_path / folder).mkdir()
    approved, lock = rug_record(tmp_path / "approved", "none", seal=True)
    changed, _ = rug_record(tmp_path / "changed", "maximum", seal=True)
    assert CliRunner().invoke(cli, ["serve", str(approved), "--lock", str(lock)], input="").exit_code == 0
    Path(f"{approved}.mcp").write_bytes(Path(f"{changed}.mcp").read_bytes())
    result = CliRunner().invoke(cli, ["serve", str(approved), "--lock", str(lock)], input="")
    assert result.exit_code == 1, result.output
    assert result.stderr == (
        f"toolreplay: error: {approved}.mcp: its tools/list disagrees with the lock for tool 'git_log':"
        " schema (breaking): /properties/max_count/maximum 10 -> 3\n"
    )
