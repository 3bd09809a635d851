"""Every command takes its defaults from the nearest config (or --config), flags win, and
says on stderr which config supplied what; stdout is the same bytes as with the flags."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from tests.conftest import invoke as _invoke
from tests.gitrepo import git_env
from toolreplay.contracts.lock import ToolLock, make_contract, save_lock

LOOKUP = {"tool": "lookup_order", "args": {"order": "A1"}}
REFUND = {"tool": "refund_order", "args": {"order": "A1"}}


def _lines(*records: dict[str, object]) -> str:
    return "".join(json.dumps({"index": i, **r}) + "\n" for i, r in enumerate(records))


def _support(refund_response: dict[str, object]) -> str:
    return _lines(
        {**LOOKUP, "response": {"status": "paid"}},
        {**REFUND, "response": refund_response},
        {**LOOKUP, "response": {"status": "refunded"}},
    )


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A support agent's folder: a run, a scope, a lock, and a config naming them."""
    root = tmp_path / "agent"
    (root / "runs").mkdir(parents=True)
    (root / "runs" / "support.jsonl").write_text(_support({"ok": True}))
    (root / "scope.json").write_text(
        json.dumps({"agent": "support", "allowed_tools": ["lookup_order"], "arguments": {}})
    )
    contract = make_contract(
        name="lookup_order", signature={"name": "lookup_order", "params": []}, schema={}, version="1"
    )
    save_lock(ToolLock.of([contract]), root / "tools.lock.json")
    (root / "toolreplay.toml").write_text(
        'transcripts = ["runs/*.jsonl"]\nscope = "scope.json"\ntools_lock = "tools.lock.json"\n'
        'mutators = ["refund_order"]\nstate_aware = true\n'
    )
    monkeypatch.chdir(root)
    return root


def test_replay_takes_mutators_state_aware_and_lock_from_the_config(runner: CliRunner, project: Path) -> None:
    """replay with the config prints what the flags would, and names the config and keys on stderr."""
    code, out, err = _invoke(runner, "replay", "runs/support.jsonl")
    flagged = _invoke(
        runner,
        "replay",
        "runs/support.jsonl",
        "--mutator",
        "refund_order",
        "--state-aware",
        "--tools",
        "tools.lock.json",
    )
    assert (code, out) == flagged[:2] == (0, "calls: 3\ndivergence: none\nfindings: 0\n")
    assert err == "toolreplay: using config toolreplay.toml (mutators, state_aware, tools_lock)\n"
    assert flagged[2] == ""  # every setting came from a flag: the config supplied nothing


def test_a_flag_overrides_the_config(runner: CliRunner, project: Path) -> None:
    """--no-state-aware wins over state_aware = true; the config is named for what it still supplied."""
    code, out, err = _invoke(runner, "replay", "runs/support.jsonl", "--no-state-aware")
    assert code == 1
    assert "index 2: non-determinism: tool 'lookup_order'" in out
    assert err.startswith("toolreplay: using config toolreplay.toml (mutators, tools_lock)\n")


def test_scope_defaults_to_the_configs_scope(runner: CliRunner, project: Path) -> None:
    """scope TRANSCRIPT with no SCOPE reads the config's scope file."""
    code, out, err = _invoke(runner, "scope", "runs/support.jsonl")
    assert code == 1
    assert out == _invoke(runner, "scope", "runs/support.jsonl", "scope.json")[1]
    assert "permission-overreach: tool 'refund_order'" in out
    assert err == "toolreplay: using config toolreplay.toml (scope)\n"


