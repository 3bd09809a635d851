"""Start-up stays cheap: every pre-commit hook and CI step pays it, so the commands that need
no JSON Schema, no GitHub, no MCP and no YAML do not import them (lazy command loading), and
verify and the pre-commit hooks' commands import only what their own path needs
(bench/startup.py measures what that buys)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SAMPLES
from tests.gitrepo import Repo, git_env
from toolreplay.cli import cli
from toolreplay.cli.group import COMMANDS

#: modules (and packages) a light command must not load; a prefix covers the submodules
HEAVY = (
    "jsonschema",
    "referencing",
    "regress",
    "github",  # PyGithub
    "mcp",
    "yaml",
    "cryptography",
    "concurrent.futures",
    "multiprocessing",
    "importlib.metadata",
    "toolreplay.validate",
    "toolreplay.ecma",
    "toolreplay.check",
    "toolreplay.driftnotes",
    "toolreplay.github",  # the Action's side; the text report escapes through toolreplay.escape
    "toolreplay.report.markdown",  # renderers load on demand: a command prints one format
    "toolreplay.report.sarif",
    "toolreplay.capture",
    "toolreplay.importers",
    "toolreplay.contracts",
    "toolreplay.analyses.scope",
    "toolreplay.analyses.baseline",
)

# run one command in a fresh interpreter, then print which of HEAVY it loaded
PROBE = """
import sys
from toolreplay.cli import cli
try:
    cli.main(args=sys.argv[2:], prog_name="toolreplay")
except SystemExit:
    pass
heavy = sys.argv[1].split(",")
loaded = sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy))
print("@@" + ",".join(loaded), file=sys.stderr)
"""


def loaded_heavy(
    *args: str, cwd: Path | None = None, watch: tuple[str, ...] = HEAVY, env: dict[str, str] | None = None
) -> list[str]:
    """Which modules of ``watch`` (a prefix covers the submodules) one command loads."""
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, ",".join(watch), *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env=env,
    )
    marker = [line for line in proc.stderr.splitlines() if line.startswith("@@")]
    assert marker, proc.stderr
    assert proc.returncode == 0, proc.stderr
    found = marker[0][2:]
    return found.split(",") if found else []


def sealed_sample() -> str:
    return str(next(Path(SAMPLES, "baselines").glob("*.sealed.jsonl")))


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("version",), id="version"),
        pytest.param(("verify", "SEALED"), id="verify"),
        pytest.param(("hook", "verify", "SEALED"), id="hook-verify"),
        pytest.param(("seal", "SAMPLE"), id="seal"),
        pytest.param(("replay", "SAMPLE"), id="replay"),
    ],
)
def test_light_commands_import_nothing_heavy(args: tuple[str, ...], tmp_path: Path) -> None:
    """version, verify, hook verify, seal and replay on small files run without importing
    jsonschema, PyGithub, the MCP SDK, YAML, a process pool or the other commands' modules.

    In a folder without a configuration (see the next test for one with).
    """
    sample = str(next(Path(SAMPLES).glob("*.jsonl")).resolve())
    sealed = str(Path(sealed_sample()).resolve())
    argv = [sealed if a == "SEALED" else sample if a == "SAMPLE" else a for a in args]
    assert loaded_heavy(*argv, cwd=tmp_path) == []


def test_a_plain_configuration_is_read_without_jsonschema(tmp_path: Path) -> None:
    """replay in a configured folder reads the configuration (its mutators are replay's
    defaults) and takes it without the schema when it is plainly valid (config.plainly_valid)."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.toolreplay]\ntranscripts = ["*.jsonl"]\nmutators = ["write_file"]\nstate_aware = true\n'
    )
    sample = str(next(Path(SAMPLES).glob("*.jsonl")).resolve())
    assert loaded_heavy("replay", sample, cwd=tmp_path) == []


