"""Configuration: ``[tool.toolreplay]`` in pyproject.toml, or a toolreplay.toml (docs/spec.md §7)."""

from __future__ import annotations

import json
import math
import os
import posixpath
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from toolreplay.errors import InputError
from toolreplay.escape import quote
from toolreplay.files import normal_glob
from toolreplay.gate import ALL, FailOnError, known_kinds, list_words, resolve
from toolreplay.kinds import kind_fails
from toolreplay.limits import DEFAULT_BUDGET_SECONDS, MAX_INT_DIGITS, long_integer_line
from toolreplay.locate import TomlPath, pointer_of
from toolreplay.state_command import DEFAULT_TIMEOUT, Command, parse_state_command
from toolreplay.volatile_rules import (
    Rule,
    config_home,
    rule_problem,
    unread_error,
    unread_volatile,
)

#: the tools that change state unless a configuration or a tool lock says otherwise (spec §3.2)
DEFAULT_MUTATORS = frozenset({"write_file", "delete_file", "create_file", "move_file", "run_command"})

# (the drift-note hook, which asks git for a staged configuration on every commit and most often
# finds none, imports this module only once it finds one: driftnotes/settings.py)


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """Settings for ``toolreplay check``; paths are relative to ``root``."""

    root: Path
    source: str
    transcripts: tuple[str, ...] = ()
    baselines: tuple[str, ...] = ()
    scope: str | None = None
    tools_lock: str | None = None
    #: a definitions file or module:object (str), or an MCP server command line (tuple)
    tools_source: str | tuple[str, ...] | None = None
    mutators: frozenset[str] = DEFAULT_MUTATORS
    #: None when the config does not say: ``check`` is then state-aware, ``replay`` keeps 0.6's default
    state_aware: bool | None = None
    drift_notes: str = "drift-notes"
    max_baseline_age_days: int | None = None
    #: total seconds the scope's patterns may take per transcript (toolreplay.ecma)
    pattern_budget_seconds: float = DEFAULT_BUDGET_SECONDS
    fail_on: frozenset[str] | None = None  # None: every kind fails
    #: the ``[[volatile]]`` rules, in the file's order (docs/spec.md, "Volatile values")
    volatile: tuple[Rule, ...] = ()
    #: what ``record`` runs after a call that changes state (docs/spec.md §8), and for how long
    state_command: tuple[Command, ...] = ()
    state_timeout_seconds: float = DEFAULT_TIMEOUT
    extra: dict[str, Any] = field(default_factory=dict)
    #: the keys the file sets (so a command knows which defaults came from it)
    declared: frozenset[str] = frozenset()
    #: the volatile tables the file holds beside the table toolreplay reads, one warning line each
    unread: tuple[str, ...] = ()

    def fails(self, kind: str) -> bool:
        return kind_fails(kind, self.fail_on)


def toolreplay_table(data: dict[str, Any]) -> dict[str, Any] | None:
    """The ``[tool.toolreplay]`` table of a parsed pyproject.toml, or None when it has none
    (``tool`` or ``tool.toolreplay`` may be anything in someone's file: only tables count)."""
    tool = data.get("tool")
    table = tool.get("toolreplay") if isinstance(tool, dict) else None
    return table if isinstance(table, dict) else None


def find_config(start: Path) -> Path | None:
    """The nearest toolreplay.toml, or pyproject.toml holding [tool.toolreplay], from ``start`` up."""
    for folder in [start, *start.parents]:
        candidate = folder / "toolreplay.toml"
        if candidate.is_file():
            return candidate
        candidate = folder / "pyproject.toml"
        if candidate.is_file() and toolreplay_table(read_toml(candidate)) is not None:
            return candidate
    return None


def read_toml(path: Path) -> dict[str, Any]:
    """The TOML file at ``path`` as a table; errors name the file (and the line TOML gives)."""
    return parse_toml(_read_bytes(path), str(path))


def _read_bytes(path: Path | str) -> bytes:
    from toolreplay.transcript import read_input  # (its errors name the file, whatever fails)

    return read_input(str(path))