def test_scope_without_scope_or_config_is_a_usage_error(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With neither SCOPE nor a config naming one, scope says what to give (exit 2)."""
    (tmp_path / "run.jsonl").write_text(_support({"ok": True}))
    monkeypatch.chdir(tmp_path)
    code, _, err = _invoke(runner, "scope", "run.jsonl")
    assert code == 2
    assert "give SCOPE, or set scope in the config" in err


def test_config_option_names_one_from_elsewhere(
    runner: CliRunner, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--config PATH is read from any folder; its paths stay relative to its own folder."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code, out, err = _invoke(
        runner, "--traceback", "scope", "../agent/runs/support.jsonl", "--config", "../agent/toolreplay.toml"
    )
    assert code == 1 and "permission-overreach" in out
    assert err == "toolreplay: using config ../agent/toolreplay.toml (scope)\n"


def test_diff_takes_lock_and_mutators_from_the_config(runner: CliRunner, project: Path) -> None:
    """diff reads tools_lock and mutators: the same report as the flags, the config named on stderr."""
    assert _invoke(runner, "seal", "runs/support.jsonl", "-o", "base.sealed.jsonl")[0] == 0
    code, out, err = _invoke(runner, "diff", "base.sealed.jsonl", "runs/support.jsonl")
    flagged = _invoke(
        runner,
        "diff",
        "base.sealed.jsonl",
        "runs/support.jsonl",
        "--tools",
        "tools.lock.json",
        "--mutator",
        "refund_order",
    )
    assert (code, out) == flagged[:2]
    assert "audit-incomplete: tool 'refund_order' changes state" in out  # refund_order is a mutator here
    assert err == "toolreplay: using config toolreplay.toml (mutators, tools_lock)\n"


def test_no_config_no_line(runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a config nothing is said on stderr and the defaults are the built-in ones."""
    (tmp_path / "run.jsonl").write_text(_support({"ok": True}))
    monkeypatch.chdir(tmp_path)
    code, _, err = _invoke(runner, "replay", "run.jsonl")
    assert (code, err) == (1, "")


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, env=git_env(), check=True, capture_output=True)


def test_note_summary_agrees_with_check(runner: CliRunner, project: Path) -> None:
    """note reads the config's mutators as check does: the same tools drifted, and only those."""
    (project / "runs" / "support.jsonl").unlink()
    (project / "toolreplay.toml").write_text(
        'transcripts = ["runs/*.jsonl"]\nbaselines = ["baselines/*.sealed.jsonl"]\n'
        'mutators = ["refund_order"]\n'
    )
    (project / "baselines").mkdir()
    (project / "recorded.jsonl").write_text(_support({"ok": True}))
    assert _invoke(runner, "seal", "recorded.jsonl", "-o", "baselines/support.sealed.jsonl")[0] == 0
    _git(project, "init", "-q", "-b", "main")
    _git(project, "add", "-A")
    _git(project, "commit", "-q", "-m", "baseline")
    # the refund now answers with its id: a behaviour change of refund_order, nothing else
    (project / "runs" / "support.jsonl").write_text(_support({"ok": True, "refund": 7}))
    check = _invoke(runner, "check")[1]
    drifted = {line.split("tool '")[1].split("'")[0] for line in check.splitlines() if "-drift:" in line}
    assert drifted == {"refund_order"}
    (project / "recorded.jsonl").write_text(_support({"ok": True, "refund": 7}))
    args = ("seal", "recorded.jsonl", "-o", "baselines/support.sealed.jsonl", "--force")
    assert _invoke(runner, *args)[0] == 0
    code, text, err = _invoke(runner, "note", "baselines/support.sealed.jsonl")
    assert code == 0
    front = yaml.safe_load(text.split("---\n")[1])
    assert (front["kinds"], front["tools"]) == (["behavior"], sorted(drifted))
    assert err == "toolreplay: using config toolreplay.toml (mutators)\n"
    assert os.path.exists(project / "baselines" / "support.sealed.jsonl")


def test_verify_without_sealed_verifies_the_configs_baselines(runner: CliRunner, project: Path) -> None:
    """verify with no SEALED checks every baseline the config names, one report each."""
    (project / "baselines").mkdir()
    for name in ("a", "b"):
        assert _invoke(runner, "seal", "runs/support.jsonl", "-o", f"baselines/{name}.sealed.jsonl")[0] == 0
    (project / "toolreplay.toml").write_text('baselines = ["baselines/*.sealed.jsonl"]\n')
    code, out, err = _invoke(runner, "verify")
    assert code == 0
    assert out.startswith("== baselines/a.sealed.jsonl\nchain: intact\n")
    assert "== baselines/b.sealed.jsonl\nchain: intact\n" in out
    assert err == "toolreplay: using config toolreplay.toml (baselines)\n"
    code, _, err = _invoke(runner, "verify", "--expect-count", "3")
    assert code == 2 and "need one SEALED" in err
