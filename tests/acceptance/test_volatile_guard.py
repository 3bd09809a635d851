"""Volatile rules are part of the guard: over a pull request's range the base commit's rules
are used, and a pull request that adds or widens one is a ``drift-guard-changed`` finding."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.gitrepo import Repo
from toolreplay.chain import seal
from toolreplay.cli import cli
from toolreplay.transcript import Record, make_record, record_line

CONFIG = 'transcripts = ["runs/*.jsonl"]\nbaselines = ["baselines/*.sealed.jsonl"]\n'
WIDE = '\n[[volatile]]\ntool = "now"\nat = "/response"\n'


def _answer(time: str) -> list[Record]:
    return [make_record(index=0, tool="now", args={}, response={"time": time})]


@pytest.fixture
def repo(tmp_path: Path, git_isolated: None) -> Repo:
    """A repository whose baseline and run of a clock differ in the time: behavior drift."""
    repo = Repo.create(tmp_path / "repo")
    repo.write("toolreplay.toml", CONFIG)
    repo.write("baselines/clock.sealed.jsonl", "".join(line + "\n" for _, line in seal(_answer("10:00"))))
    repo.write("runs/clock.jsonl", "".join(record_line(r) + "\n" for r in _answer("10:01")))
    repo.commit_all("a clock")
    return repo


def _check(repo: Repo, *args: str) -> tuple[int, dict[str, Any]]:
    config = str(repo.path / "toolreplay.toml")
    result = CliRunner().invoke(cli, ["check", "--config", config, "--jobs", "1", "--format", "json", *args])
    return result.exit_code, json.loads(result.stdout)


def _kinds(report: dict[str, Any]) -> list[str]:
    return sorted(f["kind"] for r in report["reports"] for f in r["findings"])


def test_a_pull_request_cannot_mask_its_own_drift(repo: Repo) -> None:
    """A rule added in the pull request is not used over its range, and the change is reported."""
    base = repo.head()
    repo.write("toolreplay.toml", CONFIG + WIDE)
    repo.commit_all("hide the clock")
    code, report = _check(repo)
    assert (code, _kinds(report)) == (0, [])  # on its own, the rule masks the time
    code, report = _check(repo, "--base", base)
    assert code == 1
    assert _kinds(report) == ["behavior-drift", "drift-guard-changed"]
    (changed,) = [f for r in report["reports"] for f in r["findings"] if f["kind"] == "drift-guard-changed"]
    assert (
        "volatile: this pull request adds or widens rule 1 (tool 'now', at '/response', the whole value)"
        in changed["message"]
    )


def test_the_base_commits_rules_hold_over_the_range(repo: Repo) -> None:
    """Rules the base commit has are used over the range, and keeping them is no guard change."""
    repo.write("toolreplay.toml", CONFIG + WIDE)
    repo.commit_all("the clock is volatile")
    base = repo.head()
    repo.write("README", "x\n")
    repo.commit_all("unrelated")
    code, report = _check(repo, "--base", base)
    assert (code, _kinds(report)) == (0, [])
