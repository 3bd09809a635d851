"""Running a project's own tool code (``module:object``, an MCP server's command line) in a child
process whose only output is data.

The code a ``tools_source`` names belongs to the project, and in CI to the pull request
being judged: it runs in a child (:mod:`toolreplay.contracts._source_worker`), never in the
process that judges. The child's answer is decoded with the strict decoder and checked by
the caller; a child that dies, runs past its time, answers something else, or changes a
file under ``watch`` fails with :class:`SourceRunError`, whatever it answered.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from stat import S_ISDIR
from typing import IO, Any

from toolreplay.canonical import decode
from toolreplay.confine import guarded, judge_roots
from toolreplay.errors import InputError
from toolreplay.escape import one_line, quote
from toolreplay.processes import end_group, last_words, status_of

#: Seconds the child may take, from its start to its answer.
DEFAULT_TIMEOUT = 30.0
#: what the child does not inherit: credentials, and the files through which a GitHub Actions
#: step sets outputs, environment and summary (a child writing there would speak for the step)
_WITHHELD = frozenset(
    {
        "TOOLREPLAY_TOKEN",
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "ACTIONS_RUNTIME_TOKEN",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
        "ACTIONS_ID_TOKEN_REQUEST_URL",
        "GITHUB_ENV",
        "GITHUB_OUTPUT",
        "GITHUB_PATH",
        "GITHUB_STATE",
        "GITHUB_STEP_SUMMARY",
    }
)
#: what a variable's name says it holds: a credential of some service (AWS_SECRET_ACCESS_KEY, NPM_TOKEN ...)
_SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "API_KEY", "PRIVATE_KEY", "AUTH")


def _withheld(name: str) -> bool:
    """Whether a configuration's tools_source runs without the variable ``name``."""
    upper = name.upper()
    return name in _WITHHELD or upper.startswith("ACTIONS_") or any(w in upper for w in _SECRET_WORDS)


#: the answer is one JSON document: a lock or a tools/list, no bigger than a lock file may be
_ANSWER_BYTES = 64 * 1024 * 1024
#: how many changed paths a message names
_SHOWN = 3


class SourceRunError(InputError):
    """The child that runs a tool source failed: it died, hung, answered garbage or wrote files.

    An :class:`InputError` (exit 2) for the commands the user runs on their own tools
    (``fingerprint``, ``fingerprint-diff``, ``diff``); ``check`` reports it as a
    ``tools-source-failed`` finding instead.
    """


def run_python(
    spec: str,
    *,
    root: Path,
    version: str,
    mutators: frozenset[str],
    timeout: float,
    watch: Path | None,
    caller_env: bool = False,
) -> Any:
    """The child's answer for the Python tool source ``spec``: ``{"lock": ...}``, decoded."""
    request = {"python": spec, "root": str(root), "version": version, "mutators": sorted(mutators)}
    return _run(request, label=spec, timeout=timeout, watch=watch, caller_env=caller_env, cwd=root)


def run_mcp(
    argv: Sequence[str],
    *,
    label: str,
    timeout: float,
    watch: Path | None,
    caller_env: bool = False,
    cwd: Path | None = None,
) -> Any:
    """The child's answer for the MCP server ``argv``: ``{"tools": [...], "version": V}``, decoded
    (``version``: the server's ``serverInfo.version``)."""
    if not argv:
        raise InputError("no MCP server command given")
    request = {"mcp": list(argv), "timeout": timeout}
    return _run(request, label=label, timeout=timeout, watch=watch, caller_env=caller_env, cwd=cwd)


def _run(
    request: dict[str, Any],
    *,
    label: str,
    timeout: float,
    watch: Path | None,
    caller_env: bool = False,
    cwd: Path | None = None,
) -> Any:
    before = snapshot(watch) if watch is not None else None
    request = {**request, "readonly": judge_roots(sys.path)}
    command = [sys.executable, "-P", "-B", "-m", "toolreplay.contracts._source_worker", json.dumps(request)]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, guarded():
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env=_child_env(caller_env),
            cwd=cwd,
            start_new_session=True,  # one group: the child and whatever it starts end together
        )
        code = _wait(process, timeout)
        wrote = _wrote(before, watch)
        answer = _answer(out)
        failure = _failure(code, answer, err, timeout)
    problems = [problem for problem in (failure, wrote) if problem is not None]
    if problems:
        raise SourceRunError("; ".join(problems), path=label)
    return answer


