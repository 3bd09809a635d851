"""``toolreplay action accept``: a maintainer's ``/toolreplay accept <reason>`` comment accepts what the
sticky comment listed, commits and pushes it to the pull request's branch (a real git remote), and
replies; anyone else, a fork, a moved head and a hostile reason are refused or neutralised, with
nothing pushed. GitHub is tests/github_fake.py over real HTTP, spoken to by the real PyGithub."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from tests.github_fake import Account, FakeGitHub
from tests.gitrepo import Repo
from tests.runner_sim import commands
from toolreplay.cli import cli
from toolreplay.escape import starts_command
from toolreplay.github.approval import read_described
from toolreplay.github.comment import ACTIONS_BOT, MARKER
from toolreplay.transcript import make_record, record_line

OWNER, NAME, NUMBER = "octo-org", "agents", 7
TOKEN = "ghs_workflowTOKEN0123456789abcdef"
BASELINE = "baselines/notes.sealed.jsonl"
RUN = "runs/notes.jsonl"
LOCK = "tools.lock.json"
CONFIG = f"""\
transcripts = ["runs/*.jsonl"]
baselines = ["baselines/*.sealed.jsonl"]
drift_notes = "drift-notes"
tools_lock = "{LOCK}"
"""
REASON = "add_note now takes a priority, as the release notes say."
MAINTAINER = "mona"


def run_text(priority: bool) -> str:
    """A run of the notes agent: one add_note call (with a priority or not)."""
    args = {"text": "hi", **({"priority": "high"} if priority else {})}
    return record_line(make_record(index=0, tool="add_note", args=args, response={"id": 1})) + "\n"


def session_text(priority: bool) -> str:
    """The run's session file: the server's tools/list answer (add_note requiring priority or not)."""
    required = ["text", "priority"] if priority else ["text"]
    schema = {"type": "object", "properties": {n: {"type": "string"} for n in required}, "required": required}
    tools = [{"name": "add_note", "description": "Adds a note.", "inputSchema": schema}]
    record = make_record(index=0, tool="tools/list", args={}, response={"result": {"tools": tools}})
    return record_line(record) + "\n"


@dataclass
class Scene:
    remote: Path
    author: Repo
    workspace: Repo
    base: str
    head: str

    def remote_head(self, branch: str = "feature") -> str:
        return Repo(self.remote).git("rev-parse", f"refs/heads/{branch}").strip()


def _invoke(
    args: list[str], env: dict[str, str | None], cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> Result:
    monkeypatch.chdir(cwd)
    return CliRunner().invoke(cli, args, env=env, catch_exceptions=False)


def _runner_env(tmp_path: Path, workspace: Path, fake: FakeGitHub) -> dict[str, str | None]:
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir(exist_ok=True)
    env: dict[str, str | None] = {
        key: None for key in os.environ if key.startswith(("GITHUB_", "RUNNER_", "TOOLREPLAY_"))
    }
    env.update(
        GITHUB_ACTIONS="true",
        GITHUB_WORKSPACE=str(workspace),
        GITHUB_REPOSITORY=f"{OWNER}/{NAME}",
        GITHUB_API_URL=fake.api_url,
        RUNNER_TEMP=str(runner_temp),
        TOOLREPLAY_TOKEN=TOKEN,
    )
    return env


@pytest.fixture(autouse=True)
def _git(git_isolated: None) -> None:
    """git runs with a clean test identity and no outer repository."""


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    server = FakeGitHub(
        owner=OWNER,
        repo=NAME,
        number=NUMBER,
        tokens={TOKEN: Account(login=ACTIONS_BOT, installation=True)},
        permissions={MAINTAINER: "write", "reader": "read"},
    )
    with server:
        yield server


def _accept_in(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _invoke(
        ["accept", BASELINE, "--run", RUN, "--reason", "The first recording of the notes agent."],
        {},
        repo.path,
        monkeypatch,
    )
    assert result.exit_code == 0, result.output


@pytest.fixture
def scene(tmp_path: Path, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> Scene:
    return build_scene(tmp_path, fake, monkeypatch)


def build_scene(
    tmp_path: Path, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch, *, pr_module: str | None = None
) -> Scene:
    """A remote (bare) with main (the baseline, its session, the lock, all accepted) and a pull request
    branch that re-records the run (add_note now takes a priority); the sticky comment written by the
    Action on that pull request; the workflow's checkout of main."""
    remote = tmp_path / "origin.git"
    Repo.create_bare(remote)
    author = Repo.create(tmp_path / "author")
    author.write("toolreplay.toml", CONFIG)
    author.commit_all("the config")
    (author.path / "baselines").mkdir()
    author.write(RUN, run_text(False))
    author.write(RUN + ".mcp", session_text(False))
    _accept_in(author, monkeypatch)
    if pr_module is not None:  # the project's own code describes its tools (the base's is harmless)
        author.write("toolreplay.toml", CONFIG + 'tools_source = "agent_tools:TOOLS"\n')
        author.write(
            "agent_tools.py", "def add_note(text: str) -> dict:\n    return {}\n\n\nTOOLS = [add_note]\n"
        )
    author.commit_all("base: the notes agent's baseline")
    base = author.head()
    author.git("checkout", "-q", "-b", "feature")
    author.write(RUN, run_text(True))
    author.write(RUN + ".mcp", session_text(True))
    if pr_module is not None:
        author.write("agent_tools.py", pr_module)
    author.commit_all("re-record the notes agent")
    head = author.head()
    author.git("remote", "add", "origin", str(remote))
    author.git("push", "-q", "origin", "main", "feature")
    fake.head, fake.base = (head, "feature"), (base, "main")
    _sticky(tmp_path, author, fake, monkeypatch, base=base, head=head)
    author.git("checkout", "-q", "main")
    workspace = Repo(tmp_path / "ws")
    Repo(tmp_path).git("clone", "-q", str(remote), str(workspace.path))
    return Scene(remote=remote, author=author, workspace=workspace, base=base, head=head)


