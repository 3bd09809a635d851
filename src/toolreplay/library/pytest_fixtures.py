"""What the pytest plugin's fixtures do, loaded the first time a test asks for one.

:mod:`toolreplay.pytest_plugin` loads in every pytest session of every project that installs
toolreplay, so it imports only pytest and the standard library; the cassettes, snapshots and
the project's configuration are here, behind its one lazy import.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from toolreplay.analyses.volatile import Volatile
from toolreplay.config import Config, nearest_config
from toolreplay.errors import ToolreplayError
from toolreplay.library.cassette import CassetteRegistry
from toolreplay.library.failures import SnapshotMissError, ToolDriftError
from toolreplay.library.mcp_cassette import McpCassettes

__all__ = ["CassetteRegistry", "McpCassettes", "cassette", "is_drift", "mcp_cassettes", "project_config"]


def project_config(root: Path) -> Config | None:
    """The project's configuration: the nearest from ``root`` up (None: there is none)."""
    return nearest_config(cwd=root)


def cassette(path: Path, *, mode: str, why: str, label: str, root: Path) -> CassetteRegistry | str:
    """The registry bound to the cassette at ``path``, or why it cannot be (naming the cassette).

    The project's volatile rules apply: an argument they mask does not count for finding a call.
    """
    try:
        found = project_config(root)  # a configuration that cannot be read fails the test in one line too
        volatile = Volatile(found.volatile, budget=found.pattern_budget_seconds) if found is not None else ()
        return CassetteRegistry(path, mode=mode, why=why, label=label, volatile=volatile)
    except ToolreplayError as err:
        text = str(err)
        return text if str(path) in text else f"cassette {label}: {text}"


def mcp_cassettes(
    cassette_for: Callable[[str | None], tuple[str, str]],
    *,
    mode: str,
    why: str,
    fail: Callable[[str], NoReturn],
    root: Path,
) -> McpCassettes:
    """The MCP servers of one test, each bound to the cassette ``cassette_for`` names; a project
    configuration that cannot be read fails the test in one line (``fail``)."""
    try:
        config = project_config(root)
    except ToolreplayError as err:
        fail(f"toolreplay: {err}")
    return McpCassettes(cassette_for, mode=mode, why=why, fail=fail, config=config)


def is_drift(problem: BaseException) -> bool:
    """Whether ``problem`` is a miss or a drift (raised as it is), not a failure to report."""
    return isinstance(problem, SnapshotMissError | ToolDriftError)
