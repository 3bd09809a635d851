"""Volatile rules' patterns run in the scope patterns' killable worker, under their time limits
(one second on one value, ``pattern_budget_seconds`` per transcript): a pattern that runs past
them is one error naming the rule and the value's file and line, never a hang (issue 37)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.gitrepo import Repo
from toolreplay.chain import seal
from toolreplay.cli import cli
from toolreplay.transcript import Record, make_record, record_line

#: exponential in regress: 30 a's and a "!" take tens of seconds in process (28 took 8.4 s)
CATASTROPHIC = '[[volatile]]\ntool = "echo"\nat = "/response/text"\npattern = "(a+)+$"\n'
#: quadratic: every start in a long run of word characters scans to its end for an "@"
QUADRATIC = '[[volatile]]\ntool = "*"\nat = "/response/text"\npattern = "\\\\w+@\\\\w+"\n'
#: seconds a command may take here: the worker's start, a cut-off pattern and the CLI, generously
BOUND = 15.0


def _answers(*texts: str) -> list[Record]:
    return [make_record(index=i, tool="echo", args={}, response={"text": t}) for i, t in enumerate(texts)]


def _write(path: Path, records: list[Record]) -> Path:
    path.write_text("".join(record_line(r) + "\n" for r in records), encoding="utf-8")
    return path


def _timed(*args: str) -> tuple[Any, float]:
    start = time.monotonic()
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result, time.monotonic() - start


def test_a_catastrophic_pattern_is_one_error_not_a_hang(tmp_path: Path) -> None:
    """``(a+)+$`` on 30 a's and "!" (minutes in process) stops replay and diff at the one-second
    limit of a value: exit 2, one line naming the file, the line, the rule and the limit."""
    config = tmp_path / "toolreplay.toml"
    config.write_text(CATASTROPHIC, encoding="utf-8")
    run = _write(tmp_path / "run.jsonl", _answers("ok", "a" * 30 + "!"))
    baseline = tmp_path / "base.sealed.jsonl"
    baseline.write_text("".join(line + "\n" for _, line in seal(_answers("ok", "ok"))), encoding="utf-8")
    expected = (
        f"toolreplay: error: {run}:2: volatile rule 1 (tool 'echo', at '/response/text') could not mask a"
        " value: pattern '(a+)+$' did not finish within 1 s on one value; simplify its pattern (anchor"
        " it, avoid nested quantifiers) or raise pattern_budget_seconds\n"
    )
    for command in (["replay", str(run)], ["diff", str(baseline), str(run)]):
        result, seconds = _timed(*command, "--config", str(config))
        assert (result.exit_code, result.stdout) == (2, "")
        assert result.stderr.endswith(expected), result.stderr
        assert seconds < BOUND


def test_ordinary_values_are_masked_as_before(tmp_path: Path) -> None:
    """The same rule on values it runs fast on masks what it matches, many values in one trip."""
    config = tmp_path / "toolreplay.toml"
    config.write_text(CATASTROPHIC.replace("(a+)+$", "[0-9a-f]{8}"), encoding="utf-8")
    run = _write(tmp_path / "run.jsonl", _answers(*(f"commit {i:08x} done" for i in range(3000))))
    result, _ = _timed("replay", str(run), "--config", str(config), "--format", "json")
    assert result.exit_code == 1  # the identical calls are redundant; the answers are one masked text
    report = json.loads(result.stdout)["reports"][0]
    assert report["summary"]["masked"] == [3000]
    assert {f["kind"] for f in report["findings"]} == {"redundant-call"}


@pytest.fixture
def repo(tmp_path: Path, git_isolated: None) -> Repo:
    """A repository whose base commit masks e-mail addresses in every answer, on half a second
    of pattern time per transcript."""
    repo = Repo.create(tmp_path / "repo")
    config = (
        'transcripts = ["runs/*.jsonl"]\nbaselines = ["baselines/*.sealed.jsonl"]\n'
        "pattern_budget_seconds = 0.5\n" + QUADRATIC
    )
    repo.write("toolreplay.toml", config)
    answers = _answers("mail ann@example.org")
    repo.write("baselines/mail.sealed.jsonl", "".join(line + "\n" for _, line in seal(answers)))
    repo.write("runs/mail.jsonl", "".join(record_line(r) + "\n" for r in answers))
    repo.commit_all("mail")
    return repo


def test_a_long_value_in_a_pull_request_cannot_stall_check_base(repo: Repo) -> None:
    """Over a pull request's range the base commit's rule ``\\w+@\\w+`` meets the run's 160,000
    word characters (93 s in process, quadratic): the budget cuts it off, and the run's report
    (and its baseline's) is an error naming the rule and the line, which fails the check."""
    base = repo.head()
    repo.write("runs/mail.jsonl", "".join(record_line(r) + "\n" for r in _answers("x" * 160_000)))
    repo.commit_all("a long answer")
    config = str(repo.path / "toolreplay.toml")
    result, seconds = _timed("check", "--config", config, "--jobs", "1", "--format", "json", "--base", base)
    assert seconds < BOUND
    assert result.exit_code == 1
    errors = {r["file"]: r["errors"] for r in json.loads(result.stdout)["reports"] if r["errors"]}
    problem = (
        "volatile rule 1 (tool '*', at '/response/text') could not mask a value: the pattern budget of"
        " 0.5 s for this transcript ran out while '\\\\w+@\\\\w+' was running"
    )
    assert sorted(errors) == ["baselines/mail.sealed.jsonl", "runs/mail.jsonl"]
    assert errors["runs/mail.jsonl"][0].startswith(f"runs/mail.jsonl:1: {problem}")
    assert errors["baselines/mail.sealed.jsonl"][0].startswith(f"runs/mail.jsonl:1: {problem}")


def test_serve_refuses_a_recording_a_rule_cannot_index_in_time(tmp_path: Path) -> None:
    """``serve`` looks calls up by their masked arguments: a recorded call a rule's pattern cannot
    mask in time stops it before it serves anything, naming the rule, the file and the line."""
    config = tmp_path / "toolreplay.toml"
    config.write_text(CATASTROPHIC.replace("/response/text", "/args/q"), encoding="utf-8")
    recording = _write(
        tmp_path / "calls.jsonl", [make_record(index=0, tool="echo", args={"q": "a" * 30 + "!"}, response={})]
    )
    result, seconds = _timed("serve", str(recording), "--config", str(config))
    assert seconds < BOUND
    assert result.exit_code == 2
    assert result.stderr.endswith(
        f"toolreplay: error: {recording}:1: volatile rule 1 (tool 'echo', at '/args/q') could not mask a"
        " value: pattern '(a+)+$' did not finish within 1 s on one value; simplify its pattern (anchor"
        " it, avoid nested quantifiers) or raise pattern_budget_seconds\n"
    )
