"""What every importer shares: where an entry sits in its input, the Session value, the
Importer protocol, and the rules that turn a trace's arguments and results into a record's
``args`` and ``response`` (docs/spec.md §12.1).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import KW_ONLY, dataclass, replace
from hashlib import sha256
from typing import Any, Protocol

from toolreplay.canonical import decode
from toolreplay.errors import InputError
from toolreplay.locate import pointer_token
from toolreplay.transcript import Record, type_name, with_state

#: Marker keys an importer writes into ``args`` and ``response``. A leading underscore keeps
#: them apart from the fields of the tools seen so far; docs/spec.md §12.1 lists them.
RAW_ARGUMENTS = "_raw_arguments"
INVALID_JSON = "_invalid_json"
MISSING_ARGUMENTS = "_missing_arguments"
MISSING_RESULT = "_missing_result"
#: the result was recorded as a JSON text and ``content`` is the value it holds
JSON_TEXT = "_json_text"


class TraceWarning(UserWarning):
    """An input read without error that still needs a word: it holds spans but no tool call.

    Importers issue it with :func:`warnings.warn`; ``toolreplay import`` prints it on stderr
    as a warning line naming the input."""


@dataclass(frozen=True, slots=True)
class Location:
    """Where a value sits in an input: a JSON Lines line (or None for a whole document)
    and a JSON pointer inside that line or document."""

    line: int | None
    pointer: str = ""

    def at(self, *keys: str | int) -> Location:
        """The location of a member or element below this one."""
        tail = "".join("/" + pointer_token(k) for k in keys)
        return Location(self.line, self.pointer + tail)

    def error(self, problem: str) -> InputError:
        """An error at this location; the reader adds the file name."""
        return InputError(problem, line=self.line, pointer=self.pointer or "/")


@dataclass(frozen=True, slots=True)
class Item:
    """One top-level value of an input: a JSON Lines line, or an element of a top-level array."""

    location: Location
    value: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class Session:
    """One conversation or episode of an input, as transcript records.

    ``number`` counts the input's sessions from 0 in the order they appear (OTel: in the
    order of their first tool span's start time). The counts say what the records could
    not carry faithfully; the CLI prints them in its summary line.
    """

    number: int
    records: tuple[Record, ...]
    #: calls whose result was not found (their response is ``{"_missing_result": true}``)
    missing_results: int = 0
    #: results that matched no unanswered call with that id (and tool name): left out
    orphan_results: int = 0
    #: calls whose arguments were not the JSON text of an object (kept under ``_raw_arguments``)
    invalid_arguments: int = 0
    #: calls recorded without arguments at all (``{"_missing_arguments": true}``)
    missing_arguments: int = 0
    #: the source's own id of the session (tau-bench: ``task-13-trial-0``), safe as a file
    #: name part; transcripts are named after it when every session of the input has one
    label: str | None = None


class Importer(Protocol):
    """Reads one trace format. ``sessions`` consumes an input's items in order and yields
    each session as soon as it is complete; it raises :class:`InputError` located with
    :meth:`Location.error` for an entry it cannot read."""

    name: str

    def sessions(self, items: Iterable[Item]) -> Iterator[Session]: ...


def string_member(obj: dict[str, Any], key: str) -> str | None:
    """``obj[key]`` when it is a string, else None (a "type" or "role" to compare with names)."""
    value = obj.get(key)
    return value if isinstance(value, str) else None


def need_object(value: Any, location: Location, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise location.error(f"{what} must be an object, not {type_name(value)}")
    return value


def need_list(value: Any, location: Location, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise location.error(f"{what} must be an array, not {type_name(value)}")
    return value


def need_string(obj: dict[str, Any], key: str, location: Location, what: str) -> str:
    """``obj[key]`` as a non-empty string, or an error naming ``what`` and the key."""
    if key not in obj:
        raise location.error(f'{what} has no "{key}"')
    value = obj[key]
    if not isinstance(value, str):
        raise location.at(key).error(f'"{key}" of {what} must be a string, not {type_name(value)}')
    if not value:
        raise location.at(key).error(f'"{key}" of {what} must not be empty')
    return value


@dataclass(frozen=True, slots=True)
class Arguments:
    """The outcome of reading a call's arguments: the ``args`` object and how it was got."""

    value: dict[str, Any]
    _: KW_ONLY
    #: not the JSON text of an object: kept under ``_raw_arguments``
    invalid: bool = False
    #: the trace has no arguments field: ``{"_missing_arguments": true}``
    missing: bool = False


#: Stands for a field the trace does not have (``None`` is JSON null, which a trace may hold).
ABSENT: Any = object()


def read_arguments(raw: Any) -> Arguments:
    """Turn arguments as a trace records them into ``args``.

    An object is used as it is; a string holding the JSON text of an object is decoded
    (strictly: a duplicate key or NaN makes it invalid). Anything else is kept, never
    dropped, as ``{"_raw_arguments": <as recorded>, "_invalid_json": true}``. ``ABSENT``
    (the trace has no arguments field) gives ``{"_missing_arguments": true}``.
    """
    if raw is ABSENT:
        return Arguments({MISSING_ARGUMENTS: True}, missing=True)
    if isinstance(raw, dict):
        return Arguments(raw)
    if isinstance(raw, str):
        try:
            value = decode(raw.encode("utf-8", "surrogatepass"))
        except InputError:
            value = None
        if isinstance(value, dict):
            return Arguments(value)
    return Arguments({RAW_ARGUMENTS: raw, INVALID_JSON: True}, invalid=True)


