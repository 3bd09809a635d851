"""``toolreplay action`` through the real CLI, in a pull request's workspace with the runner's variables.

The workspace is a real git repository (tests/action_env.py), the PR comment goes to a
real local HTTP server speaking GitHub's REST API (tests/github_fake.py), and the output
is read the way the runner reads it (tests/runner_sim.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from tests.action_env import (
    BASELINE,
    NUMBER,
    OWNER,
    TRANSCRIPT,
    V3,
    V4,
    delimiters,
    parse_outputs,
    pull_request,
)
from tests.github_fake import Account, FakeGitHub
from tests.runner_sim import commands, parse_v2
from toolreplay.cli import cli
from toolreplay.escape import starts_command
from toolreplay.github.comment import ACTIONS_BOT, MARKER
from toolreplay.report.inert import ZWJ

TOKEN = "ghs_workflowTOKEN0123456789abcdef"
READ_ONLY = "ghs_forkReadOnlyTOKEN5555555555"

INJECTIONS = [
    "\n::add-mask::x",
    "\r::stop-commands::t",
    "%0A::error::fake",
    "@octocat",
    "<!-- toolreplay-report -->",
    "</details>",
    "##[set-output name=findings]0",
    "  ::warning file=x::planted",
]


@pytest.fixture(autouse=True)
def _git(git_isolated: None) -> None:
    """git runs with the inherited environment: a clean test identity and no outer repository."""


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    server = FakeGitHub(
        owner=OWNER,
        repo="agents",
        number=NUMBER,
        tokens={
            TOKEN: Account(login=ACTIONS_BOT, installation=True),
            READ_ONLY: Account(login=ACTIONS_BOT, installation=True, read_only=True),
        },
    )
    with server:
        yield server


def run_action(
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    event: Path | None = None,
    api_url: str | None = None,
    runner: dict[str, str] | None = None,
    **settings: str,
) -> tuple[Result, dict[str, str], Path]:
    """Run ``toolreplay action`` in ``workspace`` as the runner would; (result, outputs, runner temp)."""
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir(exist_ok=True)
    output = runner_temp / "output.txt"
    output.write_text("")
    env: dict[str, str | None] = {
        key: None for key in os.environ if key.startswith(("GITHUB_", "RUNNER_", "TOOLREPLAY_"))
    }
    env.update(
        GITHUB_ACTIONS="true",
        GITHUB_WORKSPACE=str(workspace),
        GITHUB_OUTPUT=str(output),
        GITHUB_STEP_SUMMARY=str(runner_temp / "summary.md"),
        GITHUB_REPOSITORY=f"{OWNER}/agents",
        RUNNER_TEMP=str(runner_temp),
        TOOLREPLAY_COMMENT="false",
    )
    if api_url is not None:
        env["GITHUB_API_URL"] = api_url
    if event is not None:
        event_sha = json.loads(event.read_text())["pull_request"]["head"]["sha"]
        env.update(GITHUB_EVENT_NAME="pull_request", GITHUB_EVENT_PATH=str(event), GITHUB_SHA=event_sha)
    env.update({f"TOOLREPLAY_{k.upper()}": v for k, v in settings.items()})
    env.update(runner or {})
    monkeypatch.chdir(workspace)
    result = CliRunner().invoke(cli, ["action"], env=env, catch_exceptions=False)
    return result, parse_outputs(output.read_text()), runner_temp


def assert_inert(result: Result, allowed: set[str]) -> list[Any]:
    """Only our annotation commands start a command, on stdout and stderr; return them."""
    found = commands(result.stdout) + commands(result.stderr)
    assert {c.name for c in found} <= allowed, found
    for stream in (result.stdout, result.stderr):
        for line in stream.split("\n"):
            if parse_v2(line):
                assert "\r" not in line
                continue
            for piece in line.splitlines() or [""]:
                assert not starts_command(piece), repr(piece)
    return found


def test_exact_output_of_a_pull_request_without_a_drift_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log of a PR that re-seals a baseline without a note: annotations first, ranked, then the report."""
    pr = pull_request(tmp_path / "ws")
    result, outputs, temp = run_action(pr.path, tmp_path, monkeypatch, event=pr.event(tmp_path))
    span = f"{pr.base[:12]}...{pr.head[:12]}"
    drift = (
        f"baseline '{BASELINE}' (modified): "
        "no drift note staged under drift-notes/ names this baseline; "
        f"write the note: toolreplay note {BASELINE} --base {pr.base} -o drift-notes/checkout.md; "
        "then explain the drift in it and add it under drift-notes/ in this pull request"
    )
    assert result.stdout == (
        f"::error file={BASELINE},title=toolreplay missing-drift-note::{drift}\n"
        f"::error file={TRANSCRIPT},line=5,title=toolreplay non-determinism::index 4: tool 'search' "
        "returned a different response than the identical call at index 2\n"
        f"::warning file={TRANSCRIPT},line=2,title=toolreplay redundant-call::index 1: tool 'read_file' "
        "repeats the identical call at index 0 with no state change between them (if it changes state, "
        "declare it with --mutator or mutators in the config)\n"
        f"== {TRANSCRIPT}\n"
        "calls: 5\n"
        "divergence: index 4\n"
        "findings: 2\n"
        "index 1: redundant-call: tool 'read_file' repeats the identical call at index 0 with no state "
        "change between them (if it changes state, declare it with --mutator or mutators in the config)\n"
        "index 4: non-determinism: tool 'search' returned a different response than the identical call "
        "at index 2\n"
        f"== {BASELINE}\n"
        "chain: intact\n"
        "links: 4\n"
        f"head: {V4}\n"
        f"== {BASELINE}\n"
        "change: modified\n"
        f"from: {V3}\n"
        f"to: {V4}\n"
        "note: missing\n"
        f"missing-drift-note: {drift}\n"
        "total: 3 reports, 3 findings, 3 failing (fail-on: any), 0 unreadable\n"
        f"drift notes: 1 problem(s) in {span}, see the findings\n"
        f"job summary: {(temp / 'summary.md').stat().st_size} bytes\n"
        "PR comment: off\n"
    )
    assert result.stderr == ""
    assert result.exit_code == 1
    assert outputs == {
        "findings": "3",
        "failing": "3",
        "divergence": "4",
        "report": str(temp / "toolreplay-report.json"),
        "exit-code": "1",
    }


