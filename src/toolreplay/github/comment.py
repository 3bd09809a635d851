"""One sticky PR comment, created once and then edited in place, through PyGithub.

Our comment is the one that starts with :data:`MARKER` AND is authored by the token's own
identity: anyone can paste the marker into a comment, and a token with write access could
edit theirs, so the author check is what keeps a planted marker from being taken over.

The identity is ``GET /user``'s login. An installation token (``GITHUB_TOKEN``, or any
GitHub App's) cannot read ``/user`` (403 "Resource not accessible by integration"); its
comments are authored by the app's bot account, which for ``GITHUB_TOKEN`` is
``github-actions[bot]``. That is the fallback; with another App's token pass ``author``
(``<app-slug>[bot]``).

Commenting is best effort: a 401, 403 (a fork PR's read-only token), 404, a 5xx, a
connection reset, an answer that is not JSON or not of the shape PyGithub expects, URLs on
another host (PyGithub asserts they stay on the API's host) or any other failure returns a
*degraded* result with a one-line reason, never raises, and the reason never holds the
token. Whatever the server answers, the comment cannot change the run's verdict.
PyGithub is an optional dependency (``toolreplay[github]``), imported only when a comment
is published.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from toolreplay.escape import one_line, workflow_command
from toolreplay.extras import install_hint, installed
from toolreplay.github.action import event_payload
from toolreplay.github.annotations import echo
from toolreplay.github.approval import described_lines, listed_units
from toolreplay.report.markdown import render_markdown

if TYPE_CHECKING:
    from github import Github, GithubException
    from github.Auth import Token

    from toolreplay.findings import Report

#: The hidden first line that marks our comment. Rendered report text can never contain
#: it: the Markdown renderer breaks every ``<`` that comes from data.
MARKER = "<!-- toolreplay-report -->"
#: GitHub refuses a comment body longer than this many characters.
COMMENT_LIMIT = 65536
DEFAULT_API_URL = "https://api.github.com"
#: Longest part of a server's answer (an error message, a host name) repeated in the warning.
MAX_DETAIL = 200
#: The author of comments made with a workflow's ``GITHUB_TOKEN``.
ACTIONS_BOT = "github-actions[bot]"

Status = Literal["created", "updated", "unchanged", "degraded"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CommentTarget:
    """Which pull request (or issue) to comment on, on which GitHub."""

    repository: str  # "owner/name"
    number: int
    api_url: str = DEFAULT_API_URL


@dataclass(frozen=True, slots=True, kw_only=True)
class CommentResult:
    """What publishing did; ``reason`` says why it degraded (never the token)."""

    status: Status
    comment_id: int | None = None
    url: str | None = None
    reason: str = ""

    @property
    def degraded(self) -> bool:
        return self.status == "degraded"

    def warning(self) -> str | None:
        """The ``::warning`` line to print when commenting degraded, else None."""
        if not self.degraded:
            return None
        return workflow_command(
            "warning",
            f"toolreplay could not write the PR comment ({self.reason}); "
            "the annotations and the job summary still carry the report",
            title="toolreplay comment",
        )


def failure_warning(err: Exception, token: str) -> str:
    """The ``::warning`` line for a failure to publish that escaped everything else (never the token)."""
    warning = CommentResult(status="degraded", reason=failure_reason(err, token)).warning()
    assert warning is not None
    return warning


def _utf16_len(text: str) -> int:
    # GitHub counts characters as JavaScript does; UTF-16 code units never undercount
    return len(text.encode("utf-16-le")) // 2


def comment_body(
    reports: Sequence[Report],
    *,
    fails: Callable[[str], bool] | None = None,
    base: str | None = None,
    head: str | None = None,
) -> str:
    """The marker line and the Markdown report, trimmed (with a note) to GitHub's limit; ``base``
    is the pull request's base, which the accept commands name. With ``head`` (the pull request's
    head commit), hidden lines name it and the accept commands, for ``/toolreplay accept``."""
    top = "\n".join([MARKER, *described_lines(head, listed_units(reports, base))]) + "\n"
    return top + render_markdown(
        reports, fails=fails, limit=COMMENT_LIMIT - _utf16_len(top), size=_utf16_len, base=base
    )


_PULL_REF = re.compile(r"^refs/pull/(\d+)/(?:merge|head)$")


def target_from_env(environ: Mapping[str, str] | None = None) -> CommentTarget | None:
    """The pull request of the running workflow, or None when it is not about one.

    The number comes from the event payload (``GITHUB_EVENT_PATH``: ``pull_request``, or an
    ``issue`` that is a pull request), else from a ``refs/pull/N/merge`` ``GITHUB_REF``.
    """
    env = os.environ if environ is None else environ
    repository = env.get("GITHUB_REPOSITORY", "")
    if "/" not in repository:
        return None
    number = _event_number(event_payload(env))
    if number is None:
        number = _ref_number(env.get("GITHUB_REF", ""))
    if number is None:
        return None
    return CommentTarget(
        repository=repository, number=number, api_url=env.get("GITHUB_API_URL") or DEFAULT_API_URL
    )


def _ref_number(ref: str) -> int | None:
    """The pull request's number in a ``refs/pull/N/merge`` ref."""
    match = _PULL_REF.match(ref)
    return int(match.group(1)) if match else None


