"""OpenTelemetry: OTLP JSON exports of GenAI ``execute_tool`` spans.

An item is one OTLP JSON ``ExportTraceServiceRequest`` (what the collector's file
exporter writes, one per line, or what an OTLP/HTTP JSON body holds):
``resourceSpans[].scopeSpans[].spans[]``, attributes as ``{"key", "value": AnyValue}`` lists
with typed values (``stringValue``, ``intValue`` as a decimal string, ``doubleValue``,
``boolValue``, ``arrayValue``, ``kvlistValue``, ``bytesValue``).

A span is a tool call when ``gen_ai.operation.name`` is ``execute_tool``. Its tool is
``gen_ai.tool.name`` (else the span name after ``execute_tool ``), its arguments
``gen_ai.tool.call.arguments`` (structured, or a JSON string), its result
``gen_ai.tool.call.result`` (the spelling of the attribute registry) or
``gen_ai.tool.call.response`` (the spelling some examples use); a span with status ERROR
(or with an ``error.type`` attribute) is a failed call: ``is_error`` is true and ``error``
holds the status message, else ``error.type``.

Each trace (``traceId``) is one session. A trace's spans may arrive in any order and in
any export, so the tool spans of the whole input are collected first (only the fields a
record needs), then each trace's calls are ordered by start time (file order breaks ties)
and the traces by their first call's start time, then trace id.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from toolreplay.escape import quote
from toolreplay.importers.base import (
    ABSENT,
    Arguments,
    Item,
    Location,
    Session,
    make_response,
    need_list,
    need_object,
    read_arguments,
)
from toolreplay.importers.pairing import Pairing
from toolreplay.limits import MAX_INT_DIGITS
from toolreplay.transcript import type_name

OPERATION = "gen_ai.operation.name"
TOOL_NAME = "gen_ai.tool.name"
CALL_ID = "gen_ai.tool.call.id"
ARGUMENTS = "gen_ai.tool.call.arguments"
RESULTS = ("gen_ai.tool.call.result", "gen_ai.tool.call.response")
ERROR_TYPE = "error.type"
_STATUS_ERROR = (2, "STATUS_CODE_ERROR")


@dataclass(frozen=True, slots=True)
class _ToolSpan:
    start: int
    tool: str
    call_id: str | None
    arguments: Arguments
    response: dict[str, Any] | None
    location: Location


class OTel:
    """The ``otel`` importer."""

    name = "otel"

    def sessions(self, items: Iterable[Item]) -> Iterator[Session]:
        traces: dict[str, list[_ToolSpan]] = {}
        for item in items:
            for trace_id, span in _tool_spans(item):
                traces.setdefault(trace_id, []).append(span)
        # sorted() is stable: spans that start together keep their file order
        ranked = sorted(traces.items(), key=lambda kv: (min(s.start for s in kv[1]), kv[0]))
        for number, (_, spans) in enumerate(ranked):
            yield _trace(spans, number)


def _trace(spans: list[_ToolSpan], number: int) -> Session:
    """One trace's tool spans as a session, in the order they started."""
    pairing = Pairing()
    for span in sorted(spans, key=lambda s: s.start):
        pairing.call(
            tool=span.tool,
            call_id=span.call_id,
            arguments=span.arguments,
            location=span.location,
            response=span.response,
        )
    return pairing.session(number)


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


def _tool_spans(item: Item) -> Iterator[tuple[str, _ToolSpan]]:
    export = need_object(item.value, item.location, "an OTLP JSON export")
    if "resourceSpans" not in export:
        raise item.location.error('not an OTLP JSON trace export: no "resourceSpans"')
    for rs_at, resource_spans in _members(export, item.location, "resourceSpans"):
        for ss_at, scope_spans in _members(
            resource_spans, rs_at, "scopeSpans", "instrumentationLibrarySpans"
        ):
            for at, span in _members(scope_spans, ss_at, "spans"):
                attributes = _attributes(span, at)
                if attributes.get(OPERATION) != "execute_tool":
                    continue
                yield _trace_id(span, at), _tool_span(span, attributes, at)


def _trace_id(span: dict[str, Any], at: Location) -> str:
    trace_id = span.get("traceId")
    if not isinstance(trace_id, str) or not trace_id:
        raise at.error('a span must have a "traceId" string')
    return trace_id


def _tool_span(span: dict[str, Any], attributes: dict[str, Any], at: Location) -> _ToolSpan:
    call_id = attributes.get(CALL_ID)
    tool = _tool_name(span, attributes, at)
    if call_id is not None and not isinstance(call_id, str):
        raise at.error(f'"{CALL_ID}" must be a string, not {type_name(call_id)}')
    response = _response(span, attributes, at)
    return _ToolSpan(
        start=_start(span, at),
        tool=tool,
        call_id=call_id,
        arguments=read_arguments(attributes.get(ARGUMENTS, ABSENT)),
        response=response,
        location=at,
    )


def _tool_name(span: dict[str, Any], attributes: dict[str, Any], at: Location) -> str:
    """The tool's name: its attribute, else what the span's ``execute_tool NAME`` says."""
    tool = attributes.get(TOOL_NAME)
    if tool is None:
        name = span.get("name")
        if isinstance(name, str) and name.startswith("execute_tool ") and name[13:].strip():
            tool = name[13:].strip()
    if not isinstance(tool, str) or not tool:
        raise at.error(f'an execute_tool span without a tool name (no "{TOOL_NAME}" attribute)')
    return tool


def _response(span: dict[str, Any], attributes: dict[str, Any], at: Location) -> dict[str, Any] | None:
    """The call's response: an error when the span failed, else its result; None without either."""
    result = next((attributes[key] for key in RESULTS if key in attributes), ABSENT)
    failed = _failed(span, at)
    error_type = attributes.get(ERROR_TYPE)
    if failed is not None or error_type is not None:
        return make_response(result, is_error=True, error=failed or error_type)
    if result is not ABSENT:
        return make_response(result)
    return None


def _failed(span: dict[str, Any], at: Location) -> str | None:
    """None when the span did not fail; else its status message ("" when it has none)."""
    status = span.get("status")
    if status is None:
        return None
    status = need_object(status, at.at("status"), '"status"')
    if status.get("code") not in _STATUS_ERROR:
        return None
    message = status.get("message")
    return message if isinstance(message, str) else ""


#: a decimal integer as OTLP JSON writes int64 and uint64 fields: ASCII digits (str.isdigit
#: also takes "²", which int() refuses), no more than Python converts (MAX_INT_DIGITS)
_DECIMAL = re.compile(rf"-?[0-9]{{1,{MAX_INT_DIGITS}}}")
#: the same without a sign: a time
_UNSIGNED = re.compile(rf"[0-9]{{1,{MAX_INT_DIGITS}}}")


def _start(span: dict[str, Any], at: Location) -> int:
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
