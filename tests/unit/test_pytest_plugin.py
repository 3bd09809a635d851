"""The pytest plugin's cheap parts: its import cost, cassette file names, the record modes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolreplay import pytest_plugin
from toolreplay.contracts import load_lock
from toolreplay.library import ToolDriftError, cassette
from toolreplay.transcript import read_links


def test_the_plugin_imports_no_library_code() -> None:
    """Loading the plugin (every pytest session does) imports neither the library nor the chain code."""
    code = (
        "import sys, toolreplay.pytest_plugin\n"
        "print(sorted(m for m in sys.modules if m.startswith('toolreplay')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    # toolreplay.files: the sealed suffix; toolreplay.lazy: the package's exports (the standard library only)
    assert out == "['toolreplay', 'toolreplay.files', 'toolreplay.lazy', 'toolreplay.pytest_plugin']\n"


def test_the_package_still_exports_its_api() -> None:
    """`from toolreplay import X` works for every name in __all__, imported on first use."""
    import toolreplay

    for name in toolreplay.__all__:
        assert getattr(toolreplay, name) is not None
    assert toolreplay.ToolRegistry is cassette.ToolRegistry


def test_record_modes_agree() -> None:
    """The plugin's option choices are the cassette module's modes (copied: the plugin imports cheaply)."""
    assert pytest_plugin.RECORD_MODES == cassette.RECORD_MODES


def test_safe_name_escapes_without_merging_names() -> None:
    """Characters a file system may refuse are %XX-escaped, '%' too, so distinct ids stay distinct files."""
    assert pytest_plugin.safe_name("test_x[plain-1.5]") == "test_x[plain-1.5]"
    assert pytest_plugin.safe_name("test_x[a/b]") == "test_x[a%2Fb]"
    assert pytest_plugin.safe_name("test_x[a%2Fb]") == "test_x[a%252Fb]"
    assert pytest_plugin.safe_name('t[<>:"\\|?* é]') == "t[%3C%3E%3A%22%5C%7C%3F%2A%20%C3%A9]"


def test_safe_name_caps_the_length_with_a_hash() -> None:
    """A very long id keeps its start and ends in a hash of the whole, so two long ids do not collide."""
    one = pytest_plugin.safe_name("test_x[" + "a" * 300 + "]")
    two = pytest_plugin.safe_name("test_x[" + "a" * 299 + "b]")
    assert len(one) == len(two) == 120
    assert one[:103] == two[:103] == "test_x[" + "a" * 96
    assert one != two


def test_lock_path_sits_beside_the_cassette() -> None:
    """The contracts of `x.sealed.jsonl` are in `x.lock.json`."""
    assert cassette.lock_path("tests/cassettes/m/t[1].sealed.jsonl") == "tests/cassettes/m/t[1].lock.json"


def _search(query: str) -> dict[str, list[str]]:
    return {"hits": [query]}


def _size(text: str) -> int:
    return len(text)


def _record(path: str, *, version: str = "1") -> None:
    registry = cassette.CassetteRegistry(path, mode="once")
    registry.register(_search, name="search", version=version)
    registry.call("search", query="q")
    assert registry.save()


def test_drift_without_the_lock_still_fails_and_says_it_cannot_explain(tmp_path: Path) -> None:
    """A cassette whose lock is gone still fails on drift, with the fingerprints and no invented lines."""
    path = str(tmp_path / "t.sealed.jsonl")
    _record(path)
    os.remove(cassette.lock_path(path))
    registry = cassette.CassetteRegistry(path, mode="none", label="t.sealed.jsonl")
    registry.register(_search, name="search", version="2")
    with pytest.raises(ToolDriftError) as caught:
        registry.call("search", query="q")
    assert caught.value.__notes__ == [
        "cannot explain the drift: t.lock.json does not hold the recorded contract",
        "if the change is intended, re-record the cassette (--toolreplay-record-mode=all)"
        " and commit it with a drift note",
    ]


def test_new_episodes_keeps_the_lock_of_tools_not_registered_today(tmp_path: Path) -> None:
    """Appending keeps the recorded contract of a tool not registered today: its drift stays explainable."""
    path = str(tmp_path / "t.sealed.jsonl")
    _record(path)
    registry = cassette.CassetteRegistry(path, mode="new_episodes")
    registry.register(_size, name="size")
    registry.call("size", text="abc")
    assert registry.save()
    assert sorted(load_lock(cassette.lock_path(path)).tools) == ["search", "size"]
    assert [link.record.tool for link in read_links(path)] == ["search", "size"]


def test_nothing_recorded_writes_nothing(tmp_path: Path) -> None:
    """A recording registry that saw no call leaves no file behind (and no temp file)."""
    registry = cassette.CassetteRegistry(tmp_path / "t.sealed.jsonl", mode="all")
    assert not registry.save()
    assert list(tmp_path.iterdir()) == []


def test_a_cassette_must_be_sealed_and_the_mode_known(tmp_path: Path) -> None:
    """The registry refuses an unsealed file name and an unknown record mode."""
    with pytest.raises(ValueError, match=r"ends in \.sealed\.jsonl"):
        cassette.CassetteRegistry(tmp_path / "t.jsonl", mode="once")
    with pytest.raises(ValueError, match="record mode must be one of none, once, new_episodes, all"):
        cassette.CassetteRegistry(tmp_path / "t.sealed.jsonl", mode="sometimes")