def test_outputs_use_fresh_random_delimiters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every output is a heredoc block with its own random delimiter, so no value can write another."""
    pr = pull_request(tmp_path / "ws")
    _, outputs, temp = run_action(pr.path, tmp_path, monkeypatch)
    used = delimiters((temp / "output.txt").read_text())
    assert len(used) == 5 and len(set(used)) == 5
    assert outputs["report"] == str(temp / "toolreplay-report.json")
    report = json.loads((temp / "toolreplay-report.json").read_text())
    assert report["version"] == 1
    assert [r["file"] for r in report["reports"]] == [TRANSCRIPT, BASELINE]


def test_with_the_matching_note_the_drift_rule_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PR that adds the note binding the exact change has no drift-note finding."""
    pr = pull_request(tmp_path / "ws", with_note=True)
    result, outputs, _ = run_action(pr.path, tmp_path, monkeypatch, event=pr.event(tmp_path))
    assert "missing-drift-note" not in result.stdout
    assert (
        f"drift notes: every baseline change in {pr.base[:12]}...{pr.head[:12]} has its note" in result.stdout
    )
    assert outputs["findings"] == "2"


def test_missing_base_commit_is_a_finding_not_a_silent_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the base commit is not in the checkout (a shallow clone), the rule is reported unchecked."""
    pr = pull_request(tmp_path / "ws")
    event = pr.event(tmp_path)
    payload = json.loads(event.read_text())
    payload["pull_request"]["base"]["sha"] = "ab" * 20
    event.write_text(json.dumps(payload))
    result, outputs, _ = run_action(pr.path, tmp_path, monkeypatch, event=event)
    found = assert_inert(result, {"error", "warning"})
    unchecked = [c for c in found if c.properties.get("title") == "toolreplay drift-note-unchecked"]
    assert len(unchecked) == 1 and unchecked[0].name == "warning"
    assert unchecked[0].properties["file"] == "toolreplay.toml"
    assert "the drift-note rule was not checked: git cannot compare abababababab..." in unchecked[0].data
    assert "drift notes: NOT checked (see the finding)" in result.stdout
    assert outputs["failing"] == "3"


def test_fail_on_none_reports_everything_as_warnings_and_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fail-on none: exit 0, failing 0, and every annotation is a warning."""
    pr = pull_request(tmp_path / "ws")
    result, outputs, _ = run_action(pr.path, tmp_path, monkeypatch, event=pr.event(tmp_path), fail_on="none")
    assert result.exit_code == 0
    assert outputs["failing"] == "0" and outputs["findings"] == "3" and outputs["exit-code"] == "0"
    found = assert_inert(result, {"warning"})
    assert len(found) == 3
    assert "(fail-on: none)" in result.stdout


