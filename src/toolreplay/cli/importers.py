"""``toolreplay import``: traces teams already have, as transcripts (docs/importers.md)."""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import click

from toolreplay.cli.base import EXISTS, EXIT_USAGE, force_option, mutator_option, place_output, warn
from toolreplay.cli.defaults import announce, config_option, read_config
from toolreplay.config import DEFAULT_MUTATORS
from toolreplay.errors import InputError
from toolreplay.escape import inert, one_line
from toolreplay.files import temp_beside
from toolreplay.importers import FORMATS, Session, import_stream
from toolreplay.importers.base import TraceWarning, with_response_state
from toolreplay.outputs import write_error
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


def session_names(stem: str, count: int, labels: Sequence[str | None] = ()) -> list[str]:
    """``STEM-LABEL.jsonl`` when every session has its own id from the source (tau-bench's
    ``task-13-trial-0``); else ``STEM.jsonl`` for one session, ``STEM-0000.jsonl``...
    (zero-padded) for several."""
    if _own_labels(labels, count):
        return [f"{stem}-{label}.jsonl" for label in labels]
    if count == 1:
        return [f"{stem}.jsonl"]
    width = max(4, len(str(count - 1)))
    return [f"{stem}-{n:0{width}d}.jsonl" for n in range(count)]


def _own_labels(labels: Sequence[str | None], count: int) -> bool:
    """Whether each of the ``count`` sessions has a label of its own."""
    return bool(labels) and len(labels) == count and None not in labels and len(set(labels)) == count


@click.command(name="import")
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
@click.option(
    "--state-from-response",
    is_flag=True,
    help="Give each call to a mutator the post-call state its response implies (a SHA-256 of the"
    " response), so diff can compare effects instead of reporting audit-incomplete.",
)
@mutator_option
@force_option
@config_option
@click.pass_context
def import_cmd(
    ctx: click.Context,
    files: tuple[str, ...],
    fmt: str,
    output: str,
    state_from_response: bool,
    mutators: tuple[str, ...],
    force: bool,
    config_file: str | None,
) -> None:
    """Turn traces (OpenAI, Anthropic, OpenTelemetry, SWE-agent, tau2-bench, Inspect AI) into transcripts.

    Each FILE ('-' for stdin) becomes one transcript per session (conversation, episode,
    trace) in DIR: FILE's name and the session's own id where the source gives one
    (tau-bench: -task-13-trial-0.jsonl), else FILE's name with .jsonl for one session,
    -0000.jsonl, -0001.jsonl ... for several. A summary line per FILE goes to stderr. An
    unreadable FILE writes nothing; the others are still imported, and the exit code is 2.
    A transcript that exists in DIR is not replaced without --force (that input writes
    nothing). Traces record no post-call state: see --state-from-response (docs/importers.md).
    """
    state_of = _state_tools(state_from_response, mutators, config_file)
    if files.count("-") > 1:
        raise InputError("stdin ('-') can be read only once")
    if output == "-":
        if len(files) != 1:
            raise InputError("-o - prints one session: give exactly one FILE")
        _to_stdout(files[0], fmt, state_of)
        return
    _refuse_shared_stems(files)
    _make_directory(output)
    if not _imported_all(files, fmt, output, state_of, replace=force):
        ctx.exit(EXIT_USAGE)


def _imported_all(
    files: tuple[str, ...], fmt: str, directory: str, state_of: frozenset[str], *, replace: bool
) -> bool:
    """Import each input into ``directory``; one that cannot be read is said and skipped (False)."""
    failed = False
    for path in files:
        try:
            _import_into(path, fmt, directory, state_of, replace=replace)
        except InputError as err:
            click.echo(f"toolreplay: error: {inert(one_line(str(err)))}", err=True)
            failed = True
    return not failed


def _state_tools(
    state_from_response: bool, mutators: tuple[str, ...], config_file: str | None
) -> frozenset[str]:
    """The tools whose calls get a state from their response: none without --state-from-response;
    else the --mutator tools, the config's mutators or the default list."""
    if not state_from_response:
        if mutators:
            raise click.UsageError("--mutator is for --state-from-response")
        return frozenset()
    if mutators:
        return frozenset(mutators)
    return _configured_mutators(config_file)


def _configured_mutators(config_file: str | None) -> frozenset[str]:
    """The config's mutators, else the default list."""
    config = read_config(config_file)
    if config is None or "mutators" not in config.declared:
        return DEFAULT_MUTATORS
    announce(config, ["mutators"])
    return config.mutators


