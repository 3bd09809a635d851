"""What agents import: a registry that fingerprints and records, snapshot replay, the probe."""

from __future__ import annotations

from toolreplay.analyses.difference import ABSENT
from toolreplay.library.determinism_probe import ProbeResult, probe_determinism
from toolreplay.library.failures import (
    AuditIncompleteError,
    AuditIncompleteWarning,
    ContractTextDriftError,
    ReplayDivergenceError,
    SnapshotMissError,
    StateCommandWarning,
    ToolDriftError,
)
from toolreplay.library.post_state import StateCommand
from toolreplay.library.recorder import Recorder
from toolreplay.library.registry import RegisteredTool, StateFn, ToolRegistry
from toolreplay.library.snapshot import Snapshot

__all__ = [
    "ABSENT",
    "AuditIncompleteError",
    "AuditIncompleteWarning",
    "ContractTextDriftError",
    "ProbeResult",
    "Recorder",
    "RegisteredTool",
    "ReplayDivergenceError",
    "Snapshot",
    "SnapshotMissError",
    "StateCommand",
    "StateCommandWarning",
    "StateFn",
    "ToolDriftError",
    "ToolRegistry",
    "probe_determinism",
]