def test_fail_on_any_fails_even_on_redundancy_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """fail-on any: a redundant call alone fails the job."""
    pr = pull_request(tmp_path / "ws", with_note=True)
    result, outputs, _ = run_action(pr.path, tmp_path, monkeypatch, fail_on="any")
    assert result.exit_code == 1 and outputs["failing"] == "2"


def test_fail_on_kinds_fails_only_on_those(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """fail-on with kinds: only those fail and keep their level; the rest are warnings."""
    pr = pull_request(tmp_path / "ws")
    event = pr.event(tmp_path)
    result, outputs, _ = run_action(
        pr.path, tmp_path, monkeypatch, event=event, fail_on="missing-drift-note, chain-broken"
    )
    assert result.exit_code == 1 and outputs["failing"] == "1"
    levels = {c.properties["title"]: c.name for c in assert_inert(result, {"error", "warning"})}
    assert levels == {
        "toolreplay missing-drift-note": "error",
        "toolreplay non-determinism": "warning",
        "toolreplay redundant-call": "warning",
    }
    result, outputs, _ = run_action(pr.path, tmp_path, monkeypatch, event=event, fail_on="chain-broken")
    assert result.exit_code == 0 and outputs["failing"] == "0"


def test_sarif_levels_follow_fail_on_as_the_annotations_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fail-on missing-drift-note with sarif: the SARIF file gives each result the annotation's
    level, so the non-determinism that does not fail the job is a warning there too."""
    pr = pull_request(tmp_path / "ws")
    result, _, _ = run_action(
        pr.path,
        tmp_path,
        monkeypatch,
        event=pr.event(tmp_path),
        fail_on="missing-drift-note",
        sarif="out/tr.sarif",
    )
    assert result.exit_code == 1
    annotated = {c.properties["title"].removeprefix("toolreplay "): c.name for c in commands(result.stdout)}
    sarif = json.loads((pr.path / "out" / "tr.sarif").read_text())
    levels = {r["ruleId"]: r["level"] for r in sarif["runs"][0]["results"]}
    assert (
        levels
        == annotated
        == {
            "missing-drift-note": "error",
            "non-determinism": "warning",
            "redundant-call": "warning",
        }
    )


def test_unknown_fail_on_kind_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A typo in fail-on is exit 2 with one ::error line, and the exit-code output says 2."""
    pr = pull_request(tmp_path / "ws")
    result, outputs, _ = run_action(pr.path, tmp_path, monkeypatch, fail_on="non-determinsm")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith(
        "::error title=toolreplay::toolreplay: input fail-on: unknown finding kind 'non-determinsm'; "
    )
    assert result.stderr.count("\n") == 1
    assert outputs == {"exit-code": "2"}


def test_unknown_kind_in_the_config_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A typo in the config's fail_on is exit 2 like one in the fail-on input, not a gate switched off."""
    pr = pull_request(tmp_path / "ws")
    config = pr.path / "toolreplay.toml"
    config.write_text(config.read_text() + 'fail_on = ["tool_drift"]\n')
    result, outputs, _ = run_action(pr.path, tmp_path, monkeypatch)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith(
        f"::error title=toolreplay::toolreplay: {config}: fail_on: unknown finding kind 'tool_drift';"
        " the kinds are: agent-drift, "
    )
    assert result.stderr.count("\n") == 1
    assert outputs == {"exit-code": "2"}


def test_bad_config_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An invalid config file is exit 2 naming the file and the field."""
    pr = pull_request(tmp_path / "ws")
    (pr.path / "toolreplay.toml").write_text('transcripts = "agents/*.jsonl"\n')
    result, _, _ = run_action(pr.path, tmp_path, monkeypatch)
    assert result.exit_code == 2
    assert result.stderr == (
        f"::error title=toolreplay::toolreplay: {pr.path / 'toolreplay.toml'}: invalid configuration: "
        "'agents/*.jsonl' is not of type 'array' (at /transcripts)\n"
    )


def test_a_glob_that_matches_nothing_is_a_warning_annotation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A config glob that matches no file checks nothing: the Action says so in a ::warning."""
    pr = pull_request(tmp_path / "ws")
    config = pr.path / "toolreplay.toml"
    config.write_text(config.read_text().replace('"baselines/*.sealed.jsonl"', '"baseline/*.sealed.jsonl"'))
    result, _, _ = run_action(pr.path, tmp_path, monkeypatch)
    warnings = [line for line in result.stdout.splitlines() if "matches no file" in line]
    assert warnings == [
        '::warning title=toolreplay::toolreplay: baselines glob "baseline/*.sealed.jsonl" in'
        f" {config} matches no file"
    ]


def test_a_pull_request_cannot_stop_its_missing_note_from_failing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PR that re-seals a baseline without a note and sets fail_on to chain-broken only still
    fails: the drift-note kinds fail as the base commit's configuration says."""
    pr = pull_request(tmp_path / "ws")
    config = pr.path / "toolreplay.toml"
    config.write_text(config.read_text() + 'fail_on = ["chain-broken"]\n')
    pr.repo.commit_all("and stop failing on a missing note")
    pr = replace(pr, head=pr.repo.head())
    result, outputs, _ = run_action(pr.path, tmp_path, monkeypatch, event=pr.event(tmp_path))
    assert result.exit_code == 1, result.output
    # the missing note, and the transcript's two findings: over the range the base's fail_on (every kind)
    assert outputs["failing"] == "3"
    assert f"::error file={BASELINE},title=toolreplay missing-drift-note::" in result.stdout
    assert "title=toolreplay drift-guard-changed::" in result.stdout


def test_bad_boolean_input_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """comment: maybe is refused, naming the input."""
    pr = pull_request(tmp_path / "ws")
    result, _, _ = run_action(pr.path, tmp_path, monkeypatch, comment="maybe")
    assert result.exit_code == 2
    assert (
        result.stderr
        == "::error title=toolreplay::toolreplay: input comment: expected true or false, got 'maybe'\n"
    )


#: (runner variable, its value under the test's tmp_path (or as it is), what is wrong with it)
BAD_RUNNER = [
    ("GITHUB_WORKSPACE", "{tmp}/ws/toolreplay.toml", "is not a folder"),
    ("GITHUB_WORKSPACE", "{tmp}/gone", "does not exist"),
    ("RUNNER_TEMP", "runner/tmp", "is not an absolute path"),
    ("RUNNER_TEMP", "{tmp}/ws/toolreplay.toml", "is not a folder"),
    ("GITHUB_OUTPUT", "{tmp}/ws", "is a folder, not a file"),
    ("GITHUB_STEP_SUMMARY", "{tmp}/gone/summary.md", "is in no folder that exists"),
    ("GITHUB_EVENT_PATH", "{tmp}/ws", "is a folder, not a file"),
    ("GITHUB_EVENT_PATH", "{tmp}/gone.json", "does not exist"),
    ("GITHUB_API_URL", "api.github.example", "is not an http(s) URL with a host"),
]


@pytest.mark.parametrize(("name", "value", "problem"), BAD_RUNNER, ids=[f"{n}-{p}" for n, _, p in BAD_RUNNER])
def test_a_runner_variable_it_cannot_use_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, value: str, problem: str
) -> None:
    """A runner variable that is not what the runner sets (a workspace that is a file, a relative
    RUNNER_TEMP, an output that is a folder...) is one ::error naming it, exit 2, before anything
    runs (it was an internal error, exit 3, or a run that went on without it)."""
    pr = pull_request(tmp_path / "ws")
    value = value.format(tmp=tmp_path)
    result, outputs, runner_temp = run_action(
        pr.path, tmp_path, monkeypatch, runner={name: value}, comment="true", token=TOKEN
    )
    assert (result.exit_code, result.stdout) == (2, "")
    assert (
        result.stderr
        == f"::error title=toolreplay::toolreplay: runner variable {name}: '{value}' {problem}\n"
    )
    assert outputs == {}
    assert not (runner_temp / "toolreplay-report.json").exists()
    assert not (pr.path / "runner").exists()


