"""Classify the drift between recorded tool contracts and live ones (docs/spec.md §3.5).

Two modes:

* lock against lock (:func:`compare_locks`): every difference of every tool, as
  ``added``, ``removed``, ``signature``, ``schema`` (breaking or compatible) or
  ``version``, each with a JSON pointer and the old and new values;
* transcript against lock (:func:`compare_transcript`): each call's recorded
  ``fingerprint`` against the lock's; a transcript holds only the hash, so this says
  *that* a tool changed, and a lock-to-lock diff says *what*.

"Breaking" is judged from the caller's side: a change is breaking when arguments that
the old schema accepted may be refused now.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolreplay.analyses.contract_drift import fingerprint_message
from toolreplay.analyses.difference import ABSENT, clipped
from toolreplay.analyses.schema_diff import diff_schema
from toolreplay.analyses.text_diff import TEXT_CLASSES, diff_text, hint_effect, is_description, marked
from toolreplay.contracts.lock import ToolContract, ToolLock
from toolreplay.contracts.text import text_drift_message
from toolreplay.escape import quote
from toolreplay.findings import Finding, Line, Report
from toolreplay.kinds import CONTRACT_TEXT_DRIFT, TOOL_DRIFT
from toolreplay.transcript import Record

#: Order of the drift classes within one tool.
CLASSES = ("removed", "added", "signature", "schema", "version", *TEXT_CLASSES)
_CLIP = 80


@dataclass(frozen=True, slots=True, kw_only=True)
class Difference:
    """One classified difference between a recorded and a live contract."""

    tool: str
    #: added | removed | signature | schema | version | description | annotations | output-schema
    kind: str
    #: signature: what changed ("parameter renamed", ...); schema: "breaking" or "compatible"
    detail: str = ""
    #: into the signature (signature) or the input schema (schema); "" otherwise
    pointer: str = ""
    old: Any = ABSENT
    new: Any = ABSENT

    @property
    def breaking(self) -> bool:
        """Whether existing callers may break: a removed tool, a signature change, a breaking schema change.

        An added tool, a new version and a compatible schema change are drift (the
        fingerprint moved) but leave existing calls valid.
        """
        return self.kind in ("removed", "signature") or (self.kind == "schema" and self.detail == "breaking")

    def text(self) -> str:
        """``schema (breaking): /properties/query/maxLength 500 -> 200`` and the like."""
        head = f"{self.kind} ({self.detail})" if self.detail else self.kind
        if self.kind in ("added", "removed"):
            contract = self.new if self.kind == "added" else self.old
            return f"{head}: fingerprint {contract.fingerprint}, version {render(contract.version)}"
        where = f"{self.pointer} " if self.pointer else ""
        return f"{head}: {where}{self._change()}"

    def _change(self) -> str:
        """``old -> new``, each side in the words of its class."""
        if self.kind in TEXT_CLASSES:
            return text_change(self.kind, self.pointer, self.old, self.new)
        if self.kind == "signature":
            show = _SIGNATURE_SHOWN.get(self.detail)
            if show is None or not isinstance(self.old, str) or not isinstance(self.new, str):
                show = show_signature
            return f"{show(self.old)} -> {show(self.new)}"
        return f"{render(self.old)} -> {render(self.new)}"


#: ``str(inspect.Parameter.empty)``: how a Python signature records "no annotation" / "no default"
_EMPTY = "<class 'inspect._empty'>"
_CLASS = re.compile(r"<class '([^']*)'>")


def show_type(annotation: str) -> str:
    """A recorded annotation as a reader writes it: ``str`` for ``<class 'str'>``, ``any`` for none."""
    if annotation == _EMPTY:
        return "any"
    found = _CLASS.fullmatch(annotation)
    return found.group(1) if found else annotation


def show_default(default: str) -> str:
    """A recorded default as ``required`` or ``optional`` (with the default a Python tool gives)."""
    if default in (_EMPTY, "required"):
        return "required"
    if default == "optional":
        return "optional"
    return f"optional, default {default}"


def show_signature(value: Any) -> str:
    """A signature value of a difference in words, never a Python repr.

    A parameter ``[name, annotation, default]`` reads ``'name': str (required)``; a
    default changed reads ``required`` / ``optional, default 5`` (see ``Difference.text``),
    a retyped parameter its type names.
    """
    if value is ABSENT:
        return "(absent)"
    if isinstance(value, list) and len(value) == 3 and all(isinstance(v, str) for v in value):
        name, annotation, default = value
        return f"{quote(name)}: {show_type(annotation)} ({show_default(default)})"
    return render(value)


def render(value: Any) -> str:
    """A value as compact canonical JSON, clipped; ``(absent)`` for a missing one."""
    return clipped(value, _CLIP, absent="(absent)")


#: how a signature change's two sides read, by what changed, when both are one recorded string
_SIGNATURE_SHOWN: dict[str, Callable[[str], str]] = {
    "default changed": show_default,
    "parameter retyped": show_type,
}


def lock_report(
    recorded: ToolLock, live: ToolLock, *, command: str, path: str, unversioned: bool = False
) -> Report:
    """Every difference from ``recorded`` to ``live`` as a finding (``contract-text-drift`` for the
    contract text, ``tool-drift`` otherwise), counted in the header: ``fingerprint-diff``'s lock
    against lock, and ``check``'s lock against its tools_source. ``unversioned``: ``live`` carries
    no versions (a source read without them), which is not a change of version."""
    differences = [d for d in compare_locks(recorded, live) if not (unversioned and _unversioned(d))]
    findings = tuple(drift_finding(d, path) for d in differences)
    return Report(
        command=command, path=path, header=_lock_header(recorded, live, differences), findings=findings
    )


def _lock_header(recorded: ToolLock, live: ToolLock, differences: list[Difference]) -> tuple[Line, ...]:
    """The counts at the head of a lock-against-lock report (one finding a difference)."""
    drifted = len({d.tool for d in differences})
    breaking = sum(1 for d in differences if d.breaking)
    return (
        Line(key="tools recorded", value=len(recorded.tools), text=str(len(recorded.tools))),
        Line(key="tools live", value=len(live.tools), text=str(len(live.tools))),
        Line(key="tools drifted", value=drifted, text=str(drifted)),
        Line(key="breaking", value=breaking, text=str(breaking)),
        Line(key="findings", value=len(differences), text=str(len(differences))),
    )


def _unversioned(difference: Difference) -> bool:
    """A version that went away: what a source read without versions shows, not a change."""
    return difference.kind == "version" and difference.new == ""


def carries_no_versions(lock: ToolLock) -> bool:
    """Whether no tool of ``lock`` carries a version (a source read without one)."""
    return all(c.version == "" for c in lock.tools.values())


def drift_finding(difference: Difference, path: str) -> Finding:
    """A difference of two contracts as a finding: of their text, or of the tool itself."""
    kind = CONTRACT_TEXT_DRIFT if difference.kind in TEXT_CLASSES else TOOL_DRIFT
    return Finding(kind=kind, index=None, tool=difference.tool, message=difference.text(), path=path)


def compare_locks(recorded: ToolLock, live: ToolLock) -> list[Difference]:
    """Every difference between two locks, by tool name then class."""
    out: list[Difference] = []
    for name in sorted(set(recorded.tools) | set(live.tools)):
        old, new = recorded.tools.get(name), live.tools.get(name)
        if old is None or new is None or old.fingerprint != new.fingerprint or text_differs(old, new):
            out.extend(_tool_differences(name, old, new))
    return out


def text_differs(old: ToolContract, new: ToolContract) -> bool:
    """Whether both contracts know their contract text and it differs."""
    return old.text is not None and new.text is not None and old.text_digest != new.text_digest


def text_change(kind: str, pointer: str, old: Any, new: Any) -> str:
    """A text-class difference's ``old -> new``: text quoted, escaped and marked where it changed."""
    if kind == "description":
        a, b = marked(_text(old), _text(new))
        return f"{_marked_or_rendered(a, old)} -> {_marked_or_rendered(b, new)}"
    if kind == "annotations":
        effect = hint_effect(pointer, old, new)
        shown = f"{_rendered(old)} -> {_rendered(new)}"
        return f"{shown}: {effect}" if effect else shown
    return f"{render(old)} -> {render(new)}"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _marked_or_rendered(text: str, value: Any) -> str:
    """A string value as its marked ``text``; any other value rendered."""
    return text if isinstance(value, str) else _rendered(value)


