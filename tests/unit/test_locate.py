"""line_of and toml_lines: the line a JSON pointer, or a TOML table or key, is on (for errors)."""

from __future__ import annotations

import pytest

from toolreplay.locate import line_of, toml_lines

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


TOML = """[project]
name = "x"
description = \"\"\"
[[volatile]]
\"\"\"

[tool.toolreplay]
transcripts = ["runs/*.jsonl"]

[[volatile]]  # pasted at the top level
tool = "a"

[[ tool . toolreplay . "volatile" ]]
tool = "b"
[[tool.toolreplay.volatile]]
'pattrn' = "c"
"""


def test_toml_lines() -> None:
    """toml_lines: each table header and key by its path (an array's items by index), past a
    multi-line string that holds a header, with spaces and quoted keys."""
    lines = toml_lines(TOML)
    assert lines[("project", "description")] == 3
    assert lines[("tool", "toolreplay")] == 7
    assert lines[("volatile", 0)] == 10
    assert lines[("volatile", 0, "tool")] == 11
    assert lines[("tool", "toolreplay", "volatile", 0)] == 13
    assert lines[("tool", "toolreplay", "volatile", 1, "pattrn")] == 16
    assert ("volatile", 1) not in lines
