"""The ``/toolreplay accept`` command, the sticky comment's hidden lines, and the reason made inert."""

from __future__ import annotations

import pytest

from toolreplay.escape import neutral, starts_command
from toolreplay.github.approval import (
    Request,
    Unit,
    described_lines,
    note_reason,
    parse_request,
    read_described,
)

HEAD = "a" * 40


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("/toolreplay accept The index was rebuilt.", Request(paths=(), reason="The index was rebuilt.")),
        ("  /toolreplay accept  two\nlines ", Request(paths=(), reason="two\nlines")),
        (
            "/toolreplay accept b/x.sealed.jsonl: why: because",
            Request(paths=("b/x.sealed.jsonl",), reason="why: because"),
        ),
        (
            "/toolreplay accept b/x.sealed.jsonl, b/y.sealed.jsonl: ok",
            Request(paths=("b/x.sealed.jsonl", "b/y.sealed.jsonl"), reason="ok"),
        ),
        ("/toolreplay accept note: not a path", Request(paths=(), reason="note: not a path")),
        ("/toolreplay accept", Request(paths=(), reason="")),
        ("/toolreplay acceptance", None),
        ("please /toolreplay accept x", None),
        ("LGTM", None),
    ],
)
def test_the_command_is_read_from_the_comment(body: str, expected: Request | None) -> None:
    """The command starts the comment; ``PATH: reason`` names sealed baselines, anything else is reason."""
    assert parse_request(body) == expected


def test_hidden_lines_round_trip_and_cannot_end_the_comment() -> None:
    """What the comment lists reads back as written; a path holding ``-->`` stays inside its comment."""
    odd = Unit(baseline="b/x-->y<.sealed.jsonl", run="r.jsonl", base="c" * 40)
    units = [odd, Unit(baseline="b", run="r")]
    lines = described_lines(HEAD, units)
    assert all(line.count("-->") == 1 and line.endswith("-->") for line in lines)
    assert read_described("\r\n".join(["<!-- toolreplay-report -->", *lines, "text"])) == (
        read_described("\n".join(lines))
    )
    described = read_described("\n".join(lines))
    assert (described.head, list(described.units)) == (HEAD, units)
    assert described_lines(None, units) == []
    assert read_described("no lines").head is None


def test_neutral_breaks_mentions_tags_references_and_commands() -> None:
    """One line, cut, with a joiner after each ``@``, ``<``, ``#`` before a digit, ``::`` and ``##[``."""
    text = neutral("hi @bob <b>x</b> #3\n::error::y ##[group]z " + "w" * 50, max_len=60)
    assert "\n" not in text and len(text.replace("\u200d", "")) == 60 and text.endswith("…")
    for live in ("@bob", "<b>", "#3", "::error", "##["):
        assert live not in text
    assert not starts_command(neutral("::warning::x", max_len=50))
    assert note_reason("x @y", login="a@b", number=3).startswith('"x @\u200dy"\n\nAccepted by a@\u200db')
