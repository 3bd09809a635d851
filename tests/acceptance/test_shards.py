"""check --shard K/N and merge: every file in one shard, and the merge prints what one check prints."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import SAMPLES, isolate_git
from tests.gitrepo import Repo, sealed
from toolreplay.cli import cli
from toolreplay.report import RENDERERS
from toolreplay.shards import parse_shard, shard_of

FORMATS = sorted(RENDERERS)


def invoke(runner: CliRunner, cwd: Path, *args: str) -> tuple[int, str, str]:
    old = os.getcwd()
    os.chdir(cwd)
    try:
        result = runner.invoke(cli, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)
    return result.exit_code, result.stdout, result.stderr


def make_project(folder: Path) -> Path:
    """A repository with every kind of job: baselines with runs, many transcripts, an unreadable
    file, a stale baseline, and a pull-request branch that changes a baseline without a note."""
    repo = Repo.create(folder / "repo")
    root = repo.path
    clean = (SAMPLES / "session-clean.jsonl").read_text()
    dirty = (SAMPLES / "session-dirty.jsonl").read_text()
    repo.write("scope.json", (SAMPLES / "scope.json").read_text())
    repo.write(
        "baselines/session-clean.sealed.jsonl", (SAMPLES / "baselines/session-clean.sealed.jsonl").read_text()
    )
    repo.write("runs/session-clean.jsonl", clean)
    repo.write("runs/session-clean-2.jsonl", clean.replace('"score": 0.92', '"score": 0.5'))
    repo.write("baselines/search.sealed.jsonl", sealed(3)[0])
    for n in range(12):
        repo.write(f"runs/agent-{n:02d}.jsonl", dirty if n % 3 else clean)
    repo.write("runs/broken.jsonl", '{"index": 0, "tool": \n')
    repo.write(
        "toolreplay.toml",
        'transcripts = ["runs/*.jsonl"]\nbaselines = ["baselines/*.sealed.jsonl"]\n'
        'scope = "scope.json"\nmax_baseline_age_days = 30\nfail_on = ["non-determinism", "behavior-drift"]\n',
    )
    repo.commit_all("start")
    repo.git("checkout", "-q", "-b", "pr")
    repo.write("baselines/search.sealed.jsonl", sealed(4)[0])
    repo.commit_all("re-record search")
    return root


@pytest.fixture
def project(tmp_path: Path, git_isolated: None) -> Path:
    """The repository of `make_project`, the test's own."""
    return make_project(tmp_path)


def shard_reports(runner: CliRunner, root: Path, count: int, *extra: str) -> list[Path]:
    paths = []
    for index in range(1, count + 1):
        code, out, err = invoke(
            runner, root, "check", "--shard", f"{index}/{count}", "--format", "json", *extra
        )
        assert code in (0, 1) and not err
        path = root.parent / f"shard-{index}-of-{count}.json"
        path.write_text(out, encoding="utf-8")
        paths.append(path)
    return paths


@pytest.fixture(scope="module")
def sharded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, list[Path]]]:
    """A `make_project` repository and its JSON shard reports against main for each N in 1..4,
    made once for every format (the merges only read them)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        isolate_git(monkeypatch)
        root = make_project(tmp_path_factory.mktemp("sharded"))
        runner = CliRunner()
        return root, {count: shard_reports(runner, root, count, "--base", "main") for count in range(1, 5)}


@pytest.mark.parametrize("fmt", FORMATS)
def test_merge_of_every_sharding_is_byte_identical_to_one_check(
    runner: CliRunner, sharded: tuple[Path, dict[int, list[Path]]], fmt: str, git_isolated: None
) -> None:
    """For N in 1..4, merging the shards prints the same bytes and exit code as one unsharded check."""
    project, shardings = sharded
    whole = invoke(runner, project, "check", "--base", "main", "--format", fmt)
    assert whole[0] == 1 and whole[1]
    for count, paths in shardings.items():
        merged = invoke(runner, project, "merge", *map(str, reversed(paths)), "--format", fmt)
        assert merged == whole, f"N={count}"


def test_every_file_is_in_exactly_one_shard(runner: CliRunner, project: Path) -> None:
    """The shards' files are disjoint, together they are all files, and with 4 shards none runs everything."""
    _, out, _ = invoke(runner, project, "check", "--format", "json")
    every = sorted(r["file"] for r in json.loads(out)["reports"])
    for count in (2, 3, 4):
        seen: list[str] = []
        sizes = []
        for path in shard_reports(runner, project, count):
            files = [r["file"] for r in json.loads(path.read_text())["reports"]]
            assert all(shard_of(f, count) == int(path.name.split("-")[1]) for f in files)
            seen += files
            sizes.append(len(files))
        assert sorted(seen) == every
        assert max(sizes) < len(every)


def test_drift_note_rule_runs_in_shard_one_only(runner: CliRunner, project: Path) -> None:
    """With --base, the missing drift note is reported by shard 1 and by no other shard."""
    paths = shard_reports(runner, project, 3, "--base", "main")
    kinds = [{f["kind"] for r in json.loads(p.read_text())["reports"] for f in r["findings"]} for p in paths]
    assert "missing-drift-note" in kinds[0]
    assert all("missing-drift-note" not in k for k in kinds[1:])


def test_shard_assignment_is_the_same_wherever_the_checkout_is(
    runner: CliRunner, project: Path, tmp_path: Path
) -> None:
    """A copy of the repository elsewhere, checked from a subfolder, puts every file in the same shard."""
    copy = tmp_path / "elsewhere" / "deeper"
    shutil.copytree(project, copy)
    (copy / "runs").mkdir(exist_ok=True)
    for index in (1, 2, 3):
        here = invoke(runner, project, "check", "--shard", f"{index}/3", "--format", "json")[1]
        there = invoke(runner, copy / "runs", "check", "--shard", f"{index}/3", "--format", "json")[1]
        assert [r["file"] for r in json.loads(here)["reports"]] == [
            r["file"] for r in json.loads(there)["reports"]
        ]


