"""The live probe's analysis: recorded calls asked again, the answers judged (docs/capture.md).

Pure: the calls to ask come from :func:`plan`, the caller asks a live server, and
:func:`judge` turns what the server listed and answered into verdicts and findings.

Per recorded tool the verdict is one of:

* ``stable``: every distinct recorded call asked again got the recorded response;
* ``silent-drift``: a call got a different response (the finding names the first
  differing JSON pointer); the tool's contract may be unchanged, which is what makes the
  drift silent;
* ``unavailable``: the server no longer lists the tool, or a call failed to get an answer;
* ``not-probed``: the tool changes state (a mutator is never re-run), or every recorded
  call of it has redacted arguments (asking with ``[REDACTED]`` would prove nothing).

Asked N times (``--repeat``), a call's answers are also digested (:func:`answer_digest`): a
tool the lock declares deterministic that gives two digests is ``silent-drift`` at once, and
against a receipt (:class:`Receipted`) the set of digests is what is compared.

Tool drift is judged on the contracts: a recorded fingerprint that the live ``tools/list``
(with its ``serverInfo.version``) does not give is a ``tool-drift`` finding.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolreplay.analyses.difference import clipped, excerpts, first_difference
from toolreplay.analyses.volatile import Volatile
from toolreplay.canonical import canonical
from toolreplay.capture.matching import shape, unmask
from toolreplay.capture.redact import MASK
from toolreplay.contracts.text import text_drift_message
from toolreplay.escape import one_line, quote
from toolreplay.findings import Finding, sort_findings
from toolreplay.kinds import CONTRACT_TEXT_DRIFT, SILENT_DRIFT, TOOL_DRIFT, UNAVAILABLE
from toolreplay.transcript import Record, make_record
from toolreplay.volatile_rules import Rule

VERDICTS: tuple[str, ...] = ("stable", SILENT_DRIFT, UNAVAILABLE, "not-probed")


@dataclass(frozen=True, slots=True, kw_only=True)
class Failure:
    """A call that got no answer from the server (a timeout, a closed connection)."""

    problem: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Unjudged:
    """A call whose answer is not compared: the server asked the client something probe refuses."""

    reason: str


#: A live answer: the result as the server sent it (a JSON-RPC error as ``{"error": {...}}``),
#: or why there is none to compare.
Answer = dict[str, Any] | Failure | Unjudged


@dataclass(frozen=True, slots=True, kw_only=True)
class Rules:
    """Which tools probe may ask again.

    ``readonly``: known not to change state (a live ``readOnlyHint: true``, a lock's
    ``"mutates": false``); ``allowed``: the user's ``--allow``, asked whatever else says;
    ``mutators``: declared to change state (never asked unless allowed); ``shape_only``:
    declared not deterministic (their answers are compared for shape, not values);
    ``deterministic``: declared deterministic (two digests among a call's answers are drift).
    """

    readonly: frozenset[str] = frozenset()
    allowed: frozenset[str] = frozenset()
    mutators: frozenset[str] = frozenset()
    shape_only: frozenset[str] = frozenset()
    deterministic: frozenset[str] = frozenset()
    sequence: bool = False

    def safe(self, tool: str) -> bool:
        return tool in self.allowed or (tool in self.readonly and tool not in self.mutators)

    def why_not(self, tool: str) -> str:
        if tool in self.mutators:
            return "changes state"
        return "not known read-only"


@dataclass(frozen=True, slots=True, kw_only=True)
class Receipted:
    """What a receipt holds of one call: how its answers were digested, and what they gave."""

    #: the distinct digests of the answers, sorted
    digests: tuple[str, ...]
    #: how many answers they are the digests of
    answers: int
    #: digested for their shape (a tool declared not deterministic), not their values
    shape_only: bool = False
    #: the volatile rules masked before digesting
    rules: tuple[Rule, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """The records to ask, in order, and why each other record is not asked (by index)."""

    ask: tuple[Record, ...]
    skipped: Mapping[int, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeResult:
    """Verdicts by tool (name order), why a tool is not probed, the findings, how many calls were asked."""

    calls: int
    asked: int
    verdicts: Mapping[str, str]
    findings: tuple[Finding, ...]
    #: per tool, what qualifies its verdict ("after index 2 changed state", "shape only: ...")
    notes: Mapping[str, str] = field(default_factory=dict)


def plan(records: Sequence[Record], rules: Rules, listed: frozenset[str]) -> Plan:
    """What to ask, by the rules (docs/capture.md, "What is asked again").

    By default each distinct call of a tool known not to change state is asked once, as long
    as no call before it in the recording may have changed state. With ``rules.sequence``
    every record is asked in the recorded order, until one cannot be asked.
    """
    return _sequence(records, listed) if rules.sequence else _alone(records, rules, listed)


def _alone(records: Sequence[Record], rules: Rules, listed: frozenset[str]) -> Plan:
    seen: set[str] = set()
    ask: list[Record] = []
    skipped: dict[int, str] = {}
    changed: int | None = None
    for record in records:
        if not rules.safe(record.tool):
            skipped[record.index] = rules.why_not(record.tool)
            changed = record.index if changed is None else changed
        elif changed is not None:
            skipped[record.index] = f"after index {changed} changed state"
        elif record.tool not in listed or record.call_key in seen:
            continue
        elif MASK in record.canon_args:
            skipped[record.index] = "arguments redacted"
        else:
            seen.add(record.call_key)
            ask.append(record)
    return Plan(ask=tuple(ask), skipped=skipped)


def _sequence(records: Sequence[Record], listed: frozenset[str]) -> Plan:
    ask: list[Record] = []
    skipped: dict[int, str] = {}
    stop = ""
    for record in records:
        if not stop and (record.tool not in listed or MASK in record.canon_args):
            why = "arguments redacted" if record.tool in listed else "no longer listed"
            skipped[record.index] = why
            stop = f"after index {record.index} could not be replayed ({why})"
        elif stop:
            skipped[record.index] = stop
        else:
            ask.append(record)
    return Plan(ask=tuple(ask), skipped=skipped)


def judge(
    records: Sequence[Record],
    *,
    live: Mapping[str, str],
    answers: Mapping[int, Sequence[Answer]],
    skipped: Mapping[int, str],
    rules: Rules,
    path: str,
    texts: Mapping[str, str] | None = None,
    explain: Mapping[str, str] | None = None,
    volatile: Volatile | None = None,
    receipt: Mapping[int, Receipted] | None = None,
) -> ProbeResult:
    """Verdicts and findings from the live fingerprints (tool -> fingerprint) and answers (by index).

    ``texts`` (tool -> live contract-text digest) turns a recorded ``text_digest`` the server no
    longer gives into a ``contract-text-drift``; ``explain`` says what changed, when a lock knows.
    Under ``volatile`` rules a recorded and a live answer are compared with their volatile values
    masked (counted for ``path``). With ``receipt`` (by record index), a call's answers are not
    compared with its recorded response but digested as the receipt says, and the set of digests
    compared with the receipt's.
    """
    verdicts: dict[str, str] = {}
    notes: dict[str, str] = {}
    drift = _tool_drift(records, live, path)
    drifted = {finding.tool for finding in drift}
    findings = [*_text_drift(records, texts or {}, explain or {}, path), *drift]
    judging = _Judging(rules=rules, path=path, volatile=volatile, receipt=receipt)
    for tool, of_tool in _by_tool(records).items():
        if tool in live:
            verdict, note = _listed_verdict(of_tool, answers, skipped, judging, findings)
        else:
            verdict, note = _unlisted_verdict(of_tool, drifted, path, findings)
        verdicts[tool] = verdict
        if note:
            notes[tool] = note
    return ProbeResult(
        calls=len(records),
        asked=len(answers),
        verdicts=verdicts,
        findings=tuple(sort_findings(findings)),
        notes=notes,
    )


def _by_tool(records: Sequence[Record]) -> dict[str, list[Record]]:
    """The records of each tool, in recorded order; the tools in name order."""
    out: dict[str, list[Record]] = {tool: [] for tool in sorted({record.tool for record in records})}
    for record in records:
        out[record.tool].append(record)
    return out


def _unlisted_verdict(
    records: Sequence[Record], drifted: set[str], path: str, findings: list[Finding]
) -> tuple[str, str]:
    """A tool the server no longer lists is unavailable (an ``unavailable`` finding says so, unless a
    ``tool-drift`` already does: without a recorded fingerprint, none says it)."""
    if records[0].tool not in drifted:
        findings.append(_unavailable(records[0], Failure(problem="the server no longer lists it"), path))
    return UNAVAILABLE, "no longer listed"


def _listed_verdict(
    records: Sequence[Record],
    answers: Mapping[int, Sequence[Answer]],
    skipped: Mapping[int, str],
    judging: _Judging,
    findings: list[Finding],
) -> tuple[str, str]:
    """A listed tool's verdict and its note: why it was not probed, or that only shapes were compared."""
    verdict, note = _verdict(records, answers, judging, findings)
    if verdict == "not-probed":
        return verdict, note or next((skipped[r.index] for r in records if r.index in skipped), "")
    return verdict, _shape_note(records, judging.rules, judging.receipt) or note


def _shape_note(records: Sequence[Record], rules: Rules, receipt: Mapping[int, Receipted] | None) -> str:
    """Why a tool's answers were compared for their shape only, if they were."""
    if receipt is None:
        return "shape only: declared not deterministic" if records[0].tool in rules.shape_only else ""
    if any(r.index in receipt and receipt[r.index].shape_only for r in records):
        return "shape only: the receipt holds the digests of shapes"
    return ""


def _tool_drift(records: Sequence[Record], live: Mapping[str, str], path: str) -> list[Finding]:
    """A ``tool-drift`` finding at the first recorded call of each tool whose fingerprint the
    server no longer gives."""
    out: list[Finding] = []
    drifted: set[str] = set()
    for record in records:
        tool = record.tool
        if record.fingerprint is not None and tool not in drifted and live.get(tool) != record.fingerprint:
            drifted.add(tool)
            out.append(_found(TOOL_DRIFT, record, _fingerprint_message(record, live), path))
    return out


def _fingerprint_message(record: Record, live: Mapping[str, str]) -> str:
    """What a ``tool-drift`` finding says: the recorded fingerprint, and the live one if any."""
    now = f"is now {live[record.tool]}" if record.tool in live else "is no longer listed"
    return f"tool {quote(record.tool)} was recorded with fingerprint {record.fingerprint}, {now}"


def _text_drift(
    records: Sequence[Record], texts: Mapping[str, str], explain: Mapping[str, str], path: str
) -> list[Finding]:
    """The first recorded call of each tool whose recorded contract-text digest the server no longer gives."""
    out: list[Finding] = []
    seen: set[str] = set()
    for record in records:
        recorded, live = record.text_digest, texts.get(record.tool)
        if recorded is None or live is None or recorded == live or record.tool in seen:
            continue
        seen.add(record.tool)
        why = explain.get(record.tool, "")
        message = text_drift_message(record.tool, recorded, live, differences=(why,) if why else ())
        out.append(_found(CONTRACT_TEXT_DRIFT, record, message, path))
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class _Judging:
    """What every call of a probe is judged with."""

    rules: Rules
    path: str
    volatile: Volatile | None = None
    receipt: Mapping[int, Receipted] | None = None


#: which of two calls' verdicts is the tool's (a drift decides it at once)
_PRECEDENCE = {"not-probed": 0, "stable": 1, UNAVAILABLE: 2}


def _verdict(
    records: Sequence[Record],
    answers: Mapping[int, Sequence[Answer]],
    judging: _Judging,
    findings: list[Finding],
) -> tuple[str, str]:
    """The tool's verdict from its asked calls: the first that drifts decides it, else one
    without an answer makes it unavailable, else stable (not-probed when none was judged)."""
    verdict, note = "not-probed", ""
    for record in records:
        if record.index not in answers:
            continue
        outcome, finding, why = _call_verdict(record, answers[record.index], judging)
        if finding is not None:
            findings.append(finding)
        if outcome == SILENT_DRIFT:
            return outcome, ""
        verdict = max(verdict, outcome, key=_PRECEDENCE.__getitem__)
        note = note or why
    return verdict, note if verdict == "not-probed" else ""


def _call_verdict(
    record: Record, got: Sequence[Answer], judging: _Judging
) -> tuple[str, Finding | None, str]:
    """One asked call's verdict, its finding, and why it was not judged (a refused request)."""
    judged, failure, unjudged = _sorted(got)
    unsteady = _unsteady(record, judged, judging)
    if unsteady is not None:
        return SILENT_DRIFT, unsteady, ""
    if failure is not None:
        return UNAVAILABLE, _unavailable(record, failure, judging.path), ""
    receipted = judging.receipt.get(record.index) if judging.receipt is not None else None
    if receipted is not None:
        return _receipted_verdict(record, receipted, judged, unjudged, judging.path)
    return _compared_verdict(record, judged, unjudged, judging)


def _sorted(got: Sequence[Answer]) -> tuple[list[dict[str, Any]], Failure | None, str]:
    """A call's answers by kind: those to judge, the first failure, and the first refusal's reason."""
    judged = [answer for answer in got if isinstance(answer, dict)]
    failure = next((answer for answer in got if isinstance(answer, Failure)), None)
    unjudged = next((answer.reason for answer in got if isinstance(answer, Unjudged)), "")
    return judged, failure, unjudged


def _receipted_verdict(
    record: Record, receipted: Receipted, judged: Sequence[dict[str, Any]], unjudged: str, path: str
) -> tuple[str, Finding | None, str]:
    """A call's verdict against its receipt: the set of its answers' digests, unless one was refused."""
    if unjudged:  # a set of fewer answers than the receipt's proves nothing
        return "not-probed", None, unjudged
    drift = _receipt_drift(record, receipted, judged, path)
    return (SILENT_DRIFT if drift else "stable"), drift, ""


def _compared_verdict(
    record: Record, judged: Sequence[dict[str, Any]], unjudged: str, judging: _Judging
) -> tuple[str, Finding | None, str]:
    """A call's verdict from its answers compared one by one with the recorded response."""
    shape_only = record.tool in judging.rules.shape_only
    for answer in judged:
        drift = _drift(record, answer, shape_only, judging.path, judging.volatile)
        if drift is not None:
            return SILENT_DRIFT, drift, ""
    return ("stable" if judged else "not-probed"), None, unjudged


def _digest_rules(record: Record, judging: _Judging) -> Receipted:
    """How a call's answers are digested: as its receipt says, else by the lock and the rules."""
    receipted = judging.receipt.get(record.index) if judging.receipt is not None else None
    if receipted is not None:
        return receipted
    shape_only = record.tool in judging.rules.shape_only
    rules = () if shape_only else tool_rules(judging.volatile, record.tool)
    return Receipted(digests=(), answers=0, shape_only=shape_only, rules=rules)


def _unsteady(record: Record, judged: Sequence[dict[str, Any]], judging: _Judging) -> Finding | None:
    """``silent-drift`` at once: a tool declared deterministic gave this call two digests in one probe."""
    if record.tool not in judging.rules.deterministic or len(judged) < 2:
        return None
    how = _digest_rules(record, judging)
    digests = [answer_digest(record, answer, shape_only=how.shape_only, rules=how.rules) for answer in judged]
    if len(set(digests)) < 2:
        return None
    other = next(n for n, digest in enumerate(digests) if digest != digests[0])
    first, then = (_shown(record, judged[n], how) for n in (0, other))
    pointer, shown_was, shown_now = _first_difference(first, then)
    return _silent_drift(
        record,
        f"tool {quote(record.tool)} is declared deterministic but answered {_call_named(record, judging)}"
        f" with {len(set(digests))} different answers in {len(judged)} asks"
        f" ({_digests(sorted(set(digests)))}), first at {quote(pointer)}: {shown_was}, then {shown_now}",
        judging.path,
    )


def _receipt_drift(
    record: Record, receipted: Receipted, judged: Sequence[dict[str, Any]], path: str
) -> Finding | None:
    """``silent-drift`` when the live answers' digests are not the set the receipt holds."""
    digests = sorted(
        {answer_digest(record, a, shape_only=receipted.shape_only, rules=receipted.rules) for a in judged}
    )
    if tuple(digests) == receipted.digests:
        return None
    return _silent_drift(
        record,
        f"tool {quote(record.tool)} answered {_call_named(record, None)} differently: the receipt holds"
        f" {_digests(receipted.digests)} over {receipted.answers} answers, now {_digests(digests)}"
        f" over {len(judged)}",
        path,
    )


def _silent_drift(record: Record, message: str, path: str) -> Finding:
    """A ``silent-drift`` finding on ``record``'s call."""
    return _found(SILENT_DRIFT, record, message, path)


def _found(kind: str, record: Record, message: str, path: str) -> Finding:
    """A finding of ``kind`` on ``record``'s call."""
    return Finding(
        kind=kind,
        index=record.index,
        tool=record.tool,
        message=message,
        path=path,
        line=record.line or None,
    )


def _first_difference(was: Any, now: Any) -> tuple[str, str, str]:
    """Where two answers first differ (a JSON pointer), and each one's excerpt there."""
    difference = first_difference(was, now)
    pointer, was, now = difference if difference is not None else ("/", was, now)
    shown_was, shown_now = excerpts(was, now, EXCERPT, absent="(absent)")
    return pointer, shown_was, shown_now


#: characters of a call's canonical arguments a message shows
ARGS_EXCERPT = 240

#: hex digits of a digest a message shows (the receipt holds all 64)
SHOWN_DIGEST = 16


def _digests(digests: Sequence[str]) -> str:
    shown = ", ".join(digest[:SHOWN_DIGEST] for digest in digests)
    return f"digest {shown}" if len(digests) == 1 else f"{len(digests)} digests {shown}"


def _call_named(record: Record, judging: _Judging | None) -> str:
    """The call a message names: by its recorded index, or (a receipt's) by its arguments."""
    if judging is not None and judging.receipt is None:
        return f"the call recorded at index {record.index}"
    return f"the call with args {clipped(json.loads(record.canon_args), ARGS_EXCERPT)}"


def tool_rules(volatile: Volatile | None, tool: str) -> tuple[Rule, ...]:
    """The volatile rules that apply to ``tool``, in the configuration's order."""
    return tuple(rule for _, rule in volatile.for_tool(tool)) if volatile else ()


def answer_digest(record: Record, answer: dict[str, Any], *, shape_only: bool, rules: Sequence[Rule]) -> str:
    """The canonical digest of a live answer to ``record``'s call, as probe compares it: SHA-256 of
    the canonical JSON of the answer without the envelope (:func:`tool_answer`), of its shape
    (``shape_only``), or of its comparison text with what ``rules`` mask marked (docs/capture.md)."""
    value = tool_answer(answer)
    if shape_only:
        text = canonical(shape(value))
    elif rules:
        text = _masking(tuple(rules)).texts(_as_record(record, value), None).response
    else:
        text = canonical(value)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _shown(record: Record, answer: dict[str, Any], how: Receipted) -> Any:
    """A live answer as a message shows it: digested as ``how`` says, each mask ``<volatile>``."""
    value = tool_answer(answer)
    if how.shape_only:
        return shape(value)
    if how.rules:
        return _masking(tuple(how.rules)).shown(_as_record(record, value)).response
    return value


@functools.lru_cache(maxsize=64)
def _masking(rules: tuple[Rule, ...]) -> Volatile:
    """The rules a receipt digests a tool's answers with: one :class:`Volatile` per process (a probe run),
    so their patterns share one time budget (nothing is counted: masked values count elsewhere)."""
    return Volatile(rules)


def _as_record(record: Record, response: dict[str, Any]) -> Record:
    return make_record(index=record.index, tool=record.tool, args=record.args, response=response)


def _unavailable(record: Record, failure: Failure, path: str) -> Finding:
    message = (
        f"tool {quote(record.tool)} gave no answer to the call recorded at index {record.index}:"
        f" {one_line(failure.problem)}"
    )
    return _found(UNAVAILABLE, record, message, path)


def _drift(
    record: Record, answer: dict[str, Any], shape_only: bool, path: str, volatile: Volatile | None = None
) -> Finding | None:
    """A ``silent-drift`` finding when the live answer is not the recorded one (``shape_only``: its
    shape; under ``volatile`` rules, with the volatile values masked)."""
    recorded = tool_answer(record.response)
    answer = tool_answer(answer)
    redacted = MASK in record.canon_response
    if redacted:
        answer = unmask(recorded, answer)
    what = "differently"
    if shape_only:
        recorded, answer, what = shape(recorded), shape(answer), "with a different shape"
    elif volatile:
        recorded, answer, same = _masked(volatile, record, recorded, answer, path)
        if same:
            return None
    if canonical(answer) == canonical(recorded):
        return None
    pointer, shown_was, shown_now = _first_difference(recorded, answer)
    # a redacted recording held a secret: the live answer may hold it anywhere, so it is not shown
    live = "(not shown: the recorded response is redacted)" if redacted else shown_now
    return _silent_drift(
        record,
        f"tool {quote(record.tool)} answered the call recorded at index {record.index}"
        f" {what} live, first at {quote(pointer)}: recorded {shown_was}, live {live}",
        path,
    )


def _masked(
    volatile: Volatile, record: Record, recorded: dict[str, Any], answer: dict[str, Any], path: str
) -> tuple[Any, Any, bool]:
    """(recorded, live, whether they compare equal) under the volatile rules; the two values
    as a message shows them, each mask as ``<volatile>``."""
    was = make_record(index=record.index, tool=record.tool, args=record.args, response=recorded)
    now = make_record(index=record.index, tool=record.tool, args=record.args, response=answer)
    same = volatile.texts(was, path).response == volatile.texts(now, path).response
    return volatile.shown(was).response, volatile.shown(now).response, same


#: the protocol's envelope of a CallToolResult, not the tool's answer: the server's identity
#: stamp and request metadata (``_meta``) and the 2026 revision's ``resultType``
ENVELOPE = ("_meta", "resultType")


def tool_answer(response: dict[str, Any]) -> dict[str, Any]:
    """A response without the protocol's envelope (a version change is tool drift by its fingerprint).

    ``isError`` absent means false in MCP, so a result without it gets ``false`` (a JSON-RPC
    error answer, ``{"error": ...}``, is left as it is).
    """
    answer = {key: value for key, value in response.items() if key not in ENVELOPE}
    if "content" in answer and "isError" not in answer:
        answer["isError"] = False
    return answer


#: characters of each of two differing values a message shows
EXCERPT = 80
