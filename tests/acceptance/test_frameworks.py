"""The importers and ``fingerprint`` against what real agent frameworks log, run offline.

Each framework runs once per module, in a subprocess (``tests/frameworks.py``: importing one
costs seconds): Pydantic AI with its ``TestModel`` and LangChain with a fake chat model, both
exporting through the real OpenTelemetry SDK (OTel GenAI and OpenInference spans), and
Inspect AI with its ``mockllm`` model writing real ``.eval`` and ``.json`` logs. The
transcripts and locks are checked against what the tools themselves recorded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.conftest import ROOT, invoke
from toolreplay.importers import import_value

#: framework -> the modules it needs
NEEDS = {
    "pydantic-ai": ["pydantic_ai", "opentelemetry.sdk", "opentelemetry.proto"],
    "langchain": ["langchain_core", "openinference.instrumentation.langchain", "opentelemetry.proto"],
    "inspect": ["inspect_ai"],
}


def _run(framework: str, out: Path) -> tuple[Path, Any]:
    """Run the framework's scripted agent into ``out``; (out, what the tools recorded)."""
    missing = [name for name in NEEDS[framework] if find_spec(name.split(".")[0]) is None]
    if missing:
        message = f"{framework} is not installed (pip install -r requirements-dev.txt)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    subprocess.run(
        [sys.executable, "-m", "tests.frameworks", framework, str(out)],
        cwd=ROOT,
        check=True,
        timeout=180,
        capture_output=True,
    )
    return out, json.loads((out / "truth.json").read_text())


@pytest.fixture(scope="module", params=["pydantic-ai", "langchain"])
def traced(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, Any]:
    framework: str = request.param
    return (framework, *_run(framework, tmp_path_factory.mktemp(framework)))


@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    return _run("inspect", tmp_path_factory.mktemp("inspect"))


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _expected_response(framework: str, call: dict[str, Any]) -> dict[str, Any]:
    if "error" in call:
        return {"is_error": True, "error": call["error"]}
    return {"content": call["result"], "_json_text": True}


def _expected_args(framework: str, call: dict[str, Any]) -> dict[str, Any]:
    if framework == "langchain" and len(call["args"]) == 1:
        # OpenInference's LangChain spans record a one-argument tool's input as the bare value
        (value,) = call["args"].values()
        return {"_raw_arguments": value, "_invalid_json": True}
    return call["args"]


def test_tool_spans_import_as_the_tools_were_called(
    traced: tuple[str, Path, Any], runner: CliRunner, tmp_path: Path
) -> None:
    """Each tool span becomes a record with the arguments the tool got and what it returned or raised."""
    framework, out, truth = traced
    code, _, err = invoke(runner, "import", str(out / "trace-v1.json"), "-o", str(tmp_path))
    assert code == 0, err
    assert err.endswith(
        ": otel (detected): 1 session, 2 calls, 0 without a result, 0 results without a"
        f" call, {int(framework == 'langchain')} with arguments not valid JSON, 0 without arguments\n"
    )
    records = _records(tmp_path / "trace-v1.jsonl")
    calls = truth["v1"]["calls"]
    assert [r["tool"] for r in records] == [c["tool"] for c in calls]
    assert [r["args"] for r in records] == [_expected_args(framework, c) for c in calls]
    assert [r["response"] for r in records] == [_expected_response(framework, c) for c in calls]


def test_the_receivers_entry_point_reads_the_same(
    traced: tuple[str, Path, Any], runner: CliRunner, tmp_path: Path
) -> None:
    """``import_value(export, "otel")`` (what ``record --otlp`` calls) gives the records the file gives."""
    _, out, _ = traced
    (session,) = import_value(json.loads((out / "trace-v1.json").read_text()), "otel")
    invoke(runner, "import", str(out / "trace-v1.json"), "-o", str(tmp_path))
    assert [r.tool for r in session.records] == [r["tool"] for r in _records(tmp_path / "trace-v1.jsonl")]
    assert [r.response for r in session.records] == [
        r["response"] for r in _records(tmp_path / "trace-v1.jsonl")
    ]


def test_fingerprint_of_a_trace_locks_the_declared_tools(
    traced: tuple[str, Path, Any], runner: CliRunner, tmp_path: Path
) -> None:
    """``fingerprint TRACE`` locks each tool the model was offered, its real schema and description."""
    _, out, truth = traced
    code, _, err = invoke(
        runner, "fingerprint", str(out / "trace-v1.json"), "-o", str(tmp_path / "tools.lock.json")
    )
    assert code == 0, err
    tools = json.loads((tmp_path / "tools.lock.json").read_text())["tools"]
    assert {name: tool["schema"] for name, tool in tools.items()} == truth["v1"]["schemas"]
    assert tools["get_weather"]["text"]["description"] == "The forecast for a city."


