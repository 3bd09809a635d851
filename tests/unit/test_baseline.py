"""Unit tests of the pure baseline analysis: pointer differences, freshness, alignment, lock reading."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolreplay.analyses.baseline import call_drift, compare_call, diff_baseline, stop_drift
from toolreplay.analyses.difference import ABSENT, clipped, first_difference
from toolreplay.analyses.freshness import check_freshness
from toolreplay.analyses.judging import Judging, ToolBehaviour, lock_behaviour
from toolreplay.errors import InputError
from toolreplay.transcript import Record, parse_line

DAY = 86400


def rec(index: int, tool: str, args: dict[str, Any], response: dict[str, Any], **extra: Any) -> Record:
    line = json.dumps({"index": index, "tool": tool, "args": args, "response": response, **extra})
    record, _ = parse_line(line.encode(), line=index + 1)
    return record


def test_first_difference_walks_keys_in_canonical_order() -> None:
    """The reported pointer is the first differing member in sorted-key order, escaped per RFC 6901."""
    old = {"b": 1, "a/x": {"k": [1, 2]}}
    new = {"b": 2, "a/x": {"k": [1, 3]}}
    assert first_difference(old, new) == ("/a~1x/k/1", 2, 3)


def test_first_difference_marks_a_missing_member() -> None:
    """A member on one side only is reported with 'no value' for the other side."""
    pointer, old, new = first_difference({"hits": [1]}, {"hits": [1, 2]}) or ("", None, None)
    assert pointer == "/hits/1"
    assert old is ABSENT
    assert clipped(old, 60) == "no value"
    assert clipped(new, 60) == "2"


def test_first_difference_tells_int_from_float_and_bool() -> None:
    """1, 1.0 and true are different canonical values, so they differ here too."""
    assert first_difference({"n": 1}, {"n": 1.0}) == ("/n", 1, 1.0)
    assert first_difference({"n": 1}, {"n": True}) == ("/n", 1, True)
    assert first_difference({"n": [1]}, {"n": [1]}) is None


def test_show_value_clips_long_values_to_one_line() -> None:
    """A long, multi-line or non-ASCII value is shown as clipped canonical JSON on one ASCII line."""
    shown = clipped("line\n\u202e" * 40, 60)
    assert shown.startswith('"line\\n\\u202e') and shown.endswith("...")
    assert shown.isascii() and shown.isprintable() and len(shown) <= 60


def test_freshness_uses_the_injected_now() -> None:
    """Stale means strictly older than N days at 'now'; the date shown is the commit's (UTC)."""
    committed = 1_700_000_000  # 2023-11-14T22:13:20Z
    fresh = check_freshness(committed, now=committed + 30 * DAY, max_age_days=30)
    stale = check_freshness(committed, now=committed + 30 * DAY + 1, max_age_days=30)
    assert (fresh.stale, stale.stale) == (False, True)
    assert fresh.committed == stale.committed == "2023-11-14"


def test_inserted_call_is_one_agent_drift_and_the_rest_still_compares() -> None:
    """An extra call does not shift the comparison: later behaviour drift is still found."""
    base = [rec(0, "a", {}, {"v": 1}), rec(1, "b", {}, {"v": 1})]
    run = [rec(0, "a", {}, {"v": 1}), rec(1, "x", {}, {}), rec(2, "b", {}, {"v": 2})]
    [result] = diff_baseline(base, [("run", run)], Judging()).runs
    assert [(f.kind, f.index, f.related) for f in result.findings] == [
        ("agent-drift", 1, 1),
        ("behavior-drift", 2, 1),
    ]
    assert result.aligned == 2


def test_only_the_first_of_each_kind_is_a_finding_but_all_are_counted() -> None:
    """Three behaviour differences give one finding and a count of three."""
    base = [rec(i, "t", {"i": i}, {"v": 0}) for i in range(3)]
    run = [rec(i, "t", {"i": i}, {"v": 1}) for i in range(3)]
    [result] = diff_baseline(base, [("run", run)], Judging()).runs
    assert [f.index for f in result.findings] == [0]
    assert result.counts == (("behavior-drift", 3),)


