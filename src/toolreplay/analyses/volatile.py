"""Volatile values: the parts of a record that may change between two runs (docs/spec.md §3.6).

A rule (the config's ``[[volatile]]``) names a tool (or ``*``), a place in the record and,
optionally, an ECMA-262 ``pattern``. Where it lands, the whole value (no pattern) or each
match of the pattern inside a string is *masked*: it compares equal to any value of the same
JSON type (any other match of the same pattern). Everything else is compared as before.
Every rule that lands on a value applies, in the config's order, where and as it would alone
(:class:`_Masking`): matches of several rules in one string are masked together, and each rule
counts what it masks.

The sealed bytes never change: masking happens only on the texts a comparison digests.
A record a rule masks nothing in keeps its canonical texts, so a comparison without rules,
or of a tool no rule names, is the one it always was.

A pattern comes from the configuration (over a pull request's range, the base commit's) and
the values it runs on from the run, so it runs where the scope's patterns run: in the killable
worker of :mod:`toolreplay.ecma`, with the same limits (one second on one value,
``pattern_budget_seconds`` in all per transcript), the matches of many values asked in one
trip (:meth:`Volatile.ahead`). A value a pattern could not be cut in time has no comparison
text that is neither a guess nor a difference the run does not have, so it is an error naming
the rule, the file and the line (:class:`~toolreplay.errors.InputError`), never a hang.

The place is a JSON pointer from the record (``/args/...``, ``/response/...`` or
``/state/...``) in which ``*`` stands for any one member or item, and ``#`` steps into a
string holding a JSON text: ``/response/content/*/text#/datetime`` is the ``datetime``
member of the JSON object each text holds. Such a text is then compared as the JSON value it
holds (its spacing and member order no longer count). A key ``*`` or a key holding ``#`` is
reached only by ``*``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from toolreplay.analyses.volatile_places import landings, named_indices, named_keys
from toolreplay.canonical import canonical, canonical_str, decode
from toolreplay.errors import InputError
from toolreplay.escape import quote
from toolreplay.limits import DEFAULT_BUDGET_SECONDS
from toolreplay.transcript import Record
from toolreplay.volatile_rules import Rule, compiled_pattern, json_type

#: what a masked value or substring shows in a finding's message
SHOWN = "<volatile>"


# --- masked values -----------------------------------------------------------------------


# Each masked value has a comparison ``text`` (canonical JSON, with the masked parts in marks no
# canonical text holds outside a string, so no value can pose as a masked one) and a ``shown``
# value for a finding's message (each mask as ``<volatile>``).


@dataclass(frozen=True, slots=True)
class _Whole:
    """A masked value: only its JSON type is compared. ``value`` is what was there (a later rule
    counts what it would mask in it)."""

    kind: str
    value: Any = field(compare=False)

    def text(self) -> str:
        return f"<{self.kind}>"

    def shown(self) -> Any:
        return SHOWN


#: a masked run of a string: its start, its end, and the numbers of the rules whose matches it holds
Run = tuple[int, int, tuple[int, ...]]


@dataclass(frozen=True, slots=True)
class _Pieces:
    """A string with masked runs: the text between them is compared, each run by the rules it holds."""

    source: str
    runs: tuple[Run, ...]

    def parts(self) -> Iterator[tuple[str, tuple[int, ...]]]:
        """(the text before a run, the run's rules) for each run, then (the rest, ())."""
        at = 0
        for start, stop, numbers in self.runs:
            yield self.source[at:start], numbers
            at = stop
        yield self.source[at:], ()

    def text(self) -> str:
        marks = (canonical_str(p) + (f" <{','.join(map(str, n))}>" if n else "") for p, n in self.parts())
        return "(" + " ".join(marks) + ")"

    def shown(self) -> Any:
        return "".join(piece + (SHOWN if numbers else "") for piece, numbers in self.parts())


@dataclass(frozen=True, slots=True)
class _Embedded:
    """A string holding a JSON text, some of which is masked: that value, masked."""

    value: Any
    source: str = field(compare=False)

    def text(self) -> str:
        return "#" + _text(self.value)

    def shown(self) -> Any:
        return canonical(_shown(self.value))


_MASKED = (_Whole, _Pieces, _Embedded)


#: a string cut at its matches: (piece, whether it is a match), in order (no match: empty)
Pieces = list[tuple[str, bool]]
#: what cuts a string at the matches of rule number N's pattern
Cut = Callable[[int, str], Pieces]


def pieces(text: str, spans: Sequence[int]) -> Pieces:
    """``text`` cut at the non-empty matches whose UTF-8 byte ranges ``spans`` holds, flat (``start,
    stop, start, stop, ...``, as regress gives them: on code point boundaries, with the ``u`` flag)."""
    raw = text.encode("utf-8")
    out: Pieces = []
    at = 0
    for start, stop in zip(spans[0::2], spans[1::2], strict=True):
        if stop > start:
            out.append((raw[at:start].decode("utf-8"), False))
            out.append((raw[start:stop].decode("utf-8"), True))
            at = stop
    if out:
        out.append((raw[at:].decode("utf-8"), False))
    return out


def trusted_matches(pattern: str, text: str) -> Pieces:
    """``text`` cut at the matches of ``pattern``, in process and without a time limit: only for
    toolreplay's own linear patterns (``probe --suggest-volatile``'s candidates), as
    :func:`toolreplay.ecma.search` is for its published schemas. A rule's pattern goes through
    :class:`Volatile`, in the worker."""
    if not _utf8(text):
        return []
    found = compiled_pattern(pattern).find_iter(text) or ()
    return pieces(text, [bound for span in (m.range() for m in found) for bound in (span.start, span.stop)])


def _utf8(text: str) -> bool:
    """Whether UTF-8 holds ``text``: one with a lone surrogate has no match, and is compared whole."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class _Masking:
    """One rule applied to one record, after the rules before it in the config: counts what it
    masked. Each rule lands where it would alone and counts what it would mask alone; where an
    earlier rule masked the value whole, it stays whole."""

    def __init__(self, rule: Rule, number: int, cut: Cut) -> None:
        self.rule = rule
        self.number = number
        self.cut = cut
        self.masked = 0

    def apply(self, value: Any, tokens: Sequence[str], rest: Sequence[Sequence[str]]) -> Any:
        if isinstance(value, _MASKED):
            return self._apply_masked(value, tokens, rest)
        if tokens:
            return self._descend(value, tokens, rest)
        if rest:
            return self._embedded(value, rest)
        return self._mask(value)

    def _apply_masked(
        self, value: _Whole | _Pieces | _Embedded, tokens: Sequence[str], rest: Sequence[Sequence[str]]
    ) -> Any:
        """A value an earlier rule masked (whole, cut, or entered as JSON)."""
        if isinstance(value, _Whole):
            self.apply(value.value, tokens, rest)  # counted as alone; the value stays masked whole
            return value
        if isinstance(value, _Pieces):
            return value if tokens or rest else self._recut(value)
        return self._reenter(value, tokens, rest)

    def _recut(self, value: _Pieces) -> Any:
        """A string an earlier rule's pattern cut: masked whole, or this rule's matches masked too."""
        if self.rule.pattern is None:
            self.masked += 1
            return _Whole("string", value)
        spans = self._matches(value.source)
        return _Pieces(value.source, _merged(value.runs, spans)) if spans else value

    def _reenter(self, value: _Embedded, tokens: Sequence[str], rest: Sequence[Sequence[str]]) -> Any:
        """A JSON text an earlier rule entered: entered again at the same ``#``, or masked whole (a
        pattern does not cut a text compared as the JSON value it holds)."""
        if not tokens and not rest and self.rule.pattern is None:
            self.masked += 1
            return _Whole("string", value)
        if tokens or not rest:
            return value
        inner = self.apply(value.value, rest[0], rest[1:])
        return value if inner is value.value else _Embedded(inner, value.source)

    def _descend(self, value: Any, tokens: Sequence[str], rest: Sequence[Sequence[str]]) -> Any:
        if isinstance(value, dict):
            return self._members(value, tokens, rest)
        if isinstance(value, list):
            return self._items(value, tokens, rest)
        return value

    def _members(self, value: dict[str, Any], tokens: Sequence[str], rest: Sequence[Sequence[str]]) -> Any:
        changed = {key: self.apply(value[key], tokens[1:], rest) for key in named_keys(value, tokens[0])}
        changed = {key: new for key, new in changed.items() if new is not value[key]}
        return {**value, **changed} if changed else value

    def _items(self, value: list[Any], tokens: Sequence[str], rest: Sequence[Sequence[str]]) -> Any:
        items = list(value)
        for i in named_indices(tokens[0], len(value)):
            items[i] = self.apply(value[i], tokens[1:], rest)
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value

    def _mask(self, value: Any) -> Any:
        """The value the rule lands on: masked whole, or its pattern's matches."""
        if self.rule.pattern is None:
            self.masked += 1
            return _Whole(json_type(value), value)
        spans = self._matches(value) if isinstance(value, str) else []
        return _Pieces(value, tuple(spans)) if spans else value

    def _embedded(self, value: Any, rest: Sequence[Sequence[str]]) -> Any:
        if not isinstance(value, str):
            return value
        try:
            held = decode(value.encode("utf-8", "surrogatepass"), what="JSON text")
        except (InputError, UnicodeEncodeError):
            return value
        inner = self.apply(held, rest[0], rest[1:])
        return value if inner is held else _Embedded(inner, value)

    def _matches(self, text: str) -> list[Run]:
        """The matches of this rule's pattern in ``text``, counted."""
        spans = _spans(self.cut(self.number, text), self.number)
        self.masked += len(spans)
        return spans