def _wait(process: subprocess.Popen[bytes], timeout: float) -> int | None:
    """The child's exit status; None when it did not finish in time. Its group is ended either way."""
    try:
        return process.wait(timeout)
    except subprocess.TimeoutExpired:
        return None
    finally:
        end_group(process)


def _failure(code: int | None, answer: Any, err: IO[bytes], timeout: float) -> str | None:
    """Why the child gave no answer: stopped, an error it reported, its exit status, or its answer's fault."""
    if code is None:
        return f"it did not finish within {timeout:g} s and was stopped"
    if code == 2 and _reported(answer):
        return _their_error(answer)
    if code != 0:
        return status_of(code) + last_words(err)
    if isinstance(answer, str):
        return answer
    return None


def _reported(answer: Any) -> bool:
    """Whether the answer is the child's own report of an error (its ``error`` and ``pointer``)."""
    return isinstance(answer, dict) and isinstance(answer.get("error"), str)


def _their_error(answer: dict[str, Any]) -> str:
    """The error the child reported, and where (its JSON pointer) when it says."""
    pointer = answer.get("pointer")
    at = f" (at {one_line(pointer) or '/'})" if isinstance(pointer, str) else ""
    return one_line(answer["error"]) + at


def _answer(out: IO[bytes]) -> Any:
    """The decoded answer, or a string saying why there is none."""
    out.seek(0)
    raw = out.read(_ANSWER_BYTES + 1)
    if not raw:
        return "it answered nothing"
    try:
        return decode(raw, max_bytes=_ANSWER_BYTES, what="answer")
    except InputError as err:
        return f"its answer is not JSON: {one_line(err.problem)}"


def _child_env(caller_env: bool) -> dict[str, str]:
    """The child's environment: the caller's whole one for a source the user named on the command
    line (``fingerprint``, as ``record`` and ``probe`` start a server), else without credentials
    and the step's files (a configuration's ``tools_source``, which in CI is the pull request's)."""
    env = {k: v for k, v in os.environ.items() if caller_env or not _withheld(k)}
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # importing the project's modules writes no __pycache__
    return env


Stat = tuple[int, int, int, int, int]


def work_tree(folder: Path) -> Path:
    """The work tree ``folder`` is in: the nearest folder from it up that holds ``.git``, else itself."""
    folder = folder.resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return folder


def snapshot(top: Path) -> dict[str, Stat]:
    """Every entry under ``top`` (not following links) with what a write changes: type and
    permissions, size, inode, modification and change time. The ctime cannot be set back,
    so a write that restores the mtime still shows. git's object store is left out: its files
    are named by their contents, so a new one changes nothing a ref does not also change."""
    found: dict[str, Stat] = {}
    for path in _entries(top):
        with contextlib.suppress(FileNotFoundError):
            st = os.lstat(path)
            found[os.path.relpath(path, top)] = (
                st.st_mode,
                st.st_size,
                st.st_ino,
                st.st_mtime_ns,
                st.st_ctime_ns,
            )
    return found


def _entries(top: Path) -> Iterator[str]:
    yield str(top)
    for folder, dirs, files in os.walk(top):
        if os.path.basename(folder) == ".git":
            dirs[:] = [d for d in dirs if d != "objects"]
        dirs.sort()
        for name in [*dirs, *sorted(files)]:
            yield os.path.join(folder, name)


def _changes(before: dict[str, Stat], after: dict[str, Stat]) -> list[str]:
    """The paths added, removed or changed; a folder that is there before and after is named by
    what changed inside it, not itself."""

    def folder(stat: Stat | None) -> bool:
        return stat is not None and S_ISDIR(stat[0])

    return sorted(
        p
        for p in before.keys() | after.keys()
        if before.get(p) != after.get(p) and not (folder(before.get(p)) and folder(after.get(p)))
    )


def _wrote(before: dict[str, Stat] | None, watch: Path | None) -> str | None:
    """What the child changed in the watched folder, if anything (nothing is watched without one)."""
    if before is None or watch is None:
        return None
    changed = _changes(before, snapshot(watch))
    if not changed:
        return None
    shown = ", ".join(quote(Path(p).as_posix()) for p in changed[:_SHOWN])
    more = len(changed) - _SHOWN
    return f"it changed the work tree: {shown}" + (f" and {more} more" if more > 0 else "")
