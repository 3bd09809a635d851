"""merge binds shard reports to one run of one commit: the commit each judged and a digest of every
file the whole check reads must agree, among the shards and (with --config, or in the Action's merge
job) with the checkout the merge runs in."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.acceptance.test_action_cli import run_action
from tests.acceptance.test_shards import invoke
from tests.action_env import pull_request
from tests.conftest import SAMPLES
from tests.gitrepo import Repo
from toolreplay.shards import shard_of

CLEAN = (SAMPLES / "session-clean.jsonl").read_text()
DIRTY = (SAMPLES / "session-dirty.jsonl").read_text()
RUNS = [f"runs/agent-{n}.jsonl" for n in range(8)]
#: the transcript that goes bad in the second commit, one of shard 1/3's files
BAD = next(path for path in RUNS if shard_of(path, 3) == 1)


@pytest.fixture
def repo(tmp_path: Path, git_isolated: None) -> Repo:
    """Two commits: every transcript clean, then BAD (a file of shard 1/3) made non-deterministic."""
    repo = Repo.create(tmp_path / "repo")
    for path in RUNS:
        repo.write(path, CLEAN)
    repo.write("toolreplay.toml", 'transcripts = ["runs/*.jsonl"]\n')
    repo.commit_all("all clean")
    repo.write(BAD, DIRTY)
    repo.commit_all("a transcript goes bad")
    return repo


def shard(runner: CliRunner, repo: Repo, index: int, name: str) -> Path:
    """Run check --shard INDEX/3 on the work tree as it is; its JSON report, written outside the repo."""
    code, out, err = invoke(runner, repo.path, "check", "--shard", f"{index}/3", "--format", "json")
    assert code in (0, 1) and not err
    target = repo.path.parent / name
    target.write_text(out, encoding="utf-8")
    return target


def old_and_new(runner: CliRunner, repo: Repo) -> list[Path]:
    """Shard 1/3 from the commit before BAD went bad, shards 2/3 and 3/3 from the current commit."""
    repo.git("checkout", "-q", "HEAD~1")
    one = shard(runner, repo, 1, "old-1.json")
    repo.git("checkout", "-q", "main")
    return [one, shard(runner, repo, 2, "new-2.json"), shard(runner, repo, 3, "new-3.json")]


@pytest.mark.parametrize("extra", [(), ("--config", "toolreplay.toml")])
def test_merge_refuses_a_shard_of_the_commit_before(
    runner: CliRunner, repo: Repo, extra: tuple[str, ...]
) -> None:
    """Shard 1/3 of the previous commit beside 2/3 and 3/3 of the current one is refused, naming both
    reports and both commits (it used to merge to 0 findings, exit 0), with and without --config."""
    whole = invoke(runner, repo.path, "check")
    assert whole[0] == 1 and BAD in whole[1]  # the unsharded check of the current commit fails
    one, two, three = old_and_new(runner, repo)
    old, new = repo.git("rev-parse", "HEAD~1").strip(), repo.head()
    code, out, err = invoke(runner, repo.path, "merge", str(one), str(two), str(three), *extra)
    assert (code, out) == (2, "")
    assert err == (
        f"toolreplay: error: {two}: judged commit {new}, '{one}' judged commit {old}: "
        "merge the shards of one commit\n"
    )


def test_merge_with_config_refuses_shards_of_another_commit_than_the_checkout(
    runner: CliRunner, repo: Repo
) -> None:
    """Every shard of the previous commit agrees with the others, but --config compares them with the
    checkout the merge runs in, which is at the current commit."""
    repo.git("checkout", "-q", "HEAD~1")
    paths = [shard(runner, repo, k, f"old-{k}.json") for k in (1, 2, 3)]
    old = repo.head()
    repo.git("checkout", "-q", "main")
    assert invoke(runner, repo.path, "merge", *map(str, paths))[0] == 0  # among themselves: one run
    code, out, err = invoke(runner, repo.path, "merge", *map(str, paths), "--config", "toolreplay.toml")
    assert (code, out) == (2, "")
    assert err == (
        f"toolreplay: error: {paths[0]}: judged commit {old}, "
        f"but 'toolreplay.toml' is checked out at commit {repo.head()}\n"
    )


def test_merge_refuses_a_shard_of_a_work_tree_with_an_uncommitted_edit(runner: CliRunner, repo: Repo) -> None:
    """One commit, but shard 1/3 ran with BAD edited back to clean in the work tree: its digest of
    what it read differs, so merge refuses it; with --config a checkout edited after the shards
    ran is refused too."""
    repo.write(BAD, CLEAN)
    one = shard(runner, repo, 1, "edited-1.json")
    repo.git("checkout", "-q", "--", BAD)
    two, three = shard(runner, repo, 2, "two.json"), shard(runner, repo, 3, "three.json")
    code, out, err = invoke(runner, repo.path, "merge", str(one), str(two), str(three))
    assert (code, out) == (2, "")
    assert err == (
        f"toolreplay: error: {two}: read other files than '{one}' (another checkout, or an uncommitted "
        "edit): merge the shards of one checkout\n"
    )
    fresh = shard(runner, repo, 1, "one.json")
    config = ("--config", "toolreplay.toml")
    assert invoke(runner, repo.path, "merge", str(fresh), str(two), str(three), *config)[0] == 1
    repo.write(RUNS[-1], CLEAN + "\n")  # a file of another shard than BAD's, edited after the shards ran
    code, out, err = invoke(runner, repo.path, "merge", str(fresh), str(two), str(three), *config)
    assert (code, out) == (2, "")
    assert err == (
        f"toolreplay: error: {fresh}: read other files than the checkout of 'toolreplay.toml' holds "
        "(an uncommitted edit, or another checkout)\n"
    )


def test_every_shard_carries_the_commit_and_one_digest_of_all_inputs(runner: CliRunner, repo: Repo) -> None:
    """The three shards of one checkout name its commit and the same input digest, though each
    reads only its own files; the unsharded report and the merged one carry neither."""
    paths = [shard(runner, repo, k, f"s{k}.json") for k in (1, 2, 3)]
    checks = [json.loads(p.read_text())["check"] for p in paths]
    assert {c["commit"] for c in checks} == {repo.head()}
    assert len({c["inputs"] for c in checks}) == 1
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", checks[0]["inputs"])
    whole = invoke(runner, repo.path, "check", "--format", "json")
    merged = invoke(runner, repo.path, "merge", *map(str, paths), "--format", "json")
    assert merged == whole
    assert not {"commit", "inputs"} & set(json.loads(whole[1])["check"])


def test_merge_refuses_a_shard_report_stripped_of_its_binding(runner: CliRunner, repo: Repo) -> None:
    """Shard reports whose inputs digest was removed by hand are refused even when all agree."""
    paths = [shard(runner, repo, k, f"s{k}.json") for k in (1, 2, 3)]
    for path in paths:
        data = json.loads(path.read_text())
        del data["check"]["inputs"], data["check"]["commit"]
        path.write_text(json.dumps(data))
    code, out, err = invoke(runner, repo.path, "merge", *map(str, paths))
    assert (code, out) == (2, "")
    assert err == f"toolreplay: error: {paths[0]}: a shard report without the digest of what it read\n"


def test_merge_with_config_refuses_a_file_the_configuration_does_not_check(
    runner: CliRunner, repo: Repo
) -> None:
    """A report added by hand for a file the configuration does not check (in the shard its path
    hashes to) is refused with --config, naming the shard that reports it."""
    paths = [shard(runner, repo, k, f"s{k}.json") for k in (1, 2, 3)]
    ghost = "runs/ghost.txt"
    target = paths[shard_of(ghost, 3) - 1]
    data = json.loads(target.read_text())
    data["reports"].append(dict(data["reports"][0], file=ghost))
    data["reports"].sort(key=lambda r: r["file"])
    target.write_text(json.dumps(data))
    code, out, err = invoke(runner, repo.path, "merge", *map(str, paths), "--config", "toolreplay.toml")
    assert (code, out) == (2, "")
    assert err == f"toolreplay: error: {target}: reports '{ghost}', which 'toolreplay.toml' does not check\n"


def test_action_merge_job_refuses_a_shard_of_another_commit_without_the_config_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, git_isolated: None
) -> None:
    """The Action's merge job, with no config input, binds the shards to its own checkout: a shard job
    that ran on the commit before is refused (exit 2, one error naming it), as is a merge job whose
    checkout is at another commit than every shard's."""
    pr = pull_request(tmp_path / "ws")
    late = next(f"agents/late-{n}.jsonl" for n in range(50) if shard_of(f"agents/late-{n}.jsonl", 3) == 1)
    pr.repo.write(late, CLEAN)
    pr.repo.commit_all("a clean run")
    old = pr.repo.head()
    pr.repo.write(late, DIRTY)
    pr.repo.commit_all("the run goes bad")
    downloaded = tmp_path / "downloaded"
    downloaded.mkdir()

    def shard_job(index: int, commit: str) -> Path:
        pr.repo.git("checkout", "-q", commit)
        job = tmp_path / f"shard{index}-{commit[:7]}"
        job.mkdir()
        result, outputs, _ = run_action(pr.path, job, monkeypatch, shard=f"{index}/3")
        assert result.exit_code == 0, result.stdout + result.stderr
        target = downloaded / f"{commit[:7]}-{Path(outputs['report']).name}"
        target.write_bytes(Path(outputs["report"]).read_bytes())
        return target

    new = pr.repo.git("rev-parse", "feature").strip()
    one = shard_job(1, old)
    rest = [shard_job(2, new), shard_job(3, new)]
    pr.repo.git("checkout", "-q", "feature")
    (tmp_path / "merge").mkdir()
    merged, outputs, _ = run_action(pr.path, tmp_path / "merge", monkeypatch, merge=str(downloaded))
    assert (merged.exit_code, outputs["exit-code"]) == (2, "2")
    first = sorted([one, *rest])[0]
    other = next(p for p in sorted([one, *rest]) if p != first)
    assert f"{other}: judged commit" in merged.stderr and f"'{first}' judged commit" in merged.stderr
    assert "merge the shards of one commit" in merged.stderr
    for path in rest:
        path.unlink()
    for index in (2, 3):
        shard_job(index, old)
    pr.repo.git("checkout", "-q", "feature")
    merged, outputs, _ = run_action(pr.path, tmp_path / "merge", monkeypatch, merge=str(downloaded))
    assert (merged.exit_code, outputs["exit-code"]) == (2, "2")
    config = pr.path / "toolreplay.toml"  # found from the workspace, as the shard jobs found it
    assert f"judged commit {old}, but '{config}' is checked out at commit {new}\n" in merged.stderr


