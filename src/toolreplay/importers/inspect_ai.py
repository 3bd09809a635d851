"""Inspect AI evaluation logs: one session per sample and epoch, its tool calls from its messages.

An item is a whole ``.json`` log (``version``, ``eval``, ``samples``...) or one sample of an
``.eval`` archive (:mod:`toolreplay.importers.evallog`). A sample's ``messages`` is the
conversation: an ``assistant`` message's ``tool_calls`` (``id``, ``function``, ``arguments``
as an object) are the calls, a ``tool`` message (``tool_call_id``, ``function``, ``content``,
``error``) answers one. Large strings Inspect moved to the sample's ``attachments``
(``attachment://HASH``) are put back first. The log format is read as Inspect documents it;
the ``inspect_ai`` package is not needed.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from toolreplay.importers.base import (
    ABSENT,
    Item,
    Location,
    Session,
    TraceWarning,
    make_response,
    need_list,
    need_object,
    need_string,
    read_arguments,
    safe_label,
    string_member,
)
from toolreplay.importers.pairing import Pairing
from toolreplay.transcript import type_name

_ATTACHMENT = re.compile(r"attachment://([0-9a-f]{32})")


def is_log(value: Any) -> bool:
    """Whether a document is an Inspect AI ``.json`` log (an ``eval`` object naming its task)."""
    return isinstance(value, dict) and isinstance(value.get("eval"), dict) and "task" in value["eval"]


class InspectAI:
    """The ``inspect`` importer."""

    name = "inspect"

    def sessions(self, items: Iterable[Item]) -> Iterator[Session]:
        number = 0
        for item in items:
            for sample in _samples(item):
                yield _sample(sample, number)
                number += 1
        if number == 0:
            warnings.warn(TraceWarning("no samples: the log was written without them"), stacklevel=2)


def _samples(item: Item) -> Iterator[Item]:
    """The samples an item holds: a log's ``samples`` (none when it was logged without them), or
    the item itself when it is one sample."""
    value = need_object(item.value, item.location, "an Inspect AI log or sample")
    if not is_log(value):
        yield item
        return
    if value.get("samples") is None:
        return
    where = item.location.at("samples")
    for i, sample in enumerate(need_list(value["samples"], where, '"samples"')):
        yield Item(where.at(i), sample)


def _sample(item: Item, number: int) -> Session:
    sample = need_object(item.value, item.location, "a sample")
    attachments = sample.get("attachments")
    attachments = attachments if isinstance(attachments, dict) else {}
    where = item.location.at("messages")
    messages = need_list(sample.get("messages", []), where, '"messages" of a sample')
    pairing = Pairing()
    for i, message in enumerate(messages):
        _message(pairing, _restored(message, attachments), where.at(i))
    session = pairing.session(number)
    label = _label(sample)
    return session if label is None else replace(session, label=label)


def _label(sample: dict[str, Any]) -> str | None:
    """``ID-epoch-N`` when the sample's id is a safe file-name part."""
    sample_id, epoch = sample.get("id"), sample.get("epoch")
    if isinstance(sample_id, bool) or not isinstance(sample_id, (int, str)) or isinstance(epoch, bool):
        return None
    return safe_label(f"{sample_id}-epoch-{epoch}" if isinstance(epoch, int) else str(sample_id))


def _restored(value: Any, attachments: dict[str, Any]) -> Any:
    """A value with each ``attachment://HASH`` string replaced by the attachment it names."""
    if isinstance(value, str):
        return _attachment(value, attachments)
    if isinstance(value, list):
        return [_restored(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: _restored(v, attachments) for k, v in value.items()}
    return value


def _attachment(text: str, attachments: dict[str, Any]) -> Any:
    """The attachment an ``attachment://HASH`` string names (the string itself when it names none)."""
    found = _ATTACHMENT.fullmatch(text)
    return attachments.get(found[1], text) if found else text


def _message(pairing: Pairing, message: Any, at: Location) -> None:
    message = need_object(message, at, "a message")
    role = string_member(message, "role")
    if role == "assistant" and message.get("tool_calls") is not None:
        calls_at = at.at("tool_calls")
        for i, call in enumerate(need_list(message["tool_calls"], calls_at, '"tool_calls"')):
            _call(pairing, need_object(call, calls_at.at(i), "a tool call"), calls_at.at(i))
    elif role == "tool":
        _result(pairing, message, at)


def _call(pairing: Pairing, call: dict[str, Any], at: Location) -> None:
    pairing.call(
        tool=need_string(call, "function", at, "a tool call"),
        call_id=need_string(call, "id", at, "a tool call"),
        arguments=read_arguments(call.get("arguments", ABSENT)),
        location=at,
    )


def _result(pairing: Pairing, message: dict[str, Any], at: Location) -> None:
    """A ``tool`` message: its content, and its ``error`` (``{"type", "message"}``) when it failed."""
    call_id = need_string(message, "tool_call_id", at, "a tool message")
    tool = message.get("function")
    if tool is not None and not isinstance(tool, str):
        raise at.at("function").error(f'"function" of a tool message must be a string, not {type_name(tool)}')
    error = message.get("error")
    content = message.get("content", ABSENT)
    response = make_response(content) if error is None else make_response(content, is_error=True, error=error)
    pairing.result(call_id=call_id, tool=tool, response=response)
