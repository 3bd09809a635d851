"""What a judgement found: the :class:`Finding` value and its fixed order, and as the renderers
take it, :class:`Report` (one file's findings and header :class:`Line` values) and
:class:`CheckInfo` (what a ``check`` run was).

Light (dataclasses and the findings' fixed rules), so every command and analysis can build its
reports without loading the renderers (:mod:`toolreplay.report`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolreplay.escape import one_line
from toolreplay.kinds import KIND_ORDER, REPORT_ERROR, kind_fails

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


@dataclass(frozen=True, slots=True, kw_only=True)
class Line:
    """A header line of a report: ``label: text`` in text form, ``key: value`` in JSON."""

    key: str
    value: Any
    text: str
    label: str = ""

    @property
    def shown_label(self) -> str:
        return self.label or self.key


@dataclass(frozen=True, slots=True, kw_only=True)
class Review:
    """A baseline a pull request changes, as a reviewer approves it: the note that accepts the
    change (its path and reason, untrusted text), the commits of both versions, and what differs
    between them as ``diff`` finds it (the base's baseline against the head's, call by call)."""

    base: str
    head: str
    #: the note accepting the change (None: none does)
    note: str | None = None
    reason: str = ""
    kinds: tuple[str, ...] = ()
    #: ``diff``'s findings of the head's baseline against the base's (empty for a new or deleted one)
    changes: tuple[Finding, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    """What one command found in one file."""

    command: str
    path: str
    header: tuple[Line, ...] = ()
    findings: tuple[Finding, ...] = ()
    errors: tuple[str, ...] = field(default=())
    #: for a baseline checked by ``check``: the drift-notes folder, as the paths are relative
    #: (where a note accepting its drift goes)
    notes: str | None = None
    #: for a baseline checked by ``check``, or changed in a pull request without its note: a note
    #: file that does not exist yet (``NAME.md``, else ``NAME-2.md`` ...), relative like the paths
    note: str | None = None
    #: for a baseline a pull request changes: the change as a reviewer approves it
    review: Review | None = None

    @property
    def failed(self) -> bool:
        return bool(self.findings or self.errors)


def replay_header(calls: int, divergence: int | None, findings: int) -> tuple[Line, ...]:
    """The three header lines of a replay report (docs/spec.md §2.1): calls, divergence, findings."""
    return (
        Line(key="calls", value=calls, text=str(calls)),
        Line(
            key="divergence", value=divergence, text="none" if divergence is None else f"index {divergence}"
        ),
        Line(key="findings", value=findings, text=str(findings)),
    )


#: the header key of a probe against a receipt (``probe --against``): its value is how many
#: answers each call was asked for
RECEIPT = "receipt"


def receipt_line(answers: int) -> Line:
    """The ``receipt:`` header line of ``probe --against RECEIPT``: ``3 answers a call``."""
    return Line(key=RECEIPT, value=answers, text=f"{answers} answer{'s' * (answers != 1)} a call")


def masked_line(counts: Sequence[int]) -> Line:
    """The ``masked:`` header line of a comparison under volatile rules: its value is the values
    masked per rule, in the config's order (so a whole check can add them up), its text
    ``12 values by 2 rules``."""
    return Line(key="masked", value=list(counts), text=masked_text(counts))


def masked_text(counts: Sequence[int]) -> str:
    """``12 values by 2 rules``: the values masked, and by how many of the rules."""
    values, rules = sum(counts), sum(1 for n in counts if n)
    return f"{values} value{'s' * (values != 1)} by {rules} rule{'s' * (rules != 1)}"


def masked_total(reports: Sequence[Report]) -> list[int] | None:
    """The values masked per rule over every report of a check (None: no volatile rules)."""
    lines = [line.value for r in reports for line in r.header if line.key == "masked"]
    return _summed(lines) if lines else None


def _summed(counts: Sequence[Sequence[int]]) -> list[int]:
    """Lists of counts per rule added up, rule by rule."""
    total = [0] * max(len(value) for value in counts)
    for value in counts:
        for number, n in enumerate(value):
            total[number] += n
    return total


def stale_rules(counts: Sequence[int]) -> list[str]:
    """One warning per volatile rule that masked nothing in a whole check: a stale rule, left
    behind by a tool that changed (or a place mistyped), which hides nothing and tests nothing."""
    return [
        f"volatile rule {n + 1} (the config's [[volatile]] table number {n + 1}) masked no value"
        " in the whole check: a stale rule?"
        for n, count in enumerate(counts)
        if not count
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckInfo:
    """What a ``check`` run was, beyond its reports: enough for ``merge`` to render shards as one.

    ``config`` is a digest of the configuration's settings (not of its folder), so shards
    run on different machines from the same commit agree; ``fail_on`` is the config's
    (None: every kind fails); ``shard`` is ``(K, N)`` or None for a whole run. A shard also
    carries ``commit`` (what it judged; None outside git) and ``inputs``
    (:func:`toolreplay.check.inputs_digest`); a whole run, and the merge of shards, carry
    neither, so both print the same bytes.
    """

    toolreplay: str
    config: str
    fail_on: tuple[str, ...] | None
    base: str | None = None
    shard: tuple[int, int] | None = None
    #: with ``base``: the drift-note rule's verdict line (the shard that ran the rule has it)
    drift: str | None = None
    commit: str | None = None
    inputs: str | None = None

    def fails(self, kind: str) -> bool:
        # a file that cannot be read fails a check whatever fail_on says (docs/spec.md §7)
        return kind == REPORT_ERROR or kind_fails(kind, self.fail_on)


def gate_of(check: CheckInfo | None, fails: Callable[[str], bool] | None) -> Callable[[str], bool] | None:
    """Which kinds fail the run a renderer shows: ``fails`` where the command says (``--fail-on``,
    the config's ``fail_on``), else the check's ``fail_on``; None: every kind (a command without a
    gate fails on any finding)."""
    if fails is not None:
        return fails
    return check.fails if check is not None else None
