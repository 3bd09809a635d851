"""The pytest plugin: the ``toolreplay`` fixture and marker, cassettes that are sealed baselines.

Registered through the ``pytest11`` entry point, so it loads in every pytest session of
every project that installs toolreplay. It must stay cheap and inert: this module imports
only pytest and the standard library; the registry, snapshots and chain code are
imported when a test first asks for the fixture, and a session that never uses it sees
no option other than ``--toolreplay-record-mode``, no marker other than
``toolreplay``, and no output.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from collections.abc import Generator, Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, NoReturn, TypeGuard

import pytest

from toolreplay.files import SEALED_SUFFIX

if TYPE_CHECKING:
    import pluggy

    from toolreplay.library.cassette import CassetteRegistry
    from toolreplay.library.mcp_cassette import McpCassettes

#: pytest-recording's names (the same tuple as toolreplay.library.cassette.RECORD_MODES)
RECORD_MODES = ("none", "once", "new_episodes", "all")
DEFAULT_CASSETTE_DIR = "tests/cassettes"
#: what happened to a test's cassette; the teardown report carries it (also across xdist)
OUTCOMES = ("replayed", "recorded", "unsaved")
_REPORT_ATTR = "toolreplay_cassette"
_OUTCOME = pytest.StashKey[list[str]]()
_CALL_PASSED = pytest.StashKey[bool]()
#: characters kept as they are in a cassette file name; everything else is %XX-escaped
_SAFE = re.compile(r"[A-Za-z0-9_.\-\[\]]")
_NAME_LIMIT = 120
#: the one opt-in to recording under CI: the environment the pytest process started with, which
#: nothing pytest reads or loads can set (see :func:`started_environment`)
RECORD_IN_CI = "TOOLREPLAY_RECORD_IN_CI"
#: (CI is set, the opt-in is given; None: where the start environment cannot be read)
Environment = tuple[bool, bool | None]
_ENVIRONMENT = pytest.StashKey[Environment]()
_WORKER_KEY = "toolreplay_environment"
#: Linux keeps the environment a process was started with here, apart from what it sets later
_PROC_ENVIRON = "/proc/self/environ"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("toolreplay", "toolreplay cassettes")
    group.addoption(
        "--toolreplay-record-mode",
        dest="toolreplay_record_mode",
        choices=RECORD_MODES,
        default=None,
        help=(
            "what the toolreplay fixture does with cassettes: none (replay only), once (record a"
            " missing cassette, else replay), new_episodes (replay, record and append the rest),"
            " all (record anew). Default: once, or none when the CI environment variable is set;"
            f" under CI only none, unless pytest was started with {RECORD_IN_CI}=1 in its environment."
        ),
    )
    parser.addini(
        "toolreplay_cassette_dir",
        help=f"folder of the toolreplay cassettes, relative to the rootdir (default {DEFAULT_CASSETTE_DIR})",
        default=DEFAULT_CASSETTE_DIR,
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "toolreplay(path=None): bind the test's toolreplay registry (or toolreplay_mcp's first server)"
        " to a cassette (a *.sealed.jsonl path relative to the rootdir; default: one per test)",
    )
    config.pluginmanager.register(_Summary(config), "toolreplay-summary")


def started_environment() -> Mapping[str, str] | None:
    """The environment this process was started with, which no code it runs can change: on
    Linux the kernel's copy (``/proc/self/environ``; ``os.environ`` and ``posix.environ`` are
    the one dictionary a plugin sets), on Windows the copy Python takes at start-up
    (``nt.environ``); None where there is none to read (macOS, the BSDs).

    pytest imports the ``-p`` plugins an ini file's ``addopts`` or ``PYTEST_ADDOPTS`` names
    before its entry-point plugins, this one included: whatever this plugin reads from
    ``os.environ`` a plugin of the repository under test may have set already.
    """
    if os.name == "nt":  # pragma: no cover - Windows
        return dict(sys.modules["nt"].environ)
    try:
        with open(_PROC_ENVIRON, "rb") as stream:
            raw = stream.read()
    except OSError:
        return None
    return _environ_of(raw)


def _environ_of(raw: bytes) -> dict[str, str]:
    """The variables of an environment block (``NAME=value`` entries, each ended by a NUL byte)."""
    pairs = (entry.partition(b"=") for entry in raw.split(b"\0") if entry)
    found: dict[str, str] = {}
    for key, _, value in pairs:  # the first of a name, as getenv takes it
        found.setdefault(os.fsdecode(key), os.fsdecode(value))
    return found


def _read_environment() -> Environment:
    started = started_environment()
    if started is None:  # CI as pytest found it; an opt-in nothing can vouch for is none
        return bool(os.environ.get("CI")), None
    return bool(started.get("CI")), started.get(RECORD_IN_CI) == "1"


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> Generator[None, None, None]:
    # a wrapper runs before every plain implementation, pytest-env's (tryfirst) included: where the
    # start environment cannot be read, CI is at least read before any conftest.py changes it
    early_config.stash[_ENVIRONMENT] = _read_environment()
    return (yield)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: object) -> None:
    # an xdist worker starts with the environment as the session changed it: it takes the session's view
    config: pytest.Config = node.config  # type: ignore[attr-defined]
    node.workerinput[_WORKER_KEY] = list(environment(config))  # type: ignore[attr-defined]


def environment(config: pytest.Config) -> Environment:
    """(CI is set, recording in CI is opted into) as the pytest process was started (the opt-in
    None where that cannot be read)."""
    given = getattr(config, "workerinput", {}).get(_WORKER_KEY)
    if given is not None:
        return bool(given[0]), None if given[1] is None else bool(given[1])
    if _ENVIRONMENT not in config.stash:  # pragma: no cover - a config pytest did not parse
        return _read_environment()
    return config.stash[_ENVIRONMENT]


def record_mode(config: pytest.Config) -> tuple[str, str]:
    """The record mode and why it is that one (for messages).

    Under CI a mode that records (any but ``none``) needs ``TOOLREPLAY_RECORD_IN_CI=1`` too:
    a ``UsageError`` says so rather than record, or replay instead, silently.
    """
    given: str | None = config.getoption("toolreplay_record_mode")
    ci, opted_in = environment(config)
    if given is None:
        return ("none", "CI is set") if ci else ("once", "the default")
    why = f"--toolreplay-record-mode={given}"
    if not ci or given == "none":
        return given, why
    if not opted_in:
        where = (
            "nothing pytest reads or loads can give it"
            if opted_in is not None
            else "which toolreplay can read on Linux and Windows only"
        )
        raise pytest.UsageError(
            f"{why} records cassettes, and CI is set: recording in CI needs {RECORD_IN_CI}=1 in the"
            f" environment pytest was started with ({where})"
        )
    return given, f"{why}, CI is set and {RECORD_IN_CI}=1"


def safe_name(name: str) -> str:
    """``name`` as one file-name component that is the same on every OS.

    Letters, digits, ``_.-[]`` stay; every other character becomes ``%XX`` per UTF-8
    byte (``%`` too), so two different names never share a file. A name too long for a
    file system keeps its start and gets a hash of the whole.
    """
    out = "".join(
        ch if _SAFE.fullmatch(ch) else "".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
        for ch in name
    )
    if len(out) > _NAME_LIMIT:
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        out = f"{out[: _NAME_LIMIT - 17]}-{digest}"
    return out


def cassette_path(item: pytest.Item) -> Path:
    """The cassette of a test: the marker's path, else one file per test (and per parameter set).

    ``<rootdir>/<cassette dir>/<module path without a leading tests/>/<test name>.sealed.jsonl``,
    e.g. ``tests/cassettes/test_agent/test_search[python].sealed.jsonl``; a method's name is
    led by its class (``TestAgent.test_search``).
    """
    root = item.config.rootpath
    marker = item.get_closest_marker("toolreplay")
    if marker is not None and marker.args:
        return _marked_cassette(item, marker, root)
    if marker is not None and marker.kwargs:
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.toolreplay takes one cassette path")
    return _default_cassette(item, root)


def _marked_cassette(item: pytest.Item, marker: pytest.Mark, root: Path) -> Path:
    """The path ``@pytest.mark.toolreplay`` gives: a sealed transcript's name, not out of the rootdir."""
    if len(marker.args) > 1 or marker.kwargs:
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.toolreplay takes one cassette path")
    given = Path(os.fspath(marker.args[0]))
    if not given.name.endswith(SEALED_SUFFIX):
        raise pytest.UsageError(
            f"{item.nodeid}: a cassette is a sealed transcript: its name must end in {SEALED_SUFFIX}"
        )
    path = Path(os.path.normpath(root / given))
    if not given.is_absolute() and not path.is_relative_to(root):
        # a relative path climbing out of the rootdir is a slip: the cassette would live
        # outside the repository it is the baseline of (an absolute path says so openly)
        raise pytest.UsageError(
            f"{item.nodeid}: a relative cassette path stays inside the rootdir, not {str(given)!r}"
        )
    return path


