"""The tools as they are now, from the source ``fingerprint`` reads: a JSON tool-definitions
file, a Python ``module:object``, or an MCP server's command line."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from toolreplay.analyses.replay import DEFAULT_MUTATORS
from toolreplay.contracts.definitions import import_definitions, read_definitions
from toolreplay.contracts.lock import ToolLock

_PYTHON_SOURCE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


def source_lock(
    source: str | Sequence[str],
    *,
    root: Path,
    mutators: frozenset[str] = DEFAULT_MUTATORS,
    timeout: float = 30.0,
) -> tuple[ToolLock, tuple[str, ...]]:
    """(the lock of ``source``, warnings). Paths are relative to ``root`` (the config's folder),
    and so is the import path of a module; a sequence is an MCP server's command line."""
    if not isinstance(source, str):
        from toolreplay.contracts.mcp import describe, mcp_definitions

        command = tuple(source)
        imported = import_definitions(mcp_definitions(command, timeout=timeout), path=describe(command))
        return ToolLock.of(imported.contracts), imported.warnings
    path = root / source
    if path.exists() or not _PYTHON_SOURCE.fullmatch(source):
        imported = import_definitions(
            read_definitions(str(path)), mutators=mutators, path=os.path.relpath(path)
        )
        return ToolLock.of(imported.contracts), imported.warnings
    from toolreplay.contracts.python import load_object, python_lock

    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return python_lock(load_object(source), mutators=mutators, spec=source), ()
