"""Canonical encoding vectors and the agreement of the fast and reference decoders."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT, examples
from toolreplay.canonical import canonical, colons_agree, decode, decode_fast, decode_reference
from toolreplay.errors import InputError
from toolreplay.limits import MAX_DEPTH

VECTORS = json.loads((ROOT / "docs" / "canonical-vectors.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("vector", VECTORS, ids=[v["why"] for v in VECTORS])
def test_vector(vector: dict[str, str]) -> None:
    """Each documented vector decodes and re-encodes to exactly its documented canonical text."""
    assert canonical(decode(vector["input"].encode("utf-8"))) == vector["canonical"]


@pytest.mark.parametrize("vector", VECTORS, ids=[v["why"] for v in VECTORS])
def test_vector_is_a_fixed_point(vector: dict[str, str]) -> None:
    """Canonical text decodes back to a value with the same canonical text."""
    text = vector["canonical"]
    assert canonical(decode(text.encode("ascii"))) == text


def test_canonical_is_json_dumps() -> None:
    """canonical() is the json.dumps call of docs/spec.md §1.2, including its refusal of NaN."""
    value = {"b": [1.5, "é", None], "a": {"y": True, "x": -0.0}}
    expected = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    assert canonical(value) == expected
    with pytest.raises(ValueError):
        canonical({"x": math.nan})


json_leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_leaves,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=examples(400), deadline=None)
@given(value=json_values, spaced=st.booleans(), ascii_only=st.booleans())
def test_fast_and_reference_decoders_agree(value: object, spaced: bool, ascii_only: bool) -> None:
    """On any JSON text, the fast path either declines or gives the reference decoder's value."""
    text = json.dumps(value, ensure_ascii=ascii_only, indent=1 if spaced else None)
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:
        return  # lone surrogates from st.text() are refused on both paths; see the next test
    reference = canonical(decode_reference(raw))
    fast = decode_fast(raw)
    if fast is not None:
        assert canonical(fast) == reference
    assert canonical(decode(raw)) == reference


@settings(max_examples=examples(300), deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(["{}", "{:e}", "{:.17g}", "{!r}"]))
def test_float_texts_parse_identically(number: float, style: str) -> None:
    """Float texts in many spellings decode to the same double through both decoders."""
    raw = ('{"x":' + style.format(number) + "}").encode()
    fast = decode_fast(raw)
    reference = decode_reference(raw)
    if fast is not None:
        assert canonical(fast) == canonical(reference)


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b'{"a":1,"a":2}', 'duplicate key "a"'),
        (b'{"x":{"a":1,"a":1}}', 'duplicate key "a"'),
        (b'{"a":NaN}', "NaN is not valid JSON"),
        (b'{"a":-Infinity}', "-Infinity is not valid JSON"),
        (b'{"a":1e400}', "number 1e400 is too large"),
        (b'{"a":"\\ud800"}', "lone surrogate"),
        (b'{"a":"\\udc00\\ud800"}', "lone surrogate"),
        (b'{"a":"\xff"}', "invalid UTF-8 at byte 7"),
        (b"\xef\xbb\xbf{}", "byte-order mark"),
        (b'{"a":' + b"1" * 5000 + b"}", "integer with 5000 digits"),
        (b"[" * 10_000 + b"]" * 10_000, f"nesting is deeper than {MAX_DEPTH} levels"),
        (b'{"a":}', "invalid JSON"),
    ],
)
def test_refusals(raw: bytes, problem: str) -> None:
    """Each strict-decoding rule refuses with a message naming the problem."""
    with pytest.raises(InputError) as info:
        decode(raw)
    assert problem in str(info.value)


def test_big_integers_keep_their_digits() -> None:
    """Integers past 64 bits stay exact (orjson would make them doubles)."""
    raw = b'{"a":123456789012345678901234567890,"b":-9223372036854775809}'
    assert decode(raw) == {"a": 123456789012345678901234567890, "b": -9223372036854775809}


def test_depth_limit_is_exact() -> None:
    """MAX_DEPTH levels are accepted, one more is refused; brackets in strings do not count."""
    assert decode(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH) is not None
    with pytest.raises(InputError):
        decode(b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1))
    assert decode(b'["' + b"[{" * 500 + b'"]') == ["[{" * 500]


def test_colon_check_sees_duplicates_and_ignores_string_colons() -> None:
    """Colons inside strings balance out; a dropped duplicate key does not."""
    raw = b'{"a:b":"c\\":d","e":[":",{"f":"\\\\"}]}'
    assert colons_agree(raw, canonical(decode(raw)).count(":"))
    duplicate = b'{"a":1,"a":2}'
    assert not colons_agree(duplicate, canonical({"a": 2}).count(":"))


