"""One gate for ``check``, ``diff`` and ``probe``: ``fail_on = ["all", "-KIND"]`` in the config and
``--fail-on all,-KIND`` on the command line turn one kind off without copying the list of kinds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from tests.conftest import SAMPLES, invoke
from tests.mcp_agent import SERVER_CMD, TIMEOUT, TOOLREPLAY, server_env
from toolreplay.cli import cli

CASES = Path(__file__).resolve().parent.parent / "cases" / "diff"


@pytest.fixture
def dirty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with a transcript that has a redundant call and a non-deterministic one."""
    shutil.copy(SAMPLES / "session-dirty.jsonl", tmp_path / "dirty.jsonl")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def audit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The golden diff case whose one finding is audit-incomplete (its exit code is 1 by default)."""
    case = tmp_path / "case"
    shutil.copytree(CASES / "audit-incomplete", case)
    monkeypatch.chdir(case)
    return case


def test_config_all_but_one_kind(runner: CliRunner, dirty: Path) -> None:
    """fail_on = ["all", "-redundant-call"]: the redundant call is reported without failing, the
    non-determinism still fails; taking both out passes."""
    (dirty / "toolreplay.toml").write_text(
        'transcripts = ["*.jsonl"]\nstate_aware = false\nfail_on = ["all", "-redundant-call"]\n'
    )
    result = runner.invoke(cli, ["check"], catch_exceptions=False)
    assert result.exit_code == 1
    assert result.stdout.endswith("total: 1 reports, 2 findings, 1 failing, 0 unreadable\n")
    (dirty / "toolreplay.toml").write_text(
        'transcripts = ["*.jsonl"]\nstate_aware = false\n'
        'fail_on = ["all", "-redundant-call", "-non-determinism"]\n'
    )
    result = runner.invoke(cli, ["check", "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0
    assert '"fail_on": [\n      "agent-drift",' in result.stdout
    assert '"redundant-call"' not in result.stdout.split('"reports"')[0]


def test_check_fail_on_flag_wins_over_the_config(runner: CliRunner, dirty: Path) -> None:
    """check --fail-on all,-non-determinism,-redundant-call passes where the config fails every kind."""
    (dirty / "toolreplay.toml").write_text('transcripts = ["*.jsonl"]\nstate_aware = false\n')
    assert runner.invoke(cli, ["check"], catch_exceptions=False).exit_code == 1
    flag = ["check", "--fail-on", "all,-non-determinism,-redundant-call"]
    result = runner.invoke(cli, flag, catch_exceptions=False)
    assert result.exit_code == 0
    assert result.stdout.endswith("total: 1 reports, 2 findings, 0 failing, 0 unreadable\n")
    assert runner.invoke(cli, ["check", "--fail-on", "redundant-call"], catch_exceptions=False).exit_code == 1


def test_diff_takes_fail_on_like_check(runner: CliRunner, audit: Path) -> None:
    """diff --fail-on all,-audit-incomplete reports the same bytes on stdout and exits 0; stderr says
    how many findings failed. Any other kind still fails."""
    plain = runner.invoke(cli, ["diff", "baseline.sealed.jsonl", "run.jsonl"], catch_exceptions=False)
    assert plain.exit_code == 1
    args = ["diff", "baseline.sealed.jsonl", "run.jsonl", "--fail-on", "all,-audit-incomplete"]
    result = runner.invoke(cli, args, catch_exceptions=False)
    assert (result.exit_code, result.stdout) == (0, plain.stdout)
    assert result.stderr == "toolreplay: 1 findings, 0 failing (fail-on: all,-audit-incomplete)\n"
    other = ["diff", "baseline.sealed.jsonl", "run.jsonl", "--fail-on", "all,-behavior-drift"]
    assert runner.invoke(cli, other, catch_exceptions=False).exit_code == 1


def test_diff_takes_the_configs_fail_on_and_says_so(runner: CliRunner, audit: Path) -> None:
    """Without the flag diff exits by the config's fail_on, and names it among the settings it used."""
    (audit / "toolreplay.toml").write_text('fail_on = ["all", "-audit-incomplete"]\n')
    result = runner.invoke(cli, ["diff", "baseline.sealed.jsonl", "run.jsonl"], catch_exceptions=False)
    assert result.exit_code == 0
    assert result.stderr == (
        "toolreplay: using config toolreplay.toml (fail_on)\n"
        "toolreplay: 1 findings, 0 failing (fail-on: all,-audit-incomplete)\n"
    )
    # the flag wins over the config
    flag = ["diff", "baseline.sealed.jsonl", "run.jsonl", "--fail-on", "any"]
    assert runner.invoke(cli, flag, catch_exceptions=False).exit_code == 1


