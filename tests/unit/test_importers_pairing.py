"""Pairing results with calls by call id AND tool name, earliest unanswered call first."""

from __future__ import annotations

import pytest

from toolreplay.errors import InputError
from toolreplay.importers.base import Location, make_response, read_arguments
from toolreplay.importers.pairing import Pairing

HERE = Location(None, "/0")


def _call(pairing: Pairing, tool: str, call_id: str | None) -> int:
    return pairing.call(tool=tool, call_id=call_id, arguments=read_arguments({}), location=HERE)


def test_a_named_result_skips_an_earlier_call_of_another_tool() -> None:
    """With an id reused for another tool, a result naming its tool goes to that tool's call,
    even though an earlier call with the same id is still unanswered."""
    pairing = Pairing()
    _call(pairing, "get_user_details", "call_1")
    _call(pairing, "calculate", "call_1")
    assert pairing.result(call_id="call_1", tool="calculate", response=make_response("305.0")) == 1
    session = pairing.session(0)
    assert [r.response for r in session.records] == [{"_missing_result": True}, {"content": "305.0"}]
    assert (session.missing_results, session.orphan_results) == (1, 0)


def test_a_result_for_a_tool_never_called_with_that_id_is_left_out() -> None:
    """A result whose id matches only calls of other tools attaches to nothing and is counted."""
    pairing = Pairing()
    _call(pairing, "get_user_details", "call_1")
    assert pairing.result(call_id="call_1", tool="think", response=make_response("x")) is None
    session = pairing.session(0)
    assert session.records[0].response == {"_missing_result": True}
    assert (session.missing_results, session.orphan_results) == (1, 1)


def test_an_unnamed_result_goes_to_the_earliest_unanswered_call_with_its_id() -> None:
    """Without a tool name (Anthropic, Responses) the earliest open call with the id wins."""
    pairing = Pairing()
    _call(pairing, "a", "dup")
    _call(pairing, "b", "dup")
    assert pairing.result(call_id="dup", tool=None, response=make_response(1)) == 0
    assert pairing.result(call_id="dup", tool=None, response=make_response(2)) == 1
    assert pairing.result(call_id="dup", tool=None, response=make_response(3)) is None
    assert pairing.session(0).orphan_results == 1


def test_an_answered_call_takes_no_second_result() -> None:
    """Once answered, a call is closed: a repeated result is an orphan, not an overwrite."""
    pairing = Pairing()
    _call(pairing, "a", "x")
    pairing.result(call_id="x", tool="a", response=make_response("first"))
    assert pairing.result(call_id="x", tool="a", response=make_response("second")) is None
    assert pairing.session(0).records[0].response == {"content": "first"}


def test_a_call_holding_its_result_is_not_open() -> None:
    """A call given with its response (mcp_call, OTel span) takes no later result."""
    pairing = Pairing()
    pairing.call(
        tool="a", call_id="x", arguments=read_arguments({}), location=HERE, response=make_response("in")
    )
    assert pairing.result(call_id="x", tool=None, response=make_response("late")) is None
    assert pairing.session(0).records[0].response == {"content": "in"}


def test_records_are_in_call_order_not_result_order() -> None:
    """Indexes follow the calls as made, whatever order the results came back in."""
    pairing = Pairing()
    _call(pairing, "a", "1")
    _call(pairing, "b", "2")
    pairing.result(call_id="2", tool=None, response=make_response("B"))
    pairing.result(call_id="1", tool=None, response=make_response("A"))
    records = pairing.session(3).records
    assert [(r.index, r.tool, r.response["content"]) for r in records] == [(0, "a", "A"), (1, "b", "B")]


def test_a_call_the_transcript_reader_would_refuse_is_an_error_at_its_location() -> None:
    """A record over the reader's depth limit is refused where the call sits, not written."""
    deep: dict[str, object] = {}
    node = deep
    for _ in range(200):
        node["x"] = {}
        node = node["x"]  # type: ignore[assignment]
    pairing = Pairing()
    at = Location(7, "/tool_calls/0")
    pairing.call(tool="a", call_id=None, arguments=read_arguments(deep), location=at)
    with pytest.raises(InputError) as caught:
        pairing.session(0)
    assert (caught.value.line, caught.value.pointer) == (7, "/tool_calls/0")
    assert "nesting is deeper than" in caught.value.problem
