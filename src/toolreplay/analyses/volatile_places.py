"""Where a volatile rule's place lands in a record's values (docs/spec.md §3.6).

A place is a JSON pointer in which ``*`` stands for any one member or item, and ``#`` steps
into a string holding a JSON text. These walks find the values it names; masking them is
:mod:`toolreplay.analyses.volatile`'s job.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from toolreplay.canonical import decode
from toolreplay.errors import InputError


def landings(value: Any, tokens: Sequence[str], rest: Sequence[Sequence[str]]) -> Iterator[str]:
    """The strings a rule's place lands on in a record's values, as they were recorded: every string
    a pattern may have to cut there (an earlier rule may have masked some of them whole)."""
    if tokens:
        for child in _children(value, tokens[0]):
            yield from landings(child, tokens[1:], rest)
    elif rest:
        if isinstance(value, str):
            yield from _landings_in_text(value, rest)
    elif isinstance(value, str):
        yield value


def _children(value: Any, token: str) -> list[Any]:
    """The values a pointer token names in ``value`` (none in a string, a number or null)."""
    if isinstance(value, dict):
        return [value[key] for key in named_keys(value, token)]
    if isinstance(value, list):
        return [value[i] for i in named_indices(token, len(value))]
    return []


def _landings_in_text(text: str, rest: Sequence[Sequence[str]]) -> Iterator[str]:
    """The landings of the rest of a rule's place in the JSON value ``text`` holds (none: it holds none)."""
    try:
        held = decode(text.encode("utf-8", "surrogatepass"), what="JSON text")
    except (InputError, UnicodeEncodeError):
        return
    yield from landings(held, rest[0], rest[1:])


def named_keys(value: dict[str, Any], token: str) -> list[str]:
    """The members a pointer token names: every one for ``*``, else the one of that name, if any."""
    if token == "*":
        return list(value)
    return [token] if token in value else []


def named_indices(token: str, length: int) -> range:
    """The items of an array of ``length`` a pointer token names: every one for ``*``, else the one
    at that index (a number without leading zeros), if any."""
    if token == "*":
        return range(length)
    if token.isdigit() and (token == "0" or not token.startswith("0")) and int(token) < length:
        return range(int(token), int(token) + 1)
    return range(0)
