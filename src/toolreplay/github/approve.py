"""``toolreplay action accept``: accept from the pull request what its sticky comment listed, when a
maintainer comments ``/toolreplay accept <reason>`` (docs/spec.md §5.2).

An ``issue_comment`` workflow runs with a write token in the base repository, so every step that
could let someone else act through it is refused first, with a reply and nothing written: a
commenter without write access (``author_association`` and the API's permission endpoint must both
say so), a pull request from a fork, a closed one, a sticky comment that does not name the head it
described, or a head that moved since. Only then is the pull request's branch fetched and checked
out (no fork's content is ever fetched), the listed baselines accepted as ``toolreplay accept``
does with the base commit's settings (data files only: no tools_source, hook or install runs),
committed, and pushed without force (a branch that moved meanwhile refuses the push).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolreplay.errors import ToolreplayError
from toolreplay.escape import one_line
from toolreplay.github.annotations import echo
from toolreplay.github.approval import (
    Described,
    Request,
    Unit,
    chosen_units,
    commit_message,
    missing_paths,
    note_reason,
    parse_request,
    read_described,
    reply_done,
    reply_fork,
    reply_refused,
)
from toolreplay.github.branch import Branch, BranchError
from toolreplay.github.comment import identity, is_ours
from toolreplay.report.inert import md_code

if TYPE_CHECKING:
    from github import Github
    from github.PullRequest import PullRequest

#: who GitHub says may be obeyed, and with which permission the API must confirm it
WRITE_ASSOCIATIONS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Comment:
    """The ``issue_comment`` event's facts: the pull request's number and the comment's."""

    repository: str
    number: int
    login: str
    association: str
    body: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """What ``action accept`` did: ``ignored`` (no command), ``refused`` or ``accepted``; the log's
    lines and the reply posted (if any)."""

    status: str
    lines: tuple[str, ...] = ()
    reply: str | None = None
    commit: str | None = None


def _report_or_refusal(described: Described | None, pull: PullRequest) -> Described | Refusal:
    """Our report, or why it cannot be acted on: there is none, or it describes another head commit."""
    if described is None:
        return Refusal.of(
            "there is no toolreplay report on this pull request yet: wait for its check to comment."
        )
    if described.head is None:
        return Refusal.of(
            "the report does not name the commit it describes: let the check run again, then comment."
        )
    if described.head != pull.head.sha:
        return Refusal.of(
            f"the report describes commit {described.head[:12]}, and the pull request's head is"
            f" now {str(pull.head.sha)[:12]}: accept once the report describes the new head"
            " (nobody has reviewed it yet)."
        )
    return described


def _units_or_refusal(request: Request, listed: Sequence[Unit]) -> list[Unit] | Refusal:
    """The units of the report the request accepts, or why there are none."""
    missing = missing_paths(request, listed)
    if missing:
        named = ", ".join(md_code(p, in_table=False) for p in missing)
        return Refusal.of(f"the report lists no drift to accept for {named}.")
    units = chosen_units(request, listed)
    if not units:
        return Refusal.of("the report lists no drift that `toolreplay accept` accepts.")
    return units


def comment_from_event(event: Mapping[str, object], repository: str) -> Comment | None:
    """The comment of an ``issue_comment`` event on a pull request that was created (None: an edit,
    a deletion, or a comment on an issue)."""
    issue, comment = event.get("issue"), event.get("comment")
    if event.get("action") != "created" or not isinstance(comment, dict):
        return None
    number, login, body = _pull_number(issue), _login(comment), comment.get("body")
    if number is None or login is None or not isinstance(body, str):
        return None
    association = comment.get("author_association")
    return Comment(
        repository=repository,
        number=number,
        login=login,
        association=association if isinstance(association, str) else "",
        body=body,
    )


def _pull_number(issue: object) -> int | None:
    """The number of an event's issue that is a pull request (None: a plain issue, or no number)."""
    if not isinstance(issue, dict) or not issue.get("pull_request"):
        return None
    number = issue.get("number")
    return int(number) if isinstance(number, int) else None


def _login(comment: dict[str, object]) -> str | None:
    """The login of an event comment's author (None: there is none)."""
    user = comment.get("user")
    login = user.get("login") if isinstance(user, dict) else None
    return login if isinstance(login, str) else None


@dataclass(frozen=True, slots=True, kw_only=True)
class Refusal:
    """Why a request is refused: the reply."""

    body: str

    @classmethod
    def of(cls, why: str) -> Refusal:
        return cls(body=reply_refused(why))