def _event_number(event: dict[str, object]) -> int | None:
    """The pull request's number in the event payload: its ``pull_request``, or an ``issue`` that is one."""
    pull, issue = event.get("pull_request"), event.get("issue")
    if isinstance(pull, dict) and isinstance(pull.get("number"), int):
        return int(pull["number"])
    if isinstance(issue, dict) and issue.get("pull_request") and isinstance(issue.get("number"), int):
        return int(issue["number"])
    return None


class PyGithub(NamedTuple):
    """What toolreplay uses of PyGithub: the client, its token credentials, its one exception."""

    client: type[Github]
    token: type[Token]
    error: type[GithubException]


def pygithub() -> PyGithub:
    """PyGithub (the ``github`` extra), imported here alone and only when a comment is published:
    its import takes most of a second. Importing it also installs its logger's handler."""
    from github import Auth, Github, GithubException

    return PyGithub(client=Github, token=Auth.Token, error=GithubException)


def make_client(token: str, api_url: str = DEFAULT_API_URL, **options: Any) -> Github:
    """A PyGithub client for ``api_url`` (GitHub Enterprise: ``https://HOST/api/v3``)."""
    library = pygithub()
    options.setdefault("per_page", 100)
    return library.client(base_url=api_url.rstrip("/"), auth=library.token(token), **options)


def is_ours(comment: Any, login: str) -> bool:
    body = comment.body or ""
    user = comment.user
    return body.startswith(MARKER) and user is not None and str(user.login).casefold() == login.casefold()


def _same(a: str, b: str) -> bool:
    # GitHub may hand a body back with CRLF line endings
    return a.replace("\r\n", "\n") == b.replace("\r\n", "\n")


def identity(client: Github) -> str:
    error = pygithub().error
    try:
        return str(client.get_user().login)
    except error as err:
        if err.status == 403:  # an installation token: /user is not for integrations
            return ACTIONS_BOT
        raise


def failure_reason(err: Exception, token: str) -> str:
    text = _answered(err) if isinstance(err, pygithub().error) else _failed(err)
    # belt and braces: whatever the server echoed, the token is not repeated
    return text.replace(token, "***") if token else text


def _answered(err: GithubException) -> str:
    """What GitHub answered: the status, and its message."""
    message = err.data.get("message") if isinstance(err.data, dict) else None
    text = f"GitHub answered {err.status}"
    if err.status == 403:
        text += " (a read-only token, as on a pull request from a fork?)"
    if isinstance(message, str) and message:
        text += f": {one_line(message[:MAX_DETAIL])}"
    return text