def _refuse_shared_stems(files: Sequence[str]) -> None:
    """Two inputs whose transcripts would have the same names are refused before anything is read."""
    stems: dict[str, str] = {}
    for path in files:
        stem = stem_of(path)
        if stem in stems:
            raise InputError(
                f"{stems[stem]} and {path} would both be written as {stem}*.jsonl; import them into"
                " different directories"
            )
        stems[stem] = path


def _make_directory(directory: str) -> None:
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise InputError("is not a directory", path=directory)
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as err:
        raise InputError(f"cannot create the directory: {err.strerror}", path=directory) from err


def _import_into(
    path: str, fmt: str, directory: str, state_of: frozenset[str] = frozenset(), *, replace: bool = False
) -> None:
    """Write the sessions of one input to temp files, renamed into place only when all are read."""
    tally = _Tally()
    temps: list[str] = []
    labels: list[str | None] = []
    stream = open_input(path)
    try:
        with _warnings_said(path):
            chosen, sessions = import_stream(stream, path, fmt)
            for session in sessions:
                temps.append(_write_temp(with_response_state(session, state_of), directory))
                labels.append(session.label)
                tally.add(session)
        names = session_names(stem_of(path), len(temps), labels)
        targets = [os.path.join(directory, n) for n in names]
        _check_targets(path, targets, replace=replace)
        for temp, target in zip(temps, targets, strict=True):
            place_output(temp, target, replace=replace)
        temps = []
    finally:
        _discard(temps)
        if path != "-":
            stream.close()
    click.echo(tally.line(path, chosen, fmt == "auto"), err=True)


def _discard(temps: Sequence[str]) -> None:
    """Remove the temp files of an import that did not complete."""
    for temp in temps:
        with contextlib.suppress(OSError):
            os.unlink(temp)


@contextlib.contextmanager
def _warnings_said(path: str) -> Iterator[None]:
    """Print the importer's :class:`TraceWarning` lines for ``path`` once it was read without error
    (other warnings go on as they would have)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TraceWarning)
        yield
    for said in caught:
        if issubclass(said.category, TraceWarning):
            warn(f"{path}: {said.message}")
        else:
            warnings.warn_explicit(said.message, said.category, said.filename, said.lineno)


def _check_targets(path: str, targets: Sequence[str], *, replace: bool) -> None:
    """Every name is tried before any file is placed: not the input itself, writable, and new
    unless ``replace``."""
    if path != "-":
        _refuse_own_input(path, targets)
    for target in targets:
        if _taken(target) and not replace:
            raise InputError(EXISTS, path=target)


def _taken(target: str) -> bool:
    """Whether a file is at ``target``; an error for a name the file system cannot hold."""
    try:
        os.lstat(target)
    except FileNotFoundError:
        return False
    except OSError as err:  # a name too long for the file system, say
        raise InputError(f"cannot write here: {err.strerror}", path=target) from err
    return True


def _refuse_own_input(path: str, targets: Sequence[str]) -> None:
    for target in targets:
        if os.path.exists(target) and os.path.samefile(target, path):
            raise InputError(f"would overwrite its own input {target}", path=path)


def _write_temp(session: Session, directory: str) -> str:
    try:
        fd, temp = temp_beside(directory)
    except OSError as err:
        raise InputError(f"cannot write here: {err.strerror}", path=directory) from err
    try:
        with os.fdopen(fd, "w", encoding="ascii", newline="\n") as out:
            for record in session.records:
                out.write(record_line(record) + "\n")
    except BaseException as err:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        if isinstance(err, OSError):  # a full disk: name the folder the transcripts go to
            raise write_error(err, directory) from err
        raise
    return temp


def _to_stdout(path: str, fmt: str, state_of: frozenset[str] = frozenset()) -> None:
    """Print the one session of ``path``; refuse (printing nothing) when it holds more."""
    tally = _Tally()
    only: Session | None = None
    stream = open_input(path)
    try:
        with _warnings_said(path):
            chosen, sessions = import_stream(stream, path, fmt)
            only = _only_session(sessions, path, tally)
    finally:
        if path != "-":
            stream.close()
    if only is not None:
        only = with_response_state(only, state_of)
        click.echo("".join(record_line(r) + "\n" for r in only.records), nl=False)
    click.echo(tally.line(path, chosen, fmt == "auto"), err=True)


def _only_session(sessions: Iterable[Session], path: str, tally: _Tally) -> Session | None:
    """The one session of ``path`` (counted in ``tally``); refused when it holds more."""
    only: Session | None = None
    for session in sessions:
        if only is not None:
            raise InputError("holds more than one session; -o - prints one: pass -o DIR", path=path)
        only = session
        tally.add(session)
    return only
