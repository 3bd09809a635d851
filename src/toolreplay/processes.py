"""What toolreplay says of a child process it ran under a time budget (a configuration's tools
source, a state command): its whole process group ended, its exit status and its last words."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from typing import IO

from toolreplay.escape import one_line


def status_of(code: int) -> str:
    """A child's exit status (``Popen.returncode``) as a clause."""
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"it was killed by {signal.Signals(-code).name}"
        return f"it was killed by signal {-code}"
    return f"it exited with status {code}"


def last_words(err: IO[bytes]) -> str:
    """The last line the child wrote to stderr (a file), as a clause."""
    err.seek(0, os.SEEK_END)
    err.seek(max(0, err.tell() - 4000))
    lines = [line.strip() for line in err.read().decode("utf-8", "replace").splitlines() if line.strip()]
    return f"; its last words: {one_line(lines[-1])}" if lines else ""


def end_group(process: subprocess.Popen[bytes]) -> None:
    """Kill the child's process group (what it started too; it was started in a session of its
    own), and reap the child."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