def _rendered(value: Any) -> str:
    """A text-class value rendered, ``null`` (no text) as absent."""
    return render(ABSENT if value is None else value)


def text_differences(old: ToolContract, new: ToolContract) -> list[Difference]:
    """Every contract-text difference of one tool, parameter descriptions in the input schema included."""
    return [d for d in compare_contracts(old, new) if d.kind in TEXT_CLASSES]


def compare_text(old: ToolContract, new: ToolContract) -> list[Difference]:
    """The title, description, annotation and output-schema differences of one tool (none when
    either side does not know its contract text: a lock written before it was kept)."""
    if old.text is None or new.text is None:
        return []
    out = [
        Difference(tool=new.name, kind=kind, detail=detail, pointer=pointer, old=a, new=b)
        for kind, detail, pointer, a, b in diff_text(old.text, new.text)
    ]
    a, b = old.text.get("output_schema", ABSENT), new.text.get("output_schema", ABSENT)
    return out + _output_schema_differences(new.name, a, b)


def _output_schema_differences(tool: str, a: Any, b: Any) -> list[Difference]:
    """An output schema added or removed, or each difference between the two."""
    if a is ABSENT and b is ABSENT:
        return []
    if a is ABSENT or b is ABSENT:
        return [Difference(tool=tool, kind="output-schema", old=a, new=b)]
    return [
        Difference(tool=tool, kind="output-schema", pointer=pointer, old=x, new=y)
        for _, pointer, x, y in diff_schema(a, b)
    ]


