"""The pytest plugin in real pytest sessions (pytest's own ``pytester``), through the installed entry point.

Each inner session is a project of its own: a test module whose live tool appends to
``live.log`` every time it really runs, and raises instead once a file ``offline`` exists,
so a test can prove the tool was (not) called.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from toolreplay import pytest_plugin
from toolreplay.cli import cli
from toolreplay.transcript import read_links

pytest_plugins = ["pytester"]

AGENT = """
import json
import re
import subprocess
import sys
import pathlib

import pytest

LIMIT = {limit}
MAX_LENGTH = {max_length}


def search(query: str, limit: int = LIMIT) -> dict:
    here = pathlib.Path(__file__).parent
    if (here / "offline").exists():
        raise RuntimeError("the live tool was called")
    with open(here / "live.log", "a") as log:
        log.write(json.dumps({{"query": query, "limit": limit}}) + "\\n")
    return {{"hits": [f"{{query}}-{{i}}" for i in range(limit)]}}


SCHEMA = {{
    "type": "object",
    "properties": {{"query": {{"type": "string", "maxLength": MAX_LENGTH}}, "limit": {{"type": "integer"}}}},
    "required": ["query"],
}}


def test_search(toolreplay):
    toolreplay.register(search, schema=SCHEMA, version="1.0")
    {calls}
"""
FIRST = 'assert toolreplay.call("search", query="pytest", limit=2) == {"hits": ["pytest-0", "pytest-1"]}'
CASSETTE = "tests/cassettes/test_agent/test_search.sealed.jsonl"
LOCK = "tests/cassettes/test_agent/test_search.lock.json"


def agent(*, limit: int = 5, max_length: int = 500, calls: str = FIRST) -> str:
    return AGENT.format(limit=limit, max_length=max_length, calls=calls)


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """An inner project with its own rootdir, outside any CI (the outer run may be in CI)."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    monkeypatch.delenv("TOOLREPLAY_RECORD_IN_CI", raising=False)
    started_as_it_stands(monkeypatch)
    # no hypothesis plugin: the agents use none, and it costs each pytest process about a second
    pytester.makeini(
        "[pytest]\naddopts = -p no:cacheprovider -p no:hypothesispytest -p no:langsmith_plugin\n"
    )
    return pytester


def started_as_it_stands(monkeypatch: pytest.MonkeyPatch) -> None:
    """An inner session run in this process (``runpytest``) starts where the test stands: the
    environment it was started with is the test's environment at that moment. A session in a
    subprocess (``runpytest_subprocess``) reads its own, as every pytest process does."""
    monkeypatch.setattr(pytest_plugin, "started_environment", lambda: dict(os.environ))


def live_calls(project: pytest.Pytester) -> list[dict[str, object]]:
    log = project.path / "live.log"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def summary(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if line.startswith("toolreplay cassettes:")]


