"""The JSON report: a versioned shape described by schemas/report.schema.json."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolreplay.report import Report


def report_data(reports: Sequence[Report]) -> dict[str, Any]:
    from toolreplay.report import REPORT_VERSION

    return {
        "version": REPORT_VERSION,
        "reports": [
            {
                "command": r.command,
                "file": r.path,
                "summary": {line.key: line.value for line in r.header},
                "findings": [
                    {
                        "index": f.index,
                        "kind": f.kind,
                        "tool": f.tool,
                        "message": f.message,
                        "line": f.line,
                        "related": f.related,
                    }
                    for f in r.findings
                ],
                "errors": list(r.errors),
            }
            for r in reports
        ],
    }


def dump_inert(value: Any) -> str:
    """``value`` as indented JSON that a workflow step's log cannot read as a command.

    The GitHub runner's legacy parser takes ``##[`` anywhere in a line as one; in this JSON
    it can only occur inside a string, where ``##\\u005b`` is the same value. (A line never
    starts with ``::``: strings are quoted.)
    """
    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=True)
    return text.replace("##[", "##\\u005b") + "\n"


def render_json(reports: Sequence[Report]) -> str:
    return dump_inert(report_data(reports))
