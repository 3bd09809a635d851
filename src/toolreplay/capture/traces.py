"""What ``record --otlp`` writes: one sealed transcript per trace, a link per tool call as it arrives.

An export request (in the OTLP JSON form, :mod:`toolreplay.capture.otlp_proto`) is split by
trace; each trace's spans go through the ``otel`` importer (``toolreplay import``'s, so whatever
conventions it reads, live capture reads too) and every call it finds is redacted and written
as the next link of ``DIR/TRACEID.sealed.jsonl``, flushed at once: a receiver killed at any
moment leaves files whose complete lines verify. A trace whose spans the importer refuses is
retried span by span, and only the spans it still refuses are rejected (the export's answer
counts them). docs/spec.md §8.1.
"""

from __future__ import annotations

import os
import re
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from toolreplay.capture.redact import Redactor
from toolreplay.chain import link_digest
from toolreplay.errors import InputError
from toolreplay.escape import quote
from toolreplay.files import SEALED_SUFFIX
from toolreplay.importers import import_value
from toolreplay.limits import MAX_RECORD_BYTES
from toolreplay.transcript import GENESIS, Record, make_record

#: a trace id as a file name: 32 hex digits, lower case (OTLP's 16 bytes)
TRACE_ID = re.compile(r"[0-9a-f]{32}")
#: at most this many transcripts are kept open at once; a trace's file is opened again to append
OPEN_FILES = 64


def trace_file(folder: str, trace_id: str) -> str:
    """The transcript of trace ``trace_id`` (hex, lower case) in ``folder``."""
    return os.path.join(folder, trace_id + SEALED_SUFFIX)


def earlier_traces(folder: str) -> list[str]:
    """The transcripts named for a trace that ``folder`` already holds, sorted."""
    if not os.path.isdir(folder):
        return []
    return sorted(
        name
        for name in os.listdir(folder)
        if name.endswith(SEALED_SUFFIX) and TRACE_ID.fullmatch(name.removesuffix(SEALED_SUFFIX))
    )


@dataclass(slots=True)
class _Chain:
    """One trace's transcript: where its chain stands, and its file while it is open."""

    path: str
    head: str = GENESIS
    count: int = 0
    out: IO[str] | None = None


@dataclass(frozen=True, slots=True)
class Taken:
    """What became of one export request: the spans rejected and why (the first reason)."""

    rejected: int = 0
    problem: str = ""


@dataclass(slots=True)
class _Batch:
    """The records of one trace in one request, and the spans the importer refused."""

    records: list[Record] = field(default_factory=list)
    rejected: int = 0
    problem: str = ""


class TraceFiles:
    """The transcripts of the traces received so far, in ``folder`` (created if missing).

    A folder that holds transcripts named for a trace is refused unless ``force``: then each is
    replaced when its trace's first call arrives. ``warn`` gets one line per problem. Use as a
    context manager, or call :meth:`close`.
    """

    def __init__(
        self, folder: str, *, redact: tuple[str, ...] = (), force: bool = False, warn: Callable[[str], None]
    ) -> None:
        self.redactor = Redactor(redact)
        self.folder = folder
        self.warn = warn
        self.chains: dict[str, _Chain] = {}
        self._open: OrderedDict[str, _Chain] = OrderedDict()
        _prepare(folder, force)

    @property
    def count(self) -> int:
        """Calls recorded so far, in all traces."""
        return sum(chain.count for chain in self.chains.values())

    def take(self, export: dict[str, Any]) -> Taken:
        """Record the tool calls of one export request (OTLP JSON); what was rejected."""
        traces, rejected = _by_trace(export)
        problem = NO_TRACE if rejected else ""
        if rejected:
            self.warn(f"{rejected} span(s) not recorded: {NO_TRACE}")
        for trace_id, found in traces.items():
            more, said = self._take_trace(trace_id, found)
            rejected += more
            problem = problem or said
        return Taken(rejected, problem)

    def _take_trace(self, trace_id: str, found: list[_Placed]) -> tuple[int, str]:
        """Record one trace's tool calls; how many spans were not recorded, and the first problem."""
        batch = _imported(found)
        rejected, problem = batch.rejected, batch.problem if batch.rejected else ""
        if batch.rejected:
            self.warn(f"trace {trace_id}: {batch.rejected} span(s) not recorded: {batch.problem}")
        for record in batch.records:
            written = self._write(trace_id, record)
            if written:
                rejected += 1
                problem = problem or written
                self.warn(f"trace {trace_id}: a call of {quote(record.tool)} not recorded: {written}")
        return rejected, problem

    def _write(self, trace_id: str, imported: Record) -> str:
        """Write ``imported`` as the next link of its trace's transcript; what prevented it ("")."""
        chain = self.chains.get(trace_id)
        if chain is None:
            chain = _Chain(trace_file(self.folder, trace_id))
        try:
            record = make_record(
                index=chain.count,
                tool=imported.tool,
                args=self.redactor(imported.args),
                response=self.redactor(imported.response),
                fingerprint=imported.fingerprint,
                text_digest=imported.text_digest,
            )
        except InputError as err:
            return err.problem
        digest, line = link_digest(record, chain.head)
        if len(line) > MAX_RECORD_BYTES:
            return f"the link would be {len(line)} bytes, over the {MAX_RECORD_BYTES}-byte limit of a line"
        out = self._opened(trace_id, chain)
        out.write(line + "\n")
        out.flush()
        chain.head, chain.count = digest, chain.count + 1
        return ""

    def _opened(self, trace_id: str, chain: _Chain) -> IO[str]:
        """The trace's file, open for appending (created, or replaced, with its first link)."""
        if chain.out is None:
            if len(self._open) >= OPEN_FILES:
                _, oldest = self._open.popitem(last=False)
                _close(oldest)
            first = trace_id not in self.chains
            chain.out = open(chain.path, "w" if first else "a", encoding="ascii", newline="\n")  # noqa: SIM115
            self.chains[trace_id] = chain
        self._open[trace_id] = chain
        self._open.move_to_end(trace_id)
        return chain.out

    def close(self) -> None:
        """Close every open transcript (each is whole and sealed after its last line)."""
        for chain in self._open.values():
            _close(chain)
        self._open.clear()

    def __enter__(self) -> TraceFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _close(chain: _Chain) -> None:
    if chain.out is not None:
        chain.out.close()
        chain.out = None


