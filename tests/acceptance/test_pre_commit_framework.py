"""The hooks under the real pre-commit framework and a real ``git commit`` (docs/spec.md §6).

Each test makes a git repository whose ``.pre-commit-config.yaml`` points at a snapshot
of this checkout (committed into a local repository, as ``pre-commit try-repo`` does, so
no network host but the package index is involved), installs the git hook with
``pre-commit install``, and commits. pre-commit builds the hook environment with
``pip install .`` once per snapshot; it lives under ``PRE_COMMIT_HOME`` in pytest's cache
(or ``$TOOLREPLAY_PRE_COMMIT_CACHE``), so reruns with the same code reuse it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.gitrepo import Repo, git_env, note, sealed
from toolreplay.transcript import GENESIS

pytestmark = pytest.mark.slow


BASE = "baselines/checkout.sealed.jsonl"
V3, V4, V5 = (sealed(n)[1] for n in (3, 4, 5))
#: what `pip install .` of the hook repository needs
SNAPSHOT = ("pyproject.toml", "README.md", "LICENSE", ".pre-commit-hooks.yaml", "src/", "schemas/")
REFUSED = "toolreplay: commit refused: a sealed baseline changes without a drift note for that exact change"


@dataclass(frozen=True)
class HookRepo:
    path: Path
    rev: str
    home: Path


def _snapshot(dest: Path) -> str:
    """Commit the checkout's current package files (uncommitted edits included) into ``dest``."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        env=git_env(),
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    if dest.exists():
        shutil.rmtree(dest)
    for raw in listed:
        rel = raw.decode()
        source = ROOT / rel
        if not rel.startswith(SNAPSHOT) or not (source.exists() or source.is_symlink()):
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), target)
        else:
            shutil.copy2(source, target)
    repo = Repo.create(dest)
    repo.commit_all("snapshot")  # fixed identity and dates: the same files give the same rev
    return repo.head()


@pytest.fixture(scope="session")
def hook_repo(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> HookRepo:
    probe = subprocess.run(
        ["git", "rev-parse", "--is-inside-work-tree"], cwd=ROOT, env=git_env(), capture_output=True
    )
    if probe.returncode != 0:
        pytest.skip("needs a git checkout of toolreplay to snapshot")
    configured = os.environ.get("TOOLREPLAY_PRE_COMMIT_CACHE")
    # each xdist worker keeps a folder of its own: the snapshot is deleted and rebuilt here, and a
    # common folder would be pulled from under another worker's pre-commit run
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    if configured:
        base = Path(configured) / worker
    elif getattr(request.config, "cache", None) is not None:  # None too under -p no:cacheprovider
        base = request.config.cache.mkdir(f"pre-commit-{worker}")
    else:
        base = tmp_path_factory.mktemp("pre-commit")
    rev = _snapshot(base / "hook-repo")
    hook = HookRepo(path=base / "hook-repo", rev=rev, home=base / "home")
    # build the hook environment once, up front, so a failure to build says so plainly
    scratch = Repo.create(tmp_path_factory.mktemp("build"))
    _configure(scratch, hook)
    built = _pre_commit(scratch, hook, "install-hooks")
    assert built.returncode == 0, built.stdout + built.stderr
    # pip leaves no byte code where PYTHONDONTWRITEBYTECODE is set, and then every hook run would
    # compile toolreplay and its dependencies again: compile the hook environment once, as pip does
    for env in hook.home.glob("*/py_env-*"):
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(env)], capture_output=True, check=False)
    return hook


def _configure(repo: Repo, hook: HookRepo) -> None:
    repo.write(
        ".pre-commit-config.yaml",
        "default_install_hook_types: [pre-commit, post-rewrite]\n"
        f"repos:\n  - repo: {hook.path}\n    rev: {hook.rev}\n    hooks:\n"
        "      - id: toolreplay-validate\n      - id: toolreplay-verify\n      - id: toolreplay-drift-note\n",
    )


def _pre_commit(repo: Repo, hook: HookRepo, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=repo.path,
        env=git_env({"PRE_COMMIT_HOME": str(hook.home)}),
        capture_output=True,
        text=True,
        timeout=600,
    )


@dataclass
class Project:
    """A repository that uses the hooks, with a committed baseline of three calls."""

    repo: Repo
    hook: HookRepo

    def commit(self, *args: str) -> tuple[int, str]:
        """``git commit -m change ARGS`` with the installed hook; (exit code, everything printed)."""
        return self.git("commit", "-m", "change", *args)

    def git(self, *args: str) -> tuple[int, str]:
        """``git ARGS`` with the installed hooks; (exit code, everything printed)."""
        proc = subprocess.run(
            ["git", *args],
            cwd=self.repo.path,
            env=git_env({"PRE_COMMIT_HOME": str(self.hook.home)}),
            capture_output=True,
            text=True,
            timeout=600,
        )
        return proc.returncode, proc.stdout + proc.stderr

    def committed(self, path: str) -> str:
        return self.repo.git("show", f"HEAD:{path}")


