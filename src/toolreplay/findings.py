"""The Finding value and its fixed ordering."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from toolreplay.escape import one_line

#: Kinds in the order a report lists them when several share an index.
KIND_ORDER: tuple[str, ...] = (
    "chain-broken",
    "anchor-mismatch",
    "signature-invalid",
    "missing-drift-note",
    "invalid-drift-note",
    "drift-note-unchecked",
    "stale-baseline",
    "permission-overreach",
    "argument-overreach",
    "scope-unjudged",
    "agent-drift",
    "tool-drift",
    "contract-text-drift",
    "schema-break",
    "tools-source-failed",
    "behavior-drift",
    "effect-drift",
    "silent-drift",
    "unavailable",
    "audit-incomplete",
    "non-determinism",
    "redundant-call",
    "drift-guard-changed",
    "unguarded-sealed-file",
)
_RANK = {kind: rank for rank, kind in enumerate(KIND_ORDER)}

#: Kinds that only inform (the drift-note guard's warnings): they fail the build only
#: when ``fail_on`` names them, never under the default "every kind fails".
ADVISORY_KINDS: frozenset[str] = frozenset({"drift-guard-changed", "unguarded-sealed-file"})


#: kinds that stand for a finding of another kind the analysis could not rule out: they fail
#: whenever that kind fails, so spending a time budget cannot turn a failing finding into a
#: passing one under a ``fail_on`` written before the standing-in kind existed
STANDS_FOR = {"scope-unjudged": "argument-overreach", "tools-source-failed": "tool-drift"}


def kind_fails(kind: str, fail_on: Collection[str] | None) -> bool:
    """Whether a finding of ``kind`` fails the build under ``fail_on`` (None: the default).

    The one rule behind the config's ``fail_on``, the Action's ``fail-on`` and ``merge``:
    by default every kind fails but the advisory ones; a list fails exactly what it names.
    """
    if fail_on is None:
        return kind not in ADVISORY_KINDS
    # a kind that may hide another (an unjudged call may be an overreach) fails with it
    return kind in fail_on or STANDS_FOR.get(kind) in fail_on


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
