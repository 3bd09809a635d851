"""Re-execution replay: real tools with real side effects in a temp dir, held against the recording."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from toolreplay import (
    AuditIncompleteError,
    AuditIncompleteWarning,
    Recorder,
    ReplayDivergenceError,
    SealError,
    Snapshot,
    ToolDriftError,
    ToolRegistry,
)
from toolreplay.cli import cli
from toolreplay.library import ABSENT


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Sandbox:
    """A pinned environment on disk: config files, and a defaults file every write starts from."""

    def __init__(self, root: Path, defaults: str = "mode=safe\n") -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        (root / "defaults").write_text(defaults)

    def write_config(self, name: str, text: str) -> dict[str, Any]:
        """Writes defaults + text; answers "ok" whatever the defaults were."""
        (self.root / name).write_text((self.root / "defaults").read_text() + text)
        return {"status": "ok"}

    def read_config(self, name: str) -> dict[str, Any]:
        return {"text": (self.root / name).read_text()}

    def state(self, tool: str, args: dict[str, Any], response: dict[str, Any]) -> dict[str, str] | None:
        """The content hash of the file a write touched."""
        if tool != "write_config":
            return None
        return {args["name"]: digest((self.root / args["name"]).read_bytes())}


def registry(sandbox: Sandbox, **options: Any) -> ToolRegistry:
    tools = ToolRegistry(**options)
    tools.register(sandbox.write_config, mutates=True, version="1.0")
    tools.register(sandbox.read_config, version="1.0")
    return tools


def session(tools: ToolRegistry) -> None:
    """What the agent does: write a config, read it back."""
    tools.call("write_config", name="app.cfg", text="port=80\n")
    tools.call("read_config", name="app.cfg")


def record(tmp_path: Path, *, with_state: bool = True, sealed: bool = True) -> Path:
    path = tmp_path / ("run.sealed.jsonl" if sealed else "run.jsonl")
    sandbox = Sandbox(tmp_path / "recorded")
    with Recorder(path, seal=sealed) as recorder:
        session(registry(sandbox, recorder=recorder, state=sandbox.state if with_state else None))
    return path


def test_faithful_reexecution_passes(tmp_path: Path) -> None:
    """The same calls in a fresh copy of the environment: every call runs, nothing diverges."""
    path = record(tmp_path)
    sandbox = Sandbox(tmp_path / "replay")
    with registry(sandbox, reexecute=path, state=sandbox.state) as tools:
        session(tools)
    assert tools.replayed == 2
    assert tools.audit_gaps == []
    assert (sandbox.root / "app.cfg").read_text() == "mode=safe\nport=80\n"


def test_changed_environment_under_the_same_response_is_an_effect_divergence(tmp_path: Path) -> None:
    """write_config answers "ok" both times but the file differs: effect-drift naming file and hashes."""
    path = record(tmp_path)
    sandbox = Sandbox(tmp_path / "replay", defaults="mode=debug\n")
    tools = registry(sandbox, reexecute=path, state=sandbox.state)
    with pytest.raises(ReplayDivergenceError) as caught:
        tools.call("write_config", name="app.cfg", text="port=80\n")
    old, new = digest(b"mode=safe\nport=80\n"), digest(b"mode=debug\nport=80\n")
    error = caught.value
    assert (error.kind, error.index, error.tool, error.resource) == (
        "effect-drift",
        0,
        "write_config",
        "app.cfg",
    )
    assert (error.pointer, error.recorded_value, error.live_value) == ("/app.cfg", old, new)
    assert str(error) == (
        f"re-execution diverged from {path} at index 0: effect-drift: tool 'write_config' returned the"
        f" same response as at baseline index 0 but left a different state: at '/app.cfg' the baseline"
        f' has "{old}", the run has "{new}"'
    )


def test_recording_without_state_is_audit_incomplete(tmp_path: Path) -> None:
    """A mutating call recorded without its post-call state cannot be audited: AuditIncompleteError."""
    path = record(tmp_path, with_state=False)
    sandbox = Sandbox(tmp_path / "replay")
    tools = registry(sandbox, reexecute=path, state=sandbox.state)
    with pytest.raises(AuditIncompleteError) as caught:
        tools.call("write_config", name="app.cfg", text="port=80\n")
    error = caught.value
    assert (error.kind, error.index, error.tool) == ("audit-incomplete", 0, "write_config")
    assert str(error) == (
        f"re-execution of {path} cannot be audited at index 0: audit-incomplete: tool 'write_config'"
        " changes state but the baseline does not record its post-call state (baseline index 0):"
        " its effect cannot be compared"
    )


def test_reexecution_without_state_function_is_audit_incomplete(tmp_path: Path) -> None:
    """The recording has state, the re-execution records none: audit-incomplete, saying which side."""
    path = record(tmp_path)
    tools = registry(Sandbox(tmp_path / "replay"), reexecute=path)
    with pytest.raises(AuditIncompleteError, match="but the run does not record its post-call state"):
        tools.call("write_config", name="app.cfg", text="port=80\n")


def test_audit_incomplete_downgraded_on_request_is_still_reported(tmp_path: Path) -> None:
    """allow_incomplete=True: the run goes on, each gap is a warning and is listed in audit_gaps."""
    path = record(tmp_path, with_state=False)
    sandbox = Sandbox(tmp_path / "replay")
    with (
        pytest.warns(AuditIncompleteWarning) as warned,
        registry(sandbox, reexecute=path, state=sandbox.state, allow_incomplete=True) as tools,
    ):
        session(tools)
    assert [str(w.message) for w in warned] == [
        f"re-execution of {path} cannot be audited at index 0: audit-incomplete: tool 'write_config'"
        " changes state but the baseline does not record its post-call state (baseline index 0):"
        " its effect cannot be compared"
    ]
    assert [(gap.kind, gap.index, gap.tool) for gap in tools.audit_gaps] == [
        ("audit-incomplete", 0, "write_config")
    ]


def test_different_call_order_is_an_agent_divergence_before_the_tool_runs(tmp_path: Path) -> None:
    """Another tool at a position: agent-drift, raised before that tool touches the environment."""
    path = record(tmp_path)
    sandbox = Sandbox(tmp_path / "replay")
    (sandbox.root / "app.cfg").write_text("old\n")
    tools = registry(sandbox, reexecute=path, state=sandbox.state)
    with pytest.raises(ReplayDivergenceError) as caught:
        tools.call("read_config", name="app.cfg")
    error = caught.value
    assert (error.kind, error.index, error.tool) == ("agent-drift", 0, "read_config")
    assert str(error) == (
        f"re-execution diverged from {path} at index 0: agent-drift: the run called tool 'read_config'"
        " where the baseline called 'write_config' at index 0"
    )


def test_other_arguments_are_an_agent_divergence_naming_the_argument(tmp_path: Path) -> None:
    """The same tool with other arguments: agent-drift at the first differing argument; nothing is written."""
    path = record(tmp_path)
    sandbox = Sandbox(tmp_path / "replay")
    tools = registry(sandbox, reexecute=path, state=sandbox.state)
    with pytest.raises(ReplayDivergenceError) as caught:
        tools.call("write_config", name="app.cfg", text="port=8080\n")
    error = caught.value
    assert (error.kind, error.pointer, error.recorded_value, error.live_value) == (
        "agent-drift",
        "/text",
        "port=80\n",
        "port=8080\n",
    )
    assert str(error).endswith(
        "tool 'write_config' was called with other arguments than at baseline index 0:"
        ' at \'/text\' the baseline has "port=80\\n", the run has "port=8080\\n"'
    )
    assert not (sandbox.root / "app.cfg").exists()


def test_different_response_is_a_behavior_divergence_with_the_first_pointer(tmp_path: Path) -> None:
    """read_config answers other text than recorded: behavior-drift at /text with both values."""
    path = record(tmp_path)
    sandbox = Sandbox(tmp_path / "replay")
    tools = registry(sandbox, reexecute=path, state=sandbox.state)
    tools.call("write_config", name="app.cfg", text="port=80\n")
    (sandbox.root / "app.cfg").write_text("port=81\n")  # someone else touched the environment
    with pytest.raises(ReplayDivergenceError) as caught:
        tools.call("read_config", name="app.cfg")
    error = caught.value
    assert (error.kind, error.index, error.tool, error.pointer) == (
        "behavior-drift",
        1,
        "read_config",
        "/text",
    )
    assert (error.recorded_value, error.live_value) == ("mode=safe\nport=80\n", "port=81\n")
    assert str(error) == (
        f"re-execution diverged from {path} at index 1: behavior-drift: tool 'read_config' returned a"
        " different response than at baseline index 1: at '/text' the baseline has"
        ' "mode=safe\\nport=80\\n", the run has "port=81\\n"'
    )


def test_nondeterministic_tool_is_held_to_its_effects_only(tmp_path: Path) -> None:
    """A tool registered deterministic=False may answer otherwise (as diff with a lock allows)."""
    path = tmp_path / "run.sealed.jsonl"
    counter = iter(range(100))

    def stamp(name: str) -> dict[str, Any]:
        (tmp_path / name).write_text("stamped")
        return {"serial": next(counter)}

    def state(tool: str, args: dict[str, Any], response: dict[str, Any]) -> dict[str, str]:
        return {args["name"]: digest((tmp_path / args["name"]).read_bytes())}

    with Recorder(path, seal=True) as recorder:
        live = ToolRegistry(recorder=recorder, state=state)
        live.register(stamp, deterministic=False, mutates=True)
        live.call("stamp", name="f")
    with ToolRegistry(reexecute=path, state=state) as tools:
        tools.register(stamp, deterministic=False, mutates=True)
        assert tools.call("stamp", name="f") == {"serial": 1}


def test_stopping_before_the_end_is_a_divergence(tmp_path: Path) -> None:
    """Leaving the with block with recorded calls not made: agent-drift "the run stopped at index N"."""
    path = record(tmp_path)
    sandbox = Sandbox(tmp_path / "replay")
    with (
        pytest.raises(ReplayDivergenceError) as caught,
        registry(sandbox, reexecute=path, state=sandbox.state) as tools,
    ):
        tools.call("write_config", name="app.cfg", text="port=80\n")
    error = caught.value
    assert (error.kind, error.index, error.tool) == ("agent-drift", 1, "read_config")
    assert str(error) == (
        f"re-execution diverged from {path} at index 1: agent-drift: the run did not make the call to"
        " tool 'read_config' at baseline index 1; the run stopped at index 1"
    )


def test_finish_without_a_with_block_and_an_empty_run(tmp_path: Path) -> None:
    """finish() checks the same outside a with block; a run that made no call stopped at index 0."""
    path = record(tmp_path)
    tools = registry(Sandbox(tmp_path / "replay"), reexecute=path)
    with pytest.raises(ReplayDivergenceError) as caught:
        tools.finish()
    assert str(caught.value).endswith(
        "the run did not make the call to tool 'write_config' at baseline index 0 (and 1 more after it);"
        " the run stopped at index 0"
    )


def test_an_exception_leaving_the_block_is_not_masked(tmp_path: Path) -> None:
    """The agent's own exception leaves the with block as it is, not as a divergence."""
    path = record(tmp_path)
    with (
        pytest.raises(RuntimeError, match="agent crashed"),
        registry(Sandbox(tmp_path / "r"), reexecute=path),
    ):
        raise RuntimeError("agent crashed")


