"""The one lazy loader: a name written ``"module"`` or ``"module:attribute"``, imported when used.

The CLI's table of commands (``toolreplay.cli.group.COMMANDS``), the package's exports and the MCP
SDK's adapter (:mod:`toolreplay.sdk`) name what they give this way, so that nothing is imported
before it is needed (start-up is paid by every hook and CI step). The standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module
from typing import Any


def resolve(spec: str) -> Any:
    """The module ``spec`` names, or its attribute after the colon (imported now if not yet)."""
    module, _, attribute = spec.partition(":")
    value = import_module(module)
    return getattr(value, attribute) if attribute else value


def module_attribute(namespace: dict[str, Any], table: Mapping[str, str], name: str) -> Any:
    """A module's ``__getattr__`` (PEP 562) for the names of ``table`` (name -> spec): ``name``
    resolved and kept in the module's ``namespace``, so that its next use is a plain global."""
    spec = table.get(name)
    if spec is None:
        raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
    value = namespace[name] = resolve(spec)
    return value
