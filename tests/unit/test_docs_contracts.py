"""docs/contracts.md: the library example runs and prints what the page shows; so do the console sessions."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from toolreplay.cli import cli

DOCS = Path(__file__).resolve().parent.parent.parent / "docs"
PAGE = (DOCS / "contracts.md").read_text(encoding="utf-8")


def block_after(marker: str) -> str:
    match = re.search(re.escape(marker) + r"\n```\w+\n(.*?)```", PAGE, re.DOTALL)
    assert match, marker
    return match.group(1)


def run_library_example() -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        # dont_inherit: this module's postponed annotations must not leak into the example
        code = compile(
            block_after("<!-- example: library -->"), "docs/contracts.md", "exec", dont_inherit=True
        )
        exec(code, {"__name__": "docs_example"})
    return out.getvalue()


def test_library_example_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The runnable example prints exactly the output shown under it."""
    monkeypatch.chdir(tmp_path)
    assert run_library_example() == block_after("<!-- output: library -->")


def test_console_sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every `$ toolreplay ...` session on the page gives the output and exit code shown."""
    for example in (DOCS / "examples").glob("tools-v*.json"):
        shutil.copy(example, tmp_path)
    monkeypatch.chdir(tmp_path)
    run_library_example()
    runner = CliRunner()
    sessions = re.findall(r"```console\n(.*?)```", PAGE, re.DOTALL)
    assert len(sessions) == 2
    last_exit = 0
    for session in sessions:
        for command in re.split(r"^\$ ", session, flags=re.MULTILINE)[1:]:
            line, _, expected = command.partition("\n")
            if line == "echo $?":
                assert expected == f"{last_exit}\n"
                continue
            args = shlex.split(line)
            assert args[0] == "toolreplay"
            result = runner.invoke(cli, args[1:], catch_exceptions=False)
            last_exit = result.exit_code
            assert result.output == expected, line


def test_readme_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's Tool contracts example runs and ends on the drift it promises."""
    readme = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- example: readme -->\n```python\n(.*?)```", readme, re.DOTALL)
    assert match
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(match.group(1), "README.md", "exec", dont_inherit=True), {"__name__": "readme_example"})
    assert out.getvalue().startswith("tool 'search' drifted: recorded with fingerprint ")


def run_example(text: str, marker: str, filename: str) -> str:
    match = re.search(re.escape(marker) + r"\n```python\n(.*?)```", text, re.DOTALL)
    assert match, marker
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(match.group(1), filename, "exec", dont_inherit=True), {"__name__": "docs_example"})
    return out.getvalue()


def shown_output(text: str, marker: str) -> str:
    match = re.search(re.escape(marker) + r"\n```text\n(.*?)```", text, re.DOTALL)
    assert match, marker
    return match.group(1)


def test_brief_reexecute_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The brief re-execution example (moved from the README) prints exactly the divergence it shows."""
    monkeypatch.chdir(tmp_path)
    printed = run_example(PAGE, "<!-- example: reexecute-brief -->", "docs/contracts.md")
    assert printed == shown_output(PAGE, "<!-- output: reexecute-brief -->")


def test_reexecute_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's re-execution example runs and prints exactly the output shown under it."""
    monkeypatch.chdir(tmp_path)
    assert run_example(PAGE, "<!-- example: reexecute -->", "docs/contracts.md") == shown_output(
        PAGE, "<!-- output: reexecute -->"
    )
