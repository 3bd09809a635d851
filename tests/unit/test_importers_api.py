"""The importers from Python: sessions of records, straight from values in memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolreplay.errors import InputError
from toolreplay.importers import FORMATS, IMPORTERS, import_file, import_value
from toolreplay.transcript import record_line


def test_an_agent_loop_message_list_imports_directly() -> None:
    """A messages list as an OpenAI agent loop holds it becomes one session of records."""
    call = {"id": "c1", "type": "function", "function": {"name": "calculate", "arguments": '{"e":"2+2"}'}}
    messages = [
        {"role": "user", "content": "What is 2 + 2?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "4"},
    ]
    (session,) = import_value(messages, "openai-chat")
    assert [record_line(r) for r in session.records] == [
        '{"args":{"e":"2+2"},"index":0,"response":{"content":"4"},"tool":"calculate"}'
    ]


def test_errors_from_values_name_the_pointer() -> None:
    """A malformed value in memory is reported with its JSON pointer."""
    with pytest.raises(InputError) as caught:
        import_value([{"role": "tool", "content": "4"}], "openai-chat")
    assert str(caught.value) == '<value>: a tool message has no "tool_call_id" (at /0)'


def test_import_file_streams_sessions(tmp_path: Path) -> None:
    """import_file yields each episode of a JSON Lines file as its own session, numbered."""
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        '{"messages": [{"role": "tool", "tool_call_id": "a", "content": "x"}]}\n{"messages": []}\n'
    )
    sessions = list(import_file(str(trace)))
    assert [(s.number, len(s.records), s.orphan_results) for s in sessions] == [(0, 0, 1), (1, 0, 0)]


def test_unknown_format() -> None:
    """A format name that no importer has is a usage error naming the choices."""
    with pytest.raises(InputError, match="unknown format 'yaml'; choose one of auto, openai-chat"):
        import_value([], "yaml")


def test_every_importer_is_offered() -> None:
    """The CLI's choices are auto plus each registered importer, under its own name."""
    assert FORMATS == (
        "auto",
        "openai-chat",
        "openai-responses",
        "anthropic",
        "otel",
        "swe-agent",
        "tau2",
        "inspect",
    )
    assert all(IMPORTERS[name].name == name for name in FORMATS[1:])
