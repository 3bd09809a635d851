"""The strict reader and the published schemas accept and refuse the same records.

Named differences, which JSON Schema cannot express (docs/canonical-json.md says so too):
``index`` written as ``1.0`` is an integer to JSON Schema but not to the reader; the JSON-level
refusals (here: lone surrogates) happen before there is a value to validate.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT, examples
from toolreplay.errors import InputError
from toolreplay.schemas import schema_text, validator
from toolreplay.transcript import parse_line

scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2) | st.sampled_from([0.0, 1.0, 2.0])
strings = st.sampled_from(["", "t", "read_file", "0123456789abcdef", "0123456789ABCDEF", "a" * 64, "0" * 64])
values = st.recursive(
    scalars | strings,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(strings, inner, max_size=3),
    max_leaves=6,
)
FIELDS = ["index", "tool", "args", "response", "fingerprint", "state", "prev", "digest", "extra"]


@st.composite
def records(draw: st.DrawFn) -> dict[str, Any]:
    """Mostly well-formed records with one or two fields perturbed, dropped or added."""
    record: dict[str, Any] = {
        "index": draw(st.integers(0, 3)),
        "tool": draw(strings),
        "args": draw(st.dictionaries(strings, values, max_size=2)),
        "response": draw(st.dictionaries(strings, values, max_size=2)),
    }
    if draw(st.booleans()):
        record["fingerprint"] = draw(strings)
    if draw(st.booleans()):
        record["state"] = draw(st.dictionaries(strings, strings | scalars, max_size=2))
    if draw(st.booleans()):
        record["prev"] = draw(strings)
        record["digest"] = draw(strings)
    for _ in range(draw(st.integers(0, 2))):
        name = draw(st.sampled_from(FIELDS))
        action = draw(st.sampled_from(["drop", "replace"]))
        if action == "drop":
            record.pop(name, None)
        else:
            record[name] = draw(values)
    return record


def reader_accepts(record: dict[str, Any], *, sealed: bool) -> bool:
    try:
        parse_line(json.dumps(record).encode(), sealed=sealed)
    except InputError:
        return False
    return True


def named_difference(record: dict[str, Any]) -> bool:
    index = record.get("index")
    return isinstance(index, float) and index.is_integer() and index >= 0


@settings(max_examples=examples(600), deadline=None)
@given(records(), st.booleans())
def test_reader_and_schema_agree(record: dict[str, Any], sealed: bool) -> None:
    """For generated records, reader and schema agree except on the named difference."""
    schema_ok = validator("sealed" if sealed else "transcript").is_valid(record)
    reader_ok = reader_accepts(record, sealed=sealed)
    if named_difference(record) and schema_ok:
        assert not reader_ok
    else:
        assert reader_ok == schema_ok, record


HAND_WRITTEN: list[tuple[dict[str, Any], bool]] = [
    ({"index": 0, "tool": "t", "args": {}, "response": {}}, True),
    ({"index": 0, "tool": "t", "args": {}, "response": {}, "fingerprint": "0123456789abcdef"}, True),
    ({"index": 0, "tool": "t", "args": {}, "response": {}, "state": {"file:a": "etag-1"}}, True),
    ({"index": -1, "tool": "t", "args": {}, "response": {}}, False),
    ({"index": True, "tool": "t", "args": {}, "response": {}}, False),
    ({"index": "0", "tool": "t", "args": {}, "response": {}}, False),
    ({"index": 0, "tool": "", "args": {}, "response": {}}, False),
    ({"index": 0, "tool": "t", "args": [], "response": {}}, False),
    ({"index": 0, "tool": "t", "args": {}, "response": "ok"}, False),
    ({"index": 0, "tool": "t", "args": {}}, False),
    ({"index": 0, "tool": "t", "args": {}, "response": {}, "fingerprint": "0123456789ABCDEF"}, False),
    ({"index": 0, "tool": "t", "args": {}, "response": {}, "fingerprint": None}, False),
    ({"index": 0, "tool": "t", "args": {}, "response": {}, "state": {"a": 1}}, False),
    ({"index": 0, "tool": "t", "args": {}, "response": {}, "state": []}, False),
    ({"index": 0, "tool": "t", "args": {}, "response": {}, "prev": "0" * 64}, False),
]


@pytest.mark.parametrize(("record", "valid"), HAND_WRITTEN)
def test_hand_written_records(record: dict[str, Any], valid: bool) -> None:
    """Hand-picked edge records: both judges give the expected verdict."""
    assert validator("transcript").is_valid(record) is valid
    assert reader_accepts(record, sealed=False) is valid


def test_float_index_is_the_named_difference() -> None:
    """JSON Schema accepts index 1.0 as an integer; the reader refuses it."""
    record = {"index": 1.0, "tool": "t", "args": {}, "response": {}}
    assert validator("transcript").is_valid(record)
    assert not reader_accepts(record, sealed=False)


def test_lone_surrogate_is_a_json_level_difference() -> None:
    """A lone surrogate is a valid JSON Schema string but refused by the reader."""
    record = {"index": 0, "tool": "t\ud800", "args": {}, "response": {}}
    assert validator("transcript").is_valid(record)
    assert not reader_accepts(record, sealed=False)


@pytest.mark.parametrize("path", sorted((ROOT / "schemas").glob("*.json")), ids=lambda p: p.name)
def test_schema_is_draft_2020_12_with_stable_id(path: Any) -> None:
    """Every published schema is a valid draft 2020-12 schema with an $id under our namespace, and
    gives no key twice (a second ``tools_source`` silently replaced the first)."""
    from jsonschema import Draft202012Validator

    def no_duplicate(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [key for key, _ in pairs]
        assert len(keys) == len(set(keys)), f"a key given twice (JSON keeps the last): {keys}"
        return dict(pairs)

    schema = json.loads(path.read_text(), object_pairs_hook=no_duplicate)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == f"https://schemas.toolreplay.dev/v1/{path.name}"


def test_package_resources_are_the_published_bytes() -> None:
    """validate reads the same bytes as schemas/ holds (the installed package's copy)."""
    for path in (ROOT / "schemas").glob("*.json"):
        assert schema_text(path.name) == path.read_bytes()


@pytest.mark.slow
def test_wheel_ships_the_published_schemas(tmp_path: Any) -> None:
    """A built wheel contains every schema in schemas/, byte for byte."""
    import subprocess
    import sys
    import zipfile

    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("toolreplay-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        for path in (ROOT / "schemas").glob("*.json"):
            assert archive.read(f"toolreplay/schemas/{path.name}") == path.read_bytes()
