"""``accept``: a run made the baseline in one step, with its session file, the tool lock's entries
for the tools it listed, and the drift notes that accept each change (docs/spec.md §1.6)."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Sequence
from dataclasses import dataclass

import click

from toolreplay.capture.session import listed_lock
from toolreplay.chain import seal_lines, verify_stream
from toolreplay.cli.base import atomic_output
from toolreplay.cli.baselines import configured_comparison
from toolreplay.cli.defaults import config_option, read_config
from toolreplay.config import Config, config_path
from toolreplay.contracts.keep import Kept, refreshed_lock
from toolreplay.contracts.lock import ToolLock, dump_lock
from toolreplay.driftnotes.guard import note_name
from toolreplay.driftnotes.write import accepting_notes
from toolreplay.errors import InputError
from toolreplay.escape import one_line
from toolreplay.files import SEALED_SUFFIX, session_path
from toolreplay.git import regular_baseline
from toolreplay.transcript import parse_links, read_input


@click.command(name="accept")
@click.argument("baseline")
@click.option("--run", "run", required=True, metavar="RUN", help="The run to make the baseline.")
@click.option(
    "--reason", required=True, metavar="TEXT", help="Why the change is accepted (the notes' prose)."
)
@click.option(
    "--base",
    metavar="REF",
    help="Measure the notes from where a pull request against REF starts (as note --base).",
)
@config_option
def accept_cmd(baseline: str, run: str, reason: str, base: str | None, config_file: str | None) -> None:
    """Make RUN the baseline BASELINE and write the drift notes that accept the change.

    RUN is sealed into BASELINE (copied when it is sealed already), its session file RUN.mcp into
    BASELINE.mcp, the config's tools_lock takes the contracts of the tools that session listed
    (keeping what it declared), and a note with REASON is written for each of these files that
    changed since HEAD (or since where a pull request against --base REF starts). Each file
    written is printed. Nothing is written when the run cannot be read or nothing changed.
    """
    accepted = accept_unit(baseline, run=run, reason=reason, base=base, config_file=config_file)
    for kept in accepted.kept:
        click.echo(f"toolreplay: {kept}", err=True)
    for path in accepted.written:
        click.echo(f"wrote {one_line(path)}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Accepted:
    """What :func:`accept_unit` wrote (paths, in order) and what the lock kept, as sentences."""

    written: tuple[str, ...]
    kept: tuple[str, ...]


def accept_unit(
    baseline: str, *, run: str, reason: str, base: str | None, config_file: str | None
) -> Accepted:
    """``accept``'s work, for the command and the Action's ``accept``: RUN made the baseline, its
    session file and the lock's entries written, and the notes; an :class:`InputError` (nothing
    written) when it cannot."""
    _check_given(baseline, reason)
    config = read_config(config_file)
    files = _unit(baseline, run)
    lock = _refreshed_lock(config, files)
    if lock is not None:
        files.append((lock.path, lock.data))
    # from a pull request's start: the base commit's settings and no tools_source, as note --base
    judging = configured_comparison(config_file, None, (), base=base).judging  # built if a comparison runs
    notes = accepting_notes(files, run=run, base=base, judging=judging, reason=reason)
    if not notes:
        raise InputError(
            "nothing to accept: the run, its session and the lock are as committed", path=baseline
        )
    written = _write(files, _named_notes(notes, config))
    kept = tuple(k.text(lock.path) for k in lock.kept) if lock is not None else ()
    return Accepted(written=tuple(written), kept=kept)


def _check_given(baseline: str, reason: str) -> None:
    """A reason that says something, and a baseline that is a regular sealed file's name."""
    if not reason.strip():
        raise InputError("--reason is empty: say why the change is accepted")
    regular_baseline(baseline)
    if not baseline.endswith(SEALED_SUFFIX):
        raise InputError(
            f"a baseline is a sealed transcript: its name must end in {SEALED_SUFFIX}", path=baseline
        )


