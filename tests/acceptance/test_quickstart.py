"""The Quickstart (docs/quickstart.md), followed step by step in a fresh repository: real git, the real
pre-commit framework (hooks from a snapshot of this checkout) and the installed toolreplay.

The Quickstart is the ``shell-session`` block between ``<!-- quickstart:start -->`` and
``<!-- quickstart:end -->``: ``$ `` starts a command, ``> `` continues it (a heredoc), and
the other lines are output that must appear, in order (``...`` stands for lines left out).
A command must exit 0 unless it ends with ``# exits 1``. ``pip install`` is the one step
not run (this environment has toolreplay installed already); the ``OWNER/toolreplay``
hook repository and ``COMMIT`` become the local snapshot and its commit.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from tests.acceptance.test_pre_commit_framework import HookRepo, hook_repo  # noqa: F401 (fixture)
from tests.conftest import ROOT
from tests.gitrepo import git_env

pytestmark = pytest.mark.slow


@dataclass
class Step:
    command: str
    output: list[str] = field(default_factory=list)
    fails: bool = False


def quickstart() -> list[Step]:
    text = (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")
    block = text.split("<!-- quickstart:start -->\n```shell-session\n", 1)[1].split(
        "```\n<!-- quickstart:end -->", 1
    )[0]
    steps: list[Step] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            command = line[2:]
            fails = command.endswith("# exits 1")
            steps.append(Step(command=command.split("  # exits 1")[0], fails=fails))
        elif line.startswith("> "):
            steps[-1].command += "\n" + line[2:]
        elif line == ">":
            steps[-1].command += "\n"
        else:
            steps[-1].output.append(line)
    return steps


def _appears_in_order(expected: list[str], actual: str) -> bool:
    lines = actual.splitlines()
    position = 0
    for want in expected:
        if want == "...":
            continue
        while position < len(lines) and lines[position] != want:
            position += 1
        if position == len(lines):
            return False
        position += 1
    return True


def test_quickstart_has_the_adoption_steps() -> None:
    """The Quickstart installs, seals, configures, adds hooks and the Action, and gates a change."""
    commands = [s.command for s in quickstart()]
    assert commands[0] == 'pip install "toolreplay @ git+https://github.com/OWNER/toolreplay@COMMIT"'
    joined = "\n".join(commands)
    for needed in (
        "toolreplay seal",
        "toolreplay check",
        "pre-commit install",
        "uses: OWNER/toolreplay@COMMIT",
        "rev: COMMIT",
        "toolreplay note",
        "toolreplay accept",
        "toolreplay check --base main",
    ):
        assert needed in joined
    assert (
        ROOT / "action.yml"
    ).is_file()  # so `uses: OWNER/toolreplay@COMMIT` names this repository's Action


def test_quickstart_runs_in_a_fresh_repository(tmp_path: Path, hook_repo: HookRepo) -> None:  # noqa: F811
    """Each Quickstart command, run in order in a new repository, exits and prints as shown."""
    project = tmp_path / "support-agent"
    project.mkdir()
    bin_dir = str(Path(sys.executable).parent)  # toolreplay and pre-commit of this environment
    env = git_env({"PRE_COMMIT_HOME": str(hook_repo.home), "PATH": bin_dir + os.pathsep + os.environ["PATH"]})
    for fixed in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        env.pop(fixed)  # commits made today, as a new user's are: the baseline is fresh
    for step in quickstart():
        if step.command.startswith("pip install "):
            continue
        command = step.command.replace("https://github.com/OWNER/toolreplay", str(hook_repo.path))
        command = command.replace("rev: COMMIT", f"rev: {hook_repo.rev}")
        done = subprocess.run(
            ["bash", "-c", command], cwd=project, env=env, capture_output=True, text=True, timeout=600
        )
        shown = done.stdout + done.stderr
        assert (done.returncode != 0) == step.fails, f"$ {step.command}\n{shown}"
        if step.fails:
            assert done.returncode == 1 or "Failed" in shown, shown
        assert _appears_in_order(step.output, shown), f"$ {step.command}\n{shown}"
    workflow = yaml.safe_load((project / ".github" / "workflows" / "toolreplay.yml").read_text())
    uses = [s["uses"] for s in workflow["jobs"]["toolreplay"]["steps"]]
    assert uses[-1] == "OWNER/toolreplay@COMMIT"
    log = subprocess.run(["git", "log", "--format=%s"], cwd=project, env=env, capture_output=True, text=True)
    assert log.stdout.splitlines() == ["Refunds carry a reason", "Support agent: first baseline"]
    assert re.search(r"^Refunds now carry", (project / "drift-notes" / "support-2.md").read_text(), re.M)


def test_config_example_is_valid_and_its_fail_on_is_complete(tmp_path: Path) -> None:
    """The config example of docs/cli.md validates, and its fail_on fails every kind but redundant-call
    (and the advisory kinds)."""
    from toolreplay.config import load_config
    from toolreplay.gate import known_kinds
    from toolreplay.kinds import ADVISORY_KINDS

    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    example = re.search(r"```toml\n(\[tool\.toolreplay\]\n.*?)```", text, re.S)
    assert example is not None
    (tmp_path / "pyproject.toml").write_text(example.group(1))
    config = load_config(tmp_path / "pyproject.toml")
    kinds = known_kinds()
    assert config.fail_on is not None
    # every kind but redundant-call, and but the advisory ones, which fail only when named
    assert sorted(config.fail_on) == sorted(set(kinds) - {"redundant-call"} - ADVISORY_KINDS)