def _sticky(
    tmp_path: Path, repo: Repo, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch, *, base: str, head: str
) -> None:
    """The Action on the pull request (``pull_request`` event): it writes the sticky comment."""
    event = tmp_path / "pull-event.json"
    pull = {
        "number": NUMBER,
        "base": {"sha": base, "ref": "main", "repo": {"full_name": f"{OWNER}/{NAME}"}},
        "head": {"sha": head, "ref": "feature", "repo": {"full_name": f"{OWNER}/{NAME}"}},
    }
    event.write_text(json.dumps({"action": "synchronize", "number": NUMBER, "pull_request": pull}))
    env = _runner_env(tmp_path, repo.path, fake)
    env.update(GITHUB_EVENT_NAME="pull_request", GITHUB_EVENT_PATH=str(event), GITHUB_SHA=head)
    result = _invoke(["action"], env, repo.path, monkeypatch)
    assert result.exit_code == 1, result.output  # the drift fails the build
    assert len(fake.comments) == 1 and fake.comments[0]["body"].startswith(MARKER)


def comment_event(tmp_path: Path, body: str, *, login: str = MAINTAINER, association: str = "MEMBER") -> Path:
    """The issue_comment event GitHub writes for a new comment on the pull request."""
    event = {
        "action": "created",
        "issue": {"number": NUMBER, "pull_request": {"url": "x"}, "state": "open"},
        "comment": {"id": 9, "body": body, "user": {"login": login}, "author_association": association},
        "repository": {"full_name": f"{OWNER}/{NAME}"},
    }
    path = tmp_path / "comment-event.json"
    path.write_text(json.dumps(event), encoding="utf-8")
    return path


def approve(
    tmp_path: Path, scene: Scene, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch, body: str, **who: str
) -> Result:
    env = _runner_env(tmp_path, scene.workspace.path, fake)
    env.update(
        GITHUB_EVENT_NAME="issue_comment",
        GITHUB_EVENT_PATH=str(comment_event(tmp_path, body, **who)),
        GITHUB_SHA=scene.workspace.head(),
        GITHUB_OUTPUT=str(tmp_path / "runner-temp" / "output.txt"),
    )
    result = _invoke(["action", "accept"], env, scene.workspace.path, monkeypatch)
    for stream in (result.stdout, result.stderr):
        assert commands(stream) == [], stream
        for line in stream.split("\n"):
            assert not starts_command(line), line
    assert TOKEN not in result.output
    return result


def replies(fake: FakeGitHub) -> list[str]:
    return [c["body"] for c in fake.comments if not c["body"].startswith(MARKER)]


