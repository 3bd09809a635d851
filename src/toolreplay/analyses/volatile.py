"""Volatile values: the parts of a record that may change between two runs (docs/spec.md §3.6).

A rule (the config's ``[[volatile]]``) names a tool (or ``*``), a place in the record and,
optionally, an ECMA-262 ``pattern``. Where it lands, the whole value (no pattern) or each
match of the pattern inside a string is *masked*: it compares equal to any value of the same
JSON type (any other match of the same pattern). Everything else is compared as before.

The sealed bytes never change: masking happens only on the texts a comparison digests.
A record a rule masks nothing in keeps its canonical texts, so a comparison without rules,
or of a tool no rule names, is the one it always was.

The place is a JSON pointer from the record (``/args/...``, ``/response/...`` or
``/state/...``) in which ``*`` stands for any one member or item, and ``#`` steps into a
string holding a JSON text: ``/response/content/*/text#/datetime`` is the ``datetime``
member of the JSON object each text holds. Such a text is then compared as the JSON value it
holds (its spacing and member order no longer count). A key ``*`` or a key holding ``#`` is
reached only by ``*``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from toolreplay.canonical import canonical, canonical_str, decode
from toolreplay.errors import InputError
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
    """A masked value: only its JSON type is compared."""

    kind: str

    def text(self) -> str:
        return f"<{self.kind}>"

    def shown(self) -> Any:
        return SHOWN


@dataclass(frozen=True, slots=True)
class _Pieces:
    """A string with masked matches: the text between them, and the rule's number per match."""

    parts: tuple[str | int, ...]

    def text(self) -> str:
        return "(" + " ".join(canonical_str(p) if isinstance(p, str) else f"<{p}>" for p in self.parts) + ")"

    def shown(self) -> Any:
        return "".join(p if isinstance(p, str) else SHOWN for p in self.parts)


@dataclass(frozen=True, slots=True)
class _Embedded:
    """A string holding a JSON text, some of which is masked: that value, masked."""

    value: Any

    def text(self) -> str:
        return "#" + _text(self.value)

    def shown(self) -> Any:
        return canonical(_shown(self.value))


_MASKED = (_Whole, _Pieces, _Embedded)


def _matches(pattern: str, text: str) -> list[tuple[str, bool]]:
    """``text`` cut at each non-empty match of ``pattern``: (piece, whether it is a match), in order.

    regress gives UTF-8 byte offsets (on code point boundaries, with the ``u`` flag). A string
    UTF-8 cannot hold (a lone surrogate) has no match: it is compared whole.
    """
    try:
        raw = text.encode("utf-8")
        found = [m.range() for m in compiled_pattern(pattern).find_iter(text) or ()]
    except UnicodeEncodeError:
        return []
    out: list[tuple[str, bool]] = []
    at = 0
    for span in found:
        if span.stop > span.start:
            out.append((raw[at : span.start].decode("utf-8"), False))
            out.append((raw[span.start : span.stop].decode("utf-8"), True))
            at = span.stop
    if out:
        out.append((raw[at:].decode("utf-8"), False))
    return out


