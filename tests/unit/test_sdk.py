"""The MCP SDK's adapter: each name is the SDK's own object, imported on first use, and a missing
library is one line that says how to install the extra."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from toolreplay import sdk
from toolreplay.errors import InputError


def _type_checking_names() -> set[str]:
    """The names sdk.py imports under ``if TYPE_CHECKING:`` (what mypy sees)."""
    tree = ast.parse((ROOT / "src" / "toolreplay" / "sdk.py").read_text(encoding="utf-8"))
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING"
    )
    names = set()
    for node in block.body:
        assert isinstance(node, ast.Import | ast.ImportFrom)
        names.update(alias.asname or alias.name for alias in node.names)
    return names


def test_what_mypy_sees_is_what_runs() -> None:
    """Each name the type checker is shown is one the table gives at run time, and no other."""
    assert _type_checking_names() == set(sdk.PARTS)


@pytest.mark.parametrize("name", sorted(sdk.PARTS))
def test_each_name_is_the_sdk_object_itself(name: str) -> None:
    module, _, attribute = sdk.PARTS[name].partition(":")
    expected = importlib.import_module(module)
    if attribute:
        expected = getattr(expected, attribute)
    assert getattr(sdk, name) is expected


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_part"):
        sdk.no_such_part  # noqa: B018


def test_importing_the_adapter_imports_no_sdk() -> None:
    """A module that imports the adapter at its top costs nothing until it uses a part."""
    code = (
        "import sys, toolreplay.sdk, toolreplay.capture.session, toolreplay.capture.serve\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in"
        " ('mcp', 'mcp_types', 'anyio', 'pydantic', 'uvicorn', 'httpx2')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_missing_library_says_how_to_install_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sdk.PARTS, "missing_part", "toolreplay_no_such_module:thing")
    with pytest.raises(InputError) as err:
        sdk.missing_part  # noqa: B018
    assert str(err.value) == (
        "this needs the MCP SDK (toolreplay_no_such_module is missing): pip install 'toolreplay[mcp]'"
    )