def parse_toml(raw: bytes, label: str) -> dict[str, Any]:
    """Parse TOML bytes; ``label`` names them in errors (a path, or ``REV:path`` for a blob in git)."""
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise InputError(f"invalid TOML: {err}", path=label) from err
    except RecursionError as err:
        raise InputError("invalid TOML: nested too deeply to read", path=label) from err
    except UnicodeDecodeError as err:
        raise InputError("invalid UTF-8", path=label) from err
    except ValueError as err:  # tomllib lets Python's limit on integer digits through
        raise _long_integer(raw, label) from err


def _long_integer(raw: bytes, label: str) -> InputError:
    """The error for a TOML integer over Python's conversion limit, at its line."""
    line = long_integer_line(raw.decode("utf-8"))  # (tomllib read it as UTF-8)
    return InputError(f"invalid TOML: an integer longer than {MAX_INT_DIGITS} digits", path=label, line=line)


def load_config(
    path: Path | None = None, *, cwd: Path | None = None, raw: bytes | None = None, label: str | None = None
) -> Config:
    """Read a config file (or find one from ``cwd`` upwards) and check it against its schema.

    With ``raw``, those bytes are the file's content (a version of ``path`` read from git),
    named ``label`` in errors and as the config's ``source``.
    """
    if path is None:
        path = _found_config(cwd)
    source = label or str(path)
    raw = _read_bytes(path) if raw is None else raw
    data = parse_toml(raw, source)
    unread = unread_volatile(data, path.name)
    refused = [found for found in unread if found.inside]
    if refused:
        raise unread_error(refused[0], raw, source)
    table = _settings_table(data, path.name, source)
    unread_errors = tuple(str(unread_error(found, raw, source)) for found in unread)
    return _config_of(table, root=path.parent, source=source, unread=unread_errors)


def _config_of(table: dict[str, Any], *, root: Path, source: str, unread: tuple[str, ...]) -> Config:
    """The configuration a valid settings table declares (defaults for what it leaves out)."""
    budget = _seconds(table, "pattern_budget_seconds", DEFAULT_BUDGET_SECONDS, BUDGET_PROBLEM, source)
    timeout = _seconds(table, "state_timeout_seconds", DEFAULT_TIMEOUT, TIMEOUT_PROBLEM, source)
    return Config(
        root=root,
        source=source,
        transcripts=tuple(table.get("transcripts", ())),
        baselines=_baseline_globs(table.get("baselines", ()), source),
        scope=table.get("scope"),
        tools_lock=table.get("tools_lock"),
        tools_source=_source(table.get("tools_source")),
        mutators=frozenset(table["mutators"]) if "mutators" in table else DEFAULT_MUTATORS,
        state_aware=table.get("state_aware"),
        drift_notes=table.get("drift_notes", "drift-notes"),
        max_baseline_age_days=table.get("max_baseline_age_days"),
        pattern_budget_seconds=float(budget),
        fail_on=_fail_on(table["fail_on"], source) if "fail_on" in table else None,
        volatile=volatile_rules(table.get("volatile", ()), source),
        state_command=state_commands(table.get("state_command", ()), source),
        state_timeout_seconds=float(timeout),
        declared=frozenset(table),
        unread=unread,
    )


def _settings_table(data: dict[str, Any], name: str, source: str) -> dict[str, Any]:
    """The table of toolreplay's settings in a parsed file (``[tool.toolreplay]`` of a
    pyproject.toml), refused unless the schema accepts it."""
    table = toolreplay_table(data) if name == "pyproject.toml" else data
    if table is None:
        raise InputError("has no [tool.toolreplay] table", path=source)
    if not plainly_valid(table):
        _refuse_invalid(table, source)
    return table


def _seconds(table: dict[str, Any], key: str, default: float, problem: str, source: str) -> Any:
    """A time budget of the table (the default when it has none), refused unless finite."""
    value = table.get(key, default)
    if not finite_budget(value):
        raise InputError(problem, path=source, pointer="/" + key)
    return value


def load_recorded(raw: bytes, path: str, *, label: str, top: Callable[[], str]) -> Config | None:
    """The configuration git records at ``path`` (from the repository's root), ``raw`` its bytes:
    None for a pyproject.toml without ``[tool.toolreplay]``. ``top`` gives the root, asked only
    for a configuration (a git call less for the hook in a repository without one)."""
    if posixpath.basename(path) == "pyproject.toml" and toolreplay_table(parse_toml(raw, label)) is None:
        return None
    return load_config(Path(top(), path), raw=raw, label=label)


