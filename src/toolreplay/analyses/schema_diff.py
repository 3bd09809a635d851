"""Where two JSON Schemas differ, and whether each difference is breaking: judged from the
caller's side, a change is breaking when arguments the old schema accepted may be refused now
(docs/spec.md §3.5). A choice among keywords is a table: the families of keywords walked alike,
and a judge per constraining keyword."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolreplay.analyses.difference import ABSENT, differ
from toolreplay.canonical import canonical
from toolreplay.locate import pointer_token

#: keywords that describe rather than constrain: any change is compatible
ANNOTATIONS = frozenset(
    {
        "description",
        "title",
        "examples",
        "example",
        "$comment",
        "default",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$schema",
        "$id",
        "$anchor",
        "markdownDescription",
    }
)
#: upper bounds: lowering one is breaking
UPPER = frozenset({"maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains"})
#: lower bounds: raising one is breaking
LOWER = frozenset({"minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains"})
#: keywords whose value maps names to subschemas
SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
#: keywords whose value is one subschema; an absent one accepts everything
SCHEMA_ONE = frozenset(
    {
        "items",
        "additionalProperties",
        "additionalItems",
        "unevaluatedItems",
        "unevaluatedProperties",
        "contains",
        "propertyNames",
    }
)
#: keywords whose value is a list of alternatives: removing one is breaking
ALTERNATIVES = frozenset({"anyOf", "oneOf"})

Change = tuple[bool, str, Any, Any]


def diff_schema(old: Any, new: Any, pointer: str = "") -> list[Change]:
    """(breaking, pointer, old, new) for each difference between two input schemas.

    Judged from the caller's side: a change is breaking when it may refuse arguments
    the old schema accepted (a new required field, an enum value removed, a bound
    tightened, a type narrowed, a property or alternative removed, a new constraint);
    compatible when it only describes (description, title, default) or loosens (an
    enum value added, a bound loosened, a type widened, a constraint removed).
    Keywords toolreplay does not know are judged breaking when added or changed and
    compatible when removed.
    """
    out: list[Change] = []
    _walk(old, new, pointer, out)
    return out


def _walk(old: Any, new: Any, pointer: str, out: list[Change]) -> None:
    if canonical(old) == canonical(new):
        return
    if not (isinstance(old, dict) and isinstance(new, dict)):
        out.append((not _boolean_loosened(old, new), pointer, old, new))
        return
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key, ABSENT), new.get(key, ABSENT)
        if differ(a, b):
            _walk_keyword(key, a, b, f"{pointer}/{pointer_token(key)}", out)


def _boolean_loosened(old: Any, new: Any) -> bool:
    """Boolean schemas: true accepts all, false nothing; anything else is a new constraint."""
    return new is True or (old is False and new is not False)


def _walk_keyword(key: str, a: Any, b: Any, at: str, out: list[Change]) -> None:
    """The differences under one keyword whose values differ (either may be ``ABSENT``): the first
    of the keyword families that takes it walks it, else it is a constraint judged whole."""
    if not any(walk(key, a, b, at, out) for walk in _FAMILIES):
        out.append((_breaking(key, a, b), at, a, b))


def _annotation(key: str, a: Any, b: Any, at: str, out: list[Change]) -> bool:
    """A keyword that describes rather than constrains (or an ``x-`` extension): compatible."""
    if key not in ANNOTATIONS and not key.startswith("x-"):
        return False
    out.append((False, at, a, b))
    return True


def _schema_map(key: str, a: Any, b: Any, at: str, out: list[Change]) -> bool:
    """A map of names to subschemas (an absent one is empty)."""
    a, b = _or_empty(a), _or_empty(b)
    if key not in SCHEMA_MAPS or not isinstance(a, dict) or not isinstance(b, dict):
        return False
    _walk_map(a, b, at, out)
    return True


def _subschema(key: str, a: Any, b: Any, at: str, out: list[Change]) -> bool:
    """One subschema (an absent one accepts everything)."""
    if key not in SCHEMA_ONE:
        return False
    _walk(True if a is ABSENT else a, True if b is ABSENT else b, at, out)
    return True


def _paired(key: str, a: Any, b: Any, at: str, out: list[Change]) -> bool:
    """Lists of subschemas of one length, compared position by position."""
    if key not in _PAIRED or not _same_length_lists(a, b):
        return False
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        _walk(x, y, f"{at}/{i}", out)
    return True


def _alternatives(key: str, a: Any, b: Any, at: str, out: list[Change]) -> bool:
    """Lists of alternatives of different lengths: removing one is breaking."""
    if key not in ALTERNATIVES or not isinstance(a, list) or not isinstance(b, list):
        return False
    kept = {canonical(x) for x in b}
    out.append((any(canonical(x) not in kept for x in a), at, a, b))
    return True


#: keywords whose lists of subschemas are compared position by position when their lengths agree
_PAIRED = ALTERNATIVES | {"allOf"}

#: the keyword families, in the order they are asked whether they take a keyword
_FAMILIES: tuple[Callable[[str, Any, Any, str, list[Change]], bool], ...] = (
    _annotation,
    _schema_map,
    _subschema,
    _paired,
    _alternatives,
)


def _same_length_lists(a: Any, b: Any) -> bool:
    return isinstance(a, list) and isinstance(b, list) and len(a) == len(b)


def _walk_map(a: dict[str, Any], b: dict[str, Any], at: str, out: list[Change]) -> None:
    """A map of names to subschemas: a name added is compatible, one removed breaking."""
    for sub in sorted(set(a) | set(b)):
        sub_at = f"{at}/{pointer_token(sub)}"
        if sub not in a:
            out.append((False, sub_at, ABSENT, b[sub]))
        elif sub not in b:
            out.append((True, sub_at, a[sub], ABSENT))
        else:
            _walk(a[sub], b[sub], sub_at, out)


def _or_empty(value: Any) -> Any:
    return {} if value is ABSENT else value


def _breaking(key: str, old: Any, new: Any) -> bool:
    """Whether a constraint keyword's change may refuse arguments the old value accepted."""
    if old is ABSENT:
        return True  # a new constraint
    if new is ABSENT:
        return False  # a constraint dropped
    judge = _JUDGES.get(key)
    return judge(old, new) if judge is not None else True


