"""line_of: the line a JSON pointer lands on, for errors in whole-document files."""

from __future__ import annotations

import pytest

from toolreplay.locate import line_of

TEXT = b"""{
  "agent": "docs-reader",
  "allowed_tools": [
    "read_file",
    "search"
  ],
  "arguments": {
    "a/b": {"type": "objekt"},
    "read_file": {
      "type": "object",
      "properties": {"path": {"pattern": "^docs/"}}
    }
  }
}
"""


@pytest.mark.parametrize(
    ("pointer", "line"),
    [
        ("/", 1),
        ("/agent", 2),
        ("/allowed_tools", 3),
        ("/allowed_tools/1", 5),
        ("/arguments/a~1b/type", 8),
        ("/arguments/read_file", 9),
        ("/arguments/read_file/properties/path/pattern", 11),
        ("/nope", None),
        ("/allowed_tools/7", None),
        ("/agent/x", None),
    ],
)
def test_line_of(pointer: str, line: int | None) -> None:
    """Each pointer lands on the line of its member's key (or item), unknown ones on None."""
    assert line_of(TEXT, pointer) == line


def test_line_of_bad_text() -> None:
    """Text that is not JSON or not UTF-8 gives None, never an exception."""
    assert line_of(b"{\n oops", "/a") is None
    assert line_of(b"\xff", "/a") is None
    assert line_of(b"{}", None) is None
