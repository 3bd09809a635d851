"""Two call sequences aligned on their canonical calls (the longest blocks of identical calls,
as ``difflib`` finds them), so one inserted or skipped call is one difference rather than a
cascade; two call tables aligned in the same memory whatever their size (a long middle goes
a window at a time)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from difflib import SequenceMatcher
from typing import Any

from toolreplay.analyses.calltable import CallTable, Column

#: Largest middle (baseline calls x run calls) aligned without difflib's autojunk heuristic.
MAX_EXACT_ALIGN = 4_000_000
#: Largest middle (calls on either side) difflib aligns in one piece; a longer one goes a window
#: at a time, so the alignment's memory is the same whatever the size of the transcripts.
ALIGN_WINDOW = 50_000

Opcode = tuple[str, int, int, int, int]


def align(old: Sequence[str], new: Sequence[str]) -> list[Opcode]:
    """``difflib``-style opcodes aligning two call sequences.

    The common head and tail are matched first (linear time); ``difflib`` aligns what
    is left between them. A large middle turns on difflib's own "popular element"
    heuristic (``autojunk``), which keeps thousands of identical polling calls from
    making the alignment quadratic, at the price of a coarser alignment there.
    """
    n, m = len(old), len(new)
    head = _same_head(old, new)
    tail = _same_tail(old, new, head)
    ops: list[Opcode] = [("equal", 0, head, 0, head)] if head else []
    ops += _match(old[head : n - tail], new[head : m - tail], head, head)
    if tail:
        ops.append(("equal", n - tail, n, m - tail, m))
    return ops


def _same_head(old: Sequence[str], new: Sequence[str]) -> int:
    """How many calls the two sequences start with in common."""
    head, shorter = 0, min(len(old), len(new))
    while head < shorter and old[head] == new[head]:
        head += 1
    return head


def _same_tail(old: Sequence[str], new: Sequence[str], head: int) -> int:
    """How many calls the two sequences end with in common, after their common ``head``."""
    n, m = len(old), len(new)
    tail = 0
    while tail < min(n, m) - head and old[n - 1 - tail] == new[m - 1 - tail]:
        tail += 1
    return tail


def _match(old: Sequence[Any], new: Sequence[Any], i0: int, j0: int) -> list[Opcode]:
    """difflib's opcodes for two middles, shifted to where they start."""
    exact = len(old) * len(new) <= MAX_EXACT_ALIGN
    matcher = SequenceMatcher(None, old, new, autojunk=not exact)
    return [(t, i1 + i0, i2 + i0, j1 + j0, j2 + j0) for t, i1, i2, j1, j2 in matcher.get_opcodes()]


#: calls compared at once when a head or tail of identical calls is looked for
_SCAN = 4096


def _common_head(old: Column, new: Column) -> int:
    limit = min(old.count, new.count)
    head = 0
    while head < limit:
        stop = min(limit, head + _SCAN)
        a, b = old.read(head, stop), new.read(head, stop)
        if a != b:
            size = old.size
            return head + next(
                k for k in range(stop - head) if a[k * size : (k + 1) * size] != b[k * size : (k + 1) * size]
            )
        head = stop
    return head


def _common_tail(old: Column, new: Column, head: int) -> int:
    n, m = old.count, new.count
    limit = min(n, m) - head
    tail = 0
    while tail < limit:
        step = min(limit - tail, _SCAN)
        a, b = old.read(n - tail - step, n - tail), new.read(m - tail - step, m - tail)
        if a != b:
            size = old.size
            return tail + next(
                k
                for k in range(step)
                if a[(step - 1 - k) * size : (step - k) * size]
                != b[(step - 1 - k) * size : (step - k) * size]
            )
        tail += step
    return tail


def align_tables(old: CallTable, new: CallTable, window: int | None = None) -> Iterator[Opcode]:
    """:func:`align` over two tables' call-key digests, opcode by opcode.

    Digests stand for the call keys one for one, and difflib looks at nothing but which
    elements are equal, so while the middle between the common head and tail is at most
    ``window`` calls on each side the opcodes are :func:`align`'s. A longer middle is
    aligned a window at a time (see :func:`_windows`), so that what difflib holds
    (about 300 bytes a call of the window) stays the same whatever the transcripts' size.
    """
    window = ALIGN_WINDOW if window is None else window
    n, m = len(old), len(new)
    head = _common_head(old.keys, new.keys)
    tail = _common_tail(old.keys, new.keys, head)
    if head:
        yield ("equal", 0, head, 0, head)
    if n - tail - head <= window and m - tail - head <= window:
        yield from _match(old.keys.items(head, n - tail), new.keys.items(head, m - tail), head, head)
    else:
        yield from _merged(_windows(old.keys, new.keys, head, n - tail, m - tail, window))
    if tail:
        yield ("equal", n - tail, n, m - tail, m)


def _windows(old: Column, new: Column, head: int, n: int, m: int, window: int) -> Iterator[Opcode]:
    """Align ``old[head:n]`` with ``new[head:m]`` a window of calls on each side at a time.

    Each window's opcodes are kept up to its last block of equal calls, and the next window
    starts after that block: what difflib left unmatched at a window's end may match in the
    next. A window with no equal call at all is passed over whole (on the side that goes on
    past it, if only one does). Where the right alignment fits in a window, this finds it.
    """
    i = j = head
    while True:
        a_stop, b_stop = min(n, i + window), min(m, j + window)
        ops = _match(old.items(i, a_stop), new.items(j, b_stop), i, j)
        if a_stop == n and b_stop == m:
            yield from ops
            return
        last = _last_equal(ops)
        if last is not None:
            yield from ops[: last + 1]
            i, j = ops[last][2], ops[last][4]
            continue
        passed = _passed_over(i, j, a_stop, b_stop, n, m)
        yield passed
        i, j = passed[2], passed[4]


def _last_equal(ops: list[Opcode]) -> int | None:
    """The position of the last block of equal calls among ``ops`` (None: there is none)."""
    return max((k for k, op in enumerate(ops) if op[0] == "equal"), default=None)


def _passed_over(i: int, j: int, a_stop: int, b_stop: int, n: int, m: int) -> Opcode:
    """A window without an equal call, passed over on the side that goes on past it, if only one
    does (the next window starts where it ends)."""
    if a_stop == n:  # the rest of old may still match further in new
        return ("insert", i, i, j, b_stop)
    if b_stop == m:
        return ("delete", i, a_stop, j, j)
    return ("replace", i, a_stop, j, b_stop)


def _merged(ops: Iterator[Opcode]) -> Iterator[Opcode]:
    """Opcodes as difflib gives them: no two equal blocks and no two differences in a row."""
    pending: Opcode | None = None
    for op in ops:
        if pending is not None and (pending[0] == "equal") == (op[0] == "equal"):
            pending = _joined(pending, op)
            continue
        if pending is not None:
            yield pending
        pending = op
    if pending is not None:
        yield pending


def _joined(first: Opcode, then: Opcode) -> Opcode:
    """Two blocks in a row of the same sort (equal, or a difference) as one."""
    _, i1, _, j1, _ = first
    _, _, i2, _, j2 = then
    return ("equal" if then[0] == "equal" else _difference_tag(i1, i2, j1, j2), i1, i2, j1, j2)


def _difference_tag(i1: int, i2: int, j1: int, j2: int) -> str:
    """difflib's tag of a difference between ``old[i1:i2]`` and ``new[j1:j2]``."""
    if i1 < i2 and j1 < j2:
        return "replace"
    return "delete" if i1 < i2 else "insert"