class _Masking:
    """One rule applied to one record: counts what it masked."""

    def __init__(self, rule: Rule, number: int) -> None:
        self.rule = rule
        self.number = number
        self.masked = 0

    def apply(self, value: Any, tokens: Sequence[str], rest: Sequence[Sequence[str]]) -> Any:
        if isinstance(value, (_Whole, _Pieces)):
            return value  # masked already, by an earlier rule
        if isinstance(value, _Embedded):
            return self._reenter(value, tokens, rest)
        if tokens:
            return self._descend(value, tokens, rest)
        if rest:
            return self._embedded(value, rest)
        return self._mask(value)

    def _reenter(self, value: _Embedded, tokens: Sequence[str], rest: Sequence[Sequence[str]]) -> Any:
        """Into a JSON text an earlier rule entered (only at the ``#`` that enters it)."""
        if tokens or not rest:
            return value
        inner = self.apply(value.value, rest[0], rest[1:])
        return value if inner is value.value else _Embedded(inner)

    def _descend(self, value: Any, tokens: Sequence[str], rest: Sequence[Sequence[str]]) -> Any:
        if isinstance(value, dict):
            return self._members(value, tokens, rest)
        if isinstance(value, list):
            return self._items(value, tokens, rest)
        return value

    def _members(self, value: dict[str, Any], tokens: Sequence[str], rest: Sequence[Sequence[str]]) -> Any:
        changed = {key: self.apply(value[key], tokens[1:], rest) for key in _keys(value, tokens[0])}
        changed = {key: new for key, new in changed.items() if new is not value[key]}
        return {**value, **changed} if changed else value

    def _items(self, value: list[Any], tokens: Sequence[str], rest: Sequence[Sequence[str]]) -> Any:
        items = list(value)
        for i in _indices(tokens[0], len(value)):
            items[i] = self.apply(value[i], tokens[1:], rest)
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value

    def _mask(self, value: Any) -> Any:
        """The value the rule lands on: masked whole, or its pattern's matches."""
        if self.rule.pattern is None:
            self.masked += 1
            return _Whole(json_type(value))
        return self._pieces(value)

    def _embedded(self, value: Any, rest: Sequence[Sequence[str]]) -> Any:
        if not isinstance(value, str):
            return value
        try:
            held = decode(value.encode("utf-8", "surrogatepass"), what="JSON text")
        except (InputError, UnicodeEncodeError):
            return value
        inner = self.apply(held, rest[0], rest[1:])
        return value if inner is held else _Embedded(inner)

    def _pieces(self, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        cut = _matches(self.rule.pattern or "", value)
        if not cut:
            return value
        self.masked += sum(matched for _, matched in cut)
        return _Pieces(tuple(self.number if matched else piece for piece, matched in cut))


def _keys(value: dict[str, Any], token: str) -> list[str]:
    """The members a pointer token names: every one for ``*``, else the one of that name, if any."""
    if token == "*":
        return list(value)
    return [token] if token in value else []


def _indices(token: str, length: int) -> range:
    """The items of an array of ``length`` a pointer token names: every one for ``*``, else the one
    at that index (a number without leading zeros), if any."""
    if token == "*":
        return range(length)
    if token.isdigit() and (token == "0" or not token.startswith("0")) and int(token) < length:
        return range(int(token), int(token) + 1)
    return range(0)


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


class Volatile:
    """The config's rules, applied to the records a comparison reads; counts what they mask,
    per source (a file's path): each comparison reads each record once."""

    def __init__(self, rules: Iterable[Rule] = ()) -> None:
        self.rules = tuple(rules)
        #: source -> values masked per rule (in the rules' order)
        self.by_source: dict[str, list[int]] = {}
        self._by_tool: dict[str, tuple[tuple[int, Rule], ...]] = {}

    def __bool__(self) -> bool:
        return bool(self.rules)

    def for_tool(self, tool: str) -> tuple[tuple[int, Rule], ...]:
        found = self._by_tool.get(tool)
        if found is None:
            found = self._by_tool[tool] = tuple(
                (n, rule) for n, rule in enumerate(self.rules) if rule.tool in ("*", tool)
            )
        return found

    def _tree(self, record: Record) -> tuple[dict[str, Any], dict[int, int]]:
        tree: dict[str, Any] = {"args": record.args, "response": record.response}
        if record.state is not None:
            tree["state"] = record.state
        counts: dict[int, int] = {}
        for number, rule in self.for_tool(record.tool):
            masking = _Masking(rule, number)
            segments = rule.segments
            tree = masking.apply(tree, segments[0], segments[1:])
            if masking.masked:
                counts[number] = counts.get(number, 0) + masking.masked
        return tree, counts

    def texts(self, record: Record, source: str | None = "") -> Masked:
        """The record's comparison texts, masked (its canonical texts where nothing is); what
        was masked counts for ``source`` (None: not counted, another report counts it)."""
        if not self.for_tool(record.tool):
            return Masked(call_key=record.call_key, response=record.canon_response, state=record.canon_state)
        tree, counts = self._tree(record)
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
        tree, counts = self._tree(record)
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
