"""Determinism receipts: what ``probe --repeat N -o RECEIPT`` writes and ``probe --against
RECEIPT`` reads (docs/capture.md, "Determinism receipts").

A receipt is a sealed transcript (docs/spec.md §1.3) named ``*.sealed.jsonl``, one record per
call the probe asked N times and got N answers to: ``tool`` and ``args`` as recorded, the tool's
live ``fingerprint`` and ``text_digest``, and as ``response`` what the answers gave::

    {"answers": 3, "compared": "answer", "digests": ["<sha256 hex>"],
     "server": {"name": "mcp-time", "version": "1.2.0"}, "volatile": []}

``digests`` are the distinct canonical digests of the answers (:func:`answer_digest`), sorted;
``compared`` says whether the answers or their shapes were digested (a tool the lock declares
not deterministic); ``volatile`` holds the configuration's rules masked before digesting, so a
receipt is checked the way it was written, whatever the configuration says by then.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import IO, Any

from toolreplay.analyses.suggest import Suggestion, suggest
from toolreplay.analyses.volatile import Volatile
from toolreplay.capture.probe import Answer, Failure, Receipted, answer_digest, tool_answer, tool_rules
from toolreplay.capture.serve import load_records
from toolreplay.chain import seal
from toolreplay.ecma import EcmaValidator
from toolreplay.errors import InputError
from toolreplay.files import SEALED_SUFFIX
from toolreplay.limits import MAX_REPEAT
from toolreplay.locate import pointer_of
from toolreplay.transcript import Record, make_record
from toolreplay.volatile_rules import Rule, rule_problem

#: what a receipt record's ``response`` holds (the reader checks it with jsonschema)
RESPONSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["answers", "compared", "digests", "server", "volatile"],
    "additionalProperties": False,
    "properties": {
        "answers": {"type": "integer", "minimum": 2, "maximum": MAX_REPEAT},
        "compared": {"enum": ["answer", "shape"]},
        "digests": {
            "type": "array",
            "minItems": 1,
            "uniqueItems": True,
            "items": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
        },
        "server": {
            "type": "object",
            "required": ["name", "version"],
            "additionalProperties": False,
            "properties": {"name": {"type": "string"}, "version": {"type": "string"}},
        },
        "volatile": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["tool", "at"],
                "additionalProperties": False,
                "properties": {
                    "tool": {"type": "string", "minLength": 1},
                    "at": {"type": "string"},
                    "pattern": {"type": "string"},
                },
            },
        },
    },
}

#: how a usage error names a receipt that is not named as a sealed transcript
NOT_SEALED = f"a receipt is a sealed transcript: its name must end in {SEALED_SUFFIX}"


def receipt_records(
    asked: Sequence[Record],
    answers: Mapping[int, Sequence[Answer]],
    *,
    fingerprints: Mapping[str, str],
    texts: Mapping[str, str | None],
    server: tuple[str, str],
    shape_only: frozenset[str],
    rules: Mapping[str, tuple[Rule, ...]],
) -> list[Record]:
    """One receipt record per asked call that got an answer every time it was asked (a call
    without one, or one whose answers probe does not compare, proves nothing and is left out)."""
    out: list[Record] = []
    for record in asked:
        got = answers.get(record.index, ())
        if not got or not all(isinstance(answer, dict) for answer in got):
            continue
        shape = record.tool in shape_only
        out.append(
            make_record(
                index=len(out),
                tool=record.tool,
                args=record.args,
                response=_response(record, got, shape, () if shape else rules.get(record.tool, ()), server),
                fingerprint=fingerprints.get(record.tool),
                text_digest=texts.get(record.tool),
            )
        )
    return out


def _response(
    record: Record, got: Sequence[Answer], shape: bool, rules: tuple[Rule, ...], server: tuple[str, str]
) -> dict[str, Any]:
    """A receipt record's response: the set of the call's answers' digests, and how they were taken."""
    digests = {answer_digest(record, a, shape_only=shape, rules=rules) for a in got if isinstance(a, dict)}
    return {
        "answers": len(got),
        "compared": "shape" if shape else "answer",
        "digests": sorted(digests),
        "server": {"name": server[0], "version": server[1]},
        "volatile": [_rule_json(rule) for rule in rules],
    }


