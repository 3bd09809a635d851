"""Importing real third-party traces (tests/data/traces, attribution in its README):
every episode imports, and each transcript validates, seals and verifies, and replays."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import ROOT
from tests.conftest import invoke as _run
from toolreplay.importers import import_file
from toolreplay.transcript import read_transcript

TRACES = ROOT / "tests" / "data" / "traces"
TAU = TRACES / "tau-bench" / "gpt-4o-airline-sample.json"
SWE = sorted((TRACES / "swe-agent").glob("*.traj"))


def _tau_episodes() -> list[dict[str, object]]:
    episodes: list[dict[str, object]] = json.loads(TAU.read_text(encoding="utf-8"))
    return episodes


def _check_transcript(runner: CliRunner, transcript: Path, calls: int) -> None:
    code, out, _ = _run(runner, "validate", str(transcript))
    assert (code, out) == (0, f"{transcript}: valid\n")
    sealed = transcript.with_suffix(".sealed.jsonl")
    assert _run(runner, "seal", str(transcript), "-o", str(sealed))[0] == 0
    code, out, _ = _run(runner, "verify", str(sealed), "--expect-count", str(calls))
    assert code == 0
    assert out.splitlines()[:2] == ["chain: intact", f"links: {calls}"]
    code, out, _ = _run(runner, "replay", str(transcript))
    assert code in (0, 1)
    assert out.splitlines()[0] == f"calls: {calls}"


def test_tau_bench_every_episode_imports(runner: CliRunner, tmp_path: Path) -> None:
    """Each tau-bench episode becomes one transcript holding every tool call, all answered."""
    episodes = _tau_episodes()
    code, out, err = _run(runner, "import", "--from", "openai-chat", str(TAU), "-o", str(tmp_path))
    assert (code, out) == (0, "")
    total = 0
    for episode in episodes:
        calls = sum(len(m.get("tool_calls") or []) for m in episode["traj"])  # type: ignore[attr-defined]
        total += calls
        # named after the episode's own task id and trial
        transcript = (
            tmp_path / f"gpt-4o-airline-sample-task-{episode['task_id']}-trial-{episode['trial']}.jsonl"
        )
        assert len(list(read_transcript(str(transcript)))) == calls
        _check_transcript(runner, transcript, calls)
    assert err == (
        f"{TAU}: openai-chat: 3 sessions, {total} calls, 0 without a result, 0 results without a call,"
        " 0 with arguments not valid JSON, 0 without arguments\n"
    )


def test_tau_bench_results_never_cross_tool_names() -> None:
    """Where the sample reuses a call id for another tool, each call still gets a result
    sent for its own id AND its own tool name."""
    episodes = _tau_episodes()
    reused = 0
    sessions = list(import_file(str(TAU), "openai-chat"))
    assert len(sessions) == len(episodes)
    for episode, session in zip(episodes, sessions, strict=True):
        traj: list[dict[str, object]] = episode["traj"]  # type: ignore[assignment]
        calls = [
            (c["id"], c["function"]["name"])  # type: ignore[index]
            for m in traj
            for c in m.get("tool_calls") or []  # type: ignore[attr-defined]
        ]
        names_by_id: dict[object, set[object]] = {}
        for call_id, name in calls:
            names_by_id.setdefault(call_id, set()).add(name)
        reused += sum(1 for names in names_by_id.values() if len(names) > 1)
        results = {(m["tool_call_id"], m["name"], m["content"]) for m in traj if m["role"] == "tool"}
        assert [r.tool for r in session.records] == [name for _, name in calls]
        for (call_id, name), record in zip(calls, session.records, strict=True):
            assert (call_id, name, record.response["content"]) in results
    assert reused >= 3  # the sample really does reuse ids across tools


@pytest.mark.parametrize("trajectory", SWE, ids=lambda p: p.name)
def test_swe_agent_trajectory_imports(runner: CliRunner, tmp_path: Path, trajectory: Path) -> None:
    """A SWE-agent .traj becomes one transcript: one call per step (or per history tool call)."""
    data = json.loads(trajectory.read_text(encoding="utf-8"))
    steps = [s for s in data.get("trajectory", []) if s["action"].strip()]
    if steps:
        expected = [s["action"].split()[0] for s in steps]
    else:
        expected = [c["function"]["name"] for m in data["history"] for c in m.get("tool_calls") or []]
    code, _, err = _run(runner, "import", str(trajectory), "-o", str(tmp_path))
    assert code == 0
    assert err.startswith(f"{trajectory}: swe-agent (detected): 1 session, {len(expected)} calls, 0 without")
    transcript = tmp_path / f"{trajectory.stem}.jsonl"
    records = list(read_transcript(str(transcript)))
    assert [r.tool for r in records] == expected
    if steps:
        assert [r.args for r in records] == [{"action": s["action"]} for s in steps]
        assert [r.response for r in records] == [{"content": s["observation"]} for s in steps]
    _check_transcript(runner, transcript, len(expected))


def test_swe_agent_samples_cover_both_shapes() -> None:
    """The samples hold a step-list trajectory and a history-only one, so both paths run."""
    shapes = set()
    for trajectory in SWE:
        data = json.loads(trajectory.read_text(encoding="utf-8"))
        shapes.add("steps" if data.get("trajectory") else "history")
    assert shapes == {"steps", "history"}


def test_reimport_is_byte_identical(runner: CliRunner, tmp_path: Path) -> None:
    """Importing the same inputs twice writes the same bytes under the same names."""
    inputs = [str(TAU), *map(str, SWE)]
    first, second = tmp_path / "a", tmp_path / "b"
    assert _run(runner, "import", *inputs, "-o", str(first))[0] == 0
    assert _run(runner, "import", *inputs, "-o", str(second))[0] == 0
    names = sorted(p.name for p in first.iterdir())
    assert names == sorted(p.name for p in second.iterdir())
    assert len(names) == 3 + len(SWE)
    for name in names:
        assert (first / name).read_bytes() == (second / name).read_bytes()


TAU2 = TRACES / "tau2-bench" / "whissle-airline-sample.json"


def test_tau2_bench_every_simulation_imports(runner: CliRunner, tmp_path: Path) -> None:
    """tau2-bench results are detected; each simulation becomes one transcript holding every tool
    call (a reused call id included), each answered, the failed one with is_error."""
    simulations = json.loads(TAU2.read_text(encoding="utf-8"))["simulations"]
    code, out, err = _run(runner, "import", str(TAU2), "-o", str(tmp_path))
    assert (code, out) == (0, "")
    total = 0
    for number, simulation in enumerate(simulations):
        calls = [c for m in simulation["messages"] for c in (m.get("tool_calls") or [])]
        results = [m for m in simulation["messages"] if m["role"] == "tool"]
        total += len(calls)
        transcript = tmp_path / f"whissle-airline-sample-{number:04d}.jsonl"
        records = list(read_transcript(str(transcript)))
        assert [(r.tool, r.args) for r in records] == [(c["name"], c["arguments"]) for c in calls]
        assert [r.response["is_error"] for r in records if r.response.get("is_error")] == [
            True for m in results if m["error"]
        ]
        _check_transcript(runner, transcript, len(calls))
    assert err == (
        f"{TAU2}: tau2 (detected): 3 sessions, {total} calls, 0 without a result, 0 results without a call,"
        " 0 with arguments not valid JSON, 0 without arguments\n"
    )


def test_tau_bench_mutators_get_their_state_from_the_response(runner: CliRunner, tmp_path: Path) -> None:
    """--state-from-response: update_reservation_flights carries state, so diff has no audit-incomplete."""
    episode = TRACES / "tau-bench" / "gpt-4o-airline-task13.json"
    args = ["import", str(episode), "--state-from-response", "--mutator", "update_reservation_flights"]
    assert _run(runner, *args, "-o", str(tmp_path / "a"))[0] == 0
    transcript = tmp_path / "a" / "gpt-4o-airline-task13-task-13-trial-0.jsonl"
    records = list(read_transcript(str(transcript)))
    stated = {r.tool for r in records if r.state is not None}
    assert stated == {"update_reservation_flights"}
    assert all(list(r.state) == ["response"] for r in records if r.state is not None)
    sealed = tmp_path / "base.sealed.jsonl"
    assert _run(runner, "seal", str(transcript), "-o", str(sealed))[0] == 0
    code, out, _ = _run(
        runner, "diff", str(sealed), str(transcript), "--mutator", "update_reservation_flights"
    )
    assert code == 0, out
    assert "audit-incomplete" not in out
    # without the option every mutating call is audit-incomplete: the case the option is for
    assert _run(runner, "import", str(episode), "-o", str(tmp_path / "b"))[0] == 0
    plain = tmp_path / "b" / transcript.name
    code, out, _ = _run(runner, "diff", str(sealed), str(plain), "--mutator", "update_reservation_flights")
    assert code == 1 and "audit-incomplete: tool 'update_reservation_flights'" in out
