"""Start-up stays cheap: every pre-commit hook and CI step pays it, so the commands that need
no JSON Schema, no GitHub, no MCP and no YAML do not import them (lazy command loading)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SAMPLES
from toolreplay.cli import cli
from toolreplay.cli.base import COMMANDS

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
    "toolreplay.driftnote",
    "toolreplay.hooks",
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


def loaded_heavy(*args: str, cwd: Path | None = None) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, ",".join(HEAVY), *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
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

    In a folder without a configuration: where there is one, the commands that take their
    defaults from it read it, and checking it against its schema loads jsonschema.
    """
    sample = str(next(Path(SAMPLES).glob("*.jsonl")).resolve())
    sealed = str(Path(sealed_sample()).resolve())
    argv = [sealed if a == "SEALED" else sample if a == "SAMPLE" else a for a in args]
    assert loaded_heavy(*argv, cwd=tmp_path) == []


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
