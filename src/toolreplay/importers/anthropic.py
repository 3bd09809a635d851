"""Anthropic Messages: ``tool_use`` content blocks paired with ``tool_result`` blocks.

A conversation is a list of ``{"role", "content"}`` messages; an episode is an array of
messages or an object holding them under ``messages`` (a request body). ``content`` is a
string (no blocks) or a list of blocks. Calls are ``tool_use`` blocks (and the
server-side ``server_tool_use`` and ``mcp_tool_use``) with ``id``, ``name`` and an object
``input``; results are ``tool_result`` blocks (and ``mcp_tool_result`` and every other
``*_tool_result`` block) naming the call by ``tool_use_id``, with optional ``content`` and
``is_error``. A result block does not name its tool, so it pairs by id alone, earliest
unanswered call first; ``is_error`` is kept in the response as recorded.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from toolreplay.importers.base import (
    ABSENT,
    Item,
    Location,
    Session,
    conversations,
    list_member,
    make_response,
    need_object,
    need_string,
    read_arguments,
    string_member,
)
from toolreplay.importers.pairing import Pairing
from toolreplay.transcript import type_name

CALL_BLOCKS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})


def is_result_block(kind: Any) -> bool:
    return isinstance(kind, str) and kind.endswith("tool_result")


def _entries(item: Item) -> Iterable[Item] | None:
    return list_member(item, "messages")


class Anthropic:
    """The ``anthropic`` importer."""

    name = "anthropic"

    def sessions(self, items: Iterable[Item]) -> Iterator[Session]:
        for number, messages in enumerate(conversations(items, _entries)):
            yield _conversation(messages, number)


def _conversation(messages: Iterable[Item], number: int) -> Session:
    pairing = Pairing()
    for item in messages:
        for block, at in _content_blocks(item):
            kind = string_member(block, "type")
            if kind in CALL_BLOCKS:
                pairing.call(
                    tool=need_string(block, "name", at, f'a "{kind}" block'),
                    call_id=need_string(block, "id", at, f'a "{kind}" block'),
                    arguments=read_arguments(block.get("input", ABSENT)),
                    location=at,
                )
            elif is_result_block(kind):
                _result(pairing, block, at, kind)
    return pairing.session(number)


def _content_blocks(item: Item) -> Iterator[tuple[dict[str, Any], Location]]:
    """A message's content blocks, each where it is (none when its content is text)."""
    message = need_object(item.value, item.location, "a message")
    content = message.get("content")
    if isinstance(content, str) or content is None:
        return
    where = item.location.at("content")
    if not isinstance(content, list):
        raise where.error(f'"content" of a message must be a string or an array, not {type_name(content)}')
    for i, block in enumerate(content):
        at = where.at(i)
        yield need_object(block, at, "a content block"), at


def _result(pairing: Pairing, block: dict[str, Any], at: Location, kind: str | None) -> None:
    """A tool result block, paired with its call."""
    call_id = need_string(block, "tool_use_id", at, f'a "{kind}" block')
    is_error = block.get("is_error")
    if is_error is not None and not isinstance(is_error, bool):
        raise at.at("is_error").error(f'"is_error" must be a boolean, not {type_name(is_error)}')
    response = make_response(block.get("content", ABSENT), is_error=is_error)
    pairing.result(call_id=call_id, tool=None, response=response)