def test_a_changed_tool_is_tool_drift_text_drift_and_a_schema_break(
    traced: tuple[str, Path, Any], runner: CliRunner, tmp_path: Path
) -> None:
    """A lock from the first run against one from the second: the new required parameter and the
    new description are found, and the recorded call is refused by the new schema."""
    _, out, _ = traced
    for version in ("v1", "v2"):
        invoke(
            runner, "fingerprint", str(out / f"trace-{version}.json"), "-o", str(tmp_path / f"{version}.lock")
        )
    invoke(runner, "import", str(out / "trace-v1.json"), "-o", str(tmp_path / "runs"))
    code, stdout, _ = invoke(
        runner,
        "fingerprint-diff",
        str(tmp_path / "v1.lock"),
        str(tmp_path / "v2.lock"),
        "--calls",
        str(tmp_path / "runs" / "trace-v1.jsonl"),
        "--format",
        "json",
    )
    assert code == 1
    found = {(f["kind"], f["tool"]) for report in json.loads(stdout)["reports"] for f in report["findings"]}
    assert found == {
        ("tool-drift", "get_weather"),
        ("contract-text-drift", "get_weather"),
        ("schema-break", "get_weather"),
    }


def test_spans_without_a_tool_call_are_a_warning(
    traced: tuple[str, Path, Any], runner: CliRunner, tmp_path: Path
) -> None:
    """The same trace without its tool spans imports to nothing and says which conventions it looked for."""
    _, out, _ = traced
    export = json.loads((out / "trace-v1.json").read_text())
    kept = 0
    for resource_spans in export["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            scope_spans["spans"] = [s for s in scope_spans["spans"] if not _is_tool_span(s)]
            kept += len(scope_spans["spans"])
    (tmp_path / "chat-only.json").write_text(json.dumps(export))
    code, _, err = invoke(runner, "import", str(tmp_path / "chat-only.json"), "-o", str(tmp_path / "out"))
    assert code == 0
    path = str(tmp_path / "chat-only.json")
    assert err.splitlines()[0] == (
        f"toolreplay: warning: {path}: {kept} spans, no tool call: looked for OTel GenAI"
        ' (gen_ai.operation.name "execute_tool" or gen_ai.tool.name) and OpenInference'
        ' (openinference.span.kind "TOOL") tool spans'
    )
    assert err.splitlines()[1].startswith(f"{path}: otel (detected): 0 sessions, 0 calls")


def _is_tool_span(span: dict[str, Any]) -> bool:
    values = {a["key"]: a["value"].get("stringValue") for a in span.get("attributes", [])}
    return (
        values.get("gen_ai.operation.name") == "execute_tool"
        or values.get("openinference.span.kind") == "TOOL"
    )


@pytest.mark.slow
@pytest.mark.parametrize("log", ["log.eval", "log.json"])
def test_inspect_logs_give_one_transcript_per_sample_and_epoch(
    log: str, inspect_logs: tuple[Path, Any], runner: CliRunner, tmp_path: Path
) -> None:
    """Inspect AI's real .eval (zip) and .json logs: each epoch of the sample is a transcript of its
    tool calls, with the arguments, the result as Inspect gave it to the model, and the tool's error."""
    out, truth = inspect_logs
    code, _, err = invoke(runner, "import", str(out / log), "-o", str(tmp_path))
    assert code == 0, err
    assert err == (
        f"{out / log}: inspect (detected): 2 sessions, 4 calls, 0 without a result, 0 results without a call,"
        " 0 with arguments not valid JSON, 0 without arguments\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log-sum-epoch-1.jsonl", "log-sum-epoch-2.jsonl"]
    records = _records(tmp_path / "log-sum-epoch-1.jsonl") + _records(tmp_path / "log-sum-epoch-2.jsonl")
    assert [(r["tool"], r["args"]) for r in records] == [(c["tool"], c["args"]) for c in truth["calls"]]
    for record, call in zip(records, truth["calls"], strict=True):
        if "error" in call:
            assert record["response"] == {
                "content": "",
                "is_error": True,
                "error": {"type": "unknown", "message": call["error"]},
            }
        else:  # Inspect hands the model the tool's result as text
            assert record["response"] == {"content": str(call["result"])}


def test_a_trace_as_the_configured_tools_source(
    traced: tuple[str, Path, Any], runner: CliRunner, tmp_path: Path
) -> None:
    """A configuration whose tools_source is a later trace judges the lock against it."""
    _, out, _ = traced
    invoke(runner, "fingerprint", str(out / "trace-v1.json"), "-o", str(tmp_path / "tools.lock.json"))
    (tmp_path / "trace.json").write_bytes((out / "trace-v2.json").read_bytes())
    (tmp_path / "pyproject.toml").write_text(
        '[tool.toolreplay]\ntools_lock = "tools.lock.json"\ntools_source = "trace.json"\n'
    )
    code, stdout, _ = invoke(runner, "fingerprint-diff", "--format", "json", cwd=tmp_path)
    assert code == 1
    (report,) = json.loads(stdout)["reports"]
    assert {f["kind"] for f in report["findings"]} == {"tool-drift", "contract-text-drift"}
