"""The ``toolreplay`` command group, its error boundary and what every command module shares.

Exit codes: 0 clean, 1 findings (or a broken chain), 2 usage error, 3 internal error.
This module is the only place that knows about them.

Start-up is paid by every pre-commit hook and CI step, so this module imports only click
and a few small modules of ours: a command's module (and whatever it needs: jsonschema,
PyGithub, the MCP SDK ...) is imported when that command runs, or when ``--help`` lists
every command (``COMMANDS``).
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import stat
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from importlib import import_module
from typing import IO, TYPE_CHECKING, Any, cast

import click

from toolreplay.errors import InputError, ToolreplayError
from toolreplay.outputs import STDOUT, NamedOutput, is_write_error, write_error

if TYPE_CHECKING:
    from toolreplay.report import Report

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class Seconds(click.FloatRange):
    """A positive, finite number of seconds: click's float range lets inf and nan through, and
    a deadline of nan fails deep in asyncio. (A huge finite number is taken as given.)"""

    def __init__(self) -> None:
        super().__init__(min=0, min_open=True)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        seconds = super().convert(value, param, ctx)
        if not math.isfinite(seconds):
            self.fail(f"{value!r} is not a finite number of seconds.", param, ctx)
        return seconds


#: every command, and the module under ``toolreplay.cli`` that registers it on :data:`cli`
#: (``toolreplay.cli`` itself stays small: this is the one list of them)
COMMANDS: dict[str, str] = {
    "action": "action",
    "check": "check",
    "diff": "baselines",
    "fingerprint": "contracts",
    "fingerprint-diff": "contracts",
    "hook": "hooks",
    "import": "importers",
    "keygen": "baselines",
    "merge": "check",
    "note": "baselines",
    "probe": "capture",
    "record": "capture",
    "replay": "core",
    "scope": "scope",
    "seal": "core",
    "serve": "capture",
    "sign": "baselines",
    "validate": "validate",
    "verify": "core",
}


def _drop_stdout() -> None:
    """Point stdout at /dev/null once writing to it failed, so the interpreter's final
    flush of what is left in its buffer does not fail again at exit."""
    with contextlib.suppress(OSError):
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115


class LazyGroup(click.Group):
    """A group whose commands are registered by modules imported on first use: ``lazy``
    maps each command's name to its module under ``toolreplay.cli``."""

    def __init__(self, *args: Any, lazy: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            from toolreplay.cli import loading

            with loading():
                import_module(f"toolreplay.cli.{self.lazy[cmd_name]}")  # registers it on this group
        return super().get_command(ctx, cmd_name)


class ToolreplayGroup(LazyGroup):
    """The error boundary: our errors become one line and exit 2, anything else exit 3."""

    def invoke(self, ctx: click.Context) -> Any:
        from toolreplay.limits import room_for_depth

        try:
            with room_for_depth():  # jsonschema walks a 128-deep value in more than 1000 frames
                return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except ToolreplayError as err:
            from toolreplay.escape import one_line

            if isinstance(err, InputError) and err.path == STDOUT:
                _drop_stdout()
            click.echo(f"toolreplay: error: {one_line(str(err))}", err=True)
            ctx.exit(EXIT_USAGE)
        except Exception as err:
            if ctx.find_root().params.get("traceback"):
                raise
            from toolreplay.escape import one_line

            if isinstance(err, OSError) and is_write_error(err):
                # every named output turns its own write errors into InputErrors: what is left
                # is a click.echo to stdout (a closed pipe: | head; a full disk: > file)
                _drop_stdout()
                click.echo(f"toolreplay: error: {write_error(err, STDOUT)}", err=True)
                ctx.exit(EXIT_USAGE)
            click.echo(
                f"toolreplay: internal error: {type(err).__name__}: {one_line(str(err))}"
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
    from toolreplay._version import __version__

    click.echo(f"toolreplay {__version__}")


def format_option(func: Callable[..., Any]) -> Callable[..., Any]:
    from toolreplay.report import RENDERERS

    return click.option(
        "--format",
        "fmt",
        type=click.Choice(sorted(RENDERERS)),
        default="text",
        show_default=True,
        help="Report format.",
    )(func)


def emit(reports: Sequence[Report], fmt: str) -> int:
    from toolreplay.report import RENDERERS

    click.echo(RENDERERS[fmt](reports), nl=False)
    return EXIT_FINDINGS if any(r.failed for r in reports) else EXIT_CLEAN


@contextlib.contextmanager
def _spooled(sink: Callable[[IO[str]], None], name: str) -> Iterator[IO[str]]:
    # Spool first so a refusal on a late line writes nothing rather than half the output.
    import tempfile

    with tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024, mode="w+", encoding="utf-8") as spool:
        # past 8 MiB the spool is a file in the temp folder, which can be full too
        yield cast(IO[str], NamedOutput(spool, f"{name} (spooled in {tempfile.gettempdir()})"))
        spool.seek(0)
        sink(spool)


def _to_stdout(spool: IO[str]) -> None:
    import shutil

    try:
        shutil.copyfileobj(spool, sys.stdout)
        sys.stdout.flush()
    except OSError as err:
        raise write_error(err, STDOUT) from err


#: what every ``-o`` says when its file exists and ``--force`` was not given
EXISTS = "already exists; not replacing it (--force replaces it)"


def force_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--force", is_flag=True, help="Replace the output file when it exists (by default: exit 2)."
    )(func)


