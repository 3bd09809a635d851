"""``--redact REGEX``: secrets replaced in every string of a call before it is written."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from toolreplay.errors import InputError

#: What a match is replaced with.
MASK = "[REDACTED]"


class Redactor:
    """Replace every match of any pattern in the string values of a JSON value.

    Object keys are left alone (two keys masked alike would collide). :attr:`count` is
    the number of string values that had at least one match. An empty match (``\\b``, a
    lookahead) masks nothing: only characters a pattern really matched are replaced.
    """

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = tuple(_compiled(pattern) for pattern in patterns)
        self.count = 0

    def __call__(self, value: Any) -> Any:
        """``value`` with every match masked (the input is not changed)."""
        if not self.patterns:
            return value
        if isinstance(value, str):
            return self._text(value)
        if isinstance(value, list):
            return [self(item) for item in value]
        if isinstance(value, dict):
            return {key: self(item) for key, item in value.items()}
        return value

    def _text(self, text: str) -> str:
        # every pattern is matched against the original text and the matched runs are merged:
        # one pattern's mask can neither hide a longer secret from another nor be masked again
        spans = sorted(
            match.span()
            for pattern in self.patterns
            for match in pattern.finditer(text)
            if match.end() > match.start()
        )
        if not spans:
            return text
        self.count += 1
        return _masked(text, spans)


def _compiled(pattern: str) -> re.Pattern[str]:
    """A ``--redact`` pattern compiled; refused when it is not one, or matches the empty string."""
    try:
        compiled = re.compile(pattern)
    except re.error as err:
        raise InputError(f"--redact {pattern!r} is not a valid regular expression: {err}") from err
    if compiled.fullmatch(""):
        raise InputError(f"--redact {pattern!r} matches the empty string; it would mask everything")
    return compiled


def _masked(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """``text`` with the (sorted, possibly overlapping) ``spans`` merged and each run masked once."""
    out: list[str] = []
    at = 0
    for start, end in spans:
        if start >= at:
            out += [text[at:start], MASK]
        at = max(at, end)
    out.append(text[at:])
    return "".join(out)
