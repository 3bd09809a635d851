"""What the commands every pre-commit hook and CI step runs leave unimported on their usual
input: each of these modules costs milliseconds of start-up that commit pays (bench/startup.py
measures the whole)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

# runs the CLI in-process, then prints the heavy modules it loaded
PROBE = """
import sys
from toolreplay.cli import cli
try:
    cli.main(args=sys.argv[1:], prog_name="toolreplay")
except SystemExit as done:
    code = done.code
heavy = ("jsonschema", "referencing", "orjson", "toolreplay.chain", "toolreplay.canonical", "yaml")
import json
print(json.dumps([code, sorted(m for m in sys.modules if m.split(".")[0] in heavy or m in heavy)]))
"""


def loaded(args: list[str], cwd: Path) -> tuple[int, list[str]]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout
    code, modules = json.loads(out.strip().splitlines()[-1])  # the command's own output comes first
    return code, modules


@pytest.fixture
def sealed(tmp_path: Path) -> Path:
    target = tmp_path / "session.sealed.jsonl"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "toolreplay",
            "seal",
            str(ROOT / "samples" / "session-clean.jsonl"),
            "-o",
            str(target),
        ],
        check=True,
    )
    return target


def test_validate_of_a_valid_sealed_file_needs_no_jsonschema(sealed: Path) -> None:
    code, modules = loaded(["validate", str(sealed)], sealed.parent)
    assert code == 0
    assert not [m for m in modules if m.split(".")[0] in ("jsonschema", "referencing")]


@pytest.mark.slow
def test_the_drift_note_hook_on_a_commit_without_baselines_loads_no_decoder(tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "test@example.invalid")
    git("config", "user.name", "test")
    (tmp_path / "pyproject.toml").write_text('[tool.toolreplay]\nbaselines = ["baselines/*.sealed.jsonl"]\n')
    (tmp_path / "README.md").write_text("one\n")
    git("add", "pyproject.toml", "README.md")
    code, modules = loaded(["hook", "drift-note"], tmp_path)
    assert code == 0
    assert modules == []