def test_lock_mutates_false_overrides_the_default_mutators() -> None:
    """A lock declaring write_file non-mutating silences audit-incomplete for it."""
    base = [rec(0, "write_file", {}, {"ok": True})]
    assert diff_baseline(base, [("r", base)], Judging()).drifted
    lock = {"write_file": ToolBehaviour(mutates=False)}
    assert not diff_baseline(base, [("r", base)], Judging(behaviour=lock)).drifted


def test_nondeterministic_tool_still_has_its_effect_compared() -> None:
    """deterministic: false exempts responses, not post-call state."""
    base = [rec(0, "mk", {}, {"id": 1}, state={"r": "1"})]
    run = [rec(0, "mk", {}, {"id": 2}, state={"r": "2"})]
    lock = {"mk": ToolBehaviour(deterministic=False, mutates=True)}
    result = diff_baseline(base, [("r", run)], Judging(behaviour=lock))
    assert [f.kind for f in result.runs[0].findings] == ["effect-drift"]
    assert result.verdicts == {"mk": "no-dependency"}


def test_silent_drift_inside_the_baseline_sets_the_verdict() -> None:
    """The baseline disagreeing with itself is silent drift of that tool even when the run agrees."""
    base = [rec(0, "t", {}, {"v": 1}), rec(1, "t", {}, {"v": 2})]
    result = diff_baseline(base, [("r", base)], Judging())
    assert result.verdicts == {"t": "silent-drift"}
    assert result.drifted


def test_empty_run_against_empty_baseline_is_faithful() -> None:
    """Nothing recorded and nothing run: no drift, no verdicts."""
    result = diff_baseline([], [("r", [])], Judging())
    assert not result.drifted and result.verdicts == {}


def write(tmp_path: Path, value: object) -> str:
    path = tmp_path / "tools.lock.json"
    path.write_text(json.dumps(value))
    return str(path)


def test_lock_behaviour_comes_from_the_tool_lock(tmp_path: Path) -> None:
    """fingerprint, deterministic and mutates per tool, as the real lock loader reads them."""
    from toolreplay.contracts.lock import ToolLock, make_contract, save_lock

    path = tmp_path / "tools.lock.json"
    search = make_contract(name="s", signature={"name": "s", "params": []}, schema={}, version="1")
    write = make_contract(
        name="w",
        signature={"name": "w", "params": []},
        schema={},
        version="1",
        deterministic=False,
        mutates=True,
    )
    save_lock(ToolLock.of([search, write]), path)
    assert lock_behaviour(str(path)) == {
        "s": ToolBehaviour(fingerprint=search.fingerprint, deterministic=True, mutates=False, version="1"),
        "w": ToolBehaviour(fingerprint=write.fingerprint, deterministic=False, mutates=True, version="1"),
    }


@pytest.mark.parametrize("value", [[], {"tools": []}, {"lock_version": 1, "tools": {"s": {"mutates": 1}}}])
def test_lock_behaviour_refuses_bad_locks(tmp_path: Path, value: object) -> None:
    """A malformed lock is a usage error that names the file."""
    with pytest.raises(InputError) as err:
        lock_behaviour(write(tmp_path, value))
    assert err.value.path and err.value.path.endswith("tools.lock.json")


def test_align_matches_common_head_and_tail_first() -> None:
    """One changed call in a long run of identical calls is one replace between two equal blocks."""
    from toolreplay.analyses.align import align

    old = ["p"] * 3000
    new = ["p"] * 1500 + ["q"] + ["p"] * 1499
    assert align(old, new) == [
        ("equal", 0, 1500, 0, 1500),
        ("replace", 1500, 1501, 1500, 1501),
        ("equal", 1501, 3000, 1501, 3000),
    ]