@pytest.mark.parametrize(
    "raw",
    [b'{"x":1,"x":"\\u003a"}', b'{"x":1,"x":"\\u003A"}', b'{"a":{"x":1,"x":"\\u003a"},"b":2}'],
)
def test_duplicate_hidden_by_an_escaped_colon(raw: bytes) -> None:
    """A duplicate whose lost colon is made up by a \\u003a escape is still refused."""
    assert decode_fast(raw) is not None  # orjson alone would accept it
    with pytest.raises(InputError, match="duplicate key"):
        decode(raw)
    from toolreplay.transcript import parse_line

    with pytest.raises(InputError, match="duplicate key"):
        parse_line(b'{"index":0,"tool":"t","args":' + raw + b',"response":{}}')


# --- the faster encoder: byte-identical to canonical() on decoded values ---------------------

from toolreplay.canonical import canonical_decoded  # noqa: E402

awkward_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",))  # decoded strings hold no lone surrogates
    | st.sampled_from(["\x7f", "\u2028", "\u2029", "\ufeff", "\U0001f600", "\x00", "\x1f", '"', "\\", "/"])
    # the stand-ins canonical.ascii_text swaps quotes and backslashes for while it escapes
    | st.sampled_from(["`", "~", "^", "|", "#", "$"]),
    max_size=12,
)
awkward_floats = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [0.0, -0.0, 1e-4, 1e-5, 9.99e-5, 1e-7, 5e-324, 1e15, 1e16, 1e21, 1e22, 1.7976931348623157e308, 0.1]
)
decoded_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.integers()  # beyond 64 bits: orjson refuses and canonical() takes over
    | awkward_floats
    | awkward_text,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(awkward_text, inner, max_size=6),
    max_leaves=40,
)


@settings(max_examples=examples(3000), deadline=None)
@given(decoded_values)
def test_canonical_decoded_is_byte_identical(value: object) -> None:
    """On a large generated corpus the faster encoder writes exactly canonical()'s bytes."""
    assert canonical_decoded(value) == canonical(value)


@pytest.mark.parametrize("vector", VECTORS, ids=[v["why"] for v in VECTORS])
def test_canonical_decoded_on_vectors(vector: dict[str, str]) -> None:
    """The faster encoder writes every documented vector exactly."""
    assert canonical_decoded(decode(vector["input"].encode("utf-8"))) == vector["canonical"]


@pytest.mark.parametrize("mix", ["ascii", "realistic", "non-ascii-heavy"])
def test_canonical_decoded_on_the_benchmark_corpus(mix: str) -> None:
    """A thousand records of each bench/generate.py mix (long doubles, 40-bit integers, raw and
    escaped non-ASCII, deep nesting) decode to the reference's value and encode identically
    both ways."""
    import random

    from bench.generate import MIXES, record

    from toolreplay.canonical import decode_reference

    rng = random.Random(11)
    for index in range(1000):
        value = record(rng, index, MIXES[mix], varied=mix != "ascii")
        raw = json.dumps(value, ensure_ascii=index % 2 == 0).encode("utf-8")
        decoded = decode(raw)
        assert repr(decoded) == repr(decode_reference(raw))
        assert canonical_decoded(decoded) == canonical(value)


@pytest.mark.parametrize(
    "raw",
    [
        b"12345678901234567890",
        b"-12345678901234567890",
        b"[1,12345678901234567890]",
        b'{"a": 12345678901234567890}',
        b'{"a":\t-12345678901234567890}',
        b'{"a":"0.12345678901234567890","b":[12345678901234567890]}',
        b"[0.00012345678901234567,18446744073709551616]",
    ],
)
def test_every_long_integer_goes_to_the_reference_decoder(raw: bytes) -> None:
    """An integer of 19 digits or more, wherever it stands (line start, after "-", "[", ":",
    white space, beside a double with a long fraction), is decoded by the reference decoder,
    so it keeps its digits; orjson would make a double of it."""
    from toolreplay.canonical import decode_fast, decode_reference

    assert decode_fast(raw) is None
    assert decode(raw) == decode_reference(raw)


@pytest.mark.parametrize(
    "raw",
    [
        b"[0.00042169835447674430]",
        b'{"p": 1.0000000000000000000001}',
        b"[12345678901234567890.5]",
        b'{"id": "123456789012345678901234567890"}',
    ],
)
def test_long_digit_runs_of_doubles_and_strings_stay_on_the_fast_decoder(raw: bytes) -> None:
    """A double's long fraction or integer part, and digits inside a string, are not integers:
    orjson decodes them exactly, and the line stays on the fast path."""
    from toolreplay.canonical import decode_fast, decode_reference

    fast = decode_fast(raw)
    assert fast is not None
    assert repr(fast) == repr(decode_reference(raw))


