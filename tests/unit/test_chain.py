"""The hash chain: sealing, verifying, and every way of tampering with a sealed file."""

from __future__ import annotations

import io
import json

import pytest

from tests.conftest import SAMPLES
from toolreplay.chain import seal, verify
from toolreplay.errors import InputError
from toolreplay.transcript import GENESIS, make_record, parse_links, read_transcript, record_line


def sealed_bytes(path: str = str(SAMPLES / "session-dirty.jsonl")) -> bytes:
    return "".join(line + "\n" for _, line in seal(read_transcript(path))).encode("ascii")


def outcome(data: bytes) -> str:
    """'intact', 'broken' or 'refused' for a sealed file's bytes."""
    try:
        state = verify(parse_links(io.BytesIO(data), "sealed"))
    except InputError:
        return "refused"
    return "broken" if state.broken else "intact"


def test_sealed_sample_verifies() -> None:
    """A freshly sealed sample is intact with one link per record and the last digest as head."""
    data = sealed_bytes()
    state = verify(parse_links(io.BytesIO(data), "s"))
    assert state.broken is None and state.links == 6
    assert state.head == json.loads(data.splitlines()[-1])["digest"]


def test_empty_transcript_head_is_genesis() -> None:
    """Sealing nothing gives nothing, whose head is the genesis value."""
    assert list(seal([])) == []
    assert verify([]).head == GENESIS


