"""The few facts only git knows: a baseline's commit date and committed bytes, the checked-out commit."""

from __future__ import annotations

import os
import subprocess

from toolreplay.errors import InputError


def _git(args: list[str], cwd: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except FileNotFoundError as err:
        raise InputError("git is not installed, and the baseline's history lives in git") from err


def _directory(path: str) -> str:
    return os.path.dirname(os.path.abspath(path)) or "."


def repo_root(path: str) -> str:
    """The top of the git work tree holding ``path``."""
    directory = _directory(path)
    if not os.path.isdir(directory):
        raise InputError("its folder does not exist", path=path)
    done = _git(["rev-parse", "--show-toplevel"], directory)
    if done.returncode != 0:
        raise InputError("is not inside a git work tree", path=path)
    return done.stdout.decode("utf-8", "surrogateescape").rstrip("\n")


def repo_path(path: str) -> str:
    """``path`` relative to the top of its work tree, with ``/`` separators (how git names it)."""
    root = os.path.realpath(repo_root(path))
    here = os.path.join(os.path.realpath(_directory(path)), os.path.basename(path))
    relative = os.path.relpath(here, root)
    if relative.startswith(".."):
        raise InputError("is outside its git work tree", path=path)
    return relative.replace(os.sep, "/")


def last_commit_time(path: str) -> int | None:
    """Unix time of the last commit that touched ``path`` (its committer date); None when no
    commit has it yet (a new baseline, or a repository with no commits)."""
    repo_root(path)  # outside a work tree is the user's error, said as such
    done = _git(["log", "-1", "--format=%ct", "--", os.path.basename(path)], _directory(path))
    if done.returncode != 0:
        return None  # a work tree without commits: git log has nothing to show
    text = done.stdout.decode("ascii", "replace").strip()
    return int(text) if text else None


def commit_time(path: str) -> int:
    """:func:`last_commit_time`, refusing a path no commit has."""
    found = last_commit_time(path)
    if found is None:
        raise InputError(
            "is not committed yet, so its age is unknown (commit it, or drop --max-age-days)", path=path
        )
    return found


def committed_blob(path: str, rev: str = "HEAD") -> bytes | None:
    """The bytes of ``path`` as committed in ``rev``; None when it is not there (a new file)."""
    root = repo_root(path)
    name = repo_path(path)
    if _git(["rev-parse", "--verify", "--quiet", rev + "^{commit}"], root).returncode != 0:
        return None  # no commits yet
    done = _git(["cat-file", "blob", f"{rev}:{name}"], root)
    if done.returncode != 0:
        return None
    return done.stdout


def head_commit(folder: str) -> str | None:
    """The commit checked out in the work tree holding ``folder``; None outside a work tree,
    before the first commit, or without git (a shard report then says it judged no commit)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", "HEAD^{commit}"],
            cwd=folder,
            capture_output=True,
            check=False,
        )
    except OSError:  # no git, or the folder is gone: no commit to name
        return None
    text = done.stdout.decode("ascii", "replace").strip()
    return text if done.returncode == 0 and text else None
