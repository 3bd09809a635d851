"""Any JSON input gives sessions or a located InputError: never another exception."""

from __future__ import annotations

import io
import json
import warnings
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from toolreplay.errors import InputError
from toolreplay.importers import FORMATS, import_stream
from toolreplay.importers.base import TraceWarning

_KEYS = st.sampled_from(
    [
        "role",
        "content",
        "tool_calls",
        "id",
        "type",
        "function",
        "name",
        "arguments",
        "tool_call_id",
        "messages",
        "traj",
        "input",
        "output",
        "call_id",
        "tool_use_id",
        "is_error",
        "resourceSpans",
        "scopeSpans",
        "spans",
        "attributes",
        "key",
        "value",
        "stringValue",
        "traceId",
        "startTimeUnixNano",
        "trajectory",
        "history",
        "action",
        "observation",
        "error",
        "status",
        "code",
    ]
)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from(
        [
            "",
            "x",
            "{}",
            '{"a":1}',
            "tool_use",
            "tool_result",
            "function_call",
            "function_call_output",
            "mcp_call",
            "assistant",
            "tool",
            "function",
            "execute_tool",
            "gen_ai.operation.name",
            "1",
        ]
    )
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=5),
    max_leaves=25,
)


@settings(max_examples=examples(300), deadline=None)
@given(value=_JSON, fmt=st.sampled_from(FORMATS), lines=st.booleans())
def test_importers_never_crash(value: Any, fmt: str, lines: bool) -> None:
    """Whatever the shape, an importer returns sessions or raises InputError naming the file."""
    if lines and isinstance(value, list):
        data = "\n".join(json.dumps(v) for v in value).encode()
    else:
        data = json.dumps(value).encode()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TraceWarning)  # an input without tool calls may say so
            _, sessions = import_stream(io.BytesIO(data), "in.json", fmt)
            for session in sessions:
                assert [r.index for r in session.records] == list(range(len(session.records)))
    except InputError as err:
        assert err.path == "in.json"
