"""Shared fixtures: paths to the shipped samples and a CLI runner."""

from __future__ import annotations

import compileall
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import settings

from tests.realservers import ROOT
from toolreplay.cli import cli

# Where PYTHONDONTWRITEBYTECODE is set, every worker would rewrite the test modules' assertions
# again (about 3 s of CPU each): while the tests are collected, their bytecode is kept, as it
# would be without that variable (the package's too: see pytest_configure).
_DONT_WRITE_BYTECODE = sys.dont_write_bytecode
sys.dont_write_bytecode = False

# Property tests run their full counts in CI (CI is set there) and a tenth of them on a
# developer's machine, so the README's test command stays quick; every property still runs.
FULL_PROPERTIES = bool(os.environ.get("CI"))
settings.register_profile("toolreplay", max_examples=100 if FULL_PROPERTIES else 25, deadline=None)
settings.load_profile("toolreplay")


#: The tiers the README's test command leaves out, each with the variable that brings it in;
#: CI (where ``CI`` is set) runs them all. ``slow``: seconds each (fresh venvs, inner pytest and
#: pre-commit runs, client-by-server matrices, the conformance suite); ``workflow``: the Action's
#: steps for real (under act, on another Python), a minute or more each.
TIERS = {"slow": "TOOLREPLAY_SLOW_TESTS", "workflow": "TOOLREPLAY_WORKFLOW_TESTS"}


def tier_runs(tier: str) -> bool:
    return bool(os.environ.get("CI") or os.environ.get(TIERS[tier]))


def pytest_configure(config: pytest.Config) -> None:
    """Before any worker starts: the package and the tests' scripts compiled, so the hundreds of
    processes the tests start (the CLI, the test servers) read bytecode rather than compiling
    their source each time (only what changed is compiled again)."""
    worker = hasattr(config, "workerinput")
    controller = not worker and bool(config.getoption("numprocesses", None))  # workers to come
    if not controller:
        # The MCP SDK's stdio_client takes sys.stderr as its errlog default when its module is
        # first imported. Imported here, in the process that runs tests, before any CliRunner
        # swaps sys.stderr for a buffer without a file descriptor, every test's SDK client logs
        # to the real stderr (otherwise a worker that first imported it under CliRunner fails
        # later SDK tests with "fileno"). An xdist controller runs none: it need not wait for it.
        import mcp.client.stdio  # noqa: F401
    if worker:
        return
    compileall.compile_dir(ROOT / "src" / "toolreplay", quiet=1)
    compileall.compile_dir(ROOT / "tests", quiet=1, rx=re.compile(r"node_modules"))


def pytest_collection_finish(session: pytest.Session) -> None:
    """The tests run as the environment says (a session a test runs writes no bytecode if so)."""
    sys.dont_write_bytecode = _DONT_WRITE_BYTECODE


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` is one worker per core and one more: many tests wait (for a server to answer,
    for a process's grace period), and the extra worker uses the core a waiting one leaves idle."""
    if config.option.numprocesses != "auto":
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cores + 1


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A tier that does not run here is deselected (unless ``-m`` chose the tests); on xdist
    workers the modules of slow tests start each worker's share."""
    if not config.option.markexpr:
        left_out = [tier for tier in TIERS if not tier_runs(tier)]
        deselected = [item for item in items if any(item.get_closest_marker(tier) for tier in left_out)]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = [item for item in items if item not in deselected]
    workers: int = getattr(config, "workerinput", {}).get("workercount", 1)
    if workers > 1:
        items[:] = slow_modules_first(items, workers)


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The header says which tiers this run leaves out, and how to bring each in."""
    if config.option.markexpr:
        return []
    return [
        f"{tier} tier left out: runs in CI, or with {TIERS[tier]}=1" for tier in TIERS if not tier_runs(tier)
    ]


def slow_modules_first(items: list[pytest.Item], workers: int) -> list[pytest.Item]:
    """The tests reordered so that each of the ``workers`` shares starts with modules of slow tests.

    ``--dist worksteal`` gives each worker an equal run of the collection, in order, and later
    moves tests from the end of a busy worker's run to an idle one: a slow test left near the
    end keeps one core busy while the others wait. Modules stay whole (and in collection order),
    so a module-scoped fixture is still made once per worker.
    """
    modules: dict[Path, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.path, []).append(item)
    heads: list[list[pytest.Item]] = [[] for _ in range(workers)]
    rest: list[pytest.Item] = []
    slow = 0
    for tests in modules.values():
        if any(test.get_closest_marker("slow") or test.get_closest_marker("workflow") for test in tests):
            heads[slow % workers] += tests
            slow += 1
        else:
            rest += tests
    ordered: list[pytest.Item] = []
    left = len(items)
    for index, head in enumerate(heads):
        share = left // (workers - index)  # the run worksteal hands this worker
        fill = max(0, share - len(head))
        ordered += head + rest[:fill]
        rest = rest[fill:]
        left -= share
    return ordered + rest


def examples(count: int) -> int:
    """A property test's example count: `count` in CI, a tenth of it (at least 25) elsewhere."""
    return count if FULL_PROPERTIES else max(25, count // 10)


SAMPLES = ROOT / "samples"

#: what a test's copy of this checkout leaves out: the environments, caches, builds and installs
NOT_COPIED = shutil.ignore_patterns(
    ".venv", ".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", "build", "dist",
    "*.egg-info", "node_modules",
)  # fmt: skip


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def invoke(
    runner: CliRunner, *args: str, cwd: Path | None = None, stdin: bytes | str | None = None
) -> tuple[int, str, str]:
    """Run ``toolreplay ARGS`` in-process (in ``cwd`` when given): exit code, stdout, stderr."""
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        result = runner.invoke(cli, list(args), input=stdin, catch_exceptions=False)
    finally:
        os.chdir(old)
    return result.exit_code, result.stdout, result.stderr


def isolate_git(monkeypatch: pytest.MonkeyPatch) -> None:
    """Give git run with the inherited environment a clean test identity and no outer repo."""
    from tests.gitrepo import GIT_LEAKS, git_env

    for key in GIT_LEAKS:
        monkeypatch.delenv(key, raising=False)
    for key, value in git_env().items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def git_isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands that run git with the inherited environment see a clean test identity and no outer repo."""
    isolate_git(monkeypatch)


@pytest.fixture(autouse=True)
def _no_github_links(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reports render without links to a commit unless a test sets GitHub's variables (CI sets them)."""
    for key in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_SHA"):
        monkeypatch.delenv(key, raising=False)
