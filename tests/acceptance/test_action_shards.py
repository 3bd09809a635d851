"""The Action over a CI matrix: shard jobs write JSON reports, the merge job publishes them as one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.acceptance.test_action_cli import run_action
from tests.action_env import TRANSCRIPT, pull_request
from tests.runner_sim import commands


@pytest.fixture(autouse=True)
def _git(git_isolated: None) -> None:
    """git runs with the inherited environment: a clean test identity and no outer repository."""


def test_shards_then_merge_publish_what_one_unsharded_action_publishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Annotations, job summary, SARIF, JSON report, outputs and exit code of the merge job equal the
    unsharded Action's; the shard jobs pass and only write their reports."""
    pr = pull_request(tmp_path / "ws")
    event = pr.event(tmp_path)
    for name in ("whole", "shard1", "shard2", "shard3", "merged"):
        (tmp_path / name).mkdir()
    whole, whole_out, whole_temp = run_action(
        pr.path, tmp_path / "whole", monkeypatch, event=event, sarif=str(tmp_path / "whole.sarif")
    )
    downloaded = tmp_path / "downloaded"
    downloaded.mkdir()
    for index in (1, 2, 3):
        result, outputs, _ = run_action(
            pr.path, tmp_path / f"shard{index}", monkeypatch, event=event, shard=f"{index}/3"
        )
        assert result.exit_code == 0 and outputs["exit-code"] == "0"
        assert (
            not commands(result.stdout)
            and not (tmp_path / f"shard{index}" / "runner-temp" / "summary.md").exists()
        )
        report = Path(outputs["report"])
        assert report.name == f"toolreplay-shard-{index}-of-3.json"
        shutil.copy(report, downloaded / report.name)
    merged, merged_out, merged_temp = run_action(
        pr.path,
        tmp_path / "merged",
        monkeypatch,
        event=event,
        merge=str(downloaded),
        sarif=str(tmp_path / "merged.sarif"),
    )
    assert (merged.exit_code, whole.exit_code) == (1, 1)
    assert commands(merged.stdout) == commands(whole.stdout) != []
    assert (merged_temp / "summary.md").read_text() == (whole_temp / "summary.md").read_text()
    assert (tmp_path / "merged.sarif").read_bytes() == (tmp_path / "whole.sarif").read_bytes()
    merged_json = json.loads((merged_temp / "toolreplay-report.json").read_text())
    assert (
        merged_json["reports"] == json.loads((whole_temp / "toolreplay-report.json").read_text())["reports"]
    )
    assert {k: v for k, v in merged_out.items() if k != "report"} == {
        k: v for k, v in whole_out.items() if k != "report"
    }
    assert TRANSCRIPT in merged.stdout and "merged 3 shards" in merged.stdout


def test_shard_and_merge_together_are_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A job is either a shard or the merge: both inputs at once is refused, exit 2."""
    pr = pull_request(tmp_path / "ws")
    result, outputs, _ = run_action(pr.path, tmp_path, monkeypatch, shard="1/2", merge=str(tmp_path))
    assert result.exit_code == 2 and outputs["exit-code"] == "2"
    assert "inputs shard and merge" in result.stderr


@pytest.mark.parametrize("spec", ["0/2", "3/2", "x"])
def test_bad_shard_input_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec: str) -> None:
    """The shard input is checked like --shard."""
    pr = pull_request(tmp_path / "ws")
    result, _, _ = run_action(pr.path, tmp_path, monkeypatch, shard=spec)
    assert result.exit_code == 2 and "--shard" in result.stderr


def test_merge_of_an_empty_folder_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A merge job whose download found nothing says so instead of posting an empty report."""
    pr = pull_request(tmp_path / "ws")
    (tmp_path / "none").mkdir()
    result, _, _ = run_action(pr.path, tmp_path, monkeypatch, merge=str(tmp_path / "none"))
    assert result.exit_code == 2 and "no *.json reports" in result.stderr


@pytest.mark.parametrize(("folder", "copies", "count"), [("sub", 8, 3), ("sub0", 0, 2)])
def test_shards_of_a_config_in_a_subfolder_merge_like_one_action(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: str, copies: int, count: int
) -> None:
    """With the config in a subfolder (reports name workspace paths), the merge job accepts its own
    shards and publishes what the unsharded Action publishes (also when, as for sub0/ in 2 shards,
    every path hashes to the same shard with and without the folder)."""
    pr = pull_request(tmp_path / "ws")
    (pr.path / folder).mkdir()
    for name in ("toolreplay.toml", "scope.json", "agents", "baselines"):
        pr.repo.git("mv", name, f"{folder}/{name}")
    for n in range(copies):
        shutil.copy(pr.path / folder / TRANSCRIPT, pr.path / folder / "agents" / f"run-{n}.jsonl")
    pr.repo.commit_all("move into a subfolder")
    event = pr.event(tmp_path)
    settings = {"config": f"{folder}/toolreplay.toml"}
    for name in ("whole", "merged", *(f"shard{k}" for k in range(1, count + 1))):
        (tmp_path / name).mkdir()
    whole, _, whole_temp = run_action(pr.path, tmp_path / "whole", monkeypatch, event=event, **settings)
    downloaded = tmp_path / "downloaded"
    downloaded.mkdir()
    for index in range(1, count + 1):
        result, outputs, _ = run_action(
            pr.path,
            tmp_path / f"shard{index}",
            monkeypatch,
            event=event,
            shard=f"{index}/{count}",
            **settings,
        )
        assert result.exit_code == 0, result.stdout
        shutil.copy(outputs["report"], downloaded / Path(outputs["report"]).name)
    merged, _, merged_temp = run_action(
        pr.path, tmp_path / "merged", monkeypatch, event=event, merge=str(downloaded), **settings
    )
    assert (merged.exit_code, whole.exit_code) == (1, 1), merged.stdout + merged.stderr
    assert (merged_temp / "summary.md").read_text() == (whole_temp / "summary.md").read_text()
