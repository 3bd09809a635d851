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

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from toolreplay.analyses.volatile import Volatile, _matches
from toolreplay.canonical import canonical, canonical_str, decode
from toolreplay.errors import InputError
from toolreplay.locate import pointer_token
from toolreplay.transcript import make_record
from toolreplay.volatile_rules import Rule, json_type

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
    rules = [s.rule for s in out if s.rule is not None]
    if rules and not _stable(tool, answers, rules):
        out.append(
            Suggestion(rule=None, at="/response", seen=(), why="the answers still differ under these rules")
        )
    return out


def _differences(values: list[Any], at: str) -> Iterator[tuple[str, list[Any]]]:
    """(place, the values there) of each leaf where the values are not all the same."""
    if len({canonical(value) for value in values}) == 1:
        return
    if all(isinstance(v, dict) for v in values):
        keys = set(values[0])
        if all(set(v) == keys for v in values):
            for key in sorted(keys):
                yield from _differences([v[key] for v in values], f"{at}/{pointer_token(key)}")
            return
    elif all(isinstance(v, list) for v in values) and len({len(v) for v in values}) == 1:
        for i in range(len(values[0])):
            yield from _differences([v[i] for v in values], f"{at}/*")
        return
    elif all(isinstance(v, str) for v in values):
        held = [_json(v) for v in values]
        if all(isinstance(h, (dict, list)) for h in held):
            yield from _differences(held, f"{at}#")
            return
    yield at, values


def _json(text: str) -> Any:
    try:
        return decode(text.encode("utf-8", "surrogatepass"), what="JSON text")
    except (InputError, UnicodeEncodeError):
        return None


def _rule(tool: str, at: str, values: list[Any]) -> Suggestion:
    seen = tuple(_clip(canonical(v)) for v in values[:_SHOWN])
    if at.endswith("#") or len({json_type(v) for v in values}) > 1:
        why = (
            "its members differ"
            if at.endswith("#") or isinstance(values[0], dict)
            else "its JSON type changes"
        )
        return Suggestion(rule=None, at=at.rstrip("#"), seen=seen, why=why)
    if isinstance(values[0], dict) and len({frozenset(v) for v in values}) > 1:
        return Suggestion(rule=None, at=at, seen=seen, why="members come and go")
    if all(isinstance(v, str) for v in values):
        for what, pattern in CANDIDATES:
            if _only_matches_differ(pattern, values):
                return Suggestion(rule=Rule(tool=tool, at=at, pattern=pattern), at=at, seen=seen, why=what)
    return Suggestion(rule=Rule(tool=tool, at=at), at=at, seen=seen, why="the whole value")


def _only_matches_differ(pattern: str, values: list[str]) -> bool:
    """Whether each value holds a match and, with the matches masked, all are the same."""
    shapes = set()
    for value in values:
        cut = _matches(pattern, value)
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


def _clip(text: str) -> str:
    return text if len(text) <= _LIMIT else text[: _LIMIT - 3] + "..."


def toml(suggestions: dict[str, list[Suggestion]], repeat: int) -> str:
    """The suggestions as TOML to paste into the config (``tool -> suggestions``), values in comments."""
    lines = [f"# toolreplay probe --suggest-volatile: each read-only call asked {repeat} times"]
    if not any(suggestions.values()):
        lines.append("# every answer was the same each time: no volatile rule is needed")
    for tool, found in sorted(suggestions.items()):
        for s in found:
            lines.append("")
            seen = ", ".join(s.seen)
            if s.rule is None:
                lines.append(
                    f"# {canonical_str(tool)} at {canonical_str(s.at)}: no rule fits ({s.why}): {seen}"
                )
                continue
            lines.append(f"# {canonical_str(tool)}: {s.why} changes at {canonical_str(s.at)}: seen {seen}")
            lines.append(s.rule.toml())
    return "\n".join(lines) + "\n"
