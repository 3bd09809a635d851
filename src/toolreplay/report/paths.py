"""Paths as GitHub wants them: relative to the repository root, with forward slashes."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import PurePath


def repo_root(environ: Mapping[str, str] | None = None) -> str:
    """The checkout the Action runs in (``GITHUB_WORKSPACE``), else the working directory."""
    env = os.environ if environ is None else environ
    return env.get("GITHUB_WORKSPACE") or os.getcwd()


def _under(path: str, root: str | None) -> str | None:
    """An absolute ``path`` relative to ``root`` (default: the repository's); None outside it."""
    base = os.path.abspath(root if root is not None else repo_root())
    try:
        if os.path.commonpath([base, os.path.abspath(path)]) != base:
            return None
    except ValueError:  # another drive on Windows
        return None
    return os.path.relpath(path, base)


def repo_relative(path: str, root: str | None = None) -> str | None:
    """``path`` relative to ``root`` in POSIX form, or None when it lies outside ``root``.

    A relative path is taken as already relative to the root (the Action runs there).
    """
    rel = os.path.normpath(path) if not os.path.isabs(path) else _under(path, root)
    if rel is None:
        return None
    posix = PurePath(rel).as_posix()
    if posix == ".." or posix.startswith("../"):
        return None
    return posix
