"""One rule for mutators: a declared mutator (flag, lock, config) or a call that records its
state separates identical calls; replay keeps 0.6's report lines and names the knob beside them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import ROOT
from toolreplay.cli import cli
from toolreplay.contracts.lock import ToolLock, make_contract, save_lock

TAU13 = ROOT / "tests" / "data" / "traces" / "tau-bench" / "gpt-4o-airline-task13.json"

SUPPORT = [
    {"index": 0, "tool": "lookup_order", "args": {"order": "A1"}, "response": {"status": "paid"}},
    {"index": 1, "tool": "refund_order", "args": {"order": "A1"}, "response": {"ok": True}},
    {"index": 2, "tool": "lookup_order", "args": {"order": "A1"}, "response": {"status": "refunded"}},
]
ZERO_SIX = (
    "calls: 3\ndivergence: index 2\nfindings: 1\n"
    "index 2: non-determinism: tool 'lookup_order' returned a different response than the identical"
    " call at index 0\n"
)
KNOB = (
    "toolreplay: note: 1 non-determinism finding(s) compare calls with a mutator between them"
    " (0.6's default); --state-aware, or state_aware = true in the config, compares only calls"
    " with no state change between them\n"
)


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "support.jsonl").write_text("".join(json.dumps(r) + "\n" for r in SUPPORT))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _replay(runner: CliRunner, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(cli, ["replay", "support.jsonl", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_replay_with_a_declared_mutator_keeps_06_lines_and_names_state_aware(
    runner: CliRunner, folder: Path
) -> None:
    """--mutator keeps the 0.6 report byte for byte; stderr says --state-aware is the knob."""
    assert _replay(runner, "--mutator", "refund_order") == (1, ZERO_SIX, KNOB)
    assert _replay(runner, "--mutator", "refund_order", "--state-aware") == (
        0,
        "calls: 3\ndivergence: none\nfindings: 0\n",
        "",
    )


def test_replay_with_a_lock_that_says_mutates_names_the_knob(runner: CliRunner, folder: Path) -> None:
    """A lock's mutates: true makes the tool a mutator for replay, and the knob is named."""
    contract = make_contract(
        name="refund_order",
        signature={"name": "refund_order", "params": []},
        schema={},
        version="1",
        mutates=True,
    )
    save_lock(ToolLock.of([contract]), folder / "tools.lock.json")
    assert _replay(runner, "--tools", "tools.lock.json") == (1, ZERO_SIX, KNOB)


def test_replay_without_a_mutator_between_says_nothing_more(runner: CliRunner, folder: Path) -> None:
    """With no mutator between the two calls the finding is plain non-determinism, no note."""
    assert _replay(runner) == (1, ZERO_SIX, "")


def test_a_recorded_state_makes_a_call_a_mutator_everywhere(runner: CliRunner, folder: Path) -> None:
    """refund_order's record carries state: replay --state-aware and diff both treat it as a mutator."""
    records = [dict(r) for r in SUPPORT]
    records[1]["state"] = {"etag": "W/2"}
    (folder / "support.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert _replay(runner, "--state-aware")[0] == 0
    assert runner.invoke(cli, ["seal", "support.jsonl", "-o", "base.sealed.jsonl"]).exit_code == 0
    result = runner.invoke(cli, ["diff", "base.sealed.jsonl", "support.jsonl"], catch_exceptions=False)
    assert "silent-drift" not in result.output
    assert result.exit_code == 0


def test_imported_tau_bench_mutator_is_declared_by_the_config(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real tau-bench: a repeated update_reservation_flights names the knob; the config clears it."""
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(cli, ["import", str(TAU13), "-o", "runs"], catch_exceptions=False).exit_code == 0
    (tmp_path / "toolreplay.toml").write_text('transcripts = ["runs/*.jsonl"]\n')
    out = runner.invoke(cli, ["check"], catch_exceptions=False).stdout
    assert ("redundant-call: tool 'update_reservation_flights' repeats the identical call at index") in out
    assert "(if it changes state, declare it with --mutator or mutators in the config)" in out
    (tmp_path / "toolreplay.toml").write_text(
        'transcripts = ["runs/*.jsonl"]\nmutators = ["update_reservation_flights", "book_reservation",'
        ' "cancel_reservation", "update_reservation_baggages", "update_reservation_passengers"]\n'
    )
    result = runner.invoke(cli, ["check"], catch_exceptions=False)
    assert "update_reservation_flights" not in result.stdout
    # replay reads the same config, so it agrees with check
    transcript = next(iter(sorted((tmp_path / "runs").iterdir())))
    replayed = runner.invoke(cli, ["replay", str(transcript)], catch_exceptions=False)
    assert "update_reservation_flights" not in replayed.stdout
    assert replayed.stderr == "toolreplay: using config toolreplay.toml (mutators)\n"
