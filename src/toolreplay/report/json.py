"""The JSON report: a versioned shape described by schemas/report.schema.json.

It holds everything the other formats show (header lines in order with their text, each
finding's file), so ``toolreplay merge`` can render shards' JSON reports in any format;
:func:`reports_from_data` reads it back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from toolreplay.findings import Change, CheckInfo, Finding, Line, Report, Review

#: Version of the JSON report shape (schemas/report.schema.json).
REPORT_VERSION = 1


def _finding(f: Finding) -> dict[str, Any]:
    data: dict[str, Any] = {
        "index": f.index,
        "kind": f.kind,
        "tool": f.tool,
        "message": f.message,
        "line": f.line,
        "related": f.related,
        "path": f.path,
    }
    if f.change is not None:
        data["change"] = {"pointer": f.change.pointer, "baseline": f.change.baseline, "run": f.change.run}
    return data


def _read_finding(f: dict[str, Any], path: str) -> Finding:
    return Finding(
        kind=f["kind"],
        index=f["index"],
        tool=f["tool"],
        message=f["message"],
        path=f.get("path", path),
        line=f["line"],
        related=f["related"],
        change=Change(**f["change"]) if f.get("change") else None,
    )


def _review(review: Review) -> dict[str, Any]:
    return {
        "base": review.base,
        "head": review.head,
        "note": review.note,
        "reason": review.reason,
        "kinds": list(review.kinds),
        "changes": [_finding(f) for f in review.changes],
    }


def _read_review(data: dict[str, Any], path: str) -> Review:
    return Review(
        base=data["base"],
        head=data["head"],
        note=data["note"],
        reason=data["reason"],
        kinds=tuple(data["kinds"]),
        changes=tuple(_read_finding(f, path) for f in data["changes"]),
    )


def check_data(info: CheckInfo) -> dict[str, Any]:
    shard = None if info.shard is None else {"index": info.shard[0], "count": info.shard[1]}
    data: dict[str, Any] = {
        "toolreplay": info.toolreplay,
        "config": info.config,
        "fail_on": None if info.fail_on is None else list(info.fail_on),
        "base": info.base,
        "shard": shard,
        "drift": info.drift,
    }
    if info.inputs is not None:
        # a shard's: what merge binds it by (a whole run, and a merge, leave both out)
        data["commit"] = info.commit
        data["inputs"] = info.inputs
    return data


def report_data(reports: Sequence[Report], *, check: CheckInfo | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"version": REPORT_VERSION, "reports": [_report(r) for r in reports]}
    if check is not None:
        data["check"] = check_data(check)
    return data


def _report(r: Report) -> dict[str, Any]:
    data: dict[str, Any] = {
        "command": r.command,
        "file": r.path,
        "summary": {line.key: line.value for line in r.header},
        "header": [
            {"key": line.key, "value": line.value, "text": line.text, "label": line.label}
            for line in r.header
        ],
        "findings": [_finding(f) for f in r.findings],
        "errors": list(r.errors),
    }
    return data | _optional_fields(r)


def _optional_fields(r: Report) -> dict[str, Any]:
    """The fields only some reports carry, in their order (none that this one does not)."""
    review = None if r.review is None else _review(r.review)
    fields = (("notes", r.notes), ("note", r.note), ("review", review))
    return {key: value for key, value in fields if value is not None}


def reports_from_data(data: dict[str, Any]) -> list[Report]:
    """The reports of a JSON report that validates against the schema (the inverse of :func:`report_data`).

    A report without ``header`` (written before it existed) gets its lines from ``summary``
    with the values as text.
    """
    return [_read_report(r) for r in data["reports"]]


def _read_report(r: dict[str, Any]) -> Report:
    return Report(
        command=r["command"],
        path=r["file"],
        header=_read_header(r),
        findings=tuple(_read_finding(f, r["file"]) for f in r["findings"]),
        errors=tuple(r["errors"]),
        notes=r.get("notes"),
        note=r.get("note"),
        review=_read_review(r["review"], r["file"]) if "review" in r else None,
    )


def _read_header(r: dict[str, Any]) -> tuple[Line, ...]:
    """A report's header lines; from its ``summary`` (values as text) when it has no ``header``."""
    if "header" not in r:
        return tuple(Line(key=k, value=v, text=str(v)) for k, v in r["summary"].items())
    return tuple(
        Line(key=h["key"], value=h["value"], text=h["text"], label=h.get("label", "")) for h in r["header"]
    )


def dump_inert(value: Any) -> str:
    """``value`` as indented JSON that a workflow step's log cannot read as a command.

    The GitHub runner's legacy parser takes ``##[`` anywhere in a line as one; in this JSON
    it can only occur inside a string, where ``##\\u005b`` is the same value. (A line never
    starts with ``::``: strings are quoted.)
    """
    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=True)
    return text.replace("##[", "##\\u005b") + "\n"


def render_json(
    reports: Sequence[Report], *, check: CheckInfo | None = None, fails: Callable[[str], bool] | None = None
) -> str:
    return dump_inert(report_data(reports, check=check))