def verify(path: Path) -> str:
    result = CliRunner().invoke(cli, ["verify", str(path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_record_then_replay_never_calls_the_live_tool(project: pytest.Pytester) -> None:
    """`once` records a missing cassette (sealed, verifiable), then replays it without running the tool."""
    project.makepyfile(test_agent=agent())
    first = project.runpytest()
    first.assert_outcomes(passed=1)
    assert summary(first) == ["toolreplay cassettes: 0 replayed, 1 recorded (record mode once: the default)"]
    assert live_calls(project) == [{"query": "pytest", "limit": 2}]
    cassette = project.path / CASSETTE
    assert "links: 1\n" in verify(cassette)
    (link,) = list(read_links(str(cassette)))
    assert (link.record.tool, link.record.args) == ("search", {"limit": 2, "query": "pytest"})
    assert json.loads((project.path / LOCK).read_text())["tools"]["search"]["version"] == "1.0"

    # the live tool now fails if it is called at all
    (project.path / "live.log").unlink()
    (project.path / "offline").touch()
    second = project.runpytest()
    second.assert_outcomes(passed=1)
    assert summary(second) == ["toolreplay cassettes: 1 replayed, 0 recorded (record mode once: the default)"]
    assert live_calls(project) == []


def test_contract_change_fails_with_drift_and_the_fingerprint_diff_lines(project: pytest.Pytester) -> None:
    """A tool whose schema and default changed since recording fails with ToolDriftError and what changed."""
    project.makepyfile(test_agent=agent())
    project.runpytest().assert_outcomes(passed=1)
    project.makepyfile(test_agent=agent(limit=10, max_length=200))
    result = project.runpytest("--toolreplay-record-mode=none")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E *ToolDriftError: tool 'search' drifted: recorded with fingerprint *"
            " (recorded call at index 0), is now *",
            f"E * fingerprint-diff {LOCK} (recorded) -> the registered tool:",
            "E * search: signature (default changed): /params/1/2 optional, default 5"
            " -> optional, default 10",
            "E * search: schema (breaking): /properties/query/maxLength 500 -> 200",
            "E * if the change is intended, re-record the cassette (--toolreplay-record-mode=all)"
            " and commit it with a drift note",
        ]
    )
    assert len(live_calls(project)) == 1  # only the recording run
    # `once` with a cassette present replays too: the same drift, nothing re-recorded
    before = (project.path / CASSETTE).read_bytes()
    project.runpytest().assert_outcomes(failed=1)
    assert (project.path / CASSETTE).read_bytes() == before


def test_changed_argument_fails_with_a_miss_naming_the_argument(project: pytest.Pytester) -> None:
    """A call the cassette lacks fails with SnapshotMissError naming the nearest call and argument."""
    project.makepyfile(test_agent=agent())
    project.runpytest().assert_outcomes(passed=1)
    project.makepyfile(test_agent=agent(calls='toolreplay.call("search", query="pytest", limit=3)'))
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E *SnapshotMissError: no recorded call matches tool 'search'"
            """ with args {"limit":3,"query":"pytest"};"""
            " nearest recorded call is index 0, which differs at argument '/limit': recorded 2, given 3",
            f"E * cassette {CASSETTE} does not record this call and the record mode is once (the default);"
            " re-record it (--toolreplay-record-mode=new_episodes or all) if the call is intended",
        ]
    )
    assert len(live_calls(project)) == 1


