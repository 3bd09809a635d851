"""The Action reuses toolreplay's venv from the cache under nektos/act: a warm run installs nothing.

Two runs of one workflow on one pull request, as two jobs on fresh runners: the runner's tool
cache (where the venv lives) is emptied between them, so the second run finds the venv only
through actions/cache (the file-backed stand-in of tests/acceptance/test_action_act.py, which
has actions/cache's inputs and ``cache-hit`` output). docs/performance.md has the same two runs
measured with the real actions/cache against act's cache server.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.acceptance.test_action_act import ACTION_REF, CHECKOUT, act_binary, run_act
from tests.action_env import pull_request
from tests.pythons import supported

pytestmark = pytest.mark.workflow


def test_a_warm_run_restores_the_venv_and_installs_nothing(tmp_path: Path) -> None:
    """The first run installs toolreplay and saves its venv; the second restores it (cache-hit),
    runs pip not at all, says so, and reports the same findings."""
    act_binary()
    [(python, version)] = supported(1)
    pr = pull_request(tmp_path / "workspace")
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
    steps:
      - uses: {CHECKOUT}
        with:
          fetch-depth: 0
          persist-credentials: false
      - id: use
        uses: {ACTION_REF}
        with:
          python-path: {python}
          comment: "false"
          fail-on: none
""",
        encoding="utf-8",
    )
    cache = tmp_path / "act-cache"
    event = pr.event(tmp_path)

    cold = run_act(pr.path, workflow, event, cache, api_url="http://127.0.0.1:9")
    assert cold.job_result() == "success", cold.log[-6000:]
    assert "reused toolreplay's venv" not in cold.printed("use")
    [saved] = (tmp_path / "actions-cache-store").iterdir()
    assert saved.name.startswith("toolreplay-venv-") and f"-py{version}-" in saved.name

    # a fresh runner: nothing of the first job's venv is left on it
    shutil.rmtree(cache / "tool_cache" / "toolreplay")
    warm = run_act(pr.path, workflow, event, cache, api_url="http://127.0.0.1:9")
    assert warm.job_result() == "success", warm.log[-6000:]
    printed = warm.printed("use")
    assert "reused toolreplay's venv from the cache" in printed
    assert "pip" not in printed and "Successfully installed" not in printed
    assert [p.name for p in (tmp_path / "actions-cache-store").iterdir()] == [saved.name]
    same = ("findings", "failing", "exit-code", "python-version")
    assert {k: warm.outputs("use")[k] for k in same} == {k: cold.outputs("use")[k] for k in same}
    assert warm.outputs("use")["python-version"] == version