def _tool_differences(name: str, old: ToolContract | None, new: ToolContract | None) -> list[Difference]:
    """A tool added, removed, or its contract's differences (one of the two is there)."""
    if old is None:
        return [Difference(tool=name, kind="added", new=new)]
    if new is None:
        return [Difference(tool=name, kind="removed", old=old)]
    return compare_contracts(old, new)


def compare_contracts(old: ToolContract, new: ToolContract) -> list[Difference]:
    """The signature, schema and version differences of one tool."""
    out = [
        Difference(tool=new.name, kind="signature", detail=detail, pointer=pointer, old=a, new=b)
        for detail, pointer, a, b in diff_signature(old.signature, new.signature)
    ]
    constraints, described = _schema_differences(new.name, old.schema, new.schema)
    out += constraints
    if old.version != new.version:
        out.append(Difference(tool=new.name, kind="version", old=old.version, new=new.version))
    return out + _with_text(compare_text(old, new), described)


def _with_text(text: list[Difference], described: list[Difference]) -> list[Difference]:
    """The text differences, the parameters' descriptions after the tool's own: a parameter's
    description is text an agent reads, not a constraint."""
    own = [d for d in text if d.kind == "description"]
    return own + described + [d for d in text if d.kind != "description"]


def _schema_differences(tool: str, old: Any, new: Any) -> tuple[list[Difference], list[Difference]]:
    """The input schemas' differences: of constraints, and of the parameters' descriptions."""
    differences = [_schema_difference(tool, *change) for change in diff_schema(old, new)]
    return [d for d in differences if d.kind == "schema"], [d for d in differences if d.kind == "description"]


def _schema_difference(tool: str, breaking: bool, pointer: str, a: Any, b: Any) -> Difference:
    """A difference of the input schemas: a constraint's (breaking or compatible), or a description's."""
    if is_description(pointer):
        return Difference(tool=tool, kind="description", pointer="/inputSchema" + pointer, old=a, new=b)
    detail = "breaking" if breaking else "compatible"
    return Difference(tool=tool, kind="schema", detail=detail, pointer=pointer, old=a, new=b)


# -- signatures -------------------------------------------------------------------------------------


def diff_signature(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, str, Any, Any]]:
    """(what, pointer, old, new) for each change between two signatures.

    Parameters are matched by name. A parameter removed and another added at the same
    position with the same type and default is a rename; so is the only removed and
    the only added parameter when they share type and default.
    """
    out: list[tuple[str, str, Any, Any]] = []
    if old["name"] != new["name"]:
        out.append(("name changed", "/name", old["name"], new["name"]))
    old_params: list[list[str]] = old["params"]
    new_params: list[list[str]] = new["params"]
    changes = _parameter_changes(old_params, new_params)
    out.extend(change for _, change in sorted(changes, key=lambda c: (c[0], c[1][1], c[1][0])))
    common_old, common_new = _kept_names(old_params, new_params), _kept_names(new_params, old_params)
    if common_old != common_new:
        out.append(("parameters reordered", "/params", common_old, common_new))
    return out


def _kept_names(params: list[list[str]], others: list[list[str]]) -> list[str]:
    """The names of ``params`` that ``others`` has too, in the order of ``params``."""
    names = {p[0] for p in others}
    return [p[0] for p in params if p[0] in names]


_Params = list[list[str]]
_ParameterChange = tuple[int, tuple[str, str, Any, Any]]