def test_ci_never_records_and_a_missing_cassette_fails(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With CI set the mode is `none`: the tool never runs, nothing is written, the test fails saying why."""
    monkeypatch.setenv("CI", "true")
    project.makepyfile(test_agent=agent())
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E *SnapshotMissError: no recorded call matches tool 'search' with args *;"
            " the recording never calls that tool (it calls none)",
            f"E * there is no cassette {CASSETTE} and the record mode is none (CI is set):"
            " record it where the tools are reachable and commit it",
        ]
    )
    assert live_calls(project) == []
    assert not (project.path / "tests").exists()
    assert summary(result) == []
    # recording in CI takes the mode and the job environment's opt-in
    monkeypatch.setenv("TOOLREPLAY_RECORD_IN_CI", "1")
    recorded = project.runpytest("--toolreplay-record-mode=once")
    recorded.assert_outcomes(passed=1)
    assert summary(recorded) == [
        "toolreplay cassettes: 0 replayed, 1 recorded in CI (record mode once:"
        " --toolreplay-record-mode=once, CI is set and TOOLREPLAY_RECORD_IN_CI=1)"
    ]
    assert (project.path / CASSETTE).exists()
    monkeypatch.delenv("TOOLREPLAY_RECORD_IN_CI")
    replayed = project.runpytest()
    replayed.assert_outcomes(passed=1)
    assert summary(replayed) == ["toolreplay cassettes: 1 replayed, 0 recorded (record mode none: CI is set)"]


REFUSED = (
    "*::test_search: --toolreplay-record-mode=all records cassettes, and CI is set: recording in CI"
    " needs TOOLREPLAY_RECORD_IN_CI=1 in the environment pytest was started with (nothing pytest reads"
    " or loads can give it)*"
)


@pytest.mark.parametrize("where", ["addopts", "PYTEST_ADDOPTS", "command line"])
def test_a_recording_mode_in_ci_needs_the_environment_opt_in(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Under CI, a recording mode from a committed ini, PYTEST_ADDOPTS or the command line is refused by
    name (it re-recorded every cassette); TOOLREPLAY_RECORD_IN_CI=1 allows it, and the summary says so."""
    project.makepyfile(test_agent=agent())
    project.runpytest().assert_outcomes(passed=1)
    before = (project.path / CASSETTE).read_bytes()
    (project.path / "live.log").unlink()
    monkeypatch.setenv("CI", "true")
    args: list[str] = []
    if where == "addopts":
        project.makeini("[pytest]\naddopts = -p no:cacheprovider --toolreplay-record-mode=all\n")
    elif where == "PYTEST_ADDOPTS":
        monkeypatch.setenv("PYTEST_ADDOPTS", "--toolreplay-record-mode=all")
    else:
        args = ["--toolreplay-record-mode=all"]
    refused = project.runpytest(*args)
    refused.assert_outcomes(errors=1)
    refused.stdout.fnmatch_lines([REFUSED])
    assert summary(refused) == []
    assert live_calls(project) == []
    assert (project.path / CASSETTE).read_bytes() == before

    monkeypatch.setenv("TOOLREPLAY_RECORD_IN_CI", "1")
    allowed = project.runpytest(*args)
    allowed.assert_outcomes(passed=1)
    assert summary(allowed) == [
        "toolreplay cassettes: 0 replayed, 1 recorded in CI (record mode all:"
        " --toolreplay-record-mode=all, CI is set and TOOLREPLAY_RECORD_IN_CI=1)"
    ]
    assert live_calls(project) == [{"query": "pytest", "limit": 2}]


@pytest.mark.slow
def test_the_opt_in_is_read_before_the_project_can_set_it(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A conftest (or an ini-driven plugin such as pytest-env) that sets TOOLREPLAY_RECORD_IN_CI or
    clears CI does not opt in: the environment counts as the process got it, on xdist workers too."""
    pytest.importorskip("xdist")
    project.makepyfile(test_agent=agent())
    project.makeconftest(
        "import os\nos.environ['TOOLREPLAY_RECORD_IN_CI'] = '1'\nos.environ.pop('CI', None)\n"
    )
    monkeypatch.setenv("CI", "true")
    for args in ([], ["-n", "2"]):
        refused = project.runpytest_subprocess("--toolreplay-record-mode=all", *args)
        refused.assert_outcomes(errors=1)
        refused.stdout.fnmatch_lines([REFUSED])
        assert not (project.path / CASSETTE).exists()
    assert live_calls(project) == []


#: a plugin of the project under test that sets the opt-in when it is imported (or, for "clears CI",
#: takes CI away): pytest imports the -p plugins of addopts and PYTEST_ADDOPTS before its own
#: entry-point plugins, toolreplay's included
PLUGIN = "import os\nos.environ['TOOLREPLAY_RECORD_IN_CI'] = '1'\n"
CLEARS_CI = "import os\nos.environ.pop('CI', None)\n"


@pytest.mark.slow
@pytest.mark.parametrize("where", ["addopts", "PYTEST_ADDOPTS", "conftest", "clears CI"])
def test_nothing_the_project_runs_can_switch_recording_on_in_ci(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Under CI, neither a plugin that ``addopts`` (or ``PYTEST_ADDOPTS``) loads with ``-p`` nor a
    conftest.py can set TOOLREPLAY_RECORD_IN_CI, nor a plugin clear CI to get the default ``once``:
    each pytest here is a process of its own, started with CI=true and no opt-in (issue 37)."""
    project.makepyfile(test_agent=agent(), recplug=CLEARS_CI if where == "clears CI" else PLUGIN)
    monkeypatch.setenv("CI", "true")
    args: list[str] = []
    if where == "addopts":
        project.makeini(
            "[pytest]\naddopts = -p no:cacheprovider -p no:hypothesispytest -p no:langsmith_plugin -p recplug"
            " --toolreplay-record-mode=all\n"
        )
    elif where == "PYTEST_ADDOPTS":
        monkeypatch.setenv("PYTEST_ADDOPTS", "-p recplug --toolreplay-record-mode=all")
    elif where == "conftest":
        project.makeconftest(PLUGIN)
        args = ["--toolreplay-record-mode=all"]
    else:
        args = ["-p", "recplug"]
    result = project.runpytest_subprocess(*args)
    if where == "clears CI":  # still CI: the mode is none, and the missing cassette fails the test
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["E * the record mode is none (CI is set)*"])
    else:
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines([REFUSED])
    assert summary(result) == []
    assert live_calls(project) == []
    assert not (project.path / CASSETTE).exists()


def test_the_opt_in_is_the_one_pytest_was_started_with(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Started with CI and TOOLREPLAY_RECORD_IN_CI=1, pytest records in CI even when a conftest.py
    takes the variable away: what counts is the environment the process was started with."""
    project.makepyfile(test_agent=agent())
    project.makeconftest("import os\nos.environ.pop('TOOLREPLAY_RECORD_IN_CI')\n")
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("TOOLREPLAY_RECORD_IN_CI", "1")
    result = project.runpytest_subprocess("--toolreplay-record-mode=all")
    result.assert_outcomes(passed=1)
    assert summary(result) == [
        "toolreplay cassettes: 0 replayed, 1 recorded in CI (record mode all:"
        " --toolreplay-record-mode=all, CI is set and TOOLREPLAY_RECORD_IN_CI=1)"
    ]
    assert live_calls(project) == [{"query": "pytest", "limit": 2}]


def test_where_the_start_environment_cannot_be_read_the_opt_in_is_refused(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a system that keeps no copy of the environment pytest started with (macOS), nothing can
    vouch for TOOLREPLAY_RECORD_IN_CI: recording in CI is refused, saying why; CI still counts."""
    project.makepyfile(test_agent=agent())
    monkeypatch.setattr(pytest_plugin, "started_environment", lambda: None)
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("TOOLREPLAY_RECORD_IN_CI", "1")
    refused = project.runpytest("--toolreplay-record-mode=all")
    refused.assert_outcomes(errors=1)
    refused.stdout.fnmatch_lines(
        [
            "*::test_search: --toolreplay-record-mode=all records cassettes, and CI is set: recording in CI"
            " needs TOOLREPLAY_RECORD_IN_CI=1 in the environment pytest was started with (which toolreplay"
            " can read on Linux and Windows only)*"
        ]
    )
    replayed = project.runpytest()
    replayed.assert_outcomes(failed=1)  # CI is set: mode none, and there is no cassette
    assert live_calls(project) == []


def test_new_episodes_appends_and_reseals(project: pytest.Pytester) -> None:
    """`new_episodes` replays the recorded call, runs only the new one, appends it; the chain verifies."""
    project.makepyfile(test_agent=agent())
    project.runpytest().assert_outcomes(passed=1)
    cassette = project.path / CASSETTE
    before = cassette.read_text()
    project.makepyfile(
        test_agent=agent(calls=FIRST + '\n    toolreplay.call("search", query="agents", limit=1)')
    )
    result = project.runpytest("--toolreplay-record-mode=new_episodes")
    result.assert_outcomes(passed=1)
    assert summary(result) == [
        "toolreplay cassettes: 0 replayed, 1 recorded"
        " (record mode new_episodes: --toolreplay-record-mode=new_episodes)"
    ]
    assert live_calls(project) == [{"query": "pytest", "limit": 2}, {"query": "agents", "limit": 1}]
    after = cassette.read_text()
    assert after.startswith(before)  # the old links, byte for byte; the old head is a prefix
    assert "links: 2\n" in verify(cassette)
    # and the appended cassette now replays both calls in mode none
    (project.path / "offline").touch()
    project.runpytest("--toolreplay-record-mode=none").assert_outcomes(passed=1)


def test_all_records_anew(project: pytest.Pytester) -> None:
    """`all` runs every call again and replaces the cassette (and its lock) with the new recording."""
    project.makepyfile(test_agent=agent())
    project.runpytest().assert_outcomes(passed=1)
    project.makepyfile(test_agent=agent(limit=10, calls='toolreplay.call("search", query="new")'))
    project.runpytest("--toolreplay-record-mode=all").assert_outcomes(passed=1)
    records = [link.record for link in read_links(str(project.path / CASSETTE))]
    assert [(r.tool, r.args) for r in records] == [("search", {"query": "new"})]
    assert len(records[0].response["hits"]) == 10
    lock = json.loads((project.path / LOCK).read_text())
    assert lock["tools"]["search"]["fingerprint"] == records[0].fingerprint


def test_a_failing_test_saves_no_cassette(project: pytest.Pytester) -> None:
    """The calls of a test that failed are no baseline: nothing is written, and the summary says so."""
    project.makepyfile(test_agent=agent(calls=FIRST + "\n    assert False, 'the agent got it wrong'"))
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    assert summary(result) == [
        "toolreplay cassettes: 0 replayed, 0 recorded, 1 not saved (their tests failed)"
        " (record mode once: the default)"
    ]
    assert not (project.path / "tests").exists()


def test_parametrised_cases_get_one_cassette_each_with_safe_names(project: pytest.Pytester) -> None:
    """Each case id has its own cassette; characters a file name cannot hold are %-escaped, never merged."""
    project.makepyfile(
        test_echo="""
        import pytest

        @pytest.mark.parametrize("text", ["plain", "a/b", "a%2Fb", "x y:z"])
        def test_echo(toolreplay, text):
            @toolreplay.tool(version="1")
            def echo(text: str) -> str:
                return text
            assert echo(text) == {"result": text}

        class TestEcho:
            def test_method(self, toolreplay):
                def size(text: str) -> int:
                    return len(text)
                toolreplay.register(size)
                assert toolreplay.call("size", text="abc") == {"result": 3}
        """
    )
    project.runpytest().assert_outcomes(passed=5)
    folder = project.path / "tests/cassettes/test_echo"
    assert sorted(p.name for p in folder.glob("*.sealed.jsonl")) == [
        "TestEcho.test_method.sealed.jsonl",
        "test_echo[a%252Fb].sealed.jsonl",
        "test_echo[a%2Fb].sealed.jsonl",
        "test_echo[plain].sealed.jsonl",
        "test_echo[x%20y%3Az].sealed.jsonl",
    ]
    (link,) = list(read_links(str(folder / "test_echo[a%2Fb].sealed.jsonl")))
    assert link.record.args == {"text": "a/b"}
    result = project.runpytest("--toolreplay-record-mode=none")
    result.assert_outcomes(passed=5)
    assert summary(result) == [
        "toolreplay cassettes: 5 replayed, 0 recorded (record mode none: --toolreplay-record-mode=none)"
    ]


def test_marker_names_the_cassette_and_applies_the_fixture(project: pytest.Pytester) -> None:
    """`@pytest.mark.toolreplay(path)` binds a test to that cassette, even without naming the fixture."""
    project.makepyfile(
        test_marked="""
        import pytest

        @pytest.fixture
        def agent(toolreplay):
            @toolreplay.tool(version="1")
            def add(a: int, b: int) -> int:
                return a + b
            return add

        @pytest.mark.toolreplay("recordings/add.sealed.jsonl")
        def test_add(agent):
            assert agent(1, 2) == {"result": 3}

        @pytest.mark.toolreplay("recordings/add.sealed.jsonl")
        def test_add_again(request):
            assert request.node.funcargs["toolreplay"].cassette.endswith("add.sealed.jsonl")
        """
    )
    project.runpytest("-k", "test_add and not again").assert_outcomes(passed=1)
    (link,) = list(read_links(str(project.path / "recordings/add.sealed.jsonl")))
    assert link.record.args == {"a": 1, "b": 2}
    both = project.runpytest("--strict-markers")
    both.assert_outcomes(passed=2)
    assert summary(both) == ["toolreplay cassettes: 2 replayed, 0 recorded (record mode once: the default)"]


def test_cassette_dir_ini_option_moves_the_cassettes(project: pytest.Pytester) -> None:
    """`toolreplay_cassette_dir` (relative to the rootdir) replaces tests/cassettes."""
    project.makeini("[pytest]\naddopts = -p no:cacheprovider\ntoolreplay_cassette_dir = recordings/tools\n")
    project.makepyfile(test_agent=agent())
    project.runpytest().assert_outcomes(passed=1)
    assert (project.path / "recordings/tools/test_agent/test_search.sealed.jsonl").exists()
    assert not (project.path / "tests").exists()


def test_marker_refuses_a_path_that_is_not_a_sealed_transcript(project: pytest.Pytester) -> None:
    """A marker path without the sealed suffix is a usage error naming the test, not an unsealed file."""
    project.makepyfile(
        test_bad="""
        import pytest

        @pytest.mark.toolreplay("recordings/add.jsonl")
        def test_add(toolreplay):
            pass
        """
    )
    result = project.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*test_bad.py::test_add: a cassette is a sealed transcript: its name must end in .sealed.jsonl*"]
    )


@pytest.mark.parametrize("given", ["../outside.sealed.jsonl", "recordings/../../outside.sealed.jsonl"])
def test_marker_refuses_a_path_outside_the_rootdir(project: pytest.Pytester, given: str) -> None:
    """A relative marker path that climbs out of the rootdir is a usage error; nothing is written there."""
    project.makepyfile(
        test_out=f"""
        import pytest

        @pytest.mark.toolreplay({given!r})
        def test_add(toolreplay):
            toolreplay.register(lambda: 1, name="one")
            toolreplay.call("one")
        """
    )
    result = project.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [f"*test_out.py::test_add: a relative cassette path stays inside the rootdir, not {given!r}*"]
    )
    assert not (project.path.parent / "outside.sealed.jsonl").exists()


