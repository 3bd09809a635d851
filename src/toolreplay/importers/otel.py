"""OpenTelemetry: tool spans in OTLP JSON exports, by the OTel GenAI conventions or OpenInference.

An item is one OTLP JSON ``ExportTraceServiceRequest`` (:mod:`toolreplay.importers.otlp`
reads it): what the collector's file exporter writes, one per line, what an OTLP/HTTP JSON
body holds, or what ``record --otlp`` makes of a protobuf body.

A span is a tool call by the first convention that claims it (docs/importers.md, ``otel``):

* OTel GenAI: ``gen_ai.operation.name`` is ``execute_tool`` (or, as earlier Pydantic AI
  spans have it, no operation name and a ``gen_ai.tool.name``). Tool ``gen_ai.tool.name``
  (else the span name after ``execute_tool ``), arguments ``gen_ai.tool.call.arguments``
  (earlier: ``tool_arguments``), result ``gen_ai.tool.call.result`` (also
  ``gen_ai.tool.call.response``; earlier: ``tool_response``), id ``gen_ai.tool.call.id``.
* OpenInference: ``openinference.span.kind`` is ``TOOL``. Tool ``tool.name`` (else the span
  name), arguments ``input.value``, result ``output.value``, id ``tool_call.id``; a LangChain
  ``ToolMessage`` as the output is unwrapped to its content (and its ``tool_call_id``).

A result recorded as a JSON text becomes the JSON value it holds, marked ``"_json_text": true``
in the response. A span with status ERROR (or an ``error.type`` attribute) is a failed call;
its ``error`` is the message of its ``exception`` event, else its status message, else
``error.type``.

Each trace (``traceId``) is one session. A trace's spans may arrive in any order and in
any export, so the tool spans of the whole input are collected first (only the fields a
record needs), then each trace's calls are ordered by start time (file order breaks ties)
and the traces by their first call's start time, then trace id. An input with spans but
no tool span gives a :class:`~toolreplay.importers.base.TraceWarning`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from toolreplay.canonical import decode
from toolreplay.errors import InputError
from toolreplay.importers.base import (
    ABSENT,
    JSON_TEXT,
    Arguments,
    Item,
    Location,
    Session,
    TraceWarning,
    make_response,
    read_arguments,
)
from toolreplay.importers.otlp import Span, exception_message, failed, spans, start_time, trace_id
from toolreplay.importers.pairing import Pairing
from toolreplay.limits import MAX_DEPTH
from toolreplay.transcript import type_name

OPERATION = "gen_ai.operation.name"
TOOL_NAME = "gen_ai.tool.name"
CALL_ID = "gen_ai.tool.call.id"
#: the current name first, then the earlier ones (Pydantic AI's instrumentation version 2)
ARGUMENTS = ("gen_ai.tool.call.arguments", "tool_arguments")
RESULTS = ("gen_ai.tool.call.result", "gen_ai.tool.call.response", "tool_response")
ERROR_TYPE = "error.type"
SPAN_KIND = "openinference.span.kind"
#: what the warning for an input without tool spans says was looked for
LOOKED_FOR = (
    f'OTel GenAI ({OPERATION} "execute_tool" or {TOOL_NAME})'
    f' and OpenInference ({SPAN_KIND} "TOOL") tool spans'
)


@dataclass(frozen=True, slots=True)
class _ToolSpan:
    start: int
    tool: str
    call_id: str | None
    arguments: Arguments
    response: dict[str, Any] | None
    location: Location


@dataclass(frozen=True, slots=True)
class _Call:
    """What a convention reads from a tool span, before the shared rules (status, start) apply."""

    tool: str
    call_id: Any
    arguments: Any
    result: Any
    #: an error a convention finds in the result itself (LangChain's ``status: "error"``)
    result_failed: bool = False


class OTel:
    """The ``otel`` importer."""

    name = "otel"

    def sessions(self, items: Iterable[Item]) -> Iterator[Session]:
        traces: dict[str, list[_ToolSpan]] = {}
        seen = 0
        for item in items:
            seen += _add_tool_spans(item, traces)
        if not traces:
            noun = "span" if seen == 1 else "spans"
            warnings.warn(TraceWarning(f"{seen} {noun}, no tool call: looked for {LOOKED_FOR}"), stacklevel=2)
        # sorted() is stable: spans that start together keep their file order
        ranked = sorted(traces.items(), key=lambda kv: (min(s.start for s in kv[1]), kv[0]))
        for number, (_, tool_spans) in enumerate(ranked):
            yield _trace(tool_spans, number)


def _add_tool_spans(item: Item, traces: dict[str, list[_ToolSpan]]) -> int:
    """Add an item's tool spans to their traces' lists; the number of spans the item holds."""
    seen = 0
    for span in spans(item):
        seen += 1
        call = _tool_call(span)
        if call is not None:
            traces.setdefault(trace_id(span), []).append(_tool_span(span, call))
    return seen


def _trace(tool_spans: list[_ToolSpan], number: int) -> Session:
    """One trace's tool spans as a session, in the order they started."""
    pairing = Pairing()
    for span in sorted(tool_spans, key=lambda s: s.start):
        pairing.call(
            tool=span.tool,
            call_id=span.call_id,
            arguments=span.arguments,
            location=span.location,
            response=span.response,
        )
    return pairing.session(number)


