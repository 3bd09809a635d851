"""The library: registry, recorder (plain and sealed), snapshot replay, drift errors, probe, spans."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolreplay import (
    Recorder,
    Snapshot,
    SnapshotMissError,
    ToolDriftError,
    ToolRegistry,
    probe_determinism,
    tool_fingerprint,
)
from toolreplay.chain import verify
from toolreplay.errors import DriftError
from toolreplay.transcript import read_links, read_transcript

SEARCH_SCHEMA = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}


class Backend:
    """Stands in for the outside world the tools talk to; counts real calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.files: dict[str, str] = {}

    def search(self, query: str, limit: int = 10) -> dict[str, Any]:
        self.calls += 1
        return {"hits": [f"{query}-{i}" for i in range(min(limit, 2))]}

    def write_file(self, path: str, text: str) -> str:
        self.calls += 1
        self.files[path] = text
        return "ok"


def make_registry(backend: Backend, **options: Any) -> ToolRegistry:
    registry = ToolRegistry(**options)
    registry.register(backend.search, schema=SEARCH_SCHEMA, version="1.0")
    registry.register(backend.write_file, version="1.0")
    return registry


def record_run(path: Path, backend: Backend, *, seal: bool = False, **options: Any) -> ToolRegistry:
    with Recorder(path, seal=seal) as recorder:
        registry = make_registry(backend, recorder=recorder, **options)
        registry.call("search", query="cats")
        registry.call("write_file", path="a.txt", text="hi")
        registry.call("search", query="dogs", limit=1)
    return registry


def test_registration_fingerprints_per_spec() -> None:
    """The registry fingerprints per tool_fingerprint(fn, schema, version); mutates follows the mutators."""
    backend = Backend()
    registry = make_registry(backend)
    assert registry.contract("search").fingerprint == tool_fingerprint(backend.search, SEARCH_SCHEMA, "1.0")
    assert registry.contract("write_file").mutates is True
    assert registry.contract("search").mutates is False
    assert list(registry.lock().tools) == ["search", "write_file"]


def test_recorder_writes_a_valid_transcript(tmp_path: Path) -> None:
    """Every call becomes a record with index, tool, args, response and fingerprint; non-dict results wrap."""
    path = tmp_path / "run.jsonl"
    registry = record_run(path, Backend())
    records = list(read_transcript(str(path)))
    assert [(r.index, r.tool, r.args) for r in records] == [
        (0, "search", {"query": "cats"}),
        (1, "write_file", {"path": "a.txt", "text": "hi"}),
        (2, "search", {"query": "dogs", "limit": 1}),
    ]
    assert records[1].response == {"result": "ok"}
    assert {r.fingerprint for r in records if r.tool == "search"} == {registry.contract("search").fingerprint}


def test_sealing_recorder_verifies(tmp_path: Path) -> None:
    """With seal=True the file is a chain `verify` accepts, ending on the recorder's head."""
    path = tmp_path / "run.sealed.jsonl"
    with Recorder(path, seal=True) as recorder:
        registry = make_registry(Backend(), recorder=recorder)
        registry.call("search", query="cats")
        registry.call("search", query="cats")
    state = verify(read_links(str(path)))
    assert state.broken is None
    assert (state.links, state.head) == (2, recorder.head)


def test_state_function_is_recorded(tmp_path: Path) -> None:
    """The user's state function gives each call its post-call state."""
    backend = Backend()

    def state(tool: str, args: dict[str, Any], response: dict[str, Any]) -> dict[str, str] | None:
        if tool != "write_file":
            return None
        return {args["path"]: f"len={len(backend.files[args['path']])}"}

    path = tmp_path / "run.jsonl"
    record_run(path, backend, state=state)
    assert [r.state for r in read_transcript(str(path))] == [None, {"a.txt": "len=2"}, None]


def test_decorator_binds_positional_arguments(tmp_path: Path) -> None:
    """A decorated tool called positionally records its arguments by name."""
    with Recorder(tmp_path / "run.jsonl") as recorder:
        registry = ToolRegistry(recorder=recorder)

        @registry.tool(version="2")
        def add(a: int, b: int = 1) -> int:
            return a + b

        assert add(2, b=3) == {"result": 5}
    [record] = read_transcript(str(tmp_path / "run.jsonl"))
    assert (record.args, record.response) == ({"a": 2, "b": 3}, {"result": 5})


def test_snapshot_replays_with_zero_live_calls(tmp_path: Path) -> None:
    """A recorded run replays through the snapshot stub: same responses, no tool runs."""
    path = tmp_path / "run.jsonl"
    live_responses = []
    backend = Backend()
    with Recorder(path) as recorder:
        registry = make_registry(backend, recorder=recorder)
        live_responses.append(registry.call("search", query="cats"))
        live_responses.append(registry.call("write_file", path="a.txt", text="hi"))
    replay_backend = Backend()
    replayed = make_registry(replay_backend, snapshot=path)
    assert replayed.call("search", query="cats") == live_responses[0]
    assert replayed.call("write_file", text="hi", path="a.txt") == live_responses[1]
    assert replay_backend.calls == 0


