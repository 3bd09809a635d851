"""Volatile rules on real servers: mcp-server-git and mcp-server-time recorded twice through
``toolreplay record`` (the MCP SDK's client as the agent) drift only where the rules say."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.gitrepo import git, git_env
from tests.mcp_agent import TIMEOUT, TOOLREPLAY
from tests.realservers import python_server
from toolreplay.cli import cli

#: the rules docs/baselines.md and docs/capture.md show for these two servers
RULES = """
[[volatile]]
tool = "git_commit"
at = "/response/content/*/text"
pattern = "[0-9a-f]{40}"

[[volatile]]
tool = "get_current_time"
at = "/response/content/*/text#/datetime"

[[volatile]]
tool = "get_current_time"
at = "/response/structuredContent/datetime"
"""


Calls = list[tuple[str, dict[str, Any]]]


def _session(out: Path, server: list[str], calls: Calls, env: dict[str, str]) -> None:
    """Record one agent session: the SDK client talks to ``server`` through ``toolreplay record``."""
    argv = [*TOOLREPLAY, "record", "-o", str(out), "--", *server]

    async def run() -> None:
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
        with anyio.fail_after(TIMEOUT):
            async with Client(stdio_client(params)) as client:
                await client.list_tools()
                for name, args in calls:
                    result = await client.call_tool(name, args)
                    assert not result.is_error, result

    anyio.run(run)


def _record_git(out: Path, repo: Path, date: str) -> None:
    """A fresh repository at ``repo`` (the same path each time), a file committed through the server."""
    if repo.exists():
        shutil.rmtree(repo)
    git(repo.parent, "init", "-q", str(repo))
    (repo / "notes.txt").write_text("hello\n", encoding="utf-8")
    # another commit date: another commit hash, as on a real second run
    env = git_env({"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
    calls = [
        ("git_add", {"repo_path": str(repo), "files": ["notes.txt"]}),
        ("git_commit", {"repo_path": str(repo), "message": "add notes"}),
        ("git_status", {"repo_path": str(repo)}),
    ]
    _session(out, [*python_server("git"), "--repository", str(repo)], calls, env)


def _record_time(out: Path) -> None:
    _session(out, python_server("time"), [("get_current_time", {"timezone": "UTC"})], git_env())


def _edited(source: Path, target: Path, tool: str, old: str, new: str) -> None:
    """A copy of a recorded run with one text of one tool's answer changed outside the masks."""
    lines = []
    for line in source.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["tool"] == tool:
            text = json.dumps(record["response"])
            assert old in text
            record["response"] = json.loads(text.replace(old, new))
        lines.append(json.dumps(record))
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project holding each server's session twice: the first sealed as the baseline, the second a run."""
    root = tmp_path_factory.mktemp("volatile")
    (root / "baselines").mkdir()
    (root / "runs").mkdir()
    repo = root / "repo"
    first, second = root / "first-git.jsonl", root / "runs" / "git.jsonl"
    _record_git(first, repo, "1704067200 +0000")
    _record_git(second, repo, "1717243200 +0000")
    _record_time(root / "first-time.jsonl")
    time.sleep(1.1)  # the time server answers to the second
    _record_time(root / "runs" / "time.jsonl")
    for name in ("git", "time"):
        subprocess.run(
            [
                *TOOLREPLAY,
                "seal",
                str(root / f"first-{name}.jsonl"),
                "-o",
                str(root / "baselines" / f"{name}.sealed.jsonl"),
            ],
            check=True,
        )
    return root


def _check(root: Path, rules: str) -> tuple[int, str]:
    config = 'transcripts = ["runs/*.jsonl"]\nbaselines = ["baselines/*.sealed.jsonl"]\n' + rules
    (root / "toolreplay.toml").write_text(config, encoding="utf-8")
    result = CliRunner().invoke(cli, ["check", "--config", str(root / "toolreplay.toml"), "--jobs", "1"])
    return result.exit_code, result.output


@pytest.mark.slow
def test_the_second_recording_drifts_without_rules(recorded: Path) -> None:
    """Without rules, the new commit hash and the new time are behavior drift (the issue's complaint)."""
    code, out = _check(recorded, "")
    assert code == 1, out
    assert "behavior-drift" in out
    assert "git_commit" in out and "get_current_time" in out


def test_the_rules_make_it_pass_and_say_what_they_masked(recorded: Path) -> None:
    """With the documented rules: 0 findings, and the report says how many values were masked."""
    code, out = _check(recorded, RULES)
    assert code == 0, out
    assert "total: 4 reports, 0 findings, 0 failing, 0 unreadable" in out
    # each run's own report counts its values, each baseline's its own: 2 hashes, 2 x 2 datetimes
    assert out.rstrip().endswith("masked: 6 values by 3 rules")


@pytest.mark.parametrize(
    ("tool", "old", "new", "shown"),
    [
        ("git_commit", "committed successfully", "committed", '"Changes committed with hash <volatile>"'),
        (
            "get_current_time",
            '\\"is_dst\\": false',
            '\\"is_dst\\": true',
            "at '/content/0/text#/is_dst' the baseline has false, the run has true",
        ),
        (
            "get_current_time",
            '"day_of_week": "',
            '"day_of_week": "Not ',
            "at '/structuredContent/day_of_week'",
        ),
    ],
    ids=["text-beside-the-hash", "json-text-beside-the-datetime", "structured-beside-the-datetime"],
)
def test_a_change_outside_the_masks_still_fails(
    recorded: Path, tool: str, old: str, new: str, shown: str
) -> None:
    """A change anywhere outside a mask (in the masked string, the JSON text, the object) is still drift."""
    name = "git" if tool == "git_commit" else "time"
    run = recorded / "runs" / f"{name}.jsonl"
    kept = run.read_bytes()
    try:
        _edited(run, run, tool, old, new)
        code, out = _check(recorded, RULES)
    finally:
        run.write_bytes(kept)
    assert code == 1, out
    assert "behavior-drift" in out and f"tool '{tool}' returned a different response" in out
    assert shown in out  # where it differs (inside a JSON text too), a masked part as <volatile>


