"""Run a real agent framework offline and write what it logged, with what its tools really did.

``python -m tests.frameworks FRAMEWORK DIR`` (FRAMEWORK: ``pydantic-ai``, ``langchain``,
``inspect``) runs a scripted agent with no network and writes into DIR:

* the framework's own output: ``trace.json`` (OTLP JSON, one ``ExportTraceServiceRequest``:
  the real OpenTelemetry SDK's spans, encoded to protobuf by ``opentelemetry-proto``'s encoder
  and written with protobuf's JSON mapping, ids as hex per the OTLP JSON encoding), or Inspect
  AI's ``log.eval`` and ``log.json``;
* ``truth.json``: what each tool was called with and returned (or raised), recorded by the
  tools themselves, and the tool definitions the framework offered the model.

Pydantic AI and LangChain run twice (``v1``, ``v2``), the second time with one tool's contract
changed (a new required parameter and another description), so a lock made from the first
trace can be compared with the second. Each framework is imported in this process only, so a
test module pays for it once, in a subprocess.

The golden cases ``tests/cases/import/framework-*`` hold its output, made with the versions
pinned in requirements-dev.txt: ``input.json`` is ``trace-v1.json`` of ``pydantic-ai`` and of
``langchain``, ``input.eval`` is the ``log.eval`` of ``inspect``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: every call a tool made: {"tool", "args", "result"} or {"tool", "args", "error"}
CALLS: list[dict[str, Any]] = []


def _write(path: Path, export: dict[str, Any]) -> None:
    """Write an export; the folders of this machine in stack traces read ``ROOT`` and ``PYTHON``
    (the samples committed from it name no one's folders)."""
    text = json.dumps(export)
    for folder, name in ((str(ROOT), "ROOT"), (sys.prefix, "PYTHON"), (sys.base_prefix, "PYTHON")):
        text = text.replace(folder, name)
    path.write_text(text)


def _otlp_json(finished: Any) -> dict[str, Any]:
    """Finished SDK spans as OTLP JSON (the encoding's hex ids, enums as integers)."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    export = MessageToDict(encode_spans(finished), use_integers_for_enums=True)
    for resource_spans in export["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return export


def _provider() -> tuple[Any, Any]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def pydantic_ai(out: Path) -> dict[str, Any]:
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.test import TestModel

    provider, exporter = _provider()
    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider))
    truth: dict[str, Any] = {}
    for version in ("v1", "v2"):
        exporter.clear()
        CALLS.clear()
        agent = Agent(TestModel())

        if version == "v1":

            @agent.tool_plain(sequential=True)  # one at a time: the spans start in call order
            def get_weather(city: str, days: int = 1) -> dict[str, Any]:
                """The forecast for a city."""
                result = {"city": city, "temp": 21.5, "days": days}
                CALLS.append({"tool": "get_weather", "args": {"city": city}, "result": result})
                return result

        else:

            @agent.tool_plain(sequential=True)  # one at a time: the spans start in call order
            def get_weather(city: str, units: str, days: int = 1) -> dict[str, Any]:
                """The forecast for a city, in the units asked for."""
                result = {"city": city, "temp": 21.5, "days": days, "units": units}
                CALLS.append(
                    {"tool": "get_weather", "args": {"city": city, "units": units}, "result": result}
                )
                return result

        @agent.tool_plain(sequential=True)  # one at a time: the spans start in call order
        def book(flight: str) -> str:
            """Book a flight."""
            CALLS.append({"tool": "book", "args": {"flight": flight}, "error": "sold out"})
            raise RuntimeError("sold out")

        # the failing tool ends the run; its span is still exported
        with contextlib.suppress(RuntimeError):
            agent.run_sync("weather?", model=TestModel(call_tools=["get_weather", "book"]))
        _write(out / f"trace-{version}.json", _otlp_json(exporter.get_finished_spans()))
        schemas = {
            name: tool.function_schema.json_schema for name, tool in agent._function_toolset.tools.items()
        }
        truth[version] = {"calls": list(CALLS), "schemas": schemas}
    return truth


def langchain(out: Path) -> dict[str, Any]:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.runnables import RunnableLambda
    from langchain_core.tools import tool
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from openinference.instrumentation.langchain import LangChainInstrumentor

    provider, exporter = _provider()
    LangChainInstrumentor().instrument(tracer_provider=provider)

    @tool
    def get_weather(city: str, days: int = 1) -> dict[str, Any]:
        """The forecast for a city."""
        result = {"city": city, "temp": 21.5, "days": days}
        CALLS.append({"tool": "get_weather", "args": {"city": city, "days": days}, "result": result})
        return result

    @tool("get_weather")
    def get_weather_v2(city: str, units: str, days: int = 1) -> dict[str, Any]:
        """The forecast for a city, in the units asked for."""
        result = {"city": city, "temp": 21.5, "days": days, "units": units}
        CALLS.append({"tool": "get_weather", "args": {"city": city, "units": units}, "result": result})
        return result

    @tool
    def book(flight: str) -> str:
        """Book a flight."""
        CALLS.append({"tool": "book", "args": {"flight": flight}, "error": "sold out"})
        raise RuntimeError("sold out")

    truth: dict[str, Any] = {}
    for version, weather, args in (
        ("v1", get_weather, {"city": "Paris", "days": 2}),
        ("v2", get_weather_v2, {"city": "Paris", "units": "C"}),
    ):
        exporter.clear()
        CALLS.clear()
        calls = [
            {"name": "get_weather", "args": args, "id": "call_1"},
            {"name": "book", "args": {"flight": "AF1"}, "id": "call_2"},
        ]
        model = GenericFakeChatModel(messages=iter([AIMessage(content="", tool_calls=calls)]))
        offered = [convert_to_openai_tool(weather), convert_to_openai_tool(book)]
        tools = {"get_weather": weather, "book": book}

        def agent(question: str, model: Any = model, offered: Any = offered, tools: Any = tools) -> None:
            message = model.bind(tools=offered).invoke([HumanMessage(question)])
            for call in message.tool_calls:
                with contextlib.suppress(RuntimeError):
                    tools[call["name"]].invoke(call)

        RunnableLambda(agent).invoke("weather?")  # one run: one trace
        _write(out / f"trace-{version}.json", _otlp_json(exporter.get_finished_spans()))
        schemas = {t["function"]["name"]: t["function"]["parameters"] for t in offered}
        truth[version] = {"calls": list(CALLS), "schemas": schemas}
    return truth


def inspect(out: Path) -> dict[str, Any]:
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.log import write_eval_log
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import ToolError, tool

    @tool
    def add():  # type: ignore[no-untyped-def]
        async def execute(x: int, y: int) -> int:
            """Add two numbers.

            Args:
                x: First number.
                y: Second number.
            """
            CALLS.append({"tool": "add", "args": {"x": x, "y": y}, "result": x + y})
            return x + y

        return execute

    @tool
    def refuse():  # type: ignore[no-untyped-def]
        async def execute(reason: str) -> str:
            """Always refuses.

            Args:
                reason: Why to ask.
            """
            CALLS.append({"tool": "refuse", "args": {"reason": reason}, "error": f"no: {reason}"})
            raise ToolError(f"no: {reason}")

        return execute

    outputs = []
    for _epoch in range(2):
        outputs += [
            ModelOutput.for_tool_call("mockllm/model", "add", {"x": 2, "y": 3}),
            ModelOutput.for_tool_call("mockllm/model", "refuse", {"reason": "test"}),
            ModelOutput.from_content("mockllm/model", "5"),
        ]
    for output in outputs:  # usage given: mockllm would otherwise count tokens with a downloaded encoding
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    model = get_model("mockllm/model", custom_outputs=outputs)
    task = Task(
        dataset=[Sample(input="2+3?", target="5", id="sum")],
        solver=[use_tools(add(), refuse()), generate()],
        epochs=2,
    )
    (log,) = inspect_eval(task, model=model, log_dir=str(out / "logs"), display="none", max_samples=1)
    write_eval_log(log, str(out / "log.json"), format="json")
    Path(log.location).rename(out / "log.eval")
    return {"calls": list(CALLS)}


def main() -> None:
    framework, out = sys.argv[1], Path(sys.argv[2])
    run = {"pydantic-ai": pydantic_ai, "langchain": langchain, "inspect": inspect}[framework]
    (out / "truth.json").write_text(json.dumps(run(out)))


if __name__ == "__main__":
    main()
