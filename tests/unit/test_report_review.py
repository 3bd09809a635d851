"""A changed baseline's review and a report's free note name travel in the JSON report (merge reads
the shards' reports back), valid against the published schema, and the comment draws them."""

from __future__ import annotations

import json
from dataclasses import replace

from toolreplay.findings import Change, Finding, Line, Report, Review
from toolreplay.report.json import render_json, reports_from_data
from toolreplay.report.markdown import render_markdown
from toolreplay.schemas import validator

BASELINE = "baselines/gitbot.sealed.jsonl"
DRIFT = Finding(
    kind="agent-drift",
    index=1,
    tool="git_log",
    message="tool 'git_log' was called with other arguments than at baseline index 1",
    path=BASELINE,
    line=2,
    related=1,
    change=Change(pointer="/max_count", baseline="3", run="5"),
)
REVIEWED = Report(
    command="drift-note",
    path=BASELINE,
    header=(
        Line(key="change", value="modified", text="modified"),
        Line(key="from", value="a" * 64, text="a" * 64),
        Line(key="to", value="b" * 64, text="b" * 64),
        Line(key="note", value="accepted", text="accepted by 'drift-notes/gitbot-2.md'"),
    ),
    note="drift-notes/gitbot-3.md",
    review=Review(
        base="1" * 40,
        head="2" * 40,
        note="drift-notes/gitbot-2.md",
        reason="The agent reads <b>five</b> commits now; @team agreed.",
        kinds=("agent",),
        changes=(DRIFT,),
    ),
)
GITHUB = {
    "GITHUB_SERVER_URL": "https://github.com",
    "GITHUB_REPOSITORY": "octo/agents",
    "GITHUB_SHA": "2" * 40,
}


def test_review_and_note_survive_the_json_report() -> None:
    """render_json writes the review and the note; the schema accepts it; reading it back is equal."""
    data = json.loads(render_json([REVIEWED]))
    assert not list(validator("report").iter_errors(data))
    assert data["reports"][0]["review"]["changes"][0]["change"] == {
        "pointer": "/max_count",
        "baseline": "3",
        "run": "5",
    }
    assert reports_from_data(data) == [REVIEWED]


def test_the_comment_shows_reason_values_and_both_versions() -> None:
    """The review block: the note, its reason defused, from → to linked at base and head, old → new."""
    md = render_markdown([REVIEWED], environ=GITHUB)
    assert "accepted by <code>drift-notes/gitbot-2.md</code>" in md
    assert "> `The agent reads <\u200db>five<\u200d/b> commits now; @\u200dteam agreed.`" in md
    assert f"(https://github.com/octo/agents/blob/{'1' * 40}/{BASELINE})" in md
    assert f"(https://github.com/octo/agents/blob/{'2' * 40}/{BASELINE})" in md
    assert "  base `3` → head `5`" in md
    assert "kinds: `agent`" in md


def finding(kind: str, index: int, path: str = "runs/a.jsonl") -> Finding:
    return Finding(
        kind=kind, index=index, tool="search", message=f"{kind} at {index}", path=path, line=index + 1
    )


def test_advisory_findings_fold_below_the_failing_ones() -> None:
    """Rows of kinds that do not fail the build fold under the failing rows; a file with only
    advisory findings folds below every failing file; the verdict counts them."""
    mixed = Report(
        command="check",
        path="runs/a.jsonl",
        findings=(finding("non-determinism", 4), finding("redundant-call", 1)),
    )
    quiet = Report(
        command="check", path="runs/b.jsonl", findings=(finding("redundant-call", 2, "runs/b.jsonl"),)
    )
    md = render_markdown([mixed, quiet], fails=lambda kind: kind != "redundant-call")
    assert "(2 advisory findings, folded below)" in md
    failing_row = md.index("| non-determinism | `non-determinism at 4` |")
    fold = md.index("<details><summary>1 advisory finding (they do not fail the build)</summary>")
    advisory_row = md.index("| redundant-call | `redundant-call at 1` |")
    assert failing_row < fold < advisory_row
    only = md.index(
        "<details><summary>1 file with advisory findings only (they do not fail the build)</summary>"
    )
    assert advisory_row < only < md.index("<code>runs/b.jsonl</code>")


def test_a_capped_review_names_every_drifting_tool_it_does_not_show() -> None:
    """Past the first five differences the comment says how many more and in which tools, the
    first twenty by name (every drifting tool stays in the comment, in a few lines)."""
    drifts = tuple(
        Finding(
            kind="behavior-drift",
            index=n,
            tool=f"tool_{n:02}",
            message=f"tool 'tool_{n:02}' returned a different response (and 9 more calls of this tool)",
            path=BASELINE,
            change=Change(pointer="/v", baseline="1", run="2"),
        )
        for n in range(30)
    )
    assert REVIEWED.review is not None
    report = replace(REVIEWED, review=replace(REVIEWED.review, changes=drifts))
    capped = render_markdown([report])
    named = ", ".join(f"`tool_{n:02}`" for n in range(5, 25))
    assert f"25 more differences (tools {named} and 5 more tools): run `toolreplay diff`" in capped
    assert capped.count("· behavior-drift ·") == 5
    assert render_markdown([report], caps=False).count("· behavior-drift ·") == 30