def _failed(err: Exception) -> str:
    """What went wrong before GitHub answered (the detail, from the server's answer: one line, short)."""
    detail = one_line(str(err))
    if len(detail) > MAX_DETAIL:
        detail = detail[: MAX_DETAIL - 1] + "…"
    return f"{type(err).__name__} while talking to GitHub" + (f": {detail}" if detail else "")


def publish_comment(
    body: str,
    *,
    target: CommentTarget,
    token: str,
    author: str | None = None,
    client: Github | None = None,
) -> CommentResult:
    """Create or update our one comment on ``target``; write nothing when it is unchanged.

    ``body`` must start with :data:`MARKER` (use :func:`comment_body`) and fit GitHub's
    limit. ``author`` overrides the identity lookup; ``client`` replaces :func:`make_client`
    (tests use it to point at a local server with no request pacing).
    """
    _check_body(body)
    if not installed("github"):
        return CommentResult(
            status="degraded", reason=f"PyGithub is not installed ({install_hint('github')})"
        )
    try:
        gh = client if client is not None else make_client(token, target.api_url)
        return _create_or_update(gh, body, target=target, login=author or identity(gh))
    except Exception as err:
        # Not only GithubException and requests' errors: PyGithub also raises AssertionError
        # (URLs on another host), ValueError (a body that is not JSON), TypeError or KeyError
        # (JSON of another shape). A comment that cannot be written is a warning, whatever the cause.
        return CommentResult(status="degraded", reason=failure_reason(err, token))


def _check_body(body: str) -> None:
    """Refuse a body without our marker, or over GitHub's limit (a programming error)."""
    if not body.startswith(MARKER):
        raise ValueError("the comment body must start with the marker (use comment_body)")
    if _utf16_len(body) > COMMENT_LIMIT:
        raise ValueError(f"the comment body is over GitHub's {COMMENT_LIMIT}-character limit")


def _create_or_update(gh: Github, body: str, *, target: CommentTarget, login: str) -> CommentResult:
    """Write our comment: created when there is none, edited when its body differs."""
    issue = gh.get_repo(target.repository).get_issue(target.number)
    ours = next((c for c in issue.get_comments() if is_ours(c, login)), None)
    if ours is None:
        created = issue.create_comment(body)
        return CommentResult(status="created", comment_id=created.id, url=created.html_url)
    if _same(ours.body or "", body):
        return CommentResult(status="unchanged", comment_id=ours.id, url=ours.html_url)
    ours.edit(body)
    return CommentResult(status="updated", comment_id=ours.id, url=ours.html_url)


def publish_report(
    reports: Sequence[Report],
    *,
    target: CommentTarget,
    token: str,
    author: str | None = None,
    client: Github | None = None,
    fails: Callable[[str], bool] | None = None,
    base: str | None = None,
    head: str | None = None,
) -> CommentResult:
    """:func:`publish_comment` with :func:`comment_body` of ``reports``."""
    body = comment_body(reports, fails=fails, base=base, head=head)
    return publish_comment(body, target=target, token=token, author=author, client=client)


class _InertLogHandler(logging.Handler):
    """Log records as inert lines on stderr, with the token blanked out."""

    def __init__(self, token: str) -> None:
        super().__init__(level=logging.WARNING)
        self.token = token

    def emit(self, record: logging.LogRecord) -> None:
        text = f"PyGithub: {record.getMessage()}"
        echo(text.replace(self.token, "***") if self.token else text, err=True)


def route_pygithub_log(token: str) -> None:
    """PyGithub, on import, logs at INFO to its own stderr handler: every failed request,
    including the 403 on GET /user that is expected with an installation token. Keep its
    warnings, printed inert, and drop the rest (the outcome is reported by us)."""
    try:
        pygithub()  # (the import installs its handler, which we replace)
    except ImportError:
        return
    logger = logging.getLogger("github")
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    logger.addHandler(_InertLogHandler(token))
    logger.setLevel(logging.WARNING)
    logger.propagate = False
