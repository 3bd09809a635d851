"""Every `$ toolreplay ...` example in README.md and docs/*.md prints what the page shows."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import ROOT
from toolreplay.cli import cli

#: the pages whose ``console`` blocks are run, from the repository root
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: put on the line before a ``console`` block that shows a session in a folder of its own
#: (files the repository does not hold), so it is an illustration and not run here
NOT_RUN = "<!-- console: not run -->"

#: a ``console`` block, and whether the line before it says not to run it
BLOCK = re.compile(r"(^[^\n]*\n)?```console\n(.*?)```", flags=re.DOTALL | re.MULTILINE)


def examples(path: Path) -> list[tuple[str, str]]:
    """The (command, expected output) pairs of the page's console blocks, in order."""
    text = path.read_text(encoding="utf-8")
    found = []
    for before, block in BLOCK.findall(text):
        if before.strip() == NOT_RUN:
            continue
        command, expected = None, []
        for line in block.splitlines():
            if line.startswith("$ "):
                if command:
                    found.append((command, "".join(f"{e}\n" for e in expected)))
                command, expected = line[2:], []
            else:
                expected.append(line)
        if command:
            found.append((command, "".join(f"{e}\n" for e in expected)))
    return found


EXAMPLES = [(path.relative_to(ROOT).as_posix(), *example) for path in PAGES for example in examples(path)]


def test_pages_have_examples() -> None:
    """The README and docs show real commands (the parser below found them where they were moved)."""
    pages = {page for page, _, _ in EXAMPLES}
    assert len(EXAMPLES) >= 11
    assert {"docs/cli.md", "docs/github.md"} <= pages


@pytest.mark.parametrize(
    ("page", "command", "expected"), EXAMPLES, ids=[f"{page}: {c}" for page, c, _ in EXAMPLES]
)
def test_page_example(
    page: str, command: str, expected: str, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Running the page's command from the repository root prints exactly the page's output."""
    monkeypatch.chdir(ROOT)
    argv = shlex.split(command)
    assert argv[0] == "toolreplay"
    result = runner.invoke(cli, argv[1:], catch_exceptions=False)
    assert result.output == expected


def test_markdown_and_annotation_examples_are_compared() -> None:
    """The Markdown report and the annotations pasted in docs/github.md are among the compared examples."""
    commands = {(page, command) for page, command, _ in EXAMPLES}
    for fmt in ("github", "markdown"):
        assert ("docs/github.md", f"toolreplay replay samples/session-dirty.jsonl --format {fmt}") in commands


#: the picture the README shows, and the command that draws it
PICTURE = "docs/images/session-dirty.svg"
DRAW = f"toolreplay render samples/session-dirty.jsonl -o {PICTURE}"


def test_the_readme_picture_is_drawn_by_render(
    tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README shows the dirty sample's chain, and render draws exactly that picture again."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"]({PICTURE})" in readme and f"`{DRAW}`" in readme
    monkeypatch.chdir(ROOT)
    drawn = tmp_path / "again.svg"
    argv = shlex.split(DRAW)[1:]
    result = runner.invoke(cli, [*argv[:-1], str(drawn)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert drawn.read_bytes() == (ROOT / PICTURE).read_bytes()
    # the sample's real first digest, and both findings marked by kind
    assert "redundant-call (vs #1)" in drawn.read_text() and "non-determinism (vs #3)" in drawn.read_text()
    assert "diverges here" in drawn.read_text()
