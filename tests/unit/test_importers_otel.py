"""The otel importer's conventions on hand-made spans: OTel GenAI (current and earlier names) and
OpenInference, JSON text results, and the warning for spans without a tool call."""

from __future__ import annotations

import io
import json
import warnings
from typing import Any

import pytest

from toolreplay.importers import import_stream, import_value
from toolreplay.importers.base import JSON_TEXT, TraceWarning


def _export(*attribute_sets: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    spans = []
    for i, attributes in enumerate(attribute_sets):
        span: dict[str, Any] = {
            "traceId": "0af7651916cd43dd8448eb211c80319c",
            "spanId": f"{i:016x}",
            "name": "span",
            "startTimeUnixNano": str(1000 + i),
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()],
        }
        if status is not None:
            span["status"] = status
        spans.append(span)
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


def _records(export: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    (session,) = import_value(export, "otel")
    return [(r.tool, r.args, r.response) for r in session.records]


def test_earlier_pydantic_ai_names_are_read() -> None:
    """A span with only gen_ai.tool.name and the version-2 tool_arguments / tool_response is a call."""
    export = _export({"gen_ai.tool.name": "f", "tool_arguments": '{"a": 1}', "tool_response": '{"b": 2}'})
    assert _records(export) == [("f", {"a": 1}, {"content": {"b": 2}, "_json_text": True})]


def test_json_text_becomes_a_value_and_plain_text_stays_text() -> None:
    """A result holding JSON text is its value, marked; one that is not JSON is kept as the string."""
    export = _export(
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "f",
            "gen_ai.tool.call.result": "305.0",
        },
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "f",
            "gen_ai.tool.call.result": "sunny",
        },
    )
    assert [r[2] for r in _records(export)] == [{"content": 305.0, "_json_text": True}, {"content": "sunny"}]


def test_json_text_too_deep_for_a_record_stays_text() -> None:
    """JSON text nested deeper than a record allows under ``content`` is kept as the string it was."""
    fits, too_deep = "[" * 126 + "]" * 126, "[" * 127 + "]" * 127
    export = _export(
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "f", "gen_ai.tool.call.result": fits},
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "f",
            "gen_ai.tool.call.result": too_deep,
        },
    )
    first, second = (r[2] for r in _records(export))
    assert first[JSON_TEXT] is True
    assert second == {"content": too_deep}


def test_open_inference_tool_span() -> None:
    """An OpenInference TOOL span: tool.name, input.value as arguments, output.value as the result
    (text/plain output is never decoded)."""
    export = _export(
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "g",
            "input.value": '{"q": "x"}',
            "output.value": "[1]",
        },
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "g",
            "input.value": '{"q": "y"}',
            "output.value": "[2]",
            "output.mime_type": "text/plain",
        },
    )
    assert _records(export) == [
        ("g", {"q": "x"}, {"content": [1], "_json_text": True}),
        ("g", {"q": "y"}, {"content": "[2]"}),
    ]


def test_a_failed_open_inference_span_is_an_error() -> None:
    """Status ERROR makes the call failed, with the status message."""
    export = _export(
        {"openinference.span.kind": "TOOL", "tool.name": "g"}, status={"code": 2, "message": "boom"}
    )
    assert _records(export) == [("g", {"_missing_arguments": True}, {"is_error": True, "error": "boom"})]


def test_spans_without_a_tool_call_warn() -> None:
    """A file whose spans are not tool calls gives no session and a warning naming both conventions."""
    data = io.BytesIO(json.dumps(_export({"gen_ai.operation.name": "chat"})).encode())
    with pytest.warns(TraceWarning, match=r"^1 span, no tool call: looked for OTel GenAI .* OpenInference"):
        assert list(import_stream(data, "in.json", "otel")[1]) == []


def test_a_value_without_a_tool_call_is_quietly_empty() -> None:
    """``import_value`` (one request's spans for the receiver) gives no sessions and no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert import_value(_export({"gen_ai.operation.name": "chat"}), "otel") == []