def _same_repository(pull: PullRequest, repository: str) -> bool:
    """Whether the pull request's head is a branch of ``repository`` (not of a fork)."""
    head = pull.head.repo
    return head is not None and str(head.full_name).casefold() == repository.casefold()


@dataclass(kw_only=True)
class Approver:
    """One ``/toolreplay accept``: the client, the work tree and how a unit is accepted."""

    client: Github
    branch: Branch
    #: accepts one unit in the work tree with the note's reason, its notes measured from the base
    #: given (the unit's, else the pull request's); the paths it wrote
    accept: Callable[[Unit, str, str], Sequence[str]]
    author: str | None = None

    def run(self, comment: Comment) -> Outcome:
        request = parse_request(comment.body)
        if request is None:
            return Outcome(status="ignored", lines=("not a /toolreplay accept comment: nothing to do",))
        repo = self.client.get_repo(comment.repository)
        issue = repo.get_issue(comment.number)
        refusal = self._refusal(repo, issue, comment, request)
        if isinstance(refusal, Refusal):
            return self._reply(issue, "refused", refusal.body)
        pull, units = refusal
        return self._accept(issue, pull, units, request, comment)

    def _refusal(
        self, repo: Any, issue: Any, comment: Comment, request: Request
    ) -> Refusal | tuple[PullRequest, list[Unit]]:
        """Why nothing may be done (the reply), else the pull request and the units to accept."""
        refused = self._requester_refusal(repo, comment, request)
        if refused is not None:
            return refused
        pull = repo.get_pull(comment.number)
        if pull.state != "open":
            return Refusal.of("this pull request is not open.")
        described = self._described(issue)
        if not _same_repository(pull, comment.repository):
            # (a fork's run had a read-only token: there may be no report to take the commands from)
            return Refusal(body=reply_fork(described.units if described is not None else ()))
        report = _report_or_refusal(described, pull)
        if isinstance(report, Refusal):
            return report
        units = _units_or_refusal(request, report.units)
        return units if isinstance(units, Refusal) else (pull, units)

    def _requester_refusal(self, repo: Any, comment: Comment, request: Request) -> Refusal | None:
        """Why the commenter's request is refused, whatever the pull request (None: it is not)."""
        if not self._may_write(repo, comment):
            return Refusal.of(
                f"only people with write access to this repository may accept drift, and"
                f" {md_code(comment.login, in_table=False)} has none. A maintainer (owner, member or"
                " collaborator with write permission) can comment `/toolreplay accept <reason>`."
            )
        if not request.reason:
            return Refusal.of("say why after the command: `/toolreplay accept <reason>`.")
        return None

    def _may_write(self, repo: Any, comment: Comment) -> bool:
        """Whether the commenter may write: GitHub's association AND the permission endpoint."""
        if comment.association not in WRITE_ASSOCIATIONS:
            return False
        return str(repo.get_collaborator_permission(comment.login)) in WRITE_PERMISSIONS

    def _described(self, issue: Any) -> Described | None:
        """What our sticky comment says it described (None: there is none)."""
        login = self.author or identity(self.client)
        sticky = next((c for c in issue.get_comments() if is_ours(c, login)), None)
        return None if sticky is None else read_described(sticky.body or "")

    def _accept(
        self, issue: Any, pull: PullRequest, units: list[Unit], request: Request, comment: Comment
    ) -> Outcome:
        ref, head = str(pull.head.ref), str(pull.head.sha)
        try:
            self.branch.check_out(ref, head, str(pull.base.ref))
            reason = note_reason(request.reason, login=comment.login, number=comment.number)
            written: list[str] = []
            for unit in units:
                written += self.accept(unit, reason, unit.base or str(pull.base.sha))
            written = list(dict.fromkeys(written))  # (the lock, when two baselines' sessions list tools)
            message = commit_message(units, request.reason, login=comment.login, number=comment.number)
            commit = self.branch.commit(written, message)
            self.branch.push(ref)
            echo(f"/toolreplay accept: pushed {commit} to {ref}")
        except BranchError as err:
            return self._reply(issue, "refused", reply_refused(err.markdown))
        except ToolreplayError as err:
            text = f"accepting failed: {md_code(str(err), in_table=False)}. Nothing was pushed."
            return self._reply(issue, "refused", reply_refused(text))
        body = reply_done(units, written, commit=commit, branch=ref, reason=request.reason)
        return self._reply(issue, "accepted", body, commit=commit)

    def _reply(self, issue: Any, status: str, body: str, commit: str | None = None) -> Outcome:
        issue.create_comment(body)
        return Outcome(
            status=status, lines=tuple(one_line(line) for line in body.split("\n")), reply=body, commit=commit
        )