def test_merge_with_config_refuses_a_whole_runs_report(runner: CliRunner, repo: Repo) -> None:
    """A whole run's report (no --shard) says nothing of what it read: merged alone as before, but
    --config, which binds reports to the checkout, refuses it."""
    _, whole, _ = invoke(runner, repo.path, "check", "--format", "json")
    path = repo.path.parent / "whole.json"
    path.write_text(whole, encoding="utf-8")
    assert invoke(runner, repo.path, "merge", str(path))[0] == 1
    code, out, err = invoke(runner, repo.path, "merge", str(path), "--config", "toolreplay.toml")
    assert (code, out) == (2, "")
    assert err == (
        f"toolreplay: error: {path}: a whole run's report says nothing of what it read, so it cannot be "
        "checked against 'toolreplay.toml': merge the reports of check --shard\n"
    )


def test_a_commit_that_is_no_commit_id_is_refused_as_data(runner: CliRunner, repo: Repo) -> None:
    """A commit that is no commit id (a workflow command) is refused by the schema, never echoed raw."""
    path = shard(runner, repo, 1, "s1.json")
    data = json.loads(path.read_text())
    data["check"]["commit"] = "::error::pwned"
    path.write_text(json.dumps(data))
    code, out, err = invoke(runner, repo.path, "merge", str(path))
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err.startswith(f"toolreplay: error: {path}: not a toolreplay JSON report: ")
    assert "does not match" in err and "/check/commit" in err, err
