"""Reading OTLP JSON: the spans of an ``ExportTraceServiceRequest`` and their typed attributes.

An export is ``resourceSpans[].scopeSpans[].spans[]`` (the older ``instrumentationLibrarySpans``
too), attributes a list of ``{"key", "value": AnyValue}`` with typed values (``stringValue``,
``intValue`` as a decimal string, ``doubleValue``, ``boolValue``, ``arrayValue``,
``kvlistValue``, ``bytesValue``), as the OTLP JSON encoding defines them (trace and span ids
as hex strings). The ``otel`` importer and ``fingerprint`` of a trace both read spans here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from toolreplay.escape import quote
from toolreplay.importers.base import Item, Location, need_list, need_object
from toolreplay.limits import MAX_INT_DIGITS
from toolreplay.transcript import type_name


@dataclass(frozen=True, slots=True)
class Span:
    """One span of an export: the span object, its attributes as plain JSON, where it is."""

    value: dict[str, Any]
    attributes: dict[str, Any]
    location: Location


def is_export(value: Any) -> bool:
    """Whether a value is an OTLP JSON trace export (an object with ``resourceSpans``)."""
    return isinstance(value, dict) and "resourceSpans" in value


def spans(item: Item) -> Iterator[Span]:
    """The spans of one export, in file order, each with its attributes read."""
    export = need_object(item.value, item.location, "an OTLP JSON export")
    if "resourceSpans" not in export:
        raise item.location.error('not an OTLP JSON trace export: no "resourceSpans"')
    for rs_at, resource_spans in _members(export, item.location, "resourceSpans"):
        for ss_at, scope_spans in _members(
            resource_spans, rs_at, "scopeSpans", "instrumentationLibrarySpans"
        ):
            for at, span in _members(scope_spans, ss_at, "spans"):
                yield Span(span, _attributes(span, at), at)


def _members(
    obj: dict[str, Any], location: Location, *keys: str
) -> Iterator[tuple[Location, dict[str, Any]]]:
    """The objects of the first of ``keys`` that the object has (an absent list is empty)."""
    for key in keys:
        if key in obj:
            where = location.at(key)
            for i, element in enumerate(need_list(obj[key], where, f'"{key}"')):
                yield where.at(i), need_object(element, where.at(i), f'an element of "{key}"')
            return


#: a decimal integer as OTLP JSON writes int64 and uint64 fields: ASCII digits (str.isdigit
#: also takes "²", which int() refuses), no more than Python converts (MAX_INT_DIGITS)
_DECIMAL = re.compile(rf"-?[0-9]{{1,{MAX_INT_DIGITS}}}")
#: the same without a sign: a time
_UNSIGNED = re.compile(rf"[0-9]{{1,{MAX_INT_DIGITS}}}")


def start_time(span: dict[str, Any], at: Location) -> int:
    raw = span.get("startTimeUnixNano")
    if isinstance(raw, str) and _UNSIGNED.fullmatch(raw):
        return int(raw)
    if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0:
        return raw
    raise at.error('a span must have "startTimeUnixNano" (nanoseconds, as a decimal string or an integer)')


def _attributes(span: dict[str, Any], at: Location) -> dict[str, Any]:
    if "attributes" not in span:
        return {}
    where = at.at("attributes")
    return _key_values(need_list(span["attributes"], where, '"attributes"'), where, "attribute")


def _key_values(pairs: list[Any], at: Location, noun: str) -> dict[str, Any]:
    """OTLP key-value pairs as a JSON object; a key that appears twice is refused."""
    out: dict[str, Any] = {}
    for i, pair in enumerate(pairs):
        key, value = _key_value(pair, at.at(i))
        if key in out:
            raise at.at(i).error(f"{noun} {quote(key)} appears twice")
        out[key] = value
    return out


def _key_value(pair: Any, at: Location) -> tuple[str, Any]:
    pair = need_object(pair, at, "an attribute")
    key = pair.get("key")
    if not isinstance(key, str):
        raise at.error('an attribute must have a "key" string')
    return key, any_value(pair.get("value", {}), at.at("value"))


def any_value(value: Any, at: Location) -> Any:
    """An OTLP JSON ``AnyValue`` as the plain JSON value it stands for."""
    value = need_object(value, at, "an attribute value")
    if not value:
        return None
    if len(value) != 1:
        raise at.error(f"an attribute value must have one field, not {len(value)}")
    ((kind, raw),) = value.items()
    read = _VALUE_READERS.get(kind)
    if read is None:
        raise at.error(f"unknown attribute value type {quote(kind)}")
    return read(kind, raw, at.at(kind))


def _string_value(kind: str, raw: Any, at: Location) -> str:
    if not isinstance(raw, str):
        raise at.error(f'"{kind}" must be a string, not {type_name(raw)}')
    return raw


def _bool_value(kind: str, raw: Any, at: Location) -> bool:
    if not isinstance(raw, bool):
        raise at.error(f'"{kind}" must be a boolean, not {type_name(raw)}')
    return raw


def _int_value(kind: str, raw: Any, at: Location) -> int:
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and _DECIMAL.fullmatch(raw):
        return int(raw)
    raise at.error(f'"{kind}" must be an integer or a decimal string')


def _double_value(kind: str, raw: Any, at: Location) -> int | float:
    if isinstance(raw, int | float) and not isinstance(raw, bool) and math.isfinite(raw):
        return raw
    raise at.error(f'"{kind}" must be a finite number')


def _array_value(kind: str, raw: Any, at: Location) -> list[Any]:
    values = need_list(need_object(raw, at, f'"{kind}"').get("values", []), at.at("values"), '"values"')
    return [any_value(v, at.at("values", i)) for i, v in enumerate(values)]


def _kvlist_value(kind: str, raw: Any, at: Location) -> dict[str, Any]:
    pairs = need_list(need_object(raw, at, f'"{kind}"').get("values", []), at.at("values"), '"values"')
    return _key_values(pairs, at.at("values"), "key")


#: how each field of an ``AnyValue`` is read: (field name, its value, where it is)
_VALUE_READERS: dict[str, Callable[[str, Any, Location], Any]] = {
    "stringValue": _string_value,
    "bytesValue": _string_value,
    "boolValue": _bool_value,
    "intValue": _int_value,
    "doubleValue": _double_value,
    "arrayValue": _array_value,
    "kvlistValue": _kvlist_value,
}


_STATUS_ERROR = (2, "STATUS_CODE_ERROR")


def trace_id(span: Span) -> str:
    """The span's ``traceId`` (hex, as the OTLP JSON encoding writes it)."""
    value = span.value.get("traceId")
    if not isinstance(value, str) or not value:
        raise span.location.error('a span must have a "traceId" string')
    return value


def failed(span: Span) -> str | None:
    """None when the span's status is not ERROR; else its status message ("" when it has none)."""
    status = span.value.get("status")
    if status is None:
        return None
    status = need_object(status, span.location.at("status"), '"status"')
    if status.get("code") not in _STATUS_ERROR:
        return None
    message = status.get("message")
    return message if isinstance(message, str) else ""


def exception_message(span: Span) -> str | None:
    """The ``exception.message`` of the span's first ``exception`` event (what the OTel semantic
    conventions record for a raised exception), or None."""
    events = need_list(span.value.get("events", []), span.location.at("events"), '"events"')
    for i, event in enumerate(events):
        at = span.location.at("events", i)
        event = need_object(event, at, "an event")
        if event.get("name") != "exception":
            continue
        message = _attributes(event, at).get("exception.message")
        if isinstance(message, str) and message:
            return message
    return None
