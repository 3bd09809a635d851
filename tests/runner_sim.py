"""How the GitHub Actions runner reads a step's output, for tests that check for injection.

It follows actions/runner (``ActionCommand.TryParseV2`` then the legacy ``TryParse``, as
``ActionCommandManager.TryProcessCommand`` calls them): the output is cut into lines at
``\\r`` and ``\\n``, leading whitespace is trimmed, ``::name props::data`` is a command when
``name`` is registered, and otherwise ``##[name props]data`` anywhere in the line is one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

REGISTERED = frozenset(
    {
        "add-mask", "add-matcher", "add-path", "debug", "echo", "endgroup", "error", "group",
        "notice", "remove-matcher", "save-state", "set-env", "set-output", "stop-commands", "warning",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Command:
    name: str
    properties: dict[str, str]
    data: str


def _unescape(text: str, pairs: list[tuple[str, str]]) -> str:
    for token, replacement in pairs:
        text = text.replace(replacement, token)
    return text


_DATA = [("\r", "%0D"), ("\n", "%0A"), ("%", "%25")]
_PROPERTY = [("\r", "%0D"), ("\n", "%0A"), (":", "%3A"), (",", "%2C"), ("%", "%25")]


def runner_lines(output: str) -> list[str]:
    """The lines the runner sees: split at \\r\\n, \\r and \\n."""
    return re.split("\r\n|\r|\n", output)


def parse_v2(line: str) -> Command | None:
    text = line.lstrip()
    if not text.startswith("::"):
        return None
    end = text.find("::", 2)
    if end < 0:
        return None
    info = text[2:end]
    name, _, props = info.partition(" ")
    if name.lower() not in REGISTERED:
        return None
    properties = {}
    for item in props.strip().split(","):
        key, sep, value = item.partition("=")
        if sep and key and value:
            properties[key] = _unescape(value, _PROPERTY)
    return Command(name.lower(), properties, _unescape(text[end + 2 :], _DATA))


def parse_legacy(line: str) -> Command | None:
    start = line.find("##[")
    if start < 0:
        return None
    close = line.find("]", start)
    if close < 0:
        return None
    name = line[start + 3 : close].partition(" ")[0]
    return Command(name.lower(), {}, line[close + 1 :]) if name.lower() in REGISTERED else None


def commands(output: str) -> list[Command]:
    """Every workflow command the runner would act on in ``output``."""
    found = []
    for line in runner_lines(output):
        command = parse_v2(line) or parse_legacy(line)
        if command is not None:
            found.append(command)
    return found