def test_a_call_past_the_recording_is_a_divergence(tmp_path: Path) -> None:
    """One call more than the recording holds: agent-drift naming the recording's last call."""
    path = record(tmp_path)
    sandbox = Sandbox(tmp_path / "replay")
    tools = registry(sandbox, reexecute=path, state=sandbox.state)
    session(tools)
    with pytest.raises(ReplayDivergenceError) as caught:
        tools.call("read_config", name="app.cfg")
    assert (caught.value.kind, caught.value.index) == ("agent-drift", 2)
    assert str(caught.value).endswith(
        "the run called tool 'read_config' after the baseline's last call (index 1)"
    )
    tools.finish()  # the divergence was raised once; leaving does not add a second one


def test_a_changed_tool_is_drift_before_it_runs(tmp_path: Path) -> None:
    """A recorded fingerprint other than the registered tool's: ToolDriftError, and the tool does not run."""
    path = record(tmp_path)
    sandbox = Sandbox(tmp_path / "replay")
    tools = ToolRegistry(reexecute=path, state=sandbox.state)
    tools.register(sandbox.write_config, mutates=True, version="2.0")
    with pytest.raises(ToolDriftError) as caught:
        tools.call("write_config", name="app.cfg", text="port=80\n")
    assert (caught.value.tool, caught.value.index) == ("write_config", 0)
    assert not (sandbox.root / "app.cfg").exists()


