"""Untrusted transcript content cannot inject workflow commands, mentions or layout into GitHub output.

The transcript's tool names, responses, the agent name in the scope file and the file name
itself carry the strings an attacker would plant. The real CLI renders them with
``--format github`` and ``--format markdown``; the GitHub output is read the way the runner
reads it (tests/runner_sim.py) and the Markdown is checked for anything live.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.runner_sim import commands, parse_v2
from toolreplay.cli import cli
from toolreplay.escape import starts_command
from toolreplay.report.inert import ZWJ
from toolreplay.transcript import make_record, record_line

PAYLOADS = [
    "\n::add-mask::x",
    "\r::stop-commands::t",
    "%0A::error::fake",
    "@octocat",
    "<!-- marker -->",
    "<!-- toolreplay-report -->",
    "</details>",
    "##[add-mask]y",
    "  ::warning file=x::planted",
    "a|b`c``d",
]


@pytest.fixture
def evil(tmp_path: Path) -> tuple[Path, Path]:
    """A transcript (three calls per payload tool: repeat, then a changed answer) and a scope."""
    records = []
    for tool in PAYLOADS:
        for response in ({"out": tool}, {"out": tool}, {"out": "\n::set-output name=x::" + tool}):
            records.append(make_record(index=len(records), tool=tool, args={"q": tool}, response=response))
    transcript = tmp_path / "run ::add-mask::p, 50%0A @octocat.jsonl"
    transcript.write_text("".join(record_line(r) + "\n" for r in records), encoding="utf-8")
    scope = tmp_path / "scope.json"
    agent = "@octocat\n::add-mask::agent <!--"
    scope.write_text(json.dumps({"agent": agent, "allowed_tools": ["read_file"]}))
    return transcript, scope


def _run(args: list[str], workspace: Path) -> str:
    # as on a runner: the checkout is GITHUB_WORKSPACE, annotations name files relative to it
    result = CliRunner().invoke(cli, args, catch_exceptions=False, env={"GITHUB_WORKSPACE": str(workspace)})
    assert result.exit_code == 1, result.output
    return result.output


@pytest.mark.parametrize("command", ["replay", "scope"])
def test_github_output_runs_only_our_annotations(evil: tuple[Path, Path], command: str) -> None:
    """The runner finds exactly our ::error/::warning lines, each on the transcript file, nothing else."""
    transcript, scope = evil
    args = [command, str(transcript), *([str(scope)] if command == "scope" else []), "--format", "github"]
    output = _run(args, transcript.parent)
    found = commands(output)
    assert found, "the findings should be annotated"
    assert {c.name for c in found} <= {"error", "warning"}
    assert all(c.properties.get("file") == transcript.name for c in found)
    assert all(c.properties.get("title", "").startswith("toolreplay ") for c in found)
    ours = [line for line in output.split("\n") if parse_v2(line)]
    assert len(ours) == len(found)
    # every other line, cut wherever any reader could cut it, starts nothing
    for line in output.split("\n"):
        if line in ours:
            assert "\r" not in line
            continue
        for piece in line.splitlines() or [""]:
            assert not starts_command(piece), repr(piece)


def test_annotation_messages_survive_intact(evil: tuple[Path, Path]) -> None:
    """Escaping is lossless: the runner decodes the message the analysis wrote, payload included."""
    transcript, _ = evil
    found = commands(_run(["replay", str(transcript), "--format", "github"], transcript.parent))
    assert any("'\\n::add-mask::x'" in c.data for c in found)
    assert any("%0A::error::fake" in c.data for c in found)


def test_github_output_says_how_many_were_left_out(evil: tuple[Path, Path]) -> None:
    """Over GitHub's cap, a plain line says how many findings are not annotated."""
    transcript, scope = evil
    output = _run(["scope", str(transcript), str(scope), "--format", "github"], transcript.parent)
    total = 3 * len(PAYLOADS)
    assert len(commands(output)) == 10
    assert f"toolreplay: {total - 10} of {total} findings are not shown as annotations" in output


