"""Real temporary git repositories with sealed baselines and drift notes, for the hook tests."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from toolreplay.chain import seal
from toolreplay.transcript import GENESIS, make_record

#: git variables that would point a command at another repository or index
GIT_LEAKS = ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_OBJECT_DIRECTORY", "GIT_PREFIX")


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for git in a test repo: no outer repository, no user config, fixed identity."""
    env = {k: v for k, v in os.environ.items() if k not in GIT_LEAKS}
    env.update(
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="Test",
        GIT_AUTHOR_EMAIL="test@example.invalid",
        GIT_COMMITTER_NAME="Test",
        GIT_COMMITTER_EMAIL="test@example.invalid",
        GIT_AUTHOR_DATE="2024-01-01T00:00:00Z",
        GIT_COMMITTER_DATE="2024-01-01T00:00:00Z",
    )
    env.update(extra or {})
    return env


def git(folder: Path, *args: str, date: str | None = None) -> str:
    """Run git in ``folder`` with the test identity, the commit dated ``date`` (or now); its stdout."""
    env = git_env()
    for key in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        if date:
            env[key] = date
        else:
            env.pop(key)
    done = subprocess.run(["git", *args], cwd=folder, env=env, capture_output=True, text=True, check=True)
    return done.stdout


def sealed(calls: int) -> tuple[str, str]:
    """(sealed file text, head) of a baseline with ``calls`` calls; each is a prefix of the next."""
    records = [
        make_record(index=i, tool="search", args={"query": f"q{i}"}, response={"hits": [i]})
        for i in range(calls)
    ]
    lines = list(seal(records))
    head = lines[-1][0] if lines else GENESIS
    return "".join(line + "\n" for _, line in lines), head


def note(
    baseline: str, from_head: str, to_head: str | None, prose: str = "The search index was rebuilt."
) -> str:
    """A drift note's text; digests are quoted because YAML reads 64 zeros as the number 0."""
    lines = ["---", f'baseline: "{baseline}"', f'from: "{from_head}"']
    if to_head is not None:
        lines.append(f'to: "{to_head}"')
    lines += ["kinds: [behavior]", "tools: [search]", "---", prose, ""]
    return "\n".join(lines)


@dataclass
class Repo:
    """A git work tree under a test's temporary folder."""

    path: Path

    @classmethod
    def create(cls, path: Path) -> Repo:
        path.mkdir(parents=True, exist_ok=True)
        repo = cls(path)
        repo.git("init", "-q", "-b", "main")
        return repo

    @classmethod
    def create_bare(cls, path: Path) -> Repo:
        """A bare repository (a remote to fetch from and push to)."""
        path.mkdir(parents=True, exist_ok=True)
        repo = cls(path)
        repo.git("init", "-q", "--bare", "-b", "main")
        return repo

    def git(self, *args: str, env: dict[str, str] | None = None, check: bool = True) -> str:
        proc = subprocess.run(
            ["git", *args], cwd=self.path, env=git_env(env), capture_output=True, text=True, check=False
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
        return proc.stdout

    def write(self, rel: str, text: str) -> None:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    def write_baseline(self, rel: str, calls: int) -> str:
        """Write a baseline of ``calls`` calls and return its head."""
        text, head = sealed(calls)
        self.write(rel, text)
        return head

    def symlink(self, rel: str, target: str) -> None:
        """A symlink at ``rel`` naming ``target`` (git stores ``target`` as its blob)."""
        link = self.path / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target)

    def commit_all(self, message: str = "commit") -> None:
        """Stage everything and commit without running hooks (setting the scene)."""
        self.git("add", "-A")
        self.git("commit", "-q", "--no-verify", "-m", message)

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").strip()
