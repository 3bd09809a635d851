"""Tool definitions from traces: OpenInference llm.tools, earlier Pydantic AI request parameters,
and a trace that declares none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolreplay.contracts.definitions import read_definitions
from toolreplay.errors import InputError


def _trace(tmp_path: Path, attributes: dict[str, str]) -> str:
    span = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "00f067aa0ba902b7",
        "startTimeUnixNano": "1",
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()],
    }
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    return str(path)


def _named(definitions: list[Any]) -> dict[str, Any]:
    return {d.name: (d.schema, d.text) for d in definitions}


def test_open_inference_llm_tools(tmp_path: Path) -> None:
    """Each llm.tools.N.tool.json_schema is an OpenAI tool, in N's order."""
    tool = {
        "type": "function",
        "function": {"name": "f", "description": "F.", "parameters": {"type": "object"}},
    }
    path = _trace(
        tmp_path, {"openinference.span.kind": "LLM", "llm.tools.0.tool.json_schema": json.dumps(tool)}
    )
    assert _named(read_definitions(path)) == {"f": ({"type": "object"}, {"description": "F."})}


def test_earlier_pydantic_ai_request_parameters(tmp_path: Path) -> None:
    """Without gen_ai.tool.definitions, model_request_parameters' function_tools are read."""
    parameters = {
        "function_tools": [{"name": "f", "description": "F.", "parameters_json_schema": {"type": "object"}}]
    }
    path = _trace(tmp_path, {"model_request_parameters": json.dumps(parameters)})
    assert _named(read_definitions(path)) == {"f": ({"type": "object"}, {"description": "F."})}


def test_a_trace_without_definitions_is_refused(tmp_path: Path) -> None:
    """A trace whose spans declare no tools is an error that says what was looked for."""
    path = _trace(tmp_path, {"gen_ai.operation.name": "chat"})
    with pytest.raises(
        InputError, match=r"a trace that declares no tools: looked for gen_ai\.tool\.definitions"
    ):
        read_definitions(path)


def test_definitions_that_are_not_json_are_located(tmp_path: Path) -> None:
    """gen_ai.tool.definitions that is not JSON text names the attribute's value."""
    path = _trace(tmp_path, {"gen_ai.tool.definitions": "[{"})
    with pytest.raises(
        InputError,
        match=r"is not JSON text.*\(at /resourceSpans/0/scopeSpans/0/spans/0/attributes/0/value\)",
    ):
        read_definitions(path)