@contextlib.contextmanager
def atomic_output(path: str | None, *, private: bool = False, replace: bool = False) -> Iterator[IO[str]]:
    """Write to ``path`` through a temp file renamed into place on success; stdout without one.

    An existing file is replaced only with ``replace`` (the user's ``--force``): otherwise
    it is an error before anything is written. A symlink is followed (the file it names
    is replaced, the link kept), as a shell redirection would; a FIFO or a device
    (``/dev/stdout``) is written into, once the content is complete. A new file gets the
    mode ``open()`` would give it, or 0600 when ``private``; a replaced file keeps its mode.
    """
    if path is None or path == "-":
        with _spooled(_to_stdout, STDOUT) as spool:
            yield spool
        return
    if not path:
        raise InputError("the output path is empty")
    target = os.path.realpath(path)
    if os.path.isdir(target):
        raise InputError("is a directory, not a file", path=path)
    if not replace and os.path.isfile(target):
        raise InputError(EXISTS, path=path)
    if os.path.exists(target) and not os.path.isfile(target):
        with _spooled(functools.partial(_into_special, target, path), path) as spool:
            yield spool
        return
    with _renamed_into_place(target, path, mode=_output_mode(target, private), replace=replace) as out:
        yield out


def _into_special(target: str, path: str, spool: IO[str]) -> None:
    """Copy the spooled output into a FIFO or a device."""
    import shutil

    try:
        with open(target, "w", encoding="utf-8", newline="\n") as out:
            shutil.copyfileobj(spool, out)
    except OSError as err:
        raise InputError(f"cannot write here: {err.strerror}", path=path) from err


def _output_mode(target: str, private: bool) -> int:
    """0600 when private; a replaced file's own mode; else the mode ``open()`` would give."""
    from toolreplay.files import new_file_mode

    if private:
        return 0o600
    if os.path.exists(target):
        return stat.S_IMODE(os.stat(target).st_mode)
    return new_file_mode()


@contextlib.contextmanager
def _renamed_into_place(target: str, path: str, *, mode: int, replace: bool) -> Iterator[IO[str]]:
    """A temp file beside ``target``, renamed onto it when the block ends without an error."""
    from toolreplay.files import place, temp_beside

    try:
        fd, tmp = temp_beside(os.path.dirname(target), mode=mode)
    except OSError as err:
        raise InputError(f"cannot write here: {err.strerror}", path=path) from err
    try:
        out = os.fdopen(fd, "w", encoding="utf-8", newline="\n")
        try:
            yield cast(IO[str], NamedOutput(out, path))
        except BaseException:
            with contextlib.suppress(OSError):
                out.close()
            raise
        try:
            out.close()  # flushes the last buffer: a full disk can show here
        except OSError as err:
            raise write_error(err, path) from err
        try:
            place(tmp, target, replace=replace)
        except FileExistsError as err:
            raise InputError(EXISTS, path=path) from err
        except OSError as err:
            raise InputError(f"cannot write here: {err.strerror}", path=path) from err
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