def test_cassette_dir_ini_option_refuses_a_folder_outside_the_rootdir(project: pytest.Pytester) -> None:
    """A relative toolreplay_cassette_dir climbing out of the rootdir is a usage error; nothing is written."""
    project.makeini("[pytest]\naddopts = -p no:cacheprovider\ntoolreplay_cassette_dir = ../outside\n")
    project.makepyfile(test_agent=agent())
    result = project.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*::test_search: a relative toolreplay_cassette_dir stays inside the rootdir, not '../outside'*"]
    )
    assert not (project.path.parent / "outside").exists()


def test_a_broken_cassette_fails_the_test_in_one_line(project: pytest.Pytester) -> None:
    """A cassette that is not a sealed transcript fails its test with the file, line and problem."""
    project.makepyfile(test_agent=agent())
    cassette = project.path / CASSETTE
    cassette.parent.mkdir(parents=True)
    cassette.write_text('{"index": 0}\n')
    result = project.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"toolreplay: {cassette}:1: *"])
    assert live_calls(project) == []


def test_a_tampered_cassette_is_never_served(project: pytest.Pytester) -> None:
    """An edited response in a recorded cassette fails the test at its seal; the tool is not run."""
    project.makepyfile(test_agent=agent())
    project.runpytest().assert_outcomes(passed=1)
    cassette = project.path / CASSETTE
    cassette.write_bytes(cassette.read_bytes().replace(b'"pytest-0"', b'"pytest-9"'))
    (project.path / "live.log").unlink()
    (project.path / "offline").touch()
    result = project.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*{cassette}*index 0*"])
    assert live_calls(project) == []