def test_sarif_and_annotations_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """annotations: false prints no command; sarif writes a SARIF 2.1.0 file (folders created)."""
    pr = pull_request(tmp_path / "ws")
    result, _, _ = run_action(
        pr.path, tmp_path, monkeypatch, event=pr.event(tmp_path), annotations="false", sarif="out/tr.sarif"
    )
    assert commands(result.stdout + result.stderr) == []
    sarif = json.loads((pr.path / "out" / "tr.sarif").read_text())
    results = sarif["runs"][0]["results"]
    assert sarif["version"] == "2.1.0"
    assert {r["ruleId"] for r in results} == {"missing-drift-note", "non-determinism", "redundant-call"}
    drift = next(r for r in results if r["ruleId"] == "missing-drift-note")
    assert drift["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == BASELINE


def test_comment_created_then_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: FakeGitHub
) -> None:
    """With github.token the comment is created once, by github-actions[bot]; a rerun writes nothing."""
    pr = pull_request(tmp_path / "ws")
    event = pr.event(tmp_path)
    settings = {"comment": "true", "token": TOKEN, "api_url": fake.api_url}
    first, _, _ = run_action(pr.path, tmp_path, monkeypatch, event=event, **settings)
    assert len(fake.comments) == 1 and fake.comments[0]["login"] == ACTIONS_BOT
    # the hidden lines name the PR's head and list no accept (the baseline changed, nothing drifted from it)
    assert fake.comments[0]["body"].startswith(
        f"{MARKER}\n<!-- toolreplay-head: {pr.head} -->\n<!-- toolreplay-accepts: [] -->\n"
        "### toolreplay report\n\n**Fails the build**: 3 findings of kinds that fail it, in 2 of 2"
    )
    assert f"PR comment: created ({fake.origin}/{OWNER}/agents/pull/{NUMBER}#issuecomment-" in first.stdout
    writes = len(fake.writes())
    second, _, _ = run_action(pr.path, tmp_path, monkeypatch, event=event, **settings)
    assert "PR comment: unchanged" in second.stdout
    assert len(fake.writes()) == writes and len(fake.comments) == 1
    assert first.stderr == second.stderr == ""  # PyGithub's own request log stays out of the log
    assert TOKEN not in first.stdout + second.stdout