def test_snapshot_miss_names_nearest_call_and_argument(tmp_path: Path) -> None:
    """An unrecorded call raises SnapshotMissError naming the nearest recorded call and differing argument."""
    path = tmp_path / "run.jsonl"
    record_run(path, Backend())
    replayed = make_registry(Backend(), snapshot=path)
    with pytest.raises(SnapshotMissError) as err:
        replayed.call("search", query="dogs", limit=2)
    assert err.value.nearest_index == 2
    assert (err.value.pointer, err.value.recorded_value, err.value.given_value) == ("/limit", 1, 2)
    assert str(err.value) == (
        """no recorded call matches tool 'search' with args {"limit":2,"query":"dogs"}; nearest recorded"""
        """ call is index 2, which differs at argument '/limit': recorded 1, given 2"""
    )


def test_snapshot_miss_for_a_tool_never_recorded(tmp_path: Path) -> None:
    """A tool the recording never calls is named as such, with the tools it does call."""
    path = tmp_path / "run.jsonl"
    record_run(path, Backend())
    snapshot = Snapshot.from_file(path)
    with pytest.raises(SnapshotMissError) as err:
        snapshot.call("delete_file", path="a.txt")
    assert err.value.nearest_index is None
    assert str(err.value).endswith("the recording never calls that tool (it calls 'search', 'write_file')")


def test_snapshot_mode_fails_loud_on_drift(tmp_path: Path) -> None:
    """In snapshot mode a recorded fingerprint unlike the registered tool's raises ToolDriftError."""
    path = tmp_path / "run.jsonl"
    recorded = record_run(path, Backend())
    backend = Backend()
    changed = ToolRegistry(snapshot=path)
    changed.register(backend.search, schema={**SEARCH_SCHEMA, "required": ["query", "limit"]}, version="1.0")
    with pytest.raises(ToolDriftError) as err:
        changed.call("search", query="cats")
    assert isinstance(err.value, DriftError)
    assert (err.value.recorded, err.value.live, err.value.index) == (
        recorded.contract("search").fingerprint,
        changed.contract("search").fingerprint,
        0,
    )
    assert backend.calls == 0


def test_integration_mode_fails_loud_on_drift(tmp_path: Path) -> None:
    """Live calls against a pinned lock raise ToolDriftError before a drifted tool runs."""
    pinned = make_registry(Backend()).lock()
    backend = Backend()
    registry = ToolRegistry(pinned=pinned)
    registry.register(backend.search, schema=SEARCH_SCHEMA, version="1.1")
    with pytest.raises(
        ToolDriftError, match=r"tool 'search' drifted: recorded with fingerprint [0-9a-f]{16}, is now"
    ):
        registry.call("search", query="cats")
    assert backend.calls == 0
    with pytest.raises(ToolDriftError):
        registry.check_pinned()
    same = make_registry(Backend(), pinned=pinned)
    assert same.call("search", query="x") == {"hits": ["x-0", "x-1"]}


def test_probe_writes_transcript_and_sees_nondeterminism(tmp_path: Path) -> None:
    """The probe calls N times with the same args and writes the calls; a counter is not stable."""
    counter = iter(range(100))

    def tick(step: int) -> dict[str, int]:
        return {"value": next(counter) * step}

    result = probe_determinism(tick, {"step": 2}, path=tmp_path / "probe.jsonl", times=3)
    assert (result.calls, result.distinct, result.stable) == (3, 3, False)
    records = list(read_transcript(str(tmp_path / "probe.jsonl")))
    assert [r.response for r in records] == [{"value": 0}, {"value": 2}, {"value": 4}]
    assert {r.call_key for r in records} == {records[0].call_key}

    backend = Backend()
    steady = probe_determinism(
        make_registry(backend), {"query": "x"}, name="search", path=tmp_path / "p2.jsonl"
    )
    assert (steady.calls, steady.stable, backend.calls) == (5, True, 5)


def test_span_attributes(tmp_path: Path) -> None:
    """Inside an OpenTelemetry span, a call sets tool.fingerprint and tool.version on it."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    registry = make_registry(Backend())
    with provider.get_tracer("test").start_as_current_span("agent step"):
        registry.call("search", query="cats")
    [span] = exporter.get_finished_spans()
    assert span.attributes is not None
    assert dict(span.attributes) == {
        "tool.fingerprint": registry.contract("search").fingerprint,
        "tool.version": "1.0",
    }


def test_unserialisable_response_is_a_clear_error() -> None:
    """A response that is not JSON is refused with the tool's name, not recorded half-way."""
    registry = ToolRegistry()
    registry.register(lambda: {"when": object()}, name="clock")
    with pytest.raises(TypeError, match="the response of tool 'clock' cannot be recorded as JSON"):
        registry.call("clock")


def test_async_tools_are_refused_at_registration() -> None:
    """An async tool is refused with a clear message instead of recording a coroutine."""

    async def fetch(url: str) -> dict[str, Any]:
        return {}

    with pytest.raises(TypeError, match="async tools are not supported"):
        ToolRegistry().register(fetch)


def test_snapshot_answers_are_copies(tmp_path: Path) -> None:
    """Mutating a replayed response does not change what the recording answers next time."""
    path = tmp_path / "run.jsonl"
    record_run(path, Backend())
    snapshot = Snapshot.from_file(path)
    first = snapshot.call("search", query="cats")
    first["hits"].clear()
    assert snapshot.call("search", query="cats") == {"hits": ["cats-0", "cats-1"]}
    assert snapshot.served == 2
