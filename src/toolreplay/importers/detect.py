"""``--from auto``: tell an input's format from the first item that shows it.

Items are read (and kept) until one carries a mark only one format has:

* ``otel``: an object with ``resourceSpans``;
* ``inspect``: an Inspect AI log, an object whose ``eval`` object names its ``task`` (a zip
  archive, an ``.eval`` log, is told apart before items are read);
* ``swe-agent``: an object with ``trajectory`` or ``history``;
* ``tau2``: an object with a ``simulations`` array (tau2-bench results);
* ``openai-responses``: an item of type ``function_call``, ``function_call_output`` or ``mcp_call``;
* ``anthropic``: a content block of a tool-use or tool-result type;
* ``openai-chat``: a message with ``tool_calls`` or ``function_call``, or of role ``tool`` or ``function``.

An input with no such mark (no tool call at all) cannot be told apart and is refused.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any

from toolreplay.errors import InputError
from toolreplay.importers.anthropic import CALL_BLOCKS, is_result_block
from toolreplay.importers.base import Item, string_member
from toolreplay.importers.inspect_ai import is_log
from toolreplay.importers.openai_responses import ITEM_TYPES


def detect(items: Iterable[Item]) -> tuple[str, Iterator[Item]]:
    """The detected format and the same items, none lost (those read to decide are replayed)."""
    iterator = iter(items)
    seen: list[Item] = []
    for item in iterator:
        seen.append(item)
        found = sniff(item.value)
        if found is not None:
            return found, itertools.chain(seen, iterator)
    raise InputError("cannot tell the format: no tool call or result found; pass --from FORMAT")


def sniff(value: Any) -> str | None:
    """The format one top-level item shows, or None when it shows none."""
    found = _document_format(value) if isinstance(value, dict) else None
    if found is not None:
        return found
    for entry in _entries(value):
        found = _sniff_entry(entry)
        if found is not None:
            return found
    return None


def _document_format(value: dict[str, Any]) -> str | None:
    """The format a whole document shows by its top-level members."""
    if "resourceSpans" in value:
        return "otel"
    if is_log(value):
        return "inspect"
    if "trajectory" in value or "history" in value:
        return "swe-agent"
    if isinstance(value.get("simulations"), list):
        return "tau2"
    return None


def _entries(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    if not isinstance(value, dict):
        return []
    if string_member(value, "type") in ITEM_TYPES:
        return [value]
    return _listed_members(value) or [value]


def _listed_members(value: dict[str, Any]) -> list[Any]:
    """The items of the lists a document keeps its messages or items in, one after the other."""
    out: list[Any] = []
    for key in ("messages", "traj", "input", "output"):
        member = value.get(key)
        if isinstance(member, list):
            out += member
    return out


def _sniff_entry(entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return None
    if string_member(entry, "type") in ITEM_TYPES:
        return "openai-responses"
    if _chat_entry(entry):
        return "openai-chat"
    return "anthropic" if _anthropic_entry(entry) else None


def _anthropic_entry(entry: dict[str, Any]) -> bool:
    """Whether a message's content holds an Anthropic tool call or tool result."""
    content = entry.get("content")
    return isinstance(content, list) and any(_tool_block(block) for block in content)


def _chat_entry(entry: dict[str, Any]) -> bool:
    """Whether a message is a Chat Completions tool call or tool answer."""
    return (
        "tool_calls" in entry
        or "function_call" in entry
        or string_member(entry, "role") in ("tool", "function")
    )


def _tool_block(block: Any) -> bool:
    """Whether a content block is an Anthropic tool call or tool result."""
    if not isinstance(block, dict):
        return False
    kind = string_member(block, "type")
    return kind in CALL_BLOCKS or is_result_block(kind)
