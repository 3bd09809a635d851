"""A cassette's session file under new_episodes: the old one, then what the new session adds, the
appended calls' notifications under their indices in the cassette (library/mcp_cassette.py)."""

from __future__ import annotations

from typing import Any

from toolreplay.library.mcp_cassette import merged_session
from toolreplay.transcript import Record, make_record


def _record(index: int, tool: str, args: dict[str, Any], response: dict[str, Any]) -> Record:
    return make_record(index=index, tool=tool, args=args, response=response)


LISTED = {"result": {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}}
NOTES = {"notifications": [{"method": "notifications/progress", "params": {"progress": 1}}]}


def test_the_new_session_adds_only_what_the_old_one_lacks() -> None:
    old = (
        _record(0, "initialize", {"protocolVersion": "2025-11-25"}, {"result": {"capabilities": {}}}),
        _record(1, "tools/list", {}, LISTED),
    )
    new = (
        _record(0, "initialize", {"protocolVersion": "2025-11-25"}, {"result": {"capabilities": {"x": {}}}}),
        _record(1, "tools/list", {}, {"result": {"tools": []}}),
        _record(2, "resources/list", {}, {"result": {"resources": []}}),
        _record(3, "tools/call", {"index": 0}, NOTES),  # a call the cassette held already: dropped
        _record(4, "tools/call", {"index": 2}, NOTES),  # appended as the cassette's call 5
    )
    merged = merged_session(old, new, {2: 5})
    assert merged is not None
    assert [(r.tool, r.args, r.response) for r in merged] == [
        ("initialize", {"protocolVersion": "2025-11-25"}, {"result": {"capabilities": {}}}),
        ("tools/list", {}, LISTED),
        ("resources/list", {}, {"result": {"resources": []}}),
        ("tools/call", {"index": 5}, NOTES),
    ]


def test_either_session_missing() -> None:
    one = (_record(0, "tools/list", {}, LISTED),)
    assert merged_session(None, one, {}) == one
    assert merged_session(one, None, {}) == one
    assert merged_session(None, None, {}) is None
