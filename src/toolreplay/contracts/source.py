"""The tools as they are now, from the source ``fingerprint`` reads: a JSON tool-definitions
file, a Python ``module:object``, or an MCP server's command line.

A file is data and is read here. A module and a server are the project's code: they run in a
child process (:mod:`toolreplay.contracts.runner`), and what comes back is checked as
untrusted data (a lock as ``load_lock`` checks one, a ``tools/list`` as a definitions file).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from toolreplay.config import DEFAULT_MUTATORS
from toolreplay.contracts.definitions import import_definitions, read_definitions
from toolreplay.contracts.lock import ToolLock, parse_lock
from toolreplay.contracts.mcp import describe, listed_definitions
from toolreplay.contracts.runner import DEFAULT_TIMEOUT, SourceRunError, run_mcp, run_python
from toolreplay.errors import InputError

_PYTHON_SOURCE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
_T = TypeVar("_T")


def _server_lock(
    argv: Sequence[str],
    *,
    version: str | None,
    timeout: float,
    watch: Path | None,
    caller_env: bool,
    cwd: Path | None = None,
) -> tuple[ToolLock, tuple[str, ...]]:
    """The lock of an MCP server's tools, as a child process lists them (pinned to ``version``, else
    to the server's own)."""
    label = describe(argv)
    answer = run_mcp(argv, label=label, timeout=timeout, watch=watch, caller_env=caller_env, cwd=cwd)
    tools = answer.get("tools") if isinstance(answer, dict) else None
    pinned = _server_version(answer, label) if version is None else version
    imported = _checked(
        lambda: import_definitions(listed_definitions(tools, path=label), version=pinned, path=label)
    )
    return ToolLock.of(imported.contracts), imported.warnings


def is_python_source(source: str, *, root: Path) -> bool:
    """Whether ``source`` names a Python object (``module:object``) rather than a file."""
    return not (root / source).exists() and bool(_PYTHON_SOURCE.fullmatch(source))


def source_lock(
    source: str | Sequence[str],
    *,
    root: Path,
    mutators: frozenset[str] = DEFAULT_MUTATORS,
    version: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    watch: Path | None = None,
    caller_env: bool = False,
) -> tuple[ToolLock, tuple[str, ...]]:
    """(the lock of ``source``, warnings). Paths are relative to ``root`` (the config's folder),
    and so is the import path of a module; a sequence is an MCP server's command line.

    ``version`` None: the source's own, which for an MCP server is its ``serverInfo.version``
    (as ``record`` and ``probe`` pin it) and for the others none (""). ``caller_env``: the code
    runs with the caller's whole environment (a source the user named, as ``record`` and
    ``probe`` start a server), not without credentials (a configuration's ``tools_source``).
    With ``watch``, a child that changes anything under that folder fails
    (:class:`~toolreplay.contracts.runner.SourceRunError`).
    """
    if not isinstance(source, str):
        # a configuration's server starts in the configuration's folder (over a pull request's range,
        # the base commit's copy of it); one the user named, where the user is
        cwd = None if caller_env else root
        return _server_lock(
            source, version=version, timeout=timeout, watch=watch, caller_env=caller_env, cwd=cwd
        )
    if not is_python_source(source, root=root):
        return _definitions_lock(root / source, version=version or "", mutators=mutators)
    answer = run_python(
        source,
        root=root,
        version=version or "",
        mutators=mutators,
        timeout=timeout,
        watch=watch,
        caller_env=caller_env,
    )
    return _python_lock(answer, source), ()


def _definitions_lock(
    path: Path, *, version: str, mutators: frozenset[str]
) -> tuple[ToolLock, tuple[str, ...]]:
    """(the lock, warnings) of a file of tool definitions."""
    imported = import_definitions(
        read_definitions(str(path)), version=version, mutators=mutators, path=os.path.relpath(path)
    )
    return ToolLock.of(imported.contracts), imported.warnings


def _python_lock(answer: object, source: str) -> ToolLock:
    """The lock a Python source's child answered with, checked."""
    lock = answer.get("lock") if isinstance(answer, dict) else None
    return _checked(lambda: parse_lock(lock, path=source))


def _server_version(answer: object, label: str) -> str:
    """The server's ``serverInfo.version`` the child read (an answer without one is refused)."""
    version = answer.get("version") if isinstance(answer, dict) else None
    if not isinstance(version, str):
        raise SourceRunError('its answer is not valid: "version" must be a string', path=label)
    return version


def _checked(read: Callable[[], _T]) -> _T:
    """What ``read`` makes of the child's answer; an answer it refuses is the child's failure."""
    try:
        return read()
    except SourceRunError:
        raise
    except InputError as err:
        raise SourceRunError(
            f"its answer is not valid: {err.problem}", path=err.path, pointer=err.pointer
        ) from err