def test_fork_pull_request_degrades_without_failing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: FakeGitHub
) -> None:
    """A fork PR's read-only token gets 403: one ::warning, no comment, the exit code follows fail-on."""
    pr = pull_request(tmp_path / "ws", with_note=True)
    result, outputs, temp = run_action(
        pr.path,
        tmp_path,
        monkeypatch,
        event=pr.event(tmp_path, fork=True),
        api_url=fake.api_url,
        comment="true",
        token=READ_ONLY,
        fail_on="none",
    )
    assert result.exit_code == 0 and outputs["exit-code"] == "0"
    assert fake.comments == []
    warnings = [
        c
        for c in assert_inert(result, {"error", "warning"})
        if c.properties.get("title") == "toolreplay comment"
    ]
    assert len(warnings) == 1
    assert warnings[0].data == (
        "toolreplay could not write the PR comment (GitHub answered 403 (a read-only token, as on a pull "
        "request from a fork?): Resource not accessible by integration); the annotations and the job summary "
        "still carry the report"
    )
    assert (temp / "summary.md").read_text().startswith("### toolreplay report")
    assert READ_ONLY not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("fault", "fail_on", "code"),
    [
        ("other-host", "none", 0),
        ("other-host", "", 1),
        ("malformed-json", "none", 0),
        ("wrong-shape", "none", 0),
    ],
)
def test_a_bad_answer_from_github_is_a_warning_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: FakeGitHub, fault: str, fail_on: str, code: int
) -> None:
    """URLs on another host, broken JSON or JSON of the wrong shape: one ::warning, no traceback,
    and the exit code is the one the findings give (PyGithub's AssertionError used to exit 3)."""
    fake.fault, fake.fault_routes = fault, ("repo", "list")
    pr = pull_request(tmp_path / "ws", with_note=True)
    result, outputs, _ = run_action(
        pr.path,
        tmp_path,
        monkeypatch,
        event=pr.event(tmp_path),
        api_url=fake.api_url,
        comment="true",
        token=TOKEN,
        fail_on=fail_on,
    )
    assert result.exit_code == code and outputs["exit-code"] == str(code)
    assert "Traceback" not in result.stdout + result.stderr
    assert "internal error" not in result.stdout + result.stderr
    warnings = [
        c
        for c in assert_inert(result, {"error", "warning"})
        if c.properties.get("title") == "toolreplay comment"
    ]
    assert len(warnings) == 1
    assert warnings[0].data.startswith("toolreplay could not write the PR comment (")
    assert fake.comments == []
    assert TOKEN not in result.stdout + result.stderr


