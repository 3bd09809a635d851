"""Untrusted text as inert Markdown: one line, inside a code span or a fenced block, with a
zero-width joiner after every ``@`` and ``<`` (no mention, tag or ``<!--`` even in a raw read),
and ``|`` escaped inside a table cell. The Markdown report and its review parts both use it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from toolreplay.escape import one_line

#: Longest untrusted text shown in one cell; the full text is in the text and JSON reports.
MAX_CELL = 400
ZWJ = "\u200d"
_BACKTICKS = re.compile(r"`+")


def defuse(text: str) -> str:
    """Break ``@name`` mentions and ``<`` tags or comments with a zero-width joiner."""
    return text.replace("@", "@" + ZWJ).replace("<", "<" + ZWJ)


def md_code(text: str, *, in_table: bool = True, max_len: int | None = MAX_CELL) -> str:
    """Untrusted text as an inert inline code span (one line, backtick-safe fence)."""
    body = one_line(text)
    if max_len is not None and len(body) > max_len:
        body = body[: max_len - 1] + "…"
    body = defuse(body)
    if in_table:
        # GFM splits table cells before it parses code spans; an escaped pipe stays in the cell
        body = body.replace("|", "\\|")
    return _code_span(body)


def code_span(text: str) -> str:
    """Text already made one inert line (:func:`~toolreplay.escape.neutral`) as a code span."""
    return _code_span(text)


def _code_span(body: str) -> str:
    """``body`` between backtick fences longer than any run it holds (padded where it starts or
    ends with a backtick or a space, which the fence would take as its own)."""
    if not body:
        return "` `"
    longest = max((len(run) for run in _BACKTICKS.findall(body)), default=0)
    fence = "`" * (longest + 1)
    if body[0] in "` " or body[-1] in "` ":
        body = f" {body} "
    return f"{fence}{body}{fence}"


def fenced(lines: Sequence[str], info: str = "", indent: str = "") -> list[str]:
    """Lines of untrusted text as a fenced block (each on one line, defused)."""
    body = [defuse(one_line(line)) for line in lines]
    longest = max((len(run) for line in body for run in _BACKTICKS.findall(line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{indent}{fence}{info}", *(indent + line for line in body), indent + fence]