def test_a_rule_that_masks_nothing_is_a_warning(recorded: Path) -> None:
    """A stale rule (a tool no run calls) is a warning on stderr; the check still passes."""
    code, out = _check(recorded, RULES + '\n[[volatile]]\ntool = "git_show"\nat = "/response"\n')
    assert code == 0, out
    assert "toolreplay: warning: volatile rule 4" in out


def test_diff_and_replay_take_the_rules_too(recorded: Path) -> None:
    """``diff`` and ``replay`` read the config's rules and say what they masked."""
    runner = CliRunner()
    _check(recorded, RULES)
    config = ["--config", str(recorded / "toolreplay.toml")]
    base, run = str(recorded / "baselines" / "git.sealed.jsonl"), str(recorded / "runs" / "git.jsonl")
    result = runner.invoke(cli, ["diff", base, run, *config])
    assert result.exit_code == 0, result.output
    assert "masked: 2 values by 1 rule\n" in result.output
    result = runner.invoke(cli, ["replay", run, *config])
    assert result.exit_code == 0, result.output
    assert "masked: 1 value by 1 rule\n" in result.output
    assert sys.executable  # (the servers ran under this interpreter's environment)


@pytest.mark.slow
def test_probe_asks_the_real_time_server_again_and_masks_the_time(recorded: Path) -> None:
    """``probe`` of the recorded mcp-server-time session: the live answer's new time is
    silent-drift without the rules, stable with them (and the report says what was masked)."""
    run = str(recorded / "runs" / "time.jsonl")
    argv = ["probe", run, "--config", str(recorded / "toolreplay.toml"), "--", *python_server("time")]
    _check(recorded, "")
    time.sleep(1.1)  # the server answers to the second
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 1, result.output
    assert "tool 'get_current_time': silent-drift" in result.output
    _check(recorded, RULES)
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 0, result.output
    assert "tool 'get_current_time': stable\nmasked: 4 values by 2 rules\n" in result.output


async def _serve(argv: list[str], calls: Calls) -> list[Any]:
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=git_env())
    with anyio.fail_after(TIMEOUT):
        async with Client(stdio_client(params)) as client:
            answers = []
            for name, args in calls:
                result = await client.call_tool(name, args)
                answers.append(result.model_dump(by_alias=True, exclude_none=True, mode="json"))
            return answers


@pytest.mark.slow
def test_serve_matches_a_call_without_its_masked_argument(recorded: Path) -> None:
    """``serve`` looks a call up without what an ``/args`` rule masks: the recorded git_commit
    answers a commit with another message; an unmasked argument still misses."""
    _check(recorded, RULES + '\n[[volatile]]\ntool = "git_commit"\nat = "/args/message"\n')
    argv = [
        *TOOLREPLAY,
        "serve",
        str(recorded / "runs" / "git.jsonl"),
        "--config",
        str(recorded / "toolreplay.toml"),
    ]
    repo = str(recorded / "repo")
    answers = anyio.run(
        _serve,
        argv,
        [
            ("git_commit", {"repo_path": repo, "message": "another"}),
            ("git_commit", {"repo_path": "/x", "message": "m"}),
        ],
    )
    assert answers[0]["content"][0]["text"].startswith("Changes committed successfully with hash ")
    assert answers[1]["isError"] is True
    assert answers[1]["content"][0]["text"].startswith("snapshot miss:")


@pytest.mark.slow
def test_probe_suggests_the_rules_for_the_real_time_server(recorded: Path) -> None:
    """``probe --repeat 2 --suggest-volatile`` asks mcp-server-time twice and prints TOML rules
    for the datetime in both places, with the values seen; pasted, they make ``probe`` stable,
    and the config is never written by it."""
    import tomllib

    _check(recorded, "")
    config = recorded / "toolreplay.toml"
    before = config.read_bytes()
    run = str(recorded / "runs" / "time.jsonl")
    argv = ["probe", run, "--config", str(config), "--repeat", "2", "--suggest-volatile", "--"]
    result = CliRunner().invoke(cli, [*argv, *python_server("time")])
    assert result.exit_code == 0, result.output
    assert config.read_bytes() == before
    suggested = tomllib.loads(result.stdout)["volatile"]
    assert [(rule["tool"], rule["at"]) for rule in suggested] == [
        ("get_current_time", "/response/content/*/text#/datetime"),
        ("get_current_time", "/response/structuredContent/datetime"),
    ]
    assert (
        '"get_current_time": a date and time changes at "/response/structuredContent/datetime": seen "'
        in (result.stdout)
    )
    config.write_text(before.decode() + result.stdout, encoding="utf-8")
    time.sleep(1.1)
    result = CliRunner().invoke(cli, ["probe", run, "--config", str(config), "--", *python_server("time")])
    assert result.exit_code == 0, result.output
    assert "tool 'get_current_time': stable\n" in result.output
