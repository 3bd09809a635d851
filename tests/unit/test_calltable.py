"""Unit tests of the call tables behind ``diff``: columns in and out of the temporary file, the
alignment over digests, a window at a time."""

from __future__ import annotations

import itertools
import json
import random

import pytest

from toolreplay.analyses import calltable
from toolreplay.analyses.align import Opcode, align, align_tables
from toolreplay.analyses.calltable import CallTable, Column, Store, table_of
from toolreplay.transcript import Record, parse_line


def _records(keys: list[int]) -> list[Record]:
    out = []
    for index, key in enumerate(keys):
        line = json.dumps({"index": index, "tool": f"t{key % 3}", "args": {"k": key}, "response": {}})
        out.append(parse_line(line.encode(), line=index + 1)[0])
    return out


def _tables(store: Store, old: list[int], new: list[int]) -> tuple[CallTable, CallTable]:
    return table_of(store, _records(old)), table_of(store, _records(new))


def _well_formed(ops: list[Opcode], n: int, m: int) -> None:
    """Contiguous and complete on both sides, tags that match their ranges, and no two equal
    blocks or two differences in a row (as difflib gives them)."""
    assert [op[1] for op in ops] == [0] + [op[2] for op in ops[:-1]]
    assert [op[3] for op in ops] == [0] + [op[4] for op in ops[:-1]]
    assert ops[-1][2] == n and ops[-1][4] == m
    want = {(True, True): "replace", (True, False): "delete", (False, True): "insert"}
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            assert i2 - i1 == j2 - j1 > 0
        else:
            assert tag == want[(i1 < i2, j1 < j2)]
    for a, b in itertools.pairwise(ops):
        assert (a[0] == "equal") != (b[0] == "equal")


@pytest.mark.parametrize("spill", [False, True])
def test_a_column_reads_back_what_was_appended(monkeypatch: pytest.MonkeyPatch, spill: bool) -> None:
    """Any range, across chunks in the temporary file and the last chunk in memory."""
    if spill:
        monkeypatch.setattr(calltable, "RESIDENT_TAILS", 0)
    items = [bytes([i % 256, i // 256, 7]) for i in range(1000)]
    with Store() as store:
        column = Column(store, 3, chunk=64)
        for item in items:
            column.append(item)
        column.finish()
        rng = random.Random(3)
        for _ in range(200):
            start = rng.randrange(1001)
            stop = rng.randrange(start, 1001)
            assert column.read(start, stop) == b"".join(items[start:stop])
        assert list(column.scan(5, 300)) == items[5:300]


def test_digests_align_as_the_call_keys_do() -> None:
    """The alignment over digests is align()'s over the call keys, repeated calls and all."""
    rng = random.Random(11)
    for _ in range(30):
        old = [rng.randrange(6) for _ in range(rng.randrange(60))]
        new = [rng.randrange(6) for _ in range(rng.randrange(60))]
        with Store() as store:
            a, b = _tables(store, old, new)
            expected = align([r.call_key for r in _records(old)], [r.call_key for r in _records(new)])
            assert list(align_tables(a, b)) == expected


def test_sparse_edits_align_alike_in_windows() -> None:
    """Calls left out, added and changed here and there: a window at a time finds the same
    alignment as difflib over the whole middle."""
    rng = random.Random(5)
    for _ in range(10):
        old = list(range(1000))
        new = list(old)
        for _ in range(12):
            at = rng.randrange(len(new))
            choice = rng.randrange(3)
            if choice == 0:
                del new[at]
            elif choice == 1:
                new.insert(at, 10_000 + at)
            else:
                new[at] = 20_000 + at
        with Store() as store:
            a, b = _tables(store, old, new)
            assert list(align_tables(a, b, window=64)) == list(align_tables(a, b))


def test_windows_cover_any_pair_of_sequences() -> None:
    """However little the two sides share, windowed opcodes cover both sides in order."""
    rng = random.Random(8)
    for size_old, size_new, alphabet in ((300, 40, 50), (40, 300, 50), (300, 300, 1000), (500, 450, 4)):
        old = [rng.randrange(alphabet) for _ in range(size_old)]
        new = [rng.randrange(alphabet) for _ in range(size_new)]
        with Store() as store:
            a, b = _tables(store, old, new)
            ops = list(align_tables(a, b, window=32))
        _well_formed(ops, size_old, size_new)
        for tag, i1, i2, j1, j2 in ops:
            if tag == "equal":
                assert old[i1:i2] == new[j1:j2]


def test_a_run_with_nothing_in_common_is_one_difference() -> None:
    """No call shared: the windows add up to one replace, as difflib says it."""
    with Store() as store:
        a, b = _tables(store, list(range(200)), list(range(1000, 1150)))
        assert list(align_tables(a, b, window=16)) == [("replace", 0, 200, 0, 150)]


def test_light_records_keep_what_findings_name() -> None:
    """Tool, index, line and fingerprint come back as read; the values come back in full."""
    line = {
        "index": 0,
        "tool": "w",
        "args": {"p": 1},
        "response": {"r": 2},
        "fingerprint": "0123456789abcdef",
    }
    record = parse_line(json.dumps({**line, "state": {"f": "x"}}).encode(), line=9)[0]
    with Store() as store:
        table = table_of(store, [record])
        light = table.light(0)
        assert (light.tool, light.index, light.line, light.fingerprint) == ("w", 0, 9, "0123456789abcdef")
        assert light.state is not None and light.canon_state != record.canon_state
        assert table.full(0) is record
        assert table.recorded["w"].fingerprint == "0123456789abcdef"