def rules_by_tool(volatile: Volatile | None, tools: Iterable[str]) -> dict[str, tuple[Rule, ...]]:
    """The configuration's volatile rules per tool (in its order)."""
    return {tool: tool_rules(volatile, tool) for tool in tools}


def _rule_json(rule: Rule) -> dict[str, str]:
    out = {"tool": rule.tool, "at": rule.at}
    if rule.pattern is not None:
        out["pattern"] = rule.pattern
    return out


def write_receipt(out: IO[str], records: Iterable[Record]) -> None:
    """The records sealed into a chain, one link a line (as ``toolreplay seal`` writes them)."""
    for _, line in seal(records):
        out.write(line + "\n")


def read_receipt(path: str) -> tuple[tuple[Record, ...], dict[int, Receipted]]:
    """A receipt's records (its chain verified: a broken one raises
    :class:`~toolreplay.capture.serve.BrokenRecordingError`) and what each holds, by index.
    Anything else that is not a receipt is an ``InputError`` naming file and line."""
    if not path.endswith(SEALED_SUFFIX):
        raise InputError(NOT_SEALED, path=path)
    records = load_records(path)
    if not records:
        raise InputError("the receipt holds no calls: it proves nothing", path=path)
    return records, {record.index: _receipted(record, path) for record in records}


def _receipted(record: Record, path: str) -> Receipted:
    response = record.response
    _check_schema(record, path)
    if type(response["answers"]) is not int:  # JSON Schema's integer takes 3.0 too
        raise _refused("answers must be an integer", record, path, "/response/answers")
    if response["digests"] != sorted(response["digests"]) or len(response["digests"]) > response["answers"]:
        raise _refused("digests must be sorted, at most one per answer", record, path, "/response/digests")
    return Receipted(
        digests=tuple(response["digests"]),
        answers=response["answers"],
        shape_only=response["compared"] == "shape",
        rules=_rules(record, path),
    )


def _check_schema(record: Record, path: str) -> None:
    """Refuse a receipt record whose response is not as :data:`RESPONSE_SCHEMA` says (the first error)."""
    errors = sorted(
        EcmaValidator(RESPONSE_SCHEMA).iter_errors(record.response), key=lambda e: list(e.absolute_path)
    )
    if errors:
        first = errors[0]
        pointer = "/response" + pointer_of(first.absolute_path).rstrip("/")
        raise InputError(
            f"not a probe receipt: {first.message}", path=path, line=record.line, pointer=pointer
        )


def _rules(record: Record, path: str) -> tuple[Rule, ...]:
    """The volatile rules a receipt record was digested with; refused when one is not a valid rule."""
    rules = tuple(
        Rule(tool=r["tool"], at=r["at"], pattern=r.get("pattern")) for r in record.response["volatile"]
    )
    for number, rule in enumerate(rules):
        problem = rule_problem(rule)
        if problem is not None:
            raise _refused(problem[1], record, path, f"/response/volatile/{number}/{problem[0]}")
    return rules


def _refused(problem: str, record: Record, path: str, pointer: str) -> InputError:
    return InputError(f"not a probe receipt: {problem}", path=path, line=record.line, pointer=pointer)


def repeat_of(receipt: Mapping[int, Receipted]) -> int:
    """How many times ``--against`` asks each call without ``--repeat``: the receipt's count
    (the largest, should its calls differ)."""
    return max(receipted.answers for receipted in receipt.values())


def suggested(
    records: Sequence[Record], repeated: Mapping[str, Sequence[Answer]]
) -> dict[str, list[Suggestion]]:
    """Per tool, the volatile rules its repeated answers call for (``probe --suggest-volatile``):
    one rule per place, with the values of the first call that needed it."""
    found: dict[str, list[Suggestion]] = {}
    for record in records:
        answers = repeated.get(record.call_key)
        if answers and not any(isinstance(answer, Failure) for answer in answers):
            _add_new(found.setdefault(record.tool, []), record.tool, answers)
    return found


def _add_new(mine: list[Suggestion], tool: str, answers: Sequence[Answer]) -> None:
    """Add to ``mine`` the rules ``answers`` call for at places ``mine`` has no rule for yet."""
    for suggestion in suggest(tool, [tool_answer(a) for a in answers if isinstance(a, dict)]):
        if all((s.rule, s.at) != (suggestion.rule, suggestion.at) for s in mine):
            mine.append(suggestion)
