"""The tool lock (``tools.lock.json``, docs/spec.md §1.5): recorded contracts of a tool set.

Other features read it through one call::

    lock = load_lock("tools.lock.json")
    contract = lock.tools["search"]
    contract.fingerprint, contract.version, contract.mutates, contract.deterministic

The file is a JSON object ``{"lock_version": 1, "tools": {NAME: CONTRACT}}`` where each
contract holds ``fingerprint``, ``version``, ``signature``, ``schema``,
``deterministic``, ``mutates``, ``idempotent`` and ``note``, and the contract text with its digest
(``text``, ``text_digest``: both or neither, a lock written before 0.7 has neither), and
nothing else (the three behaviour flags may be left out: ``deterministic`` defaults to true, ``mutates`` to
membership of the default mutator list, ``idempotent`` to false; ``note``, a person's words
about the tool, to none). Loading is
strict: unknown or missing fields, wrong types, and a fingerprint that does not
match its own signature, schema and version are refused (``InputError``, exit 2).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from toolreplay.canonical import decode, nesting_depth, too_deep
from toolreplay.config import DEFAULT_MUTATORS
from toolreplay.contracts.fingerprint import Signature, fingerprint_of
from toolreplay.contracts.text import text_digest, text_problem
from toolreplay.errors import InputError
from toolreplay.files import temp_beside
from toolreplay.limits import MAX_DEPTH
from toolreplay.locate import located, pointer_token
from toolreplay.transcript import read_input

#: Version of the lock file shape (schemas/tool-lock.schema.json).
LOCK_VERSION = 1
_CONTRACT_FIELDS = (
    "fingerprint",
    "version",
    "signature",
    "schema",
    "deterministic",
    "mutates",
    "idempotent",
    "note",
    "text",
    "text_digest",
)
_FLAGS = ("deterministic", "mutates", "idempotent")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolContract:
    """What a tool promised when it was fingerprinted.

    ``deterministic`` (default true): replay may assume equal calls give equal
    responses. ``mutates``: the tool changes state (a mutator, docs/spec.md §3.2).
    ``idempotent`` (default false): repeating the call has no further effect.
    """

    name: str
    fingerprint: str
    version: str
    signature: Signature
    schema: Any
    deterministic: bool = True
    mutates: bool = False
    idempotent: bool = False
    #: a person's words about the tool (why it is not deterministic ...); "" when none
    note: str = ""
    #: the contract text an agent reads (:mod:`toolreplay.contracts.text`); None: not known
    text: dict[str, Any] | None = None

    @property
    def text_digest(self) -> str | None:
        """The digest of :attr:`text`, or None when the contract text is not known."""
        return None if self.text is None else text_digest(self.text)

    def data(self) -> dict[str, Any]:
        """The contract as it is written in the lock (without its name; a note only when there is one)."""
        out = {
            "fingerprint": self.fingerprint,
            "version": self.version,
            "signature": self.signature,
            "schema": self.schema,
            "deterministic": self.deterministic,
            "mutates": self.mutates,
            "idempotent": self.idempotent,
        }
        if self.note:
            out["note"] = self.note
        if self.text is not None:
            out["text"] = self.text
            out["text_digest"] = self.text_digest
        return out


def declared_mutators(lock: ToolLock, configured: frozenset[str]) -> frozenset[str]:
    """The configured mutators, with the lock's ``mutates`` deciding for every tool it names."""
    return (configured - set(lock.tools)) | {name for name, c in lock.tools.items() if c.mutates}


def declared_nondeterministic(lock: ToolLock) -> frozenset[str]:
    """Tools the lock declares not deterministic: their responses are not compared."""
    return frozenset(name for name, c in lock.tools.items() if not c.deterministic)