def test_missing_token_warns_and_makes_no_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: FakeGitHub
) -> None:
    """comment on without any token: one ::warning, nothing sent to GitHub."""
    pr = pull_request(tmp_path / "ws", with_note=True)
    result, _, _ = run_action(
        pr.path, tmp_path, monkeypatch, event=pr.event(tmp_path), api_url=fake.api_url, comment="true"
    )
    warnings = [
        c
        for c in assert_inert(result, {"error", "warning"})
        if c.properties.get("title") == "toolreplay comment"
    ]
    assert [w.data for w in warnings] == [
        "toolreplay could not write the PR comment (no token: pass the token input, which defaults to "
        "github.token); the annotations and the job summary still carry the report"
    ]
    assert fake.requests == []


def test_injection_in_tool_names_never_becomes_a_runner_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: FakeGitHub
) -> None:
    """Tool names carrying workflow commands, mentions and the marker: only our annotations run,
    the outputs are ours, the comment is inert, and the token is printed nowhere."""
    pr = pull_request(tmp_path / "ws", tools=INJECTIONS)
    result, outputs, temp = run_action(
        pr.path,
        tmp_path,
        monkeypatch,
        event=pr.event(tmp_path),
        api_url=fake.api_url,
        comment="true",
        token=TOKEN,
    )
    found = assert_inert(result, {"error", "warning"})
    assert all(c.properties.get("file") in (TRANSCRIPT, BASELINE) for c in found)
    assert set(outputs) == {"findings", "failing", "divergence", "report", "exit-code"}
    assert outputs["findings"] == str(3 + len(INJECTIONS))
    [comment] = fake.comments
    body = comment["body"]
    assert body.count(MARKER) == 1 and body.startswith(MARKER)
    assert "@octocat" not in body and f"@{ZWJ}octocat" in body
    assert "</details>" not in body.replace("\n</details>", "")  # only our own closing tag, on its own line
    summary = (temp / "summary.md").read_text()
    assert "<!--" not in summary and "@octocat" not in summary
    assert TOKEN not in result.stdout + result.stderr + (temp / "output.txt").read_text() + summary


