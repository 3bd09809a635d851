"""docs/architecture.md stays true: the paths it names exist, and it names every room of the package."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "toolreplay"
PAGE = ROOT / "docs" / "architecture.md"

#: a code span that names a path: a Python module, a folder, or anything with a slash in it
PATH = re.compile(r"^[\w.\-/]+(?:\.py|\.ya?ml|/)$|^[\w.\-]+/[\w.\-/]+$")


def _named() -> list[str]:
    spans = re.findall(r"`([^`\n]+)`", PAGE.read_text(encoding="utf-8"))
    return sorted({span for span in spans if PATH.match(span)})


def _exists(name: str) -> bool:
    """A path relative to the package, or (for the repository's own files) to its root."""
    return (PACKAGE / name).exists() or (ROOT / name).exists()


def test_the_page_names_paths() -> None:
    """The page names modules and folders (the check below is not vacuous)."""
    assert {"report/text.py", "analyses/", "schemas.py", "action.yml"} <= set(_named())


def test_every_path_it_names_exists() -> None:
    """Every module, folder or file docs/architecture.md names exists in the package or the repository."""
    assert [name for name in _named() if not _exists(name)] == []


def test_it_names_every_top_level_module_and_folder() -> None:
    """A new top-level module or folder of src/toolreplay gets its room on the page."""
    named = set(_named())
    rooms = [
        f"{p.name}/" if p.is_dir() else p.name
        for p in sorted(PACKAGE.iterdir())
        if (p.is_dir() and (p / "__init__.py").exists()) or p.suffix == ".py"
    ]
    missing = [
        room
        for room in rooms
        if room not in named and not any(n.startswith(room) for n in named if room.endswith("/"))
    ]
    assert missing == []