def test_sessions_that_do_not_use_it_see_nothing(project: pytest.Pytester) -> None:
    """Inert: a session without the fixture prints no toolreplay line and writes no file."""
    project.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = project.runpytest("--strict-markers")
    result.assert_outcomes(passed=1)
    # pytest's own header lists the installed plugins; nothing else may mention toolreplay
    mentions = [line for line in result.outlines if "toolreplay" in line]
    assert [line for line in mentions if not line.startswith("plugins:")] == []
    assert sorted(p.name for p in project.path.iterdir()) == ["test_plain.py", "tox.ini"]


@pytest.mark.slow
def test_xdist_workers_never_collide(project: pytest.Pytester) -> None:
    """Under pytest-xdist every case writes its own whole cassette, and the summary counts all workers."""
    pytest.importorskip("xdist")
    project.makepyfile(
        test_many="""
        import pytest

        @pytest.mark.parametrize("n", range(8))
        def test_square(toolreplay, n):
            @toolreplay.tool(version="1")
            def square(x: int) -> int:
                return x * x
            for _ in range(3):
                assert square(n) == {"result": n * n}
        """
    )
    first = project.runpytest_subprocess("-n", "2")
    first.assert_outcomes(passed=8)
    assert summary(first) == ["toolreplay cassettes: 0 replayed, 8 recorded (record mode once: the default)"]
    folder = project.path / "tests/cassettes/test_many"
    cassettes = sorted(folder.glob("*.sealed.jsonl"))
    assert len(cassettes) == 8
    for cassette in cassettes:
        assert "links: 3\n" in verify(cassette)
    assert not list(folder.glob(".toolreplay-*"))  # no temp file left behind
    second = project.runpytest_subprocess("-n", "2", "--toolreplay-record-mode=none")
    second.assert_outcomes(passed=8)
    assert summary(second) == [
        "toolreplay cassettes: 8 replayed, 0 recorded (record mode none: --toolreplay-record-mode=none)"
    ]


