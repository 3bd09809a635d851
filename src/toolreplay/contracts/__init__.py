"""Tool contracts: fingerprints, JSON tool definitions, and the tool lock (docs/spec.md §1.5, §3.5)."""

from __future__ import annotations

from toolreplay.contracts.fingerprint import fingerprint_of, python_signature, tool_fingerprint
from toolreplay.contracts.lock import (
    LOCK_VERSION,
    ToolContract,
    ToolLock,
    dump_lock,
    load_lock,
    make_contract,
    parse_lock,
    save_lock,
)

__all__ = [
    "LOCK_VERSION",
    "ToolContract",
    "ToolLock",
    "dump_lock",
    "fingerprint_of",
    "load_lock",
    "make_contract",
    "parse_lock",
    "python_signature",
    "save_lock",
    "tool_fingerprint",
]
