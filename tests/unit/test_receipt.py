"""Determinism receipts without processes: the canonical answer digest, the receipt's records and
its reader, and probe's judgement of N answers (at once for a tool declared deterministic, and
against a receipt's digests)."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from toolreplay.capture.probe import Failure, Receipted, Rules, Unjudged, answer_digest, judge
from toolreplay.capture.receipt import read_receipt, receipt_records, write_receipt
from toolreplay.capture.serve import BrokenRecordingError
from toolreplay.errors import InputError
from toolreplay.transcript import make_record
from toolreplay.volatile_rules import Rule

NOW = make_record(index=0, tool="now", args={"zone": "utc"}, response={"content": []}, fingerprint="0" * 16)
LIVE = {"now": "0" * 16}


def text(value: str, **extra: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}], **extra}


def sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def test_the_digest_is_of_the_canonical_answer_as_probe_compares_it() -> None:
    """SHA-256 of the canonical JSON without the envelope (_meta, resultType; isError false when
    absent); of the shape for a tool digested by shape; of the comparison text under volatile rules."""
    plain = answer_digest(NOW, text("a"), shape_only=False, rules=())
    assert plain == sha('{"content":[{"text":"a","type":"text"}],"isError":false}')
    stamped = text("a", _meta={"trace": "x"}, resultType="complete", isError=False)
    assert answer_digest(NOW, stamped, shape_only=False, rules=()) == plain
    assert answer_digest(NOW, text("b"), shape_only=True, rules=()) == sha(
        '{"content":[{"text":"string","type":"text"}],"isError":false}'
    )
    rule = Rule(tool="now", at="/response/content/*/text", pattern="[0-9]+")
    one, two = (answer_digest(NOW, text(f"t {n}"), shape_only=False, rules=(rule,)) for n in (1, 22))
    assert one == two != answer_digest(NOW, text("u 1"), shape_only=False, rules=(rule,))


def test_a_tool_declared_deterministic_that_answers_two_digests_is_silent_drift_at_once() -> None:
    """Two different answers in one probe fail a tool the lock declares deterministic, naming both
    digests and where they differ, even when each matches the recording as redacted; a tool not
    declared so is judged against the recording alone."""
    record = make_record(index=0, tool="now", args={}, response=text("[REDACTED]"), fingerprint="0" * 16)
    answers = {0: (text("a"), text("b"), text("a"))}
    declared = Rules(readonly=frozenset({"now"}), deterministic=frozenset({"now"}))
    result = judge([record], live=LIVE, answers=answers, skipped={}, rules=declared, path="run.jsonl")
    digests = sorted(answer_digest(record, text(v), shape_only=False, rules=()) for v in "ab")
    assert dict(result.verdicts) == {"now": "silent-drift"}
    assert [f.message for f in result.findings] == [
        "tool 'now' is declared deterministic but answered the call recorded at index 0 with 2 different"
        f" answers in 3 asks (2 digests {digests[0][:16]}, {digests[1][:16]}), first at '/content/0/text':"
        ' "a", then "b"'
    ]
    undeclared = Rules(readonly=frozenset({"now"}))
    plain = judge([record], live=LIVE, answers=answers, skipped={}, rules=undeclared, path="run.jsonl")
    assert (dict(plain.verdicts), plain.findings) == ({"now": "stable"}, ())


def test_probe_against_a_receipt_compares_the_set_of_digests() -> None:
    """The same digests are stable; another set is silent drift naming the arguments and both sets;
    a call with an answer missing is unavailable, one probe refused to judge is not compared."""
    one = answer_digest(NOW, text("1"), shape_only=False, rules=())
    receipt = {0: Receipted(digests=(one,), answers=2)}
    rules = Rules(readonly=frozenset({"now"}))

    def run(*got: Any) -> Any:
        return judge([NOW], live=LIVE, answers={0: got}, skipped={}, rules=rules, path="r", receipt=receipt)

    assert dict(run(text("1"), text("1")).verdicts) == {"now": "stable"}
    drift = run(text("1"), text("2"))
    two = answer_digest(NOW, text("2"), shape_only=False, rules=())
    both = ", ".join(sorted((one[:16], two[:16])))
    assert [(f.index, f.kind, f.message) for f in drift.findings] == [
        (
            0,
            "silent-drift",
            'tool \'now\' answered the call with args {"zone":"utc"} differently: the receipt holds digest'
            f" {one[:16]} over 2 answers, now 2 digests {both} over 2",
        )
    ]
    assert dict(run(text("1"), Failure(problem="no answer within 1 s")).verdicts) == {"now": "unavailable"}
    refused = run(text("1"), Unjudged(reason="the server asked the client 'roots/list'"))
    assert (dict(refused.verdicts), dict(refused.notes)) == (
        {"now": "not-probed"},
        {"now": "the server asked the client 'roots/list'"},
    )


def test_a_receipt_holds_the_digests_of_each_fully_answered_call_and_reads_back(tmp_path: Path) -> None:
    """receipt_records keeps the recorded args, the live fingerprint and the sorted digest set, and
    leaves out a call that lacked an answer; sealed, the file reads back as the same receipt."""
    other = make_record(index=1, tool="gone", args={}, response={})
    answers: dict[int, Any] = {0: (text("b"), text("a"), text("b")), 1: (text("x"), Failure(problem="p"))}
    records = receipt_records(
        [NOW, other],
        answers,
        fingerprints={"now": "1" * 16, "gone": "2" * 16},
        texts={"now": None},
        server=("clock-server", "1.2.0"),
        shape_only=frozenset(),
        rules={},
    )
    digests = sorted(answer_digest(NOW, text(v), shape_only=False, rules=()) for v in "ab")
    assert [r.fields() for r in records] == [
        {
            "index": 0,
            "tool": "now",
            "args": {"zone": "utc"},
            "fingerprint": "1" * 16,
            "response": {
                "answers": 3,
                "compared": "answer",
                "digests": digests,
                "server": {"name": "clock-server", "version": "1.2.0"},
                "volatile": [],
            },
        }
    ]
    path = tmp_path / "r.sealed.jsonl"
    out = io.StringIO()
    write_receipt(out, records)
    path.write_text(out.getvalue(), encoding="utf-8")
    read, receipt = read_receipt(str(path))
    assert [r.fields() for r in read] == [r.fields() for r in records]
    assert receipt == {0: Receipted(digests=tuple(digests), answers=3)}


def _sealed(tmp_path: Path, response: dict[str, Any], name: str = "r.sealed.jsonl") -> str:
    out = io.StringIO()
    write_receipt(out, [make_record(index=0, tool="now", args={}, response=response)])
    path = tmp_path / name
    path.write_text(out.getvalue(), encoding="utf-8")
    return str(path)


GOOD: dict[str, Any] = {
    "answers": 2,
    "compared": "answer",
    "digests": ["a" * 64],
    "server": {"name": "s", "version": "1"},
    "volatile": [],
}


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"answers": 2.0}, "not a probe receipt: answers must be an integer (at /response/answers)"),
        ({"digests": ["b" * 64, "a" * 64]}, "digests must be sorted, at most one per answer"),
        ({"digests": ["A" * 64]}, "does not match '^[0-9a-f]{64}$' (at /response/digests/0)"),
        ({"compared": "values"}, "not a probe receipt: 'values' is not one of ['answer', 'shape']"),
        ({"volatile": [{"tool": "now", "at": "/x"}]}, "(at /response/volatile/0/at)"),
        ({"extra": 1}, "Additional properties are not allowed ('extra' was unexpected) (at /response)"),
    ],
)
def test_a_file_that_is_not_a_receipt_is_refused_naming_file_and_line(
    tmp_path: Path, change: dict[str, Any], problem: str
) -> None:
    """Every part of a receipt's response is checked; a refusal names the file, the line and where."""
    path = _sealed(tmp_path, {**GOOD, **change})
    with pytest.raises(InputError) as caught:
        read_receipt(path)
    assert str(caught.value).startswith(f"{path}:1: not a probe receipt: ")
    assert problem in str(caught.value)


def test_a_receipt_must_be_sealed_hold_a_call_and_verify(tmp_path: Path) -> None:
    """A receipt not named *.sealed.jsonl, or empty, is a usage error; a tampered one a broken chain."""
    plain = tmp_path / "r.jsonl"
    plain.write_text("", encoding="utf-8")
    with pytest.raises(InputError, match=r"its name must end in \.sealed\.jsonl"):
        read_receipt(str(plain))
    empty = tmp_path / "e.sealed.jsonl"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(InputError, match="the receipt holds no calls"):
        read_receipt(str(empty))
    path = Path(_sealed(tmp_path, GOOD))
    path.write_text(path.read_text(encoding="utf-8").replace("a" * 64, "b" * 64), encoding="utf-8")
    with pytest.raises(BrokenRecordingError, match="the chain is broken at index 0"):
        read_receipt(str(path))
    assert json.loads(path.read_text(encoding="utf-8"))["response"]["digests"] == ["b" * 64]
