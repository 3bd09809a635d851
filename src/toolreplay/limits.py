"""The limits every reader holds to, in a module of their own: the CLI's error boundary
needs ``raised_recursion_limit`` before any command runs, without the decoders' imports."""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from types import FrameType

#: Deepest nesting of arrays and objects accepted in one record (the record itself is level 1).
MAX_DEPTH = 128
#: Longest integer accepted, in digits (Python's own conversion limit).
MAX_INT_DIGITS = 4300
#: Largest record accepted, in bytes of its line (without the line ending).
MAX_RECORD_BYTES = 8 * 1024 * 1024
#: Most answers ``probe --repeat N`` asks of each call, a second apart (and a receipt may ask for):
#: a sample, not a soak test; a hand-edited receipt cannot keep probe asking for days.
MAX_REPEAT = 100
#: Time the scope's argument patterns may take on one transcript, in all (docs/scope.md).
DEFAULT_BUDGET_SECONDS = 10.0

#: Python frames a recursive walk may take per level of a value: jsonschema takes about 8
#: (descend, a keyword, $ref/$dynamicRef, descend ...) when the meta-schema checks a schema
_FRAMES_PER_LEVEL = 16


@contextlib.contextmanager
def raised_recursion_limit() -> Iterator[None]:
    """Let a recursive walk over a value within :data:`MAX_DEPTH` (jsonschema validating a
    value, or checking a schema against its meta-schema) finish, however deep the caller's
    stack already is: Python's default limit of 1000 frames is less than 128 levels of
    jsonschema. Consume the walk's generators inside the block."""
    frame: FrameType | None = sys._getframe()
    depth = 0
    while frame is not None:
        depth += 1
        frame = frame.f_back
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, depth + MAX_DEPTH * _FRAMES_PER_LEVEL))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def long_integer_line(text: str) -> int | None:
    """The line (from 1) of the first integer in ``text`` with more than :data:`MAX_INT_DIGITS`
    digits (``_`` separators, as TOML and YAML allow, not counted), which ``int()`` refuses;
    None when there is none. For naming the line where a TOML or YAML reader gave up."""

    for found in re.finditer(r"[0-9][0-9_]*", text):
        if len(found[0]) > MAX_INT_DIGITS and len(found[0].replace("_", "")) > MAX_INT_DIGITS:
            return text.count("\n", 0, found.start()) + 1
    return None