def make_contract(
    *,
    name: str,
    signature: Signature,
    schema: Any,
    version: str,
    deterministic: bool = True,
    mutates: bool = False,
    idempotent: bool = False,
    text: dict[str, Any] | None = None,
) -> ToolContract:
    """Build a contract, computing its fingerprint."""
    return ToolContract(
        name=name,
        fingerprint=fingerprint_of(signature, schema, version),
        version=version,
        signature=signature,
        schema=schema,
        deterministic=deterministic,
        mutates=mutates,
        idempotent=idempotent,
        text=text,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolLock:
    """A tool set's contracts by tool name (read-only)."""

    tools: Mapping[str, ToolContract] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def of(cls, contracts: Iterable[ToolContract]) -> ToolLock:
        """A lock of these contracts, in name order; a name given twice is a ValueError."""
        tools: dict[str, ToolContract] = {}
        for contract in contracts:
            if contract.name in tools:
                raise ValueError(f"tool {contract.name!r} is given twice")
            tools[contract.name] = contract
        return cls(tools=MappingProxyType(dict(sorted(tools.items()))))

    @property
    def fingerprints(self) -> dict[str, str]:
        """Tool name -> fingerprint."""
        return {name: contract.fingerprint for name, contract in self.tools.items()}

    def data(self) -> dict[str, Any]:
        """The lock as the JSON object written to disk."""
        return {
            "lock_version": LOCK_VERSION,
            "tools": {name: self.tools[name].data() for name in sorted(self.tools)},
        }


def dump_lock(lock: ToolLock) -> str:
    """The lock file's text: sorted keys, two-space indent, ASCII, one final newline.

    Stable bytes, so a lock committed to git changes only where a contract did.
    """
    data = lock.data()
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=True, allow_nan=False) + "\n"
    for name, contract in sorted(data["tools"].items()):
        try:  # a lone surrogate (a Python tool's name or default) escapes fine, and reads back refused
            json.dumps([name, contract], ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as err:
            raise InputError(
                f"tool {json.dumps(name)}: a lock cannot hold its lone surrogate"
                f" (U+{ord(err.object[err.start]):04X}), which no reader here takes back"
            ) from err
    if too_deep(text.encode("ascii")):  # never write a lock that load_lock refuses
        for name in sorted(lock.tools):
            schema = json.dumps(lock.tools[name].schema).encode("ascii")
            if nesting_depth(schema, limit=MAX_DEPTH) > MAX_DEPTH - _SCHEMA_LEVEL:
                raise InputError(
                    f"tool {json.dumps(name)}: a lock cannot hold its schema, nested deeper than"
                    f" {MAX_DEPTH - _SCHEMA_LEVEL} levels (the schema starts at level {_SCHEMA_LEVEL + 1}"
                    f" of a file nested at most {MAX_DEPTH} deep)"
                )
    return text


#: a tool's schema sits at /tools/NAME/schema: three levels above it
_SCHEMA_LEVEL = 3


def save_lock(lock: ToolLock, path: str | os.PathLike[str]) -> None:
    """Write ``lock`` to ``path`` atomically (a temp file renamed into place)."""
    target = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(target))
    fd, tmp = temp_beside(directory)
    try:
        with os.fdopen(fd, "w", encoding="ascii", newline="\n") as out:
            out.write(dump_lock(lock))
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def load_lock(path: str | os.PathLike[str]) -> ToolLock:
    """Read and check a tool lock; every problem is an ``InputError`` naming file and pointer."""
    name = os.fspath(path)
    raw = read_input(name)
    try:
        value = decode(raw)
    except InputError as err:
        line = getattr(err.__cause__, "lineno", None)
        raise InputError(err.problem, path=name, line=line, pointer=err.pointer) from err
    try:
        return parse_lock(value, path=name)
    except InputError as err:
        raise located(err, raw) from err


def parse_lock(value: Any, *, path: str = "") -> ToolLock:
    """Check a decoded lock document and build the :class:`ToolLock`."""

    def fail(problem: str, pointer: str) -> InputError:
        return InputError(problem, path=path or None, pointer=pointer)

    _check_lock_version(value, fail)
    tools = value.get("tools")
    if not isinstance(tools, dict):
        raise fail('field "tools" must be an object of tool contracts', "/tools")
    contracts = []
    for tool, data in sorted(tools.items()):
        base = "/tools/" + pointer_token(tool)
        if not tool:
            raise fail("a tool name must not be empty", base)
        contracts.append(_parse_contract(tool, data, base, fail))
    return ToolLock.of(contracts)


def _check_lock_version(value: Any, fail: Any) -> None:
    """A lock document is an object of ``lock_version`` (this one) and ``tools``."""
    if not isinstance(value, dict):
        raise fail("a tool lock must be a JSON object", "")
    unknown = sorted(set(value) - {"lock_version", "tools"})
    if unknown:
        raise fail(f"unknown field {json.dumps(unknown[0])}", "/" + pointer_token(unknown[0]))
    if "lock_version" not in value:
        raise fail('missing field "lock_version"', "")
    if type(value["lock_version"]) is not int or value["lock_version"] != LOCK_VERSION:
        raise fail(f'field "lock_version" must be {LOCK_VERSION}', "/lock_version")


