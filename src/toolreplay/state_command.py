"""State commands as the configuration and ``record --state-command`` give them (docs/spec.md §8),
light enough for the configuration's start-up.

What running one means (the post-call state it gives, its time budget) is
:mod:`toolreplay.library.post_state`.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

#: Seconds a state command may take before it is stopped (with everything it started).
DEFAULT_TIMEOUT = 10.0
#: The environment variables that tell a state command which call it follows.
TOOL_VARIABLE = "TOOLREPLAY_TOOL"
ARGS_VARIABLE = "TOOLREPLAY_ARGS"
#: A tool name as MCP spells one: ``TOOL=CMD`` names a tool only when TOOL looks like this.
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]+")


@dataclass(frozen=True, slots=True, kw_only=True)
class Command:
    """One state command: ``text`` as given (the state's key for text output), split into
    ``argv`` as a POSIX shell splits words (no shell runs it); ``tool`` None: after every call
    that changes state, else after every call of that tool."""

    text: str
    argv: tuple[str, ...]
    tool: str | None = None


def parse_state_command(value: str) -> Command:
    """``CMD`` or ``TOOL=CMD``; ValueError saying why it cannot be run."""
    tool: str | None = None
    text = value
    name, sep, rest = value.partition("=")
    if sep and _TOOL_NAME.fullmatch(name):
        tool, text = name, rest
    try:
        argv = tuple(shlex.split(text))
    except ValueError as err:  # an unclosed quote, a trailing backslash
        raise ValueError(f"cannot be split into words: {str(err).lower()}") from None
    if not argv:
        raise ValueError("names no command" + (f" for tool {tool!r}" if tool else ""))
    if "\0" in text:  # no command line can hold one: the operating system would refuse to start it
        raise ValueError("holds a NUL character, which no command's words can hold")
    return Command(text=text, argv=argv, tool=tool)
