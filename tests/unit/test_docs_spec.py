"""docs/spec.md is the one contract: every section the code and docs cite exists, nothing points outside."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "docs" / "spec.md"

#: where the code and the docs cite sections of the contract
CITING = [
    *sorted((ROOT / "src").rglob("*.py")),
    *sorted((ROOT / "tests").rglob("*.py")),
    *sorted((ROOT / "bench").rglob("*.py")),
    ROOT / "README.md",
    ROOT / "CHANGELOG.md",
    ROOT / "CONTRIBUTING.md",
    *sorted((ROOT / "docs").glob("*.md")),
]

#: the Markdown pages of the project, whose links are checked
PAGES = [
    ROOT / "README.md",
    ROOT / "CHANGELOG.md",
    ROOT / "CONTRIBUTING.md",
    *sorted((ROOT / "docs").glob("*.md")),
]

#: a citation: §3, §3.4 (a trailing full stop ends the sentence, not the number)
CITATION = re.compile(r"§(\d+(?:\.\d+)*)")
#: a numbered heading of the contract: "## 3. Analyses", "### 3.4 Baseline diff"
HEADING = re.compile(r"^#{2,4} (\d+(?:\.\d+)*)\.? ", re.MULTILINE)
#: a Markdown link target
LINK = re.compile(r"\]\(([^)\s]+)\)")

#: what a reference to a contract outside the repository looks like (spelled in pieces so
#: this file does not match itself)
OUTSIDE = re.compile(
    "|".join([r"\.\./" + "shared", r"\b" + "SP" + r"EC\b", "shared " + "folder", "/wo" + "rk/"])
)

#: folders that are not the project's files (caches, environments, build output); of the
#: dot-folders only these are
SKIPPED_DIRS = {"__pycache__", "build", "dist", "node_modules"}
PROJECT_DOT_DIRS = {".github", ".ci"}


def _spec_sections() -> set[str]:
    return set(HEADING.findall(CONTRACT.read_text(encoding="utf-8")))


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _spec_anchors() -> set[str]:
    return _anchors(CONTRACT)


def _anchors(page: Path) -> set[str]:
    lines = page.read_text(encoding="utf-8").splitlines()
    return {_slug(line.lstrip("#")) for line in lines if line.startswith("#")}


def _project_files() -> list[Path]:
    """Every file of the project, the folders it does not own (.git, .venv, node_modules ...) pruned
    as the walk meets them, not read and filtered."""
    found = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in SKIPPED_DIRS
            and not d.endswith(".egg-info")
            and (not d.startswith(".") or d in PROJECT_DOT_DIRS)
        )
        found += [Path(folder, name) for name in sorted(files)]
    return found


def test_spec_has_numbered_sections() -> None:
    """The contract has the numbered headings the citations point at (the check below is not vacuous)."""
    assert {"1.1", "1.2", "2.1", "3.4", "10"} <= _spec_sections()


@pytest.mark.parametrize("path", CITING, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_cited_section_is_a_heading_of_the_spec(path: Path) -> None:
    """Every §N / §N.M this file cites is a heading of docs/spec.md."""
    sections = _spec_sections()
    text = path.read_text(encoding="utf-8")
    missing = [
        f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1}: §{match.group(1)}"
        for match in CITATION.finditer(text)
        if match.group(1) not in sections
    ]
    assert missing == []


def test_citations_are_found() -> None:
    """The citation scan sees the code's references (it would pass vacuously if the pattern broke)."""
    cited = {m.group(1) for path in CITING for m in CITATION.finditer(path.read_text(encoding="utf-8"))}
    assert {"1.1", "1.3", "3.4"} <= cited


def test_links_into_the_spec_name_its_headings() -> None:
    """A Markdown link to spec.md#anchor lands on a heading of docs/spec.md."""
    anchors = _spec_anchors()
    broken = []
    for path in PAGES:
        for target in LINK.findall(path.read_text(encoding="utf-8")):
            file, _, anchor = target.partition("#")
            if anchor and file and (path.parent / file).resolve() == CONTRACT and anchor not in anchors:
                broken.append(f"{path.relative_to(ROOT)}: {target}")
    assert broken == []


def test_links_to_a_section_land_on_a_heading() -> None:
    """A link to page.md#anchor or #anchor, in any page, names a heading of that page (moved sections too)."""
    broken = []
    for path in PAGES:
        for target in LINK.findall(path.read_text(encoding="utf-8")):
            file, _, anchor = target.partition("#")
            if not anchor or re.match(r"^[a-z][a-z0-9+.-]*:", file) or (file and not file.endswith(".md")):
                continue
            page = (path.parent / file).resolve() if file else path
            if page.exists() and anchor not in _anchors(page):
                broken.append(f"{path.relative_to(ROOT)}: {target}")
    assert broken == []


def test_markdown_links_stay_inside_the_repository() -> None:
    """No relative Markdown link in the README or docs leaves the repository."""
    outside = []
    for path in PAGES:
        for target in LINK.findall(path.read_text(encoding="utf-8")):
            file = target.partition("#")[0]
            if not file or re.match(r"^[a-z][a-z0-9+.-]*:", file):
                continue
            resolved = (path.parent / file).resolve()
            if not resolved.is_relative_to(ROOT) or not resolved.exists():
                outside.append(f"{path.relative_to(ROOT)}: {target}")
    assert outside == []


def test_nothing_points_at_a_contract_outside_the_repository() -> None:
    """No file of the project cites a contract or a folder outside the repository."""
    hits = []
    for path in _project_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if OUTSIDE.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert hits == []
