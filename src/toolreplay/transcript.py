"""Transcript records and the strict, streaming JSON Lines reader (docs/spec.md §1.1, §1.3)."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import IO, Any

import orjson

from toolreplay.canonical import (
    canonical,
    canonical_decoded,
    canonical_str,
    check_shape,
    colons_agree,
    decode_reference,
    integers_agree,
    loads_unproven,
    long_integer,
    too_deep,
)
from toolreplay.errors import InputError
from toolreplay.files import SEALED_SUFFIX
from toolreplay.limits import MAX_DEPTH, MAX_RECORD_BYTES
from toolreplay.locate import pointer_token

GENESIS = "0" * 64
REQUIRED = ("index", "tool", "args", "response")
OPTIONAL = ("fingerprint", "state", "text_digest")
LINK_EXTRA = ("prev", "digest")
_ALLOWED = {False: frozenset(REQUIRED + OPTIONAL), True: frozenset(REQUIRED + OPTIONAL + LINK_EXTRA)}
_REQUIRED = {False: frozenset(REQUIRED), True: frozenset(REQUIRED + LINK_EXTRA)}
_FINGERPRINT = re.compile(r"[0-9a-f]{16}")
_DIGEST = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Record:
    """One tool call as recorded, with the canonical text of its parts."""

    index: int
    tool: str
    args: dict[str, Any]
    response: dict[str, Any]
    fingerprint: str | None = None
    state: dict[str, str] | None = None
    #: the digest of the tool's contract text when the call was made (contracts/text.py)
    text_digest: str | None = None
    line: int = 0
    canon_args: str = ""
    canon_response: str = ""
    canon_state: str | None = None

    @property
    def call_key(self) -> str:
        """``canonical({"tool": tool, "args": args})``: identical calls share it."""
        return '{"args":' + self.canon_args + ',"tool":' + canonical_str(self.tool) + "}"

    def fields(self) -> dict[str, Any]:
        """The record as the JSON object it was read from."""
        out: dict[str, Any] = {
            "index": self.index,
            "tool": self.tool,
            "args": self.args,
            "response": self.response,
        }
        if self.fingerprint is not None:
            out["fingerprint"] = self.fingerprint
        if self.state is not None:
            out["state"] = self.state
        if self.text_digest is not None:
            out["text_digest"] = self.text_digest
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Link:
    """One line of a sealed transcript: a record plus its chain fields."""

    record: Record
    prev: str
    digest: str
    raw: bytes


def type_name(value: Any) -> str:
    """How a JSON value's type is named in error messages."""
    if value is None:
        return "null"
    for kind, name in _TYPE_NAMES:
        if isinstance(value, kind):
            return name
    return "an object"


#: the names of the JSON types type_name tells apart, in the order it asks (a bool is an int)
_TYPE_NAMES: tuple[tuple[type, str], ...] = (
    (bool, "a boolean"),
    (int, "an integer"),
    (float, "a number"),
    (str, "a string"),
    (list, "an array"),
)


def _field_error(name: str, want: str, value: Any) -> InputError:
    return InputError(f'field "{name}" must be {want}, not {type_name(value)}', pointer=f"/{name}")


def check_fields(value: Any, *, sealed: bool) -> None:
    """Refuse a decoded line whose fields break docs/spec.md §1.1 (or §1.3 for a sealed link)."""
    if not isinstance(value, dict):
        raise InputError(f"a record must be a JSON object, not {type_name(value)}")
    if not (value.keys() <= _ALLOWED[sealed] and _REQUIRED[sealed] <= value.keys()):
        _refuse_field_names(value, sealed=sealed)
    _check_index_and_tool(value["index"], value["tool"])
    for name in ("args", "response"):
        if not isinstance(value[name], dict):
            raise _field_error(name, "an object", value[name])
    for name, check in _OPTIONAL_CHECKS:
        if name in value:
            check(value[name])
    if sealed:
        _check_chain_fields(value)


def _check_text_digest(digest: Any) -> None:
    if not isinstance(digest, str):
        raise _field_error("text_digest", "a string of 64 lowercase hex digits", digest)
    if not _DIGEST.fullmatch(digest):
        raise InputError('field "text_digest" must be 64 lowercase hex digits', pointer="/text_digest")


def _refuse_field_names(value: dict[str, Any], *, sealed: bool) -> None:
    """The first unknown field, else the first missing one."""
    unknown = sorted(k for k in value if k not in _ALLOWED[sealed])
    if unknown:
        raise InputError(f"unknown field {canonical(unknown[0])}", pointer="/" + pointer_token(unknown[0]))
    missing = next(name for name in REQUIRED + LINK_EXTRA if name not in value)
    raise InputError(f'missing field "{missing}"')


