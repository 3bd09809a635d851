"""One verdict everywhere: ``check``, ``note`` and the PR comment's review of a changed baseline
judge a drift the same way, with the configuration's volatile rules (over a pull request's range,
the base commit's), in a real git repository."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from tests.gitrepo import Repo
from toolreplay.chain import seal
from toolreplay.cli import cli
from toolreplay.transcript import Record, make_record, record_line

BASELINE = "baselines/crm.sealed.jsonl"
RUN = "runs/crm.jsonl"
CONFIG = """\
transcripts = ["runs/*.jsonl"]
baselines = ["baselines/*.sealed.jsonl"]
drift_notes = "drift-notes"
mutators = ["add_note"]

[[volatile]]
tool = "*"
at = "/response/time"

[[volatile]]
tool = "add_note"
at = "/state/updated_at"
"""


def crm(time: str, tier: str) -> list[Record]:
    """A support agent's run: the server's status (stamped with the time), a customer, a note
    written (its state stamped with the time too)."""
    return [
        make_record(index=0, tool="get_status", args={}, response={"status": "up", "time": time}),
        make_record(index=1, tool="lookup_customer", args={"id": 7}, response={"name": "Ada", "tier": tier}),
        make_record(
            index=2,
            tool="add_note",
            args={"id": 7, "text": "called"},
            response={"ok": True},
            state={"notes/7": "sha256:1f0c", "updated_at": time},
        ),
    ]


def sealed_text(records: list[Record]) -> str:
    return "".join(line + "\n" for _, line in seal(records))


def run_text(records: list[Record]) -> str:
    return "".join(record_line(r) + "\n" for r in records)


@pytest.fixture
def repo(tmp_path: Path, git_isolated: None, monkeypatch: pytest.MonkeyPatch) -> Repo:
    """The baseline as first recorded (10:00, tier gold), committed with the rules."""
    repo = Repo.create(tmp_path / "repo")
    repo.write("toolreplay.toml", CONFIG)
    repo.write(BASELINE, sealed_text(crm("10:00", "gold")))
    repo.commit_all("baseline")
    monkeypatch.chdir(repo.path)
    return repo


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def front_matter(text: str) -> dict[str, Any]:
    end = text.index("\n---\n", 4)
    value: dict[str, Any] = yaml.safe_load(text[4:end])
    return value


def test_check_and_note_agree_on_what_drifted(repo: Repo) -> None:
    """The server upper-cased the tier and the masked times moved: check finds the tier only, and
    the note written after re-sealing says behavior of lookup_customer (it used to say
    get_status and add_note, the masked tools, and leave the drifting one out)."""
    repo.write(RUN, run_text(crm("11:30", "GOLD")))
    checked = invoke("check", "--format", "json")
    assert checked.exit_code == 1
    findings = [f for r in json.loads(checked.stdout)["reports"] for f in r["findings"]]
    assert [(f["kind"], f["tool"]) for f in findings] == [("behavior-drift", "lookup_customer")]
    assert invoke("seal", RUN, "-o", BASELINE, "--force").exit_code == 0
    written = invoke("note", BASELINE, "--run", RUN)
    assert written.exit_code == 0, written.stderr
    value = front_matter(written.stdout)
    assert (value["kinds"], value["tools"]) == (["behavior"], ["lookup_customer"])
    assert 'at \'/tier\' the baseline has "gold", the run has "GOLD"' in written.stdout


def test_a_rerecord_where_only_masked_values_changed_has_nothing_to_accept(repo: Repo) -> None:
    """Only the time changed: check passes, and the note finds no kind and no tool (it used to
    find behavior drift of get_status and effect drift of add_note)."""
    repo.write(RUN, run_text(crm("11:30", "gold")))
    assert invoke("check").exit_code == 0
    assert invoke("seal", RUN, "-o", BASELINE, "--force").exit_code == 0
    written = invoke("note", BASELINE, "--run", RUN)
    assert written.exit_code == 0, written.stderr
    value = front_matter(written.stdout)
    assert "kinds" not in value and "tools" not in value
    assert "# kinds: none found by comparison" in written.stdout


def review_section(repo: Repo, base: str) -> str:
    """The PR comment's block of the changed baseline (``check --base --format markdown``)."""
    result = invoke("check", "--base", base, "--format", "markdown")
    assert result.exit_code == 0, result.stdout
    found = re.search(r"<summary><code>baselines/crm\.sealed\.jsonl</code>.*?</details>", result.stdout, re.S)
    assert found is not None, result.stdout
    return found.group(0)


def accepted_resealing(repo: Repo, time: str, tier: str) -> str:
    """A pull request that re-seals the baseline from a new recording, with its note; the base."""
    base = repo.head()
    repo.git("checkout", "-q", "-b", "rerecord")
    repo.write(RUN, run_text(crm(time, tier)))
    assert invoke("seal", RUN, "-o", BASELINE, "--force").exit_code == 0
    written = invoke("note", BASELINE, "--base", base, "--run", RUN)
    assert written.exit_code == 0, written.stderr
    repo.write("drift-notes/crm.md", written.stdout.replace("<!--", "The CRM now upper-cases tiers. <!--"))
    repo.commit_all("re-record the CRM agent")
    return base


def test_the_comment_reviews_a_changed_baseline_with_the_rules(repo: Repo) -> None:
    """The comment's "baseline changed" block shows the tier, the one difference check would
    find, and not the masked time (it said "1 difference" and showed get_status's index 0 with
    two identical excerpts)."""
    base = accepted_resealing(repo, "11:30", "GOLD")
    section = review_section(repo, base)
    assert "accepted by <code>drift-notes/crm.md</code> · 1 difference<" in section
    assert "- index 1 · behavior-drift · `lookup_customer`" in section
    assert '"gold"` → head `"GOLD"`' in section
    assert "get_status" not in section and "add_note" not in section
    assert "kinds: `behavior`" in section


def test_the_comment_shows_no_difference_where_only_masked_values_changed(repo: Repo) -> None:
    """A re-record where only the times changed: no false behavior-drift in the comment."""
    base = accepted_resealing(repo, "11:30", "gold")
    section = review_section(repo, base)
    assert "· 0 differences<" in section and "What differs" not in section


def test_over_a_range_the_bases_rules_judge_the_review(repo: Repo) -> None:
    """A pull request that adds a rule masking the tier does not hide the tier's change from the
    reviewer: the base's rules judge the range."""
    base = repo.head()
    repo.write(
        "toolreplay.toml", CONFIG + '\n[[volatile]]\ntool = "lookup_customer"\nat = "/response/tier"\n'
    )
    repo.commit_all("mask the tier")
    repo.write(RUN, run_text(crm("11:30", "GOLD")))
    assert invoke("seal", RUN, "-o", BASELINE, "--force").exit_code == 0
    written = invoke("note", BASELINE, "--base", base, "--run", RUN)
    assert front_matter(written.stdout)["tools"] == ["lookup_customer"]
    repo.write("drift-notes/crm.md", written.stdout.replace("<!--", "Tiers are upper-case now. <!--"))
    repo.commit_all("re-record")
    result = invoke("check", "--base", base, "--format", "markdown")
    assert "- index 1 · behavior-drift · `lookup_customer`" in result.stdout
