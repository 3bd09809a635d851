"""Renderers: one per output format, chosen by name from ``RENDERERS``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolreplay.findings import Finding

#: Version of the JSON report shape (schemas/report.schema.json).
REPORT_VERSION = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class Line:
    """A header line of a report: ``label: text`` in text form, ``key: value`` in JSON."""

    key: str
    value: Any
    text: str
    label: str = ""

    @property
    def shown_label(self) -> str:
        return self.label or self.key


@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    """What one command found in one file."""

    command: str
    path: str
    header: tuple[Line, ...] = ()
    findings: tuple[Finding, ...] = ()
    errors: tuple[str, ...] = field(default=())

    @property
    def failed(self) -> bool:
        return bool(self.findings or self.errors)


def replay_header(calls: int, divergence: int | None, findings: int) -> tuple[Line, ...]:
    """The three header lines of a replay report (SPEC §2.1): calls, divergence, findings."""
    return (
        Line(key="calls", value=calls, text=str(calls)),
        Line(
            key="divergence", value=divergence, text="none" if divergence is None else f"index {divergence}"
        ),
        Line(key="findings", value=findings, text=str(findings)),
    )


def _divergence(index: int | None) -> str:
    return "none" if index is None else f"index {index}"


Renderer = Callable[[Sequence[Report]], str]


def _renderers() -> dict[str, Renderer]:
    from toolreplay.report.github import render_github
    from toolreplay.report.json import render_json
    from toolreplay.report.markdown import render_markdown
    from toolreplay.report.sarif import render_sarif
    from toolreplay.report.text import render_text

    return {
        "text": render_text,
        "json": render_json,
        "sarif": render_sarif,
        "github": render_github,
        "markdown": render_markdown,
    }


RENDERERS: dict[str, Renderer] = _renderers()
