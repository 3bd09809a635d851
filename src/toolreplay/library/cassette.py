"""Cassettes: a ToolRegistry that replays a sealed transcript and records what it lacks.

A cassette is a sealed transcript (``*.sealed.jsonl``) with a tool lock beside it
(``*.lock.json``, the contracts its fingerprints stand for, so a drift can say *what*
changed). The record modes are pytest-recording's:

* ``none``: replay only; a call the cassette lacks fails (a missing cassette lacks all);
* ``once``: record when the cassette does not exist, else replay only;
* ``new_episodes``: replay what was recorded, run and append the rest;
* ``all``: run and record everything anew.

Nothing is written while the calls happen: :meth:`CassetteRegistry.save` writes the
cassette and its lock whole (temp file + rename), so a crash or a parallel worker never
sees half a file. The pytest plugin (``toolreplay.pytest_plugin``) drives this module.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from toolreplay.analyses.fingerprint_diff import compare_contracts, text_differences
from toolreplay.analyses.volatile import Volatile
from toolreplay.config import DEFAULT_MUTATORS
from toolreplay.contracts.lock import ToolContract, ToolLock, load_lock, save_lock
from toolreplay.errors import ToolreplayError
from toolreplay.files import SEALED_SUFFIX, session_path, temp_beside
from toolreplay.findings import Finding
from toolreplay.kinds import TOOL_DRIFT
from toolreplay.library.failures import ContractTextDriftError, SnapshotMissError, ToolDriftError
from toolreplay.library.recorder import Recorder
from toolreplay.library.registry import ToolRegistry, as_json
from toolreplay.library.snapshot import Snapshot
from toolreplay.transcript import GENESIS, Record, make_record
from toolreplay.volatile_rules import Rule

#: the record modes, in pytest-recording's names and meanings
RECORD_MODES = ("none", "once", "new_episodes", "all")
LOCK_SUFFIX = ".lock.json"


#: the last note of a drift: what to do when the change is intended
REDO = (
    "if the change is intended, re-record the cassette (--toolreplay-record-mode=all)"
    " and commit it with a drift note"
)


def lock_path(cassette: str) -> str:
    """The tool lock that goes with a cassette: ``x.sealed.jsonl`` -> ``x.lock.json``."""
    return cassette.removesuffix(SEALED_SUFFIX) + LOCK_SUFFIX


class _Buffer(Recorder):
    """A recorder that keeps the records in memory until the cassette is saved."""

    def __init__(self, path: str) -> None:  # no super().__init__: nothing is opened
        self.path = path
        self.sealed = True
        self.count = 0
        self.head = GENESIS
        self.records: list[Record] = []

    def record(
        self,
        *,
        tool: str,
        args: dict[str, Any],
        response: dict[str, Any],
        fingerprint: str | None = None,
        state: dict[str, str] | None = None,
        text_digest: str | None = None,
        mutates: bool | None = None,
    ) -> Record:
        record = make_record(
            index=self.count,
            tool=tool,
            args=args,
            response=response,
            fingerprint=fingerprint,
            state=state,
            text_digest=text_digest,
        )
        self.records.append(record)
        self.count += 1
        return record

    def close(self) -> None:
        pass


class CassetteRegistry(ToolRegistry):
    """A :class:`ToolRegistry` bound to one cassette file in one record mode.

    Register tools as usual (``register``, the ``tool`` decorator) and :meth:`call`
    them. Replayed calls never run the tool; a call the cassette lacks raises
    :class:`SnapshotMissError` (unless the mode records it); a tool whose fingerprint
    differs from the one its calls were recorded with raises :class:`ToolDriftError`,
    with the fingerprint-diff lines as notes when the cassette's lock has the old
    contract. ``why`` says where the mode came from and ``label`` how to name the file,
    for the messages (e.g. "CI is set", a path relative to the project).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        mode: str,
        why: str = "",
        label: str | None = None,
        mutators: frozenset[str] = DEFAULT_MUTATORS,
        volatile: Iterable[Rule] | Volatile = (),
    ) -> None:
        if mode not in RECORD_MODES:
            raise ValueError(f"record mode must be one of {', '.join(RECORD_MODES)}, not {mode!r}")
        self.cassette = os.fspath(path)
        self._new = _Buffer(self.cassette)
        super().__init__(mutators=mutators, recorder=self._new)
        if not self.cassette.endswith(SEALED_SUFFIX):
            raise ValueError(f"a cassette is a sealed transcript: its name ends in {SEALED_SUFFIX}")
        self.mode = mode
        self.why = why
        self.label = label or self.cassette
        #: whether the cassette existed (and was read) when the registry was made
        self.existed = os.path.exists(self.cassette)
        self._replay = _replay(self.cassette, mode, existed=self.existed, volatile=volatile)
        self._old: tuple[Record, ...] = self._replay.records if self._replay is not None else ()
        self.recording = _records(mode, existed=self.existed)
        #: calls answered from the cassette
        self.served = 0

    @property
    def recorded(self) -> int:
        """Calls run live and kept for the cassette."""
        return self._new.count

    def call(self, name: str, /, **args: Any) -> dict[str, Any]:
        """Answer from the cassette, or run and record the tool when the mode allows."""
        __tracebackhide__ = True  # pytest shows the test's line, not this module's
        if name not in self:
            return super().call(name, **args)  # the registry's own "not registered" error
        contract = self.contract(name)
        self._check_drift(contract)
        if self._replay is not None:
            response = self._from_cassette(self._replay, name, args, contract)
            if response is not None:
                return response
        return super().call(name, **args)  # live, kept by the buffer recorder

    def _from_cassette(
        self, replay: Snapshot, name: str, args: dict[str, Any], contract: ToolContract
    ) -> dict[str, Any] | None:
        """The cassette's answer to the call; None for a call it lacks that the mode records."""
        __tracebackhide__ = True
        try:
            response = replay.serve(
                name, as_json(args, f"arguments of tool {name!r}"), live=contract.fingerprint
            )
        except SnapshotMissError as miss:
            if not self.recording:
                miss.add_note(self._miss_note())
                raise miss.with_traceback(None) from None
            return None
        self.served += 1
        return response

    def _check_drift(self, contract: ToolContract) -> None:
        """Fail on the first recorded call of this tool made with another fingerprint, else on the
        first made with another contract text."""
        __tracebackhide__ = True
        self._check_fingerprints(contract)
        self._check_texts(contract)

    def _check_fingerprints(self, contract: ToolContract) -> None:
        __tracebackhide__ = True
        for record in self._old:
            recorded = record.fingerprint
            if record.tool == contract.name and recorded is not None and recorded != contract.fingerprint:
                err = ToolDriftError(
                    tool=contract.name, recorded=recorded, live=contract.fingerprint, index=record.index
                )
                for note in self._drift_notes(contract, recorded):
                    err.add_note(note)
                raise err

    def _check_texts(self, contract: ToolContract) -> None:
        __tracebackhide__ = True
        err = text_drift(self._old, {contract.name: contract}, lock_path(self.cassette))
        if err is not None:
            raise err

    def _drift_notes(self, live: ToolContract, recorded: str) -> list[str]:
        return explain_drift(
            lock_path(self.cassette), lock_path(self.label), live, recorded, against="the registered tool"
        )

    def _miss_note(self) -> str:
        why = f" ({self.why})" if self.why else ""
        if not self.existed:
            return (
                f"there is no cassette {self.label} and the record mode is {self.mode}{why}:"
                " record it where the tools are reachable and commit it"
            )
        return (
            f"cassette {self.label} does not record this call and the record mode is {self.mode}{why};"
            " re-record it (--toolreplay-record-mode=new_episodes or all) if the call is intended"
        )

    def save(self) -> bool:
        """Write the cassette and its lock if this run recorded anything; return whether it did.

        ``new_episodes`` keeps the recorded calls and chains the new ones after them, so
        the old head stays a prefix of the new chain. Written atomically: the lock first,
        then the cassette, each a temp file renamed into place.
        """
        if not self.recording or not self._new.records:
            return False
        keep = self._old if self.mode == "new_episodes" else ()
        write_cassette(self.cassette, (*keep, *self._new.records), self._lock_for(keep))
        return True

    def _lock_for(self, keep: tuple[Record, ...]) -> ToolLock:
        """The contracts of the tools the cassette calls: today's, or the old lock's for kept calls."""
        contracts: dict[str, ToolContract] = {}
        for new in self._new.records:
            contracts[new.tool] = self.contract(new.tool)
        old_lock = functools.cache(lambda: _read_lock(lock_path(self.cassette)))  # read once, if at all
        for record in keep:
            if record.tool not in contracts:
                found = self._recorded_with(record, old_lock)
                if found is not None:
                    contracts[record.tool] = found
        return ToolLock.of(contracts.values())

    def _recorded_with(self, record: Record, old_lock: Callable[[], ToolLock]) -> ToolContract | None:
        """The contract a kept call was recorded with: the registered tool's while it has that
        fingerprint, else the old lock's (None when neither has it)."""
        if record.tool in self and self.contract(record.tool).fingerprint == record.fingerprint:
            return self.contract(record.tool)
        found = old_lock().tools.get(record.tool)
        return found if found is not None and found.fingerprint == record.fingerprint else None


