"""The exceptions toolreplay raises. Only the CLI turns them into exit codes."""

from __future__ import annotations


class ToolreplayError(Exception):
    """Base of every error toolreplay raises on purpose."""


class InputError(ToolreplayError):
    """A file or option the user gave us is unusable (exit 2).

    Renders as ``FILE:LINE: problem`` (``FILE: problem`` when no line applies),
    with `` at POINTER`` when a JSON pointer locates the problem inside the record.
    """

    def __init__(
        self,
        problem: str,
        *,
        path: str | None = None,
        line: int | None = None,
        pointer: str | None = None,
    ) -> None:
        super().__init__(problem)
        self.problem = problem
        self.path = path
        self.line = line
        self.pointer = pointer

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path if self.line is None else f"{self.path}:{self.line}"
            where += ": "
        at = f" (at {self.pointer or '/'})" if self.pointer is not None else ""
        return f"{where}{self.problem}{at}"


class DriftError(ToolreplayError):
    """A tool's live contract differs from the one recorded."""


class SealError(InputError):
    """A sealed transcript whose seal does not hold, so nothing in it may be trusted.

    Either a link does not follow (``position`` is the index of the first broken link,
    ``reason`` says why) or the intact chain is not the one anchored (an expected head,
    a signature): then ``position`` is None.
    """

    def __init__(
        self, problem: str, *, path: str, line: int | None = None, position: int | None = None
    ) -> None:
        super().__init__(problem, path=path, line=line)
        self.position = position
