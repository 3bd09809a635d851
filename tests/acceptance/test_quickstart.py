"""The Quickstart (docs/quickstart.md), followed step by step in a fresh repository: real git, the real
pre-commit framework (hooks from a snapshot of this checkout) and toolreplay as pip installs it.

The Quickstart is the ``shell-session`` block between ``<!-- quickstart:start -->`` and
``<!-- quickstart:end -->``: ``$ `` starts a command, ``> `` continues it (a heredoc), and
the other lines are output that must appear, in order (``...`` stands for lines left out).
A command must exit 0 unless it ends with ``# exits 1``.

Every command runs as printed; only the names that point at GitHub and PyPI are mapped:

- ``https://github.com/OWNER/toolreplay`` is a release of this checkout: a clone of the hook
  snapshot plus ``action.yml``, tagged ``v1.0.0`` and ``v1`` as the release workflow tags it.
  ``rev: v1.0.0`` stays as printed, so the real pre-commit framework resolves the tag. The clone
  lives in a folder named after its commit: pre-commit caches a hook environment per (repository,
  rev), and a fixed path at a moving tag would hand a new snapshot a stale environment.
- ``pip install toolreplay`` runs as printed with the ``pip`` of a fresh venv, first on ``PATH``
  (so every later ``toolreplay`` is the one it installed). PyPI is this snapshot's wheel: for
  that step alone ``PIP_NO_INDEX`` and ``PIP_FIND_LINKS`` point pip at a folder holding it. The
  dependencies are this environment's, lent to the venv by a ``.pth`` file (offline and quick, as
  tests/acceptance/test_install.py does it), toolreplay itself left out so pip must install it.
- ``uses: OWNER/toolreplay@v1`` must name this repository's Action at the tag ``v1`` of that
  release, which holds this checkout's ``action.yml`` (tests/acceptance/test_action_act.py runs it).
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import venv
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from tests.acceptance.test_pre_commit_framework import HookRepo, hook_repo  # noqa: F401 (fixture)
from tests.conftest import ROOT
from tests.gitrepo import Repo, git_env
from toolreplay import __version__

#: where the docs say the repository lives, and the refs they pin
UPSTREAM = "https://github.com/OWNER/toolreplay"
RELEASE = f"v{__version__}"
MAJOR = f"v{__version__.split('.')[0]}"


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
    """The Quickstart installs the release, seals, configures, adds hooks at the release tag and the
    Action at its major tag, and gates a change."""
    commands = [s.command for s in quickstart()]
    assert commands[0] == "pip install toolreplay"
    joined = "\n".join(commands)
    for needed in (
        "toolreplay seal",
        "toolreplay check",
        f"repo: {UPSTREAM}\n",
        f"rev: {RELEASE}\n",
        "pre-commit install",
        f"uses: OWNER/toolreplay@{MAJOR}\n",
        "toolreplay note",
        "toolreplay accept",
        "toolreplay check --base main",
    ):
        assert needed in joined
    assert "COMMIT" not in joined
    assert (ROOT / "action.yml").is_file()  # so `uses: OWNER/toolreplay@v1` names this repository's Action


@dataclass(frozen=True)
class Release:
    """This checkout as released: a git repository tagged ``RELEASE`` and ``MAJOR``."""

    path: Path
    home: Path  # PRE_COMMIT_HOME


@pytest.fixture(scope="session")
def release(hook_repo: HookRepo) -> Release:  # noqa: F811
    """The hook snapshot with this checkout's action.yml added, tagged as the release workflow tags it."""
    building = hook_repo.home.parent / "release-building"
    shutil.rmtree(building, ignore_errors=True)
    subprocess.run(
        ["git", "clone", "-q", str(hook_repo.path), str(building)], env=git_env(), check=True, timeout=120
    )
    repo = Repo(building)
    shutil.copy2(ROOT / "action.yml", building / "action.yml")
    repo.commit_all(f"Release {RELEASE}")  # fixed identity and dates: the same files, the same commit
    head = repo.head()
    for tag in (RELEASE, MAJOR):
        repo.git("tag", tag, head)
    path = hook_repo.home.parent / f"release-{head[:16]}"
    if path.exists():
        shutil.rmtree(building)
    else:
        building.rename(path)
    for stale in hook_repo.home.parent.glob("release-*"):
        if stale != path:
            shutil.rmtree(stale)
    return Release(path=path, home=hook_repo.home)


