"""Write errors of outputs, named: a full disk, a quota, a file size limit or a closed pipe is
not a bug but one line naming the output (exit 2), like any other unusable file."""

from __future__ import annotations

import errno
from typing import IO

from toolreplay.errors import InputError

#: How messages name standard output.
STDOUT = "<stdout>"


def write_error(err: OSError, name: str) -> InputError:
    """The one-line error for an output ``name`` that could not be written."""
    if isinstance(err, BrokenPipeError):
        reason = "the reading end of the pipe was closed (output incomplete)"
    else:
        reason = err.strerror or str(err)
    return InputError(f"cannot write: {reason}", path=name)


def is_write_error(err: OSError) -> bool:
    """Is ``err`` what writing (never reading) fails with?"""
    return isinstance(err, BrokenPipeError) or err.errno in _WRITE_ERRNOS


_WRITE_ERRNOS = frozenset(
    code for code in (errno.ENOSPC, getattr(errno, "EDQUOT", None), errno.EFBIG, errno.EPIPE) if code
)


class NamedOutput:
    """A text stream whose write errors become :func:`write_error` naming ``name``."""

    def __init__(self, stream: IO[str], name: str) -> None:
        self._stream = stream
        self._name = name

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as err:
            raise write_error(err, self._name) from err

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as err:
            raise write_error(err, self._name) from err

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._stream.seek(offset, whence)

    def truncate(self, size: int | None = None) -> int:
        return self._stream.truncate(size)
