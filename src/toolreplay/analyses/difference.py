"""Where two JSON values first differ, and how both are shown there (docs/spec.md §3.4).

The one excerpt rule every message that quotes two values uses (``diff``, ``check``, ``probe``,
the PR comment's side by side, the library's errors): a value is its canonical JSON; a long one
is cut around the first character where the two texts differ, both sides at the same place,
with ``...`` where something was cut. A string holding a JSON text on both sides is entered
(``#`` in the pointer, as the volatile rules write it), so the difference is the member that
differs, not the text's first 60 characters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from toolreplay.canonical import canonical, decode
from toolreplay.errors import InputError
from toolreplay.locate import pointer_token


class _Absent:
    def __repr__(self) -> str:
        return "ABSENT"


#: stands for a value present on one side only of a difference (the one name every module uses)
ABSENT: Any = _Absent()
#: characters of a value shown before its first difference, when it is cut there
LEAD = 20
#: what marks a cut
CUT = "..."


def first_difference(old: Any, new: Any, pointer: str = "") -> tuple[str, Any, Any] | None:
    """The first JSON pointer (in canonical key order) where two values differ, with both values
    (the first of :func:`differences`)."""
    return next(differences(old, new, pointer), None)


def differences(old: Any, new: Any, pointer: str = "") -> Iterator[tuple[str, Any, Any]]:
    """Every JSON pointer where two values differ, with both values, in canonical key order.

    Objects are compared member by member and arrays item by item; a member or an item present on
    one side only is reported with :data:`ABSENT` on the other. Two strings that both hold a JSON
    object or array are compared as those values (the pointer goes on after a ``#``); when only
    their spelling differs, the strings themselves are the difference.
    """
    walk = _WALKS.get((type(old), type(new)), _leaf)
    yield from walk(old, new, pointer)


def _members(old: dict[str, Any], new: dict[str, Any], pointer: str) -> Iterator[tuple[str, Any, Any]]:
    for key in sorted(old.keys() | new.keys()):
        yield from differences(old.get(key, ABSENT), new.get(key, ABSENT), f"{pointer}/{pointer_token(key)}")


def _items(old: list[Any], new: list[Any], pointer: str) -> Iterator[tuple[str, Any, Any]]:
    for i in range(max(len(old), len(new))):
        a = old[i] if i < len(old) else ABSENT
        b = new[i] if i < len(new) else ABSENT
        yield from differences(a, b, f"{pointer}/{i}")


def _texts(old: str, new: str, pointer: str) -> Iterator[tuple[str, Any, Any]]:
    if old == new:
        return
    inside = False
    for found in _in_texts(old, new, pointer):  # lazily: first_difference takes only the first
        inside = True
        yield found
    if not inside:
        yield (pointer, old, new)


def _leaf(old: Any, new: Any, pointer: str) -> Iterator[tuple[str, Any, Any]]:
    if differ(old, new):
        yield (pointer, old, new)


#: how two values of these types are walked (any other pair is a leaf)
_WALKS: dict[tuple[type, type], Callable[[Any, Any, str], Iterator[tuple[str, Any, Any]]]] = {
    (dict, dict): _members,
    (list, list): _items,
    (str, str): _texts,
}


def differ(old: Any, new: Any) -> bool:
    """Whether two leaves differ (one side absent, or other JSON)."""
    return old is ABSENT or new is ABSENT or canonical(old) != canonical(new)


def _in_texts(old: str, new: str, pointer: str) -> Iterator[tuple[str, Any, Any]]:
    """The differences inside two strings that both hold a JSON object or array (none: they do
    not, or they differ only in how the same value is spelled)."""
    held = _held(old), _held(new)
    if held[0] is None or held[1] is None or type(held[0]) is not type(held[1]):
        return iter(())
    return differences(held[0], held[1], pointer + "#")


def _held(text: str) -> dict[str, Any] | list[Any] | None:
    """The JSON object or array a string holds (None: it holds none)."""
    if not text.lstrip().startswith(("{", "[")):
        return None
    try:
        value = decode(text.encode("utf-8", "surrogatepass"), what="JSON text")
    except (InputError, UnicodeEncodeError):
        return None
    return value if isinstance(value, dict | list) else None


def excerpts(old: Any, new: Any, limit: int, *, absent: str = "no value") -> tuple[str, str]:
    """Both values as canonical JSON (``absent`` for :data:`ABSENT`), each at most ``limit``
    characters and the marks of a cut: from the start when the first difference shows there, else
    both from :data:`LEAD` characters before it.

    Canonical JSON is ASCII with every control character escaped, so each excerpt is one safe
    line; a cut never splits an escape.
    """
    a, b = _shown(old, absent), _shown(new, absent)
    if len(a) <= limit and len(b) <= limit:
        return a, b
    start = _excerpt_start(a, b, limit, either_absent=old is ABSENT or new is ABSENT)
    return _cut(a, start, limit), _cut(b, start, limit)


def _shown(value: Any, absent: str) -> str:
    return absent if value is ABSENT else canonical(value)


def _excerpt_start(a: str, b: str, limit: int, *, either_absent: bool) -> int:
    """Where both excerpts start: 0 when the first difference shows from there, else :data:`LEAD`
    characters before it (on the start of an escape)."""
    at = 0 if either_absent or a == b else _first_char(a, b)
    return 0 if at + LEAD <= limit - len(CUT) else _unit_start(a, at - LEAD)


def clipped(value: Any, limit: int, *, absent: str = "no value") -> str:
    """One value as :func:`excerpts` shows it (from its start)."""
    return excerpts(value, value, limit, absent=absent)[0]


def _first_char(a: str, b: str) -> int:
    """Where two texts first differ (the shorter one's length when it starts the other)."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def _cut(text: str, start: int, limit: int) -> str:
    """``text`` from ``start``, at most ``limit`` characters of it, each cut marked."""
    head = CUT if start > 0 else ""
    if len(text) - start <= limit:
        return head + text[start:]
    stop = _unit_start(text, start + limit - len(CUT))
    return head + text[start:stop] + CUT


def _unit_start(text: str, position: int) -> int:
    """``position``, or the start of the escape (``\\n``, ``\\u00e9``) it falls inside."""
    position = max(0, min(position, len(text)))
    for back in range(1, 6):
        q = position - back
        if q < 0:
            break
        if text[q] == "\\" and _escapes(text, q):
            return _unless_inside(text, q, position)
    return position


def _unless_inside(text: str, q: int, position: int) -> int:
    """``q``, where an escape starts, when ``position`` falls inside that escape; else ``position``."""
    size = 6 if text[q + 1 : q + 2] == "u" else 2
    return q if q + size > position else position


def _escapes(text: str, q: int) -> bool:
    """Whether the backslash at ``q`` starts an escape (an even number of backslashes before it)."""
    run = 0
    while q - run - 1 >= 0 and text[q - run - 1] == "\\":
        run += 1
    return run % 2 == 0
