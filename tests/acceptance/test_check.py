"""toolreplay check: configuration, every analysis over every file, one combined report."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import ROOT, SAMPLES
from tests.gitrepo import git
from toolreplay import check as check_module
from toolreplay.cli import cli
from toolreplay.contracts.lock import ToolLock, make_contract, save_lock
from toolreplay.schemas import validator


def run(runner: CliRunner, project: Path, *args: str) -> tuple[int, str]:
    old = os.getcwd()
    os.chdir(project)
    try:
        result = runner.invoke(cli, ["check", *args], catch_exceptions=False)
    finally:
        os.chdir(old)
    return result.exit_code, result.output


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A repository with the samples, a baseline and its runs, and a config naming them all."""
    root = tmp_path / "repo"
    (root / "runs").mkdir(parents=True)
    (root / "baselines").mkdir()
    shutil.copy(SAMPLES / "scope.json", root / "scope.json")
    shutil.copy(SAMPLES / "session-dirty.jsonl", root / "runs" / "dirty.jsonl")
    shutil.copy(
        SAMPLES / "baselines" / "session-clean.sealed.jsonl",
        root / "baselines" / "session-clean.sealed.jsonl",
    )
    clean = (SAMPLES / "session-clean.jsonl").read_text()
    (root / "runs" / "session-clean.jsonl").write_text(clean)
    (root / "runs" / "session-clean-2.jsonl").write_text(clean.replace('"score": 0.92', '"score": 0.5'))
    (root / "toolreplay.toml").write_text(
        'transcripts = ["runs/*.jsonl"]\nbaselines = ["baselines/*.sealed.jsonl"]\nscope = "scope.json"\n'
    )
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start", date="2020-01-01T00:00:00Z")
    return root


def test_every_analysis_over_every_file(runner: CliRunner, project: Path) -> None:
    """Baselines verified and diffed with their runs, transcripts replayed and scoped, in path order."""
    code, out = run(runner, project)
    assert code == 1
    blocks = [line for line in out.splitlines() if line.startswith("== ")]
    assert blocks == [
        "== baselines/session-clean.sealed.jsonl",
        "== runs/dirty.jsonl",
        "== runs/session-clean-2.jsonl",
        "== runs/session-clean.jsonl",
    ]
    assert "runs: runs/session-clean-2.jsonl, runs/session-clean.jsonl\n" in out
    assert "index 2: behavior-drift: in run 'runs/session-clean-2.jsonl': tool 'search' returned" in out
    assert "index 2: silent-drift: in run 'runs/session-clean.jsonl': tool 'search'" in out
    assert "index 4: permission-overreach: tool 'write_file'" in out
    # write_file (a mutator) ran between the two searches: check is state-aware, as diff is
    assert "non-determinism" not in out
    assert out.endswith("total: 4 reports, 4 findings, 4 failing, 0 unreadable\n")


def test_state_aware_false_is_the_06_rule_and_says_so(runner: CliRunner, project: Path) -> None:
    """state_aware = false compares across a mutator again, and the finding names that knob."""
    config = project / "toolreplay.toml"
    config.write_text(config.read_text() + "state_aware = false\n")
    _, out = run(runner, project)
    assert (
        "index 5: non-determinism: tool 'search' returned a different response than the identical call"
        " at index 3 (a mutator ran in between: state_aware = false in the config compares across it)\n"
    ) in out


