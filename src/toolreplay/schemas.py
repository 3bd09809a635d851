"""The published JSON Schemas (docs/spec.md §1.7): their bytes and cached validators.

Below every reader that checks a file against a schema (``validate``, ``config``,
``driftnote``, ``shard``), so none of them imports another for the schema loader.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

#: file kind -> schema file name in schemas/
SCHEMA_FILES: dict[str, str] = {
    "transcript": "transcript-record.schema.json",
    "sealed": "sealed-link.schema.json",
    "scope": "scope.schema.json",
    "report": "report.schema.json",
    "config": "config.schema.json",
    "signature": "signature.schema.json",
    "tool-lock": "tool-lock.schema.json",
    "drift-note": "drift-note.schema.json",
}


def schema_text(name: str) -> bytes:
    """The bytes of a published schema, as shipped inside the package: in its ``schemas``
    folder, beside this module (read by path, as ``ecma.py`` runs its worker: importlib.resources
    imports pathlib, shutil, tempfile... on the validate hook's path)."""
    with open(os.path.join(os.path.dirname(__file__), "schemas", name), "rb") as stream:
        return stream.read()


@cache
def validator(kind: str) -> Draft202012Validator:
    """The validator of ``kind``'s published schema.

    Its ``pattern``s are ECMA-262 (:mod:`toolreplay.ecma`), and a ``format: regex`` (the
    patterns of a scope's argument schemas) must be a valid ECMA-262 expression.
    """
    # imported here: jsonschema is a third of a hook's start-up, and the usual file never needs it
    from toolreplay.ecma import FORMAT_CHECKER, EcmaValidator

    schema = json.loads(schema_text(SCHEMA_FILES[kind]))
    return EcmaValidator(schema, format_checker=FORMAT_CHECKER)  # type: ignore[no-any-return]


def problems(kind: str, value: Any) -> Iterator[tuple[list[str | int], str]]:
    """The schema errors of ``value`` as (where in it, what is wrong), ordered by place then
    message; a pattern that is not ECMA-262 is said so (:func:`toolreplay.ecma.error_message`)."""
    from toolreplay.ecma import error_message, error_pointer_parts  # (loaded by validator() already)

    errors = [
        (error_pointer_parts(error), error_message(error)) for error in validator(kind).iter_errors(value)
    ]
    yield from sorted(errors, key=lambda error: (list(map(str, error[0])), error[1]))
