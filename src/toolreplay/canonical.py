"""Strict JSON decoding and the canonical encoding.

``canonical(x)`` is the one definition every digest and comparison in toolreplay
rests on (docs/spec.md §1.2): Python's ``json.dumps`` with sorted keys, compact separators,
ASCII-only output and no NaN/Infinity. ``docs/canonical-json.md`` spells it out for
other languages and ``tests/unit/test_canonical.py`` holds its test vectors.

Decoding is strict: it refuses what RFC 8259 leaves undefined (duplicate keys, lone
surrogates) and what Python would silently accept (``NaN``, ``1e400`` turning into
``inf``). Two decoders implement the same rules:

* the *reference* decoder is the standard library's, with hooks that refuse;
* the *fast* decoder is orjson, used only where it provably gives the same value.
  orjson turns integers beyond 64 bits into floats, so any line holding a run of 19
  or more digits goes to the reference decoder; orjson keeps the last of duplicate
  keys, so callers compare the number of ``:`` in the raw line and in the canonical
  re-encoding (``colons_agree``) and fall back to the reference decoder when they
  differ: without duplicates every structural colon survives and string colons are
  copied as they are; a dropped duplicate loses at least its own colon. The one way
  to gain a colon, a ``\u003a`` escape, sends the line to the reference decoder.
  Anything orjson refuses is decoded again by the reference decoder, which either
  names the problem precisely or (for the few inputs orjson is stricter about than
  the rules here) accepts it.
"""

from __future__ import annotations

import json
import math
import re
from json.encoder import encode_basestring_ascii as _encode_ascii
from typing import Any

import orjson

from toolreplay.errors import InputError
from toolreplay.limits import MAX_DEPTH, MAX_INT_DIGITS, MAX_RECORD_BYTES

_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
# Only for detecting lone surrogates: encoding to UTF-8 refuses them.
_RAW_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)

_BOM = b"\xef\xbb\xbf"
# digits -> "0", what may continue a number ("." and exponents) -> ".", everything else -> " ":
# a run of 19 digits that starts a number is then a plain substring search, several times
# faster than a regex scan on every line
_DIGIT_MAP = bytes(0x30 if 0x30 <= b <= 0x39 else 0x2E if b in b".eE" else 0x20 for b in range(256))
_LONG_RUN = b"0" * 19
_LONG_START = b" " + _LONG_RUN
# An integer token of 19 digits or more: a digit run that no "." precedes and no ".", "e" or
# "E" follows. The long runs of doubles (the fraction of 0.00042169835447674430, the integer
# part of 12345678901234567890.5) do not match, and doubles are what orjson decodes exactly.
_LONG_INTEGER = re.compile(rb"(?<![0-9.])[0-9]{19,}(?![0-9.eE])")
_COLON_ESCAPE = re.compile(rb"\\u003[aA]")
_STRING_BYTES = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


def _ascii_only(text: str) -> str:
    """JSON text with its non-ASCII characters and U+007F written as ``json`` writes them.

    ``encode_basestring_ascii`` (C) escapes those as ``\\uXXXX`` (astral characters as a
    surrogate pair), and also every ``"`` and ``\\``, which are then put back: in its
    output each backslash starts a ``\\\\``, ``\\"`` or ``\\uXXXX`` escape, so replacing
    left to right is unambiguous, and NUL cannot occur raw in JSON text to clash with
    the placeholder.
    """
    escaped = _encode_ascii(text)[1:-1]
    return escaped.replace("\\\\", "\x00").replace('\\"', '"').replace("\x00", "\\")


# A double orjson writes unlike Python (below 1e-4: 0.00001234 for 1.234e-05, 5e-7 for 5e-07)
_SMALL_TOKEN = re.compile(rb"-?(?:0\.0000[0-9]*|[0-9](?:\.[0-9]+)?e-[0-9]+)")
_TOKEN_END = re.compile(rb"[,\]}]|$")
_DIGIT_E_MINUS = re.compile(rb"[0-9]e-")


