"""Tool contract fingerprints (docs/spec.md §3.5).

A fingerprint hashes what a caller relies on: the signature, the input schema and
the pinned version::

    sig         = canonical(signature)
    schema_c    = canonical(schema)
    fingerprint = sha256_hex(f"{sig}|{schema_c}|{version}")[:16]

The hashed text is UTF-8: ``sig`` and ``schema_c`` are ASCII, the version is any text (a
server's ``serverInfo.version`` is untrusted), so ASCII versions hash as they always did.

For a Python callable the signature is ``{"name": fn.__name__, "params": [[name,
str(annotation), str(default)], ...]}`` in ``inspect.signature`` order, with the raw
annotation and default objects (an absent one is ``inspect.Parameter.empty``). For a
JSON tool definition it is derived from the input schema (see
:func:`toolreplay.contracts.definitions.json_signature`).
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable
from typing import Any

from toolreplay.canonical import canonical
from toolreplay.errors import InputError
from toolreplay.escape import quote

#: A signature as stored in a lock: ``{"name": str, "params": [[name, type, default], ...]}``.
Signature = dict[str, Any]


def python_signature(fn: Callable[..., Any]) -> Signature:
    """The signature of a Python callable, as docs/spec.md §3.5 defines it."""
    params = [
        [param.name, str(param.annotation), str(param.default)]
        for param in inspect.signature(fn).parameters.values()
    ]
    return {"name": _name_of(fn), "params": params}


def _name_of(fn: Callable[..., Any]) -> str:
    # a callable object has no __name__ of its own; its class names it
    name = getattr(fn, "__name__", None)
    return name if isinstance(name, str) else type(fn).__name__


def fingerprint_of(signature: Signature, schema: Any, version: str) -> str:
    """Hash a signature, a schema and a version into a 16-hex-digit fingerprint."""
    if not isinstance(version, str):
        raise TypeError(f"version must be a string, not {type(version).__name__}")
    text = f"{canonical(signature)}|{canonical(schema)}|{version}"
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as err:  # only the version can hold one: the canonical parts are ASCII
        raise InputError(
            f"version {quote(version)} holds a lone surrogate (U+{ord(err.object[err.start]):04X}),"
            " which has no UTF-8 form to fingerprint"
        ) from err
    return hashlib.sha256(data).hexdigest()[:16]


def tool_fingerprint(fn: Callable[..., Any], schema: Any, version: str) -> str:
    """The contract fingerprint of a Python tool (docs/spec.md §3.5).

    ``schema`` is the tool's input JSON Schema (any JSON value; key order and
    whitespace do not matter), ``version`` the version you pin, passed explicitly.
    """
    return fingerprint_of(python_signature(fn), schema, version)
