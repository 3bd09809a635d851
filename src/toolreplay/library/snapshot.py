"""Snapshot replay: serve recorded responses instead of calling tools."""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from toolreplay import signing
from toolreplay.analyses.difference import differences
from toolreplay.analyses.volatile import Volatile
from toolreplay.canonical import canonical
from toolreplay.chain import ChainState, verify
from toolreplay.errors import SealError
from toolreplay.files import SEALED_SUFFIX
from toolreplay.library.failures import SnapshotMissError, ToolDriftError
from toolreplay.transcript import Link, Record, make_record, read_links, read_transcript
from toolreplay.volatile_rules import Rule


def _anchored(
    name: str,
    links: list[Link],
    expect_head: str | None,
    key: str | os.PathLike[str] | None,
    signature: str | os.PathLike[str] | None,
) -> ChainState:
    """The chain of a sealed transcript's links, verified and held to its anchors (SealError if not)."""
    state = verify(links)
    if state.broken is not None:
        b = state.broken
        raise SealError(
            f"the chain is broken at index {b.position} ({b.reason}): a recording whose seal"
            " does not verify is never served",
            path=name,
            line=b.line,
            position=b.position,
        )
    if expect_head is not None and expect_head.lower() != state.head:
        raise SealError(f"the chain ends on head {state.head}, expected {expect_head.lower()}", path=name)
    if key is not None:
        _signed(name, state, key, signature)
    return state


def _signed(
    name: str, state: ChainState, key: str | os.PathLike[str], signature: str | os.PathLike[str] | None
) -> None:
    """The signature (default ``NAME.sig``) verifies with ``key`` over the chain's head and length."""
    check = signing.check(
        os.fspath(signature) if signature is not None else name + ".sig",
        signing.load_public_key(os.fspath(key)),
        signing.Statement(head=state.head, count=state.links),
    )
    if check.problem:
        raise SealError(f"the signature does not anchor this file: {check.problem}", path=name)


def match_key(tool: str, args: dict[str, Any], volatile: Volatile | None = None) -> str:
    """The key under which a recorded call answers a given one: the one place it is computed.

    The canonical call (tool and arguments, key order irrelevant), as ``Record.call_key``;
    under ``volatile`` rules (docs/spec.md §3.6) an argument a rule under ``/args`` masks
    (a request id, a timestamp) does not count, so snapshot replay, ``toolreplay serve`` and
    the pytest plugin's cassettes all match calls the same way.
    """
    if volatile is not None and volatile.for_tool(tool):
        return volatile.texts(_asked(tool, args), None).call_key
    return '{"args":' + canonical(args) + ',"tool":' + canonical(tool) + "}"


def _asked(tool: str, args: dict[str, Any], line: int = 0) -> Record:
    """A call as the record :func:`match_key` masks: its arguments, no response (and the line of
    the recorded call it stands for, for messages)."""
    return replace(make_record(index=0, tool=tool, args=args, response={}), line=line)


def _keys(records: Sequence[Record], volatile: Volatile | None, path: str) -> Iterator[str]:
    """The :func:`match_key` of each record; under ``volatile`` rules the matches of their patterns
    are asked of the pattern worker a batch of calls at a time."""
    if volatile is None:
        return (match_key(record.tool, record.args) for record in records)
    asked = ((r, _asked(r.tool, r.args, r.line) if volatile.for_tool(r.tool) else None) for r in records)
    return (
        match_key(record.tool, record.args) if call is None else volatile.texts(call, None).call_key
        for record, call in volatile.ahead(asked, path, _call)
    )


def _call(pair: tuple[Record, Record | None]) -> Record | None:
    return pair[1]


def _check_unanchored(*anchors: object) -> None:
    """A transcript that is not sealed takes no anchor (``expect_head``, ``key``, ``signature``)."""
    if any(anchor is not None for anchor in anchors):
        raise ValueError("expect_head and key anchor a sealed transcript (*.sealed.jsonl)")


