"""CHANGELOG.md stays readable: Keep a Changelog sections, short lines, the newest release the version."""

from __future__ import annotations

import re

from tests.conftest import ROOT

CHANGELOG = ROOT / "CHANGELOG.md"
#: a release heading: ``## [0.7.0] - 2026-12-01``
RELEASE = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", re.MULTILINE)


def test_every_line_is_at_most_120_characters() -> None:
    """No CHANGELOG line is longer than 120 characters: one change, one short line."""
    long = [
        f"CHANGELOG.md:{number}: {len(line)} characters"
        for number, line in enumerate(CHANGELOG.read_text(encoding="utf-8").splitlines(), start=1)
        if len(line) > 120
    ]
    assert long == []


def test_newest_release_is_the_package_version() -> None:
    """The newest dated section names the version src/toolreplay/_version.py sets."""
    version_file = (ROOT / "src" / "toolreplay" / "_version.py").read_text(encoding="utf-8")
    match = re.search(r'^__version__ = "([^"]+)"$', version_file, re.MULTILINE)
    assert match is not None
    releases = RELEASE.findall(CHANGELOG.read_text(encoding="utf-8"))
    assert releases, "no '## [X.Y.Z] - YYYY-MM-DD' section"
    assert releases[0][0] == match.group(1)


def test_unreleased_comes_first() -> None:
    """An `## [Unreleased]` section sits above every release, where new lines go."""
    text = CHANGELOG.read_text(encoding="utf-8")
    headings = re.findall(r"^## .*$", text, re.MULTILINE)
    assert headings[0] == "## [Unreleased]"
    assert all(RELEASE.match(heading) for heading in headings[1:])
