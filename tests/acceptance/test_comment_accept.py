"""The PR comment a reviewer decides from: every accept command it prints works from a clean
checkout of the pull request, and each changed baseline shows its note's reason and what differs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.acceptance.test_rug_pull import record as rug_record
from tests.gitrepo import Repo, git_env, note, sealed
from toolreplay.cli import cli
from toolreplay.transcript import make_record, record_line

BASELINE = "baselines/gitbot.sealed.jsonl"
OTHER = "baselines/search.sealed.jsonl"
RUN = "runs/gitbot.jsonl"
CONFIG = """\
transcripts = ["runs/*.jsonl"]
baselines = ["baselines/*.sealed.jsonl"]
drift_notes = "drift-notes"
"""
BIN = str(Path(sys.executable).parent)


def run_text(max_count: int, status: str = "clean") -> str:
    """A run of the git agent: git_status answering ``status``, git_log with ``max_count``."""
    calls = [
        ("git_status", {"repo_path": "."}, {"text": status}),
        ("git_log", {"repo_path": ".", "max_count": max_count}, {"text": "commit 1"}),
    ]
    return "".join(
        record_line(make_record(index=i, tool=t, args=a, response=r)) + "\n"
        for i, (t, a, r) in enumerate(calls)
    )


def sealed_run(repo: Repo, max_count: int, rel: str, status: str = "clean") -> str:
    """Seal a run into ``rel`` with toolreplay itself; its head."""
    repo.write("tmp-run.jsonl", run_text(max_count, status))
    (repo.path / rel).parent.mkdir(parents=True, exist_ok=True)
    result = CliRunner().invoke(cli, ["seal", str(repo.path / "tmp-run.jsonl"), "-o", str(repo.path / rel)])
    assert result.exit_code == 0, result.output
    (repo.path / "tmp-run.jsonl").unlink()
    return (repo.path / rel).read_text().splitlines()[-1]


def pull_request(path: Path, status: str = "clean") -> tuple[Repo, str]:
    """Base: the git agent's baseline (max_count 3) with its first note, a search baseline, a
    matching run. Head: the run re-recorded (max_count 5, not re-sealed), and the search baseline
    re-sealed without a note."""
    repo = Repo.create(path)
    repo.write("toolreplay.toml", CONFIG)
    sealed_run(repo, 3, BASELINE, status)
    repo.write(RUN, run_text(3, status))
    text, _ = sealed(3)
    repo.write(OTHER, text)
    repo.write("drift-notes/gitbot.md", "first note, not a drift note of this change\n")
    repo.commit_all("base")
    base = repo.head()
    repo.git("checkout", "-q", "-b", "feature")
    repo.write(RUN, run_text(5, status))
    repo.write_baseline(OTHER, 4)
    repo.commit_all("re-record the git agent's run; re-seal the search baseline")
    return repo, base


def comment(repo: Repo, base: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(repo.path)
    result = CliRunner().invoke(
        cli, ["check", "--base", base, "--format", "markdown"], catch_exceptions=False
    )
    assert result.exit_code == 1, result.output
    return result.stdout


def accept_blocks(markdown: str) -> list[list[str]]:
    """The commands of every ``sh`` block the report prints."""
    return [block.strip("\n").split("\n") for block in re.findall(r"```sh\n(.*?)```", markdown, re.DOTALL)]


def shell(repo: Repo, command: str) -> subprocess.CompletedProcess[str]:
    env = git_env({"PATH": BIN + os.pathsep + os.environ.get("PATH", "")})
    return subprocess.run(
        ["bash", "-c", command], cwd=repo.path, env=env, capture_output=True, text=True, check=False
    )


def test_every_printed_accept_command_works_from_a_clean_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each printed command (accept the run, or note --base) succeeds from a clean checkout of the
    PR with the reason filled in, writes a note that did not exist yet, and the range then passes."""
    repo, base = pull_request(tmp_path / "ws")
    markdown = comment(repo, base, monkeypatch)
    blocks = accept_blocks(markdown)
    assert len(blocks) == 2, markdown
    accept = next(b for b in blocks if b[0].startswith("toolreplay accept"))
    assert accept == [f"toolreplay accept {BASELINE} --run {RUN} --base {base} --reason WHY"]
    only_note = next(b for b in blocks if b is not accept)
    assert only_note == [f"toolreplay note {OTHER} --base {base} -o drift-notes/search.md"]
    for block, written in ((accept, "drift-notes/gitbot-2.md"), (only_note, "drift-notes/search.md")):
        repo.git("reset", "-q", "--hard")
        repo.git("clean", "-q", "-fdx")
        for command in block:
            done = shell(
                repo, command.replace("--reason WHY", "--reason 'The git agent reads five commits.'")
            )
            assert done.returncode == 0, (command, done.stderr)
        text = (repo.path / written).read_text()
        (repo.path / written).write_text(re.sub(r"<!--.*?-->", "The git agent now reads five commits.", text))
        repo.commit_all("accept")
        after = CliRunner().invoke(cli, ["check", "--base", base, "--format", "json"], catch_exceptions=False)
        accepted = block[-1].split()[2]
        missing = [
            r["file"]
            for r in json.loads(after.stdout)["reports"]
            for f in r["findings"]
            if f["kind"] == "missing-drift-note"
        ]
        assert accepted not in missing, missing
        repo.git("reset", "-q", "--hard", "HEAD~1")