def _module_parts(item: pytest.Item, root: Path) -> tuple[str, ...]:
    """The parts of a test's module path from the rootdir, without a leading ``tests``."""
    try:
        module = item.path.relative_to(root).with_suffix("").parts
    except ValueError:  # a test file outside the rootdir
        module = (item.path.stem,)
    if len(module) > 1 and module[0] == "tests":
        return module[1:]
    return module


def _default_cassette(item: pytest.Item, root: Path) -> Path:
    """One file per test under the cassette dir, named after its module, class and test."""
    module = _module_parts(item, root)
    names = [node.name for node in item.listchain() if isinstance(node, pytest.Class)]
    names.append(item.name)
    given_dir = str(item.config.getini("toolreplay_cassette_dir"))
    folder = Path(os.path.normpath(root / given_dir))
    if not Path(given_dir).is_absolute() and not folder.is_relative_to(root):
        raise pytest.UsageError(
            f"{item.nodeid}: a relative toolreplay_cassette_dir stays inside the rootdir, not {given_dir!r}"
        )
    return folder.joinpath(*map(safe_name, module), safe_name(".".join(names)) + SEALED_SUFFIX)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # a marked test gets the fixture even when it does not name it (like usefixtures); the
    # marker of a test that reaches its tools over MCP names toolreplay_mcp's cassette instead
    for item in items:
        if _marked_without_fixture(item):
            item.fixturenames.append("toolreplay")


