"""The config's volatile rules as values, light enough for the configuration's start-up.

What they mean when two records are compared is :mod:`toolreplay.analyses.volatile`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import regress

#: the parts of a record a rule may address
PARTS = ("args", "response", "state")
_START = "must start with /args, /response or /state"


def _shown(text: str) -> str:
    """A string as a TOML basic string (which is also how a message quotes it): JSON's escapes,
    except that TOML wants DEL escaped and has no surrogate pairs, so the rest stays as it is."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007F")


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """One ``[[volatile]]`` table: ``tool`` (or ``*``), ``at`` and an optional ``pattern``."""

    tool: str
    at: str
    pattern: str | None = None

    @property
    def segments(self) -> tuple[tuple[str, ...], ...]:
        return parse_at(self.at)

    def toml(self, table: str = "volatile") -> str:
        """The rule as a TOML table to paste into a config (``table``: :func:`rules_table`)."""
        lines = [f"[[{table}]]", f"tool = {_shown(self.tool)}", f"at = {_shown(self.at)}"]
        if self.pattern is not None:
            lines.append(f"pattern = {_shown(self.pattern)}")
        return "\n".join(lines)


def rules_table(name: str | None) -> str:
    """The table a configuration file named ``name`` holds the volatile rules in: each rule is a
    ``[[tool.toolreplay.volatile]]`` in a pyproject.toml, a ``[[volatile]]`` in a toolreplay.toml."""
    return "tool.toolreplay.volatile" if name == "pyproject.toml" else "volatile"


def json_type(value: Any) -> str:
    """A JSON value's type as JSON Schema names it (integers and other numbers are both numbers)."""
    if value is None:
        return "null"
    for kind, name in _JSON_TYPES:
        if isinstance(value, kind):
            return name
    return "object"


#: the JSON types json_type tells apart, in the order it asks (a bool is an int)
_JSON_TYPES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (bool, "boolean"),
    ((int, float), "number"),
    (str, "string"),
    (list, "array"),
)


@lru_cache(maxsize=1024)
def parse_at(at: str) -> tuple[tuple[str, ...], ...]:
    """The tokens of each ``#``-separated segment of a rule's ``at``; ValueError saying why not.

    The first segment starts at the record (``/args``, ``/response`` or ``/state``); each
    further one is a pointer into the JSON text held by the string the one before names.
    """
    segments = []
    for number, text in enumerate(at.split("#")):
        if not text.startswith("/"):
            raise ValueError(_START if number == 0 else "must go on with / after #")
        segments.append(_tokens(text))
    if segments[0][0] not in PARTS:
        raise ValueError(_START)
    return tuple(segments)


def _tokens(pointer: str) -> tuple[str, ...]:
    """A JSON pointer's tokens, unescaped; ValueError for a ``~`` that escapes nothing."""
    tokens = []
    for token in pointer[1:].split("/"):
        if "~" in token.replace("~0", "").replace("~1", ""):
            raise ValueError(f"has {_shown(token)}: ~ must be written ~0 (and / as ~1)")
        tokens.append(token.replace("~1", "/").replace("~0", "~"))
    return tuple(tokens)


def rule_problem(rule: Rule) -> tuple[str, str] | None:
    """(the rule's key at fault, why) for a rule that cannot be used; None when it can."""
    try:
        parse_at(rule.at)
    except ValueError as err:
        return "at", f"at {_shown(rule.at)} {err}"
    if rule.pattern is not None:
        try:
            compiled_pattern(rule.pattern)
        except ValueError as err:
            why = f"is not an ECMA-262 regular expression: {err}"
            return "pattern", f"pattern {_shown(rule.pattern)} {why}"
    return None


def compiled_pattern(pattern: str) -> regress.Regex:
    """A rule's ``pattern`` compiled as ECMA-262 (cached); ValueError says why it is not one."""
    # regress (through toolreplay.ecma, with jsonschema) only for a rule with a pattern: the
    # configuration and replay read rules on the hooks' and the light commands' path
    from toolreplay.ecma import compiled, pattern_problem

    problem = pattern_problem(pattern)
    if problem is not None:
        raise ValueError(problem)
    return compiled(pattern)
