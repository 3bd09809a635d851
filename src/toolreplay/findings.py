"""The Finding value and its fixed ordering."""

from __future__ import annotations

from dataclasses import dataclass

from toolreplay.escape import one_line
from toolreplay.kinds import KIND_ORDER

_RANK = {kind: rank for rank, kind in enumerate(KIND_ORDER)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    """What differs between a baseline and a run: the JSON pointer and both values, as shown."""

    pointer: str
    baseline: str
    run: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One thing an analysis found, located at a record of a file."""

    kind: str
    #: the record's index; None for a finding about a tool contract rather than a call
    index: int | None
    tool: str
    message: str
    path: str = ""
    line: int | None = None
    #: the other index the finding refers to (the earlier identical call, the baseline call)
    related: int | None = None
    #: for drift: where the first difference is and both values (the message says it too)
    change: Change | None = None

    @property
    def text(self) -> str:
        """The message, led by the tool's name when no call index locates it (a contract finding).

        A finding about a whole file (no index, no tool: a drift-note finding) is its message.
        """
        if self.index is not None or not self.tool:
            return self.message
        return f"{one_line(self.tool)}: {self.message}"

    def sort_key(self) -> tuple[str, int, int, str, str]:
        index = -1 if self.index is None else self.index
        return (self.path, index, _RANK.get(self.kind, len(_RANK)), self.tool, self.message)


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Order by file, index (contract findings first), the fixed kind order, tool, message.

    So reruns print the same bytes.
    """
    return sorted(findings, key=Finding.sort_key)
