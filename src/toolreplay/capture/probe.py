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
from dataclasses import dataclass
from typing import Any

from toolreplay.analyses.baseline import first_difference
from toolreplay.analyses.volatile import Volatile
from toolreplay.canonical import canonical
from toolreplay.capture.redact import MASK
from toolreplay.contracts.text import text_drift_message
from toolreplay.escape import quote
from toolreplay.findings import Finding, sort_findings
from toolreplay.library.errors import ABSENT
from toolreplay.transcript import Record, make_record

VERDICTS: tuple[str, ...] = ("stable", "silent-drift", "unavailable", "not-probed")


@dataclass(frozen=True, slots=True, kw_only=True)
class Failure:
    """A call that got no answer to compare (the connection failed, a timeout)."""

    problem: str


#: A live answer: the response object (a JSON-RPC error as ``{"error": {code, message}}``) or a failure.
Answer = dict[str, Any] | Failure


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeResult:
    """Verdicts by tool (name order), the findings, and how many calls were asked."""

    calls: int
    asked: int
    verdicts: Mapping[str, str]
    findings: tuple[Finding, ...]


def plan(records: Sequence[Record], mutators: frozenset[str], listed: frozenset[str]) -> list[Record]:
    """The first record of each distinct call worth asking: a listed, non-mutating tool, args not redacted."""
    seen: set[str] = set()
    out = []
    for record in records:
        if record.call_key in seen or record.tool in mutators or record.tool not in listed:
            continue
        seen.add(record.call_key)
        if MASK not in record.canon_args:
            out.append(record)
    return out


def judge(
    records: Sequence[Record],
    *,
    live: Mapping[str, str],
    answers: Mapping[str, Answer],
    mutators: frozenset[str],
    path: str,
    texts: Mapping[str, str] | None = None,
    explain: Mapping[str, str] | None = None,
    volatile: Volatile | None = None,
) -> ProbeResult:
    """Verdicts and findings from the live fingerprints (tool -> fingerprint) and answers (by call key).

    ``texts`` (tool -> live contract-text digest) turns a recorded ``text_digest`` the server no
    longer gives into a ``contract-text-drift``; ``explain`` says what changed, when a lock knows.
    Under ``volatile`` rules a recorded and a live answer are compared with their volatile values
    masked (counted for ``path``).
    """
    findings: list[Finding] = []
    verdicts: dict[str, str] = {}
    drifted: set[str] = set()
    findings += _text_drift(records, texts or {}, explain or {}, path)
    for record in records:
        tool = record.tool
        if record.fingerprint is not None and tool not in drifted and live.get(tool) != record.fingerprint:
            drifted.add(tool)
            now = f"is now {live[tool]}" if tool in live else "is no longer listed"
            findings.append(
                Finding(
                    kind="tool-drift",
                    index=record.index,
                    tool=tool,
                    message=f"tool {quote(tool)} was recorded with fingerprint {record.fingerprint}, {now}",
                    path=path,
                    line=record.line or None,
                )
            )
    for tool in sorted({record.tool for record in records}):
        of_tool = [record for record in records if record.tool == tool]
        if tool in mutators:
            verdicts[tool] = "not-probed"
        elif tool not in live:
            verdicts[tool] = "unavailable"
        else:
            verdicts[tool] = _verdict(of_tool, answers, path, findings, volatile)
    return ProbeResult(
        calls=len(records),
        asked=len(answers),
        verdicts=verdicts,
        findings=tuple(sort_findings(findings)),
    )


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
    answers: Mapping[str, Answer],
    path: str,
    findings: list[Finding],
    volatile: Volatile | None = None,
) -> str:
    asked = [record for record in records if record.call_key in answers]
    if not asked:
        return "not-probed"
    failed = False
    done: set[str] = set()
    for record in asked:
        if record.call_key in done:
            continue
        done.add(record.call_key)
        answer = answers[record.call_key]
        if isinstance(answer, Failure):
            failed = True
            continue
        recorded = _tool_answer(record.response)
        answer = _tool_answer(answer)
        redacted = MASK in record.canon_response
        if redacted:
            answer = _unmask(recorded, answer)
        if volatile:
            recorded, answer, same = _masked(volatile, record, recorded, answer, path)
            if same:
                continue
        elif canonical(answer) == canonical(recorded):
            continue
        difference = first_difference(recorded, answer)
        pointer, was, now = difference if difference is not None else ("/", recorded, answer)
        # a redacted recording held a secret: the live answer may hold it anywhere, so it is not shown
        live = "(not shown: the recorded response is redacted)" if redacted else _clip(now)
        findings.append(
            Finding(
                kind="silent-drift",
                index=record.index,
                tool=record.tool,
                message=(
                    f"tool {quote(record.tool)} answered the call recorded at index {record.index}"
                    f" differently live, first at {quote(pointer)}: recorded {_clip(was)}, live {live}"
                ),
                path=path,
                line=record.line or None,
            )
        )
        return "silent-drift"
    return "unavailable" if failed else "stable"


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


def _clip(value: Any, limit: int = 80) -> str:
    if value is ABSENT:
        return "(absent)"
    text = canonical(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
