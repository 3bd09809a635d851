"""What every command module shares: the exit codes, the lazy group, the report and output options.

Exit codes: 0 clean, 1 findings (or a broken chain), 2 usage error, 3 internal error.
This module and the error boundary (:mod:`toolreplay.cli.group`) are the only places that
know about them.

Start-up is paid by every pre-commit hook and CI step, so this module imports only click
and a few small modules of ours.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from typing import IO, Any, cast

import click

from toolreplay.cli.loading import loading
from toolreplay.errors import InputError
from toolreplay.escape import inert, one_line
from toolreplay.files import new_file_mode, place, temp_beside
from toolreplay.lazy import resolve
from toolreplay.outputs import STDOUT, NamedOutput, write_error

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


def warn(text: str) -> None:
    """One warning line on stderr (a newline or control character in ``text`` cannot break it, and
    what it quotes cannot start a GitHub workflow command)."""
    click.echo(f"toolreplay: warning: {inert(one_line(text))}", err=True)


def plural(n: int, word: str) -> str:
    """``n`` and ``word``, with an s unless ``n`` is 1."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


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


class LazyGroup(click.Group):
    """A group whose commands are imported on first use, as click's documentation shows: ``lazy``
    maps each command's name to ``"module:attr"``, the command object itself."""

    def __init__(self, *args: Any, lazy: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            with loading():
                command = resolve(self.lazy[cmd_name])
            if not isinstance(command, click.Command):  # pragma: no cover - a wrong table entry
                raise TypeError(f"{self.lazy[cmd_name]} is not a click command")
            return command
        return super().get_command(ctx, cmd_name)


@contextlib.contextmanager
def _spooled(sink: Callable[[IO[str]], None], name: str) -> Iterator[IO[str]]:
    # Spool first so a refusal on a late line writes nothing rather than half the output.
    with tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024, mode="w+", encoding="utf-8") as spool:
        # past 8 MiB the spool is a file in the temp folder, which can be full too
        yield cast(IO[str], NamedOutput(spool, f"{name} (spooled in {tempfile.gettempdir()})"))
        spool.seek(0)
        sink(spool)


def _to_stdout(spool: IO[str]) -> None:
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


def mutator_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--mutator``: the one declaration every command that judges state-changing calls takes."""
    return click.option(
        "--mutator",
        "mutators",
        multiple=True,
        metavar="TOOL",
        help="A tool that changes state (repeatable; replaces the config's mutators, else the default"
        " list; a tool lock's mutates wins).",
    )(func)


def allow_origin_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--allow-origin`` of ``record --listen`` and ``serve --listen`` (toolreplay.capture.listen)."""
    return click.option(
        "--allow-origin",
        "origins",
        multiple=True,
        metavar="ORIGIN",
        help="With --listen: also answer requests from this web origin (scheme://host[:port]) and"
        " to its host in Host; loopback ones are always answered (repeatable).",
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
    target = _target(path, replace=replace)
    if os.path.exists(target) and not os.path.isfile(target):
        with _spooled(functools.partial(_into_special, target, path), path) as spool:
            yield spool
        return
    with _renamed_into_place(target, path, mode=_output_mode(target, private), replace=replace) as out:
        yield out


def _target(path: str, *, replace: bool) -> str:
    """The file ``path`` names, symlinks followed; refused when it is no file to write (a folder)
    or one that exists without ``replace``."""
    if not path:
        raise InputError("the output path is empty")
    target = os.path.realpath(path)
    if os.path.isdir(target):
        raise InputError("is a directory, not a file", path=path)
    if not replace and os.path.isfile(target):
        raise InputError(EXISTS, path=path)
    return target


def _close_and_place(out: IO[str], tmp: str, target: str, path: str, *, replace: bool) -> None:
    """Close the temp file (its last buffer flushed: a full disk can show here) and rename it onto
    ``target``."""
    try:
        out.close()
    except OSError as err:
        raise write_error(err, path) from err
    place_output(tmp, target, replace=replace, path=path)


def place_output(temp: str, target: str, *, replace: bool, path: str | None = None) -> None:
    """Rename the finished temp file onto ``target``; an existing target (without ``replace``) or
    a failed rename is an ``InputError`` naming ``path`` (default: ``target``)."""
    shown = target if path is None else path
    try:
        place(temp, target, replace=replace)
    except FileExistsError as err:
        raise InputError(EXISTS, path=shown) from err
    except OSError as err:
        raise InputError(f"cannot write here: {err.strerror}", path=shown) from err


def _into_special(target: str, path: str, spool: IO[str]) -> None:
    """Copy the spooled output into a FIFO or a device."""
    try:
        with open(target, "w", encoding="utf-8", newline="\n") as out:
            shutil.copyfileobj(spool, out)
    except OSError as err:
        raise InputError(f"cannot write here: {err.strerror}", path=path) from err


def _output_mode(target: str, private: bool) -> int:
    """0600 when private; a replaced file's own mode; else the mode ``open()`` would give."""

    if private:
        return 0o600
    if os.path.exists(target):
        return stat.S_IMODE(os.stat(target).st_mode)
    return new_file_mode()


@contextlib.contextmanager
def _renamed_into_place(target: str, path: str, *, mode: int, replace: bool) -> Iterator[IO[str]]:
    """A temp file beside ``target``, renamed onto it when the block ends without an error."""

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
        _close_and_place(out, tmp, target, path, replace=replace)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
