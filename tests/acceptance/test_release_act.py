"""The release workflow's dry run (workflow_dispatch) under nektos/act, in host mode and offline.

act runs .github/workflows/release.yml on a copy of this checkout made a git repository: the
build job builds, checks and smoke-tests the distributions and writes the notes; the jobs that
attest, publish and release are skipped, since the event is no tag push. Two actions need the
network and are mapped with ``--local-repository`` to stand-ins of the test's: setup-python
(its stand-in puts this test's Python first on PATH) and upload-artifact (its stand-in copies
the files it is given into a folder the test reads).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.acceptance.test_action_act import act_binary
from tests.conftest import NOT_COPIED, ROOT
from tests.gitrepo import Repo, git_env
from toolreplay import __version__

pytestmark = pytest.mark.workflow

WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"

_SETUP_PYTHON = """\
name: setup-python stand-in
description: puts the test's Python first on PATH (actions/setup-python needs the network)
runs:
  using: composite
  steps:
    - shell: bash
      run: echo "{bin}" >> "$GITHUB_PATH"
"""

_UPLOAD = """\
name: upload-artifact stand-in
description: copies the files it is given into the test's folder (upload-artifact needs the network)
inputs:
  name: {{ required: true }}
  path: {{ required: true }}
  if-no-files-found: {{ required: false }}
  retention-days: {{ required: false }}
runs:
  using: composite
  steps:
    - shell: bash
      env:
        NAME: ${{{{ inputs.name }}}}
        PATHS: ${{{{ inputs.path }}}}
      run: |
        set -euo pipefail
        mkdir -p "{store}/$NAME"
        while IFS= read -r path; do
          if [ -n "$path" ]; then cp -R "$path" "{store}/$NAME/"; fi
        done <<< "$PATHS"
"""


def uses(action: str) -> str:
    """The owner/repo@sha the release workflow pins ``action`` to."""
    [found] = set(re.findall(rf"uses: ({re.escape(action)}@[0-9a-f]{{40}})", WORKFLOW.read_text()))
    return found


def test_the_release_dry_run_builds_checks_and_publishes_nothing(tmp_path: Path) -> None:
    """workflow_dispatch: the build job passes (version, notes, build, twine check, smoke test) and
    hands on the wheel, the sdist and the notes; attest, PyPI and the GitHub release are skipped."""
    act = act_binary()
    workspace = tmp_path / "workspace"
    shutil.copytree(ROOT, workspace, ignore=NOT_COPIED, symlinks=True)
    changelog = workspace / "CHANGELOG.md"
    text = changelog.read_text(encoding="utf-8")
    if f"## [{__version__}] - " not in text:
        # the release commit, as CONTRIBUTING's first step makes it
        text = text.replace("## [Unreleased]", f"## [Unreleased]\n\n## [{__version__}] - 2026-12-06", 1)
        changelog.write_text(text, encoding="utf-8")
    repo = Repo(workspace)
    repo.git("init", "-q", "-b", "main")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "release")

    store = tmp_path / "artifacts"
    setup = tmp_path / "setup-python"
    setup.mkdir()
    (setup / "action.yml").write_text(_SETUP_PYTHON.format(bin=Path(sys.executable).parent))
    upload = tmp_path / "upload-artifact"
    upload.mkdir()
    (upload / "action.yml").write_text(_UPLOAD.format(store=store))
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"inputs": {}, "ref": "refs/heads/main"}))
    env = {
        k: v
        for k, v in git_env().items()
        if not k.startswith(("GITHUB_", "RUNNER_", "ACTIONS_", "ACT", "INPUT_", "TOOLREPLAY_", "VIRTUAL_ENV"))
    }
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg-config")
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg-cache")
    args = [
        act, "workflow_dispatch",
        "-W", str(workspace / ".github" / "workflows" / "release.yml"),
        "-e", str(event),
        "-P", "ubuntu-latest=-self-hosted",
        "--action-offline-mode",
        "--action-cache-path", str(tmp_path / "act-cache"),
        "--local-repository", f"{uses('actions/setup-python')}={setup}",
        "--local-repository", f"{uses('actions/upload-artifact')}={upload}",
        "--json",
    ]  # fmt: skip
    proc = subprocess.run(
        args, cwd=workspace, env=env, capture_output=True, text=True, check=False, timeout=900
    )
    (tmp_path / "act-log.jsonl").write_text(proc.stdout, encoding="utf-8")
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    results = {e["jobID"]: e["jobResult"] for e in events if "jobResult" in e}
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert results.get("build") == "success", results
    # the jobs that attest, publish and release ran no step (act does not list a job its if: skips)
    assert all(results.get(job) in (None, "skipped") for job in ("attest", "pypi", "github-release")), results
    assert [e for e in events if e.get("jobID") != "build" and "stepResult" in e] == []
    steps = {e["step"]: e["stepResult"] for e in events if e.get("stage") == "Main" and "stepResult" in e}
    assert [steps.get(name) for name in ("Version", "Release notes", "Build", "Smoke test")] == [
        "success"
    ] * 4
    assert f"toolreplay {__version__}\n" in [e.get("msg") for e in events if e.get("step") == "Smoke test"]

    handed = store / "release"
    assert sorted(p.name for p in (handed / "dist").iterdir()) == [
        f"toolreplay-{__version__}-py3-none-any.whl",
        f"toolreplay-{__version__}.tar.gz",
    ]
    notes = (handed / "notes" / "notes.md").read_text(encoding="utf-8")
    section = text.split(f"## [{__version__}] - ", 1)[1].split("\n## ", 1)[0]
    assert notes.strip() and notes.strip() in section
