"""The sticky PR comment, with real PyGithub against a real local HTTP server (tests/github_fake.py)."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest
from github import Github

from tests.github_fake import Account, FakeGitHub
from toolreplay.findings import Finding, Report
from toolreplay.github.comment import (
    ACTIONS_BOT,
    COMMENT_LIMIT,
    MARKER,
    CommentTarget,
    comment_body,
    make_client,
    publish_comment,
    publish_report,
    target_from_env,
)

TOKEN = "ghp_s3cretTOKENvalue0123456789"
APP_TOKEN = "ghs_installationTOKEN987654321"
READ_ONLY = "ghs_forkReadOnlyTOKEN55555"


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    server = FakeGitHub(
        tokens={
            TOKEN: Account(login="toolreplay-bot"),
            APP_TOKEN: Account(login=ACTIONS_BOT, installation=True),
            READ_ONLY: Account(login=ACTIONS_BOT, installation=True, read_only=True),
        }
    )
    with server:
        yield server


def _client(fake: FakeGitHub, token: str = TOKEN) -> Github:
    # no request pacing and no retries: the local server answers at once
    pacing = {"seconds_between_requests": None, "seconds_between_writes": None}
    return make_client(token, fake.api_url, retry=None, **pacing)


def _target(fake: FakeGitHub) -> CommentTarget:
    return CommentTarget(repository=f"{fake.owner}/{fake.repo}", number=fake.number, api_url=fake.api_url)


def _publish(fake: FakeGitHub, body: str, token: str = TOKEN, **kw: Any) -> Any:
    return publish_comment(body, target=_target(fake), token=token, client=_client(fake, token), **kw)


def _body(text: str) -> str:
    return f"{MARKER}\n{text}\n"


def test_create_then_edit_then_leave_unchanged(fake: FakeGitHub) -> None:
    """First run creates the comment, second edits it in place, an unchanged third writes nothing."""
    first = _publish(fake, _body("one"))
    assert first.status == "created"
    assert [(w.method, w.body) for w in fake.writes()] == [("POST", {"body": _body("one")})]

    second = _publish(fake, _body("two"))
    assert second.status == "updated" and second.comment_id == first.comment_id
    assert fake.writes()[-1].method == "PATCH"
    assert fake.writes()[-1].path.endswith(f"/issues/comments/{first.comment_id}")
    assert len(fake.comments) == 1 and fake.comments[0]["body"] == _body("two")

    writes_before = len(fake.writes())
    third = _publish(fake, _body("two"))
    assert third.status == "unchanged"
    assert len(fake.writes()) == writes_before
    assert third.url is not None and third.url.startswith(fake.origin)


def test_planted_marker_in_someone_elses_comment_is_left_alone(fake: FakeGitHub) -> None:
    """A comment by another user that carries the marker is never edited; ours is created beside it."""
    planted = fake.add_comment("mallory", _body("please edit me"))
    result = _publish(fake, _body("report"))
    assert result.status == "created" and result.comment_id != planted
    assert fake.comment(planted)["body"] == _body("please edit me")
    assert all(w.method == "POST" for w in fake.writes())


def test_marker_must_open_our_own_comment(fake: FakeGitHub) -> None:
    """Our own comment that merely quotes the marker later on is not taken for the report."""
    fake.add_comment("toolreplay-bot", "see the report\n" + MARKER)
    assert _publish(fake, _body("report")).status == "created"


def test_installation_token_is_recognised_as_github_actions_bot(fake: FakeGitHub) -> None:
    """With GITHUB_TOKEN (/user answers 403) the author is github-actions[bot]; the rerun finds it."""
    assert _publish(fake, _body("a"), token=APP_TOKEN).status == "created"
    assert fake.comments[0]["login"] == ACTIONS_BOT
    assert _publish(fake, _body("b"), token=APP_TOKEN).status == "updated"
    assert len(fake.comments) == 1


def test_explicit_author_skips_the_identity_lookup(fake: FakeGitHub) -> None:
    """With author= given, /user is not asked and that login's comment is the one updated."""
    own = fake.add_comment("toolreplay-bot", _body("old"))
    result = _publish(fake, _body("new"), author="toolreplay-bot")
    assert result.status == "updated" and result.comment_id == own
    assert not any(r.path.endswith("/user") for r in fake.requests)