def test_shard_of_hashes_the_posix_path_relative_to_the_config() -> None:
    """The documented formula: 1 + int(sha256(path)[:16], 16) % N over the UTF-8 POSIX path."""
    import hashlib

    for path in ("runs/agent-00.jsonl", "baselines/search.sealed.jsonl", "runs/café.jsonl"):
        for count in (1, 2, 3, 7):
            expected = 1 + int(hashlib.sha256(path.encode()).hexdigest()[:16], 16) % count
            assert shard_of(path, count) == expected


@pytest.mark.parametrize(
    "spec",
    ["0/3", "4/3", "a/b", "3", "1/0", "-1/3", "1/3/3", "", " 1 /3", "１/3"]
    + ["1/" + "9" * 19, "1/" + "9" * 4301],
)
def test_bad_shard_specs_are_usage_errors(runner: CliRunner, project: Path, spec: str) -> None:
    """A shard spec that is not K/N with 1 <= K <= N is refused with one line, exit 2."""
    code, out, err = invoke(runner, project, "check", "--shard", spec)
    assert code == 2 and out == ""
    assert err.startswith("toolreplay: error: --shard ") and err.count("\n") == 1


def test_parse_shard_accepts_k_of_n() -> None:
    """Well-formed specs parse to their numbers."""
    assert (parse_shard("1/1").index, parse_shard("3/4").count) == (1, 4)


def _edit(path: Path, change: dict[str, object]) -> Path:
    data = json.loads(path.read_text())
    data["check"].update(change)
    tag = hashlib.sha256(json.dumps(change, sort_keys=True).encode()).hexdigest()[:8]  # one file per edit
    out = path.with_name(f"edited-{'-'.join(change)}-{tag}-{path.name}")
    out.write_text(json.dumps(data))
    return out


def test_merge_refuses_what_is_not_one_run(runner: CliRunner, project: Path, tmp_path: Path) -> None:
    """Mixed versions, configs or --base, a repeated or missing shard, overlaps, non-check reports: exit 2."""
    one, two, three = shard_reports(runner, project, 3)
    _, whole, _ = invoke(runner, project, "check", "--format", "json")
    (tmp_path / "whole.json").write_text(whole)
    other_config = project.parent / "other"
    shutil.copytree(project, other_config)
    toml = other_config / "toolreplay.toml"
    toml.write_text(toml.read_text().replace("max_baseline_age_days = 30", "max_baseline_age_days = 31"))
    _, other, _ = invoke(runner, other_config, "check", "--shard", "2/3", "--format", "json")
    (tmp_path / "other.json").write_text(other)
    _, replay, _ = invoke(runner, project, "replay", "runs/agent-01.jsonl", "--format", "json")
    (tmp_path / "replay.json").write_text(replay)
    (tmp_path / "bad.json").write_text("{not json")
    cases = {
        "version": ([one, _edit(two, {"toolreplay": "0.0.1"}), three], "written by toolreplay '0.0.1'"),
        "config": ([one, tmp_path / "other.json", three], "made with another configuration"),
        "base": ([one, _edit(two, {"base": "main"}), three], "made with another --base"),
        "repeated": ([one, two, two, three], "shard 2/3 again"),
        "missing": ([one, three], "shard 2 of 3 missing"),
        # a count the reports make up is named, not walked: the first ten and how many more
        "huge": (
            [_edit(one, {"shard": {"index": 1, "count": 10**15}})],
            f"shards 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 and {10**15 - 11} more of {10**15} missing",
        ),
        "beyond": (
            [one, two, _edit(three, {"shard": {"index": 4, "count": 3}})],
            "is shard 4/3: there is no such",
        ),
        "count": ([one, _edit(two, {"shard": {"index": 2, "count": 4}}), three], "is shard 2/4"),
        "overlap": ([one, two, _edit(three, {"shard": {"index": 2, "count": 3}})], "again"),
        "whole": ([tmp_path / "whole.json", one], "a whole run's report"),
        "replay": ([tmp_path / "replay.json"], "not a report of toolreplay check"),
        "json": ([tmp_path / "bad.json"], "not a JSON report"),
        "absent": ([tmp_path / "nope.json"], "no such file"),
    }
    for name, (paths, needle) in cases.items():
        code, out, err = invoke(runner, project, "merge", *map(str, paths))
        assert (code, out) == (2, ""), name
        assert err.startswith("toolreplay: error: ") and err.count("\n") == 1, name
        assert needle in err, (name, err)


def test_merge_with_config_refuses_another_configuration(runner: CliRunner, project: Path) -> None:
    """--config names the configuration the shards must have been made with."""
    paths = shard_reports(runner, project, 2)
    assert invoke(runner, project, "merge", *map(str, paths), "--config", "toolreplay.toml")[0] == 1
    toml = project / "toolreplay.toml"
    toml.write_text(toml.read_text() + "state_aware = true\n")
    code, _, err = invoke(runner, project, "merge", *map(str, paths), "--config", "toolreplay.toml")
    assert code == 2 and "made with another configuration than" in err


def test_merged_files_overlap_is_refused(runner: CliRunner, project: Path) -> None:
    """Two shards that both report one file (a shard of another split relabelled) are refused."""
    one, two = shard_reports(runner, project, 2)
    data = json.loads(two.read_text())
    data["reports"].append(json.loads(one.read_text())["reports"][0])
    two.write_text(json.dumps(data))
    code, _, err = invoke(runner, project, "merge", str(one), str(two))
    assert code == 2 and "overlaps" in err
