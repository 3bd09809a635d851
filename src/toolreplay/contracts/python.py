"""Fingerprint Python tools named ``module:object``: a ToolRegistry, a callable, or a collection of them."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from toolreplay.config import DEFAULT_MUTATORS
from toolreplay.contracts.fingerprint import Signature, python_signature
from toolreplay.contracts.lock import ToolContract, ToolLock, make_contract
from toolreplay.errors import InputError
from toolreplay.escape import one_line
from toolreplay.library.registry import ToolRegistry


def load_object(spec: str) -> Any:
    """Import ``module:attr.path``; the current directory is importable, as with ``python -m``."""
    module_name, _, attr_path = spec.partition(":")
    if not module_name or not attr_path:
        raise InputError("expected module:object", path=spec)
    obj = _imported(module_name, spec)
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as err:
            raise InputError(f"module {module_name!r} has no attribute {attr_path!r}", path=spec) from err
    return obj


def _imported(module_name: str, spec: str) -> Any:
    """The module, imported with the current directory on the path."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(module_name)
    except Exception as err:  # the module's own code may raise anything while importing
        raise InputError(
            f"cannot import module {module_name!r}: {type(err).__name__}: {one_line(str(err))}", path=spec
        ) from err


def python_lock(
    obj: Any, *, version: str = "", mutators: frozenset[str] = DEFAULT_MUTATORS, spec: str = ""
) -> ToolLock:
    """The lock of a Python tool source.

    A ``ToolRegistry`` gives its registered contracts (their own versions and schemas);
    a callable, a list or tuple of callables, or a mapping of names to callables is
    fingerprinted with the empty schema ``{}`` and ``version``.
    """

    if isinstance(obj, ToolRegistry):
        return obj.lock()
    named = _named_tools(obj, spec)
    contracts: list[ToolContract] = []
    seen: set[str] = set()
    for name, fn in named:
        if not callable(fn):
            raise InputError(f"{name or 'an item'} is a {type(fn).__name__}, not a callable", path=spec)
        if name in seen:
            raise InputError(f"two tools are named {name!r}", path=spec)
        seen.add(name)
        signature = _signature(fn, name, spec)
        contracts.append(
            make_contract(
                name=name, signature=signature, schema={}, version=version, mutates=name in mutators
            )
        )
    return ToolLock.of(contracts)


def _named_tools(obj: Any, spec: str) -> list[tuple[str, Any]]:
    """(name, tool) of a callable, a list or tuple of callables, or a mapping of names to callables;
    a list's item that is no callable is named "" (refused by the caller)."""
    if isinstance(obj, Mapping):
        return [(str(name), fn) for name, fn in obj.items()]
    if isinstance(obj, (list, tuple)):
        return [(str(_signature(fn, "", spec)["name"]) if callable(fn) else "", fn) for fn in obj]
    if callable(obj):
        return [(str(_signature(obj, "", spec)["name"]), obj)]
    raise InputError(
        f"is a {type(obj).__name__}: expected a ToolRegistry, a callable, or a list or dict of callables",
        path=spec,
    )


def _signature(fn: Callable[..., Any], name: str, spec: str) -> Signature:
    """``python_signature(fn)`` with what can go wrong as a usage error naming the tool: a
    builtin with no signature, or a default whose ``repr`` raises (the user's code may raise
    anything)."""
    label = repr(name) if name else f"{getattr(fn, '__name__', type(fn).__name__)!r}"
    try:
        return python_signature(fn)
    except Exception as err:  # inspect's TypeError/ValueError, or the defaults' own __repr__
        reason = str(err) if isinstance(err, TypeError | ValueError) else f"{type(err).__name__}: {err}"
        raise InputError(
            f"tool {label} has no signature to fingerprint: {one_line(reason)}", path=spec
        ) from err
