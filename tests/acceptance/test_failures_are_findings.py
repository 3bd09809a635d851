"""Every exit 1 comes with a finding in every report format.

A workflow that uploads a command's SARIF, or reads its annotations or JSON, must see the
failure the exit code reports: a broken chain, an anchor that does not match, a signature
that does not verify, a stale baseline, an unreadable file. Each scenario runs the real CLI
in all five formats; the SARIF log is validated with the OASIS 2.1.0 schema and the JSON
report with the published report schema.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from tests.conftest import ROOT, SAMPLES
from toolreplay.cli import cli
from toolreplay.kinds import kind_info
from toolreplay.report import RENDERERS
from toolreplay.schemas import validator

SARIF_SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json").read_text())
TAMPERED = ROOT / "tests" / "cases" / "cli" / "verify-tampered" / "tampered.sealed.jsonl"
CLEAN = SAMPLES / "baselines" / "session-clean.sealed.jsonl"
DIFF_CASES = ROOT / "tests" / "cases" / "diff"
WRONG_HEAD = "3a60a3d1b8cb44c0e6b7b21e67a4e04bbfb1dc8a82d8eb5f2c04d04e31e9fd5b"

#: (command line, the kind each format must carry); built in a fresh folder
Scenario = Callable[[Path, CliRunner], tuple[list[str], str]]


def _verify_broken(tmp: Path, runner: CliRunner) -> tuple[list[str], str]:
    return ["verify", str(TAMPERED)], "chain-broken"


def _verify_head(tmp: Path, runner: CliRunner) -> tuple[list[str], str]:
    return ["verify", str(CLEAN), "--expect-head", WRONG_HEAD], "anchor-mismatch"


def _verify_count(tmp: Path, runner: CliRunner) -> tuple[list[str], str]:
    return ["verify", str(CLEAN), "--expect-count", "3"], "anchor-mismatch"


def _verify_signature(tmp: Path, runner: CliRunner) -> tuple[list[str], str]:
    key = tmp / "k.key"
    assert runner.invoke(cli, ["keygen", str(key)], catch_exceptions=False).exit_code == 0
    signed, other = tmp / "signed.sealed.jsonl", tmp / "other.sealed.jsonl"
    runner.invoke(
        cli, ["seal", str(SAMPLES / "session-dirty.jsonl"), "-o", str(signed)], catch_exceptions=False
    )
    assert runner.invoke(cli, ["sign", str(signed), "--key", str(key)], catch_exceptions=False).exit_code == 0
    shutil.copy(CLEAN, other)
    args = ["verify", str(other), "--key", f"{key}.pub", "--signature", f"{signed}.sig"]
    return args, "signature-invalid"


def _diff_broken(tmp: Path, runner: CliRunner) -> tuple[list[str], str]:
    case = DIFF_CASES / "baseline-chain-broken"
    return ["diff", str(case / "baseline.sealed.jsonl"), str(case / "run.jsonl")], "chain-broken"


def _diff_stale(tmp: Path, runner: CliRunner) -> tuple[list[str], str]:
    from tests.gitrepo import git_env

    env = git_env({"GIT_AUTHOR_DATE": "2001-02-03T04:05:06Z", "GIT_COMMITTER_DATE": "2001-02-03T04:05:06Z"})
    baseline = tmp / "b.sealed.jsonl"
    shutil.copy(DIFF_CASES / "faithful" / "baseline.sealed.jsonl", baseline)
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "old"]):
        subprocess.run(["git", *args], cwd=tmp, env=env, check=True, capture_output=True)
    run = str(DIFF_CASES / "faithful" / "run.jsonl")
    return ["diff", str(baseline), run, "--max-age-days", "30"], "stale-baseline"


def _check_broken(tmp: Path, runner: CliRunner) -> tuple[list[str], str]:
    shutil.copy(TAMPERED, tmp / "b.sealed.jsonl")
    (tmp / "toolreplay.toml").write_text('baselines = ["*.sealed.jsonl"]\n')
    return ["check", "--config", str(tmp / "toolreplay.toml")], "chain-broken"


def _check_unreadable(tmp: Path, runner: CliRunner) -> tuple[list[str], str]:
    (tmp / "bad.jsonl").write_text("not json\n")
    (tmp / "toolreplay.toml").write_text('transcripts = ["*.jsonl"]\n')
    return ["check", "--config", str(tmp / "toolreplay.toml")], "report-error"


def _replay_dirty(tmp: Path, runner: CliRunner) -> tuple[list[str], str]:
    return ["replay", str(SAMPLES / "session-dirty.jsonl")], "non-determinism"


def _validate_invalid(tmp: Path, runner: CliRunner) -> tuple[list[str], str]:
    (tmp / "scope.json").write_text('{"agent": 1}\n')
    return ["validate", str(tmp / "scope.json")], "report-error"


SCENARIOS: dict[str, Scenario] = {
    "verify-broken-chain": _verify_broken,
    "verify-expect-head": _verify_head,
    "verify-expect-count": _verify_count,
    "verify-bad-signature": _verify_signature,
    "diff-broken-baseline": _diff_broken,
    "diff-stale-baseline": _diff_stale,
    "check-broken-baseline": _check_broken,
    "check-unreadable-file": _check_unreadable,
    "replay-findings": _replay_dirty,
    "validate-invalid": _validate_invalid,
}


def _finding_in(fmt: str, output: str, kind: str) -> None:
    """Assert that ``output`` in format ``fmt`` carries a finding of ``kind`` at the kind's level."""
    level = kind_info(kind).level
    if fmt == "text":
        assert f"{kind}: " in output or (kind == "report-error" and output.strip()), output
    elif fmt == "json":
        report = json.loads(output)
        assert list(validator("report").iter_errors(report)) == []
        if kind == "report-error":
            assert any(r["errors"] for r in report["reports"]), output
        else:
            kinds = [f["kind"] for r in report["reports"] for f in r["findings"]]
            assert kind in kinds, output
            assert all(f["message"] for r in report["reports"] for f in r["findings"])
    elif fmt == "sarif":
        log = json.loads(output)
        jsonschema.Draft4Validator(
            SARIF_SCHEMA, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER
        ).validate(log)
        results = log["runs"][0]["results"]
        assert [r for r in results if r["ruleId"] == kind and r["level"] == level], output
    elif fmt == "github":
        commands = [line for line in output.splitlines() if line.startswith(f"::{level} ")]
        assert [c for c in commands if f"title=toolreplay {kind}::" in c], output
    elif fmt == "markdown":
        assert f"| {level} | {kind} | " in output, output
    else:  # pragma: no cover - a new format needs its own check here
        raise AssertionError(f"no check for format {fmt}")