def test_config_in_a_subfolder_annotates_repository_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A config in a subfolder: findings and the drift rule name paths from the repository root."""
    from tests.gitrepo import Repo

    repo = Repo.create(tmp_path / "ws")
    inner = pull_request(tmp_path / "inner-src")
    # the same project, moved under agentsuite/ of a bigger repository
    for rel in ("toolreplay.toml", "scope.json", TRANSCRIPT):
        repo.write(f"agentsuite/{rel}", (inner.path / rel).read_text())
    repo.write_baseline(f"agentsuite/{BASELINE}", 3)
    repo.commit_all("base")
    base = repo.head()
    repo.write_baseline(f"agentsuite/{BASELINE}", 4)
    repo.commit_all("re-record")
    event = PullRequestEvent(base, repo.head()).write(tmp_path)
    result, outputs, _ = run_action(
        repo.path, tmp_path, monkeypatch, event=event, config="agentsuite/toolreplay.toml"
    )
    found = assert_inert(result, {"error", "warning"})
    assert sorted({c.properties["file"] for c in found}) == [
        f"agentsuite/{TRANSCRIPT}",
        f"agentsuite/{BASELINE}",
    ]
    drift = next(c for c in found if c.properties["title"] == "toolreplay missing-drift-note")
    assert drift.properties["file"] == f"agentsuite/{BASELINE}"
    assert "no drift note staged under agentsuite/drift-notes/ names this baseline" in drift.data
    assert outputs["findings"] == "3"


class PullRequestEvent:
    """A bare pull_request payload for a repository built by hand."""

    def __init__(self, base: str, head: str) -> None:
        self.base, self.head = base, head

    def write(self, folder: Path) -> Path:
        target = folder / "event.json"
        target.write_text(
            json.dumps(
                {"pull_request": {"number": NUMBER, "base": {"sha": self.base}, "head": {"sha": self.head}}}
            )
        )
        return target


def test_annotations_are_capped_with_a_left_out_notice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past GitHub's 10 errors per step the rest are left out, and one inert line says how many."""
    pr = pull_request(tmp_path / "ws", tools=[f"tool_{n:02}" for n in range(20)])
    result, outputs, _ = run_action(pr.path, tmp_path, monkeypatch, event=pr.event(tmp_path))
    found = assert_inert(result, {"error", "warning"})
    assert [c.name for c in found].count("error") == 10 and [c.name for c in found].count("warning") == 1
    # integrity and scope first: the drift note and the first overreaches; non-determinism is left out
    assert "toolreplay non-determinism" not in {c.properties["title"] for c in found}
    assert outputs["findings"] == "23"
    assert (
        "toolreplay: 12 of 23 findings are not shown as annotations (GitHub shows at most 10 errors and "
        "10 warnings per step); the report below and the job summary list all of them\n"
    ) in result.stdout


def test_a_pull_request_cannot_switch_off_its_own_drift_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Action judges with the base's baselines; the PR's change of them is a ::warning, not a pass."""
    from tests.gitrepo import Repo

    repo = Repo.create(tmp_path / "ws")
    repo.write("toolreplay.toml", 'baselines = ["baselines/*.sealed.jsonl"]\n')
    repo.write_baseline(BASELINE, 3)
    repo.commit_all("base")
    base = repo.head()
    repo.write("toolreplay.toml", 'baselines = ["nothing/*"]\n')
    repo.write_baseline(BASELINE, 4)
    repo.commit_all("switch the rule off and re-record")
    event = PullRequestEvent(base, repo.head()).write(tmp_path)
    result, outputs, _ = run_action(repo.path, tmp_path, monkeypatch, event=event)
    found = assert_inert(result, {"error", "warning"})
    by_title = {c.properties["title"]: c for c in found}
    assert by_title["toolreplay missing-drift-note"].name == "error"
    changed = by_title["toolreplay drift-guard-changed"]
    assert (changed.name, changed.properties["file"]) == ("warning", "toolreplay.toml")
    assert "baselines ['baselines/*.sealed.jsonl'] -> ['nothing/*']" in changed.data
    assert result.exit_code == 1 and outputs["failing"] == "1"


def test_fail_on_all_but_some_kinds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """fail-on: all,-redundant-call,-non-determinism: those two are warnings; the missing drift
    note still fails the job, and the log says the policy the short way."""
    pr = pull_request(tmp_path / "ws")
    fail_on = "all,-redundant-call,-non-determinism"
    result, outputs, _ = run_action(pr.path, tmp_path, monkeypatch, event=pr.event(tmp_path), fail_on=fail_on)
    assert result.exit_code == 1
    assert outputs["failing"] == "1" and outputs["findings"] == "3"
    assert "3 failing" not in result.stdout
    assert "(fail-on: all,-non-determinism,-redundant-call)" in result.stdout