def _parse_contract(tool: str, data: Any, base: str, fail: Any) -> ToolContract:
    if not isinstance(data, dict):
        raise fail("a tool contract must be a JSON object", base)
    _check_contract_fields(data, base, fail)
    _check_fingerprint_and_version(data, base, fail)
    _check_signature(data["signature"], base + "/signature", fail)
    flags = _flags(tool, data, base, fail)
    note = data.get("note", "")
    if not isinstance(note, str):
        raise fail('field "note" must be a string', base + "/note")
    _check_fingerprint_matches(data, base, fail)
    return ToolContract(
        name=tool,
        fingerprint=data["fingerprint"],
        version=data["version"],
        signature=data["signature"],
        schema=data["schema"],
        note=note,
        text=_parse_text(data, base, fail),
        **flags,
    )


def _check_contract_fields(data: dict[str, Any], base: str, fail: Any) -> None:
    """No unknown field, and each required one there."""
    unknown = sorted(set(data) - set(_CONTRACT_FIELDS))
    if unknown:
        raise fail(f"unknown field {json.dumps(unknown[0])}", base + "/" + pointer_token(unknown[0]))
    for key in ("fingerprint", "version", "signature", "schema"):
        if key not in data:
            raise fail(f'missing field "{key}"', base)


def _check_fingerprint_and_version(data: dict[str, Any], base: str, fail: Any) -> None:
    fingerprint, version = data["fingerprint"], data["version"]
    if not isinstance(fingerprint, str) or not _HEX16.fullmatch(fingerprint):
        raise fail('field "fingerprint" must be 16 lowercase hex digits', base + "/fingerprint")
    if not isinstance(version, str):
        raise fail('field "version" must be a string', base + "/version")


def _check_fingerprint_matches(data: dict[str, Any], base: str, fail: Any) -> None:
    """The fingerprint is the one of the contract's signature, schema and version (no hand edit)."""
    expected = fingerprint_of(data["signature"], data["schema"], data["version"])
    if expected != data["fingerprint"]:
        raise fail(
            f"fingerprint {data['fingerprint']} does not match the contract's signature, schema and version"
            f" (they give {expected}); re-run toolreplay fingerprint instead of editing the lock",
            base + "/fingerprint",
        )


def _parse_text(data: dict[str, Any], base: str, fail: Any) -> dict[str, Any] | None:
    """The contract text of a lock entry (None for a lock written before it was kept)."""
    if "text" not in data and "text_digest" not in data:
        return None
    _check_both(data, base, fail)
    text = data["text"]
    problem = text_problem(text)
    if problem is not None:
        raise fail(problem[0], base + "/text" + problem[1])
    digest = data["text_digest"]
    expected = text_digest(text)
    if digest != expected:
        raise fail(
            f"text_digest does not match the contract text (it gives {expected}); re-run toolreplay"
            " fingerprint instead of editing the lock",
            base + "/text_digest",
        )
    result: dict[str, Any] = text
    return result


def _is_parameter(param: Any) -> bool:
    """A signature's parameter: ``[name, type, default]``, three strings."""
    return isinstance(param, list) and len(param) == 3 and all(isinstance(p, str) for p in param)


def _check_both(data: dict[str, Any], base: str, fail: Any) -> None:
    """A contract with ``text`` or ``text_digest`` has both."""
    for key, other in (("text", "text_digest"), ("text_digest", "text")):
        if key not in data:
            raise fail(f'missing field "{key}" (a contract with "{other}" needs both)', base)


#: a fingerprint as a lock holds it
_HEX16 = re.compile("[0-9a-f]{16}")


def _flags(tool: str, data: dict[str, Any], base: str, fail: Any) -> dict[str, bool]:
    """A contract's behaviour flags, each true or false; a missing one takes its default."""
    flags = {}
    for key in _FLAGS:
        default = key == "deterministic" or (key == "mutates" and tool in DEFAULT_MUTATORS)
        flag = data.get(key, default)
        if not isinstance(flag, bool):
            raise fail(f'field "{key}" must be true or false', f"{base}/{key}")
        flags[key] = flag
    return flags


def _check_signature(signature: Any, pointer: str, fail: Any) -> None:
    if not isinstance(signature, dict) or sorted(signature) != ["name", "params"]:
        raise fail('field "signature" must be an object with "name" and "params"', pointer)
    if not isinstance(signature["name"], str):
        raise fail("signature name must be a string", pointer + "/name")
    _check_params(signature["params"], pointer, fail)


def _check_params(params: Any, pointer: str, fail: Any) -> None:
    """A signature's ``params``: an array of [name, type, default] string triples."""
    if not isinstance(params, list):
        raise fail("signature params must be an array", pointer + "/params")
    for i, param in enumerate(params):
        if not _is_parameter(param):
            raise fail(
                "a parameter must be an array of 3 strings [name, type, default]", f"{pointer}/params/{i}"
            )