def test_digest_is_sha256_of_canonical_link_without_digest() -> None:
    """Each link's digest is docs/spec.md §1.3's formula, computed independently here with hashlib."""
    import hashlib

    prev = GENESIS
    for line in sealed_bytes().decode().splitlines():
        link = json.loads(line)
        digest = link.pop("digest")
        assert link["prev"] == prev
        body = json.dumps(link, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        assert hashlib.sha256(body.encode()).hexdigest() == digest
        prev = digest


def test_optional_fields_enter_the_digest_only_when_present() -> None:
    """A record without fingerprint/state seals exactly as 0.6 did; with them the digest changes."""
    plain = make_record(index=0, tool="t", args={"a": 1}, response={})
    with_fp = make_record(index=0, tool="t", args={"a": 1}, response={}, fingerprint="0123456789abcdef")
    with_state = make_record(index=0, tool="t", args={"a": 1}, response={}, state={"f": "v1"})
    digests = {next(seal([r]))[0] for r in (plain, with_fp, with_state)}
    assert len(digests) == 3
    assert '"fingerprint"' not in next(seal([plain]))[1]


@pytest.mark.parametrize("flip", [0x01, 0x20, 0x40])
def test_every_single_byte_change_is_caught(flip: int) -> None:
    """Changing any one byte of a sealed sample never verifies as intact."""
    data = bytearray(sealed_bytes())
    survivors = []
    for position in range(len(data)):
        tampered = bytearray(data)
        tampered[position] ^= flip
        if outcome(bytes(tampered)) == "intact":
            survivors.append(position)
    assert survivors == []


def test_value_preserving_edits_are_caught() -> None:
    """An escape's hex case or a reordered key keeps the value but breaks the canonical form."""
    data = sealed_bytes()
    assert b"\\u00e9" in data
    assert outcome(data.replace(b"\\u00e9", b"\\u00E9", 1)) == "broken"
    first, rest = data.split(b"\n", 1)
    link = json.loads(first)
    reordered = json.dumps(dict(reversed(list(link.items()))), separators=(",", ":")).encode()
    assert outcome(reordered + b"\n" + rest) == "broken"


def lines_of(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def test_reorder_delete_duplicate() -> None:
    """Swapped, deleted and repeated links are a broken chain, not a parse error."""
    lines = lines_of(sealed_bytes())
    swapped = lines[:2] + [lines[3], lines[2]] + lines[4:]
    deleted = lines[:2] + lines[3:]
    repeated = lines[:3] + [lines[2]] + lines[3:]
    for variant in (swapped, deleted, repeated):
        assert outcome(b"".join(variant)) == "broken"


def test_first_broken_link_is_named() -> None:
    """The break names the position, the digest the chain requires there and the stored one."""
    lines = lines_of(sealed_bytes())
    deleted = b"".join(lines[:2] + lines[3:])
    state = verify(parse_links(io.BytesIO(deleted), "s"))
    assert state.broken is not None
    assert state.broken.position == 2
    assert state.broken.found == json.loads(lines[3])["digest"]
    assert state.broken.expected != state.broken.found
    assert state.links == 2


def test_insert_and_reseal_changes_the_head() -> None:
    """A forged record inserted and re-sealed verifies on its own, but its head differs (hence anchors)."""
    records = list(read_transcript(str(SAMPLES / "session-dirty.jsonl")))
    forged = make_record(index=2, tool="read_file", args={"path": "docs/secret.md"}, response={})
    shifted = [r if r.index < 2 else make_record(**{**r.fields(), "index": r.index + 1}) for r in records]
    forged_records = shifted[:2] + [forged] + shifted[2:]
    data = "".join(line + "\n" for _, line in seal(forged_records)).encode()
    state = verify(parse_links(io.BytesIO(data), "s"))
    original = verify(parse_links(io.BytesIO(sealed_bytes()), "s"))
    assert state.broken is None
    assert state.head != original.head and state.links == original.links + 1


def test_cut_tail_verifies_but_with_an_older_head() -> None:
    """Cutting whole links off the end leaves a chain that follows; only an anchor can tell."""
    lines = lines_of(sealed_bytes())
    state = verify(parse_links(io.BytesIO(b"".join(lines[:4])), "s"))
    assert state.broken is None and state.links == 4
    assert state.head == json.loads(lines[3])["digest"]


def test_seal_is_deterministic_and_key_order_free() -> None:
    """Reordered keys and whitespace in the transcript seal to the same bytes."""
    records = list(read_transcript(str(SAMPLES / "session-dirty.jsonl")))
    reformatted = "\n".join(
        json.dumps(dict(reversed(list(r.fields().items()))), indent=None, separators=(", ", " : "))
        for r in records
    )
    again = list(parse_links_free(reformatted))
    assert "".join(line for _, line in seal(again)) == "".join(line for _, line in seal(records))
    assert record_line(records[0]).startswith('{"args":')


def parse_links_free(text: str):  # type: ignore[no-untyped-def]
    from toolreplay.transcript import parse_transcript

    return parse_transcript(io.BytesIO(text.encode()), "t")


# --- the fast path gives the exact path's verdicts -------------------------------------------

from toolreplay.chain import seal_lines, verify_stream  # noqa: E402


def both_verdicts(data: bytes) -> tuple[object, object]:
    def run(fn):  # type: ignore[no-untyped-def]
        try:
            return fn()
        except InputError as err:
            return str(err)

    exact = run(lambda: verify(parse_links(io.BytesIO(data), "s")))
    fast = run(lambda: verify_stream(io.BytesIO(data), "s"))
    return exact, fast


@pytest.mark.parametrize("flip", [0x01, 0x20])
def test_fast_verify_agrees_on_every_single_byte_change(flip: int) -> None:
    """For every one-byte tampering the fast verify returns exactly the exact walk's state or error."""
    data = sealed_bytes()
    for position in range(len(data)):
        tampered = bytearray(data)
        tampered[position] ^= flip
        exact, fast = both_verdicts(bytes(tampered))
        assert fast == exact, position


def test_fast_verify_agrees_on_structural_tampering() -> None:
    """Swapped, deleted, repeated and non-canonical links: same verdict both ways."""
    lines = lines_of(sealed_bytes())
    variants = [
        lines[:2] + [lines[3], lines[2]] + lines[4:],
        lines[:2] + lines[3:],
        lines[:3] + [lines[2]] + lines[3:],
        [lines[0].replace(b"\\u00e9", b"\\u00E9")] + lines[1:],
        [line.replace(b"\\u00e9", b"\\u00E9") for line in lines],
        [],
    ]
    for variant in variants:
        exact, fast = both_verdicts(b"".join(variant))
        assert fast == exact


def test_fast_seal_writes_the_exact_bytes() -> None:
    """seal_lines over raw lines writes what seal() writes over parsed records."""
    path = str(SAMPLES / "session-dirty.jsonl")
    with open(path, "rb") as stream:
        fast = list(seal_lines(stream, path))
    assert fast == [line for _, line in seal(read_transcript(path))]


def test_fast_seal_with_optional_fields_and_awkward_values() -> None:
    """Fingerprints, state, nested 'prev'/'digest' keys and non-ASCII seal identically both ways."""
    records = [
        {
            "index": 0,
            "tool": "t:x",
            "args": {"prev": "", "digest": "a"},
            "response": {"prev": ""},
            "fingerprint": "0123456789abcdef",
            "state": {"f": "é"},
        },
        {"index": 1, "tool": "ü", "args": {}, "response": {"x": [1e-05, 1e16, -0.0, 2**70]}},
    ]
    text = "\n".join(json.dumps(r) for r in records).encode()
    fast = list(seal_lines(io.BytesIO(text), "t"))
    from toolreplay.transcript import parse_transcript

    assert fast == [line for _, line in seal(parse_transcript(io.BytesIO(text), "t"))]


@pytest.mark.parametrize(
    "response",
    [
        '{"n": 18446744073709551616}',
        '{"n": [-9223372036854775809, 1.5]}',
        '{"n": 123456789012345678901234567890, "s": "a+b"}',
        '{"n": 1e+16, "m": 12345678901234567890.5, "p": 0.00042169835447674430}',
        '{"s": "1e+20 18446744073709551616"}',
    ],
)
def test_big_integers_keep_their_digits_on_every_path(response: str) -> None:
    """An integer beyond 64 bits in a transcript line (which orjson would make a double) is
    read, sealed and verified with its digits, as the reference decoder reads it: the fast
    paths see its trace (a "+" in the re-encoding) and hand the line over."""
    from toolreplay.canonical import decode_reference
    from toolreplay.chain import link_digest
    from toolreplay.transcript import _build, parse_line

    raw = ('{"index": 0, "tool": "t", "args": {"k": 1}, "response": ' + response + "}").encode()
    exact, _ = _build(decode_reference(raw), sealed=False, line=1)
    record, _ = parse_line(raw, line=1)
    assert record == exact
    digest, line = link_digest(exact, GENESIS)
    assert list(seal_lines(io.BytesIO(raw), "t")) == [line]
    state = verify_stream(io.BytesIO(line.encode() + b"\n"), "s")
    assert (state.links, state.head, state.broken) == (1, digest, None)
