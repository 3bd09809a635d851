"""How a trace's arguments and results become a record's args and response."""

from __future__ import annotations

import pytest

from toolreplay.importers.base import ABSENT, Location, make_response, missing_response, read_arguments


def test_an_object_is_used_as_it_is() -> None:
    """Arguments already structured (Anthropic input, OTel kvlist) are kept unchanged."""
    outcome = read_arguments({"b": 1, "a": [2]})
    assert (outcome.value, outcome.invalid, outcome.missing) == ({"b": 1, "a": [2]}, False, False)


def test_the_json_text_of_an_object_is_decoded() -> None:
    """OpenAI's arguments string becomes the object it holds."""
    assert read_arguments('{"user_id": "mia_li_3668"}').value == {"user_id": "mia_li_3668"}


@pytest.mark.parametrize(
    "raw",
    ['{"user_id": "mia', "", "[1, 2]", "null", '"text"', '{"a": 1, "a": 2}', '{"a": NaN}', 7, None, ["x"]],
)
def test_anything_else_is_kept_and_marked(raw: object) -> None:
    """Invalid JSON, a non-object, or a duplicate key is kept verbatim under _raw_arguments."""
    outcome = read_arguments(raw)
    assert outcome.value == {"_raw_arguments": raw, "_invalid_json": True}
    assert outcome.invalid and not outcome.missing


def test_absent_arguments_are_marked_missing() -> None:
    """A trace with no arguments field (OTel without opt-in capture) is not passed off as {}."""
    outcome = read_arguments(ABSENT)
    assert (outcome.value, outcome.missing) == ({"_missing_arguments": True}, True)


@pytest.mark.parametrize(
    "content", ["305.0", '{"a": 1}', [{"type": "text", "text": "hi"}], {"k": 1}, None, 3]
)
def test_a_result_is_nested_under_content_as_recorded(content: object) -> None:
    """A string result stays a string (even JSON text); any other value is nested unchanged."""
    assert make_response(content) == {"content": content}


def test_error_markers_sit_beside_the_content() -> None:
    """is_error is kept as stated (false too) and an error message beside the content."""
    assert make_response("x", is_error=False) == {"content": "x", "is_error": False}
    assert make_response(ABSENT, is_error=True, error="timeout") == {"is_error": True, "error": "timeout"}
    assert make_response() == {}


def test_a_missing_result_is_marked() -> None:
    """The response of a call without a result says so and holds nothing else."""
    assert missing_response() == {"_missing_result": True}


def test_locations_escape_pointer_tokens() -> None:
    """Keys holding / or ~ are escaped as RFC 6901 says, so the pointer stays unambiguous."""
    error = Location(3).at("a/b", "c~d", 0).error("bad")
    assert (error.line, error.pointer) == (3, "/a~1b/c~0d/0")
