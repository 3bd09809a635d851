"""tool_fingerprint against hand-computed vectors (docs/spec.md §3.5)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from toolreplay.canonical import canonical
from toolreplay.contracts.fingerprint import fingerprint_of, python_signature, tool_fingerprint

SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string", "maxLength": 500}},
    "required": ["query"],
}
SIG_TEXT = '{"name":"search","params":[["query","str","<class \'inspect._empty\'>"],["limit","int","10"]]}'
SCHEMA_TEXT = (
    '{"properties":{"query":{"maxLength":500,"type":"string"}},"required":["query"],"type":"object"}'
)


def search(query: str, limit: int = 10) -> dict[str, Any]:
    return {}


def sha16(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def test_signature_text_is_the_spec_formula() -> None:
    """The signature is name + [name, str(annotation), str(default)] in inspect order, canonical."""
    assert canonical(python_signature(search)) == SIG_TEXT


def test_fingerprint_vector() -> None:
    """sha256_hex(sig|schema|version)[:16], pinned to the value computed by hand with sha256sum."""
    assert sha16(f"{SIG_TEXT}|{SCHEMA_TEXT}|1.0") == "1196a033b3d6fa04"
    assert tool_fingerprint(search, SCHEMA, "1.0") == "1196a033b3d6fa04"


def test_version_bump_changes_fingerprint() -> None:
    """The version passed in is the third part of the hashed text."""
    assert (
        tool_fingerprint(search, SCHEMA, "1.1")
        == sha16(f"{SIG_TEXT}|{SCHEMA_TEXT}|1.1")
        == "e9d7b985a0fb852e"
    )


def test_default_flipped_false_to_true() -> None:
    """A default flipped from False to True changes the str(default) part and the fingerprint."""

    def remove(path: str, force: bool = False) -> None: ...

    before = tool_fingerprint(remove, {}, "1")

    def remove(path: str, force: bool = True) -> None:  # type: ignore[no-redef]
        ...

    text = '{"name":"remove","params":[["path","str","<class \'inspect._empty\'>"],["force","bool","True"]]}'
    assert canonical(python_signature(remove)) == text
    assert tool_fingerprint(remove, {}, "1") == sha16(text + "|{}|1")
    assert before == sha16(text.replace('"True"', '"False"') + "|{}|1")
    assert before != tool_fingerprint(remove, {}, "1")


def test_parameter_renamed() -> None:
    """Renaming a parameter changes the fingerprint."""

    def search(q: str, limit: int = 10) -> dict[str, Any]:
        return {}

    text = SIG_TEXT.replace('"query"', '"q"')
    assert tool_fingerprint(search, SCHEMA, "1.0") == sha16(f"{text}|{SCHEMA_TEXT}|1.0")
    assert tool_fingerprint(search, SCHEMA, "1.0") != "1196a033b3d6fa04"


def test_new_required_parameter() -> None:
    """A new parameter without a default (required) changes the fingerprint."""

    def search(query: str, region: str, limit: int = 10) -> dict[str, Any]:
        return {}

    text = (
        '{"name":"search","params":[["query","str","<class \'inspect._empty\'>"],'
        '["region","str","<class \'inspect._empty\'>"],["limit","int","10"]]}'
    )
    assert tool_fingerprint(search, SCHEMA, "1.0") == sha16(f"{text}|{SCHEMA_TEXT}|1.0")


def test_schema_reordered_or_reindented_keeps_fingerprint() -> None:
    """The schema is hashed in canonical form: key order and whitespace do not matter."""
    compact = json.loads(
        '{"type":"object","properties":{"query":{"type":"string","maxLength":500}},"required":["query"]}'
    )
    spread = json.loads(
        """{
            "required": ["query"],
            "properties": {
                "query": {"maxLength": 500,   "type": "string"}
            },
            "type": "object"
        }"""
    )
    assert (
        tool_fingerprint(search, compact, "1.0")
        == tool_fingerprint(search, spread, "1.0")
        == "1196a033b3d6fa04"
    )


def test_raw_annotation_objects() -> None:
    """Without postponed annotations str() of the class is used; an absent one is Parameter.empty."""

    def raw(x, y=None):  # type: ignore[no-untyped-def]
        ...

    raw.__annotations__ = {"x": int}
    text = (
        '{"name":"raw","params":[["x","<class \'int\'>","<class \'inspect._empty\'>"],'
        '["y","<class \'inspect._empty\'>","None"]]}'
    )
    assert canonical(python_signature(raw)) == text
    assert tool_fingerprint(raw, {}, "") == sha16(text + "|{}|") == "416b72c0e869a502"


def test_version_must_be_a_string() -> None:
    """The version is explicit text; a number is refused rather than formatted silently."""
    import pytest

    with pytest.raises(TypeError):
        fingerprint_of({"name": "x", "params": []}, {}, 1)  # type: ignore[arg-type]


def test_non_ascii_version_hashes_its_utf8() -> None:
    """A version beyond ASCII (a server's "1.0-é") is fingerprinted as UTF-8, never a crash."""
    assert tool_fingerprint(search, SCHEMA, "1.0-é") == sha16(f"{SIG_TEXT}|{SCHEMA_TEXT}|1.0-é")
    assert tool_fingerprint(search, SCHEMA, "1.0-é") != tool_fingerprint(search, SCHEMA, "1.0-e")


def test_lone_surrogate_version_is_an_input_error() -> None:
    """A version with no UTF-8 form is refused by name (InputError, exit 2), not a UnicodeEncodeError."""
    import pytest

    from toolreplay.errors import InputError

    with pytest.raises(InputError, match=r"version '1\\udcff' holds a lone surrogate \(U\+DCFF\)"):
        fingerprint_of({"name": "x", "params": []}, {}, "1\udcff")