def test_docs_example_records_then_replays_in_ci(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/pytest.md's complete example records locally and replays in CI with the tool unreachable."""
    from tests.conftest import ROOT

    text = (ROOT / "docs" / "pytest.md").read_text(encoding="utf-8")
    start = text.index("```python\n# tests/test_weather_agent.py\n") + len("```python\n")
    example = text[start : text.index("```", start)]
    (project.path / "tests").mkdir()
    (project.path / "tests/test_weather_agent.py").write_text(textwrap.dedent(example))
    first = project.runpytest()
    first.assert_outcomes(passed=3)
    assert summary(first) == ["toolreplay cassettes: 0 replayed, 3 recorded (record mode once: the default)"]
    folder = project.path / "tests/cassettes/test_weather_agent"
    block = text.index("```text\ntests/cassettes/")
    listed = re.findall(r"^tests/cassettes/\S+$", text[block : text.index("```\n", block + 3)], re.M)
    assert sorted(str(p.relative_to(project.path)) for p in folder.iterdir()) == sorted(listed)
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("WEATHER_API_DOWN", "1")  # the example's tool raises when it would go live
    result = project.runpytest()
    result.assert_outcomes(passed=3)
    assert summary(result) == ["toolreplay cassettes: 3 replayed, 0 recorded (record mode none: CI is set)"]
    for cassette in folder.glob("*.sealed.jsonl"):
        verify(cassette)
    # the drift the page quotes
    changed = example.replace('"maximum": 7', '"maximum": 5')
    assert changed != example
    (project.path / "tests/test_weather_agent.py").write_text(textwrap.dedent(changed))
    drifted = project.runpytest()
    drifted.assert_outcomes(passed=1, failed=2)
    drifted.stdout.fnmatch_lines(["E * get_forecast: schema (breaking): /properties/days/maximum 7 -> 5"])


def test_cassettes_are_baselines_for_the_guard_and_check(project: pytest.Pytester) -> None:
    """A recorded or re-recorded cassette needs a drift note to commit, and `check` verifies cassettes."""
    from tests.gitrepo import Repo, git_env

    def toolreplay(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "toolreplay", *args],
            cwd=project.path,
            env=git_env(),
            capture_output=True,
            text=True,
            check=False,
        )

    repo = Repo.create(project.path)
    project.makepyfile(test_agent=agent())
    project.makepyprojecttoml('[tool.toolreplay]\nbaselines = ["tests/cassettes/**/*.sealed.jsonl"]\n')
    project.runpytest().assert_outcomes(passed=1)
    repo.git("add", "-A")
    refused = toolreplay("hook", "drift-note")
    assert refused.returncode == 1
    assert f"baseline '{CASSETTE}' (added)" in refused.stdout
    made = toolreplay("note", CASSETTE, "-o", "drift-notes/search.md")
    assert made.returncode == 0, made.stderr
    note = project.path / "drift-notes/search.md"
    note.write_text(note.read_text() + "\nFirst recording of the search agent's test.\n")
    repo.git("add", "-A")
    accepted = toolreplay("hook", "drift-note")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    repo.git("commit", "-q", "--no-verify", "-m", "record")

    checked = toolreplay("check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("chain: intact\nlinks: 1\n")
    assert checked.stdout.endswith("total: 1 reports, 0 findings, 0 failing, 0 unreadable\n")

    project.makepyfile(test_agent=agent(max_length=200))
    project.runpytest("--toolreplay-record-mode=all").assert_outcomes(passed=1)
    repo.git("add", "-A")
    again = toolreplay("hook", "drift-note")
    assert again.returncode == 1
    assert f"baseline '{CASSETTE}' (modified)" in again.stdout


@pytest.mark.parametrize("fixture", ["toolreplay", "toolreplay_mcp"])
def test_a_configuration_that_cannot_be_read_fails_in_one_line(
    project: pytest.Pytester, fixture: str
) -> None:
    """The project's configuration is read when a test asks for a fixture: one that cannot be read
    fails that test with one line naming the file and the problem, never a traceback."""
    project.makefile(".toml", toolreplay="volatile = 3\n")
    project.makepyfile(test_agent=f"def test_one({fixture}):\n    pass\n")
    result = project.runpytest()
    result.assert_outcomes(errors=1)
    output = result.stdout.str()
    assert "toolreplay.toml: invalid configuration: 3 is not of type 'array' (at /volatile)" in output
    assert "Traceback" not in output and "InputError" not in output and "raise " not in output