def test_divergences_use_diffs_wording(tmp_path: Path) -> None:
    """The re-execution's recorded transcript, diffed against the recording, gives the same finding line."""
    path = record(tmp_path)
    sandbox = Sandbox(tmp_path / "replay", defaults="mode=debug\n")
    run = tmp_path / "replayed.jsonl"
    with Recorder(run) as recorder:
        tools = registry(sandbox, reexecute=path, state=sandbox.state, recorder=recorder)
        with pytest.raises(ReplayDivergenceError) as caught:
            tools.call("write_config", name="app.cfg", text="port=80\n")
    result = CliRunner().invoke(cli, ["diff", str(path), str(run)], catch_exceptions=False)
    finding = caught.value.finding
    assert f"index {finding.index}: {finding.kind}: {finding.message}" in result.output.splitlines()


def test_plain_transcript_and_snapshot_object_are_accepted(tmp_path: Path) -> None:
    """reexecute takes a plain transcript or a Snapshot; it excludes snapshot mode."""
    path = record(tmp_path, sealed=False)
    sandbox = Sandbox(tmp_path / "replay")
    with registry(sandbox, reexecute=Snapshot.from_file(path), state=sandbox.state) as tools:
        session(tools)
    with pytest.raises(ValueError, match="exclude each other"):
        ToolRegistry(snapshot=path, reexecute=path)