def _check_index_and_tool(index: Any, tool: Any) -> None:
    if type(index) is not int:  # bool is an int subclass, and 1.0 is not an integer here
        raise _field_error("index", "an integer", index)
    if index < 0:
        raise InputError('field "index" must not be negative', pointer="/index")
    if not isinstance(tool, str):
        raise _field_error("tool", "a string", tool)
    if not tool:
        raise InputError('field "tool" must not be empty', pointer="/tool")


def _check_fingerprint(fingerprint: Any) -> None:
    if not isinstance(fingerprint, str):
        raise _field_error("fingerprint", "a string of 16 lowercase hex digits", fingerprint)
    if not _FINGERPRINT.fullmatch(fingerprint):
        raise InputError('field "fingerprint" must be 16 lowercase hex digits', pointer="/fingerprint")


def _check_state(state: Any) -> None:
    if not isinstance(state, dict):
        raise _field_error("state", "an object of strings", state)
    for key, item in state.items():
        if not isinstance(item, str):
            raise InputError(
                f"state values must be strings, not {type_name(item)}",
                pointer="/state/" + pointer_token(key),
            )


def _check_chain_fields(value: dict[str, Any]) -> None:
    """A sealed link's ``prev`` and ``digest``."""
    for name in LINK_EXTRA:
        if not isinstance(value[name], str) or not _DIGEST.fullmatch(value[name]):
            raise InputError(f'field "{name}" must be 64 lowercase hex digits', pointer=f"/{name}")


# the optional fields of a record, in the order check_fields checks them
_OPTIONAL_CHECKS: tuple[tuple[str, Callable[[Any], None]], ...] = (
    ("fingerprint", _check_fingerprint),
    ("state", _check_state),
    ("text_digest", _check_text_digest),
)


def _build(value: Any, *, sealed: bool, line: int, decoded: bool = True) -> tuple[Record, dict[str, Any]]:
    """Check a decoded line's fields and build its record.

    ``decoded`` says the value came out of a JSON decoder, so the faster canonical
    encoder applies; values built in Python (``make_record``) take :func:`canonical`.
    """
    check_fields(value, sealed=sealed)
    encode = canonical_decoded if decoded else canonical
    state = value.get("state")
    record = Record(
        index=value["index"],
        tool=value["tool"],
        args=value["args"],
        response=value["response"],
        fingerprint=value.get("fingerprint"),
        state=state,
        text_digest=value.get("text_digest"),
        line=line,
        canon_args=encode(value["args"]),
        canon_response=encode(value["response"]),
        canon_state=None if state is None else encode(state),
    )
    return record, value


def _colon_count(record: Record, top_level: int) -> int:
    """Colons in the canonical text of the whole record (hex fields hold none)."""
    n = top_level + record.canon_args.count(":") + record.canon_response.count(":") + record.tool.count(":")
    if record.canon_state is not None:
        n += record.canon_state.count(":")
    return n


# --- checks for the fast paths (chain's seal and verify, replay's calls) -----------------------
#
# Each answers "fine" only where the exact path (check_shape, decode_reference, check_fields)
# would accept, and is written flat: it runs once per line of files of any size.

_BOM = b"\xef\xbb\xbf"
_PLAIN_RECORD = frozenset(REQUIRED)
_PLAIN_LINK = frozenset(REQUIRED + LINK_EXTRA)


def shape_fits(raw: bytes) -> bool:
    """The reader's shape limits (size, depth, BOM), cheapest first: the fast path must not
    take a line the exact path refuses."""
    if len(raw) > MAX_RECORD_BYTES or raw.startswith(_BOM):
        return False
    return raw.count(b"{") + raw.count(b"[") <= MAX_DEPTH or not too_deep(raw)


def fields_fit(value: Any, *, sealed: bool) -> bool:
    """Does a decoded line pass ``check_fields``? The usual record (no fingerprint, no state)
    is checked here, anything else by ``check_fields`` itself."""
    if type(value) is not dict:
        return False
    if value.keys() != (_PLAIN_LINK if sealed else _PLAIN_RECORD):
        return _passes_check_fields(value, sealed=sealed)
    if sealed and not (type(value["prev"]) is str and type(value["digest"]) is str):
        return False
    return _plain_fields_fit(value)


def _passes_check_fields(value: dict[str, Any], *, sealed: bool) -> bool:
    try:
        check_fields(value, sealed=sealed)
    except InputError:
        return False
    return True


