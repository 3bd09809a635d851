"""The tool lock judged against the configuration's ``tools_source`` (docs/spec.md §5): what
changed per tool, the input schemas that differ, and the source's report. A module or a server
is the project's code: it runs in a child, and a child that fails is a ``tools-source-failed``
finding, never a pass."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from toolreplay.analyses.fingerprint_diff import (
    carries_no_versions,
    explain_drift,
    lock_report,
)
from toolreplay.analyses.schema_break import changed_schemas
from toolreplay.canonical import canonical
from toolreplay.config import Config, named_file
from toolreplay.contracts.lock import ToolLock, load_lock
from toolreplay.contracts.runner import SourceRunError, work_tree
from toolreplay.contracts.source import is_python_source, source_lock
from toolreplay.errors import InputError
from toolreplay.escape import one_line
from toolreplay.findings import Finding, Report
from toolreplay.kinds import TOOLS_SOURCE_FAILED

#: seconds the tools_source's child process may take
SOURCE_TIMEOUT = 30.0
#: the report's command of a tools_source that failed in its child process
SOURCE_COMMAND = "tools-source"


def ran_code(config: Config) -> bool:
    """Whether the check runs project code: a tools_source that is not a file, beside a lock."""
    source = config.tools_source
    if config.tools_lock is None or source is None:
        return False
    return not isinstance(source, str) or is_python_source(source, root=config.root)


def source_contracts(
    config: Config, *, report: bool = True, source_root: Path | None = None
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...], tuple[Report, ...]]:
    """What changed per tool between the lock and the config's tools_source (none without
    both), the source's input schemas (canonical JSON) that differ from the lock's, against which
    the recorded calls are validated (``schema-break``), and the source's report: the lock judged
    against it, or a tools_source that failed in its child process (none with ``report=False``).

    A module or a server is the project's code (in CI, the pull request's): it runs in a
    child, and a child that dies, hangs, answers garbage or changes the work tree is a
    ``tools-source-failed`` finding (``report=False``: the error itself), never a pass.
    ``source_root``: where the source runs from, when not the config's folder (over a pull
    request's range, the base commit's tree).
    """
    lock = named_file(config, config.tools_lock)
    if lock is None or config.tools_source is None:
        return (), (), ()
    recorded = load_lock(lock)  # a bad lock is the user's usage error, before any child runs
    try:
        source = _source(config, config.tools_source, source_root)
    except InputError as err:
        # a child that failed is a finding; so is the base commit's source (over a range), which
        # is not the pull request's to fix
        if not (report and _is_finding(err, source_root)):
            raise
        return (), (), (_source_failed(config, err),)
    changed = tuple((tool, canonical(schema)) for tool, schema in changed_schemas(recorded, source).items())
    judged = (_source_judged(config, source, source_root, recorded),) if report else ()
    return tuple(sorted(explain_drift(recorded, source).items())), changed, judged


def _is_finding(err: InputError, source_root: Path | None) -> bool:
    """Whether a tools_source's failure is a finding: a child that failed, or any failure of the
    base commit's source (over a range), which is not the pull request's to fix."""
    return isinstance(err, SourceRunError) or source_root is not None


def _source(config: Config, tools_source: str | Sequence[str], source_root: Path | None) -> ToolLock:
    """The tools_source's contracts, from its child process."""
    source, _ = source_lock(
        tools_source,
        root=config.root if source_root is None else source_root,
        mutators=config.mutators,
        timeout=SOURCE_TIMEOUT,
        watch=work_tree(config.root),
    )
    return source


def _source_judged(config: Config, source: ToolLock, source_root: Path | None, recorded: ToolLock) -> Report:
    """The tools_lock against the tools_source, as ``fingerprint-diff`` judges them (``tool-drift``,
    ``contract-text-drift``), whether or not a run calls the tools. The lock is the one beside the
    source: ``recorded`` (the config's, already read), or over a pull request's range the base
    commit's, as its source is."""
    name = str(config.tools_lock)
    if source_root is not None:
        recorded = load_lock(str(source_root / name))
    # over a range the lock may be a temporary copy of the base's: named by its file name
    shown = Path(name).name if Path(name).is_absolute() else name
    return lock_report(
        recorded, source, command=SOURCE_COMMAND, path=shown, unversioned=carries_no_versions(source)
    )


def _source_failed(config: Config, err: InputError) -> Report:
    path = Path(config.source).name
    finding = Finding(
        kind=TOOLS_SOURCE_FAILED,
        index=None,
        tool="",
        path=path,
        message=one_line(f"tools_source failed in its child process, nothing it answered was used: {err}"),
    )
    return Report(command=SOURCE_COMMAND, path=path, findings=(finding,))
