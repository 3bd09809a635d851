"""The one excerpt rule: where two values first differ, and both shown there, cut at the same place."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolreplay.analyses import difference
from toolreplay.analyses.difference import ABSENT, clipped, excerpts, first_difference


def _status(status: str) -> str:
    """A long JSON text (a server's answer in a text block) whose last member is its status."""
    return json.dumps({"items": [{"id": n, "name": f"item {n}"} for n in range(20)], "status": status})


def test_a_long_json_text_differing_at_its_end_is_entered() -> None:
    """Two strings holding JSON are compared as the values they hold: the difference is the member
    (``#`` as the volatile rules write it), not two identical 60-character prefixes."""
    old = {"content": [{"type": "text", "text": _status("ok")}]}
    new = {"content": [{"type": "text", "text": _status("degraded")}]}
    assert first_difference(old, new) == ("/content/0/text#/status", "ok", "degraded")


def test_json_texts_that_only_spell_the_same_value_differently_are_the_strings() -> None:
    """Spacing alone is a difference of the strings, shown around where they first differ."""
    spaced, tight = _status("ok"), _status("ok").replace(", ", ",")
    pointer, old, new = first_difference({"t": spaced}, {"t": tight}) or ("", None, None)
    assert (pointer, old, new) == ("/t", spaced, tight)
    shown = excerpts(old, new, 60)
    assert shown[0] != shown[1] and all(s.endswith("...") for s in shown)


def test_long_strings_are_cut_around_their_first_difference_on_both_sides() -> None:
    """Both excerpts start LEAD characters before the first difference, marked where cut."""
    old, new = excerpts("x" * 200 + " status ok", "x" * 200 + " status degraded", 60)
    assert old == '...xxxxxxxxxxxx status ok"'
    assert new == '...xxxxxxxxxxxx status degraded"'
    early = excerpts("a" + "x" * 200, "b" + "x" * 200, 60)
    assert early[0] == '"a' + "x" * 55 + "..." and early[1].startswith('"bxx')


def test_a_cut_never_splits_an_escape() -> None:
    """Canonical JSON escapes non-ASCII and controls; a cut falls before an escape, not inside it."""
    for old, new in (("é" * 100, "é" * 50 + "a"), ('"q' * 60, '"q' * 40 + "!"), ("\n" * 90, "\n" * 45)):
        for shown in excerpts(old, new, 60):
            body = shown.removeprefix("...").removesuffix("...")
            assert json.loads(f'"{body.strip(chr(34))}"') is not None, shown
            assert shown.isascii() and len(shown) <= 66


def test_short_values_absent_sides_and_single_values() -> None:
    """Values within the limit are whole; an absent side is named; one value is cut from its start."""
    assert excerpts(1, "1", 60) == ("1", '"1"')
    assert excerpts(ABSENT, 2, 60) == ("no value", "2")
    assert excerpts(ABSENT, "v" * 100, 20, absent="(absent)") == ("(absent)", '"' + "v" * 16 + "...")
    assert clipped("v" * 100, 20) == '"' + "v" * 16 + "..."


def test_the_first_difference_inside_a_json_text_stops_there(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside a string that holds JSON, the walk stops at the first difference: the leaves after it
    are not compared (it used to compare every one before taking the first)."""
    compared: list[Any] = []
    real = difference.canonical
    monkeypatch.setattr(difference, "canonical", lambda value: compared.append(value) or real(value))
    old = json.dumps({"items": list(range(500))})
    new = json.dumps({"items": [n + 1 for n in range(500)]})
    assert first_difference({"text": old}, {"text": new}) == ("/text#/items/0", 0, 1)
    assert len(compared) <= 2
