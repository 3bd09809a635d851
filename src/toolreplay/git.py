"""The one git adapter: :class:`Git` runs git (with the inherited environment, ``GIT_INDEX_FILE``
included) and :class:`GitError` is what it raises; below it, the few facts only git knows that the
commands ask for (a baseline's commit date and committed bytes, the checked-out commit)."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field

from toolreplay.errors import InputError, ToolreplayError
from toolreplay.escape import quote

#: a full commit id: 40 hex digits (SHA-1) or 64 (SHA-256), as git and GitHub spell it
_COMMIT_ID = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")


def is_commit_id(text: str) -> bool:
    """Whether ``text`` is a full commit id (not a short one, a branch or anything else)."""
    return bool(_COMMIT_ID.match(text))


#: the modes of a regular file in a git tree: what a baseline is
REGULAR_MODES = frozenset({"100644", "100755"})
#: the mode of a submodule in a git tree
GITLINK = "160000"
_NULL_OID = frozenset("0")


class GitError(ToolreplayError):
    """git could not tell us what we asked (not a repository, a bad revision)."""


def check_revision(rev: str) -> str:
    """``rev`` when git can take it as one revision (not an option, not a range); else an error."""
    if not rev or rev.startswith("-") or "..." in rev:
        raise InputError(f"not a revision: {quote(rev)}")
    return rev


@dataclass(frozen=True, slots=True, kw_only=True)
class Git:
    """Runs git in ``cwd`` with the inherited environment (``GIT_INDEX_FILE`` included)."""

    cwd: str | None = None
    #: the work tree's root once git has named it (git is asked once per ``Git``)
    _root: list[str] = field(default_factory=list, repr=False, compare=False)

    def _process(self, args: tuple[str, ...]) -> subprocess.CompletedProcess[bytes]:
        try:
            return subprocess.run(["git", *args], cwd=self.cwd, capture_output=True, check=False)
        except FileNotFoundError as err:
            raise GitError("git is not installed or not on PATH") from err

    def run(self, *args: str) -> bytes:
        """What git prints for ``args``; an error naming git's first complaint when it fails."""
        proc = self._process(args)
        if proc.returncode != 0:
            detail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            reason = detail[0] if detail else f"exit status {proc.returncode}"
            raise GitError(f"git {args[0]} failed: {reason}")
        return proc.stdout

    def ask(self, *args: str) -> bytes | None:
        """What git prints for ``args``; None when it says no (a non-zero exit)."""
        proc = self._process(args)
        return proc.stdout if proc.returncode == 0 else None

    def blob(self, oid: str) -> bytes:
        return self.run("cat-file", "blob", oid)

    def revision(self, rev: str) -> str | None:
        """The commit ``rev`` names, or None when it names none (no commits yet, a root's parent)."""
        try:
            out = self.run("rev-parse", "--verify", "--quiet", rev + "^{commit}")
        except GitError:
            return None
        return out.decode("ascii").strip() or None

    def top(self) -> str:
        """The root of the work tree."""
        if not self._root:
            try:
                out = self.run("rev-parse", "--show-toplevel")
            except GitError as err:
                raise GitError(f"not inside a git work tree ({err})") from err
            self._root.append(out.decode("utf-8", "surrogateescape").rstrip("\n"))
        return self._root[0]

    def file_oid(self, rev: str | None, path: str) -> str | None:
        """The blob of regular file ``path`` (from the root) in commit ``rev``, or in the index when None.

        A symlink, a folder or a submodule at ``path`` counts as no file.
        """
        if rev is None:
            return self.staged(":(top,literal)" + path).get(path)
        out = self.run("ls-tree", "-z", "--full-tree", check_revision(rev), "--", path)
        for row in out.split(b"\0"):
            meta, _, name = row.partition(b"\t")
            fields = meta.decode("ascii", "replace").split(" ")
            if decode_path(name) == path and fields[0] in REGULAR_MODES:
                return fields[2]
        return None

    def staged(self, *pathspecs: str) -> dict[str, str]:
        """The blob of each regular file the index holds under ``pathspecs``, by path from the
        root (a conflicted path has no single staged version, and is left out)."""
        out = self.run("ls-files", "--stage", "-z", "--full-name", "--", *pathspecs)
        blobs = {}
        for row in out.split(b"\0"):
            meta, _, name = row.partition(b"\t")
            fields = meta.decode("ascii", "replace").split(" ")
            if len(fields) == 3 and fields[0] in REGULAR_MODES and fields[2] == "0":
                blobs[decode_path(name)] = fields[1]
        return blobs


def decode_path(raw: bytes) -> str:
    """A path git printed: git paths are bytes, and undecodable ones survive as surrogates."""
    return raw.decode("utf-8", "surrogateescape")


def _directory(path: str) -> str:
    return os.path.dirname(os.path.abspath(path)) or "."


