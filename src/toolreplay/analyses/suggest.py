"""Volatile rules suggested from answers to the same call asked several times (``probe --suggest-volatile``).

Where the answers differ, the narrowest rule that makes them compare equal is proposed: a
string that holds a JSON text is entered with ``#``; in a string, the first of
:data:`CANDIDATES` whose matches are the only difference becomes the ``pattern``; anything
else is masked whole. Array indices become ``*``. The rules are checked by masking the
answers with them (:mod:`toolreplay.analyses.volatile`), so a suggestion is what the
comparison itself accepts; what no rule can make equal (a member present in some answers
only, a value whose JSON type changes) is said, not hidden.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from toolreplay.analyses.difference import clipped
from toolreplay.analyses.volatile import Volatile, trusted_matches
from toolreplay.canonical import canonical, canonical_str, decode
from toolreplay.errors import InputError
from toolreplay.locate import pointer_token
from toolreplay.transcript import make_record
from toolreplay.volatile_rules import Rule, json_type, rules_table

#: (what it is, ECMA-262 pattern), narrowest first: tried in this order on a differing string
CANDIDATES: tuple[tuple[str, str], ...] = (
    ("a date and time", r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"),
    ("a UUID", r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"),
    ("a SHA-256 digest", r"[0-9a-f]{64}"),
    ("a SHA-1 digest (a git commit)", r"[0-9a-f]{40}"),
    ("a number", r"-?\d+(?:\.\d+)?"),
)
#: values shown per suggestion, each cut to this many characters
_SHOWN, _LIMIT = 3, 80


@dataclass(frozen=True, slots=True, kw_only=True)
class Suggestion:
    """A rule, and the values the answers had where it masks (or a place no rule can mask)."""

    rule: Rule | None
    at: str
    seen: tuple[str, ...]
    why: str = ""


def suggest(tool: str, answers: Sequence[dict[str, Any]]) -> list[Suggestion]:
    """The rules that make ``answers`` (responses to one call of ``tool``) compare equal."""
    found: dict[str, Suggestion] = {}
    for at, values in _differences(list(answers), "/response"):
        if at not in found:
            found[at] = _rule(tool, at, values)
    out = sorted(found.values(), key=lambda s: s.at)
    return out + _still_differ(tool, answers, out)


def _still_differ(tool: str, answers: Sequence[dict[str, Any]], found: list[Suggestion]) -> list[Suggestion]:
    """The answers as a place no rule fits when they still differ under the rules found."""
    rules = [s.rule for s in found if s.rule is not None]
    if not rules or _stable(tool, answers, rules):
        return []
    return [Suggestion(rule=None, at="/response", seen=(), why="the answers still differ under these rules")]


def _differences(values: list[Any], at: str) -> Iterator[tuple[str, list[Any]]]:
    """(place, the values there) of each leaf where the values are not all the same."""
    if len({canonical(value) for value in values}) == 1:
        return
    parts = _parts(values, at)
    if parts is None:
        yield at, values
        return
    for place, inner in parts:
        yield from _differences(inner, place)


_Parts = list[tuple[str, list[Any]]]


def _parts(values: list[Any], at: str) -> _Parts | None:
    """The values one level in, place by place, when they have the same shape: the members of objects
    with the same keys, the items of arrays of one length, the JSON texts strings hold; None at a leaf."""
    for split in (_members, _items, _held):
        parts = split(values, at)
        if parts is not None:
            return parts
    return None


def _members(values: list[Any], at: str) -> _Parts | None:
    if not _all(values, dict) or any(v.keys() != values[0].keys() for v in values):
        return None
    return [(f"{at}/{pointer_token(key)}", [v[key] for v in values]) for key in sorted(values[0])]


def _items(values: list[Any], at: str) -> _Parts | None:
    if not _all(values, list) or len({len(v) for v in values}) != 1:
        return None
    return [(f"{at}/*", [v[i] for v in values]) for i in range(len(values[0]))]


def _held(values: list[Any], at: str) -> _Parts | None:
    if not _all(values, str):
        return None
    held = [_json(v) for v in values]
    return [(f"{at}#", held)] if _all(held, (dict, list)) else None


def _all(values: list[Any], kind: type | tuple[type, ...]) -> bool:
    return all(isinstance(v, kind) for v in values)


def _json(text: str) -> Any:
    try:
        return decode(text.encode("utf-8", "surrogatepass"), what="JSON text")
    except (InputError, UnicodeEncodeError):
        return None


def _rule(tool: str, at: str, values: list[Any]) -> Suggestion:
    seen = tuple(clipped(v, _LIMIT) for v in values[:_SHOWN])
    why = _unmaskable(at, values)
    if why is not None:
        return Suggestion(rule=None, at=at.rstrip("#"), seen=seen, why=why)
    what, pattern = _narrowest(values)
    return Suggestion(rule=Rule(tool=tool, at=at, pattern=pattern), at=at, seen=seen, why=what)


def _unmaskable(at: str, values: list[Any]) -> str | None:
    """Why no rule makes the values at ``at`` equal; None when one does."""
    if at.endswith("#"):
        return "its members differ"
    if len({json_type(v) for v in values}) > 1:
        return "its members differ" if isinstance(values[0], dict) else "its JSON type changes"
    return "members come and go" if _members_change(values) else None


def _members_change(values: list[Any]) -> bool:
    """Whether objects have members some of the others lack."""
    return isinstance(values[0], dict) and len({frozenset(v) for v in values}) > 1


def _narrowest(values: list[Any]) -> tuple[str, str | None]:
    """The first of :data:`CANDIDATES` whose matches are all that differs in the strings (what it is,
    its pattern), else the whole value (no pattern)."""
    if _all(values, str):
        for what, pattern in CANDIDATES:
            if _only_matches_differ(pattern, values):
                return what, pattern
    return "the whole value", None


def _only_matches_differ(pattern: str, values: list[str]) -> bool:
    """Whether each value holds a match and, with the matches masked, all are the same."""
    shapes = set()
    for value in values:
        cut = trusted_matches(pattern, value)
        if not cut:
            return False
        shapes.add(tuple(piece if not matched else None for piece, matched in cut))
    return len(shapes) == 1


def _stable(tool: str, answers: Sequence[dict[str, Any]], rules: list[Rule]) -> bool:
    volatile = Volatile(rules)
    texts = {
        volatile.texts(make_record(index=0, tool=tool, args={}, response=a), None).response for a in answers
    }
    return len(texts) == 1


def toml(suggestions: dict[str, list[Suggestion]], repeat: int, config: str | None) -> str:
    """The suggestions as TOML to paste into the configuration file ``config`` (None: no file was
    found), ``tool -> suggestions``, values in comments: as that file holds rules."""
    table = rules_table(None if config is None else os.path.basename(config))
    lines = _head(suggestions, repeat, config)
    for tool, found in sorted(suggestions.items()):
        for s in found:
            lines += ["", *_suggested(tool, s, table)]
    return "\n".join(lines) + "\n"


def _head(suggestions: dict[str, list[Suggestion]], repeat: int, config: str | None) -> list[str]:
    """The comments above the suggestions: how they were found, and where their rules go."""
    lines = [f"# toolreplay probe --suggest-volatile: each read-only call asked {repeat} times"]
    if not any(suggestions.values()):
        lines.append("# every answer was the same each time: no volatile rule is needed")
    elif any(s.rule is not None for found in suggestions.values() for s in found):
        lines.append(_where(config))
    return lines


def _suggested(tool: str, s: Suggestion, table: str) -> list[str]:
    """One suggestion: a comment saying what changed, and its rule (when one fits)."""
    seen = ", ".join(s.seen)
    if s.rule is None:
        return [f"# {canonical_str(tool)} at {canonical_str(s.at)}: no rule fits ({s.why}): {seen}"]
    return [
        f"# {canonical_str(tool)}: {s.why} changes at {canonical_str(s.at)}: seen {seen}",
        s.rule.toml(table),
    ]


def _where(config: str | None) -> str:
    """The comment that says where the rules go."""
    if config is not None:
        return f"# to paste into {config}"
    return (
        f"# no configuration found: paste into a toolreplay.toml as they are, or into pyproject.toml"
        f" with each [[{rules_table(None)}]] written [[{rules_table('pyproject.toml')}]]"
    )