def _marked_without_fixture(item: pytest.Item) -> TypeGuard[pytest.Function]:
    """A test marked ``toolreplay`` that takes neither of the plugin's cassette fixtures."""
    return (
        isinstance(item, pytest.Function)
        and "toolreplay" not in item.fixturenames
        and "toolreplay_mcp" not in item.fixturenames
        and item.get_closest_marker("toolreplay") is not None
    )


@pytest.fixture
def toolreplay(request: pytest.FixtureRequest) -> Iterator[CassetteRegistry]:
    """A ToolRegistry bound to this test's cassette (see ``--toolreplay-record-mode``)."""
    item = request.node
    path = cassette_path(item)
    mode, why = _test_mode(item)
    label = _label(item.config, path)
    registry = _fixtures().cassette(path, mode=mode, why=why, label=label, root=item.config.rootpath)
    if isinstance(registry, str):
        pytest.fail(f"toolreplay: {registry}", pytrace=False)
    yield registry
    _save_outcome(item, registry, mode)


def _save_outcome(item: pytest.Item, registry: CassetteRegistry, mode: str) -> None:
    """After the test: save what a passed test recorded, and note what became of the cassette."""
    outcomes = item.stash.setdefault(_OUTCOME, [])
    if registry.recording and registry.recorded:
        if item.stash.get(_CALL_PASSED, False):
            registry.save()
            outcomes.append("recorded")
        else:  # a failed test's calls are no baseline
            outcomes.append("unsaved")
    elif registry.existed and mode != "all":
        outcomes.append("replayed")