@pytest.fixture(scope="session")
def wheels(release: Release, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the wheel of this release, as PyPI would serve it."""
    folder = tmp_path_factory.mktemp("wheels")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "--quiet"]
        + ["--wheel-dir", str(folder), str(release.path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    assert [w.name for w in folder.iterdir()] == [f"toolreplay-{__version__}-py3-none-any.whl"]
    return folder


def fresh_venv(path: Path) -> Path:
    """A new venv, with pip, that borrows this environment's installed packages but toolreplay (a
    folder of links to them, named in a ``.pth`` file); its bin folder."""
    venv.EnvBuilder(with_pip=True).create(path)
    python = path / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.strip()
    borrowed = path / "borrowed"
    borrowed.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if "toolreplay" not in entry.name:  # the package itself, its metadata, its editable hook
            (borrowed / entry.name).symlink_to(entry)
    (Path(purelib) / "borrowed.pth").write_text(f"{borrowed}\n")
    return path / "bin"


@pytest.mark.slow
def test_quickstart_runs_in_a_fresh_repository(tmp_path: Path, release: Release, wheels: Path) -> None:
    """Each Quickstart command, run in order in a new repository, exits and prints as shown: pip
    installs the release, pre-commit resolves the release tag, the workflow names the major tag."""
    project = tmp_path / "support-agent"
    project.mkdir()
    user_bin = fresh_venv(tmp_path / "venv")
    bin_dir = str(Path(sys.executable).parent)  # pre-commit of this environment
    env = git_env(
        {
            "PRE_COMMIT_HOME": str(release.home),
            "PATH": os.pathsep.join([str(user_bin), bin_dir, os.environ["PATH"]]),
        }
    )
    for fixed in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        env.pop(fixed)  # commits made today, as a new user's are: the baseline is fresh
    from_pypi = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels)}
    for step in quickstart():
        command = step.command.replace(UPSTREAM, str(release.path))
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=project,
            env={**env, **from_pypi} if command.startswith("pip install ") else env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        shown = done.stdout + done.stderr
        assert (done.returncode != 0) == step.fails, f"$ {step.command}\n{shown}"
        if step.fails:
            assert done.returncode == 1 or "Failed" in shown, shown
        assert _appears_in_order(step.output, shown), f"$ {step.command}\n{shown}"
    # what the user ran was the toolreplay pip installed from the release, not this checkout's
    installed = subprocess.run(
        [user_bin / "python", "-c", "import toolreplay; print(toolreplay.__file__, toolreplay.__version__)"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.split()
    assert Path(installed[0]).is_relative_to(tmp_path / "venv") and installed[1] == __version__
    assert (user_bin / "toolreplay").is_file()
    # the hooks came from the release tag: pre-commit's store holds the release cloned at v1.0.0
    with closing(sqlite3.connect(release.home / "db.db")) as db:
        stored = db.execute("SELECT path FROM repos WHERE repo = ? AND ref = ?", (str(release.path), RELEASE))
        (clone,) = stored.fetchone()
    tags = [
        subprocess.run(
            ["git", "rev-parse", f"{where}^{{commit}}"],
            cwd=place,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for where, place in (("HEAD", clone), (RELEASE, release.path))
    ]
    assert tags[0] == tags[1]
    # the Action: OWNER/toolreplay@v1 is this repository's action.yml at the tag v1
    workflow = yaml.safe_load((project / ".github" / "workflows" / "toolreplay.yml").read_text())
    uses = [s["uses"] for s in workflow["jobs"]["toolreplay"]["steps"]]
    owner_repo, ref = uses[-1].split("@")
    assert f"https://github.com/{owner_repo}" == UPSTREAM and ref == MAJOR
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
