"""diff refuses bad input with one line and exit 2, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from toolreplay.cli import cli

CASES = Path(__file__).resolve().parent.parent / "cases" / "diff"
BASELINE = str(CASES / "faithful" / "baseline.sealed.jsonl")
RUN = str(CASES / "faithful" / "run.jsonl")


def run_diff(runner: CliRunner, *args: str) -> tuple[int, str]:
    result = runner.invoke(cli, ["diff", *args], catch_exceptions=False)
    return result.exit_code, result.output


def test_missing_run_file(runner: CliRunner, tmp_path: Path) -> None:
    """A RUN that does not exist is named in one error line."""
    code, output = run_diff(runner, BASELINE, str(tmp_path / "nope.jsonl"))
    assert code == 2 and output == f"toolreplay: error: {tmp_path / 'nope.jsonl'}: no such file\n"


def test_plain_transcript_as_baseline(runner: CliRunner) -> None:
    """A baseline must be sealed: a plain transcript is refused at its first line."""
    code, output = run_diff(runner, RUN, RUN)
    assert code == 2 and f'{RUN}:1: missing field "prev"' in output


def test_bad_run_line(runner: CliRunner, tmp_path: Path) -> None:
    """A malformed run record is refused with file, line and pointer."""
    run = tmp_path / "run.jsonl"
    run.write_text(
        '{"index":0,"tool":"t","args":{},"response":{}}\n{"index":1,"tool":"","args":{},"response":{}}\n'
    )
    code, output = run_diff(runner, BASELINE, str(run))
    assert code == 2 and f'{run}:2: field "tool" must not be empty (at /tool)' in output


@pytest.mark.parametrize(
    ("lock", "message"),
    [
        ("[1]", "a tool lock must be a JSON object (at /)"),
        ('{"tools": {"search": {"mutates": "yes"}}}', 'missing field "lock_version" (at /)'),
        ('{"tools": {}', "invalid JSON"),
    ],
)
def test_bad_lock(runner: CliRunner, tmp_path: Path, lock: str, message: str) -> None:
    """A malformed --tools lock is exit 2 naming the lock file and what is wrong."""
    path = tmp_path / "tools.lock.json"
    path.write_text(lock)
    code, output = run_diff(runner, BASELINE, RUN, "--tools", str(path))
    assert code == 2 and str(path) in output and message in output
    assert len(output.splitlines()) == 1


def test_run_may_be_sealed(runner: CliRunner) -> None:
    """A sealed run is compared by its records: the baseline against itself is faithful."""
    code, output = run_diff(runner, BASELINE, BASELINE)
    assert code == 0 and "findings: 0" in output


def test_mutator_option_replaces_the_default_list(runner: CliRunner) -> None:
    """--mutator names the state-changing tools: write_file off the list is no longer audited."""
    case = CASES / "audit-incomplete"
    args = [str(case / "baseline.sealed.jsonl"), str(case / "run.jsonl")]
    assert run_diff(runner, *args)[0] == 1
    code, output = run_diff(runner, *args, "--mutator", "delete_file")
    assert code == 0 and "differences: none" in output