def test_a_call_that_records_state_is_a_mutator_in_check(runner: CliRunner, project: Path) -> None:
    """An undeclared tool whose record carries state separates identical calls, as a mutator does."""
    records = [
        {"index": 0, "tool": "lookup_order", "args": {"id": 1}, "response": {"status": "paid"}},
        {
            "index": 1,
            "tool": "refund_order",
            "args": {"id": 1},
            "response": {"ok": True},
            "state": {"etag": "b"},
        },
        {"index": 2, "tool": "lookup_order", "args": {"id": 1}, "response": {"status": "refunded"}},
    ]
    (project / "runs" / "support.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    _, out = run(runner, project)
    block = out.split("== runs/support.jsonl\n")[1].split("== ")[0]
    assert block.startswith("calls: 3\ndivergence: none\n")
    assert "non-determinism" not in block


def test_redundant_call_in_check_names_how_to_declare_a_mutator(runner: CliRunner, project: Path) -> None:
    """check's redundant-call says how to declare the tool a mutator; declaring it clears the finding."""
    call = {"tool": "update_reservation_flights", "args": {"id": "R1"}, "response": {"ok": True}}
    (project / "runs" / "air.jsonl").write_text(
        "".join(json.dumps({"index": i, **call}) + "\n" for i in range(2))
    )
    _, out = run(runner, project)
    assert (
        "index 1: redundant-call: tool 'update_reservation_flights' repeats the identical call at index 0"
        " with no state change between them (if it changes state, declare it with --mutator or mutators"
        " in the config)\n"
    ) in out
    config = project / "toolreplay.toml"
    config.write_text(config.read_text() + 'mutators = ["write_file", "update_reservation_flights"]\n')
    _, out = run(runner, project)
    assert "redundant-call: tool 'update_reservation_flights'" not in out


def test_rerun_is_byte_identical_and_json_matches_schema(runner: CliRunner, project: Path) -> None:
    """Two runs print the same bytes; the JSON report validates against its schema."""
    assert run(runner, project) == run(runner, project)
    code, out = run(runner, project, "--format", "json")
    assert code == 1
    assert list(validator("report").iter_errors(json.loads(out))) == []


def test_parallel_gives_the_same_report(
    runner: CliRunner, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Worker processes change nothing in the output."""
    sequential = run(runner, project, "--jobs", "1")
    monkeypatch.setattr(check_module, "PARALLEL_MIN_FILES", 1)
    assert run(runner, project, "--jobs", "2") == sequential
    # more jobs than files (past what a pool can take, even) start one worker a file
    assert run(runner, project, "--jobs", str(10**20)) == sequential


def test_fail_on_limits_what_fails(runner: CliRunner, project: Path) -> None:
    """Findings of kinds outside fail_on are reported but do not fail the build."""
    config = project / "toolreplay.toml"
    config.write_text(config.read_text() + 'fail_on = ["chain-broken"]\n')
    code, out = run(runner, project)
    assert code == 0
    assert "4 findings, 0 failing" in out


def test_unreadable_file_is_reported_not_fatal(runner: CliRunner, project: Path) -> None:
    """A broken transcript is an error in its own block; the other files are still checked."""
    (project / "runs" / "bad.jsonl").write_text('{"index": 0}\n')
    code, out = run(runner, project)
    assert code == 1
    assert 'runs/bad.jsonl:1: missing field "tool"' in out
    assert "index 4: permission-overreach" in out
    assert out.endswith("1 unreadable\n")


def test_tool_lock_declares_mutators_and_nondeterminism(runner: CliRunner, project: Path) -> None:
    """A lock's deterministic:false silences non-determinism; its mutates:false un-mutates a tool."""

    def contract(name: str, **flags: bool):  # type: ignore[no-untyped-def]
        return make_contract(
            name=name, signature={"name": name, "params": []}, schema={}, version="1", **flags
        )

    save_lock(
        ToolLock.of([contract("search", deterministic=False), contract("write_file", mutates=False)]),
        project / "tools.lock.json",
    )
    config = project / "toolreplay.toml"
    config.write_text(config.read_text() + 'tools_lock = "tools.lock.json"\n')
    _, out = run(runner, project)
    assert "non-determinism" not in out
    assert "tool 'search': no-dependency" not in out  # verdicts are diff's business; check lists findings


def test_stale_baseline(runner: CliRunner, project: Path) -> None:
    """A baseline last committed longer ago than max_baseline_age_days is reported with its date only."""
    config = project / "toolreplay.toml"
    config.write_text(config.read_text() + "max_baseline_age_days = 30\n")
    _, out = run(runner, project)
    assert "committed: 2020-01-01" in out
    assert "stale-baseline" not in out or "last committed 2020-01-01, more than 30 days" in out


def test_an_uncommitted_baseline_is_not_committed_yet_and_still_diffed(
    runner: CliRunner, project: Path
) -> None:
    """max_baseline_age_days on a baseline not committed yet: said so, not unreadable, runs still diffed."""
    config = project / "toolreplay.toml"
    config.write_text(config.read_text() + "max_baseline_age_days = 90\n")
    fresh = project / "baselines" / "new.sealed.jsonl"
    fresh.write_bytes((SAMPLES / "baselines" / "session-clean.sealed.jsonl").read_bytes())
    (project / "runs" / "new.jsonl").write_text(
        (SAMPLES / "session-clean.jsonl").read_text().replace('"score": 0.92', '"score": 0.5')
    )
    _, out = run(runner, project)
    block = out.split("== baselines/new.sealed.jsonl\n")[1].split("== ")[0]
    assert "committed: not committed yet\n" in block
    assert "behavior-drift: in run 'runs/new.jsonl'" in block
    assert out.endswith(" 0 unreadable\n")


def test_drift_notes_over_a_range(runner: CliRunner, project: Path) -> None:
    """--base REF reports a baseline changed in REF...HEAD without a note for that change."""
    base = git(project, "rev-parse", "HEAD").strip()
    sealed = project / "baselines" / "session-clean.sealed.jsonl"
    sealed.write_text("".join(sealed.read_text().splitlines(keepends=True)[:3]))
    git(project, "commit", "-qam", "cut the baseline")
    code, out = run(runner, project, "--base", base)
    assert code == 1
    assert "missing-drift-note: baseline 'baselines/session-clean.sealed.jsonl' (modified)" in out
    assert "write the note: toolreplay note baselines/session-clean.sealed.jsonl" in out
    assert out.endswith(f"drift notes: 1 problem(s) in {base[:12]}...HEAD, see the findings\n")
    # the baseline has two reports (its check and the drift-note rule): the headline counts it once
    _, markdown = run(runner, project, "--base", base, "--format", "markdown")
    assert "in 2 of 4 files (" in markdown


def test_base_names_the_note_that_accepted_the_change(runner: CliRunner, project: Path) -> None:
    """--base with a drift note for the change: the report says which note accepted it."""
    base = git(project, "rev-parse", "HEAD").strip()
    sealed = project / "baselines" / "session-clean.sealed.jsonl"
    sealed.write_text("".join(sealed.read_text().splitlines(keepends=True)[:3]))
    old = os.getcwd()
    os.chdir(project)
    try:
        result = runner.invoke(
            cli,
            ["note", "baselines/session-clean.sealed.jsonl", "-o", "drift-notes/cut.md"],
            catch_exceptions=False,
        )
    finally:
        os.chdir(old)
    assert result.exit_code == 0, result.output
    with (project / "drift-notes" / "cut.md").open("a") as note:
        note.write("The last call was dropped from the flow.\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "cut the baseline, with its note")
    _, out = run(runner, project, "--base", base)
    assert "change: modified\n" in out
    assert "note: accepted by 'drift-notes/cut.md'\n" in out


def test_base_without_a_baseline_change_says_so(runner: CliRunner, project: Path) -> None:
    """check --base with no baseline change in the range says the rule ran and what it saw."""
    base = git(project, "rev-parse", "HEAD").strip()
    code, out = run(runner, project, "--base", base)
    assert code == 1  # runs/dirty.jsonl has findings; the rule itself found nothing
    assert out.endswith(f"drift notes: no sealed baseline changes in {base[:12]}...HEAD\n")


def test_no_config_is_a_usage_error(runner: CliRunner, tmp_path: Path) -> None:
    """Without a configuration check says where to put one, exit 2."""
    code, out = run(runner, tmp_path)
    assert code == 2
    assert "no configuration found" in out


def test_bad_config_names_file_and_pointer(runner: CliRunner, tmp_path: Path) -> None:
    """A config that fails its schema is exit 2 naming the file and the field."""
    (tmp_path / "toolreplay.toml").write_text('transcripts = "runs/*.jsonl"\n')
    code, out = run(runner, tmp_path)
    assert code == 2
    assert (
        "toolreplay.toml: invalid configuration: 'runs/*.jsonl' is not of type 'array' (at /transcripts)"
        in out
    )


def test_repository_checks_its_own_samples(runner: CliRunner) -> None:
    """This repository's pyproject.toml config checks samples/ and finds the dirty sample's findings."""
    code, out = run(runner, ROOT)
    assert code == 1
    assert "== samples/session-dirty.jsonl" in out


def test_many_files_on_worker_processes_through_python_m(project: Path) -> None:
    """`python -m toolreplay check` with enough files for worker processes runs once and reports all."""
    import sys

    for n in range(20):
        shutil.copy(project / "runs" / "dirty.jsonl", project / "runs" / f"copy-{n:02d}.jsonl")
    proc = subprocess.run(
        [sys.executable, "-m", "toolreplay", "check", "--jobs", "2"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.count("== runs/copy-") == 20
    assert proc.stdout.count("total: ") == 1
    assert proc.stderr == ""


def _cut_baseline(project: Path) -> None:
    sealed = project / "baselines" / "session-clean.sealed.jsonl"
    sealed.write_text("".join(sealed.read_text().splitlines(keepends=True)[:3]))


def test_a_pull_request_cannot_switch_the_drift_rule_off_for_itself(runner: CliRunner, project: Path) -> None:
    """The range is judged with the base's baselines; the PR's change of them is a finding in every format."""
    base = git(project, "rev-parse", "HEAD").strip()
    config = project / "toolreplay.toml"
    config.write_text(
        config.read_text().replace('baselines = ["baselines/*.sealed.jsonl"]', "baselines = []")
    )
    _cut_baseline(project)
    git(project, "commit", "-qam", "no more baselines")
    code, out = run(runner, project, "--base", base)
    assert code == 1
    assert "missing-drift-note: baseline 'baselines/session-clean.sealed.jsonl' (modified)" in out
    changed = (
        "drift-guard-changed: the drift-note guard's settings change (toolreplay.toml (this pull request)"
        f" against {base[:12]}:toolreplay.toml): baselines ['baselines/*.sealed.jsonl'] -> [] (none);"
        f" this range is judged with {base[:12]}:toolreplay.toml"
    )
    assert changed in out
    for fmt, mark in (("json", '"drift-guard-changed"'), ("sarif", '"ruleId": "drift-guard-changed"')):
        assert mark in run(runner, project, "--base", base, "--format", fmt)[1], fmt
    assert "::warning file=toolreplay.toml" in run(runner, project, "--base", base, "--format", "github")[1]


def test_a_change_of_the_guard_settings_alone_is_advisory(runner: CliRunner, project: Path) -> None:
    """A PR that only changes drift_notes is reported, and does not fail the build by itself."""
    base = git(project, "rev-parse", "HEAD").strip()
    config = project / "toolreplay.toml"
    config.write_text(config.read_text() + 'drift_notes = "docs/drift"\n')
    git(project, "commit", "-qam", "move the notes")
    out = run(runner, project, "--base", base, "--format", "json")[1]
    found = [
        f for r in json.loads(out)["reports"] for f in r["findings"] if f["kind"] == "drift-guard-changed"
    ]
    assert [f["message"] for f in found] == [
        "the drift-note guard's settings change (toolreplay.toml (this pull request) against"
        f" {base[:12]}:toolreplay.toml): drift_notes 'drift-notes' -> 'docs/drift';"
        f" this range is judged with {base[:12]}:toolreplay.toml"
    ]
    assert _totals(run(runner, project, "--base", base)[1]) == _plus_one_finding(
        _totals(run(runner, project)[1])
    )


def test_sealed_file_outside_the_patterns_is_reported(runner: CliRunner, project: Path) -> None:
    """A sealed file the base's patterns do not cover is an advisory finding naming it and the patterns."""
    base = git(project, "rev-parse", "HEAD").strip()
    (project / "archive").mkdir()
    shutil.copy(
        SAMPLES / "baselines" / "session-clean.sealed.jsonl", project / "archive" / "old.sealed.jsonl"
    )
    git(project, "add", "-A")
    git(project, "commit", "-qm", "archive")
    out = run(runner, project, "--base", base)[1]
    assert (
        "unguarded-sealed-file: 'archive/old.sealed.jsonl' is a sealed transcript, but no baseline pattern"
        " ('baselines/*.sealed.jsonl') covers it, so the guard does not judge it;"
        " if it is a baseline, add a pattern for it"
    ) in out
    assert _totals(out) == _plus_one_finding(_totals(run(runner, project)[1]))


def _totals(out: str) -> tuple[int, int]:
    """(findings, failing) from check's total line (with --base, the rule's verdict line follows it)."""
    last = next(line for line in reversed(out.splitlines()) if line.startswith("total: "))
    findings = int(last.split(" findings")[0].rsplit(" ", 1)[1])
    failing = int(last.split(" failing")[0].rsplit(" ", 1)[1])
    return findings, failing


def _plus_one_finding(totals: tuple[int, int]) -> tuple[int, int]:
    """An advisory finding adds to the findings, not to those that fail."""
    return totals[0] + 1, totals[1]


def test_a_glob_that_matches_nothing_is_a_warning(project: Path) -> None:
    """A mistyped glob (run/ for runs/) checks nothing: check says so on stderr, naming the glob."""
    config = project / "toolreplay.toml"
    config.write_text(config.read_text().replace('"runs/*.jsonl"', '"run/*.jsonl"'))
    old = os.getcwd()
    os.chdir(project)
    try:
        result = CliRunner().invoke(cli, ["check"], catch_exceptions=False)
    finally:
        os.chdir(old)
    assert result.stderr == (
        f'toolreplay: warning: transcripts glob "run/*.jsonl" in {config} matches no file\n'
    )
    assert "matches no file" not in result.stdout  # the report itself stays the same bytes


def test_a_pull_request_cannot_stop_its_missing_note_from_failing(runner: CliRunner, project: Path) -> None:
    """A range that changes a baseline without a note and drops missing-drift-note from fail_on
    still fails: over --base the drift-note kinds fail as the base's configuration says."""
    base = git(project, "rev-parse", "HEAD").strip()
    sealed = project / "baselines" / "session-clean.sealed.jsonl"
    sealed.write_text("".join(sealed.read_text().splitlines(keepends=True)[:3]))
    config = project / "toolreplay.toml"
    config.write_text(config.read_text() + 'fail_on = ["chain-broken"]\n')
    git(project, "commit", "-qam", "cut the baseline, and stop failing on a missing note")
    code, out = run(runner, project, "--base", base)
    assert code == 1
    assert "missing-drift-note: baseline 'baselines/session-clean.sealed.jsonl' (modified)" in out
    assert "drift-guard-changed: " in out and "no longer fail the build" in out
    # the same range judged without --base follows the pull request's own fail_on
    code, out = run(runner, project)
    assert code == 0, out
    # and the JSON report says which kinds failed this run, for merge and the Action
    data = json.loads(run(runner, project, "--base", base, "--format", "json")[1])
    assert data["check"]["fail_on"] is None  # the base's fail_on: none set, so every kind fails


def test_check_reads_each_transcript_once(
    runner: CliRunner, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replay, scope and the lock's fingerprints share one pass over a transcript (a run of a
    baseline is read once more, by that baseline's diff)."""
    save_lock(
        ToolLock.of(
            [make_contract(name="search", signature={"name": "search", "params": []}, schema={}, version="1")]
        ),
        project / "tools.lock.json",
    )
    config = project / "toolreplay.toml"
    config.write_text(config.read_text() + 'tools_lock = "tools.lock.json"\n')
    opened: list[str] = []
    real = check_module.read_transcript

    def counting(path: str, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        opened.append(Path(path).name)
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(check_module, "read_transcript", counting)
    _, out = run(runner, project, "--jobs", "1")
    assert opened.count("dirty.jsonl") == 1, opened  # was three passes: replay, scope, lock
    block = out.split("== runs/dirty.jsonl\n")[1].split("== ")[0]
    # replay's, scope's and the lock's findings, all from that one pass
    assert "redundant-call" in block and "permission-overreach" in block


@pytest.mark.parametrize("glob", [".", "./", "runs/**x"])
def test_a_glob_pathlib_cannot_take_is_a_usage_error(project: Path, glob: str) -> None:
    """A glob naming the config's folder itself or misusing ``**`` is one line and exit 2, not a crash."""
    config = project / "toolreplay.toml"
    config.write_text(config.read_text().replace('"runs/*.jsonl"', json.dumps(glob)))
    old = os.getcwd()
    os.chdir(project)
    try:
        result = CliRunner().invoke(cli, ["check"], catch_exceptions=False)
    finally:
        os.chdir(old)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.startswith(f"toolreplay: error: {config}: glob {json.dumps(glob)} ")
    assert result.stderr.count("\n") == 1
