"""toolreplay: audit what an AI agent did with its tools."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from toolreplay.canonical import canonical
from toolreplay.errors import InputError, ToolreplayError

try:
    __version__ = version("toolreplay")
except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
    __version__ = "0.0.0"

__all__ = ["InputError", "ToolreplayError", "__version__", "canonical"]
