"""The extras' adapter: whether a library is there, and the message that says how to get it."""

from __future__ import annotations

import pytest

from toolreplay import extras
from toolreplay.errors import InputError, ToolreplayError


def test_every_extra_of_the_package_is_known_and_installed_here() -> None:
    """The adapter names each extra pyproject declares, and the developer venv has them all."""
    import tomllib

    from tests.conftest import ROOT

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    assert set(extras.EXTRAS) == set(declared)
    assert all(extras.installed(name) for name in extras.EXTRAS)


def test_a_missing_extra_is_refused_with_its_install_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """require() names the feature, the library and the pip line; the error class is the caller's."""
    monkeypatch.setitem(extras.EXTRAS, "mcp", ("toolreplay_no_such_module", "the MCP SDK"))
    assert not extras.installed("mcp")
    with pytest.raises(InputError) as err:
        extras.require("mcp", "toolreplay record")
    assert str(err.value) == "toolreplay record needs the MCP SDK: pip install 'toolreplay[mcp]'"
    with pytest.raises(ToolreplayError):
        extras.require("mcp", "signing", error=ToolreplayError)


def test_a_feature_needs_the_modules_it_names() -> None:
    """installed() with modules: every one must be found, a missing parent package included."""
    assert extras.installed("otel", ("opentelemetry.proto", "google.rpc"))
    assert not extras.installed("otel", ("opentelemetry.toolreplay_no_such_module",))
    assert not extras.installed("otel", ("toolreplay_no_such_package.sub",))
