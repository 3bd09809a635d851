"""Python interpreters on this machine, by version, for the Action's tests.

The Action builds toolreplay's venv with whatever interpreter it is given; the tests need
real ones of different versions (two supported ones, and one older than requires-python).
Candidates: ``python3.X`` on PATH and pyenv's versions (``$PYENV_ROOT``, else ``~/.pyenv``);
each is asked for its version, so a pyenv shim that is not selected simply drops out.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

_ASK = "import sys; print('%d.%d.%d' % sys.version_info[:3]); print(sys.executable)"


def _ask(executable: str) -> tuple[tuple[int, int, int], str] | None:
    """(version, sys.executable) of an interpreter, or None when it does not run."""
    try:
        proc = subprocess.run(
            [executable, "-c", _ASK], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError:
        return None
    if proc.returncode != 0:
        return None
    version, real = proc.stdout.split("\n")[:2]
    major, minor, micro = (int(part) for part in version.split("."))
    return (major, minor, micro), real


@functools.cache
def interpreters() -> dict[tuple[int, int], tuple[str, str]]:
    """(major, minor) -> (the interpreter's real path, its full version), one per minor version."""
    candidates: list[str] = []
    for minor in range(6, 20):
        found = shutil.which(f"python3.{minor}")
        if found:
            candidates.append(found)
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    candidates += sorted(str(p) for p in root.glob("versions/*/bin/python3"))
    found_versions: dict[tuple[int, int], tuple[str, str]] = {}
    for candidate in candidates:
        answer = _ask(candidate)
        if answer is None or answer[0][:2] in found_versions:
            continue
        version, real = answer
        found_versions[version[:2]] = (real, ".".join(str(part) for part in version))
    return found_versions


def supported(count: int) -> list[tuple[str, str]]:
    """``count`` interpreters of distinct versions >= 3.11, newest first (fewer if there are not)."""
    found = interpreters()
    return [found[key] for key in sorted(found, reverse=True) if key >= (3, 11)][:count]


def too_old() -> tuple[str, str] | None:
    """The newest Python 3 interpreter older than 3.11, if there is one."""
    found = interpreters()
    old = [key for key in found if key[0] == 3 and key < (3, 11)]
    return found[max(old)] if old else None