@pytest.mark.parametrize("command", ["replay", "scope"])
def test_markdown_body_is_inert(evil: tuple[Path, Path], command: str) -> None:
    """No live @mention, no HTML comment (so no copy of the marker), tags only our own, rows intact."""
    transcript, scope = evil
    args = [command, str(transcript), *([str(scope)] if command == "scope" else []), "--format", "markdown"]
    body = _run(args, transcript.parent)
    assert "<!--" not in body
    assert re.search(r"(?<![\w\u200d])@[A-Za-z0-9]", body) is None
    assert body.count("@" + ZWJ + "octocat") >= 1
    tags = re.findall(r"<[/A-Za-z!][^>]*>", body)
    assert set(tags) <= {
        "<details>",
        "<details open>",
        "</details>",
        "<summary>",
        "</summary>",
        "<code>",
        "</code>",
    }
    assert body.count("<details>") + body.count("<details open>") == body.count("</details>")
    header = "| where | level | kind | message |"
    rows = body.split(header)[1].split("\n\n")[0].strip().splitlines()[1:]
    expected = 3 * len(PAYLOADS)  # replay: 2 redundant + 1 non-determinism; scope: 3 overreach
    assert len(rows) == expected
    for row in rows:
        assert len(re.split(r"(?<!\\)\|", row)) == 6  # four cells between five pipes


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
@pytest.mark.parametrize("command", ["replay", "scope"])
def test_other_formats_start_no_workflow_command(evil: tuple[Path, Path], command: str, fmt: str) -> None:
    """Printed in a workflow step, the plain formats run nothing either (text carried '##[add-mask]y')."""
    transcript, scope = evil
    args = [command, str(transcript), *([str(scope)] if command == "scope" else []), "--format", fmt]
    assert commands(_run(args, transcript.parent)) == []


def test_contract_finding_led_by_a_tool_name_starts_no_command(tmp_path: Path) -> None:
    """A lock whose tool is named '::error::x' (as an MCP server may say) prints it inertly in text."""
    from toolreplay.contracts.lock import ToolLock, dump_lock, make_contract

    def lock(names: list[str]) -> Path:
        path = tmp_path / f"{len(names)}.lock.json"
        contracts = [
            make_contract(name=n, signature={"name": n, "params": []}, schema={}, version="") for n in names
        ]
        path.write_text(dump_lock(ToolLock.of(contracts)))
        return path

    output = _run(
        ["fingerprint-diff", str(lock(["a"])), str(lock(["a", "::error::x", "##[group]y"]))], tmp_path
    )
    assert "error::x: added" in output and "group]y: added" in output
    assert commands(output) == []


def test_hook_verify_lines_start_no_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """hook verify prints each file's name first; a planted name runs nothing."""
    monkeypatch.chdir(tmp_path)
    name = tmp_path / "##[add-mask]secret.sealed.jsonl"
    name.write_text("")
    bad = tmp_path / "::error::x.sealed.jsonl"
    bad.write_text("{}\n")
    result = CliRunner().invoke(cli, ["hook", "verify", name.name, bad.name], catch_exceptions=False)
    assert result.exit_code == 2
    assert "chain intact" in result.output and "missing field" in result.output
    assert commands(result.output) == []


@pytest.mark.parametrize("command", ["replay", "check"])
def test_a_control_character_in_a_file_name_is_spelled_out_never_stripped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """`runs/a\\x1b[31m.jsonl` is annotated as that name with the escape spelled out (click stripped the
    raw ANSI sequence, annotating `runs/a.jsonl`, another file); its errors' messages, the text report,
    the Markdown and SARIF's message texts spell it out too, and no raw ESC is printed anywhere."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    same = {"tool": "t", "args": {}}
    bad = tmp_path / "runs" / "a\x1b[31m.jsonl"
    bad.write_text(
        "".join(record_line(make_record(index=i, **same, response={"n": i})) + "\n" for i in (0, 1))
    )
    broken = tmp_path / "runs" / "b\x1b[32m.jsonl"
    broken.write_text("not json\n")
    (tmp_path / "toolreplay.toml").write_text('transcripts = ["runs/*.jsonl"]\n')
    args = [command] if command == "check" else [command, "runs/a\x1b[31m.jsonl"]
    outputs = {
        fmt: _run([*args, "--format", fmt], tmp_path) for fmt in ("github", "text", "markdown", "sarif")
    }
    assert not any("\x1b" in out for out in outputs.values())
    found = commands(outputs["github"])
    assert {c.properties["file"] for c in found} == (
        {"runs/a\\x1b[31m.jsonl", "runs/b\\x1b[32m.jsonl"}
        if command == "check"
        else {"runs/a\\x1b[31m.jsonl"}
    )
    if command == "check":
        (error,) = [c for c in found if c.properties["title"] == "toolreplay report-error"]
        assert error.data == "runs/b\\x1b[32m.jsonl:1: invalid JSON: Expecting value at column 1"
        assert "runs/b\\x1b[32m.jsonl:1: invalid JSON" in outputs["text"]
        messages = [r["message"]["text"] for r in json.loads(outputs["sarif"])["runs"][0]["results"]]
        assert "runs/b\\x1b[32m.jsonl:1: invalid JSON: Expecting value at column 1" in messages
    assert "runs/a\\x1b[31m.jsonl" in outputs["markdown"]
