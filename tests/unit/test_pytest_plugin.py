"""The pytest plugin's cheap parts: its import cost, cassette file names, the record modes."""

from __future__ import annotations

import subprocess
import sys

from toolreplay import pytest_plugin
from toolreplay.library import cassette


def test_the_plugin_imports_no_library_code() -> None:
    """Loading the plugin (every pytest session does) imports neither the library nor the chain code."""
    code = (
        "import sys, toolreplay.pytest_plugin\n"
        "print(sorted(m for m in sys.modules if m.startswith('toolreplay')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out == "['toolreplay', 'toolreplay.pytest_plugin']\n"


def test_the_package_still_exports_its_api() -> None:
    """`from toolreplay import X` works for every name in __all__, imported on first use."""
    import toolreplay

    for name in toolreplay.__all__:
        assert getattr(toolreplay, name) is not None
    assert toolreplay.ToolRegistry is cassette.ToolRegistry


def test_record_modes_agree() -> None:
    """The plugin's option choices are the cassette module's modes (copied: the plugin imports cheaply)."""
    assert pytest_plugin.RECORD_MODES == cassette.RECORD_MODES
    assert pytest_plugin.CASSETTE_SUFFIX == cassette.CASSETTE_SUFFIX


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
