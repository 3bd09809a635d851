"""Renderers: one per output format, chosen by name from ``RENDERERS``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import import_module
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    from toolreplay.findings import Finding
    from toolreplay.shard import CheckInfo

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
    #: for a baseline checked by ``check``: the drift-notes folder, as the paths are relative
    #: (where a note accepting its drift goes)
    notes: str | None = None

    @property
    def failed(self) -> bool:
        return bool(self.findings or self.errors)


def replay_header(calls: int, divergence: int | None, findings: int) -> tuple[Line, ...]:
    """The three header lines of a replay report (docs/spec.md §2.1): calls, divergence, findings."""
    return (
        Line(key="calls", value=calls, text=str(calls)),
        Line(
            key="divergence", value=divergence, text="none" if divergence is None else f"index {divergence}"
        ),
        Line(key="findings", value=findings, text=str(findings)),
    )


def masked_line(counts: Sequence[int]) -> Line:
    """The ``masked:`` header line of a comparison under volatile rules: its value is the values
    masked per rule, in the config's order (so a whole check can add them up), its text
    ``12 values by 2 rules``."""
    return Line(key="masked", value=list(counts), text=masked_text(counts))


def masked_text(counts: Sequence[int]) -> str:
    """``12 values by 2 rules``: the values masked, and by how many of the rules."""
    values, rules = sum(counts), sum(1 for n in counts if n)
    return f"{values} value{'s' * (values != 1)} by {rules} rule{'s' * (rules != 1)}"


def masked_total(reports: Sequence[Report]) -> list[int] | None:
    """The values masked per rule over every report of a check (None: no volatile rules)."""
    lines = [line.value for r in reports for line in r.header if line.key == "masked"]
    if not lines:
        return None
    total = [0] * max(len(value) for value in lines)
    for value in lines:
        for number, n in enumerate(value):
            total[number] += n
    return total


def stale_rules(counts: Sequence[int]) -> list[str]:
    """One warning per volatile rule that masked nothing in a whole check: a stale rule, left
    behind by a tool that changed (or a place mistyped), which hides nothing and tests nothing."""
    return [
        f"volatile rule {n + 1} (the config's [[volatile]] table number {n + 1}) masked no value"
        " in the whole check: a stale rule?"
        for n, count in enumerate(counts)
        if not count
    ]


def _divergence(index: int | None) -> str:
    return "none" if index is None else f"index {index}"


class Renderer(Protocol):
    """A report format: every report, and for ``check`` what the run was, to one string."""

    def __call__(self, reports: Sequence[Report], *, check: CheckInfo | None = None) -> str: ...


class _Renderers(Mapping[str, Renderer]):
    """Format name -> renderer, each renderer's module imported when it is first asked for:
    a command prints one format, and start-up is paid by every hook and CI step."""

    _WHERE: ClassVar[dict[str, tuple[str, str]]] = {
        "text": ("toolreplay.report.text", "render_text"),
        "json": ("toolreplay.report.json", "render_json"),
        "sarif": ("toolreplay.report.sarif", "render_sarif"),
        "github": ("toolreplay.report.github", "render_github"),
        "markdown": ("toolreplay.report.markdown", "render_markdown"),
    }

    def __getitem__(self, name: str) -> Renderer:
        module, function = self._WHERE[name]
        renderer: Renderer = getattr(import_module(module), function)
        return renderer

    def __iter__(self) -> Iterator[str]:
        return iter(self._WHERE)

    def __len__(self) -> int:
        return len(self._WHERE)


RENDERERS: Mapping[str, Renderer] = _Renderers()