@pytest.fixture
def project(tmp_path: Path, hook_repo: HookRepo) -> Project:
    repo = Repo.create(tmp_path / "project")
    _configure(repo, hook_repo)
    repo.write_baseline(BASE, 3)
    repo.commit_all("baseline of three calls")
    installed = _pre_commit(repo, hook_repo, "install")
    assert installed.returncode == 0, installed.stderr
    return Project(repo=repo, hook=hook_repo)


def assert_refused(project: Project, code: int, out: str, before: str) -> None:
    assert code != 0, out
    assert "toolreplay drift-note guard" in out and "Failed" in out
    assert REFUSED in out
    assert project.repo.head() == before


def test_modified_baseline_without_note_is_refused(project: Project) -> None:
    """Committing a changed baseline without a note fails, naming the baseline, both heads, the command."""
    before = project.repo.head()
    project.repo.write_baseline(BASE, 4)
    project.repo.git("add", "-A")
    code, out = project.commit()
    assert_refused(project, code, out, before)
    assert f"baseline '{BASE}' (modified)\n  from: {V3}\n  to:   {V4}\n" in out
    assert f"write the note: toolreplay note {BASE} -o drift-notes/checkout.md\n" in out


def test_modified_baseline_with_note_is_committed(project: Project) -> None:
    """The same change with a matching note staged is committed, note and all."""
    project.repo.write_baseline(BASE, 4)
    project.repo.write("drift-notes/v4.md", note(BASE, V3, V4))
    project.repo.git("add", "-A")
    code, out = project.commit()
    assert code == 0, out
    assert project.committed(BASE) == sealed(4)[0]
    assert "The search index was rebuilt." in project.committed("drift-notes/v4.md")


def test_note_for_an_older_head_is_refused(project: Project) -> None:
    """A note reused from the previous change (its 'to' is an older head) is refused as stale."""
    project.repo.write_baseline(BASE, 4)
    project.repo.write("drift-notes/v4.md", note(BASE, V3, V4))
    project.repo.git("add", "-A")
    assert project.commit()[0] == 0
    before = project.repo.head()
    project.repo.write_baseline(BASE, 5)
    project.repo.write("drift-notes/v5.md", note(BASE, V3, V4, prose="Copied from the last note."))
    project.repo.git("add", "-A")
    code, out = project.commit()
    assert_refused(project, code, out, before)
    assert f"note 'drift-notes/v5.md' is stale: its to {V4} is an older head of this baseline" in out


def test_deleting_a_baseline(project: Project) -> None:
    """Deleting a baseline is refused without a note and committed with a note that has no 'to'."""
    before = project.repo.head()
    project.repo.git("rm", "-q", BASE)
    code, out = project.commit()
    assert_refused(project, code, out, before)
    assert f"baseline '{BASE}' (deleted)\n  from: {V3}\n  to:   none (deleted)\n" in out
    project.repo.write("drift-notes/retired.md", note(BASE, V3, None, prose="The checkout flow is retired."))
    project.repo.git("add", "-A")
    code, out = project.commit()
    assert code == 0, out


def test_renaming_a_baseline_out_of_the_pattern(project: Project) -> None:
    """Renaming a baseline to a name outside the pattern counts as deleting it."""
    before = project.repo.head()
    project.repo.git("mv", BASE, "baselines/checkout.sealed.jsonl.bak")
    code, out = project.commit()
    assert_refused(project, code, out, before)
    assert f"baseline '{BASE}' (renamed to 'baselines/checkout.sealed.jsonl.bak')" in out
    project.repo.write("drift-notes/unsealed.md", note(BASE, V3, None, prose="Kept as a plain transcript."))
    project.repo.git("add", "-A")
    code, out = project.commit()
    assert code == 0, out


def test_commit_with_paths_judges_the_temporary_index(project: Project) -> None:
    """git commit PATH commits a temporary index: the guard judges it, not the staged one."""
    before = project.repo.head()
    project.repo.write_baseline(BASE, 4)
    project.repo.write("drift-notes/v4.md", note(BASE, V3, V4))
    project.repo.git("add", "drift-notes/v4.md")  # the note is staged, but not part of this commit
    code, out = project.commit(BASE)
    assert_refused(project, code, out, before)
    assert f"baseline '{BASE}' (modified)" in out
    project.repo.write("README.md", "about\n")
    project.repo.git("restore", "--staged", "drift-notes/v4.md")
    project.repo.git("add", BASE, "README.md")  # the baseline staged without its note...
    code, out = project.commit("--", "README.md")  # ...but this commit leaves it out
    assert code == 0, out
    assert project.repo.git("show", "--name-only", "--format=", "HEAD").split() == ["README.md"]
    project.repo.git("add", "drift-notes/v4.md")
    code, out = project.commit("--", BASE, "drift-notes/v4.md")
    assert code == 0, out
    assert project.committed(BASE) == sealed(4)[0]


