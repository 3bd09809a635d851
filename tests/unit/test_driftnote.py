"""The drift-note parser: safe YAML only, strict front matter, non-empty prose (docs/spec.md §1.6)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from toolreplay.driftnotes.note import MAX_NOTE_BYTES, note_problems, parse_note
from toolreplay.errors import InputError
from toolreplay.schemas import schema_text

H1, H2 = "1" * 63 + "a", "2" * 63 + "b"
GOOD = f"""---
baseline: baselines/checkout.sealed.jsonl
from: {H1}
to: {H2}
kinds: [behavior, schema]
tools: [search]
---
The search tool now ranks by recency; accepted after review.
"""


def fails(text: str | bytes) -> str:
    raw = text.encode() if isinstance(text, str) else text
    with pytest.raises(InputError) as info:
        parse_note(raw, "n.md")
    return str(info.value)


def test_good_note() -> None:
    """The example note of docs/spec.md §1.6 parses into its fields and prose."""
    note = parse_note(GOOD.encode(), "n.md")
    assert (note.baseline, note.from_head, note.to_head) == ("baselines/checkout.sealed.jsonl", H1, H2)
    assert note.kinds == ("behavior", "schema") and note.tools == ("search",)
    assert note.prose.strip().startswith("The search tool")


def test_deletion_note_has_no_to() -> None:
    """A note without 'to' accepts a deletion."""
    assert parse_note(GOOD.replace(f"to: {H2}\n", "").encode(), "n.md").to_head is None


def test_crlf_note() -> None:
    """Windows line endings are read like LF."""
    assert parse_note(GOOD.replace("\n", "\r\n").encode(), "n.md").from_head == H1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("baseline: x\n", "n.md:1: a drift note starts with a line '---'"),
        ("---\nbaseline: x\nfrom: y\n", "n.md:1: the front matter is not closed by a line '---'"),
        ("---\n---\nwhy\n", "n.md: front matter is empty"),
        ("---\n- a\n- b\n---\nwhy\n", "n.md:2: front matter must be a mapping"),
        ("---\njust text\n---\nwhy\n", "n.md:2: front matter must be a mapping"),
        (
            f"---\nbaseline: a\nfrom: {H1}\nbaseline: b\n---\nwhy\n",
            "n.md:4: front matter: duplicate key 'baseline' (first on line 2)",
        ),
        ("---\nbaseline: a\ntools: [{x: 1, x: 2}]\n---\nwhy\n", "n.md:3: front matter: duplicate key 'x'"),
        ("---\n1: a\n---\nwhy\n", "n.md:2: front matter: every key must be a string"),
        ("---\n? [a, b]\n: c\n---\nwhy\n", "n.md:2: front matter: every key must be a string"),
        (
            "---\nbaseline: !!python/object/apply:os.system [echo hi]\n---\nwhy\n",
            "n.md:2: front matter: could not determine a constructor for the tag"
            " 'tag:yaml.org,2002:python/object/apply:os.system'",
        ),
        (
            "---\nbaseline: !!python/name:os.system\n---\nwhy\n",
            "n.md:2: front matter: could not determine a constructor",
        ),
        (
            "---\nbaseline: !custom x\n---\nwhy\n",
            "n.md:2: front matter: could not determine a constructor for the tag '!custom'",
        ),
        (
            "---\nbaseline: &a x\nfrom: *a\n---\nwhy\n",
            "n.md:3: front matter: aliases (*name) are not allowed",
        ),
        ("---\nbaseline: [unclosed\n---\nwhy\n", "n.md:2: front matter: while parsing a flow sequence"),
        (
            "---\nbaseline: " + "[" * 5000 + "]" * 5000 + "\n---\nwhy\n",
            "n.md:2: front matter: nesting is deeper than 128 levels",
        ),
        (
            "---\nbaseline:\n" + "".join(" " * i + "-\n" for i in range(0, 1200, 2)) + "---\nwhy\n",
            "n.md:130: front matter: nesting is deeper than 128 levels",
        ),
        ("---\nbaseline: a\tb: c\n---\nwhy\n", "n.md:2: front matter:"),
        # the YAML reader refuses control characters before parsing; the int constructor a
        # number past Python's digit limit: both escaped as internal errors
        ("---\nbaseline: a\ntools: [a\x00b]\n---\nwhy\n", "n.md:3: front matter: character U+0000 is not"),
        ("---\nbaseline: a\n\nx: \x07\n---\nwhy\n", "n.md:4: front matter: character U+0007 is not"),
        (
            "---\nbaseline: a\ntools: [1, " + "9" * 4301 + "]\n---\nwhy\n",
            "n.md:3: front matter: an integer longer",
        ),
        (
            GOOD.replace("The search tool now ranks by recency; accepted after review.\n", ""),
            "n.md:8: the note has no explanation",
        ),
        (
            GOOD.replace("The search tool now ranks by recency; accepted after review.", "  \n\n"),
            "n.md:8: the note has no explanation",
        ),
        (
            GOOD.replace("The search tool now ranks by recency; accepted after review.", "<!-- explain -->"),
            "n.md:8: the note has no explanation",
        ),
        (
            GOOD.replace(f"from: {H1}", "from: " + "0" * 64),
            "n.md:3: 0 is not of type 'string'; YAML read the unquoted value as a non-string:"
            " put it in double quotes (at /from)",
        ),
        (GOOD.replace(f"from: {H1}\n", ""), "n.md:1: 'from' is a required property (at /)"),
        (
            GOOD.replace("kinds: [behavior, schema]", "kinds: [behaviour]"),
            "n.md:5: 'behaviour' is not one of",
        ),
        (
            GOOD.replace("tools: [search]", "tools: search"),
            "n.md:6: 'search' is not of type 'array' (at /tools)",
        ),
        (
            GOOD.replace("tools: [search]", "extra: 1"),
            "n.md:6: Additional properties are not allowed ('extra' was unexpected) (at /)",
        ),
    ],
)
def test_refusals(text: str, message: str) -> None:
    """Each unsafe or malformed note is refused with file, line and the problem."""
    assert fails(text).startswith(message)


def test_bom_is_refused() -> None:
    """A byte-order mark gets its own message."""
    assert (
        fails(b"\xef\xbb\xbf" + GOOD.encode())
        == "n.md:1: starts with a UTF-8 byte-order mark; save the note without it"
    )


def test_invalid_utf8_names_the_line() -> None:
    """Bytes that are not UTF-8 are refused on the line they are on."""
    assert fails(GOOD.encode().replace(b"recency", b"rec\xffency")) == "n.md:8: not valid UTF-8"


def test_size_cap() -> None:
    """A note over the cap is refused before it is parsed."""
    assert "limited to" in fails(GOOD + "x" * MAX_NOTE_BYTES)


def test_unsafe_tag_runs_nothing(tmp_path: Any) -> None:
    """A python/object tag is refused without being constructed (nothing is executed)."""
    marker = tmp_path / "ran"
    fails(f"---\nbaseline: !!python/object/apply:os.system ['touch {marker}']\n---\nwhy\n")
    assert not marker.exists()


def test_all_problems_are_listed() -> None:
    """note_problems lists schema problems and the missing prose together, in field order."""
    text = GOOD.replace(f"from: {H1}", "from: nothex").replace(
        "The search tool now ranks by recency; accepted after review.", ""
    )
    problems = [str(p) for p in note_problems(text.encode(), "n.md")]
    assert problems == [
        "n.md:3: 'nothex' does not match '^[0-9a-f]{64}$' (at /from)",
        "n.md:8: the note has no explanation: below the front matter, write why this drift is accepted",
    ]


FRONT_MATTERS: list[tuple[str, dict[str, Any]]] = [
    ("minimal", {"baseline": "b", "from": H1}),
    ("full", {"baseline": "b", "from": H1, "to": H2, "kinds": ["agent"], "tools": ["t"]}),
    ("empty baseline", {"baseline": "", "from": H1}),
    ("uppercase digest", {"baseline": "b", "from": H1.upper()}),
    ("short digest", {"baseline": "b", "from": H1[:63]}),
    ("to null", {"baseline": "b", "from": H1, "to": None}),
    ("no from", {"baseline": "b"}),
    ("empty kinds", {"baseline": "b", "from": H1, "kinds": []}),
    ("repeated kind", {"baseline": "b", "from": H1, "kinds": ["agent", "agent"]}),
    ("unknown kind", {"baseline": "b", "from": H1, "kinds": ["weather"]}),
    ("empty tool", {"baseline": "b", "from": H1, "tools": [""]}),
    ("unknown field", {"baseline": "b", "from": H1, "why": "x"}),
    ("baseline number", {"baseline": 3, "from": H1}),
]


@pytest.mark.parametrize(("name", "front"), FRONT_MATTERS, ids=[n for n, _ in FRONT_MATTERS])
def test_parser_and_published_schema_agree(name: str, front: dict[str, Any]) -> None:
    """The parser accepts a front matter exactly when the published schema does."""
    schema = Draft202012Validator(json.loads(schema_text("drift-note.schema.json")))
    # JSON is YAML: the same value written as a flow mapping
    raw = f"---\n{json.dumps(front)}\n---\nBecause.\n".encode()
    assert (not note_problems(raw, "n.md")) == schema.is_valid(front)
