"""OpenAI Chat Completions messages: assistant ``tool_calls`` paired with ``role: "tool"`` messages.

A conversation is a list of messages; an episode is an array of messages or an object
holding them under ``messages`` (a request body, a fine-tuning line) or ``traj`` (the
tau-bench histories). A call is ``{"id", "type": "function", "function": {"name",
"arguments"}}`` where ``arguments`` is a JSON *string* that is not always valid JSON; the
result is a ``{"role": "tool", "tool_call_id", "content"}`` message, which some logs also
give a ``name``. The legacy ``function_call`` / ``role: "function"`` pair (no ids) is read
too. A ``custom`` tool call (free-form ``input`` instead of JSON ``arguments``) is a call
too; its input is read like arguments, so free text is kept under ``_raw_arguments``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from toolreplay.escape import quote
from toolreplay.importers.base import (
    ABSENT,
    Item,
    Location,
    Session,
    conversations,
    episode_label,
    list_member,
    make_response,
    need_list,
    need_object,
    need_string,
    read_arguments,
    string_member,
)
from toolreplay.importers.pairing import Pairing


def _entries(item: Item) -> Iterable[Item] | None:
    return list_member(item, "messages", "traj")


class OpenAIChat:
    """The ``openai-chat`` importer."""

    name = "openai-chat"

    def sessions(self, items: Iterable[Item]) -> Iterator[Session]:
        labels: list[str | None] = []

        def entries(item: Item) -> Iterable[Item] | None:
            found = _entries(item)
            if found is not None:  # an episode object: remember the id it gives itself
                labels.append(episode_label(item.value))
            return found

        for number, messages in enumerate(conversations(items, entries)):
            session = read_conversation(messages, number)
            yield replace(session, label=labels.pop() if labels else None)


def read_conversation(messages: Iterable[Item], number: int, *, ids_key: str | None = None) -> Session:
    """Pair the tool calls and results of one conversation's messages.

    ``ids_key`` names an extra member of a tool message holding a *list* of call ids
    (SWE-agent's ``tool_call_ids``).
    """
    pairing = Pairing()
    for item in messages:
        message = need_object(item.value, item.location, "a message")
        role = string_member(message, "role")
        if role == "assistant":
            _calls(pairing, message, item.location)
        elif role == "tool":
            _tool_result(pairing, message, item.location, ids_key)
        elif role == "function":
            name = need_string(message, "name", item.location, 'a "function" message')
            pairing.result(call_id=None, tool=name, response=_content(message))
    return pairing.session(number)


def _calls(pairing: Pairing, message: dict[str, Any], location: Location) -> None:
    tool_calls = message.get("tool_calls")
    if tool_calls is not None:
        where = location.at("tool_calls")
        for i, call in enumerate(need_list(tool_calls, where, '"tool_calls"')):
            _tool_call(pairing, call, where.at(i))
    legacy = message.get("function_call")
    if legacy is not None:
        _legacy_call(pairing, legacy, location.at("function_call"))


def _tool_call(pairing: Pairing, call: Any, at: Location) -> None:
    """One item of ``tool_calls``: a function call, or a custom tool's."""
    call = need_object(call, at, "a tool call")
    kind = call.get("type", "function")
    if kind not in ("function", "custom"):
        raise at.at("type").error(f"unknown tool call type {quote(str(kind))}")
    call_id = need_string(call, "id", at, "a tool call")
    body_at = at.at(kind)
    body = need_object(call.get(kind), body_at, f'"{kind}" of a tool call')
    pairing.call(
        tool=need_string(body, "name", body_at, f'"{kind}" of a tool call'),
        call_id=call_id,
        arguments=read_arguments(body.get("arguments" if kind == "function" else "input", ABSENT)),
        location=at,
    )


def _legacy_call(pairing: Pairing, legacy: Any, at: Location) -> None:
    """The deprecated ``function_call`` of a message (it has no call id)."""
    legacy = need_object(legacy, at, '"function_call"')
    pairing.call(
        tool=need_string(legacy, "name", at, '"function_call"'),
        call_id=None,
        arguments=read_arguments(legacy.get("arguments", ABSENT)),
        location=at,
    )


def _tool_result(pairing: Pairing, message: dict[str, Any], location: Location, ids_key: str | None) -> None:
    name = message.get("name")
    if name is not None and not isinstance(name, str):
        raise location.at("name").error('"name" of a tool message must be a string')
    for call_id in _answered_ids(message, location, ids_key):
        pairing.result(call_id=call_id, tool=name, response=_content(message))


def _answered_ids(message: dict[str, Any], location: Location, ids_key: str | None) -> list[str]:
    """The calls a tool message answers: its list under ``ids_key`` (SWE-agent's), else its one
    ``tool_call_id``."""
    if ids_key is None or ids_key not in message:
        return [need_string(message, "tool_call_id", location, "a tool message")]
    ids = need_list(message[ids_key], location.at(ids_key), f'"{ids_key}"')
    for i, call_id in enumerate(ids):
        if not isinstance(call_id, str):
            raise location.at(ids_key, i).error("a tool call id must be a string")
    return ids


def _content(message: dict[str, Any]) -> dict[str, Any]:
    return make_response(message.get("content", ABSENT))
