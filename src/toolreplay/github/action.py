"""What ``toolreplay action`` needs from its environment, and what it hands back to the runner.

``action.yml`` passes every input through an environment variable (never spliced into a
script), so the settings are read here, strictly: a bad value is a usage error naming the
input. The pull request's range comes from the event payload GitHub writes to
``GITHUB_EVENT_PATH``; step outputs go to ``GITHUB_OUTPUT`` in the multi-line form with a
random delimiter, so no value can end its own entry and start another.
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from toolreplay import gate
from toolreplay.driftnotes.base_settings import PullRange
from toolreplay.errors import InputError
from toolreplay.escape import quote
from toolreplay.findings import Line, Report
from toolreplay.gate import FailPolicy
from toolreplay.git import is_commit_id
from toolreplay.outputs import write_error

#: environment variable -> the action.yml input it carries
INPUTS = {
    "TOOLREPLAY_CONFIG": "config",
    "TOOLREPLAY_FAIL_ON": "fail-on",
    "TOOLREPLAY_COMMENT": "comment",
    "TOOLREPLAY_ANNOTATIONS": "annotations",
    "TOOLREPLAY_SARIF": "sarif",
    "TOOLREPLAY_TOKEN": "token",
    "TOOLREPLAY_COMMENT_AUTHOR": "comment-author",
    "TOOLREPLAY_SHARD": "shard",
    "TOOLREPLAY_MERGE": "merge",
    "TOOLREPLAY_COMMAND": "command",
}
_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})
REPORT_NAME = "toolreplay-report.json"


def parse_fail_on(text: str, default: frozenset[str] | None) -> FailPolicy:
    """``fail-on``: empty (the config's ``fail_on``), ``any``, ``none``, or a list separated by
    commas, read as the config's list is (``all,-audit-incomplete``; :mod:`toolreplay.gate`)."""
    try:
        return gate.parse_fail_on(text, default, name="input fail-on")
    except gate.FailOnError as err:
        raise InputError(str(err)) from err


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise InputError(f"input {INPUTS[name]}: expected true or false, got {quote(env[name])}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """The Action's inputs and the runner's folders. The token is left out of ``repr``."""

    config: str | None
    fail_on: str
    comment: bool
    annotations: bool
    sarif: str | None
    comment_author: str | None
    workspace: str
    runner_temp: str
    output: str | None
    token: str = field(default="", repr=False)
    #: ``K/N``: run shard K of N and only write its JSON report (a CI matrix job)
    shard: str | None = None
    #: a folder of shards' JSON reports (or one report) to merge and publish instead of checking
    merge: str | None = None


def settings_from_env(environ: Mapping[str, str] | None = None) -> Settings:
    """Read the inputs ``action.yml`` sets (``TOOLREPLAY_*``) and GitHub's own variables (each
    runner variable the Action reads is checked first: :func:`check_runner`)."""
    env = os.environ if environ is None else environ
    check_runner(env)
    token = env.get("TOOLREPLAY_TOKEN") or env.get("GITHUB_TOKEN") or ""
    return Settings(
        config=_text(env, "TOOLREPLAY_CONFIG"),
        fail_on=env.get("TOOLREPLAY_FAIL_ON", ""),
        comment=_flag(env, "TOOLREPLAY_COMMENT", True),
        annotations=_flag(env, "TOOLREPLAY_ANNOTATIONS", True),
        sarif=_text(env, "TOOLREPLAY_SARIF"),
        comment_author=_text(env, "TOOLREPLAY_COMMENT_AUTHOR"),
        workspace=env.get("GITHUB_WORKSPACE") or os.getcwd(),
        runner_temp=env.get("RUNNER_TEMP") or tempfile.gettempdir(),
        output=env.get("GITHUB_OUTPUT") or None,
        token=token.strip(),
        shard=_text(env, "TOOLREPLAY_SHARD"),
        merge=_text(env, "TOOLREPLAY_MERGE"),
    )


#: the runner's variables that name a path, and what each must be: a folder the Action works in,
#: a file it appends to (made when missing), or a file it reads
RUNNER_PATHS = {
    "GITHUB_WORKSPACE": "folder",
    "RUNNER_TEMP": "folder",
    "GITHUB_OUTPUT": "output",
    "GITHUB_STEP_SUMMARY": "output",
    "GITHUB_EVENT_PATH": "input",
}


def check_runner(env: Mapping[str, str]) -> None:
    """Refuse a runner variable the Action reads that it cannot use (an :class:`InputError` naming
    the variable and the problem), before anything runs: the runner sets each to an absolute path,
    or to its API's URL. Unset or empty, each has its default."""
    _check_runner_paths(env)
    url = env.get("GITHUB_API_URL")
    if url and not _http_url(url):
        raise InputError(f"runner variable GITHUB_API_URL: {quote(url)} is not an http(s) URL with a host")


def _check_runner_paths(env: Mapping[str, str]) -> None:
    """Refuse the first runner variable of :data:`RUNNER_PATHS` whose path is not what it must be."""
    for name, kind in RUNNER_PATHS.items():
        path = env.get(name)
        problem = _path_problem(path, kind) if path else None
        if problem:
            raise InputError(f"runner variable {name}: {quote(path or '')} {problem}")


def _path_problem(path: str, kind: str) -> str | None:
    """What keeps ``path`` from being the ``kind`` of path its variable names (None: nothing)."""
    if not os.path.isabs(path):
        return "is not an absolute path"
    return _KIND_PROBLEMS[kind](path)


def _folder_problem(path: str) -> str | None:
    if os.path.isdir(path):
        return None
    return "is not a folder" if os.path.lexists(path) else "does not exist"


def _output_problem(path: str) -> str | None:
    """A file the Action writes: it may not exist yet, its folder must."""
    if os.path.isdir(path):
        return "is a folder, not a file"
    return None if os.path.isdir(os.path.dirname(path)) else "is in no folder that exists"


def _input_problem(path: str) -> str | None:
    if os.path.isdir(path):
        return "is a folder, not a file"
    if not os.path.isfile(path):
        return "does not exist"
    return None if os.access(path, os.R_OK) else "cannot be read"


#: the check of each kind of runner path (RUNNER_PATHS)
_KIND_PROBLEMS: dict[str, Callable[[str], str | None]] = {
    "folder": _folder_problem,
    "output": _output_problem,
    "input": _input_problem,
}


def _http_url(text: str) -> bool:
    """Whether ``text`` is an http(s) URL with a host (GitHub's API: ``https://HOST/api/v3``)."""
    try:
        url = urlsplit(text)
        url.port  # noqa: B018  (raises ValueError on a port that is not a number)
    except ValueError:
        return False
    return url.scheme in ("http", "https") and bool(url.hostname) and "@" not in url.netloc


def _text(env: Mapping[str, str], name: str) -> str | None:
    """An input's text without surrounding white space; None when empty or unset."""
    return env.get(name, "").strip() or None


def pull_range_from_env(environ: Mapping[str, str] | None = None) -> PullRange | None:
    """The pull request's base and head commits, from the event payload; None when not a PR.

    The head is what the workflow checked out (``GITHUB_SHA``: on ``pull_request`` the
    merge of head into base), except on ``pull_request_target``, where ``GITHUB_SHA`` is
    the base branch and the pull request's own head is ``pull_request.head.sha``.
    """
    env = os.environ if environ is None else environ
    pull = event_payload(env).get("pull_request")
    if not isinstance(pull, dict):
        return None
    base, head = _sha(pull.get("base")), _head(env, pull)
    if base is None or head is None:
        return None
    return PullRange(base=base, head=head)


def pull_head_from_env(environ: Mapping[str, str] | None = None) -> str | None:
    """The pull request's own head commit (``pull_request.head.sha``: not the merge commit a
    ``pull_request`` run checks out), which the sticky comment says it described; None when not a PR."""
    env = os.environ if environ is None else environ
    pull = event_payload(env).get("pull_request")
    return _sha(pull.get("head")) if isinstance(pull, dict) else None


def event_payload(env: Mapping[str, str]) -> dict[str, object]:
    """The workflow's event payload (empty when there is none, or it cannot be read as an object)."""
    path = env.get("GITHUB_EVENT_PATH")
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as stream:
            event = json.load(stream)
    except (OSError, ValueError, RecursionError):  # RecursionError: nested past json's reach
        return {}
    return event if isinstance(event, dict) else {}


def _head(env: Mapping[str, str], pull: dict[str, object]) -> str | None:
    """The commit judged as the head: the one checked out, but on ``pull_request_target`` (or
    without a commit id) the pull request's own head."""
    checked_out = env.get("GITHUB_SHA", "")
    if env.get("GITHUB_EVENT_NAME") == "pull_request_target" or not is_commit_id(checked_out):
        return _sha(pull.get("head"))
    return checked_out


def _sha(side: object) -> str | None:
    sha = side.get("sha") if isinstance(side, dict) else None
    return sha if isinstance(sha, str) and is_commit_id(sha) else None


def divergence(reports: Sequence[Report]) -> int | None:
    """The first divergence over all transcripts: the smallest ``divergence`` index reported."""
    found = [line.value for r in reports for line in r.header if _is_divergence(line)]
    return min(found) if found else None


def _is_divergence(line: Line) -> bool:
    """A header line naming a divergence index (an integer, not a boolean)."""
    return line.key == "divergence" and isinstance(line.value, int) and not isinstance(line.value, bool)


def write_outputs(path: str, values: Mapping[str, str]) -> None:
    """Append step outputs to ``GITHUB_OUTPUT`` as ``name<<DELIMITER`` blocks.

    The delimiter is random per value (as @actions/core's ``prepareKeyValueMessage`` does),
    so no value, whatever it holds, can close its block and write another output.
    """
    blocks = []
    for name, value in values.items():
        delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
        if delimiter in value or "\n" in name or "\r" in name:  # pragma: no cover - 2**-128
            raise ValueError(f"cannot write output {name!r} safely")
        blocks.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    try:
        with open(path, "a", encoding="utf-8", newline="\n") as out:
            out.write("".join(blocks))
    except OSError as err:
        raise write_error(err, path) from err
