"""Output files written whole: a temp file beside the target, renamed into place on success."""

from __future__ import annotations

import contextlib
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


def place(tmp: str, target: str, *, replace: bool) -> None:
    """Rename ``tmp`` to ``target``; without ``replace``, never over a file that exists.

    ``FileExistsError`` when ``target`` exists and ``replace`` is false: a hard link is
    made first, which fails when the name is taken, so no file that appears meanwhile is
    lost. Where hard links are not supported, the name is checked, then renamed.
    """
    if replace:
        os.replace(tmp, target)
        return
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise
    except OSError:
        if os.path.lexists(target):
            raise FileExistsError(17, "File exists", target) from None
        os.replace(tmp, target)
        return
    with contextlib.suppress(OSError):
        os.unlink(tmp)
