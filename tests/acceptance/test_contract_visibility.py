"""A contract change, fully visible: a tool gains a required argument. With the config naming
the tool source, check, diff and fingerprint-diff say what changed (the fingerprint-diff
lines), the run's call is one tool-drift in check (not one per check), and ToolDriftError
names the change when the pinned lock holds the recorded contract."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import invoke as _invoke
from toolreplay.contracts.lock import load_lock

READ_ONLY = {"readOnlyHint": True}
V1 = [
    {
        "name": "lookup_order",
        "annotations": READ_ONLY,
        "inputSchema": {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]},
    },
    {
        "name": "refund_order",
        "inputSchema": {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]},
    },
]
V2 = [
    V1[0],
    {
        "name": "refund_order",
        "inputSchema": {
            "type": "object",
            "properties": {"order": {"type": "string"}, "reason": {"type": "string"}},
            "required": ["order", "reason"],
        },
    },
]
WHAT = (
    "the tool source differs from the lock: signature (parameter added): /params/1 (absent) -> 'reason':"
    ' string (required); schema (compatible): /properties/reason (absent) -> {"type":"string"};'
    ' schema (breaking): /required ["order"] -> ["order","reason"]'
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runner: CliRunner) -> dict[str, str]:
    """The lock and the baseline recorded with v1; the tools are now v2 and so is the new run."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tools-v1.json").write_text(json.dumps(V1))
    (tmp_path / "tools.json").write_text(json.dumps(V2))
    assert _invoke(runner, "fingerprint", "tools-v1.json", "-o", "tools.lock.json")[0] == 0
    assert _invoke(runner, "fingerprint", "tools.json", "-o", "live.lock.json")[0] == 0
    old, new = load_lock(tmp_path / "tools.lock.json").tools, load_lock(tmp_path / "live.lock.json").tools
    prints = {"lookup": old["lookup_order"].fingerprint, "v1": old["refund_order"].fingerprint}
    prints["v2"] = new["refund_order"].fingerprint

    def records(refund_args: dict[str, str], fingerprint: str) -> str:
        lookup = {"tool": "lookup_order", "args": {"order": "A1"}, "response": {"status": "paid"}}
        refund = {"tool": "refund_order", "args": refund_args, "response": {"ok": True}, "state": {"o": "2"}}
        return "".join(
            json.dumps({"index": i, **r, "fingerprint": f}) + "\n"
            for i, (r, f) in enumerate([(lookup, prints["lookup"]), (refund, fingerprint)])
        )

    (tmp_path / "runs").mkdir()
    (tmp_path / "baselines").mkdir()
    (tmp_path / "base.jsonl").write_text(records({"order": "A1"}, prints["v1"]))
    assert _invoke(runner, "seal", "base.jsonl", "-o", "baselines/support.sealed.jsonl")[0] == 0
    (tmp_path / "runs" / "support.jsonl").write_text(
        records({"order": "A1", "reason": "damaged"}, prints["v2"])
    )
    (tmp_path / "toolreplay.toml").write_text(
        'transcripts = ["runs/*.jsonl"]\nbaselines = ["baselines/*.sealed.jsonl"]\n'
        'tools_lock = "tools.lock.json"\ntools_source = "tools.json"\n'
    )
    return prints


def test_check_says_what_changed_once(runner: CliRunner, project: dict[str, str]) -> None:
    """check: one tool-drift for the run's call, with the fingerprint-diff lines, not two hashes twice."""
    code, out, _ = _invoke(runner, "check")
    assert code == 1
    drift = [line for line in out.splitlines() if "tool-drift" in line]
    assert drift == [
        f"index 1: tool-drift: tool 'refund_order' was called with fingerprint {project['v2']}; the lock has"
        f" {project['v1']}; {WHAT}"
    ]


def test_diff_reports_tool_drift_for_a_new_required_argument(
    runner: CliRunner, project: dict[str, str]
) -> None:
    """diff: the call with the new argument is agent-drift AND tool-drift, and the drift says what changed."""
    code, out, err = _invoke(runner, "diff", "baselines/support.sealed.jsonl", "runs/support.jsonl")
    assert code == 1
    assert "differences: agent-drift 1, tool-drift 1\n" in out
    assert (
        f"index 1: tool-drift: tool 'refund_order' was called with fingerprint {project['v2']} in the run;"
        f" the baseline (index 1) has {project['v1']}; {WHAT}\n"
    ) in out
    assert err == "toolreplay: using config toolreplay.toml (tools_lock, tools_source)\n"


def test_diff_without_a_source_still_reports_the_tool_drift(
    runner: CliRunner, project: dict[str, str], tmp_path: Path
) -> None:
    """Without tools_source the unaligned call is still a tool-drift (it was agent-drift only)."""
    (tmp_path / "toolreplay.toml").unlink()
    _, out, _ = _invoke(
        runner, "diff", "baselines/support.sealed.jsonl", "runs/support.jsonl", "--tools", "tools.lock.json"
    )
    assert (
        f"index 1: tool-drift: tool 'refund_order' was called with fingerprint {project['v2']} in the run;"
        f" the baseline (index 1) has {project['v1']}\n"
    ) in out


def test_fingerprint_diff_defaults_to_the_lock_and_the_source(
    runner: CliRunner, project: dict[str, str]
) -> None:
    """fingerprint-diff with no arguments compares the config's tools_lock with its tools_source."""
    code, out, err = _invoke(runner, "fingerprint-diff")
    assert code == 1
    assert out.splitlines()[-3:] == [
        "refund_order: signature (parameter added): /params/1 (absent) -> 'reason': string (required)",
        'refund_order: schema (compatible): /properties/reason (absent) -> {"type":"string"}',
        'refund_order: schema (breaking): /required ["order"] -> ["order","reason"]',
    ]
    assert err == "toolreplay: using config toolreplay.toml (tools_lock, tools_source)\n"


def test_tool_drift_error_names_the_change(tmp_path: Path) -> None:
    """A registry pinned to a lock raises ToolDriftError with the fingerprint-diff lines, not two hashes."""
    from toolreplay.contracts.lock import ToolLock
    from toolreplay.library import ToolDriftError, ToolRegistry

    def refund_order(order: str) -> dict[str, bool]:
        return {"ok": True}

    pinned = ToolRegistry()
    pinned.register(refund_order, version="1")
    lock: ToolLock = pinned.lock()

    def refund_order_v2(order: str, reason: str) -> dict[str, bool]:  # the tool gained an argument
        return {"ok": True}

    refund_order_v2.__name__ = "refund_order"
    live = ToolRegistry(pinned=lock)
    live.register(refund_order_v2, name="refund_order", version="1")
    with pytest.raises(ToolDriftError) as caught:
        live.call("refund_order", order="A1", reason="damaged")
    assert caught.value.differences == (
        "signature (parameter added): /params/1 (absent) -> 'reason': str (required)",
    )
    assert str(caught.value).endswith(
        "; signature (parameter added): /params/1 (absent) -> 'reason': str (required)"
    )


def test_an_aligned_call_is_one_tool_drift_in_check(
    runner: CliRunner, project: dict[str, str], tmp_path: Path
) -> None:
    """The same call under the new contract: the lock check reports it, the baseline diff does not."""
    run = tmp_path / "runs" / "support.jsonl"
    run.write_text(run.read_text().replace(', "reason": "damaged"', ""))
    _, out, _ = _invoke(runner, "check")
    assert [line.split(": ")[1] for line in out.splitlines() if "tool-drift" in line] == ["tool-drift"]
    assert "in run 'runs/support.jsonl': tool 'refund_order' was called with fingerprint" not in out
