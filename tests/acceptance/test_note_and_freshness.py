"""note and diff --max-age-days against a real git repository (git subprocesses)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from tests.gitrepo import git
from toolreplay.cli import cli
from toolreplay.transcript import GENESIS

CASES = Path(__file__).resolve().parent.parent / "cases" / "diff"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "baselines").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    return root


def head_of(runner: CliRunner, sealed: Path) -> str:
    result = runner.invoke(cli, ["verify", str(sealed), "--format", "json"], catch_exceptions=False)
    import json

    head: str = json.loads(result.output)["reports"][0]["summary"]["head"]
    return head


def front_matter(text: str) -> dict[str, Any]:
    assert text.startswith("---\n")
    end = text.index("\n---\n", 4)
    value: dict[str, Any] = yaml.safe_load(text[4:end])
    assert text[end + 5 :].strip(), "the body is left for the reason"
    return value


def note(runner: CliRunner, *args: str) -> str:
    result = runner.invoke(cli, ["note", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_note_for_a_new_baseline_starts_at_genesis(runner: CliRunner, repo: Path) -> None:
    """A baseline not in HEAD gets from = genesis, to = its head, and nothing drifted."""
    git(repo, "commit", "-q", "--allow-empty", "-m", "root")
    sealed = repo / "baselines" / "checkout.sealed.jsonl"
    sealed.write_bytes((CASES / "faithful" / "baseline.sealed.jsonl").read_bytes())
    value = front_matter(note(runner, str(sealed)))
    assert value == {
        "baseline": "baselines/checkout.sealed.jsonl",
        "from": GENESIS,
        "to": head_of(runner, sealed),
    }


def test_note_for_a_changed_baseline_names_both_heads_and_what_drifted(runner: CliRunner, repo: Path) -> None:
    """from is the committed head, to the new one; kinds/tools come from diffing old against new."""
    sealed = repo / "baselines" / "checkout.sealed.jsonl"
    sealed.write_bytes((CASES / "faithful" / "baseline.sealed.jsonl").read_bytes())
    before = head_of(runner, sealed)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "baseline")
    runner.invoke(cli, ["seal", str(CASES / "effect-drift" / "run.jsonl"), "-o", str(sealed), "--force"])
    out = repo / "drift-notes" / "checkout.md"
    out.parent.mkdir()
    note(runner, str(sealed), "-o", str(out))
    text = out.read_text()
    value = front_matter(text)
    assert list(value) == ["baseline", "from", "to", "kinds", "tools"]
    assert value["from"] == before and value["to"] == head_of(runner, sealed) != before
    assert (value["kinds"], value["tools"]) == (["effect"], ["write_file"])
    assert "#   index 3: effect-drift: tool 'write_file' returned the same response" in text


def test_note_for_a_deleted_baseline_has_no_to(runner: CliRunner, repo: Path) -> None:
    """A deleted baseline's note keeps from and leaves out to."""
    sealed = repo / "baselines" / "gone.sealed.jsonl"
    sealed.write_bytes((CASES / "faithful" / "baseline.sealed.jsonl").read_bytes())
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "baseline")
    before = head_of(runner, sealed)
    sealed.unlink()
    value = front_matter(note(runner, str(sealed)))
    assert value == {"baseline": "baselines/gone.sealed.jsonl", "from": before}


def test_note_with_runs_fills_kinds_from_diff(runner: CliRunner, repo: Path) -> None:
    """--run compares the committed baseline with each run; tool names are data, safely quoted YAML."""
    sealed = repo / "baselines" / "b.sealed.jsonl"
    sealed.write_bytes((CASES / "faithful" / "baseline.sealed.jsonl").read_bytes())
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "baseline")
    run = repo / "run.jsonl"
    weird = "x: [1]\\n---\\n@admin"
    run.write_text(
        (CASES / "behavior-drift" / "run.jsonl").read_text()
        + f'{{"index":4,"tool":"{weird}","args":{{}},"response":{{}}}}\n'
    )
    resealed = runner.invoke(cli, ["seal", str(run), "-o", str(sealed), "--force"], catch_exceptions=False)
    assert resealed.exit_code == 0, resealed.output  # re-recorded
    text = note(runner, str(sealed), "--run", str(run))
    value = front_matter(text)
    assert value["kinds"] == ["agent", "behavior"]
    assert value["tools"] == ["search", "x: [1]\n---\n@admin"]
    assert value["from"] != value["to"]
    assert text.count("\n---\n") == 1


