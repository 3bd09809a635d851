"""The tool definitions an OpenTelemetry trace declares, for ``fingerprint TRACE`` (docs/spec.md §3.5).

An agent's model-call spans list the tools offered to the model:

* OTel GenAI: ``gen_ai.tool.definitions`` on a ``chat`` span, an array (or its JSON text) of
  ``{"type": "function", "name", "description", "parameters"}``; earlier Pydantic AI spans
  have only ``model_request_parameters``, whose ``function_tools`` give ``name``,
  ``description`` and ``parameters_json_schema``;
* OpenInference: ``llm.tools.N.tool.json_schema`` on an ``LLM`` span, each the JSON text of an
  OpenAI tool ``{"type": "function", "function": {"name", "description", "parameters"}}``.

Each becomes a tool definition as a definitions file's would; the same tool declared on many
spans is one tool (a different declaration of it is a warning, the first kept).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from toolreplay.canonical import decode
from toolreplay.errors import InputError
from toolreplay.importers.base import Item, Location
from toolreplay.importers.otlp import Span, spans
from toolreplay.transcript import type_name

DEFINITIONS = "gen_ai.tool.definitions"
REQUEST_PARAMETERS = "model_request_parameters"
_LLM_TOOL = re.compile(r"llm\.tools\.([0-9]{1,9})\.tool\.json_schema")
#: what a trace without any is told was looked for
LOOKED_FOR = f"{DEFINITIONS} (OTel GenAI chat spans) or llm.tools (OpenInference LLM spans)"


def declared_tools(value: Any, line: int | None) -> Iterator[tuple[Any, str]]:
    """Each tool definition the spans of one OTLP JSON export declare, with its JSON pointer
    (an attribute's pointer, then the pointer inside the JSON text it holds)."""
    for span in spans(Item(Location(line), value)):
        yield from _span_tools(span)


def _span_tools(span: Span) -> Iterator[tuple[Any, str]]:
    attributes = span.attributes
    if DEFINITIONS in attributes:
        yield from _defined_tools(span)
    elif REQUEST_PARAMETERS in attributes:
        yield from _request_tools(span)
    yield from _numbered_tools(span)


def _defined_tools(span: Span) -> Iterator[tuple[Any, str]]:
    """The GenAI convention's tool definitions attribute, an array of tools."""
    where = _attribute_pointer(span, DEFINITIONS)
    for i, tool in enumerate(_array(span.attributes[DEFINITIONS], span, DEFINITIONS)):
        yield tool, f"{where}/{i}"


def _numbered_tools(span: Span) -> Iterator[tuple[Any, str]]:
    """The tools of numbered attributes (``_LLM_TOOL``), one JSON text each, in number order."""
    attributes = span.attributes
    numbered = sorted((int(m[1]), key) for key in attributes if (m := _LLM_TOOL.fullmatch(key)))
    for _, key in numbered:
        yield _json(attributes[key], span, key), _attribute_pointer(span, key)


def _request_tools(span: Span) -> Iterator[tuple[Any, str]]:
    """Earlier Pydantic AI: ``model_request_parameters.function_tools`` as bare functions."""
    parameters = _json(span.attributes[REQUEST_PARAMETERS], span, REQUEST_PARAMETERS)
    tools = parameters.get("function_tools") if isinstance(parameters, dict) else None
    if not isinstance(tools, list):
        return
    where = _attribute_pointer(span, REQUEST_PARAMETERS) + "/function_tools"
    for i, tool in enumerate(tools):
        yield _as_definition(tool), f"{where}/{i}"


def _as_definition(tool: Any) -> Any:
    """A bare function of the request parameters as a tool definition (anything else as it is)."""
    if not (isinstance(tool, dict) and "parameters_json_schema" in tool):
        return tool
    return {
        "name": tool.get("name"),
        "description": tool.get("description"),
        "parameters": tool["parameters_json_schema"],
    }


def _array(value: Any, span: Span, key: str) -> list[Any]:
    value = _json(value, span, key)
    if not isinstance(value, list):
        raise InputError(
            f"{key} must be an array of tools, not {type_name(value)}",
            line=span.location.line,
            pointer=_attribute_pointer(span, key),
        )
    return value


def _json(value: Any, span: Span, key: str) -> Any:
    """An attribute's value; a string is the JSON text of it."""
    if not isinstance(value, str):
        return value
    try:
        return decode(value.encode("utf-8", "surrogatepass"))
    except InputError as err:
        raise InputError(
            f"{key} is not JSON text: {err.problem}",
            line=span.location.line,
            pointer=_attribute_pointer(span, key),
        ) from err


def _attribute_pointer(span: Span, key: str) -> str:
    """The JSON pointer of an attribute's value in the export."""
    listed = span.value.get("attributes")
    index = next(
        i for i, pair in enumerate(listed or []) if isinstance(pair, dict) and pair.get("key") == key
    )
    return span.location.at("attributes", index, "value").pointer