@pytest.fixture
def toolreplay_mcp(request: pytest.FixtureRequest) -> Iterator[McpCassettes]:
    """MCP servers bound to this test's cassettes: ``.stdio(command, args, env, cwd)`` gives the
    ``StdioServerParameters`` and ``.http(url)`` the URL the agent's client should use."""
    fixtures = _fixtures()
    item = request.node
    base = cassette_path(item)
    mode, why = _test_mode(item)
    # the toolreplay fixture, when the test also takes it, owns the test's own cassette
    shared = "toolreplay" in item.fixturenames

    def cassette_for(name: str | None) -> tuple[str, str]:
        path = base
        if name is not None or shared:
            stem = base.name.removesuffix(SEALED_SUFFIX)
            path = base.with_name(f"{stem}.{safe_name(name or 'mcp')}{SEALED_SUFFIX}")
        return str(path), _label(item.config, path)

    servers = fixtures.mcp_cassettes(cassette_for, mode=mode, why=why, fail=_fail, root=item.config.rootpath)
    try:
        yield servers
        outcomes, problem = servers.finish(item.stash.get(_CALL_PASSED, False))
        item.stash.setdefault(_OUTCOME, []).extend(outcomes)
        if problem is not None:
            if not fixtures.is_drift(problem):
                pytest.fail(f"toolreplay: {problem}", pytrace=False)
            raise problem.with_traceback(None)
    finally:
        servers.close()


def _fixtures() -> ModuleType:
    """What the fixtures do (:mod:`toolreplay.library.pytest_fixtures`): imported when a test
    first asks for one, so a session that never does pays nothing for it."""
    from toolreplay.library import pytest_fixtures

    return pytest_fixtures


def _fail(text: str) -> NoReturn:
    pytest.fail(text, pytrace=False)


def _test_mode(item: pytest.Item) -> tuple[str, str]:
    try:
        return record_mode(item.config)
    except pytest.UsageError as err:
        raise pytest.UsageError(f"{item.nodeid}: {err}") from None


def _label(config: pytest.Config, path: Path) -> str:
    """A cassette as messages name it: relative to the rootdir when it is inside."""
    try:
        return path.relative_to(config.rootpath).as_posix()
    except ValueError:
        return str(path)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pluggy.Result[pytest.TestReport], None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if report.when == "call":
        item.stash[_CALL_PASSED] = report.passed
    elif report.when == "teardown" and (outcomes := item.stash.get(_OUTCOME, None)):
        setattr(report, _REPORT_ATTR, list(outcomes))


class _Summary:
    """Counts the cassettes of one session and prints the summary line (only if any was used)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.counts = dict.fromkeys(OUTCOMES, 0)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # runs where the summary is printed: in the main process, also for xdist workers' reports
        outcomes = getattr(report, _REPORT_ATTR, None)
        for outcome in outcomes if isinstance(outcomes, list) else ():
            if outcome in self.counts:
                self.counts[outcome] += 1

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not any(self.counts.values()):
            return
        mode, why = record_mode(self.config)
        recorded = self.counts["recorded"]
        where = " in CI" if recorded and environment(self.config)[0] else ""
        line = f"toolreplay cassettes: {self.counts['replayed']} replayed, {recorded} recorded{where}"
        if self.counts["unsaved"]:
            line += f", {self.counts['unsaved']} not saved (their tests failed)"
        terminalreporter.write_line(f"{line} (record mode {mode}: {why})")
