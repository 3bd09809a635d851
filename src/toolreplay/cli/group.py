"""The ``toolreplay`` command group: the table of its commands and the one error boundary.

Start-up is paid by every pre-commit hook and CI step, so this module imports only click and a
few small modules of ours: a command's module (and whatever it needs: jsonschema, PyGithub, the
MCP SDK ...) is imported when that command runs, or when ``--help`` lists every command
(``COMMANDS``).
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, NoReturn

import click

from toolreplay._version import __version__
from toolreplay.cli.base import EXIT_INTERNAL, EXIT_USAGE, LazyGroup
from toolreplay.errors import InputError, ToolreplayError
from toolreplay.escape import inert, one_line
from toolreplay.limits import raised_recursion_limit
from toolreplay.outputs import STDOUT, is_write_error, write_error

#: every command, as ``"module:attr"``: the click command it is (click's lazy group; this is the
#: one list of them, and no command module imports this one)
COMMANDS: dict[str, str] = {
    "accept": "toolreplay.cli.accept:accept_cmd",
    "action": "toolreplay.cli.action:action_cmd",
    "check": "toolreplay.cli.check:check_cmd",
    "diff": "toolreplay.cli.baselines:diff_cmd",
    "fingerprint": "toolreplay.cli.contracts:fingerprint_cmd",
    "fingerprint-diff": "toolreplay.cli.contracts:fingerprint_diff_cmd",
    "hook": "toolreplay.cli.hooks:hook",
    "import": "toolreplay.cli.importers:import_cmd",
    "keygen": "toolreplay.cli.baselines:keygen_cmd",
    "merge": "toolreplay.cli.check:merge_cmd",
    "note": "toolreplay.cli.baselines:note_cmd",
    "probe": "toolreplay.cli.capture:probe_cmd",
    "record": "toolreplay.cli.record:record_cmd",
    "render": "toolreplay.cli.render:render_cmd",
    "replay": "toolreplay.cli.replay:replay_cmd",
    "scope": "toolreplay.cli.scope:scope_cmd",
    "seal": "toolreplay.cli.core:seal_cmd",
    "serve": "toolreplay.cli.capture:serve_cmd",
    "sign": "toolreplay.cli.baselines:sign_cmd",
    "validate": "toolreplay.cli.validate:validate_cmd",
    "verify": "toolreplay.cli.core:verify_cmd",
}


def _drop_stdout() -> None:
    """Point stdout at /dev/null once writing to it failed, so the interpreter's final
    flush of what is left in its buffer does not fail again at exit."""
    with contextlib.suppress(OSError):
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115


class ToolreplayGroup(LazyGroup):
    """The error boundary: our errors become one line and exit 2, anything else exit 3."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with raised_recursion_limit():  # jsonschema walks a 128-deep value in more than 1000 frames
                return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except ToolreplayError as err:
            _usage_error(ctx, err)
        except Exception as err:
            if ctx.find_root().params.get("traceback"):
                raise
            _unexpected(ctx, err)


def _usage_error(ctx: click.Context, err: ToolreplayError) -> NoReturn:
    """One of our errors: one line, exit 2."""
    if isinstance(err, InputError) and err.path == STDOUT:
        _drop_stdout()
    click.echo(f"toolreplay: error: {inert(one_line(str(err)))}", err=True)
    ctx.exit(EXIT_USAGE)


def _unexpected(ctx: click.Context, err: Exception) -> NoReturn:
    """Anything else: a failing write to stdout is exit 2, the rest an internal error, exit 3."""
    if isinstance(err, OSError) and is_write_error(err):
        # every named output turns its own write errors into InputErrors: what is left
        # is a click.echo to stdout (a closed pipe: | head; a full disk: > file)
        _drop_stdout()
        click.echo(f"toolreplay: error: {write_error(err, STDOUT)}", err=True)
        ctx.exit(EXIT_USAGE)
    click.echo(
        f"toolreplay: internal error: {type(err).__name__}: {inert(one_line(str(err)))}"
        " (please report this; rerun with --traceback for details)",
        err=True,
    )
    ctx.exit(EXIT_INTERNAL)


@click.group(cls=ToolreplayGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    None,
    "-V",
    "--version",
    package_name="toolreplay",
    message="toolreplay %(version)s",
    help="Print the version.",
)
@click.option("--traceback", is_flag=True, hidden=True, help="Show the traceback of an internal error.")
def cli(traceback: bool) -> None:
    """Seal, verify, replay and scope-check recorded tool calls of AI agents."""


@cli.command()
def version() -> None:
    """Print the version."""
    click.echo(f"toolreplay {__version__}")