def _found_config(cwd: Path | None) -> Path:
    """The config file found from ``cwd`` (default: the current folder) upwards."""
    path = find_config(cwd or Path.cwd())
    if path is None:
        raise InputError(
            "no configuration found: add [tool.toolreplay] to pyproject.toml or write a "
            "toolreplay.toml (see docs/cli.md, 'check and its configuration')"
        )
    return path


def _refuse_invalid(table: dict[str, Any], source: str) -> None:
    """Name the first schema error of a configuration table, if it has one."""
    errors = _schema_errors(table)
    if not errors:
        return
    first = errors[0]
    message = f"invalid configuration: {first.message}"
    if first.validator == "enum" and list(first.absolute_path)[:1] == ["fail_on"]:
        # a typo here would switch the gate off for that kind, so it is named with the choices
        kind = str(first.instance).removeprefix("-")
        message = f"fail_on: unknown finding kind {quote(kind)}; {_kinds_are()}"
    raise InputError(message, path=source, pointer=pointer_of(first.absolute_path))


def _fail_on(items: list[str], source: str) -> frozenset[str] | None:
    """The kinds ``fail_on`` fails (None: the default), its ``all`` and ``-KIND`` read (toolreplay.gate)."""
    try:
        return resolve(items)
    except FailOnError as err:
        raise InputError(f"fail_on: {err}; {_kinds_are()}", path=source, pointer="/fail_on") from err


def _kinds_are() -> str:
    """The end of every message about a fail_on list: what it may hold."""
    return (
        f"the kinds are: {', '.join(sorted(known_kinds()))}"
        f" ({quote(ALL)} for every kind but the advisory ones, then -KIND to take one out)"
    )


def volatile_rules(tables: list[dict[str, str]], source: str) -> tuple[Rule, ...]:
    """The ``[[volatile]]`` tables (valid by the schema) as rules; a place or a pattern that
    cannot be used is an error naming the rule."""
    rules = []
    for number, table in enumerate(tables):
        rule = Rule(tool=table["tool"], at=table["at"], pattern=table.get("pattern"))
        problem = rule_problem(rule)
        if problem is not None:
            key, why = problem
            raise InputError(
                f"volatile rule {number + 1}: {why}", path=source, pointer=f"/volatile/{number}/{key}"
            )
        rules.append(rule)
    return tuple(rules)


def state_commands(value: str | list[str], source: str) -> tuple[Command, ...]:
    """The ``state_command`` setting (valid by the schema: one command or a list) as commands;
    one that cannot be run is an error naming it."""
    problem = state_command_problem(value)
    if problem is not None:
        pointer, why = problem
        raise InputError(why, path=source, pointer=pointer)
    return tuple(parse_state_command(item) for item in ([value] if isinstance(value, str) else value))


def state_command_problem(value: str | list[str]) -> tuple[str, str] | None:
    """(pointer, problem) of the first command of a ``state_command`` setting that cannot be run."""
    items = [("/state_command", value)] if isinstance(value, str) else [
        (f"/state_command/{number}", item) for number, item in enumerate(value)
    ]  # fmt: skip
    for pointer, item in items:
        try:
            parse_state_command(item)
        except ValueError as err:
            return pointer, f"state_command {_shown(item)} {err}"
    return None


def _baseline_globs(globs: list[str], source: str) -> tuple[str, ...]:
    """The ``baselines`` globs in the one form the guard and ``check`` both match (:func:`normal_glob`)."""
    out = []
    for number, glob in enumerate(globs):
        try:
            out.append(normal_glob(glob))
        except ValueError as err:
            raise InputError(
                f"baselines glob {_shown(glob)} {err}", path=source, pointer=f"/baselines/{number}"
            ) from err
    return tuple(out)


def _schema_errors(table: dict[str, Any]) -> list[Any]:
    # the schema (and jsonschema) only for a table plainly_valid cannot vouch for: the drift-note
    # hook reads a staged configuration on every commit without them
    from toolreplay.schemas import validator

    return sorted(validator("config").iter_errors(table), key=lambda e: list(map(str, e.absolute_path)))