def test_note_to_a_file_keeps_non_ascii_tool_names(runner: CliRunner, repo: Path) -> None:
    """note -o writes a summary naming a non-ASCII tool (it was an internal error, exit 3)."""
    sealed = repo / "baselines" / "b.sealed.jsonl"
    sealed.write_bytes((CASES / "faithful" / "baseline.sealed.jsonl").read_bytes())
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "baseline")
    run = repo / "run.jsonl"
    run.write_text('{"index":0,"tool":"r\u00e9sum\u00e9","args":{},"response":{}}\n')
    resealed = runner.invoke(cli, ["seal", str(run), "-o", str(sealed), "--force"], catch_exceptions=False)
    assert resealed.exit_code == 0, resealed.output  # re-recorded
    out = repo / "note.md"
    note(runner, str(sealed), "--run", str(run), "-o", str(out))
    text = out.read_text(encoding="utf-8")
    assert front_matter(text)["tools"] == ["r\u00e9sum\u00e9"]
    assert "tool 'r\u00e9sum\u00e9'" in text


def test_note_front_matter_is_block_style_with_both_digests_quoted(runner: CliRunner, repo: Path) -> None:
    """The note's front matter: one key per line, lists in block style, every value double-quoted."""
    sealed = repo / "baselines" / "b.sealed.jsonl"
    sealed.write_bytes((CASES / "faithful" / "baseline.sealed.jsonl").read_bytes())
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "baseline")
    before = head_of(runner, sealed)
    resealed = runner.invoke(
        cli, ["seal", str(CASES / "behavior-drift" / "run.jsonl"), "-o", str(sealed), "--force"]
    )
    assert resealed.exit_code == 0, resealed.output
    after = head_of(runner, sealed)
    text = note(runner, str(sealed))
    assert text.startswith(
        f'---\nbaseline: "baselines/b.sealed.jsonl"\nfrom: "{before}"\nto: "{after}"\n'
        'kinds:\n  - "behavior"\ntools:\n  - "search"\n'
    )


def test_note_on_an_unchanged_baseline_is_refused(runner: CliRunner, repo: Path) -> None:
    """from == to: there is no change to accept, so note refuses (exit 2) and writes nothing."""
    sealed = repo / "baselines" / "b.sealed.jsonl"
    sealed.write_bytes((CASES / "faithful" / "baseline.sealed.jsonl").read_bytes())
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "baseline")
    out = repo / "drift-notes" / "b.md"
    result = runner.invoke(cli, ["note", str(sealed), "-o", str(out)], catch_exceptions=False)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "is unchanged since HEAD (from == to, head " in result.stderr
    assert "there is no drift to accept" in result.stderr
    assert not out.exists()


def test_note_help_is_plain_text(runner: CliRunner) -> None:
    """note --help shows no reST markup (no double backquotes)."""
    result = runner.invoke(cli, ["note", "--help"], catch_exceptions=False)
    assert "``" not in result.stdout and "from is the head of BASELINE" in result.stdout


def test_note_on_a_directory_is_a_usage_error(runner: CliRunner, repo: Path) -> None:
    """note DIR is exit 2 naming it (it was an internal error, exit 3)."""
    git(repo, "commit", "-q", "--allow-empty", "-m", "root")
    folder = repo / "baselines"
    result = runner.invoke(cli, ["note", str(folder)], catch_exceptions=False)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == f"toolreplay: error: {folder}: is a directory, not a file\n"


