"""JSON tool definitions (MCP ``tools/list``, OpenAI ``tools``, Anthropic ``tools``) -> contracts.

Accepted documents: a JSON array of tools; an object with a ``tools`` array (an MCP
``tools/list`` result, an OpenAI or Anthropic request body); a JSON-RPC response whose
``result`` has ``tools``; an object with a ``functions`` or ``function`` array (legacy
OpenAI, the Berkeley function-calling leaderboard); or a single tool. An OpenTelemetry trace
(OTLP JSON exports, one or one per line) gives the tools its spans declare
(:mod:`toolreplay.contracts.traces`). A file named
``*.jsonl`` (or one that turns out to hold several JSON values) is read as JSON Lines,
each line one such document.

Accepted tool shapes, each reduced to a name and an input schema:

======================  ====================================================
MCP                     ``{"name", "inputSchema", "annotations"?, ...}``
Anthropic               ``{"name", "input_schema", ...}``
OpenAI (tools)          ``{"type": "function", "function": {"name", "parameters"?}}``
OpenAI (bare function)  ``{"name", "parameters"?, ...}``
======================  ====================================================

A missing ``parameters`` is the empty schema ``{}``. The signature of a JSON tool is
derived from its input schema by :func:`json_signature`.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from toolreplay.canonical import canonical, decode
from toolreplay.config import DEFAULT_MUTATORS
from toolreplay.contracts.fingerprint import Signature
from toolreplay.contracts.lock import ToolContract, make_contract
from toolreplay.contracts.text import contract_text, text_of_tool
from toolreplay.contracts.traces import LOOKED_FOR, declared_tools
from toolreplay.ecma import EcmaValidator
from toolreplay.errors import InputError
from toolreplay.escape import quote
from toolreplay.importers.otlp import is_export
from toolreplay.locate import pointer_token
from toolreplay.transcript import iter_lines, read_input

#: the metaschema's own patterns (``$anchor``) are ECMA-262 too
_META = EcmaValidator(Draft202012Validator.META_SCHEMA)
#: MCP's own defaults for a tool that sends no annotations: the worst case.
MCP_DEFAULT_HINTS = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False}


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolDefinition:
    """One tool as found in a definitions file."""

    name: str
    schema: Any
    #: "mcp", "anthropic", "openai" or "function" (a bare OpenAI-style function)
    shape: str
    #: the MCP ``annotations`` object; None for other shapes
    annotations: dict[str, Any] | None = None
    #: the contract text an agent reads (:mod:`toolreplay.contracts.text`); None: not known
    text: dict[str, Any] | None = None
    line: int | None = None
    pointer: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Imported:
    """Contracts built from definitions, and one message per tool that needs a word."""

    contracts: tuple[ToolContract, ...]
    warnings: tuple[str, ...]


def json_signature(name: str, schema: Any) -> Signature:
    """Derive the signature of a JSON tool from its input schema.

    One parameter per key of the schema's top-level ``properties``, in sorted order
    (JSON objects have no order; ``canonical`` sorts keys too), each
    ``[name, type, default]``:

    * type: the property's ``type`` (a list of types joined with ``|`` in sorted
      order), ``array[T]`` for an array whose ``items`` has type ``T``; without a
      ``type``: ``enum``, ``const``, ``$ref:REF``, the ``|``-joined types of
      ``anyOf``/``oneOf`` members, or ``any``;
    * default: ``required`` when the name is in ``required``, else ``optional``.

    JSON Schema's ``default``, ``description`` and ``title`` are annotations that do
    not change which arguments are valid, so they are not part of the signature
    (they are in the schema, and a change to them is a compatible schema change). That
    is also why the same tool exported for two vendors, one spelling out a default and
    one not, gets one signature.
    """
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return {"name": name, "params": []}
    required = _required(schema)
    params = [
        [key, type_of(properties[key]), "required" if key in required else "optional"]
        for key in sorted(properties)
    ]
    return {"name": name, "params": params}


def _required(schema: dict[str, Any]) -> set[str]:
    """The names an object schema's ``required`` lists."""
    required = schema.get("required")
    return {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()


def type_of(schema: Any) -> str:
    """A short type text for a property schema (see :func:`json_signature`)."""
    if schema is True:
        return "any"
    if schema is False:
        return "never"
    if not isinstance(schema, dict):
        return "invalid"
    text = _named_type(schema)
    if text == "array" and isinstance(schema.get("items"), dict):
        text = f"array[{type_of(schema['items'])}]"
    return text


def _named_type(schema: dict[str, Any]) -> str:
    """An object schema's type: its ``type``, else what ``enum``, ``const``, ``$ref`` or the
    alternatives of ``anyOf`` / ``oneOf`` say; ``any`` when none does."""
    for named in (_declared_type, _enum_or_const, _reference, _alternatives):
        text = named(schema)
        if text is not None:
            return text
    return "any"


def _declared_type(schema: dict[str, Any]) -> str | None:
    declared = schema.get("type")
    if isinstance(declared, str):
        return declared
    if isinstance(declared, list) and declared and all(isinstance(t, str) for t in declared):
        return "|".join(sorted(set(declared)))
    return None


def _enum_or_const(schema: dict[str, Any]) -> str | None:
    return next((keyword for keyword in ("enum", "const") if keyword in schema), None)


def _reference(schema: dict[str, Any]) -> str | None:
    ref = schema.get("$ref")
    return "$ref:" + ref if isinstance(ref, str) else None


def _alternatives(schema: dict[str, Any]) -> str | None:
    members = schema.get("anyOf", schema.get("oneOf"))
    if not isinstance(members, list) or not members:
        return None
    return "|".join(sorted({type_of(member) for member in members}))


def mcp_behaviour(annotations: dict[str, Any] | None) -> tuple[dict[str, bool], list[str]]:
    """Map MCP tool annotations onto (mutates, idempotent) as hints; missing ones take MCP's defaults.

    ``mutates`` is true unless ``readOnlyHint`` is true; a tool that says it is both
    read-only and destructive is taken at its worst (mutates). ``idempotent`` is
    ``idempotentHint``.
    """
    stated = annotations or {}
    hints, problems = _boolean_hints(stated)
    read_only = hints["readOnlyHint"]
    destructive_said = stated.get("destructiveHint") is True
    mutates = not read_only or destructive_said
    if read_only and destructive_said:
        problems.append("annotations say both readOnlyHint and destructiveHint; taken as mutating")
    return {"mutates": mutates, "idempotent": hints["idempotentHint"]}, problems


def _boolean_hints(annotations: dict[str, Any]) -> tuple[dict[str, bool], list[str]]:
    """Each hint as stated, MCP's default where it is not (or is not a boolean, which is a problem)."""
    hints = dict(MCP_DEFAULT_HINTS)
    problems = []
    for key in MCP_DEFAULT_HINTS:
        value = annotations.get(key)
        if isinstance(value, bool):
            hints[key] = value
        elif value is not None:
            problems.append(f"annotation {key} is not a boolean; MCP's default is used")
    return hints, problems


def read_definitions(path: str) -> list[ToolDefinition]:
    """Read the tool definitions in a JSON or JSON Lines file.

    A document that is not a recognisable list of tools, or a tool without a name, is
    an ``InputError``. Problems confined to one tool's schema are left to
    :func:`import_definitions`, which warns and keeps the tool.
    """
    documents = _documents(read_input(path), path)
    if documents and all(is_export(value) for value, _ in documents):
        return _trace_definitions(documents, path)
    definitions = []
    for value, line in documents:
        for item, pointer in _tool_items(value, "", path, line):
            definitions.append(_definition(item, pointer, path, line))
    return definitions


def _documents(raw: bytes, path: str) -> list[tuple[Any, int | None]]:
    """The JSON values of a definitions file, with their lines (None: the whole file is one); a
    file of several values without a JSON Lines name is read as one."""
    if path.endswith((".jsonl", ".ndjson")):
        return list(_lines(raw, path))
    try:
        return [(decode(raw), None)]
    except InputError as err:
        if not err.problem.startswith("invalid JSON: Extra data"):
            line = getattr(err.__cause__, "lineno", None)
            raise InputError(err.problem, path=path, line=line, pointer=err.pointer) from err
    return list(_lines(raw, path))


def _trace_definitions(documents: list[tuple[Any, int | None]], path: str) -> list[ToolDefinition]:
    """The tools the spans of OTLP JSON exports declare (:mod:`toolreplay.contracts.traces`)."""
    definitions = []
    try:
        for value, line in documents:
            for item, pointer in declared_tools(value, line):
                definitions.append(_definition(item, pointer, path, line))
    except InputError as err:
        if err.path is not None:
            raise
        raise InputError(err.problem, path=path, line=err.line, pointer=err.pointer) from err
    if not definitions:
        raise InputError(f"a trace that declares no tools: looked for {LOOKED_FOR}", path=path)
    return definitions


def _lines(raw: bytes, path: str) -> Iterator[tuple[Any, int]]:
    for number, line in iter_lines(io.BytesIO(raw), path):
        try:
            yield decode(line), number
        except InputError as err:
            raise InputError(err.problem, path=path, line=number, pointer=err.pointer) from err


def _tool_items(value: Any, pointer: str, path: str, line: int | None) -> Iterator[tuple[Any, str]]:
    if isinstance(value, list):
        for i, item in enumerate(value):
            yield item, f"{pointer}/{i}"
        return
    if isinstance(value, dict):
        listed = _tool_list(value, pointer)
        if listed is not None:
            yield from _tool_items(*listed, path, line)
            return
        if "name" in value or value.get("type") == "function":
            yield value, pointer
            return
    raise InputError(
        "not a tool definition list: expected an array of tools or an object with"
        ' "tools", "functions" or "function"',
        path=path,
        line=line,
        pointer=pointer,
    )


def _tool_list(value: dict[str, Any], pointer: str) -> tuple[Any, str] | None:
    """The tools an object lists, and where: an MCP answer's ``result.tools``, else its ``tools``,
    ``functions`` or ``function`` array; None when it lists none."""
    if isinstance(value.get("result"), dict) and "tools" in value["result"]:
        return value["result"]["tools"], pointer + "/result/tools"
    for key in ("tools", "functions", "function"):
        if isinstance(value.get(key), list):
            return value[key], f"{pointer}/{key}"
    return None


def _definition(item: Any, pointer: str, path: str, line: int | None) -> ToolDefinition:
    if not isinstance(item, dict):
        raise InputError("a tool definition must be a JSON object", path=path, line=line, pointer=pointer)
    inner, where, shape = _unwrapped(item, pointer)
    name = inner.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(
            'a tool definition needs a non-empty string "name"', path=path, line=line, pointer=where
        )
    shape, key = _shape(inner, shape)
    schema = inner.get(key, {})
    return ToolDefinition(
        name=name,
        schema=schema,
        shape=shape,
        annotations=_annotations(inner) if shape == "mcp" else None,
        text=_text(inner, shape, schema),
        line=line,
        pointer=f"{where}/{key}",
    )


def _unwrapped(item: dict[str, Any], pointer: str) -> tuple[dict[str, Any], str, str]:
    """(the definition itself, where it is, "openai" or "") of an item: OpenAI's ``{"type":
    "function", "function": {...}}`` holds it in its ``function``."""
    if item.get("type") == "function" and isinstance(item.get("function"), dict):
        return item["function"], pointer + "/function", "openai"
    return item, pointer, ""


def _shape(inner: dict[str, Any], shape: str) -> tuple[str, str]:
    """Whose shape a definition has (MCP, Anthropic, OpenAI or a bare function), and where its
    input schema is."""
    if "inputSchema" in inner:
        return "mcp", "inputSchema"
    if "input_schema" in inner:
        return "anthropic", "input_schema"
    return shape or "function", "parameters"


def _annotations(inner: dict[str, Any]) -> dict[str, Any] | None:
    annotations = inner.get("annotations")
    return annotations if isinstance(annotations, dict) else None


def _text(inner: dict[str, Any], shape: str, schema: Any) -> dict[str, Any]:
    """A definition's contract text (an MCP tool's by its own field names)."""
    if shape == "mcp":
        return text_of_tool(inner)
    return contract_text(title=inner.get("title"), description=inner.get("description"), schema=schema)


def import_definitions(
    definitions: list[ToolDefinition],
    *,
    version: str = "",
    mutators: frozenset[str] = DEFAULT_MUTATORS,
    path: str = "",
) -> Imported:
    """Fingerprint definitions into contracts; per-tool problems become warnings, never errors.

    ``mutates`` comes from the MCP annotations for MCP tools, from ``mutators`` for the
    others. A name defined again with the same contents is merged silently; with other
    contents the first definition is kept and the later one named in a warning.
    """
    contracts: dict[str, ToolContract] = {}
    first: dict[str, ToolDefinition] = {}
    warnings: list[str] = []

    def warn(defn: ToolDefinition, problem: str, pointer: str | None = None) -> None:
        where = path if defn.line is None else f"{path}:{defn.line}"
        at = f" (at {pointer or '/'})" if pointer is not None else ""
        warnings.append(f"{where}: tool {quote(defn.name)}: {problem}{at}")

    for defn in definitions:
        if defn.name in first:
            redefined = _redefinition(first[defn.name], defn)
            if redefined is not None:
                warn(defn, redefined)
            continue
        first[defn.name] = defn
        for problem, pointer in schema_problems(defn.schema):
            warn(defn, problem, defn.pointer + pointer)
        behaviour, problems = _behaviour(defn, mutators)
        for problem in problems:
            warn(defn, problem)
        contracts[defn.name] = _contract(defn, version, behaviour, path)
    return Imported(contracts=tuple(contracts.values()), warnings=tuple(warnings))


def _redefinition(earlier: ToolDefinition, defn: ToolDefinition) -> str | None:
    """Why a name defined again is a problem: other contents (the first definition is kept)."""
    if canonical([earlier.schema, earlier.annotations, earlier.text]) == canonical(
        [defn.schema, defn.annotations, defn.text]
    ):
        return None
    at = f"line {earlier.line}" if earlier.line is not None else earlier.pointer or "/"
    return f"defined again with a different schema; the first definition ({at}) is kept"


def _behaviour(defn: ToolDefinition, mutators: frozenset[str]) -> tuple[dict[str, bool], list[str]]:
    """Whether the tool mutates and is idempotent: an MCP tool's annotations say, else ``mutators``."""
    if defn.shape == "mcp":
        return mcp_behaviour(defn.annotations)
    return {"mutates": defn.name in mutators, "idempotent": False}, []


def _contract(defn: ToolDefinition, version: str, behaviour: dict[str, bool], path: str) -> ToolContract:
    try:
        return make_contract(
            name=defn.name,
            signature=json_signature(defn.name, defn.schema),
            schema=defn.schema,
            version=version,
            deterministic=True,
            text=defn.text,
            **behaviour,
        )
    except InputError as err:  # a schema nested too deep for a lock to hold
        problem = f"tool {quote(defn.name)}: input schema: {err.problem}"
        raise InputError(problem, path=path, line=defn.line, pointer=defn.pointer) from err


def schema_problems(schema: Any) -> list[tuple[str, str]]:
    """Why an input schema is not a usable JSON Schema for tool arguments: (problem, pointer) pairs.

    One pair at most: the first problem in document order, with a count of the rest.
    """
    if not isinstance(schema, (dict, bool)):
        return [("input schema is not a JSON Schema (an object or a boolean)", "")]
    errors = sorted(_META.iter_errors(schema), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        return [_invalid(errors)]
    if isinstance(schema, dict) and schema.get("type", "object") != "object":
        return [(f'input schema has type {canonical(schema["type"])}, not "object"', "/type")]
    return []


def _invalid(errors: list[ValidationError]) -> tuple[str, str]:
    """The first of the metaschema's errors (with how many more), and where it is."""
    pointer = "".join("/" + pointer_token(p) for p in errors[0].absolute_path)  # "" is the schema itself
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"input schema is not valid JSON Schema: {_meta_problem(errors[0], pointer)}{more}", pointer


def _meta_problem(error: ValidationError, pointer: str) -> str:
    """The metaschema's complaint, in words a tool author reads (a ``type`` that names no type)."""
    if pointer.endswith("/type"):
        return (
            f"{canonical(error.instance)} is not a JSON Schema type (those are array, boolean,"
            " integer, null, number, object, string)"
        )
    return error.message


def definition_contract(
    definition: Any, *, version: str = "", mutators: frozenset[str] = DEFAULT_MUTATORS
) -> ToolContract:
    """The contract of one tool definition (a JSON object), as ``fingerprint`` makes it; a
    definition that is not one tool is a ``ValueError``."""
    try:
        defn = _definition(definition, "", "definition", None)
    except InputError as err:
        raise ValueError(err.problem) from err
    imported = import_definitions([defn], version=version, mutators=mutators, path="definition")
    return imported.contracts[0]


def import_file(path: str, *, version: str = "", mutators: frozenset[str] = DEFAULT_MUTATORS) -> Imported:
    """Read a definitions file and fingerprint every tool in it."""
    return import_definitions(read_definitions(path), version=version, mutators=mutators, path=path)