def test_align_survives_a_large_repetitive_middle() -> None:
    """Differences at both ends of 20,000 identical polls align in linear time (coarsely, but completely)."""
    from toolreplay.analyses.align import align

    old = ["x", *["p"] * 20000, "y"]
    new = ["p"] * 19990
    ops = align(old, new)
    # contiguous and complete on both sides, whatever the blocks are
    assert [op[1] for op in ops] == [0] + [op[2] for op in ops[:-1]]
    assert [op[3] for op in ops] == [0] + [op[4] for op in ops[:-1]]
    assert ops[-1][2] == len(old) and ops[-1][4] == len(new)


def test_state_fingerprints_are_shown_whole() -> None:
    """A SHA-256 state value is not cut in an effect-drift message (other values still are, at 60)."""
    old, new = "sha256:" + "a" * 64, "sha256:" + "b" * 64
    base = rec(0, "write", {"p": "x"}, {"ok": True}, state={"x": old})
    run = rec(0, "write", {"p": "x"}, {"ok": True}, state={"x": new})
    result = diff_baseline([base], [("run.jsonl", [run])], Judging())
    assert [f.message for f in result.runs[0].findings] == [
        f"tool 'write' returned the same response as at baseline index 0 but left a different state:"
        f' at \'/x\' the baseline has "{old}", the run has "{new}"'
    ]


def test_call_by_call_comparison_is_diffs_own() -> None:
    """compare_call / call_drift / stop_drift give the findings diff gives for the same pair or gap."""
    base = [rec(0, "write", {"p": "x"}, {"ok": True}, state={"x": "1"}), rec(1, "read", {}, {"v": 1})]
    run = [rec(0, "write", {"p": "x"}, {"ok": True}, state={"x": "2"})]
    diffed = diff_baseline(base, [("run.jsonl", run)], Judging()).runs[0].findings
    pair = compare_call(base[0], run[0], path="run.jsonl")
    stopped = stop_drift(base, run, path="run.jsonl")
    assert stopped is not None
    assert [*pair, stopped] == sorted(diffed, key=lambda f: f.index or 0)
    assert call_drift(base, run) is None
    assert stop_drift(base, base) is None
    other = [rec(0, "read", {}, {"v": 1})]
    drift = call_drift(base, other)
    assert drift is not None
    assert drift.message == "the run called tool 'read' where the baseline called 'write' at index 0"
    extra = call_drift(base, [*base, rec(2, "read", {}, {})])
    assert extra is not None
    assert extra.message == "the run called tool 'read' after the baseline's last call (index 1)"


def test_a_run_dropping_recorded_state_is_audit_incomplete_for_any_tool() -> None:
    """The baseline records a call's post-state and the run does not: its effect went unchecked,
    whether or not the tool is in the mutators list or declared non-mutating."""
    base = [rec(0, "write_config", {"v": 1}, {"status": "ok"}, state={"config.toml": "aaa"})]
    run = [rec(0, "write_config", {"v": 1}, {"status": "ok"})]
    [result] = diff_baseline(base, [("run", run)], Judging()).runs
    assert [(f.kind, f.message) for f in result.findings] == [
        (
            "audit-incomplete",
            "tool 'write_config' changes state but the run does not record its post-call state"
            " (baseline index 0): its effect cannot be compared",
        )
    ]
    lock = {"write_config": ToolBehaviour(mutates=False)}
    assert diff_baseline(base, [("run", run)], Judging(behaviour=lock)).drifted
    # the other way round (a run that starts recording state for a read) stays quiet
    assert not diff_baseline(run, [("run", base)], Judging()).drifted


OLD_TEXT, NEW_TEXT, LOCK_TEXT = "a" * 64, "b" * 64, "c" * 64


def _text_findings(result: Any) -> list[tuple[int | None, int | None, str]]:
    return [
        (f.index, f.related, f.message)
        for run in result.runs
        for f in run.findings
        if f.kind == "contract-text-drift"
    ]


