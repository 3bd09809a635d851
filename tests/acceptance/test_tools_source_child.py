"""No code of a pull request runs inside the judgement of that pull request.

``tools_source`` names the project's own code (a ``module:object``, an MCP server's command
line). ``check`` runs it in a child process whose only output is data, after the drift-note
rule has been judged; a child that dies, hangs, answers garbage or writes into the work tree
is a failing ``tools-source-failed`` finding, and the other verdicts stay as they were.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.gitrepo import Repo, git_env, note
from toolreplay.analyses import tools_source
from toolreplay.cli import cli
from toolreplay.contracts.lock import ToolLock, save_lock

BENIGN = "def lookup(o: str) -> dict:\n    return {}\n\n\nTOOLS = [lookup]\n"
#: the pull request's module: it switches the drift-note rule off in any process that imports it
MALICIOUS = (
    "import toolreplay.driftnotes.guard as dn\n"
    "dn.judge = lambda *a, **k: []\n"
    "def lookup(o: str) -> dict: return {}\n"
    "TOOLS = [lookup]\n"
)
CONFIG = 'baselines = ["baselines/*.sealed.jsonl"]\ntools_lock = "tools.lock.json"\ntools_source = {source}\n'


def _project(tmp_path: Path, source: str = '"agent_tools:TOOLS"', module: str = BENIGN) -> tuple[Repo, str]:
    """A repository whose base commit has a sealed baseline, a note for it, a lock and a tools_source."""
    repo = Repo.create(tmp_path / "repo")
    head = repo.write_baseline("baselines/search.sealed.jsonl", 2)
    repo.write("drift-notes/search-recorded.md", note("baselines/search.sealed.jsonl", "0" * 64, head))
    repo.write("agent_tools.py", module)
    repo.write("toolreplay.toml", CONFIG.format(source=source))
    save_lock(ToolLock.of([]), repo.path / "tools.lock.json")
    repo.commit_all("base")
    return repo, repo.head()


def _check(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    """toolreplay check as CI runs it: its own process, in the repository."""
    return subprocess.run(
        [sys.executable, "-m", "toolreplay", "check", *args],
        cwd=repo.path,
        env=git_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _invoke(runner: CliRunner, repo: Repo, *args: str) -> tuple[int, dict[str, list[dict[str, str]]]]:
    old = os.getcwd()
    os.chdir(repo.path)
    try:
        result = runner.invoke(cli, ["check", "--format", "json", *args], catch_exceptions=False)
    finally:
        os.chdir(old)
    report = json.loads(result.stdout)
    found: dict[str, list[dict[str, str]]] = {}
    for r in report["reports"]:
        found.setdefault(r["file"], []).extend(r["findings"])
    return result.exit_code, found


def test_a_pull_request_cannot_switch_off_the_drift_note_rule_with_its_tools_source(tmp_path: Path) -> None:
    """The PR's module patches the rule where it is imported: it runs in a child, so the re-sealed
    baseline without a note is still a missing-drift-note, and check --base exits 1."""
    repo, base = _project(tmp_path)
    repo.write("agent_tools.py", MALICIOUS)
    repo.write_baseline("baselines/search.sealed.jsonl", 3)
    repo.commit_all("re-seal, no note")
    done = _check(repo, "--base", base)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "missing-drift-note: baseline 'baselines/search.sealed.jsonl' (modified)" in done.stdout
    assert "note: missing\n" in done.stdout
    assert "tools-source-failed" not in done.stdout  # the module ran fine, in its child


MODULES = {
    "hangs": "import time\ntime.sleep(20)\n" + BENIGN,
    "exits": "import os\nos._exit(3)\n",
    "answers garbage": "import json\njson.dumps = lambda *a, **k: 'not json'\n" + BENIGN,
    # (over a range the module runs from a copy of the base commit's tree: it writes into the work tree
    # by its path, which the test writes in, see WORK_TREE)
    "writes": "from pathlib import Path\nPath(WORK_TREE, 'planted.txt').write_text('x')\n" + BENIGN,
}
COMMANDS = {
    "hangs": ["sh", "-c", "sleep 20"],
    "exits": ["sh", "-c", "exit 3"],
    "answers garbage": ["sh", "-c", "echo garbage; echo '{not json'"],
    "writes": ["sh", "-c", "echo x > WORK_TREE/planted.txt"],
}
WHY = {
    "hangs": "within 2 s",
    "exits": "",
    "answers garbage": "",
    "writes": "it changed the work tree: 'planted.txt'",
}


@pytest.mark.parametrize("form", ["module", "command"])
@pytest.mark.parametrize("failure", sorted(MODULES))
def test_a_failing_tools_source_is_a_failing_finding(
    runner: CliRunner,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    git_isolated: None,
    form: str,
    failure: str,
) -> None:
    """A tools_source child that hangs, exits non-zero, answers garbage or writes into the work tree
    is a tools-source-failed finding (exit 1) on the config file, and every other verdict stands."""
    # (a generous bound but for the child that hangs: a loaded machine starts Python slowly)
    monkeypatch.setattr(tools_source, "SOURCE_TIMEOUT", 2.0 if failure == "hangs" else 60.0)
    tree = str(tmp_path / "repo")
    command = [word.replace("WORK_TREE", tree) for word in COMMANDS[failure]]
    source = '"agent_tools:TOOLS"' if form == "module" else json.dumps(command)
    module = MODULES[failure].replace("WORK_TREE", repr(tree)) if form == "module" else BENIGN
    repo, base = _project(tmp_path, source=source, module=module)
    code, found = _invoke(runner, repo, "--base", base)
    assert code == 1
    [finding] = found["toolreplay.toml"]
    assert finding["kind"] == "tools-source-failed"
    assert WHY[failure] in finding["message"]
    # the baseline's own report and the drift-note rule's verdict are there, as they were
    assert found["baselines/search.sealed.jsonl"] == []


def test_a_pull_request_that_changes_tools_source_or_tools_lock_is_a_guard_change(
    runner: CliRunner, tmp_path: Path, git_isolated: None
) -> None:
    """tools_source and tools_lock name the code check runs and the lock it holds tools to: a pull
    request that changes them is reported as drift-guard-changed, like the guard's own settings, and
    the lock it adds needs a drift note as a baseline does."""
    repo, base = _project(tmp_path, source='"tools.json"')
    repo.write("tools.json", '{"tools": []}')
    repo.commit_all("the definitions file the base names")
    base = repo.head()
    changed = CONFIG.format(source='"other_tools:TOOLS"').replace("tools.lock", "new.lock")
    repo.write("toolreplay.toml", changed)
    repo.write("other_tools.py", BENIGN)
    save_lock(ToolLock.of([]), repo.path / "new.lock.json")
    repo.commit_all("point tools_source at a module")
    code, found = _invoke(runner, repo, "--base", base)
    [finding] = found["toolreplay.toml"]
    assert finding["kind"] == "drift-guard-changed"
    assert [f["kind"] for f in found["new.lock.json"]] == ["missing-drift-note"]
    assert (
        "tools_source 'tools.json' -> 'other_tools:TOOLS' (the code check runs, in a child process)"
        in finding["message"]
    )
    assert (
        "tools_lock 'tools.lock.json' -> 'new.lock.json' (the lock check holds the tools to)"
        in (finding["message"])
    )
    assert code == 1  # the guard change is advisory; the lock added without a note is not


def test_a_pull_request_cannot_take_its_failing_tools_source_out_of_fail_on(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, git_isolated: None
) -> None:
    """Over a range, whether tools-source-failed fails is the base commit's fail_on: a pull request
    cannot leave the kind out of its fail_on and pass while the tools_source (the base's, which is
    the one that runs) fails."""
    monkeypatch.setattr(tools_source, "SOURCE_TIMEOUT", 60.0)
    repo, base = _project(tmp_path, module=MODULES["exits"])
    config = CONFIG.format(source='"agent_tools:TOOLS"') + 'fail_on = ["chain-broken"]\n'
    repo.write("toolreplay.toml", config)
    repo.commit_all("fail_on without the failing tools_source's kind")
    code, found = _invoke(runner, repo, "--base", base)
    assert code == 1
    kinds = sorted(f["kind"] for f in found["toolreplay.toml"])
    assert kinds == ["drift-guard-changed", "tools-source-failed"]