def test_note_on_a_baseline_that_exists_nowhere_is_refused(runner: CliRunner, repo: Path) -> None:
    """A baseline neither on disk nor in HEAD gets no note (it got one 'deleting' a file that never was)."""
    git(repo, "commit", "-q", "--allow-empty", "-m", "root")
    missing = repo / "baselines" / "typo.sealed.jsonl"
    result = runner.invoke(cli, ["note", str(missing)], catch_exceptions=False)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == f"toolreplay: error: {missing}: no such file, and not in git HEAD either\n"


def diff_committed(runner: CliRunner, repo: Path, date: str | None, days: int) -> Result:
    """``diff --max-age-days DAYS`` of a baseline committed at ``date`` (None: as committed before)."""
    sealed = repo / "b.sealed.jsonl"
    if date is not None:
        sealed.write_bytes((CASES / "faithful" / "baseline.sealed.jsonl").read_bytes())
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", "baseline", date=date)
    run = str(CASES / "faithful" / "run.jsonl")
    return runner.invoke(cli, ["diff", str(sealed), run, "--max-age-days", str(days)], catch_exceptions=False)


def test_diff_reports_a_stale_baseline(runner: CliRunner, repo: Path) -> None:
    """A baseline last committed long ago is a stale-baseline finding with its commit date; diff exits 1."""
    result = diff_committed(runner, repo, "2001-02-03T04:05:06Z", 30)
    assert result.exit_code == 1
    assert "freshness: STALE: last committed 2001-02-03, more than 30 days ago; re-record it" in result.output
    assert result.output.endswith(
        "findings: 1\n"
        "stale-baseline: last committed 2001-02-03, more than 30 days before this check; re-record it\n"
    )
    fresh = diff_committed(runner, repo, None, 100000)
    assert fresh.exit_code == 0
    assert "freshness: last committed 2001-02-03, within 100000 days" in fresh.output


def test_a_commit_date_past_year_9999_is_shown_as_git_gives_it(runner: CliRunner, repo: Path) -> None:
    """git takes a commit date no datetime holds (a pull request can carry one): the baseline
    is fresh, and its date is shown in git's raw spelling, not an internal error."""
    result = diff_committed(runner, repo, "@300000000000 +0000", 1)
    assert result.exit_code == 0, result.output
    assert "freshness: last committed @300000000000, within 1 days" in result.output


def test_freshness_needs_a_commit(
    runner: CliRunner, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An uncommitted baseline is "not committed yet" and still diffed; one outside git is exit 2."""
    sealed = repo / "b.sealed.jsonl"
    sealed.write_bytes((CASES / "faithful" / "baseline.sealed.jsonl").read_bytes())
    run = str(CASES / "faithful" / "run.jsonl")
    line = "freshness: not committed yet (its age counts from its first commit; limit 1 days)\n"
    # a repository with no commits at all (it said "not inside a git work tree with commits")
    result = runner.invoke(cli, ["diff", str(sealed), run, "--max-age-days", "1"], catch_exceptions=False)
    assert (result.exit_code, result.stderr) == (0, "")
    assert line in result.stdout and "findings: 0\n" in result.stdout
    git(repo, "commit", "-q", "--allow-empty", "-m", "root")
    result = runner.invoke(cli, ["diff", str(sealed), run, "--max-age-days", "1"], catch_exceptions=False)
    assert (result.exit_code, result.stderr) == (0, "")
    assert line in result.stdout
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    copy = outside / "b.sealed.jsonl"
    copy.write_bytes(sealed.read_bytes())
    result = runner.invoke(cli, ["diff", str(copy), run, "--max-age-days", "1"], catch_exceptions=False)
    assert result.exit_code == 2
    assert "not inside a git work tree" in result.output
    result = runner.invoke(cli, ["note", str(copy)], catch_exceptions=False)
    assert result.exit_code == 2 and "not inside a git work tree" in result.output
