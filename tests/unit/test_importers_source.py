"""Reading an input into items: JSON Lines line by line, anything else as one document."""

from __future__ import annotations

import io

import pytest

from toolreplay.errors import InputError
from toolreplay.importers.source import read_items


def _items(data: bytes) -> list[tuple[int | None, str, object]]:
    return [(i.location.line, i.location.pointer, i.value) for i in read_items(io.BytesIO(data), "f")]


def test_json_lines_give_one_item_per_line_with_its_number() -> None:
    """Blank lines are skipped and numbers count every line, so errors point at the file."""
    assert _items(b'{"a":1}\n\n{"b":2}\r\n[3]') == [(1, "", {"a": 1}), (3, "", {"b": 2}), (4, "", [3])]


def test_a_document_array_gives_its_elements() -> None:
    """A pretty-printed array is read whole; each element is an item located by pointer."""
    assert _items(b'[\n  {"a": 1},\n  {"b": 2}\n]\n') == [(None, "/0", {"a": 1}), (None, "/1", {"b": 2})]


def test_a_single_line_array_is_a_document() -> None:
    """One line holding an array reads like the same array pretty-printed."""
    assert _items(b'[{"a": 1}, {"b": 2}]\n') == [(None, "/0", {"a": 1}), (None, "/1", {"b": 2})]


def test_a_document_object_is_one_item() -> None:
    """A top-level object (one episode, one export) is the only item."""
    assert _items(b'{\n "messages": []\n}') == [(None, "", {"messages": []})]


def test_an_empty_input_has_no_items() -> None:
    """An empty or blank file yields nothing (zero sessions)."""
    assert _items(b"") == _items(b"\n  \n") == []


@pytest.mark.parametrize(
    ("data", "line", "problem"),
    [
        (b'{"a":1}\n{"a":\n', 2, "invalid JSON"),
        (b'{"a":1}\n{"a":1,"a":2}\n', 2, 'duplicate key "a"'),
        (b'[\n  {"a": 1},\n  {"a": 1 "b"}\n]\n', 3, "invalid JSON: Expecting ',' delimiter at column 11"),
        (b'{"a":1}\n{"a":NaN}\n', 2, "NaN"),
    ],
)
def test_bad_json_names_the_line(data: bytes, line: int, problem: str) -> None:
    """Strict decoding: the error carries the file and the line of the problem."""
    with pytest.raises(InputError) as caught:
        _items(data)
    assert (caught.value.path, caught.value.line) == ("f", line)
    assert problem in caught.value.problem


def test_a_byte_order_mark_is_refused() -> None:
    """As for transcripts, a BOM gets its own message."""
    with pytest.raises(InputError, match="byte-order mark"):
        _items(b'\xef\xbb\xbf[{"a": 1}]')


def test_json_lines_are_streamed() -> None:
    """Items come before the rest of the input is decoded: a bad later line fails only when reached."""
    items = read_items(io.BytesIO(b'{"a":1}\n{"b":2}\nnot json\n'), "f")
    assert next(items).value == {"a": 1}
    assert next(items).value == {"b": 2}
    with pytest.raises(InputError):
        next(items)
