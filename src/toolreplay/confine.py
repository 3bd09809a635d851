"""Running a project's code beside the process that judges it, without handing that process over.

A configuration's ``tools_source`` is the project's code, and in CI the pull request's. It runs in
a child (:mod:`toolreplay.contracts.runner`), and what the child could reach beyond its answer is
closed here, on both sides (docs/spec.md §7.1):

- the judge (:func:`guarded`): made non-dumpable, so a process of the same user without
  ``CAP_SYS_PTRACE`` cannot read its ``/proc/PID/environ`` or memory; made the subreaper of what
  the child starts, so a process that double-forks and calls ``setsid`` comes back to it and is
  killed when the child's time is up; and the step's files (``GITHUB_ENV``, ``GITHUB_OUTPUT`` ...)
  are put back as they were if the child wrote to them;
- the child (:func:`confine`, before any project code is imported): in a user, mount and PID
  namespace of its own where the kernel allows one, the project's code is process 1 of that
  namespace (when it ends, everything it started ends), holds no capability over the judge (so
  even as root it cannot read the judge), and sees the judge's import roots and the step's files
  read-only (so a written ``site-packages`` changes nothing the judge or a later step imports).

What remains (same user, same disk) is documented in the spec: without namespaces the child can
still write files the user can write; the judge imports all it needs before the child starts
and starts no interpreter after it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from collections.abc import Iterator, Sequence

#: the step's files a GitHub Actions step speaks through: a child writing there would speak for it
STEP_FILES = ("GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_PATH", "GITHUB_STATE", "GITHUB_STEP_SUMMARY")

_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36
_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
#: how long the judge keeps killing what the child left behind (a process that forks as fast as it
#: is killed is given up on after this, and named in the spec as what remains)
_SWEEP_SECONDS = 5.0


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, value: int) -> bool:
    return bool(_libc().prctl(option, value, 0, 0, 0) == 0)


def judge_roots(paths: Sequence[str]) -> list[str]:
    """The folders the judge imports from (its ``sys.path``), and the folders of the step's files:
    what the child sees read-only."""
    roots = {os.path.realpath(p) for p in paths if p and os.path.isdir(p)}
    return sorted(roots | _step_folders())


def _step_folders() -> set[str]:
    """The folders of the step's files (STEP_FILES) the environment names and that exist."""
    folders = set()
    for name in STEP_FILES:
        value = os.environ.get(name)
        if value and os.path.isfile(value):
            folders.add(os.path.realpath(os.path.dirname(value)))
    return folders


@contextlib.contextmanager
def guarded() -> Iterator[None]:
    """The judge's side, around one child's run: see the module's docstring."""
    if sys.platform != "linux":  # pragma: no cover
        yield
        return
    _prctl(_PR_SET_DUMPABLE, 0)  # stays so: a process the sweep missed must still find it closed
    before = _children()
    steps = _step_files()
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    try:
        yield
    finally:
        _sweep(before)
        _prctl(_PR_SET_CHILD_SUBREAPER, 0)
        _sweep(before)  # any reparented between the sweep and the switch
        _restore(steps)


def _children() -> set[int]:
    """The processes whose parent is this one."""
    me = os.getpid()
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _parent(int(entry)) == me:
            found.add(int(entry))
    return found


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read()
    except OSError:
        return None
    # the name in parentheses may hold anything: the fields after its last ")" are fixed
    fields = text[text.rfind(b")") + 2 :].split()
    return int(fields[1]) if len(fields) > 1 else None


def _sweep(before: set[int]) -> None:
    """Kill and reap every child this process gained since ``before`` (what the tools source left
    behind and was handed to this subreaper), until none is left."""
    deadline = time.monotonic() + _SWEEP_SECONDS
    while time.monotonic() < deadline:
        strays = _children() - before
        if not strays:
            return
        for pid in strays:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        for pid in strays:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, 0)


def _step_files() -> dict[str, bytes]:
    """The step's files as they are (a child that writes to them is undone)."""
    found = {}
    for name in STEP_FILES:
        path = os.environ.get(name)
        if path:
            with contextlib.suppress(OSError), open(path, "rb") as file:
                found[path] = file.read()
    return found


def _restore(files: dict[str, bytes]) -> None:
    for path, content in files.items():
        with contextlib.suppress(OSError):
            with open(path, "rb") as file:
                if file.read() == content:
                    continue
            with open(path, "wb") as file:
                file.write(content)


def confine(readonly: Sequence[str]) -> int | None:
    """The child's side, before any project code is imported: enter namespaces of its own and fork.

    Returns None in the process that goes on to run the project's code (process 1 of the new PID
    namespace, or this one where the kernel gives no namespace); in the process that stays outside,
    waits for it and returns the exit status to leave with.
    """
    if sys.platform != "linux" or os.environ.get("TOOLREPLAY_NO_NAMESPACES") or not _unshare():
        return None
    _read_only(readonly)
    pid = os.fork()
    if pid == 0:
        return None
    # the outside process only waits: ending it ends process 1 too (the judge's sweep)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


def _unshare() -> bool:
    """A user, mount and PID namespace for this process's children, mapped to the same user; False
    where the kernel refuses one (an unprivileged namespace switched off)."""
    uid, gid = os.getuid(), os.getgid()
    if _libc().unshare(_CLONE_NEWUSER | _CLONE_NEWNS | _CLONE_NEWPID) != 0:
        return False
    try:
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w", encoding="ascii") as file:
                file.write(text)
    except OSError:
        return True  # unmapped: still no capability over the judge
    return True


def _read_only(roots: Sequence[str]) -> None:
    """Make ``roots`` read-only in this mount namespace (and nothing outside it)."""
    libc = _libc()
    if libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        return
    for root in roots:
        path = root.encode()
        try:
            kept = os.statvfs(root).f_flag & (_MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
        except OSError:
            continue
        if libc.mount(path, path, None, _MS_BIND | _MS_REC, None) == 0:
            libc.mount(b"none", path, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | kept, None)