def test_every_command_is_registered_where_the_lazy_table_says() -> None:
    """Each name in the lazy table loads a command of that name, and the top-level help lists
    exactly those commands plus version: a command added to a module but not to the table
    (or the reverse) fails here."""
    from click.testing import CliRunner

    ctx = cli.make_context("toolreplay", ["--help"], resilient_parsing=True)
    names = cli.list_commands(ctx)
    assert names == sorted({*COMMANDS, "version"})
    for name in names:
        command = cli.get_command(ctx, name)
        assert command is not None and command.name == name
    result = CliRunner().invoke(cli, ["hook", "--help"], catch_exceptions=False)
    assert result.exit_code == 0
    assert "drift-note" in result.output and "verify" in result.output


#: what reading a configuration costs (tomllib, pathlib and the loader), and replay's analysis:
#: verify SEALED judges no calls and reads no configuration
CONFIG_AND_REPLAY = ("toolreplay.config", "tomllib", "pathlib", "toolreplay.analyses.replay")

#: hook verify prints one line a file: no report, no findings (their values are dataclasses, a
#: millisecond each to build), no parallel path, none of the commands' modules
HOOK_VERIFY_SKIPS = (
    *CONFIG_AND_REPLAY,
    "toolreplay.report",
    "toolreplay.findings",
    "toolreplay.analyses",
    "toolreplay.parallel",
    "toolreplay.cli.core",
    "toolreplay.cli.defaults",
)


def test_verify_reads_no_config_and_judges_no_calls(tmp_path: Path) -> None:
    """verify SEALED loads neither the config loader (tomllib, pathlib) nor replay's analysis."""
    sealed = str(Path(sealed_sample()).resolve())
    assert loaded_heavy("verify", sealed, cwd=tmp_path, watch=(*HEAVY, *CONFIG_AND_REPLAY)) == []


def test_hook_verify_loads_only_the_chain(tmp_path: Path) -> None:
    """hook verify loads the chain and what prints a line, nothing of the report or the findings."""
    sealed = str(Path(sealed_sample()).resolve())
    args = ("hook", "verify", sealed)
    assert loaded_heavy(*args, cwd=tmp_path, watch=(*HEAVY, *HOOK_VERIFY_SKIPS)) == []


def test_drift_note_hook_without_notes_loads_no_yaml(tmp_path: Path) -> None:
    """The guard on a commit that stages no drift note (most commits) parses no YAML and checks
    no schema: the note reader, PyYAML and jsonschema stay unloaded."""
    repo = Repo.create(tmp_path / "repo")
    repo.write("README.md", "one\n")
    repo.git("add", "README.md")
    repo.git("commit", "-q", "-m", "one")
    repo.write("README.md", "two\n")
    repo.git("add", "README.md")
    assert loaded_heavy("hook", "drift-note", cwd=repo.path, watch=DRIFT_NOTE_SKIPS, env=git_env()) == []
    # with a configuration staged: tomllib and pathlib to read it, still no schema, no decoder
    repo.write("pyproject.toml", '[tool.toolreplay]\nbaselines = ["baselines/*.sealed.jsonl"]\n')
    repo.git("add", "pyproject.toml")
    watch = tuple(m for m in DRIFT_NOTE_SKIPS if m not in ("tomllib", "pathlib"))
    assert loaded_heavy("hook", "drift-note", cwd=repo.path, watch=watch, env=git_env()) == []


def test_drift_note_hook_reads_a_fail_on_without_the_findings(tmp_path: Path) -> None:
    """A staged configuration with a fail_on list is read (and its kinds checked) without the
    findings' module, the schema or the chain's reader: the kind vocabulary is light."""
    repo = Repo.create(tmp_path / "repo")
    repo.write("README.md", "one\n")
    repo.git("add", "README.md")
    repo.git("commit", "-q", "-m", "one")
    repo.write("toolreplay.toml", 'baselines = ["b/*.sealed.jsonl"]\nfail_on = ["all", "-redundant-call"]\n')
    repo.git("add", "toolreplay.toml")
    watch = tuple(m for m in DRIFT_NOTE_SKIPS if m not in ("tomllib", "pathlib"))
    assert loaded_heavy("hook", "drift-note", cwd=repo.path, watch=watch, env=git_env()) == []