def test_partially_staged_baseline(project: Project) -> None:
    """With the working tree ahead of the index, the staged version and its note decide."""
    project.repo.write_baseline(BASE, 4)
    project.repo.write("drift-notes/v4.md", note(BASE, V3, V4))
    project.repo.git("add", "-A")
    project.repo.write_baseline(BASE, 5)  # not staged
    code, out = project.commit()
    assert code == 0, out
    assert project.committed(BASE) == sealed(4)[0]
    assert (project.repo.path / BASE).read_text() == sealed(5)[0]  # pre-commit put the unstaged edit back
    # a note for the working tree's v5 while the baseline itself is not staged: nothing to accept
    project.repo.write("drift-notes/v5.md", note(BASE, V4, V5))
    project.repo.git("add", "drift-notes/v5.md")
    code, out = project.commit()
    assert code == 0, out
    # the index gets v3 (a change back) with a note for v5, which only the working tree holds
    before = project.repo.head()
    project.repo.write("drift-notes/v5-again.md", note(BASE, V4, V5))
    project.repo.write_baseline(BASE, 3)
    project.repo.git("add", "-A")
    project.repo.write_baseline(BASE, 5)
    code, out = project.commit()
    assert_refused(project, code, out, before)
    assert f"has to {V5}, but the staged head is {V3}" in out


def test_path_with_spaces(project: Project) -> None:
    """A baseline path with spaces is caught, named, quoted in the command, and accepted by its note."""
    path = "baselines/my run.sealed.jsonl"
    before = project.repo.head()
    head = project.repo.write_baseline(path, 2)
    project.repo.git("add", "-A")
    code, out = project.commit()
    assert_refused(project, code, out, before)
    assert f"baseline '{path}' (added)\n  from: {GENESIS}  (genesis: new baseline)\n  to:   {head}\n" in out
    assert (
        "write the note: toolreplay note 'baselines/my run.sealed.jsonl' -o 'drift-notes/my run.md'\n" in out
    )
    project.repo.write("drift-notes/my run.md", note(path, GENESIS, head))
    project.repo.git("add", "-A")
    code, out = project.commit()
    assert code == 0, out


def test_verify_and_validate_hooks(project: Project) -> None:
    """A broken chain fails the verify hook; an invalid transcript and an invalid note fail validate."""
    before = project.repo.head()
    project.repo.write(BASE, sealed(4)[0].replace('"q2"', '"qX"'))
    project.repo.write("runs/today.jsonl", '{"index": 1, "tool": "t", "args": {}, "response": {}}\n')
    project.repo.write("drift-notes/v4.md", note(BASE, V3, V4, prose=""))
    project.repo.git("add", "-A")
    code, out = project.commit()
    assert code != 0 and project.repo.head() == before
    assert f"{BASE}:3: chain broken at index 2: digest does not match the link's content" in out
    assert "runs/today.jsonl:1: index 1 is out of order: expected 0 (at /index)" in out
    assert "drift-notes/v4.md:8: the note has no explanation" in out
    for name in ("toolreplay validate", "toolreplay verify", "toolreplay drift-note guard"):
        line = next(line for line in out.splitlines() if line.startswith(name))
        assert line.endswith("Failed"), line


AMEND_REFUSED = (
    "toolreplay: amend refused: the amended commit changes a sealed baseline without a drift note"
    " for that exact change"
)


def _commit_v4_with_note(project: Project) -> str:
    project.repo.write_baseline(BASE, 4)
    project.repo.write("drift-notes/v4.md", note(BASE, V3, V4))
    project.repo.git("add", "-A")
    code, out = project.commit()
    assert code == 0, out
    return project.repo.head()


@pytest.mark.parametrize("how", [("--amend", "-m", "no note"), ("--amend", "--no-edit")])
def test_amend_that_drops_the_note_is_undone(project: Project, how: tuple[str, ...]) -> None:
    """git commit --amend removing the note of a baseline change is undone: HEAD back, the change staged."""
    noted = _commit_v4_with_note(project)
    project.repo.git("rm", "-q", "drift-notes/v4.md")
    code, out = project.git("commit", *how)
    assert code == 0  # git ignores a post-rewrite hook's status: the guard undoes the amend itself
    assert AMEND_REFUSED in out, out
    assert f"baseline '{BASE}' (modified)\n  from: {V3}\n  to:   {V4}\n" in out
    assert f"The amend was undone: HEAD is back at {noted[:12]}" in out
    assert project.repo.head() == noted
    assert "drift-notes/v4.md" in project.repo.git("ls-tree", "-r", "--name-only", "HEAD")
    # the user's amendment is still staged: the note's removal
    assert project.repo.git("diff", "--cached", "--name-status").split() == ["D", "drift-notes/v4.md"]


