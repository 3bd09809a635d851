"""A transcript drawn as its hash chain: one box per call (index, tool, the link's digest), an
arrow from each link to the next, and each finding marked at its call by kind (docs/spec.md §2).

Pure and deterministic: the same calls and findings give the same bytes (no timestamps, no
random ids, fixed coordinates and order). Tool names and messages are untrusted: escaped as XML
text, shortened, one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

from toolreplay.escape import one_line
from toolreplay.findings import Finding
from toolreplay.kinds import kind_info

WIDTH = 760
BOX_X, BOX_W, BOX_H = 20, 380, 46
STEP = 70
TOP = 56
MARK_X = BOX_X + BOX_W + 24
#: mark colours by level (a finding that is an error, a warning)
COLOURS = {"error": "#cf222e", "warning": "#9a6700"}
MAX_TOOL = 28
MAX_MARK = 44


@dataclass(frozen=True, slots=True, kw_only=True)
class ChainCall:
    """One call of the chain as drawn: its index, tool and link digest."""

    index: int
    tool: str
    digest: str


def _text(value: str, limit: int) -> str:
    body = one_line(value)
    if len(body) > limit:
        body = body[: limit - 1] + "…"
    return escape(body, {'"': "&quot;"})


def chain_svg(
    calls: Sequence[ChainCall], findings: Sequence[Finding], *, title: str, divergence: int | None = None
) -> str:
    """The SVG picture of ``calls`` (in order) with ``findings`` marked at their index and the first
    diverging call (``divergence``, replay's) marked as such."""
    by_index: dict[int, list[Finding]] = {}
    for f in findings:
        by_index.setdefault(-1 if f.index is None else f.index, []).append(f)
    whole = by_index.pop(-1, [])
    rows = max(len(calls), 1)
    height = TOP + rows * STEP + 20 + 22 * len(whole)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}"'
        f' viewBox="0 0 {WIDTH} {height}" font-family="monospace" font-size="13">',
        f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>',
        f'<text x="{BOX_X}" y="24" font-size="15" font-weight="bold">{_text(title, 80)}</text>',
        f'<text x="{BOX_X}" y="42" fill="#57606a">{len(calls)} calls · {len(findings)} findings'
        " · each link's digest chains the one before it</text>",
    ]
    for n, call in enumerate(calls):
        out += _call(n, call, by_index.get(call.index, []), last=n == len(calls) - 1)
        if call.index == divergence:
            y = TOP + n * STEP
            out.append(
                f'<text x="{BOX_X + BOX_W - 12}" y="{y + 19}" text-anchor="end" fill="#cf222e"'
                ' font-weight="bold">diverges here</text>'
            )
    y = TOP + rows * STEP + 10
    for f in whole:
        out.append(
            f'<text x="{BOX_X}" y="{y}" fill="{_colour(f)}">{_text(f.kind + ": " + f.text, 100)}</text>'
        )
        y += 22
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _colour(f: Finding) -> str:
    return COLOURS.get(kind_info(f.kind).level, "#57606a")


def _call(n: int, call: ChainCall, marks: Sequence[Finding], *, last: bool) -> list[str]:
    y = TOP + n * STEP
    stroke = _colour(marks[0]) if marks else "#57606a"
    out = [
        f'<rect x="{BOX_X}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="6" fill="#f6f8fa"'
        f' stroke="{stroke}" stroke-width="{2 if marks else 1}"/>',
        f'<text x="{BOX_X + 12}" y="{y + 19}">#{call.index} {_text(call.tool, MAX_TOOL)}</text>',
        f'<text x="{BOX_X + 12}" y="{y + 37}" fill="#57606a">link {call.digest[:16]}…</text>',
    ]
    if not last:
        x = BOX_X + 40
        out.append(
            f'<path d="M{x} {y + BOX_H} V{y + STEP - 4} m-4 -6 l4 6 l4 -6" fill="none" stroke="#57606a"/>'
        )
    return out + _marks(y, marks)


def _marks(y: int, marks: Sequence[Finding]) -> list[str]:
    """The first two findings on a call, beside its box, and how many more."""
    out = []
    for k, f in enumerate(marks[:2]):
        related = f" (vs #{f.related})" if f.related is not None else ""
        label = _text(f"{f.kind}{related}", MAX_MARK)
        at = y + 19 + 18 * k
        out.append(f'<text x="{MARK_X}" y="{at}" fill="{_colour(f)}" font-weight="bold">◀ {label}</text>')
    if len(marks) > 2:
        out.append(f'<text x="{MARK_X}" y="{y + 55}" fill="#57606a">+{len(marks) - 2} more</text>')
    return out
