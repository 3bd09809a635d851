"""The capture core without processes: session pairing, redaction, line splitting, probe verdicts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolreplay.analyses.difference import excerpts
from toolreplay.capture import matching
from toolreplay.capture.http import EventSplitter
from toolreplay.capture.probe import EXCERPT, Failure, Rules, judge, plan
from toolreplay.capture.redact import Redactor
from toolreplay.capture.session import Session
from toolreplay.capture.stdio import LineSplitter
from toolreplay.contracts.definitions import ToolDefinition, import_definitions
from toolreplay.errors import InputError
from toolreplay.transcript import make_record


def line(message: Any) -> bytes:
    return json.dumps(message).encode() + b"\n"


def call(ident: Any, tool: str, args: Any = None) -> bytes:
    params: dict[str, Any] = {"name": tool}
    if args is not None:
        params["arguments"] = args
    return line({"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params})


def result(ident: Any, value: Any) -> bytes:
    return line({"jsonrpc": "2.0", "id": ident, "result": value})


TOOL = {"name": "search", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}


def test_calls_are_paired_by_id_and_fingerprinted_with_the_server_version() -> None:
    """Answers pair with requests by id as the MCP SDK's client pairs them ("1" answers 1, a second
    answer is dropped), in answer order, with the fingerprint of the last tools/list under
    serverInfo.version."""
    session = Session()
    session.from_client(line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}))
    session.from_server(result(0, {"serverInfo": {"name": "s", "version": "2.1"}}))
    session.from_client(line({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}))
    assert session.from_server(result(9, {"tools": [TOOL]})).tools_listed
    session.from_client(call(1, "search", {"q": "a"}))
    session.from_client(call("x", "search"))
    second = session.from_server(result("x", {"content": []}))
    first = session.from_server(result("1", {"content": [{"type": "text", "text": "A"}]}))
    assert session.from_server(result(1, {"content": []})).calls == ()  # the client dropped it
    expected = import_definitions(
        [ToolDefinition(name="search", schema=TOOL["inputSchema"], shape="mcp")], version="2.1"
    ).contracts[0]
    assert [(c.args, c.response, c.fingerprint) for c in second.calls + first.calls] == [
        ({}, {"content": []}, expected.fingerprint),
        ({"q": "a"}, {"content": [{"type": "text", "text": "A"}]}, expected.fingerprint),
    ]
    session.from_client(call(2, "search"))
    assert session.from_client(call("2", "search")).warnings == (
        "request id '\"2\"' is used again before its answer; neither request is recorded",
    )


def test_a_server_request_is_not_an_answer_and_errors_are_recorded() -> None:
    """A server's own request reusing a pending id answers nothing; a JSON-RPC error becomes
    {"error": {code, message, data}}; an input_required result is not an answer yet; a batch,
    an id 4.0 and a cancelled request's late answer answer nothing (the SDK's client drops them)."""
    session = Session()
    session.from_client(call(1, "t", {}))
    sampling = line({"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage", "params": {}})
    assert session.from_server(sampling).calls == ()
    assert session.from_server(result(1, {"resultType": "input_required", "inputRequests": {}})).calls == ()
    session.from_client(call(5, "t"))
    error = {"jsonrpc": "2.0", "id": 5, "error": {"code": -32602, "message": "bad", "data": {"x": 1}}}
    assert [(c.tool, c.response) for c in session.from_server(line(error)).calls] == [
        ("t", {"error": {"code": -32602, "message": "bad", "data": {"x": 1}}})
    ]
    session.from_client(call(2, "t"))
    session.from_client(call(3, "u"))
    batch = session.from_server(line([json.loads(result(2, {"content": []}))]))
    assert batch.calls == ()
    assert batch.warnings == (
        "a JSON-RPC batch, which an MCP client refuses (it meant to answer tools/call 't' (id 2):"
        " not recorded); passed on, not looked at",
    )
    assert session.from_server(result(4.0, {"content": []})).calls == ()
    session.from_client(
        line({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}})
    )
    assert session.from_server(result(3, {"content": []})).calls == ()
    assert session.unanswered() == ("'t' (id 2)",)


def test_unreadable_lines_are_warned_about_not_recorded() -> None:
    """A line that is not JSON, or not JSON-RPC, gives a warning and leaves the session as it was."""
    session = Session()
    assert session.from_client(b"{nope\n").warnings == (
        "unreadable: invalid JSON: Expecting property name enclosed in double quotes at column 2;"
        " passed on, not looked at",
    )
    assert session.from_server(b'{"id": 1}\n').warnings == (
        "not a JSON-RPC message an MCP peer reads; passed on, not looked at",
    )
    assert session.from_server(b"\r\n") == session.from_server(b"")


def test_tool_list_pages_accumulate_until_a_first_page_starts_again() -> None:
    """Pages after a cursor add tools; a list without a cursor starts afresh."""
    session = Session()
    session.from_client(line({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
    session.from_server(result(1, {"tools": [TOOL], "nextCursor": "p2"}))
    session.from_client(line({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": "p2"}}))
    session.from_server(result(2, {"tools": [{"name": "other", "inputSchema": {"type": "object"}}]}))
    assert sorted(session.lock().tools) == ["other", "search"]
    session.from_client(line({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}))
    session.from_server(result(3, {"tools": [TOOL]}))
    assert sorted(session.lock().tools) == ["search"]


def test_redactor_masks_values_and_counts_them() -> None:
    """Each string value with a match counts once; keys and non-strings are left alone."""
    redact = Redactor([r"Bearer \S+", r"sk-[a-z0-9]+"])
    value = {"auth": "Bearer abc.def", "list": ["sk-123 and sk-456", 7], "Bearer x": "plain"}
    assert redact(value) == {
        "auth": "[REDACTED]",
        "list": ["[REDACTED] and [REDACTED]", 7],
        "Bearer x": "plain",
    }
    assert redact.count == 2


@pytest.mark.parametrize("pattern", ["(", "x*"])
def test_redactor_refuses_bad_patterns(pattern: str) -> None:
    """A pattern that does not compile, or matches the empty string, is a usage error."""
    with pytest.raises(InputError):
        Redactor([pattern])


def test_line_splitter_keeps_lines_whole_across_chunks() -> None:
    """Lines come out whole, with their newline, however the bytes were chunked."""
    splitter = LineSplitter()
    out = [*splitter.feed(b'{"a"'), *splitter.feed(b':1}\n{"b":2}\n{"c"'), *splitter.feed(b":3}\n\n")]
    assert out == [b'{"a":1}\n', b'{"b":2}\n', b'{"c":3}\n', b"\n"]
    assert [*splitter.feed(b"tail")] == [] and splitter.rest() == b"tail"


def test_event_splitter_yields_each_events_data() -> None:
    """Server-sent events come out as their data (multi-line data joined, comments and ids
    ignored, CRLF endings accepted), however the stream was chunked."""
    stream = b'event: message\r\nid: 1\r\ndata: {"a":\r\ndata: 1}\r\n\r\n: keep-alive\n\ndata:{"b":2}\n\n'
    splitter = EventSplitter()
    out = [data for i in range(0, len(stream), 5) for data in splitter.feed(stream[i : i + 5])]
    assert out == [b'{"a":\n1}', b'{"b":2}']


def test_probe_verdicts() -> None:
    """Only read-only tools are asked, and only before a call that may change state; redacted calls
    are not asked; a tool gone is unavailable and tool drift; a failed call is an unavailable
    finding; a changed answer is silent drift at its first differing pointer."""
    records = [
        make_record(index=0, tool="read", args={"p": "a"}, response={"v": [1, 2]}, fingerprint="0" * 16),
        make_record(index=1, tool="login", args={"token": "[REDACTED]"}, response={}),
        make_record(index=2, tool="gone", args={}, response={}, fingerprint="1" * 16),
        make_record(index=3, tool="flaky", args={}, response={}),
        make_record(index=4, tool="write", args={}, response={}),
        make_record(index=5, tool="read", args={"p": "b"}, response={"v": [1, 2]}),
    ]
    listed = frozenset({"read", "write", "login", "flaky"})
    rules = Rules(
        readonly=frozenset({"read", "login", "gone", "flaky", "write"}), mutators=frozenset({"write"})
    )
    planned = plan(records, rules, listed)
    assert [r.index for r in planned.ask] == [0, 3]
    assert dict(planned.skipped) == {
        1: "arguments redacted",
        4: "changes state",
        5: "after index 4 changed state",
    }
    answers = {0: ({"v": [1, 3]},), 3: (Failure(problem="no answer within 1 s"),)}
    live = {name: "0" * 16 for name in listed}
    result = judge(
        records, live=live, answers=answers, skipped=planned.skipped, rules=rules, path="run.jsonl"
    )
    assert dict(result.verdicts) == {
        "flaky": "unavailable",
        "gone": "unavailable",
        "login": "not-probed",
        "read": "silent-drift",
        "write": "not-probed",
    }
    assert dict(result.notes) == {
        "gone": "no longer listed",
        "login": "arguments redacted",
        "write": "changes state",
    }
    assert [(f.index, f.kind, f.message) for f in result.findings] == [
        (
            0,
            "silent-drift",
            "tool 'read' answered the call recorded at index 0 differently live, first at '/v/1':"
            " recorded 2, live 3",
        ),
        (2, "tool-drift", "tool 'gone' was recorded with fingerprint 1111111111111111, is no longer listed"),
        (
            3,
            "unavailable",
            "tool 'flaky' gave no answer to the call recorded at index 3: no answer within 1 s",
        ),
    ]


def test_probe_asks_only_known_read_only_tools_unless_allowed_and_sequence_asks_all() -> None:
    """A tool nobody declares read-only is not asked, nor anything after it; --allow asks it; the
    sequence mode asks every record in order, until one cannot be asked."""
    records = [
        make_record(index=0, tool="create", args={"n": 1}, response={}),
        make_record(index=1, tool="search", args={}, response={}),
        make_record(index=2, tool="search", args={}, response={}),
        make_record(index=3, tool="login", args={"token": "[REDACTED]"}, response={}),
        make_record(index=4, tool="search", args={"q": 1}, response={}),
    ]
    listed = frozenset({"create", "search", "login"})
    readonly = frozenset({"search", "login"})
    alone = plan(records, Rules(readonly=readonly), listed)
    assert (alone.ask, dict(alone.skipped)) == (
        (),
        {
            0: "not known read-only",
            1: "after index 0 changed state",
            2: "after index 0 changed state",
            3: "after index 0 changed state",
            4: "after index 0 changed state",
        },
    )
    allowed = plan(records, Rules(readonly=readonly, allowed=frozenset({"create"})), listed)
    assert [r.index for r in allowed.ask] == [0, 1, 4]
    sequence = plan(records, Rules(sequence=True), listed)
    assert [r.index for r in sequence.ask] == [0, 1, 2]
    assert dict(sequence.skipped) == {
        3: "arguments redacted",
        4: "after index 3 could not be replayed (arguments redacted)",
    }


def test_probe_shape_only_for_a_tool_declared_not_deterministic() -> None:
    """A tool the lock declares not deterministic is stable when only values change, and silent
    drift when its answer's shape changes (a member gone, a type changed)."""
    record = make_record(index=0, tool="now", args={}, response={"content": [{"type": "text", "text": "1"}]})
    rules = Rules(readonly=frozenset({"now"}), shape_only=frozenset({"now"}))
    live = {"now": "0" * 16}
    values = {0: ({"content": [{"type": "text", "text": "2"}]},)}
    same = judge([record], live=live, answers=values, skipped={}, rules=rules, path="r.jsonl")
    assert (dict(same.verdicts), dict(same.notes)) == (
        {"now": "stable"},
        {"now": "shape only: declared not deterministic"},
    )
    other = {0: ({"content": [{"type": "image", "data": "x"}]},)}
    drift = judge([record], live=live, answers=other, skipped={}, rules=rules, path="r.jsonl")
    assert dict(drift.verdicts) == {"now": "silent-drift"}