def repo_root(path: str) -> str:
    """The top of the git work tree holding ``path``."""
    directory = _directory(path)
    if not os.path.isdir(directory):
        raise InputError("its folder does not exist", path=path)
    top = Git(cwd=directory).ask("rev-parse", "--show-toplevel")
    if top is None:
        raise InputError("is not inside a git work tree", path=path)
    return decode_path(top).rstrip("\n")


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
    done = Git(cwd=_directory(path)).ask("log", "-1", "--format=%ct", "--", os.path.basename(path))
    if done is None:
        return None  # a work tree without commits: git log has nothing to show
    text = done.decode("ascii", "replace").strip()
    return int(text) if text else None


def committed_blob(path: str, rev: str = "HEAD") -> bytes | None:
    """The bytes of ``path`` as committed in ``rev``; None when it is not there (a new file), or
    not as a regular file: a symlink's blob is the name it points to, and the drift-note guard
    counts it as no baseline, so a note's ``from`` is the genesis value as the guard's is."""
    git = Git(cwd=repo_root(path))
    if git.revision(rev) is None:
        return None  # no commits yet
    oid = _regular_blob(git, rev, repo_path(path))
    return None if oid is None else git.ask("cat-file", "blob", oid)


def _regular_blob(git: Git, rev: str, name: str) -> str | None:
    """The blob of regular file ``name`` (from the root) in ``rev``; None when no such file is there."""
    listed = git.ask("ls-tree", "-z", "--full-tree", rev, "--", name)
    meta, _, listed_name = (listed or b"").partition(b"\t")
    fields = meta.decode("ascii", "replace").split(" ")
    if listed is None or listed_name.rstrip(b"\0") != os.fsencode(name) or len(fields) != 3:
        return None
    return fields[2] if fields[0] in REGULAR_MODES else None


def merge_base(path: str, rev: str) -> str:
    """The commit a pull request against ``rev`` starts from, as ``check --base`` judges it: the
    merge base of ``rev`` and HEAD in the work tree holding ``path``."""
    git = Git(cwd=repo_root(path))
    if rev.startswith("-") or git.revision(rev) is None:
        raise InputError(f"--base {quote(rev)}: no such commit in this repository")
    done = git.ask("merge-base", rev, "HEAD")
    if done is None:
        raise InputError(f"--base {quote(rev)}: it shares no history with HEAD")
    return done.decode("ascii", "replace").strip()


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
    here = _repository_of(path)
    if here is None or not os.path.isfile(os.path.join(here, ".git")):
        return None  # a repository of its own (a nested one is not this command's to judge)
    if _runs_inside(here) or not _has_superproject(here):
        return None
    return os.path.relpath(here) if not os.path.isabs(path) else here


def _runs_inside(folder: str) -> bool:
    """Whether the command runs in ``folder`` or below it."""
    real, cwd = os.path.realpath(folder), os.path.realpath(os.getcwd())
    return cwd == real or cwd.startswith(real + os.sep)


def _has_superproject(here: str) -> bool:
    """Whether the repository at ``here`` is a submodule (not a linked work tree: git worktree add)."""
    done = Git(cwd=here).ask("rev-parse", "--show-superproject-working-tree")
    return done is not None and bool(done.strip())


def _repository_of(path: str) -> str | None:
    """The nearest folder above ``path`` with a ``.git`` (None: there is none)."""
    here = os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(os.path.join(here, ".git")):
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent
    return here


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
        return Git(cwd=folder).revision("HEAD")
    except (GitError, OSError):  # no git, or the folder is gone: no commit to name
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """One entry of ``git diff --raw``: a path's status and the object on each side."""

    status: str
    old_path: str | None
    new_path: str | None
    old_oid: str | None
    new_oid: str | None
    old_mode: str
    new_mode: str


def parse_raw_diff(out: bytes) -> list[Entry]:
    """Parse the output of ``git diff --raw -z --no-abbrev``."""
    fields = out.split(b"\0")
    entries = []
    i = 0
    while i < len(fields) and fields[i]:
        meta = fields[i].decode("ascii").lstrip(":").split(" ")
        status = meta[4][:1]
        paths = [decode_path(p) for p in fields[i + 1 : i + (3 if status in "RC" else 2)]]
        i += 1 + len(paths)
        entries.append(_entry(meta, status, paths))
    return entries


def _entry(meta: list[str], status: str, paths: list[str]) -> Entry:
    """One entry from its modes, object ids and status, and its path (both, for a rename or copy)."""
    return Entry(
        status=status,
        old_path=None if status == "A" else paths[0],
        new_path=None if status == "D" else paths[-1],
        old_oid=_oid(meta[2]),
        new_oid=_oid(meta[3]),
        old_mode=meta[0],
        new_mode=meta[1],
    )


def _oid(oid: str) -> str | None:
    """An object id; None for git's all-zero id of a side that does not exist."""
    return None if set(oid) <= _NULL_OID else oid