def make_response(
    content: Any = ABSENT, *, is_error: bool | None = None, error: Any = None
) -> dict[str, Any]:
    """A result as a ``response`` object: ``{"content": <result as recorded>}``.

    The result is never reinterpreted: a string stays a string (even one holding JSON),
    an object or array is nested as it is. ``is_error`` is kept when the trace states it
    (true or false), and ``error`` holds an error message the trace gives. A result with
    neither content nor error is still a result (``{}``); a call with no result at all gets
    :func:`missing_response` instead.
    """
    response: dict[str, Any] = {}
    if content is not ABSENT:
        response["content"] = content
    if is_error is not None:
        response["is_error"] = is_error
    if error is not None:
        response["error"] = error
    return response


def missing_response() -> dict[str, Any]:
    """The response of a call whose result the trace does not hold."""
    return {MISSING_RESULT: True}


#: ``entries_of(item)`` -> the entries of an episode, or None when the item is itself an entry.
EntriesOf = Callable[[Item], Iterable[Item] | None]


_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def safe_label(text: str) -> str | None:
    """``text`` when it is safe as a file-name part (letters, digits, ``.``, ``_``, ``-``; at most 64)."""
    return text if _LABEL.fullmatch(text) else None


def episode_label(value: Any) -> str | None:
    """The id an episode object gives itself, as a file-name part: tau-bench's ``task_id`` (with
    its ``trial``), or an ``episode_id`` / ``instance_id``; None when it has none that is safe."""
    if not isinstance(value, dict):
        return None
    parts = _label_parts(value)
    label = "-".join(parts)
    return label if parts and _LABEL.fullmatch(label) else None


def _label_parts(value: dict[str, Any]) -> list[str]:
    """tau-bench's ``task-ID`` (and ``trial-N``), else the first of ``episode_id`` and ``instance_id``."""
    if not _id_like(value.get("task_id")):
        return [str(value[key]) for key in ("episode_id", "instance_id") if _id_like(value.get(key))][:1]
    parts = [f"task-{value['task_id']}"]
    if _id_like(value.get("trial")):
        parts.append(f"trial-{value['trial']}")
    return parts


def _id_like(value: Any) -> bool:
    """An integer or a string (not a boolean)."""
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def conversations(items: Iterable[Item], entries_of: EntriesOf) -> Iterator[Iterator[Item]]:
    """Split an input's items into conversations, each an iterator of its entries.

    An input holds either episodes (each item one conversation: an array of entries, or
    an object ``entries_of`` recognises) or the entries of one conversation, one per item;
    mixing both is refused. Entries are streamed: an episode is yielded as soon as its item
    is read, and a loose conversation reads the items as it goes.
    """
    iterator = iter(items)
    first = next(iterator, None)
    if first is None:
        return
    episode = _episode(first, entries_of)
    if episode is None:
        yield _loose(first, iterator, entries_of)
        return
    yield episode
    for item in iterator:
        episode = _episode(item, entries_of)
        if episode is None:
            raise item.location.error(
                "an entry of a conversation among episodes: an input holds either episodes or"
                " the entries of one conversation"
            )
        yield episode


def _episode(item: Item, entries_of: EntriesOf) -> Iterator[Item] | None:
    if isinstance(item.value, list):
        return (Item(item.location.at(i), v) for i, v in enumerate(item.value))
    if not isinstance(item.value, dict):
        raise item.location.error(f"expected an object or an array, not {type_name(item.value)}")
    entries = entries_of(item)
    return None if entries is None else iter(entries)


def _loose(first: Item, rest: Iterator[Item], entries_of: EntriesOf) -> Iterator[Item]:
    yield first
    for item in rest:
        if isinstance(item.value, list) or (isinstance(item.value, dict) and entries_of(item) is not None):
            raise item.location.error(
                "an episode among the entries of one conversation: an input holds either episodes"
                " or the entries of one conversation"
            )
        if not isinstance(item.value, dict):
            raise item.location.error(f"expected an object, not {type_name(item.value)}")
        yield item


def list_member(item: Item, *keys: str) -> Iterable[Item] | None:
    """The elements of the first of ``keys`` that holds an array in the item, or None."""
    for key in keys:
        value = item.value.get(key)
        if isinstance(value, list):
            location = item.location.at(key)
            return [Item(location.at(i), v) for i, v in enumerate(value)]
    return None


#: the resource key of a post-call state taken from the response (``--state-from-response``)
RESPONSE_STATE = "response"


def with_response_state(session: Session, mutators: frozenset[str]) -> Session:
    """The session with a post-call ``state`` on each call to a mutator that has none: the
    SHA-256 of its canonical response (what the tool said the world became)."""
    if not mutators:
        return session
    records = tuple(
        _response_state(r) if r.tool in mutators and r.state is None else r for r in session.records
    )
    return replace(session, records=records)


def _response_state(r: Record) -> Record:
    """``r`` with its response's SHA-256 as its post-call state."""
    return with_state(r, {RESPONSE_STATE: "sha256:" + sha256(r.canon_response.encode("ascii")).hexdigest()})
