"""Output files written whole: a temp file beside the target, renamed into place on success."""

from __future__ import annotations

import os
import tempfile


def new_file_mode() -> int:
    """The mode a plain ``open(path, "w")`` gives a new file: 0o666 less the umask.

    ``mkstemp`` creates its file 0600, which would make every output private.
    """
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def temp_beside(directory: str, *, mode: int | None = None) -> tuple[int, str]:
    """Create a temp file in ``directory`` with ``mode`` (default: :func:`new_file_mode`).

    Returns (fd, path) like ``mkstemp``; OS errors propagate for the caller to name.
    """
    fd, path = tempfile.mkstemp(dir=directory, prefix=".toolreplay-", suffix=".tmp")
    if hasattr(os, "fchmod"):
        os.fchmod(fd, new_file_mode() if mode is None else mode)
    return fd, path
