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

Tool drift is judged on the contracts: a recorded fingerprint that the live ``tools/list``
(with its ``serverInfo.version``) does not give is a ``tool-drift`` finding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolreplay.analyses.baseline import first_difference
from toolreplay.analyses.volatile import Volatile
from toolreplay.canonical import canonical
from toolreplay.capture.redact import MASK
from toolreplay.contracts.text import text_drift_message
from toolreplay.escape import one_line, quote
from toolreplay.findings import Finding, sort_findings
from toolreplay.library.errors import ABSENT
from toolreplay.transcript import Record, make_record

VERDICTS: tuple[str, ...] = ("stable", "silent-drift", "unavailable", "not-probed")


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
    declared not deterministic (their answers are compared for shape, not values).
    """

    readonly: frozenset[str] = frozenset()
    allowed: frozenset[str] = frozenset()
    mutators: frozenset[str] = frozenset()
    shape_only: frozenset[str] = frozenset()
    sequence: bool = False

    def safe(self, tool: str) -> bool:
        return tool in self.allowed or (tool in self.readonly and tool not in self.mutators)

    def why_not(self, tool: str) -> str:
        if tool in self.mutators:
            return "changes state"
        return "not known read-only"


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
) -> ProbeResult:
    """Verdicts and findings from the live fingerprints (tool -> fingerprint) and answers (by index).

    ``texts`` (tool -> live contract-text digest) turns a recorded ``text_digest`` the server no
    longer gives into a ``contract-text-drift``; ``explain`` says what changed, when a lock knows.
    Under ``volatile`` rules a recorded and a live answer are compared with their volatile values
    masked (counted for ``path``).
    """
    findings: list[Finding] = []
    verdicts: dict[str, str] = {}
    notes: dict[str, str] = {}
    findings += _text_drift(records, texts or {}, explain or {}, path)
    drift = _tool_drift(records, live, path)
    drifted = {finding.tool for finding in drift}
    findings += drift
    for tool in sorted({record.tool for record in records}):
        of_tool = [record for record in records if record.tool == tool]
        if tool not in live:
            verdicts[tool] = "unavailable"
            notes[tool] = "no longer listed"
            if tool not in drifted:  # without a recorded fingerprint, no tool-drift says it
                findings.append(
                    _unavailable(of_tool[0], Failure(problem="the server no longer lists it"), path)
                )
            continue
        verdict, note = _verdict(of_tool, answers, tool in rules.shape_only, path, findings, volatile)
        if verdict == "not-probed":
            note = note or next((skipped[r.index] for r in of_tool if r.index in skipped), "")
        elif tool in rules.shape_only:
            note = "shape only: declared not deterministic"
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


def _tool_drift(records: Sequence[Record], live: Mapping[str, str], path: str) -> list[Finding]:
    """A ``tool-drift`` finding at the first recorded call of each tool whose fingerprint the
    server no longer gives."""
    out: list[Finding] = []
    drifted: set[str] = set()
    for record in records:
        tool = record.tool
        if record.fingerprint is not None and tool not in drifted and live.get(tool) != record.fingerprint:
            drifted.add(tool)
            now = f"is now {live[tool]}" if tool in live else "is no longer listed"
            out.append(
                Finding(
                    kind="tool-drift",
                    index=record.index,
                    tool=tool,
                    message=f"tool {quote(tool)} was recorded with fingerprint {record.fingerprint}, {now}",
                    path=path,
                    line=record.line or None,
                )
            )
    return out


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
        out.append(
            Finding(
                kind="contract-text-drift",
                index=record.index,
                tool=record.tool,
                message=message,
                path=path,
                line=record.line or None,
            )
        )
    return out


def _verdict(
    records: Sequence[Record],
    answers: Mapping[int, Sequence[Answer]],
    shape_only: bool,
    path: str,
    findings: list[Finding],
    volatile: Volatile | None = None,
) -> tuple[str, str]:
    """The tool's verdict from its asked calls (each compared with its own recorded response)."""
    asked = [record for record in records if record.index in answers]
    verdict, note = "not-probed", ""
    for record in asked:
        for answer in answers[record.index]:
            if isinstance(answer, Unjudged):
                note = note or answer.reason
                continue
            if isinstance(answer, Failure):
                findings.append(_unavailable(record, answer, path))
                verdict = "unavailable"
                break
            drift = _drift(record, answer, shape_only, path, volatile)
            if drift is not None:
                findings.append(drift)
                return "silent-drift", ""
            verdict = "stable" if verdict == "not-probed" else verdict
    return verdict, note if verdict == "not-probed" else ""


def _unavailable(record: Record, failure: Failure, path: str) -> Finding:
    return Finding(
        kind="unavailable",
        index=record.index,
        tool=record.tool,
        message=(
            f"tool {quote(record.tool)} gave no answer to the call recorded at index {record.index}:"
            f" {one_line(failure.problem)}"
        ),
        path=path,
        line=record.line or None,
    )


