"""The library's fail-loud errors."""

from __future__ import annotations

from typing import Any

from toolreplay.canonical import canonical
from toolreplay.errors import DriftError, ToolreplayError
from toolreplay.findings import quote

#: stands for an argument absent on one side of a snapshot miss
ABSENT: Any = object()


class ToolDriftError(DriftError):
    """A tool's live fingerprint differs from the one recorded: replaying it would lie.

    ``recorded`` is the fingerprint in the recording or lock; ``live`` is today's
    (None when the tool is no longer registered); ``index`` the recorded call, if any.
    """

    def __init__(self, *, tool: str, recorded: str, live: str | None, index: int | None = None) -> None:
        self.tool = tool
        self.recorded = recorded
        self.live = live
        self.index = index
        at = f" (recorded call at index {index})" if index is not None else ""
        now = f"is now {live}" if live is not None else "is no longer registered"
        super().__init__(
            f"tool {quote(tool)} drifted: recorded with fingerprint {recorded}{at}, {now};"
            " run `toolreplay fingerprint-diff` on the two locks to see what changed"
        )


class SnapshotMissError(ToolreplayError):
    """A call the recording does not hold, so the snapshot cannot answer it.

    ``call_args`` are the arguments of the call; ``nearest_index`` is the closest
    recorded call to the same tool (None when the tool was never recorded); ``pointer``
    locates the first argument that differs from it, with ``recorded_value`` and
    ``given_value`` (:data:`ABSENT` when absent on that side).
    """

    def __init__(
        self,
        *,
        tool: str,
        args: dict[str, Any],
        nearest_index: int | None,
        pointer: str | None = None,
        recorded_value: Any = ABSENT,
        given_value: Any = ABSENT,
        recorded_tools: tuple[str, ...] = (),
    ) -> None:
        self.tool = tool
        self.call_args = args
        self.nearest_index = nearest_index
        self.pointer = pointer
        self.recorded_value = recorded_value
        self.given_value = given_value
        call = f"no recorded call matches tool {quote(tool)} with args {_clip(canonical(args))}"
        if nearest_index is None:
            names = ", ".join(quote(t) for t in recorded_tools[:5]) or "none"
            more = ", ..." if len(recorded_tools) > 5 else ""
            super().__init__(f"{call}; the recording never calls that tool (it calls {names}{more})")
        else:
            super().__init__(
                f"{call}; nearest recorded call is index {nearest_index}, which differs at argument"
                f" {quote(pointer or '/')}: recorded {_value(recorded_value)}, given {_value(given_value)}"
            )


def _value(value: Any) -> str:
    return "(absent)" if value is ABSENT else _clip(canonical(value))


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
