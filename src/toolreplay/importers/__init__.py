"""Importers: turn the traces teams already have into transcripts (docs/importers.md).

From Python::

    from toolreplay.importers import import_file, import_value

    for session in import_file("history.json", "openai-chat"):
        print(session.number, len(session.records), session.missing_results)

    # straight from an agent loop: the messages list as it is in memory
    (session,) = import_value(messages, "openai-chat")

Each :class:`Session` holds :class:`toolreplay.transcript.Record` values, ready for
``record_line`` or the analyses.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import IO, Any

from toolreplay.errors import InputError
from toolreplay.escape import quote
from toolreplay.importers.anthropic import Anthropic
from toolreplay.importers.base import Importer, Item, Location, Session, TraceWarning
from toolreplay.importers.detect import detect
from toolreplay.importers.evallog import ZIP_MAGIC, eval_items
from toolreplay.importers.inspect_ai import InspectAI
from toolreplay.importers.openai_chat import OpenAIChat
from toolreplay.importers.openai_responses import OpenAIResponses
from toolreplay.importers.otel import OTel
from toolreplay.importers.source import MAX_INPUT_BYTES, items_of_value, read_items
from toolreplay.importers.swe_agent import SWEAgent
from toolreplay.importers.tau2 import Tau2
from toolreplay.transcript import open_input

#: format name -> importer
IMPORTERS: dict[str, Importer] = {
    importer.name: importer
    for importer in (OpenAIChat(), OpenAIResponses(), Anthropic(), OTel(), SWEAgent(), Tau2(), InspectAI())
}
#: what ``--from`` accepts
FORMATS: tuple[str, ...] = ("auto", *IMPORTERS)

__all__ = [
    "FORMATS",
    "IMPORTERS",
    "Importer",
    "Item",
    "Location",
    "Session",
    "TraceWarning",
    "import_file",
    "import_stream",
    "import_value",
]


def _importer(fmt: str) -> Importer:
    try:
        return IMPORTERS[fmt]
    except KeyError:
        raise InputError(f"unknown format {quote(fmt)}; choose one of {', '.join(FORMATS)}") from None


def import_stream(stream: IO[bytes], path: str, fmt: str = "auto") -> tuple[str, Iterator[Session]]:
    """Start importing an open input: the format (the one detected for ``auto``) and its sessions.

    Sessions are read lazily, one at a time; an unreadable entry raises
    :class:`InputError` naming ``path``, the line (JSON Lines) and the JSON pointer.
    Detection reads the input up to the first item that shows the format; a zip archive is an
    Inspect AI ``.eval`` log.
    """
    if _is_zip(stream):
        if fmt not in ("auto", "inspect"):
            raise InputError(f"is a zip archive, which only --from inspect reads (not {fmt})", path=path)
        data = _read_all(stream, path)
        return "inspect", _located_sessions(IMPORTERS["inspect"].sessions(eval_items(data, path)), path)
    items = _located(read_items(stream, path), path)
    if fmt == "auto":
        try:
            fmt, items = detect(items)
        except InputError as err:
            raise _with_path(err, path) from err
    return fmt, _located_sessions(_importer(fmt).sessions(items), path)


def _is_zip(stream: IO[bytes]) -> bool:
    """Whether the input starts as a zip archive does (looked at without consuming it)."""
    peek = getattr(stream, "peek", None)
    if peek is None:
        return False
    try:
        return bytes(peek(len(ZIP_MAGIC))[: len(ZIP_MAGIC)]) == ZIP_MAGIC
    except OSError:
        return False  # the read that follows says what is wrong


def _read_all(stream: IO[bytes], path: str) -> bytes:
    try:
        data = stream.read(MAX_INPUT_BYTES + 1)
    except OSError as err:
        raise InputError(err.strerror or "cannot be read", path=path) from err
    if len(data) > MAX_INPUT_BYTES:
        raise InputError(f"is over the {MAX_INPUT_BYTES}-byte limit", path=path)
    return data


def import_file(path: str, fmt: str = "auto") -> Iterator[Session]:
    """The sessions of a trace file ("-" for stdin), one at a time; see :func:`import_stream`."""
    stream = open_input(path)
    try:
        _, sessions = import_stream(stream, path, fmt)
        yield from sessions
    finally:
        if path != "-":
            stream.close()


def import_value(value: Any, fmt: str) -> list[Session]:
    """The sessions of a trace already in memory (a message list, an episode, an export).

    ``value`` is read like a JSON document: an array's elements are the items. Errors name
    the JSON pointer inside ``value``. No :class:`TraceWarning` is issued: a value is often one
    part of a trace (an OTLP/HTTP request's spans, as ``record --otlp`` receives them), which
    may well hold no tool call; the caller sees the empty list.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)
        return list(_located_sessions(_importer(fmt).sessions(items_of_value(value)), "<value>"))


def _located(items: Iterator[Item], path: str) -> Iterator[Item]:
    try:
        yield from items
    except InputError as err:
        raise _with_path(err, path) from err


def _located_sessions(sessions: Iterator[Session], path: str) -> Iterator[Session]:
    try:
        yield from sessions
    except InputError as err:
        raise _with_path(err, path) from err


def _with_path(err: InputError, path: str) -> InputError:
    if err.path is not None:
        return err
    return InputError(err.problem, path=path, line=err.line, pointer=err.pointer)