def test_amend_that_changes_the_baseline_again_needs_a_note_for_it(project: Project) -> None:
    """Amending a baseline commit with a newer baseline is undone without a note and kept with one."""
    noted = _commit_v4_with_note(project)
    project.repo.write_baseline(BASE, 5)
    project.repo.write("drift-notes/v4.md", note(BASE, V3, V4, prose="Rewritten, but still v3 to v4."))
    project.repo.git("add", "-A")
    # the pre-commit stage compares with the commit being amended; the post-rewrite stage with its parent
    code, out = project.git("commit", "--amend", "--no-edit")
    assert REFUSED in out and project.repo.head() == noted
    project.repo.write("drift-notes/v5.md", note(BASE, V4, V5))
    project.repo.git("add", "-A")
    code, out = project.git("commit", "--amend", "--no-edit")
    assert code == 0 and AMEND_REFUSED not in out and REFUSED not in out, out
    amended = project.repo.head()
    assert (
        amended != noted
        and project.repo.git("rev-parse", "HEAD^").strip()
        == project.repo.git("rev-parse", f"{noted}^").strip()
    )
    assert project.committed(BASE) == sealed(5)[0]


def test_amend_of_an_unrelated_commit_is_kept(project: Project) -> None:
    """An amend that touches no baseline is left alone."""
    project.repo.write("README.md", "one\n")
    project.repo.git("add", "-A")
    assert project.commit()[0] == 0
    project.repo.write("README.md", "two\n")
    project.repo.git("add", "-A")
    code, out = project.git("commit", "--amend", "--no-edit")
    assert code == 0, out
    assert project.committed("README.md") == "two\n"


def test_untracked_or_outside_config_cannot_switch_the_guard_off(project: Project, tmp_path: Path) -> None:
    """An untracked toolreplay.toml, or one above the repository, does not change what is a baseline."""
    before = project.repo.head()
    project.repo.write("toolreplay.toml", 'baselines = ["nothing/*"]\n')
    (tmp_path / "toolreplay.toml").write_text('baselines = ["nothing/*"]\ndrift_notes = "x"\n')
    project.repo.write_baseline(BASE, 4)
    project.repo.git("add", BASE)
    code, out = project.commit()
    assert_refused(project, code, out, before)
    assert f"baseline '{BASE}' (modified)" in out
    project.repo.write("pyproject.toml", '[tool.toolreplay]\nbaselines = ["nothing/*"]\n')
    code, out = project.commit()
    assert_refused(project, code, out, before)


def test_staged_config_decides(project: Project) -> None:
    """The configuration staged at the repository root names the baselines and the notes folder."""
    project.repo.write("toolreplay.toml", 'baselines = ["baselines/*.sealed.jsonl"]\ndrift_notes = "why"\n')
    project.repo.git("add", "toolreplay.toml")
    assert project.commit()[0] == 0
    before = project.repo.head()
    project.repo.write_baseline(BASE, 4)
    project.repo.write("drift-notes/v4.md", note(BASE, V3, V4))
    project.repo.git("add", "-A")
    code, out = project.commit()
    assert_refused(project, code, out, before)
    assert "no drift note staged under why/ names this baseline" in out
    (project.repo.path / "drift-notes" / "v4.md").rename(project.repo.path / "why.md")
    project.repo.write("why/v4.md", (project.repo.path / "why.md").read_text())
    (project.repo.path / "why.md").unlink()
    project.repo.git("add", "-A")
    code, out = project.commit()
    assert code == 0, out


def test_sealed_file_outside_the_patterns_is_a_warning(project: Project) -> None:
    """A sealed transcript no baseline pattern covers passes, with a warning naming it and the patterns."""
    project.repo.write("toolreplay.toml", 'baselines = ["baselines/*.sealed.jsonl"]\n')
    project.repo.write_baseline("runs/today.sealed.jsonl", 2)
    project.repo.git("add", "-A")
    code, out = project.commit()
    assert code == 0, out
    line = next(line for line in out.splitlines() if line.startswith("toolreplay drift-note guard"))
    assert line.endswith("Passed")
    assert (
        "warning: 'runs/today.sealed.jsonl' is a sealed transcript, but no baseline pattern"
        " ('baselines/*.sealed.jsonl') covers it, so the guard does not judge it;"
        " if it is a baseline, add a pattern for it\n"
    ) in out