def _records(mode: str, *, existed: bool) -> bool:
    """Whether calls the cassette lacks are run and recorded: always in modes all and new_episodes,
    in mode once when there was no cassette."""
    return mode in ("all", "new_episodes") or (mode == "once" and not existed)


def _replay(
    cassette: str, mode: str, *, existed: bool, volatile: Iterable[Rule] | Volatile
) -> Snapshot | None:
    """What answers calls: the cassette (unless the mode records all afresh), else, in mode none,
    an empty snapshot that every call misses; None when every call runs live."""
    if existed and mode != "all":
        # through Snapshot.from_file, so whatever it checks of a sealed file applies here
        return Snapshot.from_file(cassette, volatile=volatile)
    if mode == "none":
        return Snapshot(())
    return None


def explain_drift(
    lock_file: str, shown: str, live: ToolContract, recorded: str, *, against: str
) -> list[str]:
    """The notes of a drift: the fingerprint-diff lines from the cassette's lock (``lock_file``,
    named ``shown``) to ``live`` (``against`` says what that is), then what to do."""
    try:
        old = _locked_contract(lock_file, live.name)
    except (OSError, ToolreplayError) as err:
        return [f"cannot explain the drift: {err}", REDO]
    if old is None or old.fingerprint != recorded:
        return [f"cannot explain the drift: {shown} does not hold the recorded contract", REDO]
    lines = [
        Finding(kind=TOOL_DRIFT, index=None, tool=live.name, message=d.text(), path=shown).text
        for d in compare_contracts(old, live)
    ]
    return [f"fingerprint-diff {shown} (recorded) -> {against}:", *lines, REDO]


