"""toolreplay: audit what an AI agent did with its tools."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from toolreplay.canonical import canonical
from toolreplay.contracts import ToolContract, ToolLock, load_lock, save_lock, tool_fingerprint
from toolreplay.errors import DriftError, InputError, SealError, ToolreplayError
from toolreplay.library import (
    AuditIncompleteError,
    AuditIncompleteWarning,
    ProbeResult,
    Recorder,
    ReplayDivergenceError,
    Snapshot,
    SnapshotMissError,
    ToolDriftError,
    ToolRegistry,
    probe_determinism,
)

try:
    __version__ = version("toolreplay")
except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
    __version__ = "0.0.0"

__all__ = [
    "AuditIncompleteError",
    "AuditIncompleteWarning",
    "DriftError",
    "InputError",
    "ProbeResult",
    "Recorder",
    "ReplayDivergenceError",
    "SealError",
    "Snapshot",
    "SnapshotMissError",
    "ToolContract",
    "ToolDriftError",
    "ToolLock",
    "ToolRegistry",
    "ToolreplayError",
    "__version__",
    "canonical",
    "load_lock",
    "probe_determinism",
    "save_lock",
    "tool_fingerprint",
]
