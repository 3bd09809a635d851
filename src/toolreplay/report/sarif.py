"""The ``sarif`` format: SARIF 2.1.0 for GitHub code scanning and other SARIF viewers.

One rule per finding kind, its ``ruleId`` the kind itself (the kind names are part of
the report contract, so they are stable); locations are repository-relative URIs under
the ``%SRCROOT%`` base, the region's start line the record's line in the file. URIs
percent-encode a file name's every other character; message texts spell out control
characters (an error names its file), as the text report does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote as uri_quote

from toolreplay._version import __version__
from toolreplay.escape import one_line
from toolreplay.findings import gate_of
from toolreplay.kinds import KIND_ORDER, REPORT_ERROR, gated_level, kind_info
from toolreplay.report.json import dump_inert
from toolreplay.report.paths import repo_relative

if TYPE_CHECKING:
    from toolreplay.findings import CheckInfo, Report

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"


def _rule(kind: str) -> dict[str, Any]:
    info = kind_info(kind)
    name = "".join(part.capitalize() for part in kind.split("-"))
    return {
        "id": kind,
        "name": name,
        "shortDescription": {"text": info.summary},
        "fullDescription": {"text": f"{info.summary} {info.help}"},
        "help": {"text": info.help, "markdown": info.help},
        "defaultConfiguration": {"level": info.level},
        "properties": {"tags": ["toolreplay"]},
    }


def _location(path: str, line: int | None, root: str | None) -> dict[str, Any]:
    rel = repo_relative(path, root)
    if rel is not None:
        artifact = {"uri": uri_quote(rel, safe="/"), "uriBaseId": SRCROOT}
    else:
        # outside the repository: an absolute file URI, which must not carry a base id
        artifact = {"uri": Path(path).resolve().as_uri()}
    physical: dict[str, Any] = {"artifactLocation": artifact}
    if line:
        physical["region"] = {"startLine": line}
    return {"physicalLocation": physical}


_Entry = tuple[str, str, int | None, str]


def _entries(report: Report) -> list[_Entry]:
    """(kind, path, line, message) of each finding and error of a report."""
    entries: list[_Entry] = [(f.kind, f.path or report.path, f.line or None, f.text) for f in report.findings]
    entries += [(REPORT_ERROR, report.path, None, error) for error in report.errors]
    return entries


def _kinds(found: set[str]) -> list[str]:
    """Every known kind and any other found, in the kinds' fixed order (the rules' order)."""
    order = {kind: n for n, kind in enumerate(KIND_ORDER)}
    return sorted(found | set(KIND_ORDER), key=lambda k: (order.get(k, len(order)), k))


def sarif_log(
    reports: Sequence[Report], *, root: str | None = None, fails: Callable[[str], bool] | None = None
) -> dict[str, Any]:
    """The SARIF log as a JSON-ready dict. A result's level is its kind's, or ``warning`` when
    ``fails`` (which kinds fail the run; None: every kind) says its kind does not fail."""
    entries = [entry for report in reports for entry in _entries(report)]
    kinds = _kinds({e[0] for e in entries})
    index = {kind: n for n, kind in enumerate(kinds)}
    results = [_result(entry, index[entry[0]], root, fails) for entry in entries]
    return _log(kinds, results)


def _log(kinds: list[str], results: list[dict[str, Any]]) -> dict[str, Any]:
    """The log of one run: toolreplay's rules (one a kind, in order) and the results."""
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "toolreplay",
                        "version": __version__,
                        "rules": [_rule(kind) for kind in kinds],
                    }
                },
                "originalUriBaseIds": {SRCROOT: {"description": {"text": "The repository root."}}},
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def _result(
    entry: _Entry, rule: int, root: str | None, fails: Callable[[str], bool] | None
) -> dict[str, Any]:
    kind, path, line, message = entry
    return {
        "ruleId": kind,
        "ruleIndex": rule,
        "level": gated_level(kind, fails),
        # a viewer shows the text as it is: a file name's control characters spelled out
        "message": {"text": one_line(message)},
        "locations": [_location(path, line, root)],
    }


def render_sarif(
    reports: Sequence[Report], *, check: CheckInfo | None = None, fails: Callable[[str], bool] | None = None
) -> str:
    return dump_inert(sarif_log(reports, fails=gate_of(check, fails)))