def _small_rewritten(out: bytes) -> bytes:
    """``out`` with each whole number token shaped like orjson's spelling of a double below
    1e-4 (after ":", "," or "[", before ",", "]", "}" or the end) written as ``repr`` writes
    that double. Found from the few places ``.0000`` or ``e-`` occur (C-speed searches),
    not by a regex scan of the whole text."""
    pieces: list[bytes] = []
    done = 0
    hits = sorted({*_positions(out, b".0000"), *_positions(out, b"e-")})
    for hit in hits:
        if hit < done:
            continue
        token = _small_token(out, hit, done)
        if token is not None:
            delimiter, end = token
            pieces += (out[done : delimiter + 1], repr(float(out[delimiter + 1 : end])).encode("ascii"))
            done = end
    if not pieces:
        return out
    pieces.append(out[done:])
    return b"".join(pieces)


def _small_token(out: bytes, hit: int, done: int) -> tuple[int, int] | None:
    """(the delimiter before, the end of) the whole token holding position ``hit`` of ``out``, when
    it is shaped like orjson's spelling of a double below 1e-4; None otherwise. Nothing before
    ``done`` is searched."""
    delimiter = max(out.rfind(b":", done, hit), out.rfind(b",", done, hit), out.rfind(b"[", done, hit))
    if delimiter < 0 and (done or out[:1] not in b"-0123456789"):
        return None  # no token starts before it: text inside a string
    end_match = _TOKEN_END.search(out, hit)
    end = end_match.start() if end_match else len(out)
    return (delimiter, end) if _SMALL_TOKEN.fullmatch(out[delimiter + 1 : end]) else None


def _positions(out: bytes, needle: bytes) -> list[int]:
    found = []
    at = out.find(needle)
    while at >= 0:
        found.append(at)
        at = out.find(needle, at + 1)
    return found


def repr_doubles(out: bytes) -> bytes:
    """orjson's output ``out`` with each double below 1e-4 written as ``repr`` writes it;
    equal to ``out`` when it holds none.

    orjson differs from ``repr`` only there: ``0.00001`` for ``1e-05`` and ``1e-6`` for
    ``1e-06``. The tokens are found by their shape, which text inside a string can have
    too: a caller that cannot otherwise prove the result must decode it back (see
    :func:`canonical_dump`). Cheapest test first: ``-`` is a one-byte search, and most
    texts hold none; ``e-`` in text ("pre-commit") is common, so the exponent test is
    exact only behind it.
    """
    # (rfind, not ``in``: CPython's backward search takes about half the time of the forward
    # one for these short needles on JSON text, measured on bench/generate.py's mixes)
    if out.rfind(b".0000") >= 0 or (b"-" in out and out.rfind(b"e-") >= 0 and _DIGIT_E_MINUS.search(out)):
        return _small_rewritten(out)
    return out


# Printable ASCII pairs to stand in for '"' and '\\' while ``encode_basestring_ascii`` runs
# over a whole JSON text (it would escape them), with the tables that swap them in and back.
_STAND_INS = [
    (pair, bytes.maketrans(b'"\\', pair), bytes.maketrans(pair, b'"\\')) for pair in (b"`~", b"^|", b"#$")
]


def ascii_text(out: bytes) -> bytes:
    """orjson's UTF-8 output with non-ASCII characters and U+007F escaped as ``json`` escapes them.

    As :func:`_ascii_only`, but the quotes and backslashes of the text are swapped for a
    pair of printable characters the text does not hold before escaping, and back after:
    two byte translations instead of three passes of string replacement.
    """
    if out.isascii() and b"\x7f" not in out:
        return out
    for (hidden, shown), hide, show in _STAND_INS:
        if hidden not in out and shown not in out:
            return _encode_ascii(out.translate(hide).decode("utf-8"))[1:-1].encode("ascii").translate(show)
    return _ascii_only(out.decode("utf-8")).encode("ascii")


