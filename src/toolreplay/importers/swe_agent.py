"""SWE-agent ``.traj`` files: one episode each (a JSON array of them is several).

A trajectory's ``trajectory`` list holds one step per action the agent ran, in both of
SWE-agent's modes (text/ACI commands and function calling), with the environment's raw
``observation``. Each step becomes one call:

* ``tool`` is the action's command: its first word (``open``, ``edit``, ``python``,
  ``submit``...), not a shell parse: ``cd x && make`` is ``cd``;
* ``args`` is ``{"action": <the whole action as recorded>}``;
* ``response`` is ``{"content": <observation>}``; a step without an observation gets
  ``{"_missing_result": true}``.

A step with a blank action ran nothing and is skipped. A file with no ``trajectory`` steps
but a ``history`` of OpenAI-style ``tool_calls`` (older function-calling demonstrations) is
read like ``openai-chat``, results pairing through the tool message's ``tool_call_ids``.
The step list is preferred because it has every step (the history can lack the last
one) and the raw observation (the history's copy is templated, and may be elided).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from toolreplay.importers.base import (
    Arguments,
    Item,
    Session,
    list_member,
    make_response,
    need_list,
    need_object,
)
from toolreplay.importers.openai_chat import read_conversation
from toolreplay.importers.pairing import Pairing
from toolreplay.transcript import type_name


class SWEAgent:
    """The ``swe-agent`` importer."""

    name = "swe-agent"

    def sessions(self, items: Iterable[Item]) -> Iterator[Session]:
        for number, item in enumerate(items):
            yield _trajectory(item, number)


def _trajectory(item: Item, number: int) -> Session:
    """One trajectory: its steps, else its history (a chat), else an empty ``trajectory``."""
    trajectory = need_object(item.value, item.location, "a SWE-agent trajectory")
    steps = trajectory.get("trajectory")
    if steps:
        return _steps(item, number)
    if "history" in trajectory:
        return _history(item, trajectory, number)
    if "trajectory" in trajectory:
        need_list(steps, item.location.at("trajectory"), '"trajectory"')
        return Pairing().session(number)
    raise item.location.error('not a SWE-agent trajectory: no "trajectory" or "history"')


def _history(item: Item, trajectory: dict[str, Any], number: int) -> Session:
    history = list_member(item, "history")
    if history is None:
        raise item.location.at("history").error(
            f'"history" must be an array, not {type_name(trajectory["history"])}'
        )
    return read_conversation(history, number, ids_key="tool_call_ids")


def _steps(item: Item, number: int) -> Session:
    pairing = Pairing()
    where = item.location.at("trajectory")
    for i, step in enumerate(need_list(item.value["trajectory"], where, '"trajectory"')):
        at = where.at(i)
        step = need_object(step, at, "a step")
        action = step.get("action")
        if not isinstance(action, str):
            raise at.at("action").error(f'"action" of a step must be a string, not {type_name(action)}')
        words = action.split()
        if not words:
            continue
        observation = step.get("observation")
        pairing.call(
            tool=words[0],
            call_id=None,
            arguments=Arguments({"action": action}),
            location=at,
            response=None if observation is None else make_response(observation),
        )
    return pairing.session(number)
