"""Scope argument schemas: patterns are time-limited and a bad pattern is a refusal, not a crash."""

from __future__ import annotations

import json
import time
from pathlib import Path

from toolreplay.analyses import scope as scope_module
from toolreplay.analyses.scope import check_scope, load_scope
from toolreplay.transcript import make_record


def write_scope(tmp_path: Path, schema: dict[str, object]) -> str:
    path = tmp_path / "scope.json"
    path.write_text(
        json.dumps({"agent": "a", "allowed_tools": ["read_file"], "arguments": {"read_file": schema}})
    )
    return str(path)


def kinds_and_messages(scope_path: str, args: dict[str, object]) -> list[tuple[str, str]]:
    record = make_record(index=0, tool="read_file", args=args, response={})
    return [(f.kind, f.message) for f in check_scope([record], load_scope(scope_path)).findings]


def test_catastrophic_pattern_is_cut_off_and_refused(tmp_path: Path, monkeypatch: object) -> None:
    """A backtracking pattern on a long value stops at the time limit and the call is refused."""
    import pytest

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    monkeypatch.setattr(scope_module, "PATTERN_SECONDS", 0.2)
    path = write_scope(tmp_path, {"properties": {"path": {"type": "string", "pattern": "^(a|a)*$"}}})
    start = time.monotonic()
    found = kinds_and_messages(path, {"path": "a" * 40 + "!"})
    assert time.monotonic() - start < 5
    assert found and found[0][0] == "argument-overreach"
    assert "did not finish within 0.2 s" in found[0][1]


def test_pattern_properties_are_time_limited_too(tmp_path: Path, monkeypatch: object) -> None:
    """patternProperties uses the same time-limited search."""
    import pytest

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    monkeypatch.setattr(scope_module, "PATTERN_SECONDS", 0.2)
    path = write_scope(tmp_path, {"patternProperties": {"^(a|aa)+$": {"type": "integer"}}})
    found = kinds_and_messages(path, {"a" * 60 + "!": "x"})
    assert found and "did not finish" in found[0][1]


def test_invalid_pattern_is_a_usage_error(tmp_path: Path) -> None:
    """A pattern that is not a regular expression is refused when the scope is loaded."""
    import pytest

    from toolreplay.errors import InputError

    path = write_scope(tmp_path, {"properties": {"path": {"type": "string", "pattern": "(unclosed"}}})
    with pytest.raises(InputError) as err:
        load_scope(path)
    assert err.value.pointer == "/arguments/read_file/properties/path/pattern"


def test_ordinary_patterns_behave_as_before(tmp_path: Path) -> None:
    """A normal pattern accepts matching values and reports the others as before."""
    path = write_scope(tmp_path, {"properties": {"path": {"type": "string", "pattern": "^docs/"}}})
    assert kinds_and_messages(path, {"path": "docs/a.md"}) == []
    assert kinds_and_messages(path, {"path": "etc/passwd"})[0][1].endswith(
        "'etc/passwd' does not match '^docs/'"
    )


def test_overreach_pointer_escapes_keys(tmp_path: Path) -> None:
    """An argument named with '/' or '~' is reported at a valid JSON pointer (RFC 6901)."""
    path = write_scope(tmp_path, {"properties": {"a/b~c": {"type": "string"}}})
    found = kinds_and_messages(path, {"a/b~c": 1})
    assert "at '/a~1b~0c'" in found[0][1]
