"""JSON tool definitions (MCP, OpenAI, Anthropic, BFCL) fingerprinted into contracts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolreplay.contracts.definitions import (
    import_file,
    json_signature,
    mcp_behaviour,
    read_definitions,
)
from toolreplay.errors import InputError

DATA = Path(__file__).resolve().parent.parent / "data" / "tools"


def test_signature_derivation() -> None:
    """Sorted properties; type text; required or optional; defaults and descriptions ignored."""
    schema = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "what to look for"},
            "limit": {"type": "integer", "default": 10},
            "mode": {"enum": ["fast", "slow"], "default": "fast"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "when": {"type": ["string", "null"]},
            "ref": {"$ref": "#/$defs/Where"},
            "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "free": {},
        },
        "required": ["query"],
    }
    assert json_signature("search", schema) == {
        "name": "search",
        "params": [
            ["either", "integer|string", "optional"],
            ["free", "any", "optional"],
            ["limit", "integer", "optional"],
            ["mode", "enum", "optional"],
            ["query", "string", "required"],
            ["ref", "$ref:#/$defs/Where", "optional"],
            ["tags", "array[string]", "optional"],
            ["when", "null|string", "optional"],
        ],
    }


def test_mailcli_pair_gives_identical_signatures() -> None:
    """The same 12 tools in Anthropic and OpenAI form derive the same signatures."""
    anthropic = import_file(str(DATA / "anthropic_MailCli_tools.json"))
    openai = import_file(str(DATA / "openai_MailCli_tools.json"))
    assert len(anthropic.contracts) == len(openai.contracts) == 12
    assert [c.signature for c in anthropic.contracts] == [c.signature for c in openai.contracts]
    assert anthropic.warnings == openai.warnings == ()


def test_mailcli_fingerprints_differ_only_where_descriptions_do() -> None:
    """Fingerprints include the schema, so tools whose property descriptions differ differ."""
    anthropic = {c.name: c for c in import_file(str(DATA / "anthropic_MailCli_tools.json")).contracts}
    openai = {c.name: c for c in import_file(str(DATA / "openai_MailCli_tools.json")).contracts}
    for name, contract in anthropic.items():
        same_schema = contract.schema == openai[name].schema
        assert (contract.fingerprint == openai[name].fingerprint) == same_schema


def test_github_mcp_sample_behaviour_from_annotations() -> None:
    """MCP annotations map onto mutates / idempotent; every tool fingerprints without warnings."""
    imported = import_file(str(DATA / "mcp_github-mcp-server_sample.json"))
    tools = {c.name: c for c in imported.contracts}
    assert imported.warnings == ()
    assert len(tools) == 7
    assert (tools["get_file_contents"].mutates, tools["get_file_contents"].idempotent) == (False, False)
    assert (tools["delete_file"].mutates, tools["delete_file"].idempotent) == (True, False)
    assert (tools["assign_copilot_to_issue"].mutates, tools["assign_copilot_to_issue"].idempotent) == (
        True,
        True,
    )
    assert tools["get_job_logs"].mutates is False
    assert all(c.deterministic for c in tools.values())


@pytest.mark.parametrize(
    ("annotations", "mutates", "idempotent"),
    [
        (None, True, False),
        ({}, True, False),
        ({"readOnlyHint": True}, False, False),
        ({"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True}, True, True),
        ({"readOnlyHint": True, "destructiveHint": True}, True, False),
    ],
)
def test_mcp_hint_mapping(annotations: dict[str, Any] | None, mutates: bool, idempotent: bool) -> None:
    """No annotations means MCP's worst case; read-only is the only way to not mutate."""
    behaviour, _ = mcp_behaviour(annotations)
    assert behaviour == {"mutates": mutates, "idempotent": idempotent}


def test_bfcl_sample_fingerprints_with_per_tool_messages() -> None:
    """BFCL's non-JSON-Schema types and redefinitions are warnings naming line, tool and pointer."""
    path = str(DATA / "bfcl_simple_python_sample.jsonl")
    imported = import_file(path)
    names = [c.name for c in imported.contracts]
    assert len(names) == len(set(names)) == 12
    assert imported.warnings[0] == (
        f"{path}:1: tool 'calculate_triangle_area': input schema is not valid JSON Schema:"
        ' "dict" is not a JSON Schema type (those are array, boolean, integer, null, number, object, string)'
        " (at /function/0/parameters/type)"
    )
    assert (
        f"{path}:12: tool 'calculate_triangle_area': defined again with a different schema;"
        " the first definition (line 1) is kept"
    ) in imported.warnings
    tuple_tool = next(c for c in imported.contracts if "tuple" in json.dumps(c.signature))
    assert any(p[1] == "tuple" for p in tuple_tool.signature["params"])


@pytest.mark.parametrize(
    ("document", "shape"),
    [
        ([{"name": "t", "inputSchema": {"type": "object"}}], "mcp"),
        ({"tools": [{"name": "t", "input_schema": {"type": "object"}}]}, "anthropic"),
        ([{"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}], "openai"),
        ({"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "t", "inputSchema": {}}]}}, "mcp"),
        ({"functions": [{"name": "t"}]}, "function"),
        ({"name": "t", "parameters": {"type": "object"}}, "function"),
    ],
)
def test_document_shapes(tmp_path: Path, document: Any, shape: str) -> None:
    """Every accepted container and tool shape yields the one tool with its shape."""
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    [definition] = read_definitions(str(path))
    assert (definition.name, definition.shape) == ("t", shape)


def test_json_lines_detected_without_jsonl_name(tmp_path: Path) -> None:
    """A .json file holding several JSON values (BFCL's own naming) is read as JSON Lines."""
    path = tmp_path / "BFCL_v4_simple.json"
    path.write_text('{"function": [{"name": "a"}]}\n{"function": [{"name": "b"}]}\n', encoding="utf-8")
    assert [(d.name, d.line) for d in read_definitions(str(path))] == [("a", 1), ("b", 2)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{"models": []}',
            "not a tool definition list: expected an array of tools or an object with"
            ' "tools", "functions" or "function" (at /)',
        ),
        ('[{"description": "no name"}]', 'a tool definition needs a non-empty string "name" (at /0)'),
        ("[1]", "a tool definition must be a JSON object (at /0)"),
        ('[{"name": "a", "name": "b"}]', 'duplicate key "name"'),
    ],
)
def test_bad_documents(tmp_path: Path, text: str, message: str) -> None:
    """A file that is not a tool list is one usage error naming the file."""
    path = tmp_path / "tools.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_definitions(str(path))
    assert str(err.value) == f"{path}: {message}"


def test_non_object_schema_type_warns(tmp_path: Path) -> None:
    """A valid schema whose type is not object gets a warning, not an error."""
    path = tmp_path / "tools.json"
    path.write_text(json.dumps([{"name": "t", "inputSchema": {"type": "string"}}]), encoding="utf-8")
    imported = import_file(str(path))
    assert imported.warnings == (
        f'{path}: tool \'t\': input schema has type "string", not "object" (at /0/inputSchema/type)',
    )