@settings(max_examples=examples(1500), deadline=None)
@given(decoded_values, st.sampled_from(["canonical", "spaced", "raw-utf8", "unsorted"]))
def test_is_canonical_text_matches_the_definition(value: object, style: str) -> None:
    """is_canonical_text(raw, value) is True exactly when raw == canonical(value)."""
    from toolreplay.canonical import is_canonical_text

    if style == "canonical":
        raw = canonical(value).encode("ascii")
    elif style == "spaced":
        raw = json.dumps(value, sort_keys=True).encode()
    elif style == "raw-utf8":
        raw = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
            "utf-8", "replace"
        )
    else:
        raw = json.dumps(value, separators=(",", ":")).encode()
    assert is_canonical_text(raw, value) == (raw == canonical(value).encode("ascii"))


def test_digit_runs_inside_strings_keep_the_fast_decoder() -> None:
    """Long digit runs inside strings (digests, ids) do not send a line to the slow decoder."""
    assert decode_fast(b'{"prev":"' + b"0" * 64 + b'","n":1}') is not None
    assert decode_fast(b'{"id":"12345678901234567890123","n":12345678901234567890123}') is None


def _depth_by_count(raw: bytes) -> int:
    """The nesting depth as a running count of brackets outside strings (the plain definition)."""
    import re

    depth = deepest = 0
    for byte in re.sub(rb'"[^"\\]*(?:\\.[^"\\]*)*"', b"", raw):
        if byte in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        elif byte in b"]}":
            depth -= 1
    return deepest


nestable = st.recursive(
    st.none() | st.integers() | st.text(alphabet='[]{}"\\ab'),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(alphabet='[]{}"\\ab'), inner, max_size=4)
    ),
    max_leaves=60,
)


@settings(max_examples=examples(400), deadline=None)
@given(nestable, st.integers(min_value=0, max_value=12))
def test_nesting_depth_is_the_running_count(value: object, limit: int) -> None:
    """The pass-counting depth equals the running bracket count, and stops past a limit."""
    from toolreplay.canonical import nesting_depth

    raw = json.dumps(value).encode()
    depth = _depth_by_count(raw)
    assert nesting_depth(raw) == depth
    assert min(nesting_depth(raw, limit=limit), limit + 1) == min(depth, limit + 1)


def test_canonical_refuses_values_the_reader_would_refuse() -> None:
    """canonical() of a value deeper than MAX_DEPTH is an InputError, never a RecursionError,
    at every depth (below and beyond the interpreter's recursion limit)."""
    for depth in (MAX_DEPTH + 1, 900, 5000, 100_000):
        value: list[object] = []
        for _ in range(depth - 1):
            value = [value]
        with pytest.raises(InputError, match=f"nesting is deeper than {MAX_DEPTH} levels"):
            canonical(value)
    value = []
    for _ in range(MAX_DEPTH - 1):
        value = [value]
    assert canonical(value) == "[" * MAX_DEPTH + "]" * MAX_DEPTH


def test_a_deep_document_names_the_line_of_the_first_bracket_too_deep() -> None:
    """A whole document nested too deep names the line where the limit is passed."""
    raw = b'{\n"a":\n' + b"[\n" * MAX_DEPTH + b"]" * MAX_DEPTH + b"\n}"
    with pytest.raises(InputError) as info:
        decode(raw)
    assert getattr(info.value.__cause__, "lineno", None) == 2 + MAX_DEPTH


@pytest.mark.parametrize(
    "value",
    [
        {"p": 1.234e-05, "q": [5e-07, -9.99e-05, 1.5e-300, 0.0001, 10.00001]},
        [1e-05],
        1e-07,
        {"text": "x:0.00001,", "p": 1e-05},  # a string holding a small double's orjson spelling
        {"[0.00001]": 2e-05, "k": "[5e-7]"},
        {"a": ",0.0000123}", "b": "e-5", "c": [-0.0, 0.0, 1e16, 1e-4]},
    ],
)
def test_small_doubles_are_written_as_python_writes_them(value: object) -> None:
    """Doubles below 1e-4 (which orjson writes as 0.00001234 or 5e-7) come out as repr
    writes them, and text of that shape inside a string is left alone."""
    from toolreplay.canonical import is_canonical_text

    expected = canonical(value)
    assert canonical_decoded(value) == expected
    raw = expected.encode("ascii")
    assert is_canonical_text(raw, value)
    orjson_spelling = raw.replace(b"e-0", b"e-")
    assert orjson_spelling == raw or not is_canonical_text(orjson_spelling, value)


@pytest.mark.parametrize("stand_ins", ["", "`", "`~", "`~^", "`~^|", "`~^|#", "`~^|#$"])
def test_ascii_text_with_every_stand_in_taken(stand_ins: str) -> None:
    """ascii_text swaps quotes and backslashes for a printable pair the text does not hold:
    when the text holds one of each pair, the next pair serves, and then the slow way."""
    from toolreplay.canonical import ascii_text, sorted_dump

    value = {"q": 'a "quoted" \\ caf\u00e9 \U0001f680 \x7f' + stand_ins, stand_ins: ["\\u00e9", "\u2028"]}
    assert ascii_text(sorted_dump(value)) == canonical(value).encode("ascii")