def test_read_only_token_degrades_without_raising(fake: FakeGitHub, caplog: pytest.LogCaptureFixture) -> None:
    """A fork PR's read-only token gets 403 on the write: a degraded result and a warning line."""
    caplog.set_level(logging.DEBUG)
    result = _publish(fake, _body("x"), token=READ_ONLY)
    assert result.status == "degraded" and result.degraded
    assert "403" in result.reason and "fork" in result.reason
    warning = result.warning()
    assert warning is not None and warning.startswith("::warning title=toolreplay comment::")
    assert fake.comments == []
    assert READ_ONLY not in caplog.text


def test_no_access_at_all_degrades(fake: FakeGitHub) -> None:
    """A token that gets 403 on everything degrades at the first request."""
    fake.forbid_all = True
    result = _publish(fake, _body("x"))
    assert result.status == "degraded" and "403" in result.reason
    assert fake.writes() == []


def test_missing_pull_request_degrades_with_404(fake: FakeGitHub) -> None:
    """A wrong PR number is a 404: degraded, nothing written."""
    target = CommentTarget(repository=f"{fake.owner}/{fake.repo}", number=999, api_url=fake.api_url)
    result = publish_comment(_body("x"), target=target, token=TOKEN, client=_client(fake))
    assert result.status == "degraded" and "404" in result.reason
    assert fake.writes() == []


def test_bad_token_degrades_with_401(fake: FakeGitHub) -> None:
    """An unknown token is a 401: degraded, and the reason does not repeat the token."""
    result = _publish(fake, _body("x"), token="ghp_unknownTOKEN")
    assert result.status == "degraded" and "401" in result.reason
    assert "ghp_unknownTOKEN" not in result.reason


#: (fault, the routes it hits, how the reason starts): answers PyGithub cannot use
BAD_ANSWERS = [
    ("other-host", ("repo",), "AssertionError while talking to GitHub: api.elsewhere.invalid"),
    ("other-host", ("issue",), "AssertionError while talking to GitHub: api.elsewhere.invalid"),
    ("malformed-json", ("repo",), "JSONDecodeError while talking to GitHub: "),
    ("malformed-json", ("list",), "JSONDecodeError while talking to GitHub: "),
    ("reset", ("issue",), "ChunkedEncodingError while talking to GitHub: "),
    ("500", ("list",), "GitHub answered 500: Server Error"),
    ("wrong-shape", ("list",), "TypeError while talking to GitHub: "),
    ("wrong-shape", (), "TypeError while talking to GitHub: "),
]


@pytest.mark.parametrize(
    ("fault", "routes", "reason"), BAD_ANSWERS, ids=[f"{f}-{'-'.join(r) or 'all'}" for f, r, _ in BAD_ANSWERS]
)
def test_any_bad_answer_degrades_without_raising(
    fake: FakeGitHub, fault: str, routes: tuple[str, ...], reason: str
) -> None:
    """Whatever the server answers (URLs on another host, broken JSON, a reset, a 500, the wrong
    shape), publishing returns a degraded result and one inert warning line, never an exception."""
    fake.fault, fake.fault_routes = fault, routes
    result = _publish(fake, _body("x"))
    assert result.status == "degraded"
    assert result.reason.startswith(reason)
    assert fake.writes() == [] and fake.comments == []
    warning = result.warning()
    assert warning is not None
    assert warning.startswith(
        "::warning title=toolreplay comment::toolreplay could not write the PR comment ("
    )
    assert "\n" not in warning and "\r" not in warning and TOKEN not in warning


def test_a_long_answer_stays_one_short_line(fake: FakeGitHub) -> None:
    """What the server's answer puts in an error message is cut to a bounded length in the reason."""
    fake.fault, fake.fault_routes = "other-host", ("repo",)
    fake.other_host = "http://" + ".".join(letter * 60 for letter in "abcd") + ".invalid"
    result = _publish(fake, _body("x"))
    assert result.status == "degraded"
    assert len(result.reason) < 300 and result.reason.endswith("…")


def test_finds_our_comment_beyond_the_first_page(fake: FakeGitHub) -> None:
    """With 150 comments before ours, pagination (per_page=100, Link next) still finds and edits it."""
    for i in range(150):
        fake.add_comment(f"user{i % 7}", f"comment {i} {MARKER if i % 10 == 0 else ''}")
    ours = fake.add_comment("toolreplay-bot", _body("old"))
    result = _publish(fake, _body("new"))
    assert result.status == "updated" and result.comment_id == ours
    listing = [r.query for r in fake.requests if r.path.endswith("/7/comments")]
    assert [q.get("page", ["1"])[0] for q in listing] == ["1", "2"]
    assert {q.get("per_page", [""])[0] for q in listing} == {"100"}
    assert [w.method for w in fake.writes()] == ["PATCH"]


