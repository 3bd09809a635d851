"""merge refuses shard reports that were edited by hand to hide a finding or lower the verdict."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from tests.acceptance.test_shards import invoke, project, shard_reports
from toolreplay.shards import shard_of

__all__ = ["project"]


def _move_one_file(source: Path, target: Path) -> str:
    """Move the first check report of ``source`` into ``target``; the moved file's path."""
    src = json.loads(source.read_text())
    moved = next(r for r in src["reports"] if r["command"] == "check")
    src["reports"].remove(moved)
    dst = json.loads(target.read_text())
    dst["reports"].append(moved)
    dst["reports"].sort(key=lambda r: r["file"])
    source.write_text(json.dumps(src))
    target.write_text(json.dumps(dst))
    return str(moved["file"])


def test_merge_refuses_a_file_reported_by_a_shard_it_does_not_hash_to(
    runner: CliRunner, project: Path
) -> None:
    """A report moved from shard 1's JSON into shard 2's (a crafted split) is refused, not merged."""
    one, two = shard_reports(runner, project, 2)
    path = _move_one_file(one, two)
    assert shard_of(path, 2) == 1
    code, out, err = invoke(runner, project, "merge", str(one), str(two))
    assert (code, out) == (2, "")
    assert err == f"toolreplay: error: {two}: reports '{path}', a file of shard 1/2, not of shard 2/2\n"


def test_merge_refuses_the_drift_rule_from_another_shard_than_one(runner: CliRunner, project: Path) -> None:
    """The drift-note rule's reports and verdict line come from shard 1 only; elsewhere they are refused."""
    one, two = shard_reports(runner, project, 2, "--base", "main")
    first = json.loads(one.read_text())
    drift = [r for r in first["reports"] if r["command"] != "check"]
    assert drift
    second = json.loads(two.read_text())
    second["reports"] = sorted(second["reports"] + drift, key=lambda r: r["file"])
    two.write_text(json.dumps(second))
    code, out, err = invoke(runner, project, "merge", str(one), str(two))
    assert (code, out) == (2, "")
    assert err == (
        f"toolreplay: error: {two}: reports the drift-note rule, which only shard 1 runs "
        f"('{drift[0]['file']}')\n"
    )


def test_merge_with_config_refuses_a_file_no_shard_reports(runner: CliRunner, project: Path) -> None:
    """With --config, a file the configuration names that no shard reports (deleted by hand) is refused."""
    one, two = shard_reports(runner, project, 2)
    data = json.loads(two.read_text())
    dropped = next(r for r in data["reports"] if r["command"] == "check" and r["findings"])
    data["reports"].remove(dropped)
    two.write_text(json.dumps(data))
    code, out, err = invoke(runner, project, "merge", str(one), str(two), "--config", "toolreplay.toml")
    assert (code, out) == (2, "")
    assert err == (
        f"toolreplay: error: no shard reports '{dropped['file']}', a file of 'toolreplay.toml': "
        "merge needs every file the configuration checks\n"
    )


def test_merge_with_config_refuses_a_lowered_fail_on(runner: CliRunner, project: Path) -> None:
    """With --config, every shard's fail_on edited to [] (so nothing fails) is refused."""
    paths = shard_reports(runner, project, 2)
    for path in paths:
        data = json.loads(path.read_text())
        data["check"]["fail_on"] = []
        path.write_text(json.dumps(data))
    assert invoke(runner, project, "merge", *map(str, paths))[0] != 2  # without --config, it cannot tell
    code, out, err = invoke(runner, project, "merge", *map(str, paths), "--config", "toolreplay.toml")
    assert (code, out) == (2, "")
    assert err == (
        f"toolreplay: error: {paths[0]}: its fail_on differs from the one of 'toolreplay.toml' "
        "in kinds other than the drift-note rule's\n"
    )


def test_merge_with_config_refuses_shards_of_another_tools_source_or_pattern_budget(
    runner: CliRunner, project: Path
) -> None:
    """tools_source and pattern_budget_seconds change check's findings, so they are part of the
    configuration a merge compares (they were left out of the digest)."""
    paths = shard_reports(runner, project, 2)
    toml = project / "toolreplay.toml"
    original = toml.read_text()
    for extra in ('tools_source = "tools.json"\n', "pattern_budget_seconds = 0.5\n"):
        toml.write_text(original + extra)
        code, out, err = invoke(runner, project, "merge", *map(str, paths), "--config", "toolreplay.toml")
        assert (code, out) == (2, ""), extra
        assert "made with another configuration than 'toolreplay.toml'" in err, extra