def test_a_shape_costs_each_item_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nested arrays are shaped in time linear in their depth (each level used to shape its items
    twice: an answer 20 arrays deep took seconds, the record limit of 128 for ever)."""
    texts: list[Any] = []
    monkeypatch.setattr(matching, "canonical", lambda value: texts.append(value) or json.dumps(value))
    deep: Any = 1
    for _ in range(16):
        deep = [deep]
    assert matching.shape(deep) == json.loads("[" * 16 + '"number"' + "]" * 16)
    assert len(texts) == 16
    assert matching.shape([{"a": 1}, "x", {"a": 2}, 3]) == ["number", "string", {"a": "number"}]


def test_excerpts_show_where_long_values_first_differ() -> None:
    """Two long texts that differ after 80 characters are shown from a little before the first
    difference, both cut at the same place (they used to print as the same excerpt)."""
    was, now = "x" * 200 + "old tail", "x" * 200 + "new tail"
    old, new = excerpts(was, now, EXCERPT)
    assert old != new
    assert old == '...xxxxxxxxxxxxxxxxxxxxold tail"'
    assert new == '...xxxxxxxxxxxxxxxxxxxxnew tail"'
    assert excerpts("a", "b", EXCERPT) == ('"a"', '"b"')
    assert excerpts("ab" * 50, "ba" * 50, EXCERPT)[0].startswith('"abab')
    assert excerpts("ab" * 50, "ba", EXCERPT)[1] == '"ba"'


def test_recording_writes_redacted_records_and_replaces_what_a_transcript_cannot_hold(tmp_path: Any) -> None:
    """Secrets are masked before the line is written; an answer over the line cap is replaced by an
    error for the client, and that error is the record (one warning); the next call gets the next index."""
    from toolreplay.capture.recording import UNKEPT_CODE, UNKEPT_MESSAGE, Recording
    from toolreplay.transcript import read_transcript

    warnings: list[str] = []
    out = tmp_path / "run.jsonl"
    with Recording(str(out), redact=[r"sk-\w+"], warn=warnings.append) as recording:
        recording.from_client(call(1, "login", {"key": "sk-abc"}))
        assert recording.from_server(result(1, {"content": [{"type": "text", "text": "ok sk-abc"}]})) is None
        recording.from_client(call(2, "dump"))
        huge = result(2, {"content": [{"type": "text", "text": "x" * (8 * 1024 * 1024)}]})
        replacement = recording.from_server(huge)
        recording.from_client(call(3, "after"))
        recording.from_server(result(3, {"content": []}))
    records = list(read_transcript(str(out)))
    assert [(r.index, r.tool, r.args) for r in records] == [
        (0, "login", {"key": "[REDACTED]"}),
        (1, "dump", {}),
        (2, "after", {}),
    ]
    assert records[0].response == {"content": [{"type": "text", "text": "ok [REDACTED]"}]}
    problem = f"message is {len(huge)} bytes, over the 8388608-byte limit"
    error = {"code": UNKEPT_CODE, "message": f"{UNKEPT_MESSAGE} ({problem})"}
    assert records[1].response == {"error": error}
    assert replacement is not None and json.loads(replacement) == {"jsonrpc": "2.0", "id": 2, "error": error}
    assert recording.redactor.count == 2
    assert warnings == [
        f"server message 2: tools/call of 'dump': {problem}; the client is answered with an error instead,"
        " and that is recorded"
    ]


def test_client_messages_no_peer_reads_are_judged_once_and_change_nothing() -> None:
    """Each message an MCP peer does not read, either way (method [1] or {}, params or a result not
    an object, a batch of them), is one warning, and a request waiting for its answer is still
    answered after them (a client's method [1] raised TypeError, which stopped the forwarding)."""
    from tests.mcp_agent import MALFORMED

    session = Session()
    session.from_client(call(1, "t", {}))
    for raw, said in MALFORMED:
        assert session.from_client(raw).warnings == (said,), raw
    server_side = [
        {"jsonrpc": "2.0", "id": 1, "method": [1]},
        {"jsonrpc": "2.0", "method": {}},
        {"jsonrpc": "2.0", "id": 1, "result": [1]},
        {"jsonrpc": "2.0", "id": 1, "error": "no"},
        {"jsonrpc": "2.0", "id": [1], "result": {}},
    ]
    for message in server_side:
        assert session.from_server(line(message)).warnings == (
            "not a JSON-RPC message an MCP peer reads; passed on, not looked at",
        ), message
    assert [c.tool for c in session.from_server(result(1, {"content": []})).calls] == ["t"]


def test_a_message_the_session_fails_to_read_is_a_warning_and_the_recording_goes_on(tmp_path: Any) -> None:
    """Should reading a message ever fail, the recording says so in one warning and returns as for
    any message it passes on unread (the proxy forwards it), and the next message is read as usual."""
    from toolreplay.capture.recording import Recording
    from toolreplay.capture.session import Observed

    class Failing(Session):
        def from_client(self, raw: bytes, channel: str = "") -> Observed:
            if b"boom" in raw:
                raise TypeError("unhashable type: 'list'")
            return super().from_client(raw, channel)

    warnings: list[str] = []
    with Recording(str(tmp_path / "run.jsonl"), warn=warnings.append) as recording:
        recording.session = Failing()
        recording.from_client(call(1, "boom"))
        recording.from_client(call(2, "t"))
        assert recording.from_server(result(2, {"content": []})) is None
        assert recording.count == 1
    assert warnings == [
        "client message 1: not looked at (TypeError: unhashable type: 'list'); passed on, please report"
    ]


def test_redactor_never_masks_an_empty_match() -> None:
    """A pattern that can match the empty string somewhere (a word boundary, a lookahead)
    masks only what it really matched: no [REDACTED] inserted between characters."""
    redact = Redactor([r"\b", r"(?=k)", r"sk-\w*"])
    assert redact({"a": "ab cd", "b": "key sk-1 sk-"}) == {"a": "ab cd", "b": "key [REDACTED] [REDACTED]"}
    assert redact.count == 1


def test_redactor_patterns_all_match_the_original_text() -> None:
    """A shorter pattern's mask cannot hide the rest of a secret from a longer one (the token
    after "Bearer" was left in clear), and a pattern never matches inside another's mask."""
    redact = Redactor(["Bearer", r"Bearer \S+", r"sk-\w+", "RED"])
    assert redact({"h": "Authorization: Bearer abc.def", "k": "sk-1 RED"}) == {
        "h": "Authorization: [REDACTED]",
        "k": "[REDACTED] [REDACTED]",
    }
    assert redact.count == 2


def test_a_tool_list_problem_is_warned_about() -> None:
    """A tools/list that names a tool twice with different schemas, or gives a tool an input
    schema that is not an object, is recorded (the first definition kept) with a warning each."""
    session = Session()
    session.from_client(line({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
    tools = [TOOL, {"name": "search", "inputSchema": {"type": "object"}}, {"name": "x", "inputSchema": "s"}]
    observed = session.from_server(result(1, {"tools": tools}))
    assert observed.tools_listed
    assert observed.warnings == (
        "tools/list: tool 'search': defined again with a different schema; the first definition (/) is kept",
        "tools/list: tool 'x': input schema is not a JSON Schema (an object or a boolean) (at /)",
    )
    assert session.lock().tools["search"].schema == TOOL["inputSchema"]


def test_probe_matches_a_redacted_response_and_never_prints_the_live_secret() -> None:
    """A live answer that differs from a redacted recording only where the masks are is stable;
    one that differs elsewhere is silent drift, and the live value (which may hold the secret
    the recording masked) is not printed."""
    same = make_record(index=0, tool="whoami", args={}, response={"text": "key [REDACTED] ok"})
    other = make_record(index=1, tool="token", args={"n": 1}, response={"v": ["[REDACTED]"], "w": 1})
    answers = {0: ({"text": "key sk-secret ok"},), 1: ({"v": ["sk-secret"], "w": 2},)}
    live = {"whoami": "0" * 16, "token": "0" * 16}
    result = judge([same, other], live=live, answers=answers, skipped={}, rules=Rules(), path="run.jsonl")
    assert dict(result.verdicts) == {"token": "silent-drift", "whoami": "stable"}
    assert [f.message for f in result.findings] == [
        "tool 'token' answered the call recorded at index 1 differently live, first at '/w':"
        " recorded 1, live (not shown: the recorded response is redacted)"
    ]


def test_a_request_id_reused_before_its_answer_records_neither_call() -> None:
    """A client that sends a second tools/call with a pending id cannot have its answers told
    apart: one warning, neither call recorded (the first answer was recorded as the second call)."""
    session = Session()
    session.from_client(call(1, "read", {"p": "a"}))
    assert session.from_client(call(1, "delete", {"p": "a"})).warnings == (
        "request id '1' is used again before its answer; neither request is recorded",
    )
    assert session.from_server(result(1, {"content": [{"type": "text", "text": "A"}]})).calls == ()
    assert session.from_server(result(1, {"content": []})).calls == ()
    session.from_client(call(1, "read", {"p": "b"}))
    assert [c.args for c in session.from_server(result(1, {"content": []})).calls] == [{"p": "b"}]


def test_probe_compares_the_tool_answer_not_the_protocol_envelope() -> None:
    """A live answer that differs only in the top-level _meta (the server's identity stamp, a
    request id), the 2026 revision's resultType or an explicit isError false where the recording
    has none is stable; a changed content still drifts."""
    meta = {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "2"}, "trace": "abc"}
    plain = make_record(index=0, tool="read", args={}, response={"content": []})
    stamped = make_record(index=1, tool="list", args={}, response={"content": [], "_meta": {"trace": "x"}})
    answers = {
        0: ({"content": [], "_meta": meta, "resultType": "complete", "isError": False},),
        1: ({"content": [1], "_meta": meta},),
    }
    live = {"read": "0" * 16, "list": "0" * 16}
    result = judge([plain, stamped], live=live, answers=answers, skipped={}, rules=Rules(), path="run.jsonl")
    assert dict(result.verdicts) == {"list": "silent-drift", "read": "stable"}
    assert [f.message for f in result.findings] == [
        "tool 'list' answered the call recorded at index 1 differently live, first at '/content/0':"
        " recorded (absent), live 1"
    ]
