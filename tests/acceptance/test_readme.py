"""Every `$ toolreplay ...` example in README.md prints what the README shows."""

from __future__ import annotations

import re
import shlex

import pytest
from click.testing import CliRunner

from tests.conftest import ROOT
from toolreplay.cli import cli


def examples() -> list[tuple[str, str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = []
    for block in re.findall(r"```console\n(.*?)```", text, flags=re.DOTALL):
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


EXAMPLES = examples()


def test_readme_has_examples() -> None:
    """The README shows real commands (the parser below found them)."""
    assert len(EXAMPLES) >= 6


@pytest.mark.parametrize(("command", "expected"), EXAMPLES, ids=[c for c, _ in EXAMPLES])
def test_readme_example(
    command: str, expected: str, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Running the README's command prints exactly the README's output."""
    monkeypatch.chdir(ROOT)
    argv = shlex.split(command)
    assert argv[0] == "toolreplay"
    result = runner.invoke(cli, argv[1:], catch_exceptions=False)
    assert result.output == expected


def test_readme_markdown_and_annotation_examples(runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Markdown body and the annotation line pasted in the README are what the renderers print."""
    monkeypatch.chdir(ROOT)
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("```markdown\n### toolreplay report\n\n**Fails the build**: 2") + len("```markdown\n")
    pasted = text[start : text.index("```", start)]
    args = ["replay", "samples/session-dirty.jsonl", "--format"]
    assert runner.invoke(cli, [*args, "markdown"], catch_exceptions=False).output == pasted
    github = runner.invoke(cli, [*args, "github"], catch_exceptions=False).output
    line = next(x for x in text.splitlines() if x.startswith("::error file=samples/session-dirty.jsonl"))
    assert line in github.splitlines()
