"""toolreplay: audit what an AI agent did with its tools."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolreplay.lazy import module_attribute

if TYPE_CHECKING:
    from toolreplay.canonical import canonical
    from toolreplay.contracts import ToolContract, ToolLock, load_lock, save_lock, tool_fingerprint
    from toolreplay.errors import DriftError, InputError, SealError, ToolreplayError
    from toolreplay.library import (
        AuditIncompleteError,
        AuditIncompleteWarning,
        ContractTextDriftError,
        ProbeResult,
        Recorder,
        ReplayDivergenceError,
        Snapshot,
        SnapshotMissError,
        StateCommand,
        StateCommandWarning,
        ToolDriftError,
        ToolRegistry,
        probe_determinism,
    )

    __version__: str

# Imported on first use: the pytest plugin (toolreplay.pytest_plugin) loads this package in
# every pytest session of every project that installs toolreplay, most of which never use it.
_EXPORTS = {
    "__version__": "toolreplay._version",
    "canonical": "toolreplay.canonical",
    "ToolContract": "toolreplay.contracts",
    "ToolLock": "toolreplay.contracts",
    "load_lock": "toolreplay.contracts",
    "save_lock": "toolreplay.contracts",
    "tool_fingerprint": "toolreplay.contracts",
    "DriftError": "toolreplay.errors",
    "InputError": "toolreplay.errors",
    "SealError": "toolreplay.errors",
    "ToolreplayError": "toolreplay.errors",
    "AuditIncompleteError": "toolreplay.library",
    "AuditIncompleteWarning": "toolreplay.library",
    "ContractTextDriftError": "toolreplay.library",
    "ReplayDivergenceError": "toolreplay.library",
    "ProbeResult": "toolreplay.library",
    "Recorder": "toolreplay.library",
    "Snapshot": "toolreplay.library",
    "SnapshotMissError": "toolreplay.library",
    "StateCommand": "toolreplay.library",
    "StateCommandWarning": "toolreplay.library",
    "ToolDriftError": "toolreplay.library",
    "ToolRegistry": "toolreplay.library",
    "probe_determinism": "toolreplay.library",
}


_SPECS = {name: f"{module}:{name}" for name, module in _EXPORTS.items()}


def __getattr__(name: str) -> Any:
    return module_attribute(globals(), _SPECS, name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = [
    "AuditIncompleteError",
    "AuditIncompleteWarning",
    "ContractTextDriftError",
    "DriftError",
    "InputError",
    "ProbeResult",
    "Recorder",
    "ReplayDivergenceError",
    "SealError",
    "Snapshot",
    "SnapshotMissError",
    "StateCommand",
    "StateCommandWarning",
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