def _parameter_changes(old_params: _Params, new_params: _Params) -> list[_ParameterChange]:
    """Each parameter renamed, retyped, given a new default, removed or added, with its position."""
    renames, removed, added = _match_renames(old_params, new_params)
    changes: list[_ParameterChange] = [
        (j, ("parameter renamed", f"/params/{j}/0", old_params[i][0], new_params[j][0])) for i, j in renames
    ]
    changes.extend(_kept_parameter_changes(old_params, new_params))
    changes.extend((i, ("parameter removed", f"/params/{i}", old_params[i], ABSENT)) for i in removed)
    changes.extend((j, ("parameter added", f"/params/{j}", ABSENT, new_params[j])) for j in added)
    return changes


def _match_renames(
    old_params: _Params, new_params: _Params
) -> tuple[list[tuple[int, int]], list[int], list[int]]:
    """(renames as (old, new) positions, removed positions, added positions) of two parameter lists."""
    removed = _positions_missing(old_params, new_params)
    added = _positions_missing(new_params, old_params)
    renames, removed, added = _renamed_in_place(old_params, new_params, removed, added)
    if _one_for_one(old_params, new_params, removed, added):
        renames.append((removed.pop(), added.pop()))
    return renames, removed, added


def _renamed_in_place(
    old_params: _Params, new_params: _Params, removed: list[int], added: list[int]
) -> tuple[list[tuple[int, int]], list[int], list[int]]:
    """A parameter removed and another added at the same position, of the same kind, as renames;
    (those renames, the other positions removed, the other positions added)."""
    renames = [(i, i) for i in removed if i in added and _same_kind(old_params[i], new_params[i])]
    return (
        renames,
        [i for i in removed if (i, i) not in renames],
        [j for j in added if (j, j) not in renames],
    )


def _one_for_one(old_params: _Params, new_params: _Params, removed: list[int], added: list[int]) -> bool:
    """Whether the only parameter removed and the only one added are of the same kind (a rename)."""
    return len(removed) == 1 and len(added) == 1 and _same_kind(old_params[removed[0]], new_params[added[0]])


def _positions_missing(params: _Params, others: _Params) -> list[int]:
    """The positions in ``params`` of the parameters whose names ``others`` lacks."""
    names = {p[0] for p in others}
    return [i for i, p in enumerate(params) if p[0] not in names]


def _same_kind(old: list[str], new: list[str]) -> bool:
    """Whether two parameters have the same annotation and default."""
    return old[1:] == new[1:]


def _kept_parameter_changes(old_params: _Params, new_params: _Params) -> list[_ParameterChange]:
    """The type and default changes of the parameters both signatures have."""
    old_at = {p[0]: i for i, p in enumerate(old_params)}
    new_at = {p[0]: i for i, p in enumerate(new_params)}
    changes: list[_ParameterChange] = []
    for name, j in new_at.items():
        k = old_at.get(name)
        if k is not None:
            changes.extend(_kept_parameter_change(j, old_params[k], new_params[j]))
    return changes


def _kept_parameter_change(j: int, old: list[str], new: list[str]) -> Iterator[_ParameterChange]:
    """The type and default changes of a parameter both signatures have (at ``j`` in the new one)."""
    if show_type(old[1]) != show_type(new[1]):  # equal in words: no change
        yield (j, ("parameter retyped", f"/params/{j}/1", old[1], new[1]))
    if show_default(old[2]) != show_default(new[2]):
        yield (j, ("default changed", f"/params/{j}/2", old[2], new[2]))


@dataclass(frozen=True, slots=True, kw_only=True)
class TranscriptDrift:
    """A transcript's recorded fingerprints against a lock."""

    calls: int
    #: calls that carry a fingerprint (the others cannot be compared)
    fingerprinted: int
    #: fingerprinted calls whose fingerprint the lock does not have for that tool
    drifted: int
    #: the first drifting call of each (tool, recorded fingerprint)
    findings: list[Finding]


def explain_drift(lock: ToolLock, source: ToolLock) -> dict[str, str]:
    """Per tool whose contract in ``source`` (the tools as they are) differs from ``lock``:
    what changed, as ``fingerprint-diff`` words it, for a ``tool-drift`` message.

    A source that carries no version (a definitions file or a module read without
    ``--version``) is not said to have changed the version.
    """
    out: dict[str, str] = {}
    for name in sorted(set(lock.tools) | set(source.tools)):
        differences = _source_differences(name, lock.tools.get(name), source.tools.get(name))
        if differences:
            out[name] = "the tool source differs from the lock: " + "; ".join(d.text() for d in differences)
    return out


