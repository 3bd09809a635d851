"""Where a JSON pointer lands in a JSON text, or a table in a TOML text: the line to name in an
error message.

Whole-document files (a scope, a tool lock, a report) are checked on their decoded value,
which knows pointers but not positions. :func:`line_of` walks the text to the member or
item the pointer names, skipping every other value with the standard library's C decoder,
so the cost is one pass over the text. tomllib gives no positions either: :func:`toml_lines`
scans a TOML text's lines for its table headers and keys.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import cache
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

from toolreplay.errors import InputError

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


#: one key of a TOML dotted key: a basic string, a literal string or a bare key
_TOML_KEY = re.compile(r"""\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*""")
#: where a TOML document, a table or an array of tables' item (by its index) is
TomlPath = tuple[str | int, ...]


def toml_lines(text: str) -> dict[TomlPath, int]:
    """The 1-based line each table header and key of a TOML text first appears on, by its path
    (an item of an array of tables by its index). A scan of lines, enough to name a line in a
    message: it skips multi-line strings, not multi-line arrays."""
    found: dict[TomlPath, int] = {}
    items: dict[TomlPath, int] = {}
    table: TomlPath = ()
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if fence is not None:
            fence = None if line.count(fence) % 2 else fence
            continue
        header = _toml_header(line)
        if header is not None:
            table = _table_path(*header, items)
            found.setdefault(table, number)
            continue
        keys = _assigned_keys(line)
        if keys:
            found.setdefault(table + keys, number)
        fence = _opened_fence(line)
    return found


def _assigned_keys(line: str) -> tuple[str, ...]:
    """The keys a line assigns a value to (none: it assigns none)."""
    keys, end = _dotted_key(line, 0)
    return keys if keys and line.startswith("=", end) else ()


def _opened_fence(line: str) -> str | None:
    """The quotes of a multi-line string a line leaves open (None: it leaves none open)."""
    return next((quotes for quotes in ('"""', "'''") if line.count(quotes) % 2), None)


def _toml_header(line: str) -> tuple[tuple[str, ...], bool] | None:
    """(the keys, whether it is an array of tables) of a table header line; None for another line."""
    text = line.strip()
    if not text.startswith("["):
        return None
    array = text.startswith("[[")
    keys, end = _dotted_key(text, 2 if array else 1)
    close = "]]" if array else "]"
    if not keys or not text.startswith(close, end):
        return None
    rest = text[end + len(close) :].strip()
    return (keys, array) if not rest or rest.startswith("#") else None


def _table_path(keys: tuple[str, ...], array: bool, items: dict[TomlPath, int]) -> TomlPath:
    """A header's path: through the last item of each array of tables it names (``items`` counts them)."""
    path: TomlPath = ()
    for number, key in enumerate(keys, start=1):
        path += (key,)
        if array and number == len(keys):
            items[path] = items.get(path, 0) + 1
        if path in items:
            path += (items[path] - 1,)
    return path


def _dotted_key(text: str, at: int) -> tuple[tuple[str, ...], int]:
    """The keys of the dotted key at ``at`` in ``text`` (none when there is none), and where it ends."""
    keys: list[str] = []
    while (match := _TOML_KEY.match(text, at)) is not None:
        basic, literal, bare = match.groups()
        keys.append(bare if bare is not None else literal if literal is not None else _basic(basic))
        at = match.end()
        if not text.startswith(".", at):
            return tuple(keys), at
        at += 1
    return (), at


def _basic(body: str) -> str:
    """A TOML basic string's body, unescaped (as JSON escapes it; left as it is where JSON cannot)."""
    try:
        return str(json.loads(f'"{body}"'))
    except ValueError:
        return body


def located(err: InputError, raw: bytes) -> InputError:
    """``err`` with the line its JSON pointer lands on in ``raw`` (when it had none)."""
    if err.line is not None or err.pointer is None:
        return err
    return InputError(err.problem, path=err.path, line=line_of(raw, err.pointer), pointer=err.pointer)
