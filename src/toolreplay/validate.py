"""Check files against the published JSON Schemas (docs/spec.md §1.7)."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Iterator
from typing import IO, Any

from toolreplay.canonical import check_shape, decode_reference
from toolreplay.errors import InputError
from toolreplay.files import LINE_KINDS, NAME_PATTERNS, NOTES_FOLDER
from toolreplay.locate import line_of, pointer_of
from toolreplay.schemas import SCHEMA_FILES, problems
from toolreplay.transcript import check_fields, iter_lines, open_input, read_input

#: most errors listed per file before the rest are counted
MAX_ERRORS = 50


def kind_of(path: str) -> str:
    name = os.path.basename(path)
    folders = os.path.dirname(path.replace(os.sep, "/")).split("/")
    if name.endswith(".md") and NOTES_FOLDER in folders:
        return "drift-note"
    for pattern, kind in NAME_PATTERNS:
        if fnmatch.fnmatchcase(name, pattern):
            return kind
    known = ", ".join(sorted(SCHEMA_FILES))
    raise InputError(f"cannot tell the kind of file from its name; pass --kind ({known})", path=path)


def _schema_errors(
    kind: str, value: Any, path: str, line: int | None, raw: bytes | None = None
) -> Iterator[str]:
    """Schema errors as lines; for a whole document (``raw``), each names its pointer's line."""
    for parts, message in problems(kind, value):
        pointer = pointer_of(parts)
        at = line if raw is None else line_of(raw, pointer)
        where = f"{path}:{at}" if at is not None else path
        yield f"{where}: {message} (at {pointer})"


def _line_errors(kind: str, path: str) -> Iterator[str]:
    stream = open_input(path)
    try:
        yield from _lines_of(kind, stream, path)
    except InputError as err:
        if err.line is None:
            raise  # the file cannot be read at all: a usage error
        yield str(err)  # a line over the size cap, which ends the reading: a problem like any other
    finally:
        stream.close()


def _lines_of(kind: str, stream: IO[bytes], path: str) -> Iterator[str]:
    expected = 0
    for number, raw in iter_lines(stream, path):
        try:
            check_shape(raw)
            value = decode_reference(raw)
        except InputError as err:
            yield str(InputError(err.problem, path=path, line=number, pointer=err.pointer))
            expected += 1
            continue
        found = [] if _plainly_valid(kind, value) else list(_schema_errors(kind, value, path, number))
        yield from found or _index_problems(kind, value, expected, f"{path}:{number}")
        expected += 1


def _index_problems(kind: str, value: Any, expected: int, where: str) -> list[str]:
    """A schema-valid line's index that is no integer, or (in a transcript) out of order."""
    index = value.get("index") if isinstance(value, dict) else None
    if isinstance(index, float):
        return [f"{where}: index {index!r} has a fraction part: not an integer (at /index)"]
    if kind == "transcript" and index != expected:
        return [f"{where}: index {index} is out of order: expected {expected} (at /index)"]
    return []


def _plainly_valid(kind: str, value: Any) -> bool:
    """A line the strict reader's field checks accept is valid under the record's schema
    (tests/unit/test_schema_agreement.py), and is told so without jsonschema: the usual file,
    where every line is fine, is then checked without importing it."""
    try:
        check_fields(value, sealed=kind == "sealed")
    except InputError:
        return False
    return True


def validate_file(path: str, kind: str | None = None) -> list[str]:
    """Return the problems found in one file, one line each (empty when it is valid).

    Raises :class:`InputError` when the file cannot be read or its kind is unknown.
    """
    kind = kind or kind_of(path)
    if kind == "config":
        # the configuration's loader (TOML, pathlib, the kinds) only for a configuration
        from toolreplay.config import config_problems

        found = config_problems(path)
    elif kind in LINE_KINDS:
        found = _line_errors(kind, path)
    elif kind == "drift-note":
        # YAML only for a note: it is a fifth of the validate hook's start-up
        from toolreplay.driftnotes.note import MAX_NOTE_BYTES, note_problems

        raw = read_input(path, MAX_NOTE_BYTES + 1)
        found = iter([str(problem) for problem in note_problems(raw, path)])
    else:
        raw = read_input(path)
        found = _document_errors(kind, raw, path)
    return _capped(found, path)


def _capped(found: Iterable[str], path: str) -> list[str]:
    """The first :data:`MAX_ERRORS` problems, and a line saying when there are more."""
    out: list[str] = []
    for problem in found:
        if len(out) == MAX_ERRORS:
            out.append(f"{path}: more problems not listed (the first {MAX_ERRORS} are above)")
            break
        out.append(problem)
    return out


def _document_errors(kind: str, raw: bytes, path: str) -> Iterator[str]:
    try:
        check_shape(raw)
        value = decode_reference(raw)
    except InputError as err:
        cause = err.__cause__
        line = getattr(cause, "lineno", None)
        yield str(InputError(err.problem, path=path, line=line, pointer=err.pointer))
        return
    yield from _schema_errors(kind, value, path, None, raw)
    if kind == "scope":
        yield from _scope_errors(value, path, raw)


def _scope_errors(value: Any, path: str, raw: bytes) -> Iterator[str]:
    """What ``toolreplay scope`` refuses beyond the published schema (unlisted tools, drafts, format)."""
    # the scope analysis only for a scope (jsonschema is loaded by now: the schema came first)
    from toolreplay.analyses.scope import scope_problems

    for pointer, problem in scope_problems(value):
        yield f"{path}:{line_of(raw, pointer)}: {problem} (at {pointer})"