@pytest.mark.parametrize(
    ("items", "problem"),
    [
        ('["-audit-incomplete"]', "'-audit-incomplete' takes a kind out of nothing; start the list with"),
        ('["all", "-audit_incomplete"]', "unknown finding kind 'audit_incomplete'"),
        ('["all", "-chain-broken", "chain-broken"]', "'chain-broken' is both named and taken out"),
        (
            '["all", "-scope-unjudged"]',
            "'-scope-unjudged' changes nothing: scope-unjudged fails whenever argument-overreach does",
        ),
    ],
)
def test_a_list_that_cannot_mean_what_it_says_is_a_usage_error(
    runner: CliRunner, dirty: Path, items: str, problem: str
) -> None:
    """A -KIND without all, an unknown kind after -, a kind named and taken out, and taking out a
    kind that fails anyway are exit 2, one line naming the file and the pointer; validate agrees."""
    (dirty / "toolreplay.toml").write_text(f'transcripts = ["*.jsonl"]\nfail_on = {items}\n')
    result = runner.invoke(cli, ["check", "--config", "toolreplay.toml"], catch_exceptions=False)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.startswith(f"toolreplay: error: toolreplay.toml: fail_on: {problem}")
    assert result.stderr.count("\n") == 1 and "(at /fail_on" in result.stderr
    assert runner.invoke(cli, ["validate", "toolreplay.toml"], catch_exceptions=False).exit_code == 1


def test_the_flag_refuses_what_the_config_refuses(runner: CliRunner, audit: Path) -> None:
    """--fail-on all,-audit_incomplete (a typo) is exit 2 naming the flag, not a gate switched off."""
    args = ["diff", "baseline.sealed.jsonl", "run.jsonl", "--fail-on", "all,-audit_incomplete"]
    result = runner.invoke(cli, args, catch_exceptions=False)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.startswith(
        "toolreplay: error: --fail-on: unknown finding kind 'audit_incomplete'; use any, none, all,"
    )


async def _ask_clock(argv: list[str], env: dict[str, str]) -> None:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    with anyio.fail_after(TIMEOUT):
        async with Client(stdio_client(params)) as client:
            await client.call_tool("clock", {"zone": "utc"})


@pytest.mark.slow
def test_probe_takes_fail_on_like_check(runner: CliRunner, tmp_path: Path) -> None:
    """probe of a real SDK server whose clock now answers differently: silent-drift fails by default
    and passes with --fail-on all,-silent-drift (still reported)."""
    out = tmp_path / "run.sealed.jsonl"
    record = [*TOOLREPLAY, "record", "-o", str(out), "--seal", "--", *SERVER_CMD]
    anyio.run(_ask_clock, record, server_env(CLOCK_SEED="1"))
    probe = ["probe", str(out), "--", *SERVER_CMD]
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CLOCK_SEED", "2")
        drifted = runner.invoke(cli, probe, catch_exceptions=False)
        assert drifted.exit_code == 1 and "silent-drift" in drifted.stdout
        passed = runner.invoke(cli, [*probe[:2], "--fail-on", "all,-silent-drift", *probe[2:]])
    assert (passed.exit_code, passed.stdout) == (0, drifted.stdout)
    assert passed.stderr == "toolreplay: 1 findings, 0 failing (fail-on: all,-silent-drift)\n"


def test_a_shard_takes_fail_on_from_the_configuration_only(runner: CliRunner, dirty: Path) -> None:
    """check --shard with --fail-on is a usage error: merge would refuse a shard judged by another fail_on."""
    (dirty / "toolreplay.toml").write_text('transcripts = ["*.jsonl"]\n')
    result = runner.invoke(cli, ["check", "--shard", "1/2", "--fail-on", "all,-redundant-call"])
    assert (result.exit_code, result.stdout) == (2, "")
    assert "--fail-on does not go with --shard: set fail_on in the configuration" in result.stderr


# --- the levels a report shows follow the gate: no ::error (or SARIF error) in a run that passes


