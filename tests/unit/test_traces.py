"""record --otlp's halves without a socket: the OTLP body as its JSON form (toolreplay/capture/otlp_proto.py)
and the transcripts written per trace (toolreplay/capture/traces.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolreplay.capture import otlp_proto, traces
from toolreplay.capture.traces import TraceFiles
from toolreplay.chain import verify
from toolreplay.errors import InputError
from toolreplay.transcript import read_links


def _span(trace: str, number: int, tool: str | None = "t") -> dict[str, Any]:
    attributes: list[dict[str, Any]] = [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}}
    ]
    if tool is not None:
        attributes.append({"key": "gen_ai.tool.name", "value": {"stringValue": tool}})
    attributes.append(
        {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": json.dumps({"n": number})}}
    )
    attributes.append({"key": "gen_ai.tool.call.result", "value": {"stringValue": str(number)}})
    return {
        "traceId": trace,
        "spanId": f"{number + 1:016x}",
        "name": "execute_tool",
        "startTimeUnixNano": str(number),
        "attributes": attributes,
    }


def _export(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}


def test_decode_keeps_hex_ids_and_reads_both_encodings() -> None:
    """A JSON body's hex ids survive the protobuf round trip as hex, and the binary encoding of the
    same request decodes to the same JSON form."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    trace = "5B8EFFF798038103D269B633813FC60C"
    document = _export({**_span(trace, 0), "parentSpanId": "00000000000000aa", "kind": 3})
    decoded = otlp_proto.decode(json.dumps(document).encode(), True)
    span = decoded["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert (span["traceId"], span["spanId"], span["parentSpanId"], span["kind"]) == (
        trace.lower(),
        "0000000000000001",
        "00000000000000aa",
        3,
    )
    request = ExportTraceServiceRequest()
    request.resource_spans.add().scope_spans.add().spans.add(
        trace_id=bytes.fromhex(trace), span_id=bytes.fromhex("0000000000000001"), name="x"
    )
    binary = otlp_proto.decode(request.SerializeToString(), False)
    assert binary["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] == trace.lower()


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (
            b'{"resourceSpans": [], "resourceSpans": []}',
            "the key 'resourceSpans' appears twice in one object",
        ),
        (b"[1]", "Failed to parse"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": "zz"}]}]}]}', '"spanId" must be hex'),
    ],
)
def test_decode_refuses_what_is_no_request(body: bytes, problem: str) -> None:
    """Duplicate keys, a JSON text that is no object and an id that is not hex are bad payloads."""
    with pytest.raises(otlp_proto.BadPayload, match=problem):
        otlp_proto.decode(body, True)


def test_traces_reopened_past_the_open_file_limit_stay_one_chain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More traces than files kept open: a trace whose file was closed is appended to later, and its
    chain runs on unbroken; a span without a trace id is rejected and counted."""
    monkeypatch.setattr(traces, "OPEN_FILES", 2)
    ids = [f"{n:032x}" for n in range(1, 5)]
    warned: list[str] = []
    with TraceFiles(str(tmp_path), warn=warned.append) as files:
        for round_ in range(3):
            taken = files.take(_export(*(_span(trace, round_) for trace in ids)))
            assert (taken.rejected, taken.problem) == (0, "")
        taken = files.take(_export(_span("0" * 32, 9)))
        assert (taken.rejected, taken.problem) == (1, traces.NO_TRACE)
    assert files.count == 12
    for trace in ids:
        links = list(read_links(str(tmp_path / f"{trace}.sealed.jsonl")))
        assert [link.record.args for link in links] == [{"n": 0}, {"n": 1}, {"n": 2}]
        assert verify(links).broken is None
    assert warned == [f"1 span(s) not recorded: {traces.NO_TRACE}"]


def test_force_replaces_a_trace_file_when_its_trace_arrives(tmp_path: Path) -> None:
    """A folder holding a trace's transcript is refused, and with force the file is replaced by the
    trace's first call (a file of a trace that does not come again stays)."""
    trace, other = f"{1:032x}", f"{2:032x}"
    for name in (trace, other):
        (tmp_path / f"{name}.sealed.jsonl").write_text("old\n")
    with pytest.raises(InputError, match=r"holds 2 trace transcript\(s\) already"):
        TraceFiles(str(tmp_path), warn=print)
    with TraceFiles(str(tmp_path), force=True, warn=print) as files:
        files.take(_export(_span(trace, 0)))
    assert [link.record.args for link in read_links(str(tmp_path / f"{trace}.sealed.jsonl"))] == [{"n": 0}]
    assert (tmp_path / f"{other}.sealed.jsonl").read_text() == "old\n"