def test_the_sticky_comment_names_its_head_and_what_it_lists(scene: Scene, fake: FakeGitHub) -> None:
    """The sticky comment's hidden lines name the PR's head commit and the one accept command it printed."""
    described = read_described(fake.comments[0]["body"])
    assert described.head == scene.head
    assert [(u.baseline, u.run) for u in described.units] == [(BASELINE, RUN)]


def test_a_maintainer_s_comment_commits_pushes_and_replies(
    tmp_path: Path, scene: Scene, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer's comment: baseline, session, lock and their notes committed on the PR's head and
    pushed to its branch, the reason quoted in the notes and the message, and a reply naming the commit."""
    result = approve(tmp_path, scene, fake, monkeypatch, f"/toolreplay accept {REASON}")
    assert result.exit_code == 0, result.output
    pushed = scene.remote_head()
    assert pushed != scene.head
    remote = Repo(scene.remote)
    assert remote.git("rev-parse", f"{pushed}^").strip() == scene.head
    changed = remote.git("diff", "--name-only", scene.head, pushed).split()
    assert changed == [
        BASELINE,
        BASELINE + ".mcp",
        "drift-notes/notes-2.md",
        "drift-notes/notes-session-2.md",
        "drift-notes/tools.lock.json-2.md",
        LOCK,
    ], changed
    note = remote.git("show", f"{pushed}:drift-notes/notes-2.md")
    assert f'"{REASON}"' in note and f"Accepted by {MAINTAINER} with /toolreplay accept" in note
    message = remote.git("log", "-1", "--format=%B", pushed)
    assert message.startswith(f"Accept the drift of {BASELINE}\n") and f'Reason: "{REASON}"' in message
    [reply] = replies(fake)
    assert f"pushed {pushed[:12]} to `feature`" in reply and "`drift-notes/notes-2.md`" in reply
    assert not list((scene.workspace.path).glob("**/*.orig"))


def test_the_pushed_branch_passes_check(
    tmp_path: Path, scene: Scene, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What was pushed is accepted: check over the range finds no missing drift note."""
    assert approve(tmp_path, scene, fake, monkeypatch, f"/toolreplay accept {REASON}").exit_code == 0
    scene.author.git("fetch", "-q", "origin")
    scene.author.git("checkout", "-q", "origin/feature")
    result = _invoke(["check", "--base", scene.base, "--format", "json"], {}, scene.author.path, monkeypatch)
    kinds = {f["kind"] for r in json.loads(result.stdout)["reports"] for f in r["findings"]}
    assert "missing-drift-note" not in kinds and "silent-drift" not in kinds, kinds


@pytest.mark.parametrize(
    ("login", "association"),
    [
        ("reader", "CONTRIBUTOR"),
        ("reader", "COLLABORATOR"),
        ("stranger", "NONE"),
        (MAINTAINER, "CONTRIBUTOR"),
    ],
)
def test_a_commenter_without_write_access_is_refused(
    tmp_path: Path,
    scene: Scene,
    fake: FakeGitHub,
    monkeypatch: pytest.MonkeyPatch,
    login: str,
    association: str,
) -> None:
    """Both must say write: the event's association and the permission endpoint; else a reply and
    nothing pushed."""
    result = approve(
        tmp_path,
        scene,
        fake,
        monkeypatch,
        f"/toolreplay accept {REASON}",
        login=login,
        association=association,
    )
    assert result.exit_code == 1, result.output
    assert scene.remote_head() == scene.head
    [reply] = replies(fake)
    assert "only people with write access" in reply and f"`{login}` has none" in reply
    assert scene.workspace.git("status", "--porcelain") == ""


def test_a_fork_gets_the_commands_to_run_locally(
    tmp_path: Path, scene: Scene, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pull request from a fork: nothing fetched or pushed, and the reply gives the accept command."""
    fake.head_repo = f"someone/{NAME}"
    result = approve(tmp_path, scene, fake, monkeypatch, f"/toolreplay accept {REASON}")
    assert result.exit_code == 1, result.output
    assert scene.remote_head() == scene.head
    [reply] = replies(fake)
    assert "comes from a fork" in reply
    assert f"toolreplay accept {BASELINE} --run {RUN} --base {scene.base} --reason WHY" in reply
    assert scene.workspace.git("for-each-ref", "refs/toolreplay") == ""


def test_a_fork_without_a_report_is_told_where_the_commands_are(
    tmp_path: Path, scene: Scene, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fork's run could not comment (a read-only token): the reply still says it is a fork."""
    fake.head_repo = f"someone/{NAME}"
    fake.comments.clear()
    result = approve(tmp_path, scene, fake, monkeypatch, f"/toolreplay accept {REASON}")
    assert result.exit_code == 1, result.output
    [reply] = replies(fake)
    assert "comes from a fork" in reply and "the accept commands are in the toolreplay report" in reply
    assert scene.remote_head() == scene.head


def test_a_head_that_moved_is_refused(
    tmp_path: Path, scene: Scene, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit pushed after the report: the head is not the one described, so nothing is accepted."""
    scene.author.git("checkout", "-q", "feature")
    scene.author.write("README.md", "later\n")
    scene.author.commit_all("a later commit nobody reviewed")
    scene.author.git("push", "-q", "origin", "feature")
    moved = scene.author.head()
    fake.head = (moved, "feature")
    result = approve(tmp_path, scene, fake, monkeypatch, f"/toolreplay accept {REASON}")
    assert result.exit_code == 1, result.output
    assert scene.remote_head() == moved
    [reply] = replies(fake)
    assert f"describes commit {scene.head[:12]}" in reply and moved[:12] in reply


def test_a_branch_that_moved_behind_the_api_s_back_is_refused(
    tmp_path: Path, scene: Scene, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The API still names the described head but the branch moved: the fetch sees it, nothing is pushed."""
    scene.author.git("checkout", "-q", "feature")
    scene.author.write("README.md", "later\n")
    scene.author.commit_all("a later commit")
    scene.author.git("push", "-q", "origin", "feature")
    moved = scene.author.head()
    result = approve(tmp_path, scene, fake, monkeypatch, f"/toolreplay accept {REASON}")
    assert result.exit_code == 1, result.output
    assert scene.remote_head() == moved
    assert "it moved" in replies(fake)[0]


def test_a_hostile_reason_is_neutralised_everywhere(
    tmp_path: Path, scene: Scene, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """@mentions, workflow commands, HTML and issue references stay inert text in the note, the commit
    message, the reply and the log; a long reason is cut."""
    hostile = "ok @octocat <img src=x onerror=alert(1)> fixes #12\n::error::planted ##[warning]x " + "y" * 400
    result = approve(tmp_path, scene, fake, monkeypatch, f"/toolreplay accept {hostile}")
    assert result.exit_code == 0, result.output
    pushed = scene.remote_head()
    remote = Repo(scene.remote)
    texts = {
        "note": remote.git("show", f"{pushed}:drift-notes/notes-2.md"),
        "message": remote.git("log", "-1", "--format=%B", pushed),
        "reply": replies(fake)[0],
    }
    for where, text in texts.items():
        assert "@octocat" not in text and "<img" not in text and "#12" not in text, where
        assert "@\u200doctocat" in text and "<\u200dimg" in text, where
        assert "::error" not in text and "##[" not in text, where
        assert "y" * 300 not in text and "…" in text, where
        assert all(not starts_command(line) for line in text.split("\n")), where


def test_naming_a_baseline_the_report_did_not_list_is_refused(
    tmp_path: Path, scene: Scene, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``/toolreplay accept PATH: reason`` accepts only what the report listed."""
    result = approve(
        tmp_path, scene, fake, monkeypatch, f"/toolreplay accept baselines/other.sealed.jsonl: {REASON}"
    )
    assert result.exit_code == 1, result.output
    assert scene.remote_head() == scene.head
    assert "lists no drift to accept for `baselines/other.sealed.jsonl`" in replies(fake)[0]


def test_naming_the_listed_baseline_accepts_it(
    tmp_path: Path, scene: Scene, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``/toolreplay accept BASELINE: reason`` with the listed baseline commits and pushes it."""
    result = approve(tmp_path, scene, fake, monkeypatch, f"/toolreplay accept {BASELINE}: {REASON}")
    assert result.exit_code == 0, result.output
    assert scene.remote_head() != scene.head
    note = Repo(scene.remote).git("show", "feature:drift-notes/notes-2.md")
    assert f'"{REASON}"' in note and BASELINE + ":" not in note


def test_a_sticky_comment_without_a_head_is_refused(
    tmp_path: Path, scene: Scene, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A report from before the head was written into it cannot be matched to a commit: refused."""
    body = fake.comments[0]["body"]
    fake.comments[0]["body"] = "\n".join(x for x in body.split("\n") if "toolreplay-head" not in x)
    result = approve(tmp_path, scene, fake, monkeypatch, f"/toolreplay accept {REASON}")
    assert result.exit_code == 1, result.output
    assert scene.remote_head() == scene.head
    assert "does not name the commit" in replies(fake)[0]


def test_a_planted_report_is_not_ours(
    tmp_path: Path, scene: Scene, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A comment by someone else carrying the marker and hidden lines is not the sticky comment."""
    planted = fake.comments[0]["body"].replace(BASELINE, "baselines/planted.sealed.jsonl")
    fake.comments.clear()
    fake.add_comment("mallory", planted)
    result = approve(tmp_path, scene, fake, monkeypatch, f"/toolreplay accept {REASON}")
    assert result.exit_code == 1, result.output
    assert scene.remote_head() == scene.head
    assert "no toolreplay report" in replies(fake)[0]


def test_other_comments_and_events_do_nothing(
    tmp_path: Path, scene: Scene, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A comment that is not the command writes nothing; another event is a usage error."""
    before = len(fake.writes())
    result = approve(tmp_path, scene, fake, monkeypatch, "/toolreplay acceptance test please")
    assert (result.exit_code, fake.writes()[before:]) == (0, [])
    env = _runner_env(tmp_path, scene.workspace.path, fake)
    env.update(GITHUB_EVENT_NAME="pull_request", GITHUB_EVENT_PATH=str(comment_event(tmp_path, "x")))
    bad = _invoke(["action", "accept"], env, scene.workspace.path, monkeypatch)
    assert bad.exit_code == 2
    expected = "command accept runs on an issue_comment event (a /toolreplay accept comment)"
    assert bad.stderr == f"::error title=toolreplay::toolreplay: {expected}\n"


def test_a_pull_request_that_changes_the_configuration_is_refused(
    tmp_path: Path, scene: Scene, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the lock and notes go (and what judges) stays the base's choice: a PR that changes the
    configuration is accepted from a checkout, not from a comment. Nothing is pushed."""
    scene.author.git("checkout", "-q", "feature")
    scene.author.write("toolreplay.toml", CONFIG.replace('"drift-notes"', '"src"'))
    scene.author.commit_all("notes go to src/ now")
    scene.author.git("push", "-q", "origin", "feature")
    moved = scene.author.head()
    fake.comments.clear()
    fake.head = (moved, "feature")
    _sticky(tmp_path, scene.author, fake, monkeypatch, base=scene.base, head=moved)
    result = approve(tmp_path, scene, fake, monkeypatch, f"/toolreplay accept {REASON}")
    assert result.exit_code == 1, result.output
    assert scene.remote_head() == moved
    assert "changes toolreplay" in replies(fake)[0] and "Nothing was pushed" in replies(fake)[0]


def test_github_failing_is_one_error_line_and_nothing_pushed(
    tmp_path: Path, scene: Scene, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 500 from the API while checking: one ::error naming GitHub's answer, exit 2, nothing pushed."""
    fake.fault, fake.fault_routes = "500", ("pull",)
    env = _runner_env(tmp_path, scene.workspace.path, fake)
    event = comment_event(tmp_path, f"/toolreplay accept {REASON}")
    env.update(GITHUB_EVENT_NAME="issue_comment", GITHUB_EVENT_PATH=str(event))
    result = _invoke(["action", "accept"], env, scene.workspace.path, monkeypatch)
    assert result.exit_code == 2, result.output
    # (PyGithub retries a 500, then requests gives up)
    assert result.stderr.startswith(
        "::error title=toolreplay::toolreplay: GitHub: RetryError while talking to GitHub"
    )
    assert result.stderr.count("\n") == 1 and TOKEN not in result.output
    assert scene.remote_head() == scene.head and replies(fake) == []


def test_no_code_of_the_pull_request_runs(
    tmp_path: Path, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The base names a tools_source; the pull request's version of that module would leave a file
    when imported. Accepting (notes measured with the base's settings) never imports it."""
    planted = tmp_path / "planted"
    module = f"import pathlib\npathlib.Path({str(planted)!r}).write_text('ran')\nTOOLS = []\n"
    scene = build_scene(tmp_path, fake, monkeypatch, pr_module=module)
    result = approve(tmp_path, scene, fake, monkeypatch, f"/toolreplay accept {REASON}")
    assert result.exit_code == 0, result.output
    assert scene.remote_head() != scene.head
    assert not planted.exists()
