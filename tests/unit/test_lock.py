"""The tool lock: stable bytes, strict loading, and agreement with its published schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolreplay.contracts.lock import ToolLock, dump_lock, load_lock, make_contract, save_lock
from toolreplay.errors import InputError
from toolreplay.validate import validate_file


def sample_lock() -> ToolLock:
    return ToolLock.of(
        [
            make_contract(
                name="search",
                signature={"name": "search", "params": [["query", "string", "required"]]},
                schema={"type": "object", "properties": {"query": {"type": "string", "maxLength": 500}}},
                version="1.0",
                mutates=False,
            ),
            make_contract(
                name="write_file",
                signature={"name": "write_file", "params": [["path", "string", "required"]]},
                schema={},
                version="",
                mutates=True,
                idempotent=True,
            ),
        ]
    )


def write(tmp_path: Path, value: Any, name: str = "tools.lock.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def test_round_trip_and_stable_bytes(tmp_path: Path) -> None:
    """save then load gives the same contracts, and saving again gives the same bytes."""
    lock = sample_lock()
    path = tmp_path / "tools.lock.json"
    save_lock(lock, path)
    loaded = load_lock(path)
    assert loaded == lock
    assert loaded.tools["write_file"].mutates is True
    assert loaded.tools["search"].deterministic is True
    assert path.read_text(encoding="ascii") == dump_lock(loaded)
    assert list(tmp_path.iterdir()) == [path]


def test_behaviour_defaults(tmp_path: Path) -> None:
    """Left-out flags: deterministic true, mutates from the default mutator list, idempotent false."""
    data = sample_lock().data()
    for contract in data["tools"].values():
        for key in ("deterministic", "mutates", "idempotent"):
            del contract[key]
    lock = load_lock(write(tmp_path, data))
    assert (lock.tools["search"].deterministic, lock.tools["search"].mutates) == (True, False)
    assert (lock.tools["write_file"].mutates, lock.tools["write_file"].idempotent) == (True, False)


BAD = [
    ("unknown top field", lambda d: d.update(extra=1), 'unknown field "extra" (at /extra)'),
    ("lock version", lambda d: d.update(lock_version=2), 'field "lock_version" must be 1 (at /lock_version)'),
    (
        "unknown contract field",
        lambda d: d["tools"]["search"].update(notes="x"),
        'unknown field "notes" (at /tools/search/notes)',
    ),
    (
        "missing schema",
        lambda d: d["tools"]["search"].pop("schema"),
        'missing field "schema" (at /tools/search)',
    ),
    (
        "bad fingerprint",
        lambda d: d["tools"]["search"].update(fingerprint="XYZ"),
        'field "fingerprint" must be 16 lowercase hex digits (at /tools/search/fingerprint)',
    ),
    (
        "flag type",
        lambda d: d["tools"]["search"].update(mutates="no"),
        'field "mutates" must be true or false (at /tools/search/mutates)',
    ),
    (
        "param shape",
        lambda d: d["tools"]["search"]["signature"]["params"].append(["x"]),
        "a parameter must be an array of 3 strings [name, type, default]"
        " (at /tools/search/signature/params/1)",
    ),
]


@pytest.mark.parametrize(("case", "edit", "message"), BAD, ids=[b[0] for b in BAD])
def test_strict_refusals_agree_with_schema(tmp_path: Path, case: str, edit: Any, message: str) -> None:
    """Each structural defect is refused by load_lock with file and pointer, and by the schema too."""
    data = sample_lock().data()
    edit(data)
    path = write(tmp_path, data)
    with pytest.raises(InputError) as err:
        load_lock(path)
    assert str(err.value) == f"{path}:1: {message}"
    assert validate_file(str(path)) != []


def test_good_lock_passes_schema(tmp_path: Path) -> None:
    """A lock toolreplay writes is valid under schemas/tool-lock.schema.json (kind from its name)."""
    path = tmp_path / "team.tools.lock.json"
    save_lock(sample_lock(), path)
    assert validate_file(str(path)) == []


def test_edited_schema_without_new_fingerprint_is_refused(tmp_path: Path) -> None:
    """A hand edit of the schema that keeps the old fingerprint is caught by recomputing it."""
    data = sample_lock().data()
    data["tools"]["search"]["schema"]["properties"]["query"]["maxLength"] = 200
    path = write(tmp_path, data)
    with pytest.raises(InputError, match=r"does not match the contract's signature, schema and version"):
        load_lock(path)


def test_duplicate_key_refused(tmp_path: Path) -> None:
    """The lock is read under the strict JSON rules (a duplicate key is an error)."""
    path = tmp_path / "tools.lock.json"
    path.write_text('{"lock_version": 1, "tools": {}, "tools": {}}', encoding="ascii")
    with pytest.raises(InputError, match="duplicate key"):
        load_lock(path)


def test_missing_file() -> None:
    """A missing lock is a one-line usage error."""
    with pytest.raises(InputError, match="no such file"):
        load_lock("/nonexistent/tools.lock.json")