@pytest.mark.parametrize("fmt", sorted(RENDERERS))
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_exit_1_comes_with_a_finding_in_every_format(
    name: str, fmt: str, tmp_path: Path, runner: CliRunner, git_isolated: None
) -> None:
    """The scenario exits 1, and the chosen format shows the failure as a finding of its kind."""
    args, kind = SCENARIOS[name](tmp_path, runner)
    result = runner.invoke(cli, [*args, "--format", fmt], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    output = result.stdout
    if name.startswith("check") and fmt == "text":
        output = output.rsplit("total:", 1)[0]
    _finding_in(fmt, output, kind)


def test_verify_findings_carry_kind_line_and_message(runner: CliRunner) -> None:
    """verify's JSON findings: chain-broken at the broken link's index and line; both anchors reported."""
    broken = runner.invoke(cli, ["verify", str(TAMPERED), "--format", "json"], catch_exceptions=False)
    [finding] = json.loads(broken.output)["reports"][0]["findings"]
    assert (finding["kind"], finding["index"], finding["line"]) == ("chain-broken", 2, 3)
    both = runner.invoke(
        cli,
        ["verify", str(CLEAN), "--expect-head", WRONG_HEAD, "--expect-count", "3", "--format", "json"],
        catch_exceptions=False,
    )
    findings = json.loads(both.output)["reports"][0]["findings"]
    assert [(f["kind"], f["index"], f["line"]) for f in findings] == [("anchor-mismatch", None, None)] * 2
    assert [f["message"] for f in findings] == [
        f"the chain ends on head 847597ac2c5e225354d86cc218a2232ce0c9a7cda44b599581f20d26d8bb62c7, but the"
        f" anchor expects {WRONG_HEAD}",
        "the chain has 4 links, but the anchor expects 3",
    ]


def test_a_passing_verify_has_no_findings(runner: CliRunner) -> None:
    """The anchors that match add nothing: exit 0 and an empty SARIF result list."""
    result = runner.invoke(
        cli, ["verify", str(CLEAN), "--expect-count", "4", "--format", "sarif"], catch_exceptions=False
    )
    assert result.exit_code == 0
    assert json.loads(result.output)["runs"][0]["results"] == []


def test_text_keeps_the_compatible_verify_lines(runner: CliRunner) -> None:
    """The 0.6 lines (chain, first broken link, expected, found) still lead the text report."""
    result = runner.invoke(cli, ["verify", str(TAMPERED)], catch_exceptions=False)
    lines = result.output.splitlines()
    assert lines[0] == "chain: broken"
    assert lines[1] == "first broken link: index 2"
    assert lines[2].startswith("expected: ") and lines[3].startswith("found: ")
    assert lines[-1].startswith("index 2: chain-broken: the chain breaks here: ")
