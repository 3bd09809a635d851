"""The library's fail-loud errors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolreplay.analyses.difference import ABSENT, clipped, excerpts
from toolreplay.contracts.text import text_drift_message
from toolreplay.errors import DriftError, ToolreplayError
from toolreplay.escape import one_line, quote
from toolreplay.findings import Finding
from toolreplay.kinds import CONTRACT_TEXT_DRIFT, TOOL_DRIFT

#: characters of a value a message shows
SHOWN = 120


class ToolDriftError(DriftError):
    """A tool's live fingerprint differs from the one recorded: replaying it would lie.

    ``recorded`` is the fingerprint in the recording or lock; ``live`` is today's
    (None when the tool is no longer registered); ``index`` the recorded call, if any;
    ``differences`` the ``fingerprint-diff`` lines (``schema (breaking): /required ...``)
    when the recorded contract is known (a pinned :class:`ToolLock` holds it).
    """

    #: the finding kind the other channels report this drift as (docs/spec.md §3.4)
    kind = TOOL_DRIFT

    def __init__(
        self,
        *,
        tool: str,
        recorded: str,
        live: str | None,
        index: int | None = None,
        differences: Sequence[str] = (),
    ) -> None:
        self.tool = tool
        self.recorded = recorded
        self.live = live
        self.index = index
        #: what changed, as ``fingerprint-diff`` words it, when the recorded contract is known
        self.differences = tuple(differences)
        super().__init__(self._message())

    def _message(self) -> str:
        at = f" (recorded call at index {self.index})" if self.index is not None else ""
        now = f"is now {self.live}" if self.live is not None else "is no longer registered"
        what = (
            "; ".join(one_line(d) for d in self.differences)
            if self.differences
            else "run `toolreplay fingerprint-diff` on the two locks to see what changed"
        )
        recorded = f"recorded with fingerprint {self.recorded}{at}"
        return f"tool {quote(self.tool)} drifted: {recorded}, {now}; {what}"


class ContractTextDriftError(ToolDriftError):
    """A tool's contract text (title, descriptions, annotations, output schema) differs from the
    one recorded, though its fingerprint may not: the agent would now read another prompt.

    ``recorded`` and ``live`` are the two text digests (``live`` None when the tool is no longer
    there); ``differences`` the ``fingerprint-diff`` lines when both texts are known. A subclass
    of :class:`ToolDriftError`, so code that stops on tool drift stops on this too.
    """

    kind = CONTRACT_TEXT_DRIFT

    def _message(self) -> str:
        return text_drift_message(
            self.tool, self.recorded, self.live, index=self.index, differences=self.differences
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
        call = f"no recorded call matches tool {quote(tool)} with args {clipped(args, SHOWN)}"
        if nearest_index is None:
            super().__init__(f"{call}; the recording never calls that tool ({_calls(recorded_tools)})")
        else:
            recorded, given = excerpts(recorded_value, given_value, SHOWN, absent="(absent)")
            super().__init__(
                f"{call}; nearest recorded call is index {nearest_index}, which differs at argument"
                f" {quote(pointer or '/')}: recorded {recorded}, given {given}"
            )


def _calls(recorded_tools: tuple[str, ...]) -> str:
    """What a recording calls, as a miss of a tool it never calls says it: the first five tools."""
    names = ", ".join(quote(t) for t in recorded_tools[:5]) or "none"
    more = ", ..." if len(recorded_tools) > 5 else ""
    return f"it calls {names}{more}"


class ReplayDivergenceError(ToolreplayError):
    """A re-executed run did not do what the recording did: the replay is not admissible.

    ``kind`` is the diff finding kind: ``agent-drift`` (another call at that position, a
    call past the recording's end, or a run that stopped before it), ``behavior-drift``
    (another response) or ``effect-drift`` (the same call left another post-call state).
    ``index`` is the run's call index, ``tool`` the tool, ``finding`` the finding as
    ``toolreplay diff`` words it. ``pointer`` locates the first difference (in the
    arguments, the response or the state) with ``recorded_value`` and ``live_value``
    (:data:`ABSENT` when absent on that side); for an effect, ``resource`` is the state
    key whose fingerprint differs.
    """

    def __init__(
        self,
        finding: Finding,
        *,
        pointer: str | None = None,
        recorded_value: Any = ABSENT,
        live_value: Any = ABSENT,
        resource: str | None = None,
    ) -> None:
        self.finding = finding
        self.kind = finding.kind
        self.index = finding.index
        self.tool = finding.tool
        self.path = finding.path
        self.pointer = pointer
        self.recorded_value = recorded_value
        self.live_value = live_value
        self.resource = resource
        super().__init__(
            f"re-execution diverged from {_source(finding.path)} at index {finding.index}:"
            f" {finding.kind}: {finding.message}"
        )


class AuditIncompleteError(ToolreplayError):
    """A state-changing call whose post-call state is not recorded (in the recording, the
    re-execution or both): its effect cannot be checked, so the replay proves nothing about it.

    ``kind`` is ``audit-incomplete``; ``index``, ``tool`` and ``finding`` as for
    :class:`ReplayDivergenceError`.
    """

    def __init__(self, finding: Finding) -> None:
        self.finding = finding
        self.kind = finding.kind
        self.index = finding.index
        self.tool = finding.tool
        self.path = finding.path
        super().__init__(audit_message(finding))


class AuditIncompleteWarning(UserWarning):
    """An :class:`AuditIncompleteError` downgraded on request (``allow_incomplete=True``)."""


class StateCommandWarning(UserWarning):
    """A state command gave no state (it failed, hung, or said too much): the call is recorded
    without one, and stays audit-incomplete if its tool changes state."""


def audit_message(finding: Finding) -> str:
    """The one line an incomplete audit reports, as an error or a warning."""
    return (
        f"re-execution of {_source(finding.path)} cannot be audited at index {finding.index}:"
        f" {finding.kind}: {finding.message}"
    )


def _source(path: str) -> str:
    return one_line(path) if path else "the recording"
