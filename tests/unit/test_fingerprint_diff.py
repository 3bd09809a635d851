"""Every drift class, on real tool definitions (GitHub's MCP server) edited one change at a time."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolreplay.analyses.difference import ABSENT
from toolreplay.analyses.fingerprint_diff import compare_locks, compare_transcript, diff_signature
from toolreplay.contracts.definitions import import_definitions, read_definitions
from toolreplay.contracts.lock import ToolLock, make_contract
from toolreplay.transcript import make_record

DATA = Path(__file__).resolve().parent.parent / "data" / "tools"
SAMPLE = DATA / "mcp_github-mcp-server_sample.json"


def load(tools: list[dict[str, Any]], tmp_path: Path, name: str, version: str = "") -> ToolLock:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(tools), encoding="utf-8")
    return ToolLock.of(import_definitions(read_definitions(str(path)), version=version).contracts)


def github() -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = json.loads(SAMPLE.read_text(encoding="utf-8"))
    return tools


def schema_of(tools: list[dict[str, Any]], name: str) -> dict[str, Any]:
    schema: dict[str, Any] = next(t for t in tools if t["name"] == name)["inputSchema"]
    return schema


def drift_lines(edit: Callable[[list[dict[str, Any]]], None], tmp_path: Path) -> list[str]:
    before = github()
    after = copy.deepcopy(before)
    edit(after)
    differences = compare_locks(load(before, tmp_path, "before"), load(after, tmp_path, "after"))
    return [f"{d.tool}: {d.text()}" for d in differences]


def set_key(name: str, path: list[str], value: Any) -> Callable[[list[dict[str, Any]]], None]:
    def edit(tools: list[dict[str, Any]]) -> None:
        node = schema_of(tools, name)
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return edit


def drop_key(name: str, path: list[str]) -> Callable[[list[dict[str, Any]]], None]:
    def edit(tools: list[dict[str, Any]]) -> None:
        node = schema_of(tools, name)
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return edit


CASES: list[tuple[str, Callable[[list[dict[str, Any]]], None], list[str]]] = [
    (
        "bound tightened",
        set_key("search_code", ["properties", "perPage", "maximum"], 50),
        ["search_code: schema (breaking): /properties/perPage/maximum 100 -> 50"],
    ),
    (
        "bound loosened",
        set_key("search_code", ["properties", "perPage", "maximum"], 200),
        ["search_code: schema (compatible): /properties/perPage/maximum 100 -> 200"],
    ),
    (
        "lower bound raised",
        set_key("search_code", ["properties", "page", "minimum"], 2),
        ["search_code: schema (breaking): /properties/page/minimum 1 -> 2"],
    ),
    (
        "new maxLength",
        set_key("search_code", ["properties", "query", "maxLength"], 256),
        ["search_code: schema (breaking): /properties/query/maxLength (absent) -> 256"],
    ),
    (
        "enum value removed",
        set_key("search_code", ["properties", "order", "enum"], ["asc"]),
        ['search_code: schema (breaking): /properties/order/enum ["asc","desc"] -> ["asc"]'],
    ),
    (
        "enum value added",
        set_key("search_code", ["properties", "order", "enum"], ["asc", "desc", "relevance"]),
        [
            'search_code: schema (compatible): /properties/order/enum ["asc","desc"] -> ["asc","desc","relevance"]'  # noqa: E501
        ],
    ),
    (
        "type narrowed",
        set_key("search_code", ["properties", "page", "type"], "integer"),
        [
            "search_code: signature (parameter retyped): /params/2/1 number -> integer",
            'search_code: schema (breaking): /properties/page/type "number" -> "integer"',
        ],
    ),
    (
        "type widened",
        set_key("search_code", ["properties", "sort", "type"], ["string", "null"]),
        [
            "search_code: signature (parameter retyped): /params/5/1 string -> null|string",
            'search_code: schema (compatible): /properties/sort/type "string" -> ["string","null"]',
        ],
    ),
    (
        "new required field",
        set_key("search_code", ["required"], ["query", "sort"]),
        [
            "search_code: signature (default changed): /params/5/2 optional -> required",
            'search_code: schema (breaking): /required ["query"] -> ["query","sort"]',
        ],
    ),
    (
        "description only",
        set_key("search_code", ["properties", "sort", "description"], "Sort field"),
        [
            "search_code: description: /inputSchema/properties/sort/description"
            " 'Sort field [-(\\'indexed\\' only)-]' -> 'Sort field'"
        ],
    ),
    (
        "property removed",
        drop_key("search_code", ["properties", "sort"]),
        [
            "search_code: signature (parameter removed): /params/5 'sort': string (optional) -> (absent)",
            'search_code: schema (breaking): /properties/sort {"description":"Sort field (\'indexed\' only)","type":"string"} -> (absent)',  # noqa: E501
        ],
    ),
    (
        "property renamed",
        lambda tools: schema_of(tools, "search_code")["properties"].update(
            ordering=schema_of(tools, "search_code")["properties"].pop("order")
        ),
        [
            'search_code: signature (parameter renamed): /params/1/0 "order" -> "ordering"',
            'search_code: schema (breaking): /properties/order {"description":"Sort order for results","enum":["asc","desc"],"type":"string"} -> (absent)',  # noqa: E501
            'search_code: schema (compatible): /properties/ordering (absent) -> {"description":"Sort order for results","enum":["asc","desc"],"type":"string"}',  # noqa: E501
        ],
    ),
    (
        "tool removed",
        lambda tools: tools.pop(0),
        ['actions_list: removed: fingerprint 4b1b3a4c8b0e0f9e, version ""'],
    ),
]


@pytest.mark.parametrize(("case", "edit", "expected"), CASES, ids=[c[0] for c in CASES])
def test_drift_class(
    case: str, edit: Callable[[list[dict[str, Any]]], None], expected: list[str], tmp_path: Path
) -> None:
    """One edit to a real schema gives exactly these classified lines."""
    lines = drift_lines(edit, tmp_path)
    if case == "tool removed":
        fingerprint = load(github(), tmp_path, "x").tools["actions_list"].fingerprint
        expected = [expected[0].replace("4b1b3a4c8b0e0f9e", fingerprint)]
    assert lines == expected


def test_added_and_version(tmp_path: Path) -> None:
    """A new tool is `added`; the same tools under another version are `version` drift."""
    before = github()
    after = [*github(), {"name": "new_tool", "inputSchema": {"type": "object"}}]
    old, new = load(before, tmp_path, "a", "1.0"), load(after, tmp_path, "b", "1.0")
    [added] = compare_locks(old, new)
    assert added.text() == f'added: fingerprint {new.tools["new_tool"].fingerprint}, version "1.0"'
    bumped = compare_locks(old, load(before, tmp_path, "c", "1.1"))
    assert len(bumped) == 7
    assert {d.text() for d in bumped} == {'version: "1.0" -> "1.1"'}


def test_unchanged_locks_have_no_drift(tmp_path: Path) -> None:
    """Re-reading the same definitions gives no differences."""
    assert compare_locks(load(github(), tmp_path, "a"), load(github(), tmp_path, "b")) == []


def test_python_signature_changes() -> None:
    """Python signatures: a flipped default, a renamed and a new parameter, a reorder."""
    old = {"name": "rm", "params": [["path", "str", "<class 'inspect._empty'>"], ["force", "bool", "False"]]}
    flipped = {
        "name": "rm",
        "params": [["path", "str", "<class 'inspect._empty'>"], ["force", "bool", "True"]],
    }
    assert diff_signature(old, flipped) == [("default changed", "/params/1/2", "False", "True")]
    renamed = {
        "name": "rm",
        "params": [["target", "str", "<class 'inspect._empty'>"], ["force", "bool", "False"]],
    }
    assert diff_signature(old, renamed) == [("parameter renamed", "/params/0/0", "path", "target")]
    grown = {"name": "rm", "params": [*old["params"], ["dry", "bool", "<class 'inspect._empty'>"]]}
    dry = ["dry", "bool", "<class 'inspect._empty'>"]
    assert diff_signature(old, grown) == [("parameter added", "/params/2", ABSENT, dry)]
    swapped = {"name": "rm", "params": [old["params"][1], old["params"][0]]}
    assert diff_signature(old, swapped) == [
        ("parameters reordered", "/params", ["path", "force"], ["force", "path"])
    ]


def test_transcript_fingerprints_against_lock() -> None:
    """Calls whose fingerprint the lock does not have are tool-drift, once per tool and fingerprint."""
    search = make_contract(name="search", signature={"name": "search", "params": []}, schema={}, version="2")
    lock = ToolLock.of([search])
    records = [
        make_record(index=0, tool="search", args={}, response={}, fingerprint=search.fingerprint),
        make_record(index=1, tool="search", args={}, response={}, fingerprint="0123456789abcdef"),
        make_record(index=2, tool="search", args={"q": 1}, response={}, fingerprint="0123456789abcdef"),
        make_record(index=3, tool="gone", args={}, response={}, fingerprint="fedcba9876543210"),
        make_record(index=4, tool="search", args={}, response={}),
    ]
    result = compare_transcript(records, lock, path="run.jsonl")
    assert (result.calls, result.fingerprinted, result.drifted) == (5, 4, 3)
    assert [(f.index, f.kind, f.message) for f in result.findings] == [
        (
            1,
            "tool-drift",
            f"tool 'search' was called with fingerprint 0123456789abcdef; the lock has {search.fingerprint}"
            ' (version "2")',
        ),
        (
            3,
            "tool-drift",
            "removed: tool 'gone' was called with fingerprint fedcba9876543210 and is not in the lock",
        ),
    ]
