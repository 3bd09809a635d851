"""Workflow-command escaping, inert lines and the ranked, capped annotation plan."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.runner_sim import commands, parse_v2, runner_lines
from toolreplay.escape import escape_data, escape_property, inert, one_line, starts_command, workflow_command
from toolreplay.findings import Finding, Report
from toolreplay.github.annotations import PER_STEP_LIMIT, plan_annotations


@pytest.mark.parametrize(
    ("raw", "data", "prop"),
    [
        ("plain", "plain", "plain"),
        ("50%", "50%25", "50%25"),
        ("a\nb", "a%0Ab", "a%0Ab"),
        ("a\r\nb", "a%0D%0Ab", "a%0D%0Ab"),
        ("%0A", "%250A", "%250A"),
        ("a: b, c", "a: b, c", "a%3A b%2C c"),
        ("::add-mask::x", "::add-mask::x", "%3A%3Aadd-mask%3A%3Ax"),
    ],
)
def test_escape_vectors(raw: str, data: str, prop: str) -> None:
    """Data escapes %, CR and LF (percent first); properties also escape ':' and ','."""
    assert escape_data(raw) == data
    assert escape_property(raw) == prop


# The runner trims the property list, so the last value (our title) must not end in space.
_titles = st.text().filter(lambda t: t == t.strip())


@given(st.text(), _titles, st.text())
def test_command_round_trips_through_the_runner(file: str, title: str, message: str) -> None:
    """Whatever the values, the runner reads back exactly one command with exactly those values, each
    made one line (non-printable characters spelled out, as everywhere we print untrusted text)."""
    line = workflow_command("error", message, file=file, line=3, title=title)
    parsed = commands(line)
    assert len(parsed) == 1
    expected = (
        {"line": "3"}
        | ({"file": one_line(file)} if file else {})
        | ({"title": one_line(title)} if title else {})
    )
    assert parsed[0].name == "error"
    assert parsed[0].properties == expected
    assert parsed[0].data == one_line(message)


def test_a_control_character_in_a_value_is_spelled_out() -> None:
    """An ANSI escape in a file name or message reaches the command spelled out, never raw (a terminal
    or click would hide it: `runs/a\x1b[31m.jsonl` read as `runs/a.jsonl`, another file)."""
    line = workflow_command("error", "runs/a\x1b[31m.jsonl: bad\u202e", file="runs/a\x1b[31m.jsonl", line=2)
    assert line == "::error file=runs/a\\x1b[31m.jsonl,line=2::runs/a\\x1b[31m.jsonl: bad\\u202e"
    assert inert("index 1: runs/a\x1b[31m.jsonl\nnext\x00") == "index 1: runs/a\\x1b[31m.jsonl\nnext\\x00"


NASTY = [
    "::add-mask::x",
    "  \t::stop-commands::t",
    "\u2028::error::x",
    "\u200b::warning::x",
    "\ufeff::set-output name=a::b",
    "ok\n::add-mask::x",
    "ok\r::stop-commands::t",
    "ok\r\n  ::error::x",
    "text ##[add-mask]secret",
    "###[set-output name=x]y",
    "%0A::add-mask::x",
]


@pytest.mark.parametrize("text", NASTY)
def test_inert_text_starts_no_command(text: str) -> None:
    """inert() leaves no line that the runner (or a stricter reader) takes for a command."""
    out = inert(text)
    assert commands(out) == []
    assert not any(starts_command(line) for line in out.splitlines())


@given(st.text())
def test_inert_is_safe_for_any_text(text: str) -> None:
    """No text at all survives inert() as a workflow command."""
    out = inert(text)
    assert commands(out) == []
    assert not any(starts_command(line) for line in out.splitlines())


def test_inert_keeps_ordinary_text() -> None:
    """Ordinary report lines pass through unchanged."""
    text = "calls: 6\nindex 2: redundant-call: tool 'read_file' repeats\n"
    assert inert(text) == text


def _finding(kind: str, index: int) -> Finding:
    return Finding(
        kind=kind, index=index, tool="t", message=f"{kind} at {index}", path="a.jsonl", line=index + 1
    )


def test_plan_ranks_contract_breaks_first_and_caps_each_level() -> None:
    """Overreach and drift come before non-determinism before redundancy; 10 per level."""
    findings = (
        [_finding("redundant-call", i) for i in range(0, 15)]
        + [_finding("non-determinism", i) for i in range(15, 25)]
        + [_finding("permission-overreach", i) for i in range(25, 30)]
    )
    plan = plan_annotations([Report(command="replay", path="a.jsonl", findings=tuple(findings))])
    kinds = [a.kind for a in plan.shown]
    assert kinds[:5] == ["permission-overreach"] * 5
    assert kinds[5:10] == ["non-determinism"] * 5
    assert kinds.count("redundant-call") == PER_STEP_LIMIT
    assert sum(1 for a in plan.shown if a.level == "error") == PER_STEP_LIMIT
    assert plan.left_out == 30 - 20
    note = plan.note()
    assert note is not None and note.startswith("toolreplay: 10 of 30 findings are not shown")


def test_plan_respects_the_per_job_cap() -> None:
    """With a smaller job budget left, only that many annotations are emitted."""
    findings = tuple(_finding("redundant-call", i) for i in range(5))
    plan = plan_annotations([Report(command="replay", path="a.jsonl", findings=findings)], per_job=3)
    assert len(plan.shown) == 3 and plan.left_out == 2


def test_annotation_outside_the_repository_names_the_file_in_the_message(tmp_path: object) -> None:
    """A path GitHub cannot place is not passed as file= but spelled out in the message."""
    finding = Finding(
        kind="redundant-call", index=1, tool="t", message="m", path="/elsewhere/x.jsonl", line=2
    )
    plan = plan_annotations([Report(command="replay", path="/elsewhere/x.jsonl", findings=(finding,))])
    cmd = parse_v2(plan.shown[0].command(root="/repo"))
    assert cmd is not None
    assert "file" not in cmd.properties
    assert cmd.data == "/elsewhere/x.jsonl:2: index 1: m"


def test_report_errors_become_file_annotations() -> None:
    """A file-level error (a verify anchor mismatch) is an error annotation on that file."""
    report = Report(command="verify", path="b.sealed.jsonl", errors=("head is x, expected y",))
    (annotation,) = plan_annotations([report]).shown
    cmd = parse_v2(annotation.command())
    assert cmd is not None and cmd.name == "error"
    assert cmd.properties == {"file": "b.sealed.jsonl", "title": "toolreplay report-error"}
    assert runner_lines(annotation.command()) == [annotation.command()]


def test_echo_prints_inert_lines_on_both_streams(capsys: pytest.CaptureFixture[str]) -> None:
    """echo() writes untrusted text to stdout or stderr with no command line in it."""
    from toolreplay.github.annotations import echo

    echo("error in ::add-mask::x\n::add-mask::secret")
    echo("\r::stop-commands::t", err=True)
    captured = capsys.readouterr()
    assert captured.out == "error in ::add-mask::x\n%3A:add-mask::secret\n"
    assert commands(captured.out) == [] and commands(captured.err) == []
