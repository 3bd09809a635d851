"""Check a transcript against a declared scope (docs/spec.md §1.4, §3.3)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from jsonschema.exceptions import ValidationError
from referencing.exceptions import Unresolvable

from toolreplay.canonical import decode
from toolreplay.ecma import (
    PATTERN_SECONDS,
    BoundedSearch,
    Unjudged,
    error_message,
    error_pointer_parts,
    refused_keyword,
    schema_errors,
    validator_class,
)
from toolreplay.errors import InputError
from toolreplay.escape import quote
from toolreplay.findings import Finding
from toolreplay.kinds import ARGUMENT_OVERREACH, PERMISSION_OVERREACH, SCOPE_UNJUDGED
from toolreplay.limits import DEFAULT_BUDGET_SECONDS
from toolreplay.locate import located, pointer_of, pointer_token
from toolreplay.transcript import Record, read_input


@dataclass(frozen=True, slots=True, kw_only=True)
class Scope:
    agent: str
    allowed_tools: frozenset[str]
    #: tool -> its arguments' JSON Schema, checked when the scope was loaded
    arguments: dict[str, Any]
    #: the scope file, named when one of its schemas turns out unusable
    path: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ScopeResult:
    calls: int
    findings: list[Finding]


def read_json_document(path: str) -> tuple[bytes, Any]:
    """Read a whole JSON file under the strict rules: (its bytes, its value).

    Errors carry file and line; :func:`located` adds the line to later errors that only
    know a JSON pointer.
    """
    raw = read_input(path)
    try:
        return raw, decode(raw)
    except InputError as err:
        lineno = getattr(err.__cause__, "lineno", None)
        raise InputError(err.problem, path=path, line=lineno, pointer=err.pointer) from err


def load_scope(path: str) -> Scope:
    """Read and check a scope file; anything but the documented fields is refused."""
    raw, value = read_json_document(path)
    try:
        return _scope_of(value, path)
    except InputError as err:
        raise located(err, raw) from err


def _scope_of(value: Any, path: str) -> Scope:
    if not isinstance(value, dict):
        raise InputError("a scope file must hold a JSON object", path=path)
    _refuse_unknown(value, path)
    agent = value.get("agent")
    if not isinstance(agent, str):
        raise InputError('field "agent" must be a string', path=path, pointer="/agent")
    tools = _allowed_tools(value.get("allowed_tools"), path)
    arguments = value.get("arguments", {})
    if not isinstance(arguments, dict):
        raise InputError('field "arguments" must be an object', path=path, pointer="/arguments")
    for tool, schema in sorted(arguments.items()):
        _check_arguments(tool, schema, tools, path)
    return Scope(agent=agent, allowed_tools=frozenset(tools), arguments=dict(arguments), path=path)


def _allowed_tools(tools: Any, path: str) -> list[str]:
    """``allowed_tools``: an array of strings."""
    if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
        raise InputError(
            'field "allowed_tools" must be an array of strings', path=path, pointer="/allowed_tools"
        )
    return tools


def _refuse_unknown(value: dict[str, Any], path: str) -> None:
    unknown = sorted(set(value) - {"agent", "allowed_tools", "arguments"})
    if unknown:
        raise InputError(
            f"unknown field {quote(unknown[0])}", path=path, pointer="/" + pointer_token(unknown[0])
        )


def _check_arguments(tool: str, schema: Any, tools: list[str], path: str) -> None:
    """Refuse an ``arguments`` entry for a tool not listed, or whose schema is no JSON Schema or
    holds a keyword toolreplay refuses."""
    pointer = pointer_of(("arguments", tool))
    if tool not in tools:
        raise InputError(unlisted_problem(tool), path=path, pointer=pointer)
    if not isinstance(schema, (dict, bool)):
        raise InputError("must be a JSON Schema (an object or a boolean)", path=path, pointer=pointer)
    problem = _schema_problem(schema)
    if problem is not None:
        raise InputError(problem[1], path=path, pointer=pointer_of(("arguments", tool, *problem[0])))


def _schema_problem(schema: dict[str, Any] | bool) -> tuple[Sequence[str | int], str] | None:
    """The first problem of a schema, where in it and what: not a valid JSON Schema, or a keyword
    toolreplay refuses; None when it has none."""
    errors = sorted(schema_errors(schema), key=lambda e: [str(p) for p in error_pointer_parts(e)])
    if errors:
        return error_pointer_parts(errors[0]), f"not a valid JSON Schema: {error_message(errors[0])}"
    return refused_keyword(schema)


def unlisted_problem(tool: str) -> str:
    """Why an ``arguments`` entry for a tool ``allowed_tools`` does not list is refused.

    Its schema would never be applied (a call to the tool is a permission-overreach), so
    the entry is a typo (``Read_file`` for ``read_file``) that would leave the real tool's
    arguments unchecked without a word.
    """
    return (
        f"arguments for tool {quote(tool)}, which allowed_tools does not list: its schema would never apply"
    )


def scope_problems(value: Any) -> list[tuple[str, str]]:
    """(JSON pointer, problem) of what a scope's published schema cannot say, in document order."""
    if not isinstance(value, dict):
        return []
    tools, arguments = value.get("allowed_tools"), value.get("arguments")
    if not isinstance(arguments, dict):
        return []
    listed = _names(tools)
    found: list[tuple[str, str]] = []
    for tool, schema in sorted(arguments.items()):
        if tool not in listed:
            found.append((pointer_of(("arguments", tool)), unlisted_problem(tool)))
        refused = refused_keyword(schema)
        if refused is not None:
            found.append((pointer_of(("arguments", tool, *refused[0])), refused[1]))
    return found


