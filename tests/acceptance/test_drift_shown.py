"""Every drifting tool is reported, and every value is shown where it differs, in each format of
``diff`` and ``check`` (text, JSON, SARIF, annotations, Markdown)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from toolreplay.chain import seal
from toolreplay.cli import cli
from toolreplay.transcript import Record, make_record, record_line

CONFIG = 'transcripts = ["runs/*.jsonl"]\nbaselines = ["baselines/*.sealed.jsonl"]\n'


def lookups(answer: str, calls: int = 3) -> list[Record]:
    """An agent that looks customers up and searches their orders: ``calls`` of each, every answer
    ``answer``."""
    records = []
    for n in range(calls):
        for tool in ("lookup", "search"):
            records.append(
                make_record(index=len(records), tool=tool, args={"id": n}, response={"status": answer})
            )
    return records


def write(folder: Path, baseline: list[Record], run: list[Record]) -> None:
    (folder / "baselines").mkdir(parents=True, exist_ok=True)
    (folder / "runs").mkdir(exist_ok=True)
    (folder / "toolreplay.toml").write_text(CONFIG)
    (folder / "baselines/agent.sealed.jsonl").write_text("".join(line + "\n" for _, line in seal(baseline)))
    (folder / "runs/agent.jsonl").write_text("".join(record_line(r) + "\n" for r in run))


@pytest.fixture
def drifted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Both tools answer differently on every call: lookup drifts first, search the same way after."""
    write(tmp_path, lookups("ok"), lookups("degraded"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


DIFF = ("diff", "baselines/agent.sealed.jsonl", "runs/agent.jsonl")
CHECK = ("check", "--jobs", "1")


@pytest.mark.parametrize("command", [DIFF, CHECK], ids=["diff", "check"])
def test_a_second_tool_drifting_the_same_way_is_a_finding_in_every_format(
    drifted: Path, command: tuple[str, ...]
) -> None:
    """search drifts as lookup did: it is a finding of its own (text, JSON, SARIF, annotations,
    Markdown), with the count of its other drifting calls; it used to be only in a count."""
    text = invoke(*command).stdout
    lines = [line for line in text.splitlines() if ": behavior-drift: " in line]
    assert [line.split("tool ")[1].split(" ")[0] for line in lines] == ["'lookup'", "'search'"]
    assert all(line.endswith("(and 2 more calls of this tool with behavior-drift)") for line in lines)
    if command == DIFF:
        assert "findings: 2 (the first call of each tool and kind; differences: counts every one)" in text
    report = json.loads(invoke(*command, "--format", "json").stdout)
    findings = [f for r in report["reports"] for f in r["findings"]]
    assert [(f["kind"], f["tool"], f["index"]) for f in findings] == [
        ("behavior-drift", "lookup", 0),
        ("behavior-drift", "search", 1),
    ]
    sarif = json.loads(invoke(*command, "--format", "sarif").stdout)
    results = sarif["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["behavior-drift", "behavior-drift"]
    assert ["'search'" in r["message"]["text"] for r in results] == [False, True]
    annotations = [
        a for a in invoke(*command, "--format", "github").stdout.splitlines() if a.startswith("::")
    ]
    assert len(annotations) == 2 and "'search'" in annotations[1]
    markdown = invoke(*command, "--format", "markdown").stdout
    assert markdown.count("| error | behavior-drift |") == 2 and "tool 'search' returned" in markdown


def test_a_thousand_drifting_calls_make_a_readable_comment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 calls that all drift give one finding per tool, each counting the rest: the comment
    stays a few lines, names both tools and says how many more calls drift."""
    write(tmp_path, lookups("ok", 500), lookups("degraded", 500))
    monkeypatch.chdir(tmp_path)
    markdown = invoke(*CHECK, "--format", "markdown").stdout
    assert markdown.count("| error | behavior-drift |") == 2
    assert markdown.count("(and 499 more calls of this tool with behavior-drift)") == 2
    assert len(markdown) < 4000


def _status_text(status: str) -> dict[str, Any]:
    """An MCP answer whose one text block holds a long JSON text ending in its status."""
    body = {"items": [{"id": n, "name": f"item {n}"} for n in range(30)], "status": status}
    return {"content": [{"type": "text", "text": json.dumps(body)}]}


def test_a_long_json_text_is_shown_where_it_differs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A long JSON text differing near its end shows the differing member, in diff's text and in the
    Markdown's side by side (it showed two identical 60-character prefixes)."""
    baseline = [make_record(index=0, tool="health", args={}, response=_status_text("ok"))]
    run = [make_record(index=0, tool="health", args={}, response=_status_text("degraded"))]
    write(tmp_path, baseline, run)
    monkeypatch.chdir(tmp_path)
    text = invoke(*DIFF).stdout
    assert 'at \'/content/0/text#/status\' the baseline has "ok", the run has "degraded"' in text, text
    markdown = invoke(*DIFF, "--format", "markdown").stdout
    assert "at `/content/0/text#/status`:" in markdown
    assert 'baseline `"ok"` → run `"degraded"`' in markdown


def test_a_long_string_is_cut_around_where_it_differs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long plain text differing at its end: both sides are cut at the same place, just before the
    difference, with the cuts marked, in the text and the Markdown's side by side."""
    log = "line\n" * 40
    baseline = [make_record(index=0, tool="tail", args={}, response={"log": log + "ok"})]
    run = [make_record(index=0, tool="tail", args={}, response={"log": log + "degraded"})]
    write(tmp_path, baseline, run)
    monkeypatch.chdir(tmp_path)
    text = invoke(*DIFF).stdout
    tail = "...\\nline\\nline\\nline\\n"
    assert f"at '/log' the baseline has {tail}ok\", the run has {tail}degraded\"" in text, text
    markdown = invoke(*DIFF, "--format", "markdown").stdout
    assert (
        'baseline `...\\nline\\nline\\nline\\nok"` → run `...\\nline\\nline\\nline\\ndegraded"`' in markdown
    )


def test_the_comment_shows_the_first_few_changes_side_by_side_and_names_the_other_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eight tools drifting: a row each, the first five side by side, then one line naming the
    other three."""
    tools = [f"tool_{n}" for n in range(8)]
    baseline = [make_record(index=n, tool=t, args={}, response={"v": 1}) for n, t in enumerate(tools)]
    run = [make_record(index=n, tool=t, args={}, response={"v": 2}) for n, t in enumerate(tools)]
    write(tmp_path, baseline, run)
    monkeypatch.chdir(tmp_path)
    markdown = invoke(*DIFF, "--format", "markdown").stdout
    assert markdown.count("| error | behavior-drift |") == 8
    assert markdown.count("  baseline `1` → run `2`") == 5
    assert "3 more differences (tools `tool_5`, `tool_6`, `tool_7`): the table above" in markdown