def _spans(cut: Pieces, number: int) -> list[Run]:
    """The matches of a string cut at them, as runs of rule ``number``."""
    spans: list[Run] = []
    at = 0
    for piece, matched in cut:
        if matched:
            spans.append((at, at + len(piece), (number,)))
        at += len(piece)
    return spans


def _merged(runs: Sequence[Run], spans: Sequence[Run]) -> tuple[Run, ...]:
    """The masked runs of two rules' matches in one string: runs that overlap become one run of both rules."""
    out: list[Run] = []
    for start, stop, numbers in sorted([*runs, *spans]):
        if out and start < out[-1][1]:
            last = out[-1]
            out[-1] = (last[0], max(last[1], stop), tuple(sorted({*last[2], *numbers})))
        else:
            out.append((start, stop, numbers))
    return tuple(out)


def _text(value: Any) -> str:
    """A masked value's comparison text: canonical JSON, with the masked parts in marks
    no canonical text holds outside a string (so no value can pose as a masked one)."""
    if isinstance(value, dict):
        return "{" + ",".join(canonical_str(k) + ":" + _text(value[k]) for k in sorted(value)) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_text(item) for item in value) + "]"
    if isinstance(value, _MASKED):
        return value.text()
    return canonical(value)


def _shown(value: Any) -> Any:
    """A masked value as JSON for a finding's message: each mask shows as ``<volatile>``."""
    if isinstance(value, dict):
        return {k: _shown(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shown(item) for item in value]
    if isinstance(value, _MASKED):
        return value.shown()
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class Masked:
    """What a comparison digests of a record: its call key, response and state texts."""

    call_key: str
    response: str
    state: str | None
    #: values masked in the record
    masked: int = 0


def _masked_texts(record: Record, tree: dict[str, Any], *, masked: int) -> Masked:
    """The record's comparison texts from its masked ``tree`` (its canonical texts where nothing is)."""
    call_key, response, state = record.call_key, record.canon_response, record.canon_state
    if tree["args"] is not record.args:
        call_key = '{"args":' + _text(tree["args"]) + ',"tool":' + canonical_str(record.tool) + "}"
    if tree["response"] is not record.response:
        response = _text(tree["response"])
    if record.state is not None and tree["state"] is not record.state:
        state = _text(tree["state"])
    return Masked(call_key=call_key, response=response, state=state, masked=masked)


#: a batch of :meth:`Volatile.ahead`: the records whose matches one trip to the pattern worker
#: finds, at most this many, with at most this many characters of canonical text, among at most
#: this many items (the calls no pattern applies to wait with them)
BATCH_RECORDS, BATCH_CHARS, BATCH_ITEMS = 1024, 1 << 20, 8192
#: matches kept across batches: of texts at most this long (texts repeat: the same answer, the
#: same argument), at most this many
KNOWN_TEXT_CHARS, KNOWN_CUTS = 256, 10_000

T = TypeVar("T")
#: who asked for a pattern's matches in a text: the record (None: not known) and the rule's number
_Owner = tuple[Record | None, int]


def _record(item: object) -> Record | None:
    return item if isinstance(item, Record) else None


def _size(record: Record) -> int:
    return len(record.canon_args) + len(record.canon_response) + len(record.canon_state or "")


def _batch_full(records: int, size: int, items: int) -> bool:
    """Whether a batch of ``items`` items holding ``records`` records of ``size`` characters is
    asked of the pattern worker now."""
    return records >= BATCH_RECORDS or size >= BATCH_CHARS or items >= BATCH_ITEMS


class Volatile:
    """The config's rules, applied to the records a comparison reads; counts what they mask,
    per source (a file's path): each comparison reads each record once.

    A rule's ``pattern`` runs in the pattern worker (:mod:`toolreplay.ecma`): at most one second
    on one value and ``budget`` seconds per transcript (by the path a record is read from); the
    matches of a record's values are asked in one trip, and those of many records in one trip
    when the records come through :meth:`ahead`. A value that could not be cut in time raises
    :class:`~toolreplay.errors.InputError` naming the rule (and the file and line, when known).
    """

    def __init__(self, rules: Iterable[Rule] = (), *, budget: float = DEFAULT_BUDGET_SECONDS) -> None:
        self.rules = tuple(rules)
        self.budget = budget
        #: source -> values masked per rule (in the rules' order)
        self.by_source: dict[str, list[int]] = {}
        self._by_tool: dict[str, tuple[tuple[int, Rule], ...]] = {}
        self._patterned: dict[str, bool] = {}
        #: the matches (flat UTF-8 byte ranges) found for (rule number, text): those of the last
        #: batch of records, of the last record asked about alone, and of short texts
        self._batch: dict[tuple[int, str], list[int]] = {}
        self._single: dict[tuple[int, str], list[int]] = {}
        self._known: dict[tuple[int, str], list[int]] = {}
        #: the records of the last batch (by id: they are alive while it is handed out)
        self._ready: set[int] = set()
        #: engine seconds spent per transcript (its path; "" for records of no file)
        self._spent: dict[str, float] = {}

    def __bool__(self) -> bool:
        return bool(self.rules)

    def for_tool(self, tool: str) -> tuple[tuple[int, Rule], ...]:
        found = self._by_tool.get(tool)
        if found is None:
            found = self._by_tool[tool] = tuple(
                (n, rule) for n, rule in enumerate(self.rules) if rule.tool in ("*", tool)
            )
        return found

    def _has_pattern(self, tool: str) -> bool:
        found = self._patterned.get(tool)
        if found is None:
            found = self._patterned[tool] = any(rule.pattern is not None for _, rule in self.for_tool(tool))
        return found

    def ahead(
        self, items: Iterable[T], path: str = "", record: Callable[[T], Record | None] = _record
    ) -> Iterator[T]:
        """``items`` as they come, the matches of the records among them (``record`` finds each
        item's) asked of the pattern worker a batch at a time: one trip per batch, not per value.
        ``path`` names the file they are read from, for the budget and the messages."""
        if not any(rule.pattern is not None for rule in self.rules):
            yield from items
            return
        batch: list[T] = []
        records: list[Record] = []
        size = 0
        try:
            for item in items:
                batch.append(item)
                size += self._take(record(item), records)
                if _batch_full(len(records), size, len(batch)):
                    self._fetch(records, path, batch=True)
                    yield from batch
                    batch, records, size = [], [], 0
            self._fetch(records, path, batch=True)
            yield from batch
        finally:  # the batch's records are gone: their ids may be another's
            self._batch, self._ready = {}, set()

    def _take(self, found: Record | None, records: list[Record]) -> int:
        """Add an item's record (if any) to the batch's ``records`` when a pattern must run on it;
        the record's size (0: none)."""
        if found is None:
            return 0
        if self._has_pattern(found.tool):
            records.append(found)
        return _size(found)

    def _fetch(self, records: Sequence[Record], path: str | None, *, batch: bool = False) -> None:
        """Find the matches the rules' patterns have in ``records`` (a batch, or one record) in one trip."""
        wanted: dict[tuple[int, str], _Owner] = {}
        for record in records:
            self._wanted_of(record, wanted)
        found = self._emptied(records, batch=batch)
        missing = [key for key in wanted if not self._has(key) and _utf8(key[1])]
        for key, spans in zip(missing, self._run(missing, wanted, path), strict=True):
            found[key] = spans
            self._keep_known(key, spans)

    def _emptied(self, records: Sequence[Record], *, batch: bool) -> dict[tuple[int, str], list[int]]:
        """The table a trip's matches go to, emptied: the batch's, else the single record's."""
        if batch:
            self._batch, self._ready = {}, {id(record) for record in records}
            return self._batch
        # (a record of no batch, or one built from a batch's record: its texts are found there)
        self._single = {}
        return self._single

    def _keep_known(self, key: tuple[int, str], spans: list[int]) -> None:
        """Remember a short text's matches across batches, while the table has room."""
        if len(key[1]) <= KNOWN_TEXT_CHARS and len(self._known) < KNOWN_CUTS:
            self._known[key] = spans

    def _wanted_of(self, record: Record, wanted: dict[tuple[int, str], _Owner]) -> None:
        """Add to ``wanted`` the texts of ``record`` that the rules' patterns must be run on."""
        tree = {"args": record.args, "response": record.response, "state": record.state}
        for number, rule in self.for_tool(record.tool):
            if rule.pattern is not None:
                segments = rule.segments
                for text in landings(tree, segments[0], segments[1:]):
                    wanted.setdefault((number, text), (record, number))

    def _has(self, key: tuple[int, str]) -> bool:
        return key in self._known or key in self._batch

    def _cut(self, number: int, text: str) -> Pieces:
        """``text`` cut at the matches of rule ``number``'s pattern, found by :meth:`_fetch`."""
        key = (number, text)
        spans = self._batch.get(key)
        if spans is None:
            spans = self._single.get(key)
        if spans is None:
            spans = self._known.get(key)
        if spans is None:  # not asked for ahead (cannot happen: the walks are the same)
            if not _utf8(text):
                return []
            spans = self._run([key], {key: (None, number)}, None)[0]
        return pieces(text, spans)

    def _run(
        self, keys: Sequence[tuple[int, str]], owners: dict[tuple[int, str], _Owner], path: str | None
    ) -> list[list[int]]:
        """The matches of each (rule number, text), from the pattern worker."""
        if not keys:
            return []
        # the worker (toolreplay.ecma, with jsonschema) only for a rule with a pattern
        from toolreplay.ecma import BoundedSearch, Unjudged

        spent = path or ""
        bounded = BoundedSearch(budget=self.budget, spent=self._spent.get(spent, 0.0))
        try:
            with bounded:
                return bounded.cuts([(self.rules[number].pattern or "", text) for number, text in keys])
        except Unjudged as err:
            raise self._unjudged_error(owners[keys[err.position]], err, path) from err
        finally:
            self._spent[spent] = bounded.spent

    def _unjudged_error(self, owner: _Owner, err: Exception, path: str | None) -> InputError:
        """The error of a pattern that could not be judged on ``owner``'s text."""
        record, number = owner
        line = record.line if record is not None and record.line else None
        return InputError(self._unjudged(number, err), path=path or None, line=line)

    def _unjudged(self, number: int, err: Exception) -> str:
        rule = self.rules[number]
        return (
            f"volatile rule {number + 1} (tool {quote(rule.tool)}, at {quote(rule.at)}) could not mask a"
            f" value: {err}; simplify its pattern (anchor it, avoid nested quantifiers) or raise"
            " pattern_budget_seconds"
        )

    def _apply(self, record: Record, cut: Cut) -> tuple[dict[str, Any], dict[int, int]]:
        tree: dict[str, Any] = {"args": record.args, "response": record.response}
        if record.state is not None:
            tree["state"] = record.state
        counts: dict[int, int] = {}
        for number, rule in self.for_tool(record.tool):
            masking = _Masking(rule, number, cut)
            segments = rule.segments
            tree = masking.apply(tree, segments[0], segments[1:])
            if masking.masked:
                counts[number] = counts.get(number, 0) + masking.masked
        return tree, counts

    def _tree(self, record: Record, path: str | None) -> tuple[dict[str, Any], dict[int, int]]:
        if self._has_pattern(record.tool) and id(record) not in self._ready:
            self._fetch([record], path)
        return self._apply(record, self._cut)

    def texts(self, record: Record, source: str | None = "") -> Masked:
        """The record's comparison texts, masked (its canonical texts where nothing is); what
        was masked counts for ``source`` (None: not counted, another report counts it)."""
        if not self.for_tool(record.tool):
            return Masked(call_key=record.call_key, response=record.canon_response, state=record.canon_state)
        tree, counts = self._tree(record, source)
        if source is not None:
            total = self.counts(source)
            for number, n in counts.items():
                total[number] += n
        return _masked_texts(record, tree, masked=sum(counts.values()))

    def counts(self, *sources: str) -> list[int]:
        """Values masked per rule, over ``sources`` (one source: its own list, to add to)."""
        if len(sources) == 1:
            return self.by_source.setdefault(sources[0], [0] * len(self.rules))
        total = [0] * len(self.rules)
        for source in sources:
            for number, n in enumerate(self.counts(source)):
                total[number] += n
        return total

    def compared(self, record: Record, source: str | None = None) -> Record:
        """The record with its canonical texts replaced by its comparison texts (its values
        kept): what a comparison of records in memory compares. Not a JSON record any more."""
        masked = self.texts(record, source)
        if masked.call_key == record.call_key and not masked.masked:
            return record
        args = masked.call_key[len('{"args":') : -len(',"tool":' + canonical_str(record.tool) + "}")]
        return replace(record, canon_args=args, canon_response=masked.response, canon_state=masked.state)

    def shown(self, record: Record) -> Record:
        """The record with each masked value or substring shown as ``<volatile>`` (for messages)."""
        if not self.for_tool(record.tool):
            return record
        tree, counts = self._tree(record, None)
        if not counts:
            return record
        args, response = _shown(tree["args"]), _shown(tree["response"])
        state = _shown(tree["state"]) if record.state is not None else None
        return replace(
            record,
            args=args,
            response=response,
            state=state,
            canon_args=canonical(args),
            canon_response=canonical(response),
            canon_state=None if state is None else canonical(state),
        )
