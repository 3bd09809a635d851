"""Check a transcript against a declared scope (SPEC §1.4, §3.3)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import regex
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.validators import extend
from referencing.exceptions import Unresolvable

from toolreplay.canonical import decode
from toolreplay.errors import InputError
from toolreplay.findings import Finding, quote
from toolreplay.locate import line_of, pointer_of, pointer_token
from toolreplay.transcript import Record, open_input

#: Longest a scope's ``pattern`` may take on one value. A scope file can be edited in the
#: pull request it judges, and Python's ``re`` has no time limit: a pattern such as
#: ``(a+)+$`` on a long argument would hang the job. Past the limit the call is refused.
PATTERN_SECONDS = 1.0


def _search(pattern: str, text: str) -> bool | str:
    """Whether ``pattern`` finds a match in ``text``; a string saying why it could not tell."""
    try:
        return regex.search(pattern, text, timeout=PATTERN_SECONDS) is not None
    except TimeoutError:
        return f"pattern {pattern!r} did not finish within {PATTERN_SECONDS:g} s on this value"
    except regex.error as err:
        return f"pattern {pattern!r} is not a valid regular expression: {err}"


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "string"):
        return
    found = _search(pattern, instance)
    if isinstance(found, str):
        yield ValidationError(found)
    elif not found:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, properties: dict[str, Any], instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in properties.items():
        for key, value in instance.items():
            found = _search(pattern, key)
            if isinstance(found, str):
                yield ValidationError(found)
            elif found:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


#: Draft 2020-12 with time-limited regular expressions (the ``regex`` package) for
#: ``pattern`` and ``patternProperties``.
ScopeValidator = extend(  # type: ignore[no-untyped-call]
    Draft202012Validator, validators={"pattern": _pattern, "patternProperties": _pattern_properties}
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Scope:
    agent: str
    allowed_tools: frozenset[str]
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
    stream = open_input(path)
    try:
        raw = stream.read()
    finally:
        stream.close()
    try:
        return raw, decode(raw)
    except InputError as err:
        lineno = getattr(err.__cause__, "lineno", None)
        raise InputError(err.problem, path=path, line=lineno, pointer=err.pointer) from err


def read_json_file(path: str) -> Any:
    """The value of a whole JSON file read under the strict rules."""
    return read_json_document(path)[1]


def located(err: InputError, raw: bytes) -> InputError:
    """``err`` with the line its JSON pointer lands on in ``raw`` (when it had none)."""
    if err.line is not None or err.pointer is None:
        return err
    return InputError(err.problem, path=err.path, line=line_of(raw, err.pointer), pointer=err.pointer)


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
    unknown = sorted(set(value) - {"agent", "allowed_tools", "arguments"})
    if unknown:
        raise InputError(
            f"unknown field {quote(unknown[0])}", path=path, pointer="/" + pointer_token(unknown[0])
        )
    agent = value.get("agent")
    if not isinstance(agent, str):
        raise InputError('field "agent" must be a string', path=path, pointer="/agent")
    tools = value.get("allowed_tools")
    if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
        raise InputError(
            'field "allowed_tools" must be an array of strings', path=path, pointer="/allowed_tools"
        )
    arguments = value.get("arguments", {})
    if not isinstance(arguments, dict):
        raise InputError('field "arguments" must be an object', path=path, pointer="/arguments")
    validators = {}
    for tool, schema in sorted(arguments.items()):
        pointer = "/arguments/" + pointer_token(tool)
        if not isinstance(schema, (dict, bool)):
            raise InputError("must be a JSON Schema (an object or a boolean)", path=path, pointer=pointer)
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as err:
            sub = "".join("/" + pointer_token(p) for p in err.absolute_path)
            raise InputError(
                f"not a valid JSON Schema: {err.message}", path=path, pointer=pointer + sub
            ) from err
        validators[tool] = ScopeValidator(schema)
    return Scope(agent=agent, allowed_tools=frozenset(tools), arguments=validators, path=path)


def _argument_errors(scope: Scope, tool: str, args: dict[str, Any]) -> list[ValidationError]:
    """The schema errors of one call's arguments, in a stable order.

    A ``$ref`` is only followed when a call needs it, so a schema that points nowhere
    (or only back at itself) is refused here, naming the scope file.
    """
    pointer = "/arguments/" + pointer_token(tool)
    try:
        return sorted(
            scope.arguments[tool].iter_errors(args),
            key=lambda e: (list(map(str, e.absolute_path)), e.message),
        )
    except Unresolvable as err:
        problem = str(err).split(" within ", 1)[0]
        raise InputError(f"cannot resolve $ref: {problem}", path=scope.path, pointer=pointer) from err
    except RecursionError as err:
        raise InputError("the schema refers to itself without end", path=scope.path, pointer=pointer) from err


def check_scope(records: Iterable[Record], scope: Scope, *, path: str = "") -> ScopeResult:
    """Report calls to tools outside the scope and arguments that fail a tool's schema."""
    findings: list[Finding] = []
    calls = 0
    for record in records:
        calls += 1
        if record.tool not in scope.allowed_tools:
            findings.append(
                Finding(
                    kind="permission-overreach",
                    index=record.index,
                    tool=record.tool,
                    path=path,
                    line=record.line,
                    message=(
                        f"tool {quote(record.tool)} is not in the declared scope for agent "
                        f"{quote(scope.agent)}"
                    ),
                )
            )
            continue
        if record.tool not in scope.arguments:
            continue
        errors = _argument_errors(scope, record.tool, record.args)
        if errors:
            first = errors[0]
            pointer = pointer_of(first.absolute_path)
            findings.append(
                Finding(
                    kind="argument-overreach",
                    index=record.index,
                    tool=record.tool,
                    path=path,
                    line=record.line,
                    message=(
                        f"tool {quote(record.tool)} was called with arguments outside the "
                        f"declared scope at {quote(pointer)}: {first.message}"
                    ),
                )
            )
    return ScopeResult(calls=calls, findings=findings)