def _text(value: Any) -> bool:
    return type(value) is str and value != ""


def _texts(value: Any) -> bool:
    return type(value) is list and all(type(item) is str and item != "" for item in value)


def _kinds(value: Any) -> bool:
    words = frozenset(list_words())
    return type(value) is list and all(type(item) is str and item in words for item in value)


#: each key of the config schema, and a check that accepts only values the schema accepts
_PLAIN: dict[str, Any] = {
    "transcripts": _texts,
    "baselines": _texts,
    "scope": _text,
    "tools_lock": _text,
    "tools_source": lambda value: _text(value) or (_texts(value) and len(value) > 0),
    "mutators": _texts,
    "state_aware": lambda value: type(value) is bool,
    "drift_notes": _text,
    "max_baseline_age_days": lambda value: type(value) is int and value >= 1,
    "pattern_budget_seconds": lambda value: type(value) in (int, float) and value > 0,
    "fail_on": _kinds,
    "volatile": lambda value: type(value) is list and all(_volatile_table(item) for item in value),
    "state_command": lambda value: _text(value) or (_texts(value) and len(value) > 0),
    "state_timeout_seconds": lambda value: type(value) in (int, float) and value > 0,
}


def _volatile_table(value: Any) -> bool:
    return (
        type(value) is dict
        and value.keys() <= {"tool", "at", "pattern"}
        and _text(value.get("tool"))
        and type(value.get("at")) is str
        and value["at"].startswith(("/args/", "/response/", "/state/"))
        and ("pattern" not in value or _text(value["pattern"]))
    )


BUDGET_PROBLEM = "invalid configuration: pattern_budget_seconds must be a finite number of seconds"
TIMEOUT_PROBLEM = "invalid configuration: state_timeout_seconds must be a finite number of seconds"


def finite_budget(budget: int | float) -> bool:
    """Whether a budget the schema accepted is a number of seconds a float holds: TOML has
    inf and nan, and integers of any size, which the schema's bounds let through."""
    try:
        return math.isfinite(budget)
    except OverflowError:  # an integer past the largest float
        return False


def plainly_valid(table: dict[str, Any]) -> bool:
    """True for a table the config schema certainly accepts, found without jsonschema: importing
    it (and the schema's ECMA-262 patterns) takes longer than all else a hook or a ``replay``
    of a small file does. False only means "ask the schema", which then names the problem.
    ``tests/unit/test_config_fast.py`` holds the two to agreement."""
    return all(key in _PLAIN and _PLAIN[key](value) for key, value in table.items())


def _shown(glob: str) -> str:
    return json.dumps(glob)


def _source(value: Any) -> str | tuple[str, ...] | None:
    return tuple(value) if isinstance(value, list) else value


def nearest_config(path: str | Path | None = None, *, cwd: Path | None = None) -> Config | None:
    """The config ``path`` names, else the nearest one from ``cwd`` up, else None (no config is fine)."""
    if path is None:
        path = find_config(cwd or Path.cwd())
        if path is None:
            return None
    return load_config(Path(path))


def named_file(config: Config, name: str | None) -> str | None:
    """A file the configuration names, from its folder (None when it names none)."""
    return str(config.root / name) if name else None


def config_path(config: Config, value: str) -> str:
    """A path the config names (relative to its folder), as the current directory reaches it."""
    target = config.root / value
    try:
        return os.path.relpath(target)
    except ValueError:  # pragma: no cover - another drive on Windows
        return str(target)


def unmatched_globs(config: Config) -> list[str]:
    """One line per ``transcripts`` / ``baselines`` glob that matches no file.

    A mistyped glob (``run/*.jsonl`` for ``runs/*.jsonl``) would otherwise check nothing and
    pass: the run reports 0 files, exit 0. ``check`` and the Action say so, as a warning.
    """
    out = []
    for key, patterns in (("transcripts", config.transcripts), ("baselines", config.baselines)):
        for pattern in patterns:
            if not expand(config, (pattern,)):
                out.append(f"{key} glob {_shown(pattern)} in {config.source} matches no file")
    return out