def test_note_base_measures_from_the_pull_requests_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A baseline re-sealed and committed in the PR gets its note with --base (without, it is unchanged)."""
    repo, base = pull_request(tmp_path / "ws")
    monkeypatch.chdir(repo.path)
    plain = CliRunner().invoke(cli, ["note", OTHER], catch_exceptions=False)
    assert plain.exit_code == 2 and "unchanged since HEAD" in plain.stderr
    done = CliRunner().invoke(cli, ["note", OTHER, "--base", base], catch_exceptions=False)
    assert done.exit_code == 0, done.stderr
    assert f'from: "{sealed(3)[1]}"' in done.stdout and f'to: "{sealed(4)[1]}"' in done.stdout
    bad = CliRunner().invoke(cli, ["note", OTHER, "--base", "no-such-ref"], catch_exceptions=False)
    assert (bad.exit_code, bad.stderr) == (
        2,
        "toolreplay: error: --base 'no-such-ref': no such commit in this repository\n",
    )


def test_a_changed_baseline_shows_its_reason_and_what_differs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An accepted baseline change shows the note's reason, both heads and the differing values."""
    repo, base = pull_request(tmp_path / "ws")
    repo.write(
        "drift-notes/search.md", note(OTHER, sealed(3)[1], sealed(4)[1], "Index @rebuilt <b>nightly</b>.")
    )
    repo.commit_all("note")
    markdown = comment(repo, base, monkeypatch)
    assert "#### 1 baseline changed by this pull request" in markdown
    assert "accepted by <code>drift-notes/search.md</code>" in markdown
    assert "> `Index @\u200drebuilt <\u200db>nightly<\u200d/b>.`" in markdown
    assert "What differs, base → head" in markdown
    assert "- index 3 · agent-drift" in markdown


#: a change of the real server's contract -> the finding kind in the comment and what it must say
LOCK_CHANGES = {
    "maximum": ("tool-drift", "schema (breaking): /properties/max_count/maximum 10 -> 3"),
    "description": (
        "contract-text-drift",
        "description: /description 'Shows the commit logs of a repository.'",
    ),
}


#: (transcript, lock) recorded through ``record --lock`` from the rug-pull server with a change
Recording = Callable[[str, bool], tuple[Path, Path]]


