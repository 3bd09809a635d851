"""tau2-bench simulation results: each simulation one transcript of the agent's tool calls.

A results file is one JSON object with a ``simulations`` array; each simulation's
``messages`` hold ``assistant`` messages whose ``tool_calls`` are ``{"id", "name",
"arguments", "requestor"}`` (arguments an object) and ``tool`` messages answering them
by ``id``, with the result text as ``content`` and an ``error`` flag:

* ``tool`` is the call's ``name``; ``args`` its ``arguments``;
* ``response`` is ``{"content": <content as recorded>, "is_error": <error>}``.

In some domains (telecom) the user simulator has tools of its own: its calls (those of a
``user`` message, or any whose ``requestor`` is ``"user"``) and the results answering them
(``requestor: "user"``) are not the agent's doing and are left out of the agent's
transcript, so a scope check or a baseline diff judges the agent alone. Simulations are
numbered in file order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from toolreplay.importers.base import (
    ABSENT,
    Item,
    Location,
    Session,
    list_member,
    make_response,
    need_list,
    need_object,
    need_string,
    read_arguments,
    string_member,
)
from toolreplay.importers.pairing import Pairing
from toolreplay.transcript import type_name

#: the requestor of the agent's own calls
AGENT = "assistant"


class Tau2:
    """The ``tau2`` importer."""

    name = "tau2"

    def sessions(self, items: Iterable[Item]) -> Iterator[Session]:
        number = 0
        for item in items:
            need_object(item.value, item.location, "a tau2-bench results file")
            simulations = list_member(item, "simulations")
            if simulations is None:
                raise item.location.error('not tau2-bench results: no "simulations" array')
            for simulation in simulations:
                yield _simulation(simulation, number)
                number += 1


def _simulation(item: Item, number: int) -> Session:
    simulation = need_object(item.value, item.location, "a simulation")
    where = item.location.at("messages")
    pairing = Pairing()
    for i, message in enumerate(need_list(simulation.get("messages"), where, '"messages" of a simulation')):
        at = where.at(i)
        message = need_object(message, at, "a message")
        role = string_member(message, "role")
        if role == "tool":
            _result(pairing, message, at)
        elif message.get("tool_calls") is not None:
            _calls(pairing, message, at, role)
    return pairing.session(number)


def _result(pairing: Pairing, message: dict[str, Any], at: Location) -> None:
    """A tool message answering the agent's call (the user's own tools are not the agent's)."""
    if _requestor(message, at, AGENT) != AGENT:
        return
    error = message.get("error")
    pairing.result(
        call_id=need_string(message, "id", at, "a tool message"),
        tool=None,
        response=make_response(message.get("content"), is_error=error if isinstance(error, bool) else None),
    )


def _calls(pairing: Pairing, message: dict[str, Any], at: Location, role: str | None) -> None:
    """The agent's tool calls in a message."""
    calls_at = at.at("tool_calls")
    for j, call in enumerate(need_list(message["tool_calls"], calls_at, '"tool_calls"')):
        call_at = calls_at.at(j)
        call = need_object(call, call_at, "a tool call")
        if _requestor(call, call_at, AGENT if role == AGENT else "user") != AGENT:
            continue
        pairing.call(
            tool=need_string(call, "name", call_at, "a tool call"),
            call_id=need_string(call, "id", call_at, "a tool call"),
            arguments=read_arguments(call.get("arguments", ABSENT)),
            location=call_at,
        )


def _requestor(obj: dict[str, Any], location: Location, default: str) -> str:
    value = obj.get("requestor", default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise location.at("requestor").error(f'"requestor" must be a string, not {type_name(value)}')
    return value
