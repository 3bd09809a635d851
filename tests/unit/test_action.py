"""The Action's settings, pull-request range, outputs and fail-on policy (toolreplay.github.action)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.action_env import parse_outputs
from toolreplay.driftnotes.base_settings import PullRange
from toolreplay.driftnotes.settings import glob_patterns
from toolreplay.errors import InputError
from toolreplay.findings import Finding, Line, Report
from toolreplay.gate import known_kinds
from toolreplay.github.action import (
    divergence,
    parse_fail_on,
    pull_range_from_env,
    settings_from_env,
    write_outputs,
)
from toolreplay.github.annotations import plan_annotations

BASE, HEAD, MERGE = "1" * 40, "2" * 40, "3" * 40


def test_fail_on_forms() -> None:
    """Empty keeps the config's list; any, none and kinds (spaces and case of any/none ignored)."""
    assert parse_fail_on("", frozenset({"chain-broken"})).kinds == frozenset({"chain-broken"})
    assert parse_fail_on("  ", None).kinds is None
    assert parse_fail_on("ANY", frozenset()).kinds is None
    none = parse_fail_on("none", None)
    assert none.kinds == frozenset() and not none.errors and not none.fails("chain-broken")
    kinds = parse_fail_on(" non-determinism , missing-drift-note,", None)
    assert kinds.kinds == {"non-determinism", "missing-drift-note"} and kinds.errors
    assert kinds.fails("non-determinism") and not kinds.fails("redundant-call")


@pytest.mark.parametrize("value", ["non-determinsm", "any,redundant-call", ",", "-redundant-call"])
def test_fail_on_refuses_what_it_does_not_know(value: str) -> None:
    """A typo would silently fail nothing: it is a usage error naming the input and the known kinds."""
    with pytest.raises(InputError, match=r"input fail-on: .*redundant-call"):
        parse_fail_on(value, None)


def test_fail_on_all_but_some_kinds() -> None:
    """all,-KIND is every default kind but KIND (advisory kinds only when named); all alone is any."""
    policy = parse_fail_on(" all , -audit-incomplete", None)
    assert not policy.fails("audit-incomplete") and policy.fails("chain-broken") and policy.errors
    assert not policy.fails("drift-guard-changed")
    assert parse_fail_on("all", frozenset({"chain-broken"})).kinds is None
    assert parse_fail_on("all,drift-guard-changed", None).fails("drift-guard-changed")


def test_settings_defaults_and_token_fallback(tmp_path: Path) -> None:
    """Without inputs: comment and annotations on, token from GITHUB_TOKEN, and repr hides the token."""
    s = settings_from_env({"GITHUB_TOKEN": "ghs_secret", "GITHUB_WORKSPACE": str(tmp_path)})
    assert (s.comment, s.annotations, s.config, s.sarif, s.fail_on) == (True, True, None, None, "")
    assert s.token == "ghs_secret" and "ghs_secret" not in repr(s)
    s = settings_from_env({"TOOLREPLAY_TOKEN": "a", "GITHUB_TOKEN": "b", "TOOLREPLAY_COMMENT": "False"})
    assert s.token == "a" and s.comment is False


def test_bad_flag_names_the_input() -> None:
    """A boolean input that is not true/false is refused with the input's name."""
    with pytest.raises(InputError, match="input annotations: expected true or false, got 'sometimes'"):
        settings_from_env({"TOOLREPLAY_ANNOTATIONS": "sometimes"})


def _event(tmp_path: Path, payload: object) -> str:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload))
    return str(path)


def test_pull_request_range_uses_the_checked_out_commit(tmp_path: Path) -> None:
    """On pull_request the head is GITHUB_SHA (the merge commit checked out); on pull_request_target
    GITHUB_SHA is the base branch, so the PR's own head is used."""
    event = _event(tmp_path, {"pull_request": {"base": {"sha": BASE}, "head": {"sha": HEAD}}})
    env = {"GITHUB_EVENT_PATH": event, "GITHUB_SHA": MERGE, "GITHUB_EVENT_NAME": "pull_request"}
    assert pull_range_from_env(env) == PullRange(base=BASE, head=MERGE)
    env["GITHUB_EVENT_NAME"] = "pull_request_target"
    assert pull_range_from_env(env) == PullRange(base=BASE, head=HEAD)
    assert pull_range_from_env({"GITHUB_EVENT_PATH": event}) == PullRange(base=BASE, head=HEAD)


@pytest.mark.parametrize(
    "payload",
    [
        {"ref": "refs/heads/main", "before": BASE, "after": HEAD},  # a push
        {"pull_request": {"base": {"sha": "--output=/tmp/x"}, "head": {"sha": HEAD}}},
        {"pull_request": {"head": {"sha": HEAD}}},
        [],
    ],
)
def test_not_a_usable_pull_request_event(tmp_path: Path, payload: object) -> None:
    """A push, a SHA that is not hex (never handed to git), a missing side or a non-object: no range."""
    assert pull_range_from_env({"GITHUB_EVENT_PATH": _event(tmp_path, payload), "GITHUB_SHA": HEAD}) is None


