"""The files toolreplay knows by name (the sealed suffix, each kind's name patterns, the
configuration's names, a baseline glob's one form), and output files written whole: a temp
file beside the target, renamed into place on success.

Light (the standard library only): the hooks, the CLI and the library take these names from here.
"""

from __future__ import annotations

import contextlib
import os
import tempfile

#: a sealed transcript's name ends so (a baseline, a cassette)
SEALED_SUFFIX = ".sealed.jsonl"
#: the session file of recording ``OUT`` (what ``serve`` answers besides the calls) is ``OUT`` + this
SESSION_SUFFIX = ".mcp"
#: kinds whose files are JSON Lines, one instance a line
LINE_KINDS = frozenset({"transcript", "sealed"})
#: how a kind is told from a file name, first match wins
NAME_PATTERNS: tuple[tuple[str, str], ...] = (
    (f"*{SEALED_SUFFIX}.sig", "signature"),
    (f"*{SEALED_SUFFIX}", "sealed"),
    ("*.jsonl", "transcript"),
    ("scope.json", "scope"),
    ("*.scope.json", "scope"),
    ("*-scope.json", "scope"),
    ("*.report.json", "report"),
    ("toolreplay.toml", "config"),
    ("pyproject.toml", "config"),  # its [tool.toolreplay] table
    ("tools.lock.json", "tool-lock"),
    ("*.tools.lock.json", "tool-lock"),
)
#: a Markdown file inside a folder of this name is a drift note (docs/spec.md §1.6, docs/hooks.md)
NOTES_FOLDER = "drift-notes"
#: the configuration's file names, in the order one is looked for in a folder (docs/spec.md §7)
CONFIG_NAMES = ("toolreplay.toml", "pyproject.toml")


def session_path(recording: str) -> str:
    """Where the session file of ``recording`` is (docs/spec.md §8)."""
    return recording + SESSION_SUFFIX


def normal_glob(glob: str) -> str:
    """A baseline glob as every matcher takes it: ``.`` parts and duplicate or trailing slashes dropped.

    ValueError (saying why) for a glob the drift-note guard could not hold to the same files
    as ``check``: an absolute one, one that climbs out of its configuration's folder with
    ``..`` (the guard matches paths inside the repository, from the configuration's folder),
    and one that names the folder itself.
    """
    if os.path.isabs(glob):
        raise ValueError("must be relative to its folder")
    parts = [part for part in glob.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise ValueError(
            "climbs out of its configuration's folder ('..'); a baseline must lie inside it"
            " (move the configuration up instead)"
        )
    if not parts:
        raise ValueError("names the config's folder, not files")
    return "/".join(parts)


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