def expand(config: Config, patterns: tuple[str, ...]) -> list[str]:
    """Files matching the globs, as paths relative to the config's folder, sorted, once each."""
    found: set[str] = set()
    for pattern in patterns:
        if os.path.isabs(pattern):
            raise InputError(f"glob {_shown(pattern)} must be relative to its folder", path=config.source)
        if not PurePath(pattern).parts:
            raise InputError(
                f"glob {_shown(pattern)} names the config's folder, not files", path=config.source
            )
        try:
            matches = list(config.root.glob(pattern))
        except ValueError as err:  # pathlib: '**' can only be an entire path component
            raise InputError(
                f"glob {_shown(pattern)} is not a valid glob: {err}", path=config.source
            ) from err
        for match in matches:
            if match.is_file():
                found.add(match.relative_to(config.root).as_posix())
    return sorted(found)


def config_problems(path: str) -> Iterator[str]:
    """The problems of the configuration file at ``path``, one line each, as ``toolreplay
    validate`` lists them (what :func:`load_config` would refuse, and the volatile tables it
    would not read; none when it loads and reads everything)."""
    raw = _read_bytes(path)
    try:
        data = parse_toml(raw, path)
    except InputError as err:
        yield _own_problem(err)
        return
    name = os.path.basename(path)
    unread = unread_volatile(data, name)
    yield from (str(unread_error(found, raw, path)) for found in unread)
    table = toolreplay_table(data) if name == "pyproject.toml" else data
    if table is None:
        yield f"{path}: has no [tool.toolreplay] table"
        return
    for found in unread:  # (named above: not again as a key the schema does not know)
        if found.inside:
            table = _without(table, found.at[len(config_home(name)) :])
    yield from _table_problems(table, path)


def _own_problem(err: InputError) -> str:
    """A TOML file's own problem (invalid TOML, an integer past the digit limit), as ``validate``
    lists it; an unreadable file is raised again."""
    if isinstance(err.__cause__, ValueError) and not isinstance(err.__cause__, UnicodeDecodeError):
        return str(err)
    raise err


def _without(value: Any, path: TomlPath) -> Any:
    """``value`` without what is at ``path`` (a table left empty goes too)."""
    head, rest = path[0], path[1:]
    if isinstance(value, dict) and head in value:
        return _without_member(value, head, rest)
    if isinstance(value, list) and isinstance(head, int) and head < len(value) and rest:
        return [_without(item, rest) if number == head else item for number, item in enumerate(value)]
    return value


def _without_member(table: dict[str, Any], key: Any, rest: TomlPath) -> dict[str, Any]:
    """``table`` without what is at ``rest`` in its member ``key`` (the member goes when left empty)."""
    inner = _without(table[key], rest) if rest else {}
    return {name: item for name, item in table.items() if name != key} | ({key: inner} if inner != {} else {})


def _schema_problems(data: dict[str, Any], path: str) -> list[str]:
    """What the config schema refuses in a table, in place order (it has no ECMA-262 pattern:
    jsonschema's own message and place say it)."""
    errors = sorted(_schema_errors(data), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    return [f"{path}: {e.message} (at {pointer_of(e.absolute_path)})" for e in errors]


def _table_problems(data: dict[str, Any], path: str) -> Iterator[str]:
    """The problems of a configuration table (the file at ``path``'s) as ``validate`` lists them."""
    errors = [] if plainly_valid(data) else _schema_problems(data, path)
    if errors:
        yield from errors
        return
    # what the schema cannot say and loading the configuration refuses
    for key, refused in (
        ("pattern_budget_seconds", BUDGET_PROBLEM),
        ("state_timeout_seconds", TIMEOUT_PROBLEM),
    ):
        if not finite_budget(data.get(key, 1)):
            yield f"{path}: {refused.removeprefix('invalid configuration: ')} (at /{key})"
    problem = state_command_problem(data.get("state_command", ()))
    if problem is not None:
        yield f"{path}: {problem[1]} (at {problem[0]})"
    if "fail_on" in data:
        try:
            resolve(data["fail_on"])
        except FailOnError as err:  # a list the schema takes but cannot mean anything (-KIND without all)
            yield f"{path}: fail_on: {err} (at /fail_on)"
