"""How a live answer is matched with a recorded one: by its shape, and through the masks of a
redacted recording (docs/capture.md)."""

from __future__ import annotations

from typing import Any

from toolreplay.canonical import canonical
from toolreplay.capture.redact import MASK

#: the values a shape keeps: whether the call failed, and what kind each content block is
_SHAPE_VALUES = frozenset({"isError", "type"})


def shape(value: Any, key: str = "") -> Any:
    """A JSON value's shape: objects keep their keys, arrays the set of their items' shapes,
    scalars become their JSON type (``isError`` and a ``type`` member keep their values)."""
    if isinstance(value, dict):
        return {k: shape(v, k) for k, v in value.items()}
    if isinstance(value, list):
        # each item's shape made once: made twice, nested arrays cost twice as much at each level
        shapes = {canonical(found): found for found in map(shape, value)}
        return [shapes[text] for text in sorted(shapes)]
    return _scalar_shape(value, key)


def _scalar_shape(value: Any, key: str) -> Any:
    """A scalar's shape: its JSON type, or itself when it is the value of a key a shape keeps."""
    if key in _SHAPE_VALUES and isinstance(value, str | bool):
        return value
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "null" if value is None else "string"


def unmask(recorded: Any, live: Any) -> Any:
    """``live`` with each string that a redacted recorded string stands for replaced by it.

    A recorded string with ``[REDACTED]`` in it stands for any live string that has the
    same text around non-empty runs where the masks are.
    """
    if isinstance(recorded, str) and isinstance(live, str):
        return _unmask_text(recorded, live)
    if isinstance(recorded, dict) and isinstance(live, dict):
        return {key: unmask(recorded.get(key), value) for key, value in live.items()}
    if isinstance(recorded, list) and isinstance(live, list):
        return _unmask_items(recorded, live)
    return live


def _unmask_items(recorded: list[Any], live: list[Any]) -> list[Any]:
    """A live array unmasked item by item, when it has as many items as the recorded one."""
    if len(recorded) != len(live):
        return live
    return [unmask(was, now) for was, now in zip(recorded, live, strict=True)]


def _unmask_text(recorded: str, live: str) -> str:
    """The recorded string, when it is redacted and ``live`` is what it stands for; else ``live``."""
    return recorded if MASK in recorded and _fits(recorded.split(MASK), live) else live


def _fits(parts: list[str], live: str) -> bool:
    """Whether ``live`` is ``parts`` joined by non-empty runs (each part found leftmost: linear time)."""
    if not live.startswith(parts[0]):
        return False
    at = len(parts[0])
    for part in parts[1:-1]:
        found = live.find(part, at + 1)
        if found < 0:
            return False
        at = found + len(part)
    return len(live) - len(parts[-1]) > at and live.endswith(parts[-1])