@pytest.fixture(scope="module")
def rug_recordings(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    """Each recording of the rug-pull server made once for the module's cases, which only read it."""
    made: dict[tuple[str, bool], tuple[Path, Path]] = {}

    def recording(change: str, seal: bool) -> tuple[Path, Path]:
        if (change, seal) not in made:
            made[change, seal] = rug_record(tmp_path_factory.mktemp(f"rug-{change}"), change, seal=seal)
        return made[change, seal]

    return recording


@pytest.mark.slow
@pytest.mark.parametrize(
    ("change", "rerecord"), [("maximum", True), ("maximum", False), ("description", False)]
)
def test_contract_drift_is_explained_by_the_base_lock(
    change: str, rerecord: bool, rug_recordings: Recording, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PR that updates the lock to a changed server (max_count's maximum 10 -> 3, or a new
    description), re-recording the run against it or not: the drift says what changed, since the
    base's lock holds the old contract, not only two fingerprints or digests."""
    kind, words = LOCK_CHANGES[change]
    approved, approved_lock = rug_recordings("none", True)
    run_file, _ = rug_recordings("none", False)  # a second run of the approved server
    changed, changed_lock = rug_recordings(change, False)
    repo = Repo.create(tmp_path / "ws")
    repo.write("toolreplay.toml", CONFIG + 'tools_lock = "tools.lock.json"\n')
    repo.write("baselines/git.sealed.jsonl", approved.read_text())
    repo.write("tools.lock.json", approved_lock.read_text())
    repo.write("runs/git.jsonl", run_file.read_text())
    repo.commit_all("base")
    base = repo.head()
    repo.git("checkout", "-q", "-b", "feature")
    if rerecord:  # the baseline's calls now drift from the run's (the case)
        repo.write("runs/git.jsonl", changed.read_text())
    repo.write("tools.lock.json", changed_lock.read_text())
    repo.commit_all("the server changed")
    monkeypatch.chdir(repo.path)
    result = CliRunner().invoke(
        cli, ["check", "--base", base, "--format", "markdown"], catch_exceptions=False
    )
    if not rerecord:
        # the run still matches the base's lock, which judges the range until a note accepts the
        # lock's change: the change itself is what fails
        assert "| error | missing-drift-note |" in result.stdout, result.stdout
        assert "tool lock 'tools.lock.json' (modified)" in result.stdout, result.stdout
        return
    drift = [line for line in result.stdout.splitlines() if f"| error | {kind} |" in line]
    assert drift, result.stdout
    assert any(f"the lock changed since {base[:12]}: " in row and words in row for row in drift), drift


@pytest.mark.parametrize("sealed_run_file", [False, True], ids=["transcript", "sealed"])
def test_diffs_accept_commands_make_the_run_the_baseline_and_note_it(
    sealed_run_file: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """diff --format markdown of a drifted run: its file is the run, not the baseline, so the advice
    is accept (the run made the baseline, the baseline noted, never the run); the printed command
    works in a real repository with the reason filled in and the guard takes what it wrote."""
    repo = Repo.create(tmp_path / "ws")
    repo.write("toolreplay.toml", CONFIG)
    sealed_run(repo, 3, BASELINE)
    repo.commit_all("base")
    run = "gitbot-run.sealed.jsonl" if sealed_run_file else "gitbot-run.jsonl"
    if sealed_run_file:
        sealed_run(repo, 5, run)
    else:
        repo.write(run, run_text(5))
    monkeypatch.chdir(repo.path)
    result = CliRunner().invoke(cli, ["diff", BASELINE, run, "--format", "markdown"], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert accept_blocks(result.stdout) == [[f"toolreplay accept {BASELINE} --run {run} --reason WHY"]]
    command = accept_blocks(result.stdout)[0][0].replace("WHY", "'It reads five commits now.'")
    done = shell(repo, command)
    assert done.returncode == 0, (command, done.stderr)
    assert done.stdout == f"wrote {BASELINE}\nwrote drift-notes/gitbot.md\n"
    written = (repo.path / "drift-notes/gitbot.md").read_text()
    assert 'kinds:\n  - "agent"' in written and written.endswith("---\nIt reads five commits now.\n")
    repo.git("add", "-A")
    assert CliRunner().invoke(cli, ["hook", "drift-note"], catch_exceptions=False).exit_code == 0