def text_drift(
    records: Iterable[Record], live: Mapping[str, ToolContract], lock_file: str
) -> ContractTextDriftError | None:
    """The first of ``records`` whose tool ``live`` has with another contract text, as the error to
    raise (what changed, when the cassette's lock ``lock_file`` holds the recorded text, and what to
    do); None when every recorded text is the live one, or either is unknown."""
    for record in records:
        said, contract = record.text_digest, live.get(record.tool)
        now = contract.text_digest if contract is not None else None
        if contract is None or now is None or said is None or said == now:
            continue
        differences = _text_differences(lock_file, contract, said)
        err = ContractTextDriftError(
            tool=record.tool, recorded=said, live=now, index=record.index, differences=differences
        )
        err.add_note(REDO)
        return err
    return None


def _text_differences(lock_file: str, live: ToolContract, recorded: str) -> tuple[str, ...]:
    """What changed in the contract text, when the cassette's lock holds the recorded one."""
    try:
        old = _locked_contract(lock_file, live.name)
    except (OSError, ToolreplayError):
        return ()
    if old is None or old.text_digest != recorded:
        return ()
    return tuple(d.text() for d in text_differences(old, live))


def _locked_contract(lock_file: str, name: str) -> ToolContract | None:
    """The contract the cassette's lock ``lock_file`` holds for ``name`` (None: no lock or no such tool)."""
    return load_lock(lock_file).tools.get(name) if os.path.exists(lock_file) else None


def write_cassette(
    cassette: str, records: Sequence[Record], lock: ToolLock, session: Sequence[Record] | None = None
) -> None:
    """Write a cassette (the records chained afresh from index 0), its lock and, given, its session
    file (``CASSETTE.mcp``, what ``serve`` answers besides the calls; sealed too), each whole.

    The lock first, then the session file, then the cassette, each a temp file beside the target
    renamed into place: a crash, an interrupted run or another process never sees half a file. A
    cassette written without a session drops the session file an older recording left beside it.
    """
    directory = os.path.dirname(os.path.abspath(cassette))
    os.makedirs(directory, exist_ok=True)
    save_lock(lock, lock_path(cassette))
    if session is not None:
        _write_sealed(session_path(cassette), session)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(session_path(cassette))
    _write_sealed(cassette, records)


def _write_sealed(path: str, records: Sequence[Record]) -> None:
    """``records`` chained afresh from index 0 into ``path``, through a temp file beside it."""
    fd, tmp = temp_beside(os.path.dirname(os.path.abspath(path)))
    os.close(fd)
    try:
        with Recorder(tmp, seal=True) as recorder:
            for record in records:
                recorder.write(replace(record, index=recorder.count))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _read_lock(path: str) -> ToolLock:
    try:
        return load_lock(path)
    except (OSError, ToolreplayError):
        return ToolLock()
