"""The manifests are code: .pre-commit-hooks.yaml and the dogfood config declare what really exists."""

from __future__ import annotations

import fnmatch
import re
import shlex
import shutil
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from pre_commit.clientlib import load_config, load_manifest

from tests.conftest import ROOT
from toolreplay.cli import cli
from toolreplay.driftnotes.guard import DEFAULT_BASELINES
from toolreplay.errors import InputError
from toolreplay.validate import kind_of

MANIFEST = ROOT / ".pre-commit-hooks.yaml"
DOGFOOD = ROOT / ".pre-commit-config.yaml"


def hooks() -> dict[str, dict[str, Any]]:
    return {hook["id"]: hook for hook in yaml.safe_load(MANIFEST.read_text())}


def test_manifest_is_valid_for_pre_commit() -> None:
    """pre-commit's own loader accepts the manifest, and it offers the three hooks of docs/spec.md §6."""
    loaded = load_manifest(str(MANIFEST))
    assert [hook["id"] for hook in loaded] == [
        "toolreplay-validate",
        "toolreplay-verify",
        "toolreplay-drift-note",
    ]
    assert {hook["language"] for hook in loaded} == {"python"}


@pytest.mark.parametrize("hook_id", sorted(hooks()))
def test_entry_is_a_real_command(hook_id: str, runner: CliRunner) -> None:
    """Each entry's program is a console script of the package and the rest is a real subcommand."""
    program, *args = shlex.split(hooks()[hook_id]["entry"])
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert program in scripts
    assert shutil.which(program, path=str(Path(sys.executable).parent)) is not None
    result = runner.invoke(cli, [*args, "--help"], catch_exceptions=False)
    assert result.exit_code == 0
    assert result.output.startswith(f"Usage: cli {' '.join(args)} ")


def test_drift_note_guard_runs_on_every_commit() -> None:
    """The guard sees deletions because it reads the staged change itself, never a file list."""
    guard = hooks()["toolreplay-drift-note"]
    assert guard["always_run"] is True
    assert guard["pass_filenames"] is False
    assert guard["require_serial"] is True


VALIDATE_YES = [
    "session.jsonl",
    "runs/2024/session.jsonl",
    "baselines/checkout.sealed.jsonl",
    "scope.json",
    "config/scope.json",
    "docs-reader.scope.json",
    "docs-reader-scope.json",
    "drift-notes/accept.md",
    "drift-notes/2024/accept.md",
    "samples/drift-notes/my note.md",
    "tools.lock.json",
    "locks/prod.tools.lock.json",
    "toolreplay.toml",
    "baselines/checkout.sealed.jsonl.sig",
]
VALIDATE_NO = [
    "README.md",
    "docs/hooks.md",
    "notdrift-notes/accept.md",
    "drift-notes.md",
    "drift-notes/accept.txt",
    "data.json",
    "myscope.json",
    "scopes.json",
    "session.jsonl.bak",
    "session.jsonl/readme.txt",
    "package-lock.json",
    "mytools.lock.json",
]


@pytest.mark.parametrize("name", VALIDATE_YES)
def test_validate_files_takes_what_validate_knows(name: str) -> None:
    """Every name the validate hook takes is one whose kind toolreplay validate tells from the name."""
    assert re.search(hooks()["toolreplay-validate"]["files"], name)
    kind_of(name)  # raises when validate could not tell the kind


@pytest.mark.parametrize("name", VALIDATE_NO)
def test_validate_files_leaves_other_files_alone(name: str) -> None:
    """The validate hook does not take files toolreplay cannot validate."""
    assert not re.search(hooks()["toolreplay-validate"]["files"], name)
    with pytest.raises(InputError):
        kind_of(name)


def test_validate_hook_leaves_pyproject_alone_though_validate_reads_it() -> None:
    """validate pyproject.toml checks [tool.toolreplay]; the hook does not take every project's pyproject."""
    assert not re.search(hooks()["toolreplay-validate"]["files"], "pyproject.toml")
    assert kind_of("pyproject.toml") == "config"


@pytest.mark.parametrize(
    ("name", "sealed"),
    [
        ("checkout.sealed.jsonl", True),
        ("baselines/my run.sealed.jsonl", True),
        ("session.jsonl", False),
        ("checkout.sealed.jsonl.bak", False),
        ("checkout.sealed.json", False),
        ("checkout-sealed.jsonl", False),
    ],
)
def test_verify_files_are_the_default_baselines(name: str, sealed: bool) -> None:
    """The verify hook takes exactly the files the guard treats as baselines by default."""
    assert bool(re.search(hooks()["toolreplay-verify"]["files"], name)) is sealed
    assert any(fnmatch.fnmatchcase(name, p) for p in DEFAULT_BASELINES) is sealed


def test_dogfood_config_mirrors_the_manifest() -> None:
    """The project's own config runs the same hooks, entries and patterns, limited to samples/."""
    config = load_config(str(DOGFOOD))
    assert config["files"] == "^samples/"
    (local,) = config["repos"]
    assert local["repo"] == "local"
    offered = hooks()
    for hook in local["hooks"]:
        declared = offered[hook["id"]]
        assert hook["entry"].startswith(declared["entry"])
        for key in ("files", "always_run", "pass_filenames", "require_serial"):
            if key in declared:
                assert hook[key] == declared[key], key
    assert [h["id"] for h in local["hooks"]] == list(offered)
