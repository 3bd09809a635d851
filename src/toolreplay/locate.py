"""Where a JSON pointer lands in a JSON text: the line to name in an error message.

Whole-document files (a scope, a tool lock, a report) are checked on their decoded value,
which knows pointers but not positions. :func:`line_of` walks the text to the member or
item the pointer names, skipping every other value with the standard library's C decoder,
so the cost is one pass over the text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import cache
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

_SPACE = re.compile(r"[ \t\n\r]*")


def pointer_token(key: object) -> str:
    """One reference token of a JSON pointer (RFC 6901): ``~`` as ``~0``, ``/`` as ``~1``."""
    return str(key).replace("~", "~0").replace("/", "~1")


def pointer_of(parts: Iterable[object]) -> str:
    """The JSON pointer of a path (keys and indices); ``/`` for the whole document."""
    return "".join("/" + pointer_token(p) for p in parts) or "/"


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def position_of(text: str, pointer: str) -> int | None:
    """Offset in ``text`` where the value at ``pointer`` starts (its member's key for an
    object member), or None when the text does not hold it."""
    at = _SPACE.match(text, 0).end()  # type: ignore[union-attr]
    start = at
    try:
        for part in _tokens(pointer):
            if text.startswith("{", at):
                at, start = _member(text, at + 1, part)
            elif text.startswith("[", at) and part.isdigit():
                at = start = _item(text, at + 1, int(part))
            else:
                return None
    except (ValueError, IndexError):
        return None
    return start


def _tokens(pointer: str) -> list[str]:
    """A JSON pointer's reference tokens, unescaped (none for the whole document)."""
    if pointer in ("", "/"):
        return []
    return [_unescape(p) for p in pointer.split("/")[1:]]


@cache
def _decoder() -> Any:
    return json.JSONDecoder()


def _member(text: str, at: int, key: str) -> tuple[int, int]:
    """(start of the value, start of the key) of member ``key`` in the object whose body starts at ``at``."""

    decoder = _decoder()
    while True:
        at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
        if text[at] != '"':
            raise ValueError("no such member")
        name, after = scanstring(text, at + 1)
        key_at = at
        at = _SPACE.match(text, after).end()  # type: ignore[union-attr]
        at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]  # past ':'
        if name == key:
            return at, key_at
        _, at = decoder.raw_decode(text, at)
        at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
        if text[at] != ",":
            raise ValueError("no such member")
        at += 1


def _item(text: str, at: int, index: int) -> int:
    decoder = _decoder()
    for _ in range(index):
        at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
        _, at = decoder.raw_decode(text, at)
        at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
        if text[at] != ",":
            raise ValueError("no such item")
        at += 1
    return _SPACE.match(text, at).end()  # type: ignore[union-attr]


def line_of(raw: bytes, pointer: str | None) -> int | None:
    """1-based line of the value ``pointer`` names in the JSON text ``raw``; None if unknown."""
    if pointer is None:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    offset = position_of(text, pointer)
    return None if offset is None else text.count("\n", 0, offset) + 1
