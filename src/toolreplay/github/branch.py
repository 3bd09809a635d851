"""The pull request's branch in the workflow's work tree: fetched, checked out, committed, pushed.

git runs with no hook (``core.hooksPath`` pointed at an empty path, ``--no-verify``), no signing
program and no credential helper: nothing the pull request holds runs. The token goes to ``fetch``
and ``push`` alone, as an HTTP header on their command line (never written to ``.git/config``, never
printed); a remote on disk (the tests') takes no header.
"""

from __future__ import annotations

import base64
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field

from toolreplay.errors import ToolreplayError
from toolreplay.escape import one_line
from toolreplay.report.inert import md_code

#: who the commit is by: the workflow's bot (the commenter is named in the message)
COMMITTER = ("github-actions[bot]", "41898282+github-actions[bot]@users.noreply.github.com")
_SAFE = (
    "-c", f"core.hooksPath={os.devnull}",
    "-c", "commit.gpgSign=false",
    "-c", "credential.helper=",
    "-c", "core.fsmonitor=false",
)  # fmt: skip


_LEAKS = frozenset(
    {"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_PREFIX", "GIT_ASKPASS"}
)


class BranchError(ToolreplayError):
    """The branch could not be fetched, committed or pushed; ``markdown`` says why, for the reply."""

    def __init__(self, markdown: str) -> None:
        super().__init__(markdown)
        self.markdown = markdown


@dataclass(kw_only=True)
class Branch:
    """The work tree at ``path`` and its remote (``origin``), with the token for fetch and push."""

    path: str
    remote: str = "origin"
    token: str = field(default="", repr=False)

    def _git(self, *args: str, auth: bool = False) -> subprocess.CompletedProcess[str]:
        header: tuple[str, ...] = ()
        if auth and self.token:
            basic = base64.b64encode(f"x-access-token:{self.token}".encode()).decode("ascii")
            header = ("-c", f"http.extraheader=AUTHORIZATION: basic {basic}")
        # no variable that points git at another repository or index (or names who commits)
        env = {k: v for k, v in os.environ.items() if k not in _LEAKS}
        name, email = COMMITTER
        env.update(
            GIT_TERMINAL_PROMPT="0",
            GIT_AUTHOR_NAME=name,
            GIT_AUTHOR_EMAIL=email,
            GIT_COMMITTER_NAME=name,
            GIT_COMMITTER_EMAIL=email,
        )
        try:
            return subprocess.run(
                ["git", *_SAFE, *header, *args],
                cwd=self.path,
                env=env,
                capture_output=True,
                text=True,
                check=False,
                timeout=300,
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            raise BranchError(f"git could not run ({type(err).__name__}).") from err

    def _detail(self, done: subprocess.CompletedProcess[str]) -> str:
        """What git said, as an inert code span (the token blanked out)."""
        text = one_line(done.stderr.strip()[-300:])
        return md_code(text.replace(self.token, "***") if self.token else text, in_table=False)

    def check_out(self, ref: str, head: str, base_ref: str) -> None:
        """Fetch ``ref`` (and the base branch ``base_ref``, which notes are measured from) and check
        ``ref`` out, detached; refused unless it is at ``head``."""
        refspecs = (f"+refs/heads/{ref}:refs/toolreplay/head", f"+refs/heads/{base_ref}:refs/toolreplay/base")
        done = self._git("fetch", "--no-tags", "--quiet", self.remote, *refspecs, auth=True)
        if done.returncode != 0:
            raise BranchError(f"the branch could not be fetched (`git fetch` said: {self._detail(done)}).")
        fetched = self._git("rev-parse", "--verify", "refs/toolreplay/head^{commit}").stdout.strip()
        if fetched != head:
            raise BranchError(
                f"the branch is at {fetched[:12]}, not at {head[:12]} the report describes: it moved."
            )
        done = self._git("checkout", "--quiet", "--force", "--detach", head)
        if done.returncode != 0:
            raise BranchError(
                f"the commit could not be checked out (`git checkout` said: {self._detail(done)})."
            )

    def changes(self, base: str, path: str) -> bool:
        """Whether the commit checked out changes ``path`` since its merge base with ``base``."""
        done = self._git("diff", "--quiet", f"{base}...HEAD", "--", path)
        if done.returncode not in (0, 1):
            raise BranchError(f"git could not compare with the base (git said: {self._detail(done)}).")
        return done.returncode == 1

    def commit(self, paths: Sequence[str], message: str) -> str:
        """Commit ``paths`` (and only them) with ``message``; the new commit's id."""
        done = self._git("add", "--", *paths)
        if done.returncode == 0:
            done = self._git("commit", "--quiet", "--no-verify", "-m", message, "--", *paths)
        if done.returncode != 0:
            raise BranchError(
                f"the accepted files could not be committed (`git` said: {self._detail(done)})."
            )
        return self._git("rev-parse", "HEAD").stdout.strip()

    def push(self, ref: str) -> None:
        """Push the commit to ``ref``, never forced: a branch that moved meanwhile refuses it."""
        done = self._git("push", "--quiet", "--no-verify", self.remote, f"HEAD:refs/heads/{ref}", auth=True)
        if done.returncode != 0:
            raise BranchError(
                "the push was refused (did the branch move meanwhile?); nothing was changed on it"
                f" (`git push` said: {self._detail(done)})."
            )