def test_token_never_appears_in_any_output(
    fake: FakeGitHub, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """Across create, update, unchanged and a failure, the token is in no result, log or output."""
    caplog.set_level(logging.DEBUG)
    results = [_publish(fake, _body(t)) for t in ("a", "b", "b")]
    fake.forbid_all = True
    results.append(_publish(fake, _body("c")))
    captured = capsys.readouterr()
    warnings = "".join(str(r.warning()) for r in results)
    text = repr(results) + warnings + captured.out + captured.err + caplog.text
    assert TOKEN not in text
    # the server did receive it, so the check above is not vacuous
    assert all(r.authorization.endswith(TOKEN) for r in fake.requests)


def test_default_client_works_against_an_enterprise_style_prefix() -> None:
    """Without client=, make_client() uses the target's api_url (GHES: https://HOST/api/v3)."""
    server = FakeGitHub(prefix="/api/v3", tokens={TOKEN: Account(login="toolreplay-bot")})
    with server:
        result = publish_comment(_body("x"), target=_target(server), token=TOKEN)
        assert result.status == "created"
        assert all(r.path.startswith("/api/v3/") for r in server.requests)


def test_body_must_carry_the_marker_and_fit() -> None:
    """Bodies without the marker or over the limit are a programming error, refused before any request."""
    target = CommentTarget(repository="o/r", number=1, api_url="http://127.0.0.1:9")
    with pytest.raises(ValueError, match="marker"):
        publish_comment("no marker", target=target, token=TOKEN)
    with pytest.raises(ValueError, match="limit"):
        publish_comment(MARKER + "x" * COMMENT_LIMIT, target=target, token=TOKEN)


def _nasty_reports() -> list[Report]:
    tools = ["\n::add-mask::x", "\r::stop-commands::t", "%0A", "@octocat", "<!-- marker -->", "</details>"]
    findings = tuple(
        Finding(
            kind="permission-overreach",
            index=i,
            tool=tool,
            message=f"tool {tool!r} is not in scope <!-- toolreplay-report --> @octocat </details> | x",
            path="runs/t.jsonl",
            line=i + 1,
        )
        for i, tool in enumerate(tools)
    )
    return [Report(command="scope", path="runs/<!--@octocat-->.jsonl", findings=findings)]


def test_published_body_is_inert(fake: FakeGitHub) -> None:
    """The stored comment has the marker once (first line), no live @mention, no comment or tag."""
    result = publish_report(_nasty_reports(), target=_target(fake), token=TOKEN, client=_client(fake))
    assert result.status == "created"
    stored = fake.comments[0]["body"]
    assert stored.startswith(MARKER + "\n")
    rest = stored[len(MARKER) :]
    assert "<!--" not in rest
    tags = set(re.findall(r"<[/A-Za-z!][^>]*>", rest))
    assert tags <= {
        "<details>",
        "<details open>",
        "</details>",
        "<summary>",
        "</summary>",
        "<code>",
        "</code>",
    }
    assert re.search(r"(?<![\w\u200d])@[A-Za-z0-9]", rest) is None


def test_comment_body_is_trimmed_under_githubs_limit() -> None:
    """A huge report becomes a body under 65,536 characters with a trimming note."""
    findings = tuple(
        Finding(kind="redundant-call", index=i, tool="t", message="😀" * 150, path="t.jsonl", line=i + 1)
        for i in range(2000)
    )
    body = comment_body([Report(command="replay", path="t.jsonl", findings=findings)])
    assert body.startswith(MARKER)
    assert len(body.encode("utf-16-le")) // 2 <= COMMENT_LIMIT
    assert re.search(r"\n\d+ more findings not shown here \(GitHub's size limit\)\.", body)


def test_target_from_pull_request_event(tmp_path: Any) -> None:
    """The PR number comes from the event payload; the API URL from GITHUB_API_URL."""
    event = tmp_path / "event.json"
    event.write_text('{"pull_request": {"number": 42}}')
    env = {
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_API_URL": "https://ghe.example/api/v3",
    }
    assert target_from_env(env) == CommentTarget(
        repository="o/r", number=42, api_url="https://ghe.example/api/v3"
    )


def test_target_from_ref_and_none_on_push() -> None:
    """Without a PR payload a refs/pull/N/merge ref is used; a push has no target."""
    assert target_from_env({"GITHUB_REPOSITORY": "o/r", "GITHUB_REF": "refs/pull/5/merge"}) == CommentTarget(
        repository="o/r", number=5
    )
    assert target_from_env({"GITHUB_REPOSITORY": "o/r", "GITHUB_REF": "refs/heads/main"}) is None