def _plain_fields_fit(value: dict[str, Any]) -> bool:
    """The four fields every record has, of the usual record (no fingerprint, no state)."""
    index, tool = value["index"], value["tool"]
    return (
        type(index) is int
        and index >= 0
        and type(tool) is str
        and tool != ""
        and type(value["args"]) is dict
        and type(value["response"]) is dict
    )


# what fitting_record counts in a line in one pass: brackets, whose number bounds its depth,
# and colons, which no_hidden_loss compares (one translation costs less than three counts)
_NOT_COUNTED = bytes(b for b in range(256) if b not in b"[{:")


def fitting_record(raw: bytes, *, sealed: bool) -> tuple[Any, int] | None:
    """(orjson's value, the line's number of colons) for a line that fits the reader's shape
    limits and whose fields pass ``check_fields``; None otherwise. Not yet proven strict:
    see :func:`no_hidden_loss`, which takes the colons."""
    if len(raw) > MAX_RECORD_BYTES or raw.startswith(_BOM):
        return None
    counted = raw.translate(None, _NOT_COUNTED)
    colons = counted.count(b":")
    if len(counted) - colons > MAX_DEPTH and too_deep(raw):
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return (value, colons) if fields_fit(value, sealed=sealed) else None


def no_hidden_loss(raw: bytes, colons: int, canonical_colons: int, *texts: bytes) -> bool:
    """``colons_agree`` and ``integers_agree`` (see canonical's module docstring) for a line
    with ``colons`` colons whose canonical parts are ``texts``: no duplicate key and no
    integer beyond 64 bits was lost by orjson. One-byte searches first: most lines hold no
    backslash and no ``+``."""
    if colons != canonical_colons:
        return False
    if b"\\" in raw and raw.rfind(b"\\u003") >= 0 and not colons_agree(raw, canonical_colons):
        return False
    for text in texts:  # (a loop, not any(): a generator costs more than the searches)
        if b"+" in text:
            return not long_integer(raw)
    return True


def parse_line(raw: bytes, *, sealed: bool = False, line: int = 0) -> tuple[Record, dict[str, Any]]:
    """Parse one non-blank line (without its line ending) into a record.

    Raises :class:`InputError` without a location; readers add file and line.
    """
    check_shape(raw)
    value = loads_unproven(raw)
    if value is not None:
        try:
            record, value = _build(value, sealed=sealed, line=line)
        except (InputError, ValueError):
            pass  # a duplicate key may come first: the reference decoder decides below
        else:
            texts = (record.canon_args, record.canon_response, record.canon_state or "")
            if colons_agree(raw, _colon_count(record, len(value))) and integers_agree(raw, *texts):
                return record, value
    return _build(decode_reference(raw), sealed=sealed, line=line)


def open_input(path: str) -> IO[bytes]:
    """Open a file for reading, turning OS errors into one-line usage errors."""
    if path == "-":
        return sys.stdin.buffer
    return _open(path)


def _open(path: str) -> IO[bytes]:
    try:
        if os.path.isdir(path):
            raise InputError("is a directory, not a file", path=path)
        return open(path, "rb")
    except FileNotFoundError as err:
        raise InputError("no such file", path=path) from err
    except PermissionError as err:
        raise InputError("permission denied", path=path) from err
    except OSError as err:
        raise InputError(err.strerror or "cannot be read", path=path) from err
    except ValueError as err:  # open() refuses a path with a NUL in it
        raise InputError("a path cannot hold a NUL character", path=path.replace("\0", "\\0")) from err


def read_input(path: str, limit: int = -1) -> bytes:
    """The bytes of a file (``-``: standard input), at most ``limit`` of them (-1: all), with
    errors on opening and on reading (a device, ``/proc``, a failing disk) as usage errors."""
    stream = open_input(path)
    try:
        return stream.read(limit)
    except OSError as err:
        raise InputError(err.strerror or "cannot be read", path=path) from err
    finally:
        if path != "-":
            stream.close()


def iter_lines(stream: IO[bytes], path: str) -> Iterator[tuple[int, bytes]]:
    """Yield (line number, line without its ending) for every non-blank line.

    Lines split on ``\\n`` only; a ``\\r\\n`` ending loses its ``\\r``. A line longer than
    the record cap is refused without reading the rest of it.
    """
    number = 0
    while True:
        try:
            raw = stream.readline(MAX_RECORD_BYTES + 2)
        except OSError as err:
            raise InputError(err.strerror or "cannot be read", path=path) from err
        if not raw:
            return
        number += 1
        raw = _without_ending(raw, path, number)
        if raw.strip(b" \t\r"):
            yield number, raw