def _source_differences(name: str, old: ToolContract | None, new: ToolContract | None) -> list[Difference]:
    """A tool's differences from the lock to the source, but a version a source without one drops."""
    differences = _tool_differences(name, old, new)
    if new is not None and new.version == "":
        return [d for d in differences if d.kind != "version"]
    return differences


def compare_transcript(
    records: Iterable[Record], live: ToolLock, *, path: str = "", explain: dict[str, str] | None = None
) -> TranscriptDrift:
    """Compare each call's recorded ``fingerprint`` with the lock's for that tool.

    ``explain`` (from :func:`explain_drift`) adds what changed in a drifted tool's contract.
    """
    check = FingerprintCheck(live, path=path, explain=explain)
    for record in records:
        check.feed(record)
    return check.result()


class FingerprintCheck:
    """:func:`compare_transcript` one record at a time, so one pass over a transcript can feed
    several analyses (``toolreplay check``)."""

    def __init__(self, live: ToolLock, *, path: str = "", explain: dict[str, str] | None = None) -> None:
        self._live = live
        self._path = path
        self._explain = explain or {}
        self._calls = self._fingerprinted = self._drifted = 0
        self._reported: set[tuple[str, str]] = set()
        self._findings: list[Finding] = []

    def feed(self, record: Record) -> None:
        self._calls += 1
        self._text(record)
        if record.fingerprint is None:
            return
        self._fingerprinted += 1
        contract = self._live.tools.get(record.tool)
        if contract is not None and contract.fingerprint == record.fingerprint:
            return
        self._drifted += 1
        if (record.tool, record.fingerprint) in self._reported:
            return
        self._reported.add((record.tool, record.fingerprint))
        self._findings.append(
            Finding(
                kind=TOOL_DRIFT,
                index=record.index,
                tool=record.tool,
                message=self._drift_message(record.tool, record.fingerprint, contract),
                path=self._path,
                line=record.line,
            )
        )

    def _drift_message(self, tool: str, fingerprint: str, contract: ToolContract | None) -> str:
        """A call's fingerprint the lock does not have: the tool removed, or its contract changed."""
        if contract is None:
            called = f"tool {quote(tool)} was called with fingerprint {fingerprint}"
            return f"removed: {called} and is not in the lock"
        live = contract.fingerprint
        if contract.version:
            live += f" (version {render(contract.version)})"
        return fingerprint_message(tool, fingerprint, live, explain=self._explain.get(tool, ""))

    def _text(self, record: Record) -> None:
        """A recorded contract-text digest the lock's contract does not have: ``contract-text-drift``."""
        contract = self._live.tools.get(record.tool)
        recorded, live = record.text_digest, contract.text_digest if contract is not None else None
        if recorded is None or live is None or recorded == live:
            return
        if (record.tool, recorded) in self._reported:
            return
        self._reported.add((record.tool, recorded))
        self._findings.append(self._text_finding(record, recorded, live))

    def _text_finding(self, record: Record, recorded: str, live: str) -> Finding:
        """The ``contract-text-drift`` of a call that recorded the text digest ``recorded``."""
        explain = self._explain.get(record.tool, "")
        message = text_drift_message(
            record.tool, recorded, live, against="the lock", differences=(explain,) if explain else ()
        )
        return Finding(
            kind=CONTRACT_TEXT_DRIFT,
            index=record.index,
            tool=record.tool,
            message=message,
            path=self._path,
            line=record.line,
        )

    def result(self) -> TranscriptDrift:
        return TranscriptDrift(
            calls=self._calls,
            fingerprinted=self._fingerprinted,
            drifted=self._drifted,
            findings=list(self._findings),
        )


def text_explained(
    records: Sequence[Record], lock: ToolLock | None, live: Mapping[str, ToolContract]
) -> dict[str, str]:
    """Per tool whose recorded contract text the lock holds: what changed in it live."""
    if lock is None:
        return {}
    out: dict[str, str] = {}
    for name, old in lock.tools.items():
        new = live.get(name)
        if new is not None and _text_recorded_and_changed(records, old, new):
            out[name] = "; ".join(d.text() for d in text_differences(old, new))
    return out


def _text_recorded_and_changed(records: Sequence[Record], old: ToolContract, new: ToolContract) -> bool:
    """Whether ``old``'s contract text is one a record was made with, and ``new`` has another."""
    if old.text_digest is None or old.text_digest == new.text_digest:
        return False
    return any(r.tool == old.name and r.text_digest == old.text_digest for r in records)
