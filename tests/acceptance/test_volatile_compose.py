"""Two volatile rules on one string both apply: mcp-server-git's ``git_show`` text holds a commit
hash and a date, and a re-recorded run drifts nowhere else (issue 38)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import invoke

HASHES = ("3f786850e387550fdab836ed7e6dc881de23001b", "89e6c98d92887913cadf06b2adb97f26cde4849b")
DATES = ("2024-01-01 09:30:00 +0000", "2024-06-01 17:05:42 +0200")

#: the hash rule, then the date rule, at the same text (each masks one value of each answer)
RULES = """
[[volatile]]
tool = "git_show"
at = "/response/content/*/text"
pattern = "[0-9a-f]{40}"

[[volatile]]
tool = "git_show"
at = "/response/content/*/text"
pattern = "\\\\d{4}-\\\\d{2}-\\\\d{2} \\\\d{2}:\\\\d{2}:\\\\d{2} [+-]\\\\d{4}"
"""


def show(sha: str, date: str, author: str = "Ada Lovelace") -> str:
    """What mcp-server-git's git_show answers for a commit adding one file (``git show --date=iso``)."""
    return (
        f"commit {sha}\nAuthor: {author} <ada@example.com>\nDate:   {date}\n\n    add notes\n"
        "\n--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1 @@\n+hello\n"
    )


def write_run(path: Path, text: str) -> None:
    record = {
        "index": 0,
        "tool": "git_show",
        "args": {"repo_path": "/srv/repo", "revision": "HEAD"},
        "response": {"content": [{"type": "text", "text": text}], "isError": False},
    }
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")


@pytest.fixture
def project(runner: CliRunner, tmp_path: Path) -> Path:
    """A baseline of one git_show and a re-recorded run of it: another hash, another date."""
    (tmp_path / "runs").mkdir()
    (tmp_path / "baselines").mkdir()
    write_run(tmp_path / "first.jsonl", show(HASHES[0], DATES[0]))
    write_run(tmp_path / "runs" / "show.jsonl", show(HASHES[1], DATES[1]))
    code, _, err = invoke(runner, "seal", "first.jsonl", "-o", "baselines/show.sealed.jsonl", cwd=tmp_path)
    assert code == 0, err
    config = 'baselines = ["baselines/*.sealed.jsonl"]\ntranscripts = ["runs/*.jsonl"]\n' + RULES
    (tmp_path / "toolreplay.toml").write_text(config, encoding="utf-8")
    return tmp_path


def masked(report: dict[str, object]) -> object:
    return next(line["value"] for line in report["header"] if line["key"] == "masked")  # type: ignore[attr-defined,index]


def test_diff_masks_the_hash_and_the_date_of_one_text(runner: CliRunner, project: Path) -> None:
    """Both rules apply to the one text: no drift, and each rule counts its value on both sides."""
    argv = ["diff", "baselines/show.sealed.jsonl", "runs/show.jsonl"]
    code, out, _ = invoke(runner, *argv, cwd=project)
    assert code == 0, out
    assert "differences: none\n" in out
    assert "masked: 4 values by 2 rules\n" in out
    code, out, _ = invoke(runner, *argv, "--format", "json", cwd=project)
    assert masked(json.loads(out)["reports"][0]) == [2, 2]


def test_diff_still_sees_a_change_beside_the_masks(runner: CliRunner, project: Path) -> None:
    """Another author in the same text is drift: the two masks hide only the hash and the date."""
    write_run(project / "runs" / "show.jsonl", show(HASHES[1], DATES[1], author="Charles Babbage"))
    code, out, _ = invoke(runner, "diff", "baselines/show.sealed.jsonl", "runs/show.jsonl", cwd=project)
    assert code == 1
    assert "differences: behavior-drift 1\n" in out
    assert 'the run has "commit <volatile>\\nAuthor: Charles Babbage' in out


def test_check_passes_and_counts_each_rule(runner: CliRunner, project: Path) -> None:
    """check: the baseline's report and the run's both count one value per rule."""
    code, out, err = invoke(runner, "check", cwd=project)
    assert code == 0, out + err
    total = "total: 2 reports, 0 findings, 0 failing, 0 unreadable\n"
    assert out.endswith(total + "masked: 4 values by 2 rules\n")
    assert "volatile rule" not in err  # neither rule is stale
    code, out, _ = invoke(runner, "check", "--format", "json", cwd=project)
    reports = {report["file"]: masked(report) for report in json.loads(out)["reports"]}
    assert reports == {"baselines/show.sealed.jsonl": [1, 1], "runs/show.jsonl": [1, 1]}
