"""toolreplay scope/check/validate on ECMA-262 patterns: verdicts, budget and refusals at the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from toolreplay.cli import cli

SLOW_VALUE = "a" * 50 + "b"


def write(tmp_path: Path, schema: object, values: list[str]) -> tuple[str, str]:
    scope = tmp_path / "scope.json"
    scope.write_text(
        json.dumps({"agent": "a", "allowed_tools": ["read_file"], "arguments": {"read_file": schema}})
    )
    transcript = tmp_path / "run.jsonl"
    transcript.write_text(
        "".join(
            json.dumps({"index": i, "tool": "read_file", "args": {"path": v}, "response": {}}) + "\n"
            for i, v in enumerate(values)
        )
    )
    return str(transcript), str(scope)


def test_trailing_newline_is_overreach_at_the_cli(runner: CliRunner, tmp_path: Path) -> None:
    """The documented bypass: 'docs/intro.md\\n' is outside '^docs/intro\\.md$' and exits 1."""
    transcript, scope = write(
        tmp_path,
        {"properties": {"path": {"type": "string", "pattern": "^docs/intro\\.md$"}}},
        ["docs/intro.md", "docs/intro.md\n"],
    )
    result = runner.invoke(cli, ["scope", transcript, scope], catch_exceptions=False)
    assert result.exit_code == 1
    assert result.output == (
        "calls: 2\n"
        "findings: 1\n"
        "index 1: argument-overreach: tool 'read_file' was called with arguments outside the declared "
        "scope at '/path': 'docs/intro.md\\n' does not match '^docs/intro\\\\.md$'\n"
    )


def test_unjudged_calls_are_findings_in_every_format(runner: CliRunner, tmp_path: Path) -> None:
    """scope-unjudged shows up, and fails, in text, JSON, SARIF, GitHub and Markdown output."""
    transcript, scope = write(
        tmp_path, {"properties": {"path": {"pattern": "^(a|aa)+$"}}}, [SLOW_VALUE, SLOW_VALUE, "aa"]
    )
    outputs = {}
    start = time.monotonic()
    for fmt in ("text", "json", "sarif", "github", "markdown"):
        result = runner.invoke(
            cli,
            ["scope", transcript, scope, "--pattern-budget", "0.3", "--format", fmt],
            catch_exceptions=False,
        )
        assert result.exit_code == 1, fmt
        outputs[fmt] = result.output
    assert time.monotonic() - start < 5 * (0.3 + 1.5)
    assert outputs["text"].splitlines()[:3] == [
        "calls: 3",
        "findings: 3",
        "index 0: scope-unjudged: the arguments of tool 'read_file' could not be judged against the "
        "declared scope: the pattern budget of 0.3 s for this transcript ran out while '^(a|aa)+$' was "
        "running",
    ]
    assert (
        outputs["text"].splitlines()[3].endswith("the pattern budget of 0.3 s for this transcript is spent")
    )
    report = json.loads(outputs["json"])["reports"][0]
    assert [f["kind"] for f in report["findings"]] == ["scope-unjudged"] * 3
    sarif = json.loads(outputs["sarif"])
    results = sarif["runs"][0]["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [("scope-unjudged", "error")] * 3
    assert outputs["github"].count("::error ") == 3
    assert "scope-unjudged" in outputs["markdown"]


def test_non_ecma_pattern_is_exit_2_naming_file_and_pointer(runner: CliRunner, tmp_path: Path) -> None:
    """A Python-only pattern ((?P<name>...)) is a usage error naming the scope file, line and pointer."""
    transcript, scope = write(tmp_path, {"properties": {"path": {"pattern": "(?P<dir>docs)/"}}}, ["docs/a"])
    result = runner.invoke(cli, ["scope", transcript, scope])
    assert result.exit_code == 2
    assert result.output == (
        f"toolreplay: error: {scope}:1: not a valid JSON Schema: pattern '(?P<dir>docs)/' is not a valid "
        "ECMA-262 regular expression: Invalid group modifier"
        " (at /arguments/read_file/properties/path/pattern)\n"
    )


def test_validate_reports_a_non_ecma_scope_pattern(runner: CliRunner, tmp_path: Path) -> None:
    """validate calls a scope invalid when scope would refuse it: its pattern is not ECMA-262."""
    _, scope = write(tmp_path, {"patternProperties": {"\\Z": {}}}, [])
    result = runner.invoke(cli, ["validate", scope], catch_exceptions=False)
    assert result.exit_code == 1
    assert result.output == (
        f"{scope}: invalid\n"
        f"{scope}:1: pattern '\\\\Z' is not a valid ECMA-262 regular expression: Invalid character escape "
        "(at /arguments/read_file/patternProperties/\\Z)\n"
    )


def test_check_takes_the_budget_from_the_config(runner: CliRunner, tmp_path: Path) -> None:
    """pattern_budget_seconds in the config bounds check's scope patterns; the calls are findings."""
    write(
        tmp_path, {"properties": {"path": {"pattern": "^(a|aa)+$"}}}, [f"{SLOW_VALUE}{i}" for i in range(10)]
    )
    (tmp_path / "toolreplay.toml").write_text(
        'transcripts = ["run.jsonl"]\nscope = "scope.json"\npattern_budget_seconds = 0.5\n'
    )
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        start = time.monotonic()
        result = runner.invoke(cli, ["check", "--format", "json"], catch_exceptions=False)
        elapsed = time.monotonic() - start
    finally:
        os.chdir(old)
    assert result.exit_code == 1
    assert elapsed < 0.5 + 3
    findings = json.loads(result.output)["reports"][0]["findings"]
    assert [f["kind"] for f in findings] == ["scope-unjudged"] * 10


