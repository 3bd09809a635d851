"""The few facts only git knows: a baseline's commit date and committed bytes, the checked-out commit."""

from __future__ import annotations

import os
import subprocess

from toolreplay.errors import InputError
from toolreplay.escape import quote


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
    """The bytes of ``path`` as committed in ``rev``; None when it is not there (a new file), or
    not as a regular file: a symlink's blob is the name it points to, and the drift-note guard
    counts it as no baseline, so a note's ``from`` is the genesis value as the guard's is."""
    root = repo_root(path)
    name = repo_path(path)
    if _git(["rev-parse", "--verify", "--quiet", rev + "^{commit}"], root).returncode != 0:
        return None  # no commits yet
    oid = _regular_blob(root, rev, name)
    if oid is None:
        return None
    done = _git(["cat-file", "blob", oid], root)
    if done.returncode != 0:
        return None
    return done.stdout


def _regular_blob(root: str, rev: str, name: str) -> str | None:
    """The blob of regular file ``name`` (from the root) in ``rev``; None when no such file is there."""
    listed = _git(["ls-tree", "-z", "--full-tree", rev, "--", name], root)
    meta, _, listed_name = listed.stdout.partition(b"\t")
    fields = meta.decode("ascii", "replace").split(" ")
    if listed.returncode != 0 or listed_name.rstrip(b"\0") != os.fsencode(name) or len(fields) != 3:
        return None
    return fields[2] if fields[0] in REGULAR_MODES else None


def merge_base(path: str, rev: str) -> str:
    """The commit a pull request against ``rev`` starts from, as ``check --base`` judges it: the
    merge base of ``rev`` and HEAD in the work tree holding ``path``."""
    root = repo_root(path)
    if rev.startswith("-") or _git(["rev-parse", "--verify", "--quiet", rev + "^{commit}"], root).returncode:
        raise InputError(f"--base {quote(rev)}: no such commit in this repository")
    done = _git(["merge-base", rev, "HEAD"], root)
    if done.returncode != 0:
        raise InputError(f"--base {quote(rev)}: it shares no history with HEAD")
    return done.stdout.decode("ascii", "replace").strip()


#: the modes of a regular file in a git tree: what a baseline is
REGULAR_MODES = frozenset({"100644", "100755"})


def regular_baseline(path: str) -> None:
    """Refuse a baseline given as a symlink, under a symlinked folder of its work tree, or in
    another repository inside the current one (a submodule): git stores the name a symlink points
    to, and a submodule's commit, not the file, so the drift-note guard never judges that file."""
    if os.path.islink(path):
        where = "is a symlink"
    elif (folder := _symlinked_folder(path)) is not None:
        where = f"lies under a symlink ({quote(folder)})"
    elif (inner := _inner_repository(path)) is not None:
        raise InputError(
            f"lies in another git repository ({quote(inner)}, a submodule, has its own .git): a baseline"
            " must be a regular file of this repository (git stores a submodule as its commit, so the"
            " drift-note guard cannot judge the file in it)",
            path=path,
        )
    else:
        return
    raise InputError(
        f"{where}: a baseline must be a regular file (git stores a symlink as the name it"
        " points to, so the drift-note guard cannot judge the file behind it)",
        path=path,
    )


def _inner_repository(path: str) -> str | None:
    """The submodule ``path`` lies in (as ``path`` is given, relative or not), unless the command
    runs inside that submodule (then the file is its own repository's); None when it lies in none.

    The file's repository is the nearest folder above it with a ``.git``; a submodule's is a
    file, as a linked work tree's is, and git tells the two apart (a submodule has a superproject).
    """
    here = os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(os.path.join(here, ".git")):
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent
    if not os.path.isfile(os.path.join(here, ".git")):
        return None  # a repository of its own (a nested one is not this command's to judge)
    real, cwd = os.path.realpath(here), os.path.realpath(os.getcwd())
    if cwd == real or cwd.startswith(real + os.sep):
        return None
    done = _git(["rev-parse", "--show-superproject-working-tree"], here)
    if done.returncode != 0 or not done.stdout.strip():
        return None  # a linked work tree (git worktree add), not a submodule
    return os.path.relpath(here) if not os.path.isabs(path) else here


def _symlinked_folder(path: str) -> str | None:
    """The outermost symlinked folder between ``path`` and the root of the work tree holding it
    (as given, relative or not); None when there is none, or no work tree (a folder with ``.git``)
    holds it: a symlink above the work tree (``/tmp`` on macOS) is not the repository's."""
    found = None
    here = os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(os.path.join(here, ".git")) or os.path.islink(here):
        if os.path.islink(here):
            found = here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent
    if found is None:
        return None
    return os.path.relpath(found) if not os.path.isabs(path) else found


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
