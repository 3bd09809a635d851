"""--from auto: the format is told from the first item that shows it."""

from __future__ import annotations

import pytest

from toolreplay.errors import InputError
from toolreplay.importers.base import Item, Location
from toolreplay.importers.detect import detect, sniff


@pytest.mark.parametrize(
    ("value", "fmt"),
    [
        ({"resourceSpans": []}, "otel"),
        ({"trajectory": [], "history": []}, "swe-agent"),
        ({"type": "function_call_output", "call_id": "c", "output": "x"}, "openai-responses"),
        ({"input": [{"role": "user", "content": "hi"}, {"type": "mcp_call"}]}, "openai-responses"),
        (
            {"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}]},
            "anthropic",
        ),
        ({"role": "assistant", "content": [{"type": "mcp_tool_use"}]}, "anthropic"),
        ({"traj": [{"role": "tool", "tool_call_id": "c", "content": "x"}]}, "openai-chat"),
        ([{"role": "assistant", "content": None, "tool_calls": []}], "openai-chat"),
        ({"role": "user", "content": "hi"}, None),
    ],
)
def test_marks(value: object, fmt: str | None) -> None:
    """Each format is recognised by a mark no other format has; plain text shows none."""
    assert sniff(value) == fmt


def test_detection_loses_no_item() -> None:
    """Items read before the deciding one are handed on with the rest, in order."""
    items = [
        Item(Location(1), {"role": "user", "content": "hi"}),
        Item(Location(2), {"role": "tool", "tool_call_id": "c", "content": "x"}),
        Item(Location(3), {"role": "user", "content": "bye"}),
    ]
    fmt, rest = detect(iter(items))
    assert fmt == "openai-chat"
    assert list(rest) == items


def test_no_mark_is_an_error() -> None:
    """An input without any tool call cannot be told apart, so auto refuses it."""
    with pytest.raises(InputError, match="cannot tell the format"):
        detect(iter([Item(Location(1), {"role": "user", "content": "hi"})]))