@pytest.mark.parametrize("budget", ["nan", "inf", "1" + "0" * 400])
def test_config_refuses_a_budget_that_is_not_finite(runner: CliRunner, tmp_path: Path, budget: str) -> None:
    """nan or inf would switch the budget off without a word, and an integer past the largest
    float is no number of seconds either: check refuses each, exit 2, and validate says why."""
    config = tmp_path / "toolreplay.toml"
    config.write_text(f"pattern_budget_seconds = {budget}\n")
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = runner.invoke(cli, ["check"], catch_exceptions=False)
    finally:
        os.chdir(old)
    assert result.exit_code == 2
    assert "pattern_budget_seconds must be a finite number of seconds" in result.output
    result = runner.invoke(cli, ["validate", str(config)], catch_exceptions=False)
    assert result.exit_code == 1
    assert result.output == (
        f"{config}: invalid\n"
        f"{config}: pattern_budget_seconds must be a finite number of seconds (at /pattern_budget_seconds)\n"
    )


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e400", "0", "-1"])
@pytest.mark.parametrize(
    "command",
    [
        ["scope", "t.jsonl", "--pattern-budget"],
        ["fingerprint", "--mcp", "--timeout"],
        ["probe", "t.jsonl", "--timeout"],
    ],
)
def test_every_seconds_option_is_finite_and_positive(
    runner: CliRunner, command: list[str], value: str
) -> None:
    """A number of seconds on the command line is refused, exit 2 and one line naming the
    option, where it is no positive finite number (nan used to reach asyncio as a deadline)."""
    args = [*command, value, *(["--", sys.executable, "-c", "pass"] if "--timeout" in command else [])]
    result = runner.invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 2
    option = command[-1]
    assert f"Error: Invalid value for '{option}': " in result.output


