"""capture/wire.py's request-id rules are the MCP SDK dispatcher's, checked against the SDK itself on
generated values (wire.py keeps a copy so that record never imports the whole ``mcp`` package)."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st
from mcp.shared.dispatcher import as_request_id, coerce_request_id

from toolreplay.capture import wire

#: what a JSON-RPC id can be on the wire, and the strings int() reads in surprising ways
WIRE_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text()
    | st.sampled_from(["7", " 7", "+7", "-0", "7_0", "\u0667", "0x7", "1e3", "", "٣٤"]),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=4,
)


@given(WIRE_VALUES)
@example(True)
@example("\u0667")
def test_as_request_id_is_the_sdks(value: Any) -> None:
    ours, theirs = wire.as_request_id(value), as_request_id(value)
    assert (type(ours), ours) == (type(theirs), theirs)


@given(st.integers() | st.text() | st.sampled_from(["7", " 7", "+7", "7_0", "\u0667", "0x7", "-0"]))
def test_coerce_request_id_is_the_sdks(ident: int | str) -> None:
    ours, theirs = wire.coerce_request_id(ident), coerce_request_id(ident)
    assert (type(ours), ours) == (type(theirs), theirs)
    assert wire.correlation(ident) == wire.correlation(theirs)