#: the guard on a commit that changes no sealed file reads no chain (no decoder, no hashing)
#: and, where no configuration is staged, neither TOML nor pathlib
DRIFT_NOTE_SKIPS = (
    "yaml",
    "toolreplay.driftnotes.note",
    "toolreplay.schemas",
    "jsonschema",
    "referencing",
    "regress",
    "orjson",
    "toolreplay.chain",
    "toolreplay.canonical",
    "toolreplay.transcript",
    "toolreplay.findings",
    "tomllib",
    "pathlib",
)


def test_validate_a_transcript_loads_no_yaml(tmp_path: Path) -> None:
    """validate (the toolreplay-validate hook) on valid transcripts and sealed files leaves YAML
    to the drift notes, and jsonschema to a line the reader's own field checks refuse."""
    sample = str(next(Path(SAMPLES).glob("*.jsonl")).resolve())
    watch = ("yaml", "toolreplay.driftnotes.note", "jsonschema", "referencing", "regress", "toolreplay.ecma")
    assert loaded_heavy("validate", sample, cwd=tmp_path, watch=watch) == []
    assert loaded_heavy("validate", str(Path(sealed_sample()).resolve()), cwd=tmp_path, watch=watch) == []
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"index": 0, "tool": "", "args": {}, "response": {}}\n')
    assert "jsonschema" in loaded_heavy("validate", str(bad), cwd=tmp_path, watch=watch)


# a fresh interpreter: import the CLI, then report the collector's state
COLLECTOR = """
import gc, sys
if sys.argv[1] == "off":
    gc.disable()
import toolreplay.cli
print(gc.isenabled(), gc.get_freeze_count() > 0)
"""


@pytest.mark.parametrize(("before", "after"), [("on", "True True"), ("off", "False True")])
def test_imports_leave_the_collector_as_they_found_it(before: str, after: str) -> None:
    """Start-up imports run with the cyclic collector off and are frozen out of its way after
    (toolreplay.cli.loading); the collector is then on again, unless it was off before: a
    command on a large file runs with it as usual."""
    proc = subprocess.run(
        [sys.executable, "-c", COLLECTOR, before], capture_output=True, text=True, check=True
    )
    assert proc.stdout.strip() == after


@pytest.mark.skipif(sys.platform == "win32", reason="a shell script stands in for git")
def test_drift_note_hook_runs_git_twice_on_the_usual_commit(tmp_path: Path) -> None:
    """Each git run costs the hook about 2 ms of every commit: on a commit that changes no
    baseline it lists the staged configurations and the staged change, and asks for the
    work tree's root only once a configuration is staged (to read it)."""
    import shutil

    real = shutil.which("git")
    assert real is not None
    shims = tmp_path / "bin"
    shims.mkdir()
    log = tmp_path / "git.log"
    (shims / "git").write_text(f'#!/bin/sh\necho "$1" >> {log}\nexec {real} "$@"\n')
    (shims / "git").chmod(0o755)
    repo = Repo.create(tmp_path / "repo")
    repo.write("README.md", "one\n")
    repo.git("add", "README.md")
    env = git_env({"PATH": f"{shims}{os.pathsep}{os.environ['PATH']}"})

    def runs() -> list[str]:
        log.unlink(missing_ok=True)
        proc = subprocess.run(
            [sys.executable, "-m", "toolreplay", "hook", "drift-note"],
            cwd=repo.path,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return log.read_text().split()

    assert runs() == ["ls-files", "diff"]
    repo.write("pyproject.toml", '[tool.toolreplay]\nbaselines = ["baselines/*.sealed.jsonl"]\n')
    repo.git("add", "pyproject.toml")
    assert runs() == ["ls-files", "cat-file", "rev-parse", "diff"]
