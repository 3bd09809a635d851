"""Where a finding's line is on GitHub (``SERVER/REPOSITORY/blob/SHA/PATH#LLINE``), from the
Action's environment, and a Markdown link to it."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote as url_quote
from urllib.parse import urlsplit

from toolreplay.git import is_commit_id
from toolreplay.report.paths import repo_relative


@dataclass(frozen=True, slots=True, kw_only=True)
class Links:
    """Where a finding's line is on GitHub: ``SERVER/REPOSITORY/blob/SHA/PATH#LLINE``."""

    server: str
    repository: str
    sha: str

    def file(self, path: str) -> str | None:
        rel = repo_relative(path)
        if rel is None or rel == ".":
            return None
        return f"{self.server}/{self.repository}/blob/{self.sha}/{url_quote(rel, safe='/')}"

    def line(self, path: str, line: int) -> str | None:
        url = self.file(path)
        return None if url is None else f"{url}#L{line}"


_REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


def links_from_env(environ: Mapping[str, str] | None = None) -> Links | None:
    """Links from ``GITHUB_SERVER_URL``, ``GITHUB_REPOSITORY`` and ``GITHUB_SHA``; None unless all
    three are present and well-formed (an http(s) origin, ``owner/name``, a commit id)."""
    env = os.environ if environ is None else environ
    server = env.get("GITHUB_SERVER_URL", "").rstrip("/")
    repository = env.get("GITHUB_REPOSITORY", "")
    sha = env.get("GITHUB_SHA", "")
    if not _plain_origin(server):
        return None
    if not _plain_repository(repository) or not is_commit_id(sha):
        return None
    return Links(server=server, repository=repository, sha=sha)


def _plain_repository(repository: str) -> bool:
    """Whether ``repository`` is ``owner/name``, with a name that is no path step (``.``, ``..``)."""
    return bool(_REPOSITORY.match(repository)) and repository.split("/")[1] not in (".", "..")


def _plain_origin(server: str) -> bool:
    """Whether ``server`` is an http(s) origin and nothing more: no user, path, query or fragment."""
    try:
        url = urlsplit(server)
        url.port  # noqa: B018  (raises ValueError on a port that is not a number)
    except ValueError:
        return False
    if url.scheme not in ("http", "https") or not url.hostname or any((url.path, url.query, url.fragment)):
        return False
    # these characters leave no room for a user or a password (no "@")
    return re.fullmatch(r"[A-Za-z0-9.:\[\]-]+", url.netloc) is not None


def link_to(links: Links | None, file: str, line: int | None = None) -> str | None:
    """Where ``file`` (at ``line``) is on GitHub; None without links."""
    if links is None:
        return None
    return links.file(file) if line is None else links.line(file, line)


def linked(text: str, url: str | None) -> str:
    return f"[{text}]({url})" if url else text