def _drift(
    record: Record, answer: dict[str, Any], shape_only: bool, path: str, volatile: Volatile | None = None
) -> Finding | None:
    """A ``silent-drift`` finding when the live answer is not the recorded one (``shape_only``: its
    shape; under ``volatile`` rules, with the volatile values masked)."""
    recorded = _tool_answer(record.response)
    answer = _tool_answer(answer)
    redacted = MASK in record.canon_response
    if redacted:
        answer = _unmask(recorded, answer)
    what = "differently"
    if shape_only:
        recorded, answer, what = shape(recorded), shape(answer), "with a different shape"
    elif volatile:
        recorded, answer, same = _masked(volatile, record, recorded, answer, path)
        if same:
            return None
    if canonical(answer) == canonical(recorded):
        return None
    difference = first_difference(recorded, answer)
    pointer, was, now = difference if difference is not None else ("/", recorded, answer)
    shown_was, shown_now = excerpts(was, now)
    # a redacted recording held a secret: the live answer may hold it anywhere, so it is not shown
    live = "(not shown: the recorded response is redacted)" if redacted else shown_now
    return Finding(
        kind="silent-drift",
        index=record.index,
        tool=record.tool,
        message=(
            f"tool {quote(record.tool)} answered the call recorded at index {record.index}"
            f" {what} live, first at {quote(pointer)}: recorded {shown_was}, live {live}"
        ),
        path=path,
        line=record.line or None,
    )


#: the values a shape keeps: whether the call failed, and what kind each content block is
_SHAPE_VALUES = frozenset({"isError", "type"})


def shape(value: Any, key: str = "") -> Any:
    """A JSON value's shape: objects keep their keys, arrays the set of their items' shapes,
    scalars become their JSON type (``isError`` and a ``type`` member keep their values)."""
    if isinstance(value, dict):
        return {k: shape(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return sorted({canonical(shape(item)): shape(item) for item in value}.values(), key=canonical)
    if key in _SHAPE_VALUES and isinstance(value, str | bool):
        return value
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "null" if value is None else "string"


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


def _tool_answer(response: dict[str, Any]) -> dict[str, Any]:
    """A response without the protocol's envelope (a version change is tool drift by its fingerprint).

    ``isError`` absent means false in MCP, so a result without it gets ``false`` (a JSON-RPC
    error answer, ``{"error": ...}``, is left as it is).
    """
    answer = {key: value for key, value in response.items() if key not in ENVELOPE}
    if "content" in answer and "isError" not in answer:
        answer["isError"] = False
    return answer


def _unmask(recorded: Any, live: Any) -> Any:
    """``live`` with each string that a redacted recorded string stands for replaced by it.

    A recorded string with ``[REDACTED]`` in it stands for any live string that has the
    same text around non-empty runs where the masks are.
    """
    if isinstance(recorded, str) and isinstance(live, str) and MASK in recorded:
        return recorded if _fits(recorded.split(MASK), live) else live
    if isinstance(recorded, dict) and isinstance(live, dict):
        return {key: _unmask(recorded.get(key), value) for key, value in live.items()}
    if isinstance(recorded, list) and isinstance(live, list) and len(recorded) == len(live):
        return [_unmask(was, now) for was, now in zip(recorded, live, strict=True)]
    return live


def _fits(parts: list[str], live: str) -> bool:
    """Whether ``live`` is ``parts`` joined by non-empty runs (each part found leftmost: linear time)."""
    if not live.startswith(parts[0]):
        return False
    at = len(parts[0])
    for part in parts[1:-1]:
        found = live.find(part, at + 1)
        if found < 0:
            return False
        at = found + len(part)
    return len(live) - len(parts[-1]) > at and live.endswith(parts[-1])


EXCERPT = 80


def excerpts(was: Any, now: Any, limit: int = EXCERPT) -> tuple[str, str]:
    """Both values clipped to ``limit`` characters, around where their texts first differ.

    Clipped from the start, two long texts that differ late would look the same: then both
    excerpts start a little before the first differing character, and the second says where.
    """
    old, new = _text(was), _text(now)
    if len(old) <= limit and len(new) <= limit:
        return old, new
    at = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), min(len(old), len(new)))
    if at < limit - 3:
        return _clipped(old, 0, limit), _clipped(new, 0, limit)
    start = at - 20
    where = f" (first differs at character {at + 1})"
    return _clipped(old, start, limit), _clipped(new, start, limit) + where


def _text(value: Any) -> str:
    return "(absent)" if value is ABSENT else canonical(value)


def _clipped(text: str, start: int, limit: int) -> str:
    head = "..." if start > 0 else ""
    body = text[start:]
    return head + (body if len(body) <= limit else body[: limit - 3] + "...")