def _names(tools: Any) -> set[str]:
    """The tool names ``allowed_tools`` lists (only names: the schema reports any other item, and a
    list or an object is not hashable)."""
    return {t for t in tools if isinstance(t, str)} if isinstance(tools, list) else set()


def _argument_errors(
    scope: Scope, validators: dict[str, Any], tool: str, args: dict[str, Any]
) -> list[ValidationError]:
    """The schema errors of one call's arguments, in a stable order.

    A ``$ref`` is only followed when a call needs it, so a schema that points nowhere
    (or only back at itself) is refused here, naming the scope file.
    """
    pointer = "/arguments/" + pointer_token(tool)
    try:
        return sorted(
            validators[tool].iter_errors(args),
            key=lambda e: (list(map(str, e.absolute_path)), e.message),
        )
    except Unresolvable as err:
        problem = str(err).split(" within ", 1)[0]
        raise InputError(f"cannot resolve $ref: {problem}", path=scope.path, pointer=pointer) from err
    except RecursionError as err:
        raise InputError("the schema refers to itself without end", path=scope.path, pointer=pointer) from err


def check_scope(
    records: Iterable[Record],
    scope: Scope,
    *,
    path: str = "",
    pattern_budget: float = DEFAULT_BUDGET_SECONDS,
    pattern_seconds: float = PATTERN_SECONDS,
) -> ScopeResult:
    """Report calls to tools outside the scope and arguments that fail a tool's schema.

    The schemas' patterns (ECMA-262, see :mod:`toolreplay.ecma`) may spend at most
    ``pattern_budget`` seconds on this transcript in total, and ``pattern_seconds`` on one value;
    a call whose arguments could not be judged in that time is a ``scope-unjudged``
    finding, never a pass.
    """
    with ScopeJudge(
        scope, path=path, pattern_budget=pattern_budget, pattern_seconds=pattern_seconds
    ) as judge:
        for record in records:
            judge.feed(record)
    return judge.result()


class ScopeJudge:
    """:func:`check_scope` one record at a time (``feed``), so one pass over a transcript can
    feed several analyses; a context manager, since it may run a pattern worker process."""

    def __init__(
        self,
        scope: Scope,
        *,
        path: str = "",
        pattern_budget: float = DEFAULT_BUDGET_SECONDS,
        pattern_seconds: float = PATTERN_SECONDS,
    ) -> None:
        self._scope = scope
        self._path = path
        self._bounded = BoundedSearch(budget=pattern_budget, per_value=pattern_seconds)
        self._validators: dict[str, Any] = {}
        self._findings: list[Finding] = []
        self._calls = 0

    def __enter__(self) -> ScopeJudge:
        self._bounded.__enter__()
        cls = validator_class(self._bounded)
        self._validators = {tool: cls(schema) for tool, schema in self._scope.arguments.items()}
        return self

    def __exit__(self, *exc: object) -> None:
        self._bounded.__exit__(*exc)

    def feed(self, record: Record) -> None:
        self._calls += 1
        finding = _judge(record, self._scope, self._validators, self._path)
        if finding is not None:
            self._findings.append(finding)

    def result(self) -> ScopeResult:
        return ScopeResult(calls=self._calls, findings=list(self._findings))


def _judge(record: Record, scope: Scope, validators: dict[str, Any], path: str) -> Finding | None:
    """The finding about one call, if any."""
    tool = quote(record.tool)
    if record.tool not in scope.allowed_tools:
        kind = PERMISSION_OVERREACH
        message = f"tool {tool} is not in the declared scope for agent {quote(scope.agent)}"
    elif record.tool not in validators:
        return None
    else:
        try:
            errors = _argument_errors(scope, validators, record.tool, record.args)
        except Unjudged as err:
            kind = SCOPE_UNJUDGED
            message = f"the arguments of tool {tool} could not be judged against the declared scope: {err}"
        else:
            if not errors:
                return None
            kind = ARGUMENT_OVERREACH
            pointer = pointer_of(errors[0].absolute_path)
            message = (
                f"tool {tool} was called with arguments outside the declared scope at "
                f"{quote(pointer)}: {errors[0].message}"
            )
    return Finding(
        kind=kind, index=record.index, tool=record.tool, path=path, line=record.line, message=message
    )