def _required_added(old: Any, new: Any) -> bool:
    if isinstance(old, list) and isinstance(new, list):
        return bool(_canonical_set(new) - _canonical_set(old))
    return True


def _enum_value_removed(old: Any, new: Any) -> bool:
    if isinstance(old, list) and isinstance(new, list):
        return bool(_canonical_set(old) - _canonical_set(new))
    return True


def _canonical_set(values: list[Any]) -> set[str]:
    return {canonical(x) for x in values}


def _type_narrowed(old: Any, new: Any) -> bool:
    return not _covers(_types(new), _types(old))


def _upper_lowered(old: Any, new: Any) -> bool:
    return bool(new < old) if _number(old) and _number(new) else True


def _lower_raised(old: Any, new: Any) -> bool:
    return bool(new > old) if _number(old) and _number(new) else True


def _unique_items_added(old: Any, new: Any) -> bool:
    return bool(new) if isinstance(old, bool) and isinstance(new, bool) else True


#: how a change of each constraint keyword is judged, when both sides have it; any other is breaking
_JUDGES: dict[str, Callable[[Any, Any], bool]] = {
    "required": _required_added,
    "enum": _enum_value_removed,
    "type": _type_narrowed,
    "uniqueItems": _unique_items_added,
    **dict.fromkeys(UPPER, _upper_lowered),
    **dict.fromkeys(LOWER, _lower_raised),
}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _types(value: Any) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, list):
        return {t for t in value if isinstance(t, str)}
    return set()


def _covers(wide: set[str], narrow: set[str]) -> bool:
    """Whether every type in ``narrow`` is accepted by ``wide`` (a number accepts an integer)."""
    return all(t in wide or (t == "integer" and "number" in wide) for t in narrow)


# -- transcripts ------------------------------------------------------------------------------------
