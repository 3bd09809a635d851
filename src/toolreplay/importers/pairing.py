"""Pairing results with calls: by call id AND tool name, earliest unanswered call first.

Real logs reuse a call id for a different, later call (the tau-bench airline history does
it 51 times). Pairing by id alone attaches a result to whichever call happens to carry the
id; here a result goes to the earliest call that has the same id, has no result yet and,
when the result names its tool, calls that tool. A result that matches no such call is
counted and left out, never attached to a call of another tool; a call left without a
result is kept (an audit must see every call) with a response that says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolreplay.errors import InputError
from toolreplay.importers.base import Arguments, Location, Session, missing_response
from toolreplay.transcript import Record, make_record, parse_line, record_line


@dataclass(slots=True)
class _Call:
    tool: str
    call_id: str | None
    args: dict[str, Any]
    location: Location
    response: dict[str, Any] | None = None


class Pairing:
    """Collects one session's calls in order and pairs results with them."""

    def __init__(self) -> None:
        self._calls: list[_Call] = []
        # call id -> indices of its calls still without a result, earliest first
        self._open: dict[str | None, list[int]] = {}
        self._orphans = 0
        self._invalid = 0
        self._missing_args = 0

    def call(
        self,
        *,
        tool: str,
        call_id: str | None,
        arguments: Arguments,
        location: Location,
        response: dict[str, Any] | None = None,
    ) -> int:
        """Record a call, in the order the calls were made; returns its index.

        ``response`` is given when the trace holds the result inside the call itself
        (an ``mcp_call`` item, an OTel span, a SWE-agent step): such a call is not open
        for pairing.
        """
        index = len(self._calls)
        self._calls.append(_Call(tool, call_id, arguments.value, location, response))
        self._invalid += arguments.invalid
        self._missing_args += arguments.missing
        if response is None:
            self._open.setdefault(call_id, []).append(index)
        return index

    def result(self, *, call_id: str | None, tool: str | None, response: dict[str, Any]) -> int | None:
        """Attach a result to the earliest unanswered call with ``call_id`` (and ``tool``,
        when the result names one). Returns the call's index, or None when no call
        matches: the result is then counted as an orphan and left out."""
        waiting = self._open.get(call_id, [])
        for position, index in enumerate(waiting):
            if tool is None or self._calls[index].tool == tool:
                del waiting[position]
                self._calls[index].response = response
                return index
        self._orphans += 1
        return None

    def session(self, number: int) -> Session:
        """The records of the calls so far, each checked against the transcript reader."""
        records = []
        missing = 0
        for index, call in enumerate(self._calls):
            response = call.response
            if response is None:
                missing += 1
                response = missing_response()
            records.append(_record(index, call, response))
        return Session(
            number=number,
            records=tuple(records),
            missing_results=missing,
            orphan_results=self._orphans,
            invalid_arguments=self._invalid,
            missing_arguments=self._missing_args,
        )


def _record(index: int, call: _Call, response: dict[str, Any]) -> Record:
    """Build the record and prove the strict reader takes its line back (size, depth, values)."""
    try:
        record = make_record(index=index, tool=call.tool, args=call.args, response=response)
        parse_line(record_line(record).encode("ascii"))
    except InputError as err:
        raise call.location.error(f"this call cannot be a transcript record: {err.problem}") from err
    return record
