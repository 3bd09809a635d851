"""``toolreplay import``: traces teams already have, as transcripts (docs/importers.md)."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

import click

from toolreplay.cli.base import EXISTS, EXIT_USAGE, cli, force_option
from toolreplay.errors import InputError
from toolreplay.files import place, temp_beside
from toolreplay.findings import one_line
from toolreplay.importers import FORMATS, Session, import_stream
from toolreplay.transcript import open_input, record_line


@dataclass(slots=True)
class _Tally:
    sessions: int = 0
    calls: int = 0
    missing_results: int = 0
    orphan_results: int = 0
    invalid_arguments: int = 0
    missing_arguments: int = 0

    def add(self, session: Session) -> None:
        self.sessions += 1
        self.calls += len(session.records)
        self.missing_results += session.missing_results
        self.orphan_results += session.orphan_results
        self.invalid_arguments += session.invalid_arguments
        self.missing_arguments += session.missing_arguments

    def line(self, path: str, fmt: str, detected: bool) -> str:
        chose = f"{fmt} (detected)" if detected else fmt
        parts = [
            _count(self.sessions, "session"),
            _count(self.calls, "call"),
            f"{self.missing_results} without a result",
            f"{_count(self.orphan_results, 'result')} without a call",
            f"{self.invalid_arguments} with arguments not valid JSON",
            f"{self.missing_arguments} without arguments",
        ]
        return f"{one_line(path)}: {chose}: " + ", ".join(parts)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def stem_of(path: str) -> str:
    """The name an input's transcripts are named after: its file name without the extension."""
    if path == "-":
        return "stdin"
    name = os.path.basename(os.path.normpath(path))
    stem, _ = os.path.splitext(name)
    return stem or name


def session_names(stem: str, count: int) -> list[str]:
    """``STEM.jsonl`` for one session; ``STEM-0000.jsonl``... (zero-padded) for several."""
    if count == 1:
        return [f"{stem}.jsonl"]
    width = max(4, len(str(count - 1)))
    return [f"{stem}-{n:0{width}d}.jsonl" for n in range(count)]


@cli.command(name="import")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option(
    "--from",
    "fmt",
    type=click.Choice(FORMATS),
    default="auto",
    show_default=True,
    help="Format of every FILE; auto detects it and says which it chose.",
)
@click.option(
    "-o",
    "--output",
    required=True,
    metavar="DIR",
    help="Directory for the transcripts (created if missing); '-' prints the one session to stdout.",
)
@force_option
@click.pass_context
def import_cmd(ctx: click.Context, files: tuple[str, ...], fmt: str, output: str, force: bool) -> None:
    """Turn traces (OpenAI, Anthropic, OpenTelemetry, SWE-agent, tau2-bench) into transcripts.

    Each FILE ('-' for stdin) becomes one transcript per session (conversation, episode,
    trace) in DIR: FILE's name with .jsonl for one session, -0000.jsonl, -0001.jsonl ...
    for several. A summary line per FILE goes to stderr. An unreadable FILE writes
    nothing; the others are still imported, and the exit code is 2. A transcript that
    exists in DIR is not replaced without --force (that input writes nothing).
    """
    if files.count("-") > 1:
        raise InputError("stdin ('-') can be read only once")
    if output == "-":
        if len(files) != 1:
            raise InputError("-o - prints one session: give exactly one FILE")
        _to_stdout(files[0], fmt)
        return
    stems: dict[str, str] = {}
    for path in files:
        stem = stem_of(path)
        if stem in stems:
            raise InputError(
                f"{stems[stem]} and {path} would both be written as {stem}*.jsonl; import them into"
                " different directories"
            )
        stems[stem] = path
    _make_directory(output)
    failed = False
    for path in files:
        try:
            _import_into(path, fmt, output, replace=force)
        except InputError as err:
            click.echo(f"toolreplay: error: {one_line(str(err))}", err=True)
            failed = True
    if failed:
        ctx.exit(EXIT_USAGE)


def _make_directory(directory: str) -> None:
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise InputError("is not a directory", path=directory)
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as err:
        raise InputError(f"cannot create the directory: {err.strerror}", path=directory) from err


def _import_into(path: str, fmt: str, directory: str, *, replace: bool) -> None:
    """Write the sessions of one input to temp files, renamed into place only when all are read."""
    tally = _Tally()
    temps: list[str] = []
    stream = open_input(path)
    try:
        chosen, sessions = import_stream(stream, path, fmt)
        for session in sessions:
            temps.append(_write_temp(session, directory))
            tally.add(session)
        targets = [os.path.join(directory, n) for n in session_names(stem_of(path), len(temps))]
        for target in targets:
            if path != "-" and os.path.exists(target) and os.path.samefile(target, path):
                raise InputError(f"would overwrite its own input {target}", path=path)
        for target in targets:
            if not replace and os.path.lexists(target):
                raise InputError(EXISTS, path=target)
        for temp, target in zip(temps, targets, strict=True):
            try:
                place(temp, target, replace=replace)
            except FileExistsError as err:
                raise InputError(EXISTS, path=target) from err
        temps = []
    finally:
        for temp in temps:
            with contextlib.suppress(OSError):
                os.unlink(temp)
        if path != "-":
            stream.close()
    click.echo(tally.line(path, chosen, fmt == "auto"), err=True)


def _write_temp(session: Session, directory: str) -> str:
    try:
        fd, temp = temp_beside(directory)
    except OSError as err:
        raise InputError(f"cannot write here: {err.strerror}", path=directory) from err
    try:
        with os.fdopen(fd, "w", encoding="ascii", newline="\n") as out:
            for record in session.records:
                out.write(record_line(record) + "\n")
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return temp


def _to_stdout(path: str, fmt: str) -> None:
    """Print the one session of ``path``; refuse (printing nothing) when it holds more."""
    tally = _Tally()
    only: Session | None = None
    stream = open_input(path)
    try:
        chosen, sessions = import_stream(stream, path, fmt)
        for session in sessions:
            if only is not None:
                raise InputError("holds more than one session; -o - prints one: pass -o DIR", path=path)
            only = session
            tally.add(session)
    finally:
        if path != "-":
            stream.close()
    if only is not None:
        click.echo("".join(record_line(r) + "\n" for r in only.records), nl=False)
    click.echo(tally.line(path, chosen, fmt == "auto"), err=True)
