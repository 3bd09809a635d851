"""OpenTelemetry's protobuf messages: the adapter of the ``otel`` extra's ``opentelemetry-proto``.

``record --otlp`` (:mod:`toolreplay.capture.otlp`) reads an OTLP/HTTP request body with the
message classes ``opentelemetry-proto`` generates and protobuf's own JSON mapping, and answers
with them: nothing here parses the wire format by hand. A request becomes the OTLP JSON encoding
(docs/spec.md §8.1: lowerCamelCase keys, ``traceId`` and ``spanId`` in hex, enums as integers,
64-bit integers as decimal strings), the form ``toolreplay import --from otel`` reads, so the
receiver hands it to the same importer.

This is the one module that imports those libraries (``opentelemetry.proto``, ``google.protobuf``,
``google.rpc``); each is resolved by the one lazy loader where it is used, once :func:`require`
has found them.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterator
from typing import Any

from toolreplay.extras import require
from toolreplay.lazy import resolve

#: the modules the receiver needs beyond what ``require("otel")`` finds
MODULES = ("opentelemetry.proto", "google.protobuf", "google.rpc", "h11")
_JSON_FORMAT = "google.protobuf.json_format"
_TRACE_SERVICE = "opentelemetry.proto.collector.trace.v1.trace_service_pb2"
#: the fields that hold a trace or span id: hex in OTLP JSON, base64 in protobuf's own mapping
_ID_FIELDS = ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id")


class BadPayload(Exception):
    """A body that is no ``ExportTraceServiceRequest`` in its encoding; the message says why."""


def require_receiver() -> None:
    """Refuse (exit 2) with the install hint when the receiver's libraries are missing."""
    require("otel", "toolreplay record --otlp", modules=MODULES, needs="OpenTelemetry's protobuf messages")


def decode(body: bytes, as_json: bool) -> dict[str, Any]:
    """A request body (binary protobuf, or JSON with ``as_json``) as its OTLP JSON form."""
    json_format, message = resolve(_JSON_FORMAT), resolve("google.protobuf.message")
    request = resolve(f"{_TRACE_SERVICE}:ExportTraceServiceRequest")()
    try:
        if as_json:
            document = json.loads(body.decode("utf-8"), object_pairs_hook=_unique)
            _convert_ids(document, _hex_to_base64)
            json_format.ParseDict(document, request, ignore_unknown_fields=True)
        else:
            request.ParseFromString(body)
    except (ValueError, RecursionError, message.Error, json_format.ParseError) as err:
        raise BadPayload(_first_line(err)) from None
    out: dict[str, Any] = json_format.MessageToDict(request, use_integers_for_enums=True)
    _convert_ids(out, _base64_to_hex)
    return out


def response(rejected: int, problem: str, as_json: bool) -> bytes:
    """An ``ExportTraceServiceResponse``: ``partial_success`` set only when spans were rejected."""
    answer = resolve(f"{_TRACE_SERVICE}:ExportTraceServiceResponse")()
    if rejected:
        answer.partial_success.rejected_spans = rejected
        answer.partial_success.error_message = problem
    return _encoded(answer, as_json)


def status(message: str, as_json: bool) -> bytes:
    """The ``google.rpc.Status`` body of a 4xx answer (``code`` left unset, as OTLP allows)."""
    return _encoded(resolve("google.rpc.status_pb2:Status")(message=message), as_json)


def _encoded(answer: Any, as_json: bool) -> bytes:
    if as_json:
        text: str = resolve(_JSON_FORMAT).MessageToJson(answer, indent=None, ensure_ascii=True)
        return text.encode("ascii")
    encoded: bytes = answer.SerializeToString()
    return encoded


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refused when a key appears twice (as protobuf's own JSON parser refuses it)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise BadPayload(f"the key {key!r} appears twice in one object")
        out[key] = value
    return out


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


def _hex_to_base64(value: str, field: str) -> str:
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raise BadPayload(f'"{field}" must be hex, as OTLP JSON writes ids') from None
    return base64.b64encode(raw).decode("ascii")


def _base64_to_hex(value: str, field: str) -> str:
    try:
        return base64.b64decode(value, validate=True).hex()
    except binascii.Error:  # protobuf wrote it: cannot happen
        raise BadPayload(f'"{field}" is not base64') from None


def _convert_ids(document: Any, convert: Callable[[str, str], str]) -> None:
    """Rewrite every id field of the spans and their links in place with ``convert``."""
    for span in _spans(document):
        for holder in (span, *_objects(span, "links")):
            for field in _ID_FIELDS:
                value = holder.get(field)
                if isinstance(value, str):
                    holder[field] = convert(value, field)


def _spans(document: Any) -> Iterator[dict[str, Any]]:
    if not isinstance(document, dict):
        return
    for resource in _objects(document, "resourceSpans", "resource_spans"):
        for scope in _objects(resource, "scopeSpans", "scope_spans"):
            yield from _objects(scope, "spans")


def _objects(holder: dict[str, Any], *keys: str) -> Iterator[dict[str, Any]]:
    """The objects in the list under the first of ``keys`` (the parser judges anything else)."""
    for key in keys:
        value = holder.get(key)
        if isinstance(value, list):
            yield from (item for item in value if isinstance(item, dict))
            return
