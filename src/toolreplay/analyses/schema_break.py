"""Recorded calls against a changed input schema: which recorded behaviour a new schema refuses.

A tool whose input schema changed (between a lock and a live tool set) has every recorded
call's arguments validated against the new schema, with jsonschema's own keywords and ECMA-262
patterns as ``scope`` uses them (:mod:`toolreplay.ecma`; a server's patterns are untrusted, so
they run in the killable worker under a time budget). Each call the new schema refuses is a
``schema-break`` finding naming the call, the argument's pointer and the failing keyword.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from jsonschema.exceptions import SchemaError, ValidationError
from referencing.exceptions import Unresolvable

from toolreplay.analyses.difference import clipped
from toolreplay.canonical import canonical
from toolreplay.contracts.lock import ToolLock
from toolreplay.ecma import BoundedSearch, Unjudged, error_message, validator_class
from toolreplay.escape import quote
from toolreplay.findings import Finding
from toolreplay.kinds import SCHEMA_BREAK
from toolreplay.locate import pointer_of, pointer_token
from toolreplay.transcript import Record

#: characters of a refused value (and of the keyword's value) a message shows
_SHOWN = 80


def changed_schemas(old: ToolLock, new: ToolLock) -> dict[str, Any]:
    """Tool -> new input schema, for every tool in both locks whose input schema differs."""
    return {
        name: new.tools[name].schema
        for name in sorted(set(old.tools) & set(new.tools))
        if canonical(old.tools[name].schema) != canonical(new.tools[name].schema)
    }


class SchemaBreaks:
    """Feed records one at a time (one pass can feed several analyses); a context manager, since
    the patterns run in a worker process."""

    def __init__(self, schemas: dict[str, Any], *, path: str = "") -> None:
        self._schemas = schemas
        self._path = path
        self._bounded = BoundedSearch()
        self._validators: dict[str, Any] = {}
        self.findings: list[Finding] = []

    def __enter__(self) -> SchemaBreaks:
        self._bounded.__enter__()
        cls = validator_class(self._bounded)
        self._validators = {tool: cls(schema) for tool, schema in self._schemas.items()}
        return self

    def __exit__(self, *exc: object) -> None:
        self._bounded.__exit__(*exc)

    def feed(self, record: Record) -> None:
        validator = self._validators.get(record.tool)
        if validator is None:
            return
        message = _break(validator, record)
        if message is None:
            return
        self.findings.append(
            Finding(
                kind=SCHEMA_BREAK,
                index=record.index,
                tool=record.tool,
                message=message,
                path=self._path,
                line=record.line or None,
            )
        )


def _break(validator: Any, record: Record) -> str | None:
    """Why the new input schema refuses a recorded call's arguments, or cannot judge them; None when
    it takes them."""
    tool = quote(record.tool)
    try:
        errors = sorted(
            validator.iter_errors(record.args), key=lambda e: (list(map(str, e.absolute_path)), e.message)
        )
    except Unjudged as err:
        return f"the arguments of tool {tool} could not be judged against its new input schema: {err}"
    except (Unresolvable, SchemaError, RecursionError) as err:
        problem = str(err).split(" within ", 1)[0].splitlines()[0]
        return f"tool {tool}'s new input schema cannot judge its recorded calls: {problem}"
    return _refusal(tool, errors[0]) if errors else None


def _refusal(tool: str, error: ValidationError) -> str:
    """The first schema error of a recorded call: where, what value, against which keyword."""
    where = pointer_of(error.absolute_path)
    keyword = "/" + "/".join(pointer_token(str(p)) for p in error.absolute_schema_path)
    name = str(error.absolute_path[-1]) if error.absolute_path else "arguments"
    return (
        f"recorded call to tool {tool} is refused by its new input schema at {quote(where)}:"
        f" {quote(name)}: {clipped(error.instance, _SHOWN)} against the new {error.validator}:"
        f" {clipped(error.validator_value, _SHOWN)} (schema {keyword}; {error_message(error)[:120]})"
    )


def schema_breaks(records: Iterable[Record], schemas: dict[str, Any], *, path: str = "") -> list[Finding]:
    """The ``schema-break`` findings of one transcript's calls against the changed schemas."""
    with SchemaBreaks(schemas, path=path) as check:
        for record in records:
            check.feed(record)
    return check.findings
