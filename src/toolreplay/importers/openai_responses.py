"""OpenAI Responses items: ``function_call`` / ``function_call_output``, and ``mcp_call``.

A conversation is a list of items; an episode is an array of items or an object holding
them under ``input`` and/or ``output`` (a request body, a response object, or a log entry
with both: input items first, then output items). A ``function_call`` item carries
``call_id``, ``name`` and ``arguments`` (a JSON string); its result is a
``function_call_output`` item with the same ``call_id`` and an ``output`` (a string or a list
of content parts). An output item does not name its tool, so it pairs by ``call_id``
alone, earliest unanswered call first. ``custom_tool_call`` / ``custom_tool_call_output``
pair the same way (the free-form ``input`` is read like arguments, so free text is kept
under ``_raw_arguments``). An ``mcp_call`` item holds call and result at once
(``output``, or ``error`` when the MCP server failed). Other items (messages, reasoning,
the calls of OpenAI's built-in tools such as ``web_search_call`` or ``computer_call``)
are skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from toolreplay.importers.base import (
    ABSENT,
    Item,
    Session,
    conversations,
    make_response,
    need_object,
    need_string,
    read_arguments,
    string_member,
)
from toolreplay.importers.pairing import Pairing

CALL_TYPES = {"function_call": "arguments", "custom_tool_call": "input"}
RESULT_TYPES = frozenset({"function_call_output", "custom_tool_call_output"})
ITEM_TYPES = frozenset({*CALL_TYPES, *RESULT_TYPES, "mcp_call"})


def _entries(item: Item) -> Iterable[Item] | None:
    value = item.value
    if "type" in value and value["type"] != "response":
        return None  # an item (a function_call_output also has an "output")
    return _listed_entries(item)


def _listed_entries(item: Item) -> list[Item] | None:
    """The items of a response's ``input`` and ``output`` lists (None: it has neither)."""
    value = item.value
    entries: list[Item] = []
    found = False
    for key in ("input", "output"):
        member = value.get(key)
        if isinstance(member, list):
            found = True
            where = item.location.at(key)
            entries += [Item(where.at(i), v) for i, v in enumerate(member)]
    return entries if found else None


class OpenAIResponses:
    """The ``openai-responses`` importer."""

    name = "openai-responses"

    def sessions(self, items: Iterable[Item]) -> Iterator[Session]:
        for number, entries in enumerate(conversations(items, _entries)):
            yield _conversation(entries, number)


def _conversation(entries: Iterable[Item], number: int) -> Session:
    pairing = Pairing()
    for item in entries:
        entry = need_object(item.value, item.location, "an item")
        kind = string_member(entry, "type")
        at = item.location
        if kind in CALL_TYPES:
            pairing.call(
                tool=need_string(entry, "name", at, f'a "{kind}" item'),
                call_id=need_string(entry, "call_id", at, f'a "{kind}" item'),
                arguments=read_arguments(entry.get(CALL_TYPES[kind], ABSENT)),
                location=at,
            )
        elif kind in RESULT_TYPES:
            call_id = need_string(entry, "call_id", at, f'a "{kind}" item')
            pairing.result(call_id=call_id, tool=None, response=make_response(entry.get("output", ABSENT)))
        elif kind == "mcp_call":
            pairing.call(
                tool=need_string(entry, "name", at, 'an "mcp_call" item'),
                call_id=need_string(entry, "id", at, 'an "mcp_call" item'),
                arguments=read_arguments(entry.get("arguments", ABSENT)),
                location=at,
                response=_mcp_response(entry),
            )
    return pairing.session(number)


def _mcp_response(entry: dict[str, Any]) -> dict[str, Any] | None:
    output = entry.get("output")
    error = entry.get("error")
    if output is None and error is None:
        return None  # not finished (or not recorded): the call stays without a result
    if error is None:
        return make_response(output)
    return make_response(ABSENT if output is None else output, is_error=True, error=error)
