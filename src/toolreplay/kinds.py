"""The one table of finding kinds: each kind's name, where a report lists it, how it is shown
(level, rank, help text), and the rules that read it (which kinds are advisory, which stand for
another, which a drift note accepts, which the drift-note guard decides).

Every module names a kind through the constants below; the configuration's ``fail_on``, the
findings' order, the renderers, the Action and the drift notes all read this table.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Literal

Level = Literal["error", "warning"]

CHAIN_BROKEN = "chain-broken"
ANCHOR_MISMATCH = "anchor-mismatch"
SIGNATURE_INVALID = "signature-invalid"
MISSING_DRIFT_NOTE = "missing-drift-note"
INVALID_DRIFT_NOTE = "invalid-drift-note"
DRIFT_NOTE_UNCHECKED = "drift-note-unchecked"
STALE_BASELINE = "stale-baseline"
PERMISSION_OVERREACH = "permission-overreach"
ARGUMENT_OVERREACH = "argument-overreach"
SCOPE_UNJUDGED = "scope-unjudged"
AGENT_DRIFT = "agent-drift"
TOOL_DRIFT = "tool-drift"
CONTRACT_TEXT_DRIFT = "contract-text-drift"
SCHEMA_BREAK = "schema-break"
TOOLS_SOURCE_FAILED = "tools-source-failed"
BEHAVIOR_DRIFT = "behavior-drift"
EFFECT_DRIFT = "effect-drift"
SILENT_DRIFT = "silent-drift"
UNAVAILABLE = "unavailable"
AUDIT_INCOMPLETE = "audit-incomplete"
NON_DETERMINISM = "non-determinism"
REDUNDANT_CALL = "redundant-call"
DRIFT_GUARD_CHANGED = "drift-guard-changed"
UNGUARDED_SEALED_FILE = "unguarded-sealed-file"

#: A failure of a whole file that is not tied to one record (a verify anchor mismatch).
REPORT_ERROR = "report-error"


@dataclass(frozen=True, slots=True, kw_only=True)
class KindInfo:
    """One finding kind: its name, how it is presented, and the rules that read it."""

    name: str
    #: ``error`` or ``warning``: the annotation command and the SARIF level
    level: Level
    #: lower ranks are annotated first when GitHub's caps cut the list
    rank: int
    #: one sentence: what was found
    summary: str
    #: what to do about it
    help: str
    #: only informs: fails the build only when ``fail_on`` names it
    advisory: bool = False
    #: the kind this one stands for (a finding of it the analysis could not rule out): it fails
    #: whenever that kind fails, so a spent time budget never turns a failure into a pass
    stands_for: str | None = None
    #: a drift note accepts it (``toolreplay note`` writes one; the PR comment says how)
    noted: bool = False
    #: the drift note's ``kinds`` entry (docs/spec.md §1.6) for it, when it names one
    note_kind: str | None = None
    #: a probe's recording or receipt written again accepts it (the answers and contracts it holds)
    rewritten: bool = False
    #: the base commit decides whether it fails (the drift-note rule's own kinds, and the
    #: failure of the pull request's tools_source): a pull request must not switch it off
    guard: bool = False


#: Every kind, in the order a report lists them when several share an index. Rank 0:
#: integrity, scope and drift (the contract broke); rank 1: the agent's own run is not
#: reproducible, or the drift-note guard's warnings; rank 2: wasted work.
_TABLE: tuple[KindInfo, ...] = (
    KindInfo(
        name=CHAIN_BROKEN,
        level="error",
        rank=0,
        summary="A sealed transcript's hash chain does not verify.",
        help="The file changed after it was sealed, or links were cut, reordered or repeated. "
        "Restore the sealed file from version control, or re-record and re-seal it and commit a drift note.",
    ),
    KindInfo(
        name=ANCHOR_MISMATCH,
        level="error",
        rank=0,
        summary="A sealed transcript's chain follows, but not to the head or link count it was anchored to.",
        help="The file is not the one that was sealed: its tail was cut, links were added, or it was "
        "re-sealed. Restore it from version control, or correct the anchor (--expect-head, --expect-count) "
        "if the change was intended.",
    ),
    KindInfo(
        name=SIGNATURE_INVALID,
        level="error",
        rank=0,
        summary="A sealed transcript's signature does not verify with the key, or signs another head "
        "or count.",
        help="The file or its signature changed after signing, or the wrong key was given. Restore both "
        "from version control, or sign the file again (toolreplay sign) if the change was intended.",
    ),
    KindInfo(
        name=MISSING_DRIFT_NOTE,
        level="error",
        rank=0,
        summary="A sealed baseline changes in the pull request without a drift note for that exact change.",
        help="Write the note (toolreplay note BASELINE), say why the drift is accepted, and add it under "
        "the drift-notes folder in the same pull request. See docs/hooks.md.",
        guard=True,
    ),
    KindInfo(
        name=INVALID_DRIFT_NOTE,
        level="error",
        rank=0,
        summary="A drift note added or changed in the pull request is not valid.",
        help="Fix the note's front matter or prose as the message says (toolreplay validate checks it).",
        guard=True,
    ),
    KindInfo(
        name=DRIFT_NOTE_UNCHECKED,
        level="warning",
        rank=1,
        summary="The drift-note rule could not be checked over the pull request's diff.",
        help="Check out enough history for the base commit (actions/checkout with fetch-depth: 0) so the "
        "Action can compare the pull request's base and head.",
        guard=True,
    ),
    KindInfo(
        name=STALE_BASELINE,
        level="warning",
        rank=1,
        summary="A sealed baseline has not been re-recorded for longer than the configured age.",
        help="Re-record the baseline against today's tools, seal it, and commit it with a drift note.",
    ),
    KindInfo(
        name=PERMISSION_OVERREACH,
        level="error",
        rank=0,
        summary="The agent called a tool that is not in its declared scope.",
        help="Either the agent must not call this tool, or the scope file's allowed_tools must list it.",
    ),
    KindInfo(
        name=ARGUMENT_OVERREACH,
        level="error",
        rank=0,
        summary="A permitted tool was called with arguments its scope schema forbids.",
        help="Narrow what the agent passes, or widen the tool's schema under the scope file's arguments.",
    ),
    KindInfo(
        name=SCOPE_UNJUDGED,
        level="error",
        rank=0,
        summary="A permitted tool's arguments could not be judged against its scope schema in time.",
        help="A pattern in the scope file backtracked past its time limit, or the transcript spent its "
        "pattern budget (pattern_budget_seconds). Simplify the pattern (anchor it, avoid nested "
        "quantifiers) or raise the budget. An unjudged call is never a pass.",
        stands_for=ARGUMENT_OVERREACH,
    ),
    KindInfo(
        name=AGENT_DRIFT,
        level="error",
        rank=0,
        summary="The run made a call the sealed baseline does not have at that point.",
        help="The agent's behaviour changed. If that is intended, re-record the baseline and commit "
        "a drift note.",
        noted=True,
        note_kind="agent",
    ),
    KindInfo(
        name=TOOL_DRIFT,
        level="error",
        rank=0,
        summary="A tool's contract fingerprint differs from the recorded one.",
        help="The tool's signature, schema or pinned version changed. Review the change, update the tool "
        "lock, and commit a drift note.",
        noted=True,
        rewritten=True,
    ),
    KindInfo(
        name=CONTRACT_TEXT_DRIFT,
        level="error",
        rank=0,
        summary="A tool's contract text (title, description, a parameter's description, annotations or "
        "output schema) differs from the recorded one.",
        help="What a tool says is part of the agent's prompt: a rewritten description can steer the agent "
        "(tool poisoning, a rug pull). Read the change; if it is intended, update the tool lock and commit "
        "a drift note.",
        noted=True,
        rewritten=True,
    ),
    KindInfo(
        name=SCHEMA_BREAK,
        level="error",
        rank=0,
        summary="A recorded call's arguments are refused by the tool's new input schema.",
        help="The tool's input schema tightened past what the agent was recorded sending. Fix the agent "
        "or the schema, then re-record and commit a drift note.",
    ),
    KindInfo(
        name=TOOLS_SOURCE_FAILED,
        level="error",
        rank=0,
        summary="The configured tools_source failed in its child process: it died, ran out of time, "
        "answered something other than its tools, or changed the work tree.",
        help="Run toolreplay fingerprint-diff to see the error. The module or server must give its tools "
        "and write nothing under the repository (point caches and logs elsewhere). A tool source that "
        "cannot be fingerprinted may hide tool drift, so this fails whenever tool-drift does.",
        guard=True,
        stands_for=TOOL_DRIFT,
    ),
    KindInfo(
        name=BEHAVIOR_DRIFT,
        level="error",
        rank=0,
        summary="The same call returned a different response than in the baseline.",
        help="The tool behaves differently now. Check whether the new response is correct before "
        "accepting it with a drift note.",
        noted=True,
        note_kind="behavior",
    ),
    KindInfo(
        name=EFFECT_DRIFT,
        level="error",
        rank=0,
        summary="The same call with the same response left a different post-call state.",
        help="The call's side effect changed. Inspect the resource state fingerprints of both runs.",
        noted=True,
        note_kind="effect",
    ),
    KindInfo(
        name=SILENT_DRIFT,
        level="error",
        rank=0,
        summary="Identical calls disagreed between runs of the same baseline.",
        help="The tool answers differently from one session to the next. Declare it non-deterministic "
        "in the tool lock if that is expected.",
        noted=True,
        note_kind="behavior",
        rewritten=True,
    ),
    KindInfo(
        name=UNAVAILABLE,
        level="error",
        rank=0,
        summary="A live server gave no answer to a recorded call it was asked again (a timeout, a "
        "closed connection).",
        help="The server hangs or crashed: probe cannot say its answers still hold. Look at the server's "
        "stderr, or raise --timeout if the call is only slow.",
    ),
    KindInfo(
        name=AUDIT_INCOMPLETE,
        level="warning",
        rank=1,
        summary="A mutating call carries no post-call state, so its effect cannot be compared.",
        help="Record post-call state for mutating tools (the Recorder's state capture) so effect drift "
        "can be detected.",
    ),
    KindInfo(
        name=NON_DETERMINISM,
        level="error",
        rank=1,
        summary="An identical call returned a different response than its first occurrence.",
        help="Replay cannot rely on this tool. Declare it non-deterministic in the tool lock, or find "
        "out why its answer changed.",
    ),
    KindInfo(
        name=REDUNDANT_CALL,
        level="warning",
        rank=2,
        summary="An identical call repeats the previous one with nothing in between that could change state.",
        help="The agent repeated work. Cache the result or fix the loop that re-issues the call.",
    ),
    KindInfo(
        name=DRIFT_GUARD_CHANGED,
        level="warning",
        rank=1,
        summary="The pull request changes the drift-note guard's own settings (baselines, drift_notes, "
        "whether its findings fail) or the tools_source or tools_lock check uses.",
        help="The range is judged with the base commit's settings. Review the change: it decides what later "
        "pull requests must carry notes for. Advisory: it fails the build only when fail_on names it.",
        advisory=True,
    ),
    KindInfo(
        name=UNGUARDED_SEALED_FILE,
        level="warning",
        rank=1,
        summary="A sealed transcript changes outside the baseline patterns, so the drift-note rule does not "
        "judge it.",
        help="If the file is a baseline, add a pattern for it to baselines in the configuration. Advisory: "
        "it fails the build only when fail_on names it.",
        advisory=True,
    ),
)

KINDS: dict[str, KindInfo] = {info.name: info for info in _TABLE}
#: Kinds in the order a report lists them when several share an index.
KIND_ORDER: tuple[str, ...] = tuple(KINDS)
#: Kinds that only inform (the drift-note guard's warnings).
ADVISORY_KINDS: frozenset[str] = frozenset(k.name for k in _TABLE if k.advisory)
#: Kinds that stand for a finding of another kind (the key) the analysis could not rule out.
STANDS_FOR: dict[str, str] = {k.name: k.stands_for for k in _TABLE if k.stands_for is not None}
#: The kinds a drift note accepts.
NOTE_ACCEPTS: frozenset[str] = frozenset(k.name for k in _TABLE if k.noted)
#: The drift note's ``kinds`` entry for each finding kind that names one.
NOTE_KINDS: dict[str, str] = {k.name: k.note_kind for k in _TABLE if k.note_kind is not None}
#: The kinds a probe's recording or receipt written again accepts.
REWRITE_ACCEPTS: frozenset[str] = frozenset(k.name for k in _TABLE if k.rewritten)
#: The kinds whose failing the base commit decides, in report order.
GUARD_KINDS: tuple[str, ...] = tuple(k.name for k in _TABLE if k.guard)
#: The kinds of a baseline diff, in the order the diff reports them.
DRIFT_KINDS: tuple[str, ...] = (
    AGENT_DRIFT,
    TOOL_DRIFT,
    CONTRACT_TEXT_DRIFT,
    BEHAVIOR_DRIFT,
    EFFECT_DRIFT,
    AUDIT_INCOMPLETE,
    SILENT_DRIFT,
)

_REPORT_ERROR_INFO = KindInfo(
    name=REPORT_ERROR,
    level="error",
    rank=0,
    summary="The command failed for this file as a whole.",
    help="Read the message: it names what did not match (for example the head digest a verify "
    "anchor expected).",
)

#: Kinds this table does not know yet (added by a newer analysis) still fail the build,
#: so they are errors, ranked after the known contract breaks.
_UNKNOWN_INFO = KindInfo(
    name="",
    level="error",
    rank=1,
    summary="toolreplay reported a finding of this kind.",
    help="See the finding's message and the toolreplay documentation for this kind.",
)


def kind_info(kind: str) -> KindInfo:
    """The presentation of ``kind``; unknown kinds are errors of rank 1."""
    if kind == REPORT_ERROR:
        return _REPORT_ERROR_INFO
    return KINDS.get(kind, _UNKNOWN_INFO)


def kind_fails(kind: str, fail_on: Collection[str] | None) -> bool:
    """Whether a finding of ``kind`` fails the build under ``fail_on`` (None: the default).

    The one rule behind the config's ``fail_on``, the Action's ``fail-on`` and ``merge``:
    by default every kind fails but the advisory ones; a list fails exactly what it names.
    """
    if fail_on is None:
        return kind not in ADVISORY_KINDS
    # a kind that may hide another (an unjudged call may be an overreach) fails with it
    return kind in fail_on or STANDS_FOR.get(kind) in fail_on


def gated_level(kind: str, fails: Callable[[str], bool] | None = None) -> Level:
    """The level a finding of ``kind`` is shown at under the gate in force (docs/spec.md §7):
    ``fails`` says whether a kind fails the run (None: every kind does, as in a command without
    ``--fail-on``). A kind that fails keeps its level; one that does not is a warning, so no
    annotation or SARIF result says ``error`` in a run that exits 0."""
    level = kind_info(kind).level
    return level if fails is None or fails(kind) else "warning"