@pytest.fixture
def drifted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The golden diff case whose one finding is a behavior-drift (an error-level kind)."""
    case = tmp_path / "case"
    shutil.copytree(CASES / "behavior-drift", case)
    monkeypatch.chdir(case)
    return case


DRIFT_ANNOTATION = "file=run.jsonl,line=2,title=toolreplay behavior-drift::index 1: tool 'search' returned"


def _sarif_levels(stdout: str) -> list[str]:
    return [result["level"] for result in json.loads(stdout)["runs"][0]["results"]]


def test_diff_annotates_a_finding_that_does_not_fail_as_a_warning(runner: CliRunner, drifted: Path) -> None:
    """diff --fail-on agent-drift --format github exits 0 and annotates its behavior-drift as a
    ::warning (an ::error with exit 0 reads as a failure GitHub did not count); SARIF says warning
    too. Without the flag the same finding fails and is an ::error."""
    args = ["diff", "baseline.sealed.jsonl", "run.jsonl", "--fail-on", "agent-drift"]
    code, out, _ = invoke(runner, *args, "--format", "github")
    assert code == 0 and out.startswith("::warning " + DRIFT_ANNOTATION)
    code, out, _ = invoke(runner, *args, "--format", "sarif")
    assert (code, _sarif_levels(out)) == (0, ["warning"])
    code, out, _ = invoke(runner, *args[:3], "--format", "github")
    assert code == 1 and out.startswith("::error " + DRIFT_ANNOTATION)
    code, out, _ = invoke(runner, *args[:3], "--format", "sarif")
    assert (code, _sarif_levels(out)) == (1, ["error"])


def test_diff_levels_follow_the_configs_fail_on(runner: CliRunner, drifted: Path) -> None:
    """Without --fail-on, the config's fail_on decides the level as it decides the exit code."""
    (drifted / "toolreplay.toml").write_text('fail_on = ["all", "-behavior-drift"]\n')
    code, out, _ = invoke(runner, "diff", "baseline.sealed.jsonl", "run.jsonl", "--format", "github")
    assert (code, out.split(" ")[0]) == (0, "::warning")


def _annotated(stdout: str) -> list[str]:
    """Each annotation of a github report as its level and kind: ``::warning redundant-call``."""
    return [
        f"{line.split(' ')[0]} {line.split('title=toolreplay ')[1].split('::')[0]}"
        for line in stdout.split("\n")
        if line.startswith("::")
    ]


def test_check_levels_follow_its_fail_on(runner: CliRunner, dirty: Path) -> None:
    """check under --fail-on redundant-call: the non-determinism it lets pass is a warning in the
    github and sarif formats; a file that cannot be read is an error and fails whatever the list
    names, and the Markdown verdict says the build fails, as the exit code does."""
    (dirty / "toolreplay.toml").write_text('transcripts = ["*.jsonl"]\nstate_aware = false\n')
    args = ["check", "--fail-on", "redundant-call"]
    code, out, _ = invoke(runner, *args, "--format", "github")
    assert (code, _annotated(out)) == (1, ["::warning non-determinism", "::warning redundant-call"])
    code, out, _ = invoke(runner, *args, "--format", "sarif")
    assert (code, _sarif_levels(out)) == (1, ["warning", "warning"])
    code, out, _ = invoke(runner, "check", "--fail-on", "non-determinism", "--format", "sarif")
    assert (code, _sarif_levels(out)) == (1, ["warning", "error"])
    (dirty / "bad.jsonl").write_text("not json\n")
    code, out, _ = invoke(runner, "check", "--fail-on", "agent-drift", "--format", "github")
    assert (code, _annotated(out)) == (
        1,
        ["::error report-error", "::warning non-determinism", "::warning redundant-call"],
    )
    code, out, _ = invoke(runner, "check", "--fail-on", "agent-drift", "--format", "markdown")
    assert code == 1 and "**Fails the build**: 1 finding of kinds that fail it" in out
    assert "| report-error | error | 1 | yes |" in out


@pytest.mark.slow
def test_probe_annotates_a_finding_that_does_not_fail_as_a_warning(runner: CliRunner, tmp_path: Path) -> None:
    """probe of mcp-server-time whose recorded answer was changed: --fail-on tool-drift lets the
    silent-drift pass, and --format github and sarif show it as a warning; by default it fails, an error."""
    from tests.mcp_agent import record_calls
    from tests.realservers import python_server

    server = python_server("time")
    call = ("convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"})
    run, _ = record_calls(tmp_path, server, [call])
    record = json.loads(run.read_text(encoding="utf-8"))
    record["response"]["content"][0]["text"] = "an answer the server no longer gives"
    run.write_text(json.dumps(record) + "\n", encoding="utf-8")
    gated = ["probe", str(run), "--fail-on", "tool-drift"]
    code, out, _ = invoke(runner, *gated, "--format", "github", "--", *server)
    assert (code, _annotated(out)) == (0, ["::warning silent-drift"])
    code, out, _ = invoke(runner, *gated, "--format", "sarif", "--", *server)
    assert (code, _sarif_levels(out)) == (0, ["warning"])
    code, out, _ = invoke(runner, *gated[:2], "--format", "github", "--", *server)
    assert (code, _annotated(out)) == (1, ["::error silent-drift"])