class Snapshot:
    """A recording that answers calls: the stub of snapshot mode (docs/spec.md §4).

    A call is answered by the recorded calls with the identical canonical call (tool and
    arguments, key order irrelevant), in recorded order; once they are used up the last
    one answers again. An unrecorded call raises :class:`SnapshotMissError` naming the
    nearest recorded call and the first argument that differs. When ``live`` maps tool
    names to today's fingerprints, a recorded call whose ``fingerprint`` differs raises
    :class:`ToolDriftError` instead of answering.
    """

    def __init__(
        self,
        records: Iterable[Record],
        *,
        live: Mapping[str, str] | None = None,
        path: str = "",
        volatile: Iterable[Rule] | Volatile = (),
    ) -> None:
        self.records = tuple(records)
        self.live = live
        #: the volatile rules (docs/spec.md §3.6) a call is looked up by and a re-execution compared
        #: by: an argument they mask does not count for matching (None: no rules)
        rules = volatile if isinstance(volatile, Volatile) else Volatile(volatile)
        self.volatile: Volatile | None = rules if rules else None
        #: the file the records came from ("" when built from records)
        self.path = path
        #: the head digest of a sealed file, once its chain verified (None otherwise)
        self.head: str | None = None
        #: how many calls were answered
        self.served = 0
        self._by_key: dict[str, list[Record]] = {}
        for record, key in zip(self.records, _keys(self.records, self.volatile, path), strict=True):
            self._by_key.setdefault(key, []).append(record)
        self._next: dict[str, int] = {}
        #: the record that answered the last call (None before the first)
        self.last: Record | None = None

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        *,
        live: Mapping[str, str] | None = None,
        volatile: Iterable[Rule] | Volatile = (),
        expect_head: str | None = None,
        key: str | os.PathLike[str] | None = None,
        signature: str | os.PathLike[str] | None = None,
    ) -> Snapshot:
        """Load a transcript (``*.jsonl``) or a sealed transcript (``*.sealed.jsonl``).

        A sealed transcript's chain is verified before anything is answered: a link that
        does not follow raises :class:`~toolreplay.errors.SealError` naming the first
        broken one. A chain only proves its links follow one another (a cut tail or a
        re-sealed file follows too), so anchor it: ``expect_head`` is the head digest it
        must end on; ``key`` an Ed25519 public key (PEM) that must verify ``signature``
        (default ``PATH.sig``, written by ``toolreplay sign``) over its head and length.
        ``volatile``: the config's volatile rules (:class:`~toolreplay.volatile_rules.Rule`).
        """
        name = os.fspath(path)
        if not name.endswith(SEALED_SUFFIX):
            _check_unanchored(expect_head, key, signature)
            return cls(read_transcript(name), live=live, path=name, volatile=volatile)
        if signature is not None and key is None:
            raise ValueError("signature needs key: the public key that must verify it")
        links = list(read_links(name))
        state = _anchored(name, links, expect_head, key, signature)
        snapshot = cls((link.record for link in links), live=live, path=name, volatile=volatile)
        snapshot.head = state.head
        return snapshot

    def restarted(self) -> Snapshot:
        """The same recording at its start again: nothing served yet, the index shared with this one
        (what a session of ``toolreplay serve`` holds is its counters, not a copy of the recording)."""
        fresh = copy.copy(self)
        fresh.served, fresh.last, fresh._next = 0, None, {}
        return fresh

    def call(self, name: str, /, **args: Any) -> dict[str, Any]:
        """Answer a call from the recording, checking drift against ``live``."""
        live = self.live.get(name) if self.live is not None else None
        return self.serve(name, args, live=live, check=self.live is not None)

    def serve(
        self, tool: str, args: dict[str, Any], *, live: str | None, check: bool = True
    ) -> dict[str, Any]:
        """Answer ``tool(args)``; with ``check``, a recorded fingerprint other than ``live`` is drift."""
        key = match_key(tool, args, self.volatile)
        found = self._by_key.get(key)
        if not found:
            raise self._miss(tool, args)
        position = self._next.get(key, 0)
        record = found[min(position, len(found) - 1)]
        self._next[key] = position + 1
        if check and record.fingerprint is not None and record.fingerprint != live:
            raise ToolDriftError(tool=tool, recorded=record.fingerprint, live=live, index=record.index)
        self.served += 1
        self.last = record
        return copy.deepcopy(record.response)  # the caller may mutate it; the recording must not change

    def _miss(self, tool: str, args: dict[str, Any]) -> SnapshotMissError:
        same_tool = [r for r in self.records if r.tool == tool]
        if not same_tool:
            tools = tuple(sorted({r.tool for r in self.records}))
            return SnapshotMissError(tool=tool, args=args, nearest_index=None, recorded_tools=tools)
        best = min(same_tool, key=lambda r: (sum(1 for _ in differences(r.args, args)), r.index))
        pointer, recorded, given = next(differences(best.args, args))
        return SnapshotMissError(
            tool=tool,
            args=args,
            nearest_index=best.index,
            pointer=pointer,
            recorded_value=recorded,
            given_value=given,
        )
