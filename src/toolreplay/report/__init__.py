"""Renderers: one per output format, chosen by name from ``RENDERERS``."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar, Protocol

from toolreplay.lazy import resolve

if TYPE_CHECKING:
    from toolreplay.findings import CheckInfo, Report


class Renderer(Protocol):
    """A report format: every report, and for ``check`` what the run was, to one string.

    ``fails`` says which kinds fail the run (``--fail-on``, the config's ``fail_on``); None: the
    ``check``'s fail_on, else every kind. A format that shows levels shows a finding that does not
    fail as a warning (:func:`toolreplay.kinds.gated_level`), so it agrees with the exit code.
    """

    def __call__(
        self,
        reports: Sequence[Report],
        *,
        check: CheckInfo | None = None,
        fails: Callable[[str], bool] | None = None,
    ) -> str: ...


class _Renderers(Mapping[str, Renderer]):
    """Format name -> renderer, each renderer's module imported when it is first asked for:
    a command prints one format, and start-up is paid by every hook and CI step."""

    #: format name -> ``"module:function"`` (:func:`toolreplay.lazy.resolve`)
    _WHERE: ClassVar[dict[str, str]] = {
        "text": "toolreplay.report.text:render_text",
        "json": "toolreplay.report.json:render_json",
        "sarif": "toolreplay.report.sarif:render_sarif",
        "github": "toolreplay.report.github:render_github",
        "markdown": "toolreplay.report.markdown:render_markdown",
    }

    def __getitem__(self, name: str) -> Renderer:
        renderer: Renderer = resolve(self._WHERE[name])
        return renderer

    def __iter__(self) -> Iterator[str]:
        return iter(self._WHERE)

    def __len__(self) -> int:
        return len(self._WHERE)


RENDERERS: Mapping[str, Renderer] = _Renderers()
