"""Reading an input into items: JSON Lines line by line, a JSON document whole.

An input is JSON Lines when its first non-blank line is a complete JSON value and another
non-blank line follows; each line is then one item, read as it comes (memory stays bounded
by the longest line). Anything else is one JSON document, read whole: a top-level array's
elements are the items, any other value is the only item. So a JSON Lines file reads
exactly like an array whose elements are its lines.

Decoding is as strict as the transcript reader's (duplicate keys, NaN, lone surrogates,
invalid UTF-8 are refused) with a larger size cap, since one input holds many records.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any

from toolreplay.canonical import decode
from toolreplay.errors import InputError
from toolreplay.importers.base import Item, Location

#: Largest input document, and longest JSON Lines line, accepted (bytes).
MAX_INPUT_BYTES = 512 * 1024 * 1024


def decode_value(raw: bytes) -> Any:
    """Strictly decode one JSON text of an input (a whole document or one line)."""
    return decode(raw, max_bytes=MAX_INPUT_BYTES, what="input")


def _readline(stream: IO[bytes], path: str) -> bytes:
    try:
        return stream.readline(MAX_INPUT_BYTES + 2)
    except OSError as err:
        raise InputError(err.strerror or "cannot be read", path=path) from err


def _strip(raw: bytes) -> bytes:
    if raw.endswith(b"\r\n"):
        return raw[:-2]
    return raw[:-1] if raw.endswith(b"\n") else raw


def _next_line(stream: IO[bytes], path: str, number: int, seen: list[bytes]) -> tuple[int, bytes | None]:
    """The next non-blank line after line ``number`` (ending removed), kept in ``seen``."""
    while True:
        raw = _readline(stream, path)
        if not raw:
            return number, None
        number += 1
        seen.append(raw)
        if not raw.endswith(b"\n") and len(raw) > MAX_INPUT_BYTES:
            raise InputError(f"line is over the {MAX_INPUT_BYTES}-byte limit", path=path, line=number)
        line = _strip(raw)
        if line.strip(b" \t\r"):
            return number, line


def _try_decode(raw: bytes) -> tuple[bool, Any]:
    try:
        return True, decode_value(raw)
    except InputError:
        return False, None


def read_items(stream: IO[bytes], path: str) -> Iterator[Item]:
    """Yield the items of an open input; ``path`` only names it in errors."""
    seen: list[bytes] = []
    first_number, first = _next_line(stream, path, 0, seen)
    if first is None:
        return
    ok, value = _try_decode(first)
    if ok:
        second_number, second = _next_line(stream, path, first_number, seen)
        if second is None:
            yield from _document_items(value)
            return
        yield Item(Location(first_number), value)
        yield from _lines(stream, path, second_number, second)
        return
    try:
        rest = stream.read(MAX_INPUT_BYTES + 1)
    except OSError as err:
        raise InputError(err.strerror or "cannot be read", path=path) from err
    yield from _document_items(_decode_document(b"".join(seen) + rest, path))


def _lines(stream: IO[bytes], path: str, number: int, line: bytes | None) -> Iterator[Item]:
    """The items of a JSON Lines input from ``line`` (at ``number``) on, one per line."""
    while line is not None:
        try:
            value = decode_value(line)
        except InputError as err:
            raise InputError(err.problem, path=path, line=number) from err
        yield Item(Location(number), value)
        number, line = _next_line(stream, path, number, [])


def _decode_document(raw: bytes, path: str) -> Any:
    try:
        return decode_value(raw)
    except InputError as err:
        cause = err.__cause__
        line = getattr(cause, "lineno", None)  # a JSONDecodeError's, or a depth refusal's
        problem = err.problem
        if isinstance(cause, json.JSONDecodeError):
            problem = f"invalid JSON: {cause.msg} at column {cause.colno}"
        raise InputError(problem, path=path, line=line) from err


def _document_items(value: Any) -> Iterator[Item]:
    if isinstance(value, list):
        for i, element in enumerate(value):
            yield Item(Location(None, f"/{i}"), element)
    else:
        yield Item(Location(None), value)


def items_of_value(value: Any) -> Iterator[Item]:
    """The items of a value already in memory, read like a JSON document."""
    return _document_items(value)