def test_absent_values_use_the_library_marker(tmp_path: Path) -> None:
    """An argument given on one side only reports the other side as ABSENT."""
    path = record(tmp_path)
    tools = ToolRegistry(reexecute=path)

    def write_config(name: str, text: str = "", extra: str = "") -> dict[str, Any]:
        raise AssertionError("must not run")

    tools.register(write_config)
    with pytest.raises(ReplayDivergenceError) as caught:
        tools.call("write_config", name="app.cfg", text="port=80\n", extra="x")
    assert (caught.value.pointer, caught.value.recorded_value, caught.value.live_value) == (
        "/extra",
        ABSENT,
        "x",
    )


# --- sealed recordings check their seal ---------------------------------------------------------


def byte_edit(lines: list[str]) -> list[str]:
    return [lines[0].replace("port=80", "port=90"), *lines[1:]]


def removed_line(lines: list[str]) -> list[str]:
    return lines[1:]


def reordered_pair(lines: list[str]) -> list[str]:
    return [lines[1], lines[0]]


TAMPERINGS = {
    "byte-edit": (byte_edit, "digest does not match the link's content", 1, 0),
    "removed-line": (removed_line, "index 1 where the chain requires 0", 1, 0),
    "reordered-pair": (reordered_pair, "index 1 where the chain requires 0", 1, 0),
}


@pytest.mark.parametrize("tamper", sorted(TAMPERINGS))
@pytest.mark.parametrize("mode", ["from_file", "snapshot", "reexecute"])
def test_tampered_sealed_recording_refuses_to_serve(tmp_path: Path, tamper: str, mode: str) -> None:
    """A sealed recording edited, cut or reordered raises SealError naming the first broken link."""
    path = record(tmp_path)
    edit, reason, line, position = TAMPERINGS[tamper]
    path.write_text("".join(edit(path.read_text().splitlines(keepends=True))))
    sandbox = Sandbox(tmp_path / "replay")
    with pytest.raises(SealError) as caught:
        if mode == "from_file":
            Snapshot.from_file(path)
        else:
            registry(sandbox, **{mode: path})
    assert caught.value.position == position
    assert str(caught.value) == (
        f"{path}:{line}: the chain is broken at index {position} ({reason}):"
        " a recording whose seal does not verify is never served"
    )
    assert not (sandbox.root / "app.cfg").exists()


def test_a_broken_link_further_down_is_named(tmp_path: Path) -> None:
    """The error names the first link that does not follow, not just the file."""
    path = record(tmp_path)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0] + lines[1].replace('"mode=safe', '"mode=evil'))
    with pytest.raises(SealError) as caught:
        Snapshot.from_file(path)
    assert (caught.value.position, caught.value.line) == (1, 2)
    assert "the chain is broken at index 1 (digest does not match the link's content)" in str(caught.value)


