"""The config's volatile rules as values, light enough for the configuration's start-up, and the
volatile tables and rule keys a configuration file holds where they are not read.

What they mean when two records are compared is :mod:`toolreplay.analyses.volatile`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from toolreplay.errors import InputError
from toolreplay.locate import TomlPath, toml_lines

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


#: a volatile rule's keys
_RULE_KEYS = ("tool", "at", "pattern")
#: where a volatile table may be put by mistake: the file's top level, [toolreplay], [tool.toolreplay]
_NEAR_RULES: tuple[tuple[str, ...], ...] = ((), ("toolreplay",), ("tool", "toolreplay"))


def _rules_at(name: str) -> tuple[str, ...]:
    """Where a configuration file named ``name`` holds the volatile rules, as a path."""
    return tuple(rules_table(name).split("."))


def config_home(name: str) -> tuple[str, ...]:
    """Where a configuration file named ``name`` holds the configuration."""
    return ("tool", "toolreplay") if name == "pyproject.toml" else ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Unread:
    """A volatile table, or a key of a rule, that a configuration file holds where it is not read."""

    at: TomlPath
    problem: str
    #: in the table toolreplay reads (which then cannot be loaded), not beside it (a warning)
    inside: bool


def unread_volatile(data: dict[str, Any], name: str) -> list[Unread]:
    """What a configuration file named ``name`` (parsed as ``data``) holds of volatile rules that is
    not read: a table beside the configuration's (rules pasted as ``[[volatile]]`` into a
    pyproject.toml) or of a mistyped name, and a rule's keys that are not a rule's."""
    return [*_misplaced_tables(data, name), *_unknown_rule_keys(data, name)]


def _misplaced_tables(data: dict[str, Any], name: str) -> Iterator[Unread]:
    home, read = config_home(name), _rules_at(name)
    for prefix in _NEAR_RULES:
        for key, value in _table_at(data, prefix).items():
            path = (*prefix, key)
            if path != read and _near(key.lower(), "volatile"):
                where = f"in {name} volatile rules go in [[{_dotted(read)}]]"
                problem = f"{_header(path, value)} is not read: {where}"
                yield Unread(at=path, problem=problem, inside=path[: len(home)] == home)


def _unknown_rule_keys(data: dict[str, Any], name: str) -> Iterator[Unread]:
    read = _rules_at(name)
    rules = _table_at(data, read[:-1]).get("volatile")
    for number, rule in enumerate(rules if isinstance(rules, list) else ()):
        for key in rule if isinstance(rule, dict) else ():
            if key not in _RULE_KEYS:
                problem = f"volatile rule {number + 1}: key {json.dumps(key)} is not read: {_RULE_KEYS_ARE}"
                yield Unread(at=(*read, number, key), problem=problem, inside=True)


_RULE_KEYS_ARE = "a rule's keys are tool, at and pattern"


def unread_error(found: Unread, raw: bytes, source: str) -> InputError:
    """What is not read, as one line naming ``source`` (the file, whose bytes are ``raw``) and its line."""
    return InputError(found.problem, path=source, line=_line_of(raw, found.at))


def _line_of(raw: bytes, at: TomlPath) -> int | None:
    """The line of the table or key at ``at`` in a TOML text (an array of tables' first item)."""
    lines = toml_lines(raw.decode("utf-8", "replace"))
    return lines.get(at, lines.get((*at, 0)))


def _table_at(data: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    """The table at ``path`` (empty where there is none)."""
    for key in path:
        inner = data.get(key)
        data = inner if isinstance(inner, dict) else {}
    return data


def _header(path: TomlPath, value: Any) -> str:
    """How TOML writes the table (or key) at ``path``: ``[[a.b]]`` for an array, ``[a.b]`` for a table."""
    if isinstance(value, list):
        return f"[[{_dotted(path)}]]"
    return f"[{_dotted(path)}]" if isinstance(value, dict) else _dotted(path)


def _dotted(path: TomlPath) -> str:
    return ".".join(
        key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key) for key in map(str, path)
    )


def _near(word: str, target: str) -> bool:
    """Whether ``word`` is ``target`` but for at most two letters added, left out or changed."""
    row = list(range(len(target) + 1))
    for number, letter in enumerate(word, start=1):
        previous, row[0] = row[0], number
        for at, wanted in enumerate(target, start=1):
            previous, row[at] = row[at], min(row[at] + 1, row[at - 1] + 1, previous + (letter != wanted))
    return row[-1] <= 2