def canonical_dump(value: Any) -> bytes | None:
    """``canonical(value)`` as bytes for a decoded ``value``, through orjson; None where the
    small-double rewrite cannot be proven (it changed text inside a string: the rewritten
    text then decodes to another value). Raises ``orjson.JSONEncodeError`` where orjson
    cannot write the value (integers beyond 64 bits, nesting past orjson's own limit).

    Most texts hold no non-ASCII, no U+007F, no ``-`` and no ``.0000``, and leave at the
    first test: four C-speed searches, no further call.
    """
    out = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    # (rfind: see repr_doubles)
    if out.isascii() and b"-" not in out and out.rfind(b".0000") < 0 and b"\x7f" not in out:
        return out
    fixed = repr_doubles(out)
    if fixed != out and orjson.loads(fixed) != value:
        return None
    return ascii_text(fixed)


def sorted_dump(value: Any) -> bytes:
    """orjson's sorted output for a value (raises ``orjson.JSONEncodeError`` where it cannot
    write it: integers beyond 64 bits, nesting past orjson's own limit)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def canonical_decoded(value: Any) -> str:
    """``canonical(value)`` for a value that came out of a JSON decoder, computed faster.

    orjson writes sorted keys in the same order (UTF-8 byte order is code point order),
    the same escapes below U+007F, and the same shortest round-trip digits for doubles;
    it differs in three places, all handled here: it writes non-ASCII characters and
    U+007F raw (escaped afterwards, exactly as ``json`` escapes them), and it writes
    doubles below 1e-4 in another notation (rewritten, see :func:`canonical_dump`).
    Integers beyond 64 bits make orjson refuse, and :func:`canonical` takes over.

    Only for decoded values: orjson would write NaN as ``null`` where ``canonical``
    refuses it, and a decoded value holds none. ``tests/unit/test_canonical.py`` checks
    the two agree on every vector and a large generated corpus.
    """
    try:
        out = canonical_dump(value)
    except orjson.JSONEncodeError:
        out = None
    return canonical(value) if out is None else out.decode("ascii")


def is_canonical_text(raw: bytes, value: Any) -> bool:
    """Whether ``raw`` is exactly ``canonical(value)``, for ``value`` decoded from ``raw``.

    Most lines are ASCII with no escapes beyond the short ones, and then orjson's sorted
    output is the canonical text: compare bytes directly. The small-double rewrite needs
    no decoding back here: a rewritten text equal to ``raw`` decodes to ``value`` (which
    was decoded from ``raw``), so the rewrite changed no string. Where it did (a string
    shaped like orjson's spelling of a double), :func:`canonical` decides.
    """
    try:
        out = sorted_dump(value)
    except orjson.JSONEncodeError:
        return canonical(value).encode("ascii") == raw
    fixed = repr_doubles(out)
    if ascii_text(fixed) == raw:
        return True
    return fixed != out and canonical(value).encode("ascii") == raw


def canonical_str(text: str) -> str:
    """``canonical(text)`` for a string: the ``json`` module's own string encoder (C), which
    is what ``json.dumps`` calls for a string with ``ensure_ascii``, without its set-up."""
    return _encode_ascii(text)


def canonical(value: Any) -> str:
    """Return the canonical JSON text of ``value`` (docs/spec.md §1.2).

    Exactly ``json.dumps(value, sort_keys=True, separators=(",", ":"),
    ensure_ascii=True, allow_nan=False)``, for values nested at most :data:`MAX_DEPTH`
    deep: a deeper value (which no reader here would take back) is an :class:`InputError`,
    never a ``RecursionError``.
    """
    try:
        text = _ENCODER.encode(value)
    except RecursionError as err:
        raise InputError(f"nesting is deeper than {MAX_DEPTH} levels") from err
    if (
        text.count("[") + text.count("{") > MAX_DEPTH
        and nesting_depth(text.encode("ascii"), limit=MAX_DEPTH) > MAX_DEPTH
    ):
        raise InputError(f"nesting is deeper than {MAX_DEPTH} levels")
    return text


def colons_agree(raw: bytes, canonical_colons: int) -> bool:
    """True when ``raw`` provably has no duplicate keys, given the colon count of its
    canonical re-encoding (see the module docstring)."""
    if raw.count(b":") != canonical_colons:
        return False
    return raw.rfind(b"\\u003") < 0 or not _COLON_ESCAPE.search(raw)  # (rfind: see repr_doubles)


def _refuse_constant(name: str) -> Any:
    raise InputError(f"{name} is not valid JSON (NaN and Infinity are refused)")


def _strict_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise InputError(f"number {_clip(text)} is too large: it would become infinity")
    return value


def _strict_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise InputError(f"integer with {len(text.lstrip('-'))} digits is longer than {MAX_INT_DIGITS}")
    return int(text)


def _strict_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise InputError(f"duplicate key {json.dumps(key)}")
        obj[key] = value
    return obj


_REFERENCE = json.JSONDecoder(
    object_pairs_hook=_strict_object,
    parse_constant=_refuse_constant,
    parse_float=_strict_float,
    parse_int=_strict_int,
)


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


# Everything but brackets goes; braces become brackets: what is left of a JSON text (its
# strings removed) is then a word over "[" and "]" whose nesting is the text's.
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_BRACKETS_ONLY = bytes.maketrans(b"{}", b"[]")


def nesting_depth(raw: bytes, *, limit: int | None = None) -> int:
    """Deepest nesting of arrays/objects in a JSON text, ignoring brackets inside strings.

    Each pass deletes every innermost ``[]`` pair, which lowers every nest by exactly one
    level (``bytes.replace`` does not rescan what it has just joined), so the passes
    counted are the depth, and each pass runs in C. With ``limit``, counting stops once
    past it. Brackets that do not pair up (text that is not JSON) end as ``]...][...[``,
    and the opening ones left count as levels.
    """
    word = _STRING_BYTES.sub(b"", raw).translate(_BRACKETS_ONLY, _NOT_BRACKETS)
    if limit is not None and b"[" * (limit + 1) in word:
        return limit + 1
    depth = 0
    while word and (limit is None or depth <= limit):
        shorter = word.replace(b"[]", b"")
        if len(shorter) == len(word):
            return depth + len(word.lstrip(b"]"))
        word = shorter
        depth += 1
    return depth


def too_deep(raw: bytes) -> bool:
    """Is a JSON text nested deeper than :data:`MAX_DEPTH`? Cheap for most texts: there
    cannot be more levels than opening brackets (counted in one pass)."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:  # two memchr-speed counts: most lines stop here
        return False
    return nesting_depth(raw, limit=MAX_DEPTH) > MAX_DEPTH


_TOKENS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)


class NestingTooDeep(Exception):
    """The cause of a depth refusal: ``lineno`` is the line of the first bracket too deep,
    named where a JSONDecodeError's would be (readers of whole documents use it)."""

    def __init__(self, raw: bytes) -> None:
        super().__init__(f"nesting is deeper than {MAX_DEPTH} levels")
        self.lineno = 1
        if b"\n" not in raw:
            return  # one line (every transcript line): nothing to look for
        depth = 0
        for token in _TOKENS.finditer(raw):  # only on the way to an error, and stops at it
            byte = raw[token.start()]
            if byte in b"[{":
                depth += 1
                if depth > MAX_DEPTH:
                    self.lineno = raw.count(b"\n", 0, token.start()) + 1
                    return
            elif byte in b"]}":
                depth -= 1


def check_shape(raw: bytes, *, max_bytes: int = MAX_RECORD_BYTES, what: str = "record") -> None:
    """Refuse what must be refused before any decoder sees the bytes."""
    if raw.startswith(_BOM):
        raise InputError("starts with a UTF-8 byte-order mark (BOM); save the file as UTF-8 without BOM")
    if len(raw) > max_bytes:
        raise InputError(f"{what} is {len(raw)} bytes, over the {max_bytes}-byte limit")
    if too_deep(raw):
        raise InputError(f"nesting is deeper than {MAX_DEPTH} levels") from NestingTooDeep(raw)


def decode_reference(raw: bytes) -> Any:
    """Decode one JSON text with the standard library under the strict rules."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"invalid UTF-8 at byte {err.start + 1}") from err
    try:
        value = _REFERENCE.decode(text)
    except json.JSONDecodeError as err:
        # the stdlib's "Invalid control character at" already ends in "at"
        raise InputError(f"invalid JSON: {err.msg.removesuffix(' at')} at column {err.colno}") from err
    except RecursionError as err:  # pragma: no cover - check_shape bounds the depth first
        raise InputError(f"nesting is deeper than {MAX_DEPTH} levels") from err
    try:
        _RAW_ENCODER.encode(value).encode("utf-8")
    except UnicodeEncodeError as err:
        raise InputError("string holds a lone surrogate escape (\\ud800-\\udfff without its pair)") from err
    return value


def _long_integer(raw: bytes) -> bool:
    """Could ``raw`` hold an integer of 19 digits or more (beyond 64 bits, orjson makes it a
    double)? Digit runs inside strings (digests, ids) are harmless: look again without them."""
    return (
        _LONG_INTEGER.search(raw) is not None
        and _LONG_INTEGER.search(_STRING_BYTES.sub(b"", raw)) is not None
    )


def long_integer(raw: bytes) -> bool:
    """Could ``raw`` hold an integer of 19 digits or more (which orjson makes a double)?

    In valid JSON (all orjson accepts) a number starts after "[", ",", ":", "-", white space
    or the start of the text, never after a digit, ".", "e" or "E": so an integer of 19
    digits shows as " " and 19 digits in the mapped text, and a double's fraction does not.
    (19 zeros first: the longer needle alone is slower, on text where every number is a run.)
    """
    mapped = raw.translate(_DIGIT_MAP)
    return (
        _LONG_RUN in mapped and (_LONG_START in mapped or mapped.startswith(_LONG_RUN)) and _long_integer(raw)
    )


def decode_fast(raw: bytes) -> Any | None:
    """Decode with orjson where it is known to agree with the reference; None otherwise.

    The caller must still compare key counts to rule out duplicate keys.
    """
    if long_integer(raw):
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def loads_unproven(raw: bytes) -> Any | None:
    """orjson's value for ``raw``; None where orjson refuses it.

    Not yet the strict value: the caller proves that ``raw`` held no integer beyond 64 bits
    (:func:`integers_agree`) and no duplicate key (:func:`colons_agree`) from the value's
    canonical re-encoding, or that ``raw`` is that re-encoding (which proves both).
    """
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def integers_agree(raw: bytes, *texts: str) -> bool:
    """True when the canonical ``texts`` of a value :func:`loads_unproven` decoded from ``raw``
    provably kept every integer of ``raw``. orjson turns an integer beyond 64 bits into a
    double of at least 2**63 in size, which canonical text writes with an exponent ``e+``:
    without a ``+`` in the texts there was none (a ``+`` in a string only costs a closer look)."""
    if any("+" in text for text in texts):
        return not long_integer(raw)
    return True


def decode(raw: bytes, *, max_bytes: int = MAX_RECORD_BYTES, what: str = "record") -> Any:
    """Strictly decode one JSON text (a transcript line, a whole scope file, an import)."""
    check_shape(raw, max_bytes=max_bytes, what=what)
    value = decode_fast(raw)
    if value is None or not colons_agree(raw, canonical_decoded(value).count(":")):
        return decode_reference(raw)
    return value
