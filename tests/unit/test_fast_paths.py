"""The per-line fast paths (seal's parts, verify's link check, replay's call) answer exactly
what the exact reader answers, or "don't know": never a second opinion.

Each is checked against the exact path (``parse_line`` with the reference decoder behind it)
on generated records written in several styles, on hostile lines built to slip past one of
the fast proofs (a duplicate key, an integer beyond 64 bits, a colon escape, a string shaped
like orjson's spelling of a small double, raw U+007F, a byte-order mark, deep nesting), and
on every single-byte change of a line.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.unit.test_canonical import awkward_text, decoded_values
from toolreplay.analyses.replay import call_of, fast_call
from toolreplay.chain import ascii_parts, fast_link, fast_parts, link_digest
from toolreplay.errors import InputError
from toolreplay.limits import MAX_DEPTH
from toolreplay.transcript import GENESIS, parse_line


def exact_parts(raw: bytes) -> object:
    try:
        record, _ = parse_line(raw, line=1)
    except InputError:
        return "refused"
    return (record.index, *ascii_parts(record))


def exact_call(raw: bytes) -> object:
    try:
        record, _ = parse_line(raw, line=1)
    except InputError:
        return "refused"
    return call_of(record)


def exact_link(raw: bytes) -> object:
    """(index, prev, digest) when the line is a link whose digest and bytes are its own."""
    try:
        record, value = parse_line(raw, sealed=True, line=1)
    except InputError:
        return "refused"
    digest, line = link_digest(record, value["prev"])
    if digest != value["digest"] or line.encode("ascii") != raw:
        return "broken"
    return record.index, value["prev"], digest


def agree(raw: bytes) -> None:
    """Each fast answer is None or the exact one; a line the exact path refuses gets None."""
    parts, expected_parts = fast_parts(raw), exact_parts(raw)
    assert parts is None or parts == expected_parts, raw
    call, expected_call = fast_call(raw, 1), exact_call(raw)
    assert call is None or call == expected_call, raw
    link, expected_link = fast_link(raw), exact_link(raw)
    assert link is None or link == expected_link, raw


def sealed_line(record: dict[str, object]) -> bytes:
    exact, _ = parse_line(json.dumps(record).encode(), line=1)
    return link_digest(exact, GENESIS)[1].encode("ascii")


records = st.fixed_dictionaries(
    {
        "index": st.integers(min_value=0, max_value=2**40),
        "tool": awkward_text.filter(bool),
        "args": st.dictionaries(awkward_text, decoded_values, max_size=4),
        "response": st.dictionaries(awkward_text, decoded_values, max_size=4),
    },
    optional={
        "fingerprint": st.sampled_from(["0123456789abcdef", "0123456789ABCDEF", "short"]),
        "state": st.dictionaries(awkward_text, awkward_text, max_size=2),
    },
)


def styles(record: dict[str, object]) -> list[bytes]:
    return [
        json.dumps(record).encode(),
        json.dumps(record, separators=(",", ":"), sort_keys=True).encode(),
        json.dumps(record, ensure_ascii=False).encode("utf-8", "surrogatepass"),
    ]


@settings(max_examples=examples(1500), deadline=None)
@given(records)
def test_fast_answers_are_the_exact_ones_on_generated_records(record: dict[str, object]) -> None:
    for raw in styles(record):
        agree(raw)
    try:
        line = sealed_line(record)
    except InputError:
        return  # a record the reader refuses has no sealed line
    agree(line)


def test_the_usual_lines_take_the_fast_path() -> None:
    """Not a vacuous agreement: ordinary lines, ASCII or not, with small doubles and state,
    are answered fast (None would send every line to the slow path)."""
    record = {
        "index": 3,
        "tool": "search",
        "args": {"q": "caf\u00e9 \U0001f680", "limit": 5, "p": 1e-05},
        "response": {"hits": [{"score": 0.8212742919913083, "mtime": 1707725818.0000696, "n": 2**40}]},
    }
    for candidate in (record, {**record, "state": {"f": "x"}, "fingerprint": "0123456789abcdef"}):
        for raw in styles(candidate):
            assert fast_parts(raw) == exact_parts(raw)
            assert fast_call(raw, 1) == exact_call(raw)
        line = sealed_line(candidate)
        assert fast_link(line) == exact_link(line) != "broken"


BASE = b'{"index":0,"tool":"t","args":%s,"response":{"r":1}}'
HOSTILE = [
    BASE % b'{"a":1,"a":2}',  # duplicate key: orjson keeps the last one
    BASE % b'{"a":{"b":1,"b":1}}',
    BASE % b'{"a\\u003a":1,"a":1,"a":2}',  # the lost colon made up by an escaped one
    BASE % b'{"n":18446744073709551616}',  # beyond 64 bits: orjson makes it a double
    BASE % b'{"n":-9223372036854775809}',
    BASE % b'{"s":"x:0.00001,"}',  # a string shaped like orjson's small double
    BASE % b'{"s":"1e-7]"}',
    BASE % b'{"p":0.00001}',
    BASE % b'{"p":1e-7}',
    BASE % b'{"s":"\x7f"}',
    BASE % b'{"s":"\\ud800"}',  # a lone surrogate
    BASE % b'{"s":"\\u00E9"}',
    BASE % b'{"n":1.0e400}',
    BASE % b'{"n":NaN}',
    b"\xef\xbb\xbf" + BASE % b"{}",
    BASE % (b'{"d":' + b"[" * MAX_DEPTH + b"]" * MAX_DEPTH + b"}"),
    BASE % (b'{"d":' + b"[" * (MAX_DEPTH - 1) + b"]" * (MAX_DEPTH - 1) + b"}"),
    b'{"index":true,"tool":"t","args":{},"response":{}}',
    b'{"index":-1,"tool":"t","args":{},"response":{}}',
    b'{"index":0,"tool":"","args":{},"response":{}}',
    b'{"index":0,"tool":"t","args":[],"response":{}}',
    b'{"index":0,"tool":"t","args":{},"response":{},"extra":1}',
    b'{"index":0,"tool":"t","args":{},"response":{},"state":{"f":1}}',
    b'{"index":0,"tool":"t","args":{},"response":{},"prev":"","digest":""}',
    b"[1,2]",
    b'{"index":0}',
]


@pytest.mark.parametrize("raw", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_lines_get_the_exact_answer(raw: bytes) -> None:
    agree(raw)


def hostile_links() -> list[bytes]:
    """Sealed lines that are not canonical in one way or another, or whose digest lies."""
    record = {"index": 0, "tool": "t", "args": {"a": "caf\u00e9", "p": 1e-05}, "response": {"x": 1}}
    good = sealed_line(record)
    return [
        good,
        good.replace(b"1e-05", b"0.00001"),  # orjson's spelling of the same double
        good.replace(b"\\u00e9", b"\\u00E9"),
        good.replace(b"\\u00e9", "\u00e9".encode()),  # raw UTF-8 for an escape
        good.replace(b'{"args"', b'{ "args"'),
        good.replace(b'"x":1', b'"x":1,"x":1'),
        good.replace(b'"args":{', b'"args":{"digest":"' + b"0" * 64 + b'",', 1),
        good[:-1] + b',"tool":"t"}',
    ]


@pytest.mark.parametrize("raw", hostile_links(), ids=range(len(hostile_links())))
def test_hostile_links_get_the_exact_answer(raw: bytes) -> None:
    agree(raw)


def test_every_single_byte_change_of_a_line_gets_the_exact_answer() -> None:
    line = sealed_line(
        {
            "index": 7,
            "tool": "t:x",
            "args": {"a": "caf\u00e9 \U0001f680", "p": 1e-05, "n": 2**40},
            "response": {"x": [0.1, -0.0, 1e16], "s": 'a\\b"c'},
            "state": {"f": "h"},
            "fingerprint": "0123456789abcdef",
        }
    )
    unsealed = json.dumps(json.loads(line)).encode()
    for data in (line, unsealed):
        for position in range(len(data)):
            for flip in (0x01, 0x20):
                tampered = bytearray(data)
                tampered[position] ^= flip
                agree(bytes(tampered))


@settings(max_examples=examples(1500), deadline=None)
@given(decoded_values, decoded_values)
def test_value_digests_are_equal_exactly_when_canonical_texts_are(first: object, second: object) -> None:
    """Replay compares calls by value_digest: the same verdict as comparing canonical texts,
    for values orjson writes and values it cannot (integers beyond 64 bits)."""
    from toolreplay.analyses.replay import value_digest
    from toolreplay.canonical import canonical

    for a, b in ((first, second), (first, first), (first, json.loads(json.dumps(first)))):
        assert (value_digest(a) == value_digest(b)) == (canonical(a) == canonical(b))


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (0.0, -0.0),
        (1, 1.0),
        (True, 1),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
        ("\u00e9", "e\u0301"),
        (2**64, float(2**64)),
        ([1e-05], [0.00001]),
    ],
)
def test_value_digests_on_near_misses(a: object, b: object) -> None:
    from toolreplay.analyses.replay import value_digest
    from toolreplay.canonical import canonical

    assert (value_digest(a) == value_digest(b)) == (canonical(a) == canonical(b))


@pytest.mark.parametrize("state_aware", [False, True])
def test_replay_past_the_dict_finds_what_the_dict_finds(
    monkeypatch: pytest.MonkeyPatch, state_aware: bool
) -> None:
    """Once replay moves its distinct calls from a dict to FirstCalls (past DICT_CALLS), it
    reports the same findings: repeated calls, other responses, mutators in between."""
    import random

    from toolreplay.analyses import replay as replay_module
    from toolreplay.analyses.replay import Call, replay_calls, value_digest

    rng = random.Random(5)
    calls = []
    for index in range(3000):
        n = rng.randrange(400)
        tool = "write_file" if n % 37 == 0 else f"t{n % 5}"
        answer = n + (rng.random() < 0.05)
        key, response = value_digest({"args": {"n": n}, "tool": tool}), value_digest({"v": answer})
        calls.append(Call(index, index + 1, tool, key, response, n % 53 == 0))
    expected = replay_calls(calls, state_aware=state_aware)
    monkeypatch.setattr(replay_module, "DICT_CALLS", 10)
    assert replay_calls(calls, state_aware=state_aware) == expected
    assert expected.findings and any(f.kind == "non-determinism" for f in expected.findings)


def test_a_non_ascii_digest_is_refused_not_a_crash() -> None:
    """A sealed line whose digest decodes to non-ASCII text gets the exact path's refusal."""
    raw = b'{"args":{},"digest":"\\u00e9","index":0,"prev":"' + b"0" * 64 + b'","response":{},"tool":"t"}'
    assert fast_link(raw) is None
    agree(raw)