def _unit(baseline: str, run: str) -> list[tuple[str, bytes]]:
    """The baseline's sealed unit as it is to be: (path, bytes) of the baseline and, when the run
    has one, its session file."""
    files = [(baseline, _sealed(run))]
    if os.path.lexists(session_path(run)):
        session = _sealed(session_path(run), sealed=run.endswith(SEALED_SUFFIX))
        files.append((session_path(baseline), session))
    elif os.path.lexists(session_path(baseline)):
        # the baseline's session would stay the old server's: serve would answer with it
        raise InputError(
            f"has no session file, and the baseline has one ({one_line(session_path(baseline))}):"
            " record the run with toolreplay record, which writes it",
            path=run,
        )
    return files


@dataclass(frozen=True, slots=True, kw_only=True)
class _Lock:
    """The tool lock as ``accept`` writes it, and what it kept of what the old one declared."""

    path: str
    data: bytes
    kept: tuple[Kept, ...]


def _sealed(path: str, *, sealed: bool | None = None) -> bytes:
    """``path`` as a sealed file's bytes: sealed now, or (a sealed file) verified and as it is."""
    data = read_input(path)
    if not (path.endswith(SEALED_SUFFIX) if sealed is None else sealed):
        return "".join(line + "\n" for line in seal_lines(io.BytesIO(data), path)).encode("ascii")
    state = verify_stream(io.BytesIO(data), path)
    if state.broken is not None:
        raise InputError(
            f"the chain is broken at index {state.broken.position} ({state.broken.reason})", path=path
        )
    return data


def _refreshed_lock(config: Config | None, files: Sequence[tuple[str, bytes]]) -> _Lock | None:
    """The config's tools_lock with the contracts of the tools the session listed (what it declared
    kept, other tools as they were); None without a lock configured or tools listed."""
    if config is None or config.tools_lock is None or len(files) < 2:
        return None
    listed = _listed(*files[1])
    if listed is None:
        return None
    path = config_path(config, config.tools_lock)
    lock, kept = refreshed_lock(path, listed)
    return _Lock(path=path, data=dump_lock(lock).encode("utf-8"), kept=kept)


def _listed(session: str, data: bytes) -> ToolLock | None:
    """The lock of the tools the session file ``data`` (named ``session``) says the server listed."""
    return listed_lock(link.record for link in parse_links(io.BytesIO(data), session))


def _named_notes(notes: Sequence[tuple[str, str]], config: Config | None) -> list[tuple[str, bytes]]:
    """Each note under the config's drift-notes folder, in a file that does not exist yet."""
    folder = config_path(config, config.drift_notes) if config is not None else "drift-notes"
    taken = {f"{folder}/{name}" for name in (os.listdir(folder) if os.path.isdir(folder) else ())}
    named = []
    for name, text in notes:
        path = note_name(name, folder, taken)
        taken.add(path)
        named.append((path, text.encode("utf-8")))
    return named


def _write(files: Sequence[tuple[str, bytes]], notes: Sequence[tuple[str, bytes]]) -> list[str]:
    """Write the files that differ from what is on disk and the notes, each whole, all renamed into
    place once every one is complete; the paths written."""
    changed = [(path, data) for path, data in files if _on_disk(path) != data]
    with contextlib.ExitStack() as stack:
        for path, data in [*changed, *notes]:
            _write_whole(stack, path, data, replace=(path, data) in changed)
    return [path for path, _ in [*changed, *notes]]


def _write_whole(stack: contextlib.ExitStack[bool | None], path: str, data: bytes, *, replace: bool) -> None:
    """Write ``data`` to a temp file beside ``path`` (its folder made), renamed into place when
    ``stack`` closes without an error."""
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
    out = stack.enter_context(atomic_output(path, replace=replace))
    out.write(data.decode("utf-8"))


def _on_disk(path: str) -> bytes | None:
    try:
        with open(path, "rb") as stream:
            return stream.read()
    except OSError:
        return None
