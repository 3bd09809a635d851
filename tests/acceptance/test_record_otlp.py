"""record --otlp: real agents export their traces over OTLP/HTTP into a running receiver process, which
writes one sealed transcript per trace; bad requests get OTLP's answers; a stop leaves files that
verify (docs/spec.md §8.1, toolreplay/capture/otlp.py)."""

from __future__ import annotations

import base64
import gzip
import http.client
import json
import os
import select
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.conftest import invoke
from tests.mcp_agent import TIMEOUT, TOOLREPLAY, free_port, server_env, stop
from toolreplay.capture.listen import MAX_BODY_BYTES
from toolreplay.transcript import read_links

READY = "toolreplay: receiving OTLP traces at http://127.0.0.1:{port}/v1/traces, writing to {folder}\n"


class Receiver:
    """A ``toolreplay record --otlp`` process, started and ready."""

    def __init__(self, folder: Path, *extra: str) -> None:
        self.folder = folder
        self.port = free_port()
        argv = [*TOOLREPLAY, "record", "-o", str(folder), "--otlp", f"127.0.0.1:{self.port}", *extra]
        self.process = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=server_env()
        )
        self.ready = self._first_line()
        assert self.ready == READY.format(port=self.port, folder=folder), self.ready
        self.url = f"http://127.0.0.1:{self.port}/v1/traces"

    def _first_line(self) -> str:
        assert self.process.stderr is not None
        line = b""
        deadline = time.monotonic() + TIMEOUT
        while not line.endswith(b"\n") and time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stderr], [], [], 0.1)
            if ready:
                byte = os.read(self.process.stderr.fileno(), 1)
                if not byte:
                    break
                line += byte
        return line.decode()

    def post(
        self, body: bytes, headers: dict[str, str], path: str = "/v1/traces", method: str = "POST"
    ) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT)
        try:
            conn.request(method, path, body=body, headers=headers)
            answer = conn.getresponse()
            return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
        finally:
            conn.close()

    def head_only(self, length: int, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        """The answer to a POST that declares a ``length``-byte body and sends none of it."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=TIMEOUT) as sock:
            head = f"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {length}\r\n"
            sock.sendall((head + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n").encode())
            answer = http.client.HTTPResponse(sock)
            answer.begin()
            return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()

    def stop(self) -> tuple[int, str]:
        status, err = stop(self.process)
        return status, err.decode()


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[Receiver]:
    started = Receiver(tmp_path / "traces")
    try:
        yield started
    finally:
        if started.process.poll() is None:
            started.stop()


def _transcripts(folder: Path) -> dict[str, list[Any]]:
    """Each trace's records by trace id, from the file names."""
    return {
        path.name.removesuffix(".sealed.jsonl"): [link.record for link in read_links(str(path))]
        for path in sorted(folder.glob("*.sealed.jsonl"))
    }


def _result(response: dict[str, Any]) -> Any:
    """What a tool returned, from an imported response (a JSON text result is kept as text, or as
    the value it parses to: the importer decides; both read the same here)."""
    content = response["content"]
    return json.loads(content) if isinstance(content, str) else content


def _verified(runner: CliRunner, folder: Path) -> None:
    for path in sorted(folder.glob("*.sealed.jsonl")):
        code, out, err = invoke(runner, "verify", str(path))
        assert (code, err) == (0, ""), (path, out, err)
        assert out.startswith("chain: intact\n"), out


def _pydantic_agent(provider: Any, calls: list[tuple[str, dict[str, Any], Any]]) -> Any:
    """A Pydantic AI agent on its TestModel (it calls every tool once) with two tools that note
    what they were called with and what they returned."""
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.test import TestModel

    agent = Agent(TestModel(seed=3))
    agent.instrument = InstrumentationSettings(tracer_provider=provider)

    @agent.tool_plain(sequential=True)  # one at a time: the spans start in call order
    def add(a: int, b: int) -> int:
        """Add two integers."""
        calls.append(("add", {"a": a, "b": b}, a + b))
        return a + b

    @agent.tool_plain(sequential=True)  # one at a time: the spans start in call order
    def forecast(city: str) -> dict[str, Any]:
        """Tomorrow's weather in a city."""
        answer = {"city": city, "sky": "clear", "high": 21}
        calls.append(("forecast", {"city": city}, answer))
        return answer

    return agent


def _json_exporter(url: str) -> Any:
    """A span exporter that POSTs OTLP JSON: the request OpenTelemetry's OTLP encoder builds, in
    protobuf's JSON mapping with the ids in hex, as the OTLP specification's JSON encoding has it
    (OpenTelemetry Python's own JSON exporter pins an older line of the packages the protobuf one
    needs, so it cannot be installed beside it)."""
    import urllib.request

    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class JSONExporter(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            document = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
            for resource in document["resourceSpans"]:
                for scope in resource["scopeSpans"]:
                    for span in scope["spans"]:
                        for key in ("traceId", "spanId", "parentSpanId"):
                            if key in span:
                                span[key] = base64.b64decode(span[key]).hex().upper()
            request = urllib.request.Request(url, json.dumps(document).encode(), JSON)
            with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
                ok = answer.status == 200 and json.loads(answer.read()) == {}
            return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE

    return JSONExporter()


@pytest.mark.parametrize("encoding", ["protobuf+gzip", "json"])
def test_pydantic_ai_over_otlp(
    receiver: Receiver, runner: CliRunner, monkeypatch: pytest.MonkeyPatch, encoding: str
) -> None:
    """A Pydantic AI agent exporting with OpenTelemetry's own OTLP/HTTP exporter (configured by the
    environment variables docs/capture.md names), or in OTLP JSON, gets one sealed transcript per run,
    holding each tool call with the arguments the tool got and what it returned."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{receiver.port}")
    if encoding == "json":
        exporter: Any = _json_exporter(f"http://127.0.0.1:{receiver.port}/v1/traces")
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
        exporter = OTLPSpanExporter()
    seen = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    provider.add_span_processor(SimpleSpanProcessor(seen))
    runs: list[list[tuple[str, dict[str, Any], Any]]] = [[], []]
    try:
        for calls in runs:
            _pydantic_agent(provider, calls).run_sync("plan my day")
    finally:
        provider.shutdown()
    status, err = receiver.stop()
    assert status == 0, err
    assert err.endswith(f"toolreplay: recorded 4 calls in 2 traces to {receiver.folder}\n"), err

    trace_ids = list(
        dict.fromkeys(format(span.context.trace_id, "032x") for span in seen.get_finished_spans())
    )
    transcripts = _transcripts(receiver.folder)
    assert sorted(transcripts) == sorted(trace_ids)
    for trace_id, calls in zip(trace_ids, runs, strict=True):
        records = transcripts[trace_id]
        assert len(calls) == 2
        assert [(r.index, r.tool, r.args, _result(r.response)) for r in records] == [
            (i, *call) for i, call in enumerate(calls)
        ]
    _verified(runner, receiver.folder)


def _tool_span(tracer: Any, tool: str, args: dict[str, Any], result: str, *, failed: bool = False) -> None:
    from opentelemetry.trace import Status, StatusCode

    with tracer.start_as_current_span(f"execute_tool {tool}") as span:
        span.set_attribute("gen_ai.operation.name", "execute_tool")
        span.set_attribute("gen_ai.tool.name", tool)
        span.set_attribute("gen_ai.tool.call.arguments", json.dumps(args))
        span.set_attribute("gen_ai.tool.call.result", result)
        if failed:
            span.set_status(Status(StatusCode.ERROR, "the disk is full"))


def test_otel_sdk_spans_redacted_and_batched(tmp_path: Path, runner: CliRunner) -> None:
    """The OTel SDK's batch processor sends spans of two traces interleaved in one request, and the
    root spans after their children: each trace gets its own file, its calls in the order they
    started, a failed call as an error, and --redact masks a secret before it is sealed."""
    from opentelemetry.context import Context
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    started = Receiver(tmp_path / "out", "--redact", "sk-[a-z0-9]+")
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=started.url)))
    tracer = provider.get_tracer("agent")
    try:
        with tracer.start_as_current_span("agent run a") as root_a:
            _tool_span(tracer, "read_file", {"path": "notes.txt"}, "token sk-abc123 inside")
            with tracer.start_as_current_span("agent run b", context=Context()):  # a trace of its own
                _tool_span(tracer, "search", {"q": "otlp"}, '["spec"]')
            _tool_span(tracer, "write_file", {"path": "out.txt"}, "", failed=True)
        provider.force_flush()
    finally:
        provider.shutdown()
    status, err = started.stop()
    assert status == 0, err
    assert err.endswith(f"recorded 3 calls in 2 traces to {started.folder}, 1 value redacted\n"), err
    transcripts = _transcripts(started.folder)
    first = transcripts.pop(format(root_a.get_span_context().trace_id, "032x"))
    assert [(r.tool, r.args) for r in first] == [
        ("read_file", {"path": "notes.txt"}),
        ("write_file", {"path": "out.txt"}),
    ]
    assert first[0].response["content"] == "token [REDACTED] inside"
    assert (first[1].response["is_error"], first[1].response["error"]) == (True, "the disk is full")
    ((other,),) = transcripts.values()
    assert (other.tool, other.args) == ("search", {"q": "otlp"})
    _verified(runner, started.folder)


def _export(trace: str, spans: list[dict[str, Any]]) -> dict[str, Any]:
    """An OTLP JSON export of ``spans`` in trace ``trace`` (hex)."""
    for number, span in enumerate(spans):
        span.setdefault("traceId", trace)
        span.setdefault("spanId", f"{number + 1:016x}")
        span.setdefault("startTimeUnixNano", str(1_000 + number))
        span.setdefault("endTimeUnixNano", str(2_000 + number))
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]}


def _call(tool: str | None, args: str, result: str, name: str = "execute_tool") -> dict[str, Any]:
    attributes = [{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}}]
    if tool is not None:
        attributes.append({"key": "gen_ai.tool.name", "value": {"stringValue": tool}})
    attributes += [
        {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": args}},
        {"key": "gen_ai.tool.call.result", "value": {"stringValue": result}},
    ]
    return {"name": name, "kind": 1, "attributes": attributes}


JSON = {"Content-Type": "application/json"}
PROTOBUF = {"Content-Type": "application/x-protobuf"}
TRACE = "5b8efff798038103d269b633813fc60c"


def _status(body: bytes, as_json: bool) -> str:
    from google.rpc.status_pb2 import Status

    if as_json:
        return str(json.loads(body)["message"])
    return str(Status.FromString(body).message)


def test_bad_requests_get_otlp_answers(receiver: Receiver) -> None:
    """Garbage, a wrong path, method, media type or coding, an oversize body and a foreign Host each get
    the status OTLP/HTTP (or listen.py's rule) names, with a Status saying why in the request's
    encoding; the receiver goes on and records the next good request."""
    garbage = b"\xff\xfe not protobuf"
    code, headers, body = receiver.post(garbage, PROTOBUF)
    assert (code, headers["content-type"]) == (400, "application/x-protobuf")
    assert _status(body, False).startswith("not an ExportTraceServiceRequest: ")
    code, headers, body = receiver.post(b'{"resourceSpans": [', JSON)
    assert (code, headers["content-type"]) == (400, "application/json")
    assert _status(body, True).startswith("not an ExportTraceServiceRequest: ")
    code, _, body = receiver.post(
        json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "xyz"}]}]}]}).encode(), JSON
    )
    assert (code, _status(body, True)) == (
        400,
        'not an ExportTraceServiceRequest: "traceId" must be hex, as OTLP JSON writes ids',
    )
    code, _, body = receiver.post(b"{}", JSON, path="/v1/metrics")
    assert (code, _status(body, True)) == (404, "no such path: /v1/metrics; traces go to /v1/traces")
    code, headers, body = receiver.post(b"", JSON, method="GET")
    assert (code, headers["allow"], _status(body, True)) == (405, "POST", "GET is not allowed: POST")
    code, headers, body = receiver.post(b"", JSON, method="HEAD")  # the same answer without its body
    assert (code, headers["allow"], body) == (405, "POST", b"")
    code, _, body = receiver.post(b"{}", {"Content-Type": "text/plain"})
    assert (code, _status(body, False)) == (
        415,
        "the Content-Type must be application/x-protobuf or application/json",
    )
    code, _, body = receiver.post(b"{}", {**JSON, "Content-Encoding": "br"})
    assert (code, _status(body, True)) == (415, "the Content-Encoding must be gzip, deflate or none")
    code, _, body = receiver.post(b"{}", {**JSON, "Content-Encoding": "gzip"})
    assert code == 400 and "is not gzip data" in _status(body, True)
    bomb = gzip.compress(b" " * (MAX_BODY_BYTES + 1))
    code, _, body = receiver.post(bomb, {**JSON, "Content-Encoding": "gzip"})
    assert (code, _status(body, True)) == (
        413,
        f"the request body is over the {MAX_BODY_BYTES} bytes a request may have (decompressed)",
    )
    code, headers, body = receiver.head_only(MAX_BODY_BYTES + 1, JSON)
    assert (code, headers["connection"]) == (413, "close")
    code, _, body = receiver.post(b"{}", {**JSON, "Host": "evil.example"})
    assert code == 421 and _status(body, True).startswith("Host 'evil.example' is not a name")

    code, headers, body = receiver.post(b"{}", JSON)  # an empty request is a success
    assert (code, json.loads(body)) == (200, {})
    good = _export(TRACE, [_call("lookup", '{"id": 7}', "found")])
    code, _, body = receiver.post(json.dumps(good).encode(), JSON)
    assert (code, json.loads(body)) == (200, {})
    status, err = receiver.stop()
    assert status == 0
    assert err.endswith("recorded 1 call in 1 trace to " + str(receiver.folder) + "\n"), err
    assert (
        "toolreplay: warning: refused a request (404): no such path: /v1/metrics; traces go to /v1/traces\n"
        in err
    )
    assert err.count("toolreplay: warning: refused a request (") == 12, err
    ((record,),) = _transcripts(receiver.folder).values()
    assert (record.tool, record.args) == ("lookup", {"id": 7})


def test_partial_success_names_the_rejected_spans(receiver: Receiver) -> None:
    """A span the importer refuses is rejected alone: the answer's partial success counts it and says
    why, the trace's other calls are recorded, and so is a trace sent later."""
    export = _export(TRACE, [_call("first", "{}", "1"), _call(None, "{}", "2"), _call("third", "{}", "3")])
    code, _, body = receiver.post(json.dumps(export).encode(), JSON)
    answer = json.loads(body)
    assert code == 200
    assert answer["partialSuccess"]["rejectedSpans"] == "1"
    assert "without a tool name" in answer["partialSuccess"]["errorMessage"]
    status, err = receiver.stop()
    assert status == 0
    assert f"trace {TRACE}: 1 span(s) not recorded: " in err
    assert [r.tool for r in _transcripts(receiver.folder)[TRACE]] == ["first", "third"]


def test_sigterm_mid_stream_leaves_sealed_transcripts(receiver: Receiver, runner: CliRunner) -> None:
    """SIGTERM while a client keeps exporting: the receiver exits 0 and every transcript verifies, each
    call of it whole."""
    sent: list[int] = []
    stopped = threading.Event()

    def export_forever() -> None:
        for number in range(10_000):
            trace = f"{number % 5 + 1:032x}"
            spans = [_call("step", json.dumps({"n": number, "i": i}), "x" * 2000) for i in range(20)]
            body = json.dumps(_export(trace, spans)).encode()
            try:
                code, _, _ = receiver.post(body, JSON)
            except OSError:
                return
            if code != 200 or stopped.is_set():
                return
            sent.append(number)

    client = threading.Thread(target=export_forever, daemon=True)
    client.start()
    deadline = time.monotonic() + TIMEOUT
    while len(sent) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    status, err = receiver.stop()  # SIGTERM
    stopped.set()
    client.join(TIMEOUT)
    assert status == 0, err
    transcripts = _transcripts(receiver.folder)
    assert sum(len(records) for records in transcripts.values()) >= 3 * 20
    _verified(runner, receiver.folder)


def test_otlp_refuses_what_it_does_not_take(tmp_path: Path, runner: CliRunner) -> None:
    """--otlp with a server's command line is a usage error; a folder that holds trace transcripts is
    refused without --force (exit 2, one line, nothing started)."""
    code, _, err = invoke(runner, "record", "-o", str(tmp_path), "--otlp", "4318", "python", "server.py")
    assert code == 2 and "--otlp takes none of a server's command line" in err
    code, _, err = invoke(runner, "record", "-o", str(tmp_path), "--otlp", "host:port")
    assert (code, err) == (2, "toolreplay: error: --otlp 'host:port' is not HOST:PORT\n")
    (tmp_path / f"{TRACE}.sealed.jsonl").write_text("")
    code, _, err = invoke(runner, "record", "-o", str(tmp_path), "--otlp", "1")
    assert code == 2
    assert err == (
        f"toolreplay: error: {tmp_path}: holds 1 trace transcript(s) already ({TRACE}.sealed.jsonl...);"
        " not replacing them (--force replaces a trace's file when that trace arrives)\n"
    )


def test_otlp_without_the_extra_names_it(
    tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the otel extra's protobuf messages, record --otlp says which extra to install (exit 2)."""
    import toolreplay.extras

    real = toolreplay.extras.find_spec

    def missing(name: str) -> Any:
        return None if name == "opentelemetry.proto" else real(name)

    monkeypatch.setattr(toolreplay.extras, "find_spec", missing)
    code, out, err = invoke(runner, "record", "-o", str(tmp_path / "t"), "--otlp", "4318")
    assert (code, out) == (2, "")
    hint = "pip install 'toolreplay[otel]'"
    assert (
        err
        == f"toolreplay: error: toolreplay record --otlp needs OpenTelemetry's protobuf messages: {hint}\n"
    )
    assert not (tmp_path / "t").exists()
