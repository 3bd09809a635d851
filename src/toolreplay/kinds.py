"""What each finding kind means to the outside world: severity, rank and help text.

One table feeds the GitHub annotations (``::error`` or ``::warning``, and which ones
survive GitHub's per-step cap), the SARIF rules and the Markdown summary, so a kind
is described once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Level = Literal["error", "warning"]

#: the finding kinds a drift note accepts (``toolreplay note`` writes one; the PR comment says how)
NOTE_ACCEPTS = frozenset({"agent-drift", "tool-drift", "behavior-drift", "effect-drift", "silent-drift"})


@dataclass(frozen=True, slots=True, kw_only=True)
class KindInfo:
    """How a finding kind is presented."""

    #: ``error`` or ``warning``: the annotation command and the SARIF level
    level: Level
    #: lower ranks are annotated first when GitHub's caps cut the list
    rank: int
    #: one sentence: what was found
    summary: str
    #: what to do about it
    help: str


#: Rank 0: integrity, scope and drift (the contract broke); rank 1: the agent's own
#: run is not reproducible; rank 2: wasted work.
KINDS: dict[str, KindInfo] = {
    "chain-broken": KindInfo(
        level="error",
        rank=0,
        summary="A sealed transcript's hash chain does not verify.",
        help="The file changed after it was sealed, or links were cut, reordered or repeated. "
        "Restore the sealed file from version control, or re-record and re-seal it and commit a drift note.",
    ),
    "anchor-mismatch": KindInfo(
        level="error",
        rank=0,
        summary="A sealed transcript's chain follows, but not to the head or link count it was anchored to.",
        help="The file is not the one that was sealed: its tail was cut, links were added, or it was "
        "re-sealed. Restore it from version control, or correct the anchor (--expect-head, --expect-count) "
        "if the change was intended.",
    ),
    "signature-invalid": KindInfo(
        level="error",
        rank=0,
        summary="A sealed transcript's signature does not verify with the key, or signs another head "
        "or count.",
        help="The file or its signature changed after signing, or the wrong key was given. Restore both "
        "from version control, or sign the file again (toolreplay sign) if the change was intended.",
    ),
    "stale-baseline": KindInfo(
        level="warning",
        rank=1,
        summary="A sealed baseline has not been re-recorded for longer than the configured age.",
        help="Re-record the baseline against today's tools, seal it, and commit it with a drift note.",
    ),
    "silent-drift": KindInfo(
        level="error",
        rank=0,
        summary="Identical calls disagreed between runs of the same baseline.",
        help="The tool answers differently from one session to the next. Declare it non-deterministic "
        "in the tool lock if that is expected.",
    ),
    "unavailable": KindInfo(
        level="error",
        rank=0,
        summary="A live server gave no answer to a recorded call it was asked again (a timeout, a "
        "closed connection).",
        help="The server hangs or crashed: probe cannot say its answers still hold. Look at the server's "
        "stderr, or raise --timeout if the call is only slow.",
    ),
    "permission-overreach": KindInfo(
        level="error",
        rank=0,
        summary="The agent called a tool that is not in its declared scope.",
        help="Either the agent must not call this tool, or the scope file's allowed_tools must list it.",
    ),
    "argument-overreach": KindInfo(
        level="error",
        rank=0,
        summary="A permitted tool was called with arguments its scope schema forbids.",
        help="Narrow what the agent passes, or widen the tool's schema under the scope file's arguments.",
    ),
    "scope-unjudged": KindInfo(
        level="error",
        rank=0,
        summary="A permitted tool's arguments could not be judged against its scope schema in time.",
        help="A pattern in the scope file backtracked past its time limit, or the transcript spent its "
        "pattern budget (pattern_budget_seconds). Simplify the pattern (anchor it, avoid nested "
        "quantifiers) or raise the budget. An unjudged call is never a pass.",
    ),
    "agent-drift": KindInfo(
        level="error",
        rank=0,
        summary="The run made a call the sealed baseline does not have at that point.",
        help="The agent's behaviour changed. If that is intended, re-record the baseline and commit "
        "a drift note.",
    ),
    "tool-drift": KindInfo(
        level="error",
        rank=0,
        summary="A tool's contract fingerprint differs from the recorded one.",
        help="The tool's signature, schema or pinned version changed. Review the change, update the tool "
        "lock, and commit a drift note.",
    ),
    "contract-text-drift": KindInfo(
        level="error",
        rank=0,
        summary="A tool's contract text (title, description, a parameter's description, annotations or "
        "output schema) differs from the recorded one.",
        help="What a tool says is part of the agent's prompt: a rewritten description can steer the agent "
        "(tool poisoning, a rug pull). Read the change; if it is intended, update the tool lock and commit "
        "a drift note.",
    ),
    "schema-break": KindInfo(
        level="error",
        rank=0,
        summary="A recorded call's arguments are refused by the tool's new input schema.",
        help="The tool's input schema tightened past what the agent was recorded sending. Fix the agent "
        "or the schema, then re-record and commit a drift note.",
    ),
    "tools-source-failed": KindInfo(
        level="error",
        rank=0,
        summary="The configured tools_source failed in its child process: it died, ran out of time, "
        "answered something other than its tools, or changed the work tree.",
        help="Run toolreplay fingerprint-diff to see the error. The module or server must give its tools "
        "and write nothing under the repository (point caches and logs elsewhere). A tool source that "
        "cannot be fingerprinted may hide tool drift, so this fails whenever tool-drift does.",
    ),
    "behavior-drift": KindInfo(
        level="error",
        rank=0,
        summary="The same call returned a different response than in the baseline.",
        help="The tool behaves differently now. Check whether the new response is correct before "
        "accepting it with a drift note.",
    ),
    "effect-drift": KindInfo(
        level="error",
        rank=0,
        summary="The same call with the same response left a different post-call state.",
        help="The call's side effect changed. Inspect the resource state fingerprints of both runs.",
    ),
    "audit-incomplete": KindInfo(
        level="warning",
        rank=1,
        summary="A mutating call carries no post-call state, so its effect cannot be compared.",
        help="Record post-call state for mutating tools (the Recorder's state capture) so effect drift "
        "can be detected.",
    ),
    "non-determinism": KindInfo(
        level="error",
        rank=1,
        summary="An identical call returned a different response than its first occurrence.",
        help="Replay cannot rely on this tool. Declare it non-deterministic in the tool lock, or find "
        "out why its answer changed.",
    ),
    "redundant-call": KindInfo(
        level="warning",
        rank=2,
        summary="An identical call repeats the previous one with nothing in between that could change state.",
        help="The agent repeated work. Cache the result or fix the loop that re-issues the call.",
    ),
    # The drift-note rule, enforced by the GitHub Action over a pull request's own diff.
    "missing-drift-note": KindInfo(
        level="error",
        rank=0,
        summary="A sealed baseline changes in the pull request without a drift note for that exact change.",
        help="Write the note (toolreplay note BASELINE), say why the drift is accepted, and add it under "
        "the drift-notes folder in the same pull request. See docs/hooks.md.",
    ),
    "invalid-drift-note": KindInfo(
        level="error",
        rank=0,
        summary="A drift note added or changed in the pull request is not valid.",
        help="Fix the note's front matter or prose as the message says (toolreplay validate checks it).",
    ),
    "drift-guard-changed": KindInfo(
        level="warning",
        rank=1,
        summary="The pull request changes the drift-note guard's own settings (baselines, drift_notes, "
        "whether its findings fail) or the tools_source or tools_lock check uses.",
        help="The range is judged with the base commit's settings. Review the change: it decides what later "
        "pull requests must carry notes for. Advisory: it fails the build only when fail_on names it.",
    ),
    "unguarded-sealed-file": KindInfo(
        level="warning",
        rank=1,
        summary="A sealed transcript changes outside the baseline patterns, so the drift-note rule does not "
        "judge it.",
        help="If the file is a baseline, add a pattern for it to baselines in the configuration. Advisory: "
        "it fails the build only when fail_on names it.",
    ),
    "drift-note-unchecked": KindInfo(
        level="warning",
        rank=1,
        summary="The drift-note rule could not be checked over the pull request's diff.",
        help="Check out enough history for the base commit (actions/checkout with fetch-depth: 0) so the "
        "Action can compare the pull request's base and head.",
    ),
}

#: A failure of a whole file that is not tied to one record (a verify anchor mismatch).
REPORT_ERROR = "report-error"

_REPORT_ERROR_INFO = KindInfo(
    level="error",
    rank=0,
    summary="The command failed for this file as a whole.",
    help="Read the message: it names what did not match (for example the head digest a verify "
    "anchor expected).",
)

#: Kinds this table does not know yet (added by a newer analysis) still fail the build,
#: so they are errors, ranked after the known contract breaks.
_UNKNOWN_INFO = KindInfo(
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