def test_validate_json_summary_has_one_shape(runner: CliRunner, tmp_path: Path) -> None:
    """validate --format json: the summary is {"result": ...} for one file and for several."""
    from toolreplay.schemas import validator

    _, scope = write(tmp_path, {}, [])
    shapes = []
    for files in ([scope], [scope, scope]):
        result = runner.invoke(cli, ["validate", "--format", "json", *files], catch_exceptions=False)
        data = json.loads(result.output)
        assert list(validator("report").iter_errors(data)) == []
        shapes.append([report["summary"] for report in data["reports"]])
    assert shapes == [[{"result": "valid"}], [{"result": "valid"}, {"result": "valid"}]]
    old_shape = {"version": 1, "reports": [dict(data["reports"][0], summary={scope: "valid"})]}
    assert sorted(e.message for e in validator("report").iter_errors(old_shape)) == [
        "'result' is a required property",
        f"Additional properties are not allowed ({scope!r} was unexpected)",
    ]


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(p) for p in (task / "children").read_text().split()]
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads children from Linux /proc")
def test_a_killed_scope_leaves_no_pattern_worker_running(tmp_path: Path) -> None:
    """toolreplay scope killed mid-search: its orphaned worker stops within seconds, not minutes."""
    transcript, scope = write(tmp_path, {"properties": {"path": {"pattern": "^(a|aa)+$"}}}, [SLOW_VALUE])
    process = subprocess.Popen(
        [sys.executable, "-m", "toolreplay", "scope", transcript, scope, "--pattern-budget", "100"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        workers: list[int] = []
        while not workers and time.monotonic() < deadline:
            time.sleep(0.05)
            workers = _children(process.pid)
        assert workers, "no pattern worker started"
        time.sleep(0.5)  # the worker is searching now
    finally:
        process.kill()
        process.wait()
    # its CPU limit is a few seconds of CPU: on a loaded machine (the full suite on 2 cores) those take
    # longer than that on the clock, so the wait is long; without the limit it would spin for hours
    deadline = time.monotonic() + 60
    while _alive(workers[0]) and time.monotonic() < deadline:
        time.sleep(0.1)
    still = _alive(workers[0])
    if still:
        os.kill(workers[0], signal.SIGKILL)
    assert not still, "the orphaned worker kept searching"


def test_validate_and_scope_agree_on_a_foreign_dialect(runner: CliRunner, tmp_path: Path) -> None:
    """A subschema declaring draft-07 is refused by scope (exit 2) and called invalid by validate."""
    schema = {
        "properties": {"path": {"$schema": "http://json-schema.org/draft-07/schema#", "pattern": "^a$"}}
    }
    transcript, scope = write(tmp_path, schema, ["a"])
    problem = (
        "$schema must be 'https://json-schema.org/draft/2020-12/schema' (scope schemas are draft 2020-12)"
        " (at /arguments/read_file/properties/path/$schema)"
    )
    result = runner.invoke(cli, ["scope", transcript, scope])
    assert (result.exit_code, result.output) == (2, f"toolreplay: error: {scope}:1: {problem}\n")
    result = runner.invoke(cli, ["validate", scope], catch_exceptions=False)
    assert (result.exit_code, result.output) == (1, f"{scope}: invalid\n{scope}:1: {problem}\n")


def test_validate_and_scope_agree_on_format(runner: CliRunner, tmp_path: Path) -> None:
    """format in a scope schema (it passed any value) is exit 2 for scope and invalid for validate."""
    transcript, scope = write(tmp_path, {"properties": {"path": {"format": "uri"}}}, ["not a uri"])
    problem = (
        "format is not checked in scope schemas (it would let any value through): restrict the value with"
        " pattern or enum (at /arguments/read_file/properties/path/format)"
    )
    result = runner.invoke(cli, ["scope", transcript, scope])
    assert (result.exit_code, result.output) == (2, f"toolreplay: error: {scope}:1: {problem}\n")
    result = runner.invoke(cli, ["validate", scope], catch_exceptions=False)
    assert (result.exit_code, result.output) == (1, f"{scope}: invalid\n{scope}:1: {problem}\n")


def test_spending_the_budget_cannot_hide_an_overreach_from_fail_on(runner: CliRunner, tmp_path: Path) -> None:
    """fail_on naming argument-overreach fails unjudged calls too: slow values first cannot buy a pass."""
    values = [SLOW_VALUE] * 3 + ["/etc/passwd"]
    write(tmp_path, {"properties": {"path": {"pattern": "^(a|aa)+$|^docs/"}}}, values)
    (tmp_path / "toolreplay.toml").write_text(
        'transcripts = ["run.jsonl"]\nscope = "scope.json"\npattern_budget_seconds = 0.3\n'
        'fail_on = ["argument-overreach", "permission-overreach"]\n'
    )
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = runner.invoke(cli, ["check"], catch_exceptions=False)
    finally:
        os.chdir(old)
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == "total: 1 reports, 6 findings, 4 failing, 0 unreadable"


def test_an_argument_schema_for_an_unlisted_tool_is_refused(runner: CliRunner, tmp_path: Path) -> None:
    """arguments for 'Read_file' when read_file is allowed: a typo that left read_file unchecked is exit 2."""
    transcript, scope = write(tmp_path, {}, ["/etc/passwd"])
    Path(scope).write_text(
        json.dumps(
            {
                "agent": "a",
                "allowed_tools": ["read_file"],
                "arguments": {"Read_file": {"properties": {"path": {"pattern": "^docs/"}}}},
            }
        )
    )
    problem = (
        "arguments for tool 'Read_file', which allowed_tools does not list: its schema would never apply"
        " (at /arguments/Read_file)"
    )
    result = runner.invoke(cli, ["scope", transcript, scope])
    assert (result.exit_code, result.output) == (2, f"toolreplay: error: {scope}:1: {problem}\n")
    result = runner.invoke(cli, ["validate", scope], catch_exceptions=False)
    assert (result.exit_code, result.output) == (1, f"{scope}: invalid\n{scope}:1: {problem}\n")