def _without_ending(raw: bytes, path: str, number: int) -> bytes:
    """A line read by :func:`iter_lines` without its ending; a line with no ending past the
    record cap is refused."""
    if raw.endswith(b"\n"):
        return raw[:-2] if raw.endswith(b"\r\n") else raw[:-1]
    if len(raw) > MAX_RECORD_BYTES:
        raise InputError(f"record is over the {MAX_RECORD_BYTES}-byte limit", path=path, line=number)
    return raw


_EMPTY: dict[str, Any] = {}


def slim(record: Record) -> Record:
    """The record without its parsed ``args`` and ``response`` (left empty), for holding many
    in memory: the canonical texts stay, and they are what comparisons use; parse them
    (``json.loads(record.canon_args)``) where the values are needed."""
    return replace(record, args=_EMPTY, response=_EMPTY)


def make_record(
    *,
    index: int,
    tool: str,
    args: dict[str, Any],
    response: dict[str, Any],
    fingerprint: str | None = None,
    state: dict[str, str] | None = None,
    text_digest: str | None = None,
) -> Record:
    """Build a record from values (an importer, a recorder), under the reader's rules."""
    value: dict[str, Any] = {"index": index, "tool": tool, "args": args, "response": response}
    if fingerprint is not None:
        value["fingerprint"] = fingerprint
    if state is not None:
        value["state"] = state
    if text_digest is not None:
        value["text_digest"] = text_digest
    try:
        return _build(value, sealed=False, line=0, decoded=False)[0]
    except ValueError as err:  # NaN or infinity somewhere in the values
        raise InputError(f"not representable as JSON: {err}") from err


def with_state(record: Record, state: dict[str, str] | None) -> Record:
    """``record`` with the post-call state ``state`` instead of its own (None: without one),
    checked as the reader checks it."""
    if state is not None:
        _check_state(state)
    return replace(record, state=state, canon_state=None if state is None else canonical(state))


def record_line(record: Record) -> str:
    """The record as one canonical JSON line (without the newline): how toolreplay writes transcripts."""
    return canonical(record.fields())


def read_transcript(path: str) -> Iterator[Record]:
    """Stream the records of a transcript file ("-" for stdin), refusing what docs/spec.md §1.1 refuses."""
    stream = open_input(path)
    try:
        yield from parse_transcript(stream, path)
    finally:
        if stream is not _stdin():
            stream.close()


def parse_transcript(stream: IO[bytes], path: str) -> Iterator[Record]:
    """Stream the records of an open transcript; ``path`` only names it in errors."""
    for expected, (number, raw) in enumerate(iter_lines(stream, path)):
        try:
            record, _ = parse_line(raw, line=number)
        except InputError as err:
            raise _locate(err, path, number) from err
        if record.index != expected:
            raise out_of_order(record.index, expected, path=path, line=number)
        yield record


def out_of_order(index: int, expected: int, *, path: str, line: int) -> InputError:
    """A record whose index does not follow the one before it (docs/spec.md §1.1)."""
    return InputError(
        f"index {index} is out of order: expected {expected}", path=path, line=line, pointer="/index"
    )


def read_links(path: str) -> Iterator[Link]:
    """Stream the links of a sealed transcript file. Order is not checked here: see chain.verify."""
    stream = open_input(path)
    try:
        yield from parse_links(stream, path)
    finally:
        if stream is not _stdin():
            stream.close()


def parse_links(stream: IO[bytes], path: str) -> Iterator[Link]:
    """Stream the links of an open sealed transcript (a staged git blob, say)."""
    for number, raw in iter_lines(stream, path):
        try:
            record, value = parse_line(raw, sealed=True, line=number)
        except InputError as err:
            raise _locate(err, path, number) from err
        yield Link(record=record, prev=value["prev"], digest=value["digest"], raw=raw)


def _stdin() -> IO[bytes]:
    return sys.stdin.buffer


def _locate(err: InputError, path: str, line: int) -> InputError:
    return InputError(err.problem, path=path, line=line, pointer=err.pointer)


def read_records(path: str) -> list[Record]:
    """A run's records whole (the volatile rules mask their values), in a list."""
    return list(iter_records(path))


def iter_records(path: str) -> Iterator[Record]:
    """A run's records one by one: a sealed file's links' records, or a transcript's."""
    if os.path.basename(path).endswith(SEALED_SUFFIX):
        return (link.record for link in read_links(path))
    return read_transcript(path)