def test_expected_head_anchors_a_cut_tail(tmp_path: Path) -> None:
    """A cut tail still chains; expect_head catches it, and the intact file answers with its head."""
    path = record(tmp_path)
    head = Snapshot.from_file(path).head
    assert head is not None
    assert Snapshot.from_file(path, expect_head=head.upper()).served == 0
    first = path.read_text().splitlines(keepends=True)[0]
    path.write_text(first)
    cut_head = Snapshot.from_file(path).head
    with pytest.raises(SealError) as caught:
        Snapshot.from_file(path, expect_head=head)
    assert str(caught.value) == f"{path}: the chain ends on head {cut_head}, expected {head}"
    with pytest.raises(ValueError, match="anchor a sealed transcript"):
        Snapshot.from_file(record(tmp_path / "plain", sealed=False), expect_head=head)


def test_signature_anchors_the_snapshot(tmp_path: Path) -> None:
    """With key=, the signature toolreplay sign wrote must match the chain; a re-sealed file is refused."""
    from toolreplay import signing

    path = record(tmp_path)
    private, public = signing.generate_keypair()
    (tmp_path / "k").write_bytes(private)
    (tmp_path / "k.pub").write_bytes(public)
    result = CliRunner().invoke(
        cli, ["sign", str(path), "--key", str(tmp_path / "k")], catch_exceptions=False
    )
    assert result.exit_code == 0
    assert Snapshot.from_file(path, key=tmp_path / "k.pub").head is not None
    # a forger re-seals a shorter recording: the chain is intact, the signature is not its own
    forged = tmp_path / "forged.sealed.jsonl"
    first = path.read_text().splitlines(keepends=True)[0]
    forged.write_text(first)
    with pytest.raises(SealError, match="the signature does not anchor this file: signed head "):
        Snapshot.from_file(forged, key=tmp_path / "k.pub", signature=str(path) + ".sig")


def test_messages_stay_one_line_with_hostile_names(tmp_path: Path) -> None:
    """A tool name, value or recording path with line breaks cannot split an error into several lines."""
    path = tmp_path / "a\nb.sealed.jsonl"

    def tool(text: str) -> dict[str, Any]:
        return {"echo": text}

    with Recorder(path, seal=True) as recorder:
        live = ToolRegistry(recorder=recorder)
        live.register(tool, name="evil\nname")
        live.call("evil\nname", text="x\ny")
    tools = ToolRegistry(reexecute=path)
    tools.register(tool, name="evil\nname")
    with pytest.raises(ReplayDivergenceError) as caught:
        tools.call("evil\nname", text="x\nz")
    assert "\n" not in str(caught.value)
    assert "'evil\\nname'" in str(caught.value)
    with pytest.raises(ReplayDivergenceError) as stopped:
        ToolRegistry(reexecute=path).finish()
    assert "\n" not in str(stopped.value)


def test_recorded_state_without_a_state_function_is_audit_incomplete_unmarked(tmp_path: Path) -> None:
    """A tool registered without mutates=True whose recording has post-state: a re-execution
    without state= cannot pass silently (the write_config example of 'outputs are not effects')."""
    sandbox = Sandbox(tmp_path / "rec")
    path = str(tmp_path / "rec.sealed.jsonl")
    with Recorder(path, seal=True) as recorder:
        tools = ToolRegistry(recorder=recorder, state=sandbox.state)
        tools.register(sandbox.write_config, version="1.0")
        tools.call("write_config", name="app.cfg", text="port=80\n")
    replay = ToolRegistry(reexecute=path)
    replay.register(Sandbox(tmp_path / "replay").write_config, version="1.0")
    with pytest.raises(AuditIncompleteError, match="but the run does not record its post-call state"):
        replay.call("write_config", name="app.cfg", text="port=80\n")


def test_a_signature_without_a_key_is_refused_not_ignored(tmp_path: Path) -> None:
    """signature= without key= would check nothing: refused, as verify refuses --signature without --key."""
    path = record(tmp_path)
    with pytest.raises(ValueError, match="signature needs key"):
        Snapshot.from_file(path, signature=str(path) + ".sig")
    with pytest.raises(ValueError, match="anchor a sealed transcript"):
        Snapshot.from_file(record(tmp_path / "plain", sealed=False), signature="x.sig")