#: one span with the resource and scope it came with
_Placed = tuple[dict[str, Any], dict[str, Any], dict[str, Any]]
NO_TRACE = "a span without a trace id (16 bytes, not all zero)"


def _imported(found: list[_Placed]) -> _Batch:
    """The records of one trace's spans; spans the importer refuses are retried one by one, and
    only those it refuses alone are rejected."""
    batch = _Batch()
    try:
        batch.records = _records(_regrouped(found))
        return batch
    except InputError:
        pass
    for placed in found:
        try:
            batch.records += _records(_regrouped([placed]))
        except InputError as err:
            batch.rejected += 1
            batch.problem = batch.problem or f"{err.problem} (span {quote(str(placed[2].get('name', '')))})"
    return batch


def _prepare(folder: str, force: bool) -> None:
    """Make ``folder`` if it is missing; refuse one that holds trace transcripts (unless ``force``)
    or does not take new files."""
    earlier = earlier_traces(folder)
    if earlier and not force:
        raise InputError(
            f"holds {len(earlier)} trace transcript(s) already ({earlier[0]}...); not replacing them"
            " (--force replaces a trace's file when that trace arrives)",
            path=folder,
        )
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as err:
        raise InputError(f"cannot make the folder: {err.strerror}", path=folder) from err
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK | os.X_OK):
        raise InputError("not a folder that takes new files", path=folder)


def _records(part: dict[str, Any]) -> list[Record]:
    with warnings.catch_warnings():
        # what the importer says of an input without tool spans is no news here: most requests
        # hold an agent's other spans (its model calls, its run) and no tool call
        warnings.simplefilter("ignore")
        return [record for session in import_value(part, "otel") for record in session.records]


def _by_trace(export: dict[str, Any]) -> tuple[dict[str, list[_Placed]], int]:
    """The spans of an export by trace, traces in the order they first appear; and how many
    spans have no valid trace id (they belong to no trace)."""
    traces: dict[str, list[_Placed]] = {}
    orphans = 0
    for resource, scope, span in _placed(export):
        trace_id = str(span.get("traceId", "")).lower()
        if TRACE_ID.fullmatch(trace_id) and trace_id != "0" * 32:
            traces.setdefault(trace_id, []).append((resource, scope, span))
        else:
            orphans += 1
    return traces, orphans


def _placed(export: dict[str, Any]) -> Iterator[_Placed]:
    """Each span of an export with its resource and scope, in the export's order."""
    for resource in export.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                yield resource, scope, span


def _regrouped(found: list[_Placed]) -> dict[str, Any]:
    """Spans with their resource and scope, as one export (one entry per resource and scope)."""
    groups: dict[tuple[int, int], tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]] = {}
    for resource, scope, span in found:
        groups.setdefault((id(resource), id(scope)), (resource, scope, []))[2].append(span)
    parts = [
        {**resource, "scopeSpans": [{**scope, "spans": spans}]} for resource, scope, spans in groups.values()
    ]
    return {"resourceSpans": parts}