def _tool_call(span: Span) -> _Call | None:
    """The call a span records by the first convention that claims it, or None."""
    for convention in _CONVENTIONS:
        call = convention(span)
        if call is not None:
            return call
    return None


def _first(attributes: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((attributes[key] for key in keys if key in attributes), ABSENT)


def _gen_ai(span: Span) -> _Call | None:
    """An OTel GenAI ``execute_tool`` span (also the earlier spans that carry only the tool name)."""
    attributes = span.attributes
    operation = attributes.get(OPERATION)
    if operation != "execute_tool" and (operation is not None or TOOL_NAME not in attributes):
        return None
    return _Call(
        tool=_tool_name(span, TOOL_NAME, "execute_tool "),
        call_id=attributes.get(CALL_ID),
        arguments=_first(attributes, ARGUMENTS),
        result=_first(attributes, RESULTS),
    )


def _open_inference(span: Span) -> _Call | None:
    """An OpenInference ``TOOL`` span."""
    attributes = span.attributes
    kind = attributes.get(SPAN_KIND)
    if not isinstance(kind, str) or kind.upper() != "TOOL":
        return None
    result = attributes.get("output.value", ABSENT)
    if attributes.get("output.mime_type") == "text/plain":
        result = _Text(result)
    call = _Call(
        tool=_tool_name(span, "tool.name", ""),
        call_id=attributes.get("tool_call.id"),
        arguments=attributes.get("input.value", ABSENT),
        result=result,
    )
    return _unwrap_tool_message(call)


_CONVENTIONS: tuple[Callable[[Span], _Call | None], ...] = (_gen_ai, _open_inference)


@dataclass(frozen=True, slots=True)
class _Text:
    """A result the span says is plain text: never decoded as JSON."""

    text: Any


def _unwrap_tool_message(call: _Call) -> _Call:
    """LangChain's OpenInference spans record the ``ToolMessage`` a tool's output became
    (``{"type": "tool", "data": {"content", "tool_call_id", "status", ...}}``): the call's result
    is its ``content``, its id the message's ``tool_call_id``, and ``status: "error"`` a failure."""
    data = _tool_message_data(call.result)
    if data is None:
        return call
    call_id = data.get("tool_call_id")
    return _Call(
        tool=call.tool,
        call_id=call.call_id if call.call_id is not None or not isinstance(call_id, str) else call_id,
        arguments=call.arguments,
        result=data["content"],
        result_failed=data.get("status") == "error",
    )


def _tool_message_data(result: Any) -> dict[str, Any] | None:
    """The ``data`` of a LangChain ``ToolMessage`` a result's JSON text holds (None: it holds none)."""
    message = _json_value(result) if isinstance(result, str) else None
    data = message.get("data") if isinstance(message, dict) and message.get("type") == "tool" else None
    if not isinstance(data, dict) or data.get("type") != "tool" or "content" not in data:
        return None
    return data


def _json_value(text: str) -> Any:
    """The JSON value a text holds (decoded strictly), or ABSENT when it holds none."""
    try:
        return decode(text.encode("utf-8", "surrogatepass"))
    except InputError:
        return ABSENT


def _tool_span(span: Span, call: _Call) -> _ToolSpan:
    if call.call_id is not None and not isinstance(call.call_id, str):
        raise span.location.error(f"a tool call id must be a string, not {type_name(call.call_id)}")
    return _ToolSpan(
        start=start_time(span.value, span.location),
        tool=call.tool,
        call_id=call.call_id,
        arguments=read_arguments(call.arguments),
        response=_response(span, call),
        location=span.location,
    )


def _tool_name(span: Span, key: str, prefix: str) -> str:
    """The tool's name: its attribute, else what the span's name says after ``prefix``."""
    tool = span.attributes.get(key)
    if tool is None:
        tool = _name_after(span.value.get("name"), prefix)
    if not isinstance(tool, str) or not tool:
        raise span.location.error(f'a tool span without a tool name (no "{key}" attribute)')
    return tool


def _name_after(name: Any, prefix: str) -> str | None:
    """What a span's ``name`` says after ``prefix`` (None: it does not start so, or says nothing)."""
    if isinstance(name, str) and name.startswith(prefix) and name[len(prefix) :].strip():
        return name[len(prefix) :].strip()
    return None


def _response(span: Span, call: _Call) -> dict[str, Any] | None:
    """The call's response: an error when the span failed, else its result; None without either."""
    content, extra = _content(call.result)
    status = failed(span)
    error_type = span.attributes.get(ERROR_TYPE)
    if status is not None or error_type is not None or call.result_failed:
        response = _error_response(span, content, status, error_type)
    elif content is not ABSENT:
        response = make_response(content)
    else:
        return None
    return {**response, **extra}


def _error_response(span: Span, content: Any, status: str | None, error_type: Any) -> dict[str, Any]:
    """A failed call's response; its error is the exception's message, else the status's, else the
    error type."""
    message = exception_message(span) or status or error_type
    return make_response(content, is_error=True, error=message)


#: the deepest value ``content`` may hold: the record is level 1, ``response`` level 2
_CONTENT_DEPTH = MAX_DEPTH - 2


def _content(result: Any) -> tuple[Any, dict[str, Any]]:
    """A result as ``content``: a JSON text becomes its value (and the response says so), unless
    the value is nested too deep for a record, where the text itself fits."""
    if isinstance(result, _Text):
        return result.text, {}
    if isinstance(result, str):
        value = _json_value(result)
        if value is not ABSENT and _fits(value, _CONTENT_DEPTH):
            return value, {JSON_TEXT: True}
    return result, {}


def _fits(value: Any, depth: int) -> bool:
    """Whether ``value`` nests arrays and objects no deeper than ``depth`` levels (itself counted)."""
    level: list[Any] = [value]
    for _ in range(depth):
        level = _next_level(level)
        if not _any_nested(level):
            return True
    return not _any_nested(level)


def _next_level(level: list[Any]) -> list[Any]:
    """The members and items of the arrays and objects of one level."""
    return [
        child
        for v in level
        if isinstance(v, (dict, list))
        for child in (v.values() if isinstance(v, dict) else v)
    ]


def _any_nested(level: list[Any]) -> bool:
    return any(isinstance(v, (dict, list)) for v in level)