def test_no_event_file_is_no_range(tmp_path: Path) -> None:
    """No event path, or one that cannot be read: no range, no error."""
    assert pull_range_from_env({}) is None
    assert pull_range_from_env({"GITHUB_EVENT_PATH": str(tmp_path / "missing.json")}) is None


def test_outputs_cannot_inject_further_outputs(tmp_path: Path) -> None:
    """A value holding newlines, name=value lines and a fake delimiter stays one output's value."""
    path = tmp_path / "output"
    path.write_text("earlier=1\n")
    evil = "x\nexit-code=0\nghadelimiter_0000\nfailing<<EOF\n0\nEOF"
    write_outputs(str(path), {"report": evil, "exit-code": "1"})
    assert parse_outputs(path.read_text()) == {"earlier": "1", "report": evil, "exit-code": "1"}


def test_divergence_is_the_smallest_index() -> None:
    """The first divergence over all transcripts; none reported is None (an empty output)."""

    def report(value: object) -> Report:
        return Report(command="check", path="x", header=(Line(key="divergence", value=value, text="-"),))

    assert divergence([report(None), report(7), report(3)]) == 3
    assert divergence([report(None)]) is None
    assert divergence([]) is None


def test_glob_patterns_from_the_repository_root() -> None:
    """Config globs are prefixed with the config's folder; a **/ also matches no folder at all."""
    assert glob_patterns(["baselines/*.sealed.jsonl"], "") == ("baselines/*.sealed.jsonl",)
    assert glob_patterns(["**/*.sealed.jsonl"], "agents") == (
        "agents/**/*.sealed.jsonl",
        "agents/*.sealed.jsonl",
    )


def test_file_level_finding_text_is_its_message() -> None:
    """A finding with neither index nor tool (a drift-note finding) is not led by an empty tool name."""
    assert Finding(kind="missing-drift-note", index=None, tool="", message="m").text == "m"
    assert Finding(kind="tool-drift", index=None, tool="search", message="m").text == "search: m"


def test_annotation_level_override() -> None:
    """The Action demotes findings that do not fail the build to warnings; ranking is unchanged."""
    findings = (
        Finding(kind="non-determinism", index=3, tool="t", message="a", path="f", line=4),
        Finding(kind="permission-overreach", index=1, tool="t", message="b", path="f", line=2),
    )
    reports = [Report(command="check", path="f", findings=findings)]
    plan = plan_annotations(reports, level=lambda kind: "warning" if kind == "non-determinism" else "error")
    assert [(a.kind, a.level) for a in plan.shown] == [
        ("permission-overreach", "error"),
        ("non-determinism", "warning"),
    ]


def test_schemas_list_exactly_the_kinds_the_code_knows() -> None:
    """The config schema's fail_on enum, the report schema's kind enum and the kind table agree."""
    from toolreplay.kinds import KIND_ORDER, KINDS, REPORT_ERROR
    from toolreplay.schemas import schema_text

    config = json.loads(schema_text("config.schema.json"))
    report = json.loads(schema_text("report.schema.json"))
    finding = report["properties"]["reports"]["items"]["properties"]["findings"]["items"]
    words = set(config["properties"]["fail_on"]["items"]["enum"])
    assert words == known_kinds() | {"all"} | {f"-{kind}" for kind in known_kinds()}
    assert set(finding["properties"]["kind"]["enum"]) == set(KINDS)
    assert known_kinds() == set(KINDS) | {REPORT_ERROR}
    assert set(KIND_ORDER) == set(KINDS)  # every kind has its place in a report's order


def test_advisory_kinds_fail_only_when_named() -> None:
    """drift-guard-changed and unguarded-sealed-file never fail by default, in the Action or the config."""
    from pathlib import Path

    from toolreplay.config import Config

    for kind in ("drift-guard-changed", "unguarded-sealed-file"):
        assert not parse_fail_on("", None).fails(kind)
        assert not parse_fail_on("any", None).fails(kind)
        assert parse_fail_on(kind, None).fails(kind)
        assert not Config(root=Path("."), source="toolreplay.toml").fails(kind)
        assert Config(root=Path("."), source="toolreplay.toml", fail_on=frozenset({kind})).fails(kind)
    assert parse_fail_on("", None).fails("missing-drift-note")


def test_fail_on_argument_overreach_also_fails_unjudged_calls() -> None:
    """An unjudged call may be an overreach: fail-on naming argument-overreach fails it too."""
    policy = parse_fail_on("argument-overreach", None)
    assert policy.fails("scope-unjudged") and policy.fails("argument-overreach")
    assert not policy.fails("tool-drift")
    assert not parse_fail_on("tool-drift", None).fails("scope-unjudged")
    assert not parse_fail_on("none", None).fails("scope-unjudged")