def test_contract_text_drift_between_baseline_and_run_aligned_or_not() -> None:
    """A call whose text_digest differs from the baseline's is contract-text-drift, whether it lines up
    with a baseline call or is one the baseline does not have (held to that tool's first described call)."""
    baseline = [rec(0, "search", {"q": "a"}, {"n": 1}, text_digest=OLD_TEXT)]
    aligned = [rec(0, "search", {"q": "a"}, {"n": 1}, text_digest=NEW_TEXT)]
    extra = [rec(0, "search", {"q": "b"}, {"n": 2}, text_digest=NEW_TEXT)]
    said = (
        "tool 'search': contract text drifted: recorded with text digest aaaaaaaaaaaaaaaa (baseline index 0),"
        " the run has bbbbbbbbbbbbbbbb; its title, description, parameter descriptions, annotations or"
        " output schema changed"
    )
    assert _text_findings(diff_baseline(baseline, [("run.jsonl", aligned)], Judging())) == [(0, 0, said)]
    assert _text_findings(diff_baseline(baseline, [("run.jsonl", extra)], Judging())) == [(0, None, said)]
    same = [rec(0, "search", {"q": "a"}, {"n": 1}, text_digest=OLD_TEXT)]
    assert _text_findings(diff_baseline(baseline, [("run.jsonl", same)], Judging())) == []


def test_contract_text_drift_against_the_lock() -> None:
    """With a lock that keeps contract text, the baseline's digest is held to it first; a run's is
    held to it only where the run has no check of its own against the lock (lock_checks_runs)."""
    lock = {"search": ToolBehaviour(text_digest=LOCK_TEXT)}
    calls = [rec(0, "search", {"q": "a"}, {"n": 1}, text_digest=LOCK_TEXT)]
    moved = [rec(0, "search", {"q": "a"}, {"n": 1}, text_digest=NEW_TEXT)]
    base_off = diff_baseline(moved, [("run.jsonl", moved)], Judging(behaviour=lock))
    assert [m.split(", ")[1] for _, _, m in _text_findings(base_off)] == [
        "the lock has cccccccccccccccc; its title"
    ]
    assert "(baseline index 0)" in _text_findings(base_off)[0][2]
    run_off = diff_baseline(calls, [("run.jsonl", moved)], Judging(behaviour=lock))
    assert "the run has bbbbbbbbbbbbbbbb" in _text_findings(run_off)[0][2]
    left_to_the_run = diff_baseline(
        calls, [("run.jsonl", moved)], Judging(behaviour=lock, lock_checks_runs=False)
    )
    assert _text_findings(left_to_the_run) == []


@pytest.mark.parametrize(
    ("field", "kind", "said"),
    [
        (
            "fingerprint",
            "tool-drift",
            "was called with fingerprint bbbbbbbbbbbbbbbb in the run; the lock has",
        ),
        ("text_digest", "contract-text-drift", "text digest bbbbbbbbbbbbbbbb (in the run), the lock has"),
    ],
)
def test_a_run_call_off_the_lock_with_nothing_in_the_baseline_to_hold_it_to(
    field: str, kind: str, said: str
) -> None:
    """A run call whose digest is not the lock's, where the baseline has no digest of that tool
    (recorded without one, or never called it), is held to the lock itself: reported when the lock
    checks runs, left to the run's own check otherwise. Both digests behave alike."""
    digest = "b" * (16 if field == "fingerprint" else 64)
    lock = {"search": ToolBehaviour(**{field: "c" * (16 if field == "fingerprint" else 64)})}
    run = [rec(0, "search", {"q": "a"}, {"n": 1}, **{field: digest})]
    for baseline in ([rec(0, "search", {"q": "a"}, {"n": 1})], [rec(0, "other", {}, {})]):
        found = [
            f
            for r in diff_baseline(baseline, [("run", run)], Judging(behaviour=lock)).runs
            for f in r.findings
        ]
        assert [f.kind for f in found if f.kind == kind] == [kind]
        assert said in next(f.message for f in found if f.kind == kind)
        left = diff_baseline(baseline, [("run", run)], Judging(behaviour=lock, lock_checks_runs=False))
        assert [f.kind for r in left.runs for f in r.findings if f.kind == kind] == []
