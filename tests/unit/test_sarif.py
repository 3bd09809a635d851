"""SARIF output: valid against the OASIS SARIF 2.1.0 schema, stable rule ids, relative URIs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

from tests.conftest import SAMPLES
from toolreplay.findings import Finding, Report
from toolreplay.kinds import KIND_ORDER
from toolreplay.report.sarif import SRCROOT, render_sarif, sarif_log

SCHEMA = json.loads((Path(__file__).parent.parent / "data" / "sarif" / "sarif-schema-2.1.0.json").read_text())


def _validate(log: dict[str, Any]) -> None:
    validator = jsonschema.Draft4Validator(SCHEMA, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)
    validator.validate(log)


def _reports() -> list[Report]:
    path = "runs/a b.jsonl"
    findings = [
        Finding(kind=kind, index=i, tool="t", message=f"{kind} found", path=path, line=i + 1)
        for i, kind in enumerate(KIND_ORDER)
    ]
    findings.append(Finding(kind="schema-breaking", index=99, tool="t", message="new", path=path, line=100))
    return [
        Report(command="check", path=path, findings=tuple(findings)),
        Report(command="verify", path="base.sealed.jsonl", errors=("head is x, expected y",)),
    ]


def test_output_validates_against_the_sarif_schema() -> None:
    """Every kind, an unknown kind and a file-level error make a schema-valid SARIF 2.1.0 log."""
    log = json.loads(render_sarif(_reports()))
    _validate(log)
    assert log["version"] == "2.1.0"


def test_schema_catches_a_broken_log() -> None:
    """The vendored schema really validates: a result without a message is refused."""
    log = sarif_log(_reports())
    del log["runs"][0]["results"][0]["message"]
    try:
        _validate(log)
    except jsonschema.ValidationError:
        return
    raise AssertionError("the schema accepted a result without a message")


def test_rule_ids_are_the_kinds_and_rule_indexes_match() -> None:
    """ruleId is the finding kind; ruleIndex points at the rule with that id, with help text."""
    run = sarif_log(_reports())["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules[: len(KIND_ORDER)]] == list(KIND_ORDER)
    for result in run["results"]:
        rule = rules[result["ruleIndex"]]
        assert rule["id"] == result["ruleId"]
        assert rule["help"]["text"]
    ids = {r["ruleId"] for r in run["results"]}
    assert {"schema-breaking", "report-error", "redundant-call"} <= ids


def test_locations_are_repo_relative_uris_with_the_record_line() -> None:
    """URIs are relative, percent-encoded, under %SRCROOT%; the region starts at the record's line."""
    result = sarif_log(_reports())["runs"][0]["results"][0]
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "runs/a%20b.jsonl", "uriBaseId": SRCROOT}
    assert location["region"] == {"startLine": 1}


def test_absolute_path_inside_the_root_becomes_relative(tmp_path: Path) -> None:
    """An absolute path under the repository root is written relative to it."""
    path = str(tmp_path / "sub" / "x.jsonl")
    finding = Finding(kind="redundant-call", index=1, tool="t", message="m", path=path, line=2)
    report = Report(command="replay", path=path, findings=(finding,))
    uri = sarif_log([report], root=str(tmp_path))["runs"][0]["results"][0]["locations"][0]
    assert uri["physicalLocation"]["artifactLocation"] == {"uri": "sub/x.jsonl", "uriBaseId": SRCROOT}


def test_path_outside_the_root_is_an_absolute_file_uri(tmp_path: Path) -> None:
    """A file outside the repository gets a file: URI and no base id, and still validates."""
    report = Report(command="verify", path="/opt/else/x.jsonl", errors=("broken",))
    log = sarif_log([report], root=str(tmp_path))
    _validate(log)
    artifact = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": "file:///opt/else/x.jsonl"}


def test_sarif_from_the_cli_is_byte_identical_across_runs(runner: Any) -> None:
    """Two runs of replay --format sarif print the same bytes, and they validate."""
    from toolreplay.cli import cli

    args = ["replay", str(SAMPLES / "session-dirty.jsonl"), "--format", "sarif"]
    first = runner.invoke(cli, args, catch_exceptions=False)
    second = runner.invoke(cli, args, catch_exceptions=False)
    assert first.exit_code == 1 and first.output == second.output
    _validate(json.loads(first.output))
