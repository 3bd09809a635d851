"""Merging the JSON reports of ``toolreplay check --shard K/N`` back into one run (docs/spec.md §10).

Which job goes to which shard, and the commit and inputs digest that bind a shard to one
checkout, are :mod:`toolreplay.check`'s (shard planning).

Merging refuses, with one line, anything that is not one whole run split in N: reports
of another toolreplay version, of another configuration, ``--base``, commit or inputs,
reports that are not from ``check --shard``, two reports of one shard or one file, a missing
shard, a file reported by a shard it does not hash to, and the drift-note rule's reports or
verdict from another shard than 1. With the configuration (``merge --config``; the Action's
merge job always has it) it recomputes the commit and the inputs' digest from the checkout
and refuses shards that differ, shards that leave out a file the configuration checks or
report one it does not, and a ``fail_on`` that differs from the configuration's in a kind
other than the drift-note rule's. A shard's findings themselves are not re-checked: a report
edited to drop one finding of a file is merged as written (merge only ever reads the
reports; keep them as the CI's own artifacts).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, NoReturn

from toolreplay._version import __version__
from toolreplay.config import Config
from toolreplay.errors import InputError
from toolreplay.escape import quote
from toolreplay.findings import CheckInfo, Report
from toolreplay.kinds import GUARD_KINDS, KINDS, kind_fails
from toolreplay.locate import pointer_of
from toolreplay.report.json import reports_from_data
from toolreplay.schemas import validator
from toolreplay.shards import (
    DRIFT_SHARD,
    checkout_commit,
    config_digest,
    covered_files,
    inputs_digest,
    shard_of,
)

#: how many missing shards merge names before it says how many more
_MISSING_SHOWN = 10


@dataclass(frozen=True, slots=True, kw_only=True)
class ShardReport:
    """One shard's JSON report, read back."""

    path: str
    info: CheckInfo
    reports: tuple[Report, ...]

    @property
    def numbers(self) -> tuple[int, int]:
        """Which shard of how many (a whole run's report: shard 1 of 1)."""
        return self.info.shard or (1, 1)


def read_shard_report(path: str) -> ShardReport:
    """Read and check one JSON report written by ``check --format json``."""
    data = _load(path)
    _refuse_other_version(data, path)
    _refuse_schema_errors(data, path)
    check = data.get("check")
    if check is None or any("header" not in r for r in data["reports"]):
        raise InputError("not a report of toolreplay check (write it with check --format json)", path=path)
    return ShardReport(path=path, info=_check_info(check, path), reports=tuple(reports_from_data(data)))


def _refuse_schema_errors(data: Any, path: str) -> None:
    """Refuse a JSON value the report schema refuses, at its first error's place."""
    errors = sorted(validator("report").iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        first = errors[0]
        pointer = pointer_of(first.absolute_path)
        raise InputError(f"not a toolreplay JSON report: {first.message}", path=path, pointer=pointer)


def _check_info(check: dict[str, Any], path: str) -> CheckInfo:
    """What a report's ``check`` member says about the run that wrote it."""
    return CheckInfo(
        toolreplay=check["toolreplay"],
        config=check["config"],
        fail_on=None if check["fail_on"] is None else tuple(check["fail_on"]),
        base=check["base"],
        shard=_shard_numbers(check["shard"], path),
        drift=check.get("drift"),
        commit=check.get("commit"),
        inputs=check.get("inputs"),
    )


def _load(path: str) -> Any:
    """A file's JSON value; a file that cannot be read or is not JSON is refused."""
    try:
        with open(path, encoding="utf-8") as stream:
            return json.load(stream)
    except FileNotFoundError as err:
        raise InputError("no such file", path=path) from err
    except IsADirectoryError as err:
        raise InputError("is a directory, not a file", path=path) from err
    except UnicodeDecodeError as err:
        raise InputError("invalid UTF-8", path=path) from err
    except (ValueError, RecursionError) as err:
        raise InputError(f"not a JSON report: {err}", path=path) from err
    except OSError as err:
        raise InputError(f"cannot read it: {err.strerror}", path=path) from err


def _refuse_other_version(data: object, path: str) -> None:
    """A JSON report that names another version than 1 is refused by its version (before its schema)."""
    if isinstance(data, dict) and "version" in data and data["version"] != 1:
        raise InputError(
            f"a JSON report of version {quote(str(data['version']))}; this toolreplay reads 1", path=path
        )


def _shard_numbers(shard: dict[str, object] | None, path: str) -> tuple[int, int] | None:
    """The report's shard as (index, count); None for a whole run's report."""
    if shard is None:
        return None
    index, count = shard["index"], shard["count"]
    if type(index) is not int or type(count) is not int:
        # JSON Schema's "integer" takes 1.0 too; a shard number is written without a fraction
        raise InputError("the shard's index and count must be integers", path=path, pointer="/check/shard")
    return index, count


def _home_prefixes(shards: Sequence[ShardReport], count: int) -> list[str]:
    """The folder prefixes (``""``, or ``sub/`` when the Action names paths from the workspace and
    the config sits in ``sub/``) under which every file is in the shard that reports it.

    Shards hash a file's path relative to the config's folder; a report that names a file
    its shard does not hash to was moved between shards by hand and is refused.
    """
    placed = _checked_files(shards)
    candidates = _folder_prefixes([path for _, path in placed])
    valid = [prefix for prefix in candidates if _misplaced(placed, prefix, count) is None]
    if not valid:
        _refuse_misplaced(placed, count)
    return valid


def _checked_files(shards: Sequence[ShardReport]) -> list[tuple[ShardReport, str]]:
    """Each file a shard's ``check`` reports, with the shard."""
    return [(s, r.path) for s in shards for r in s.reports if r.command == "check"]


def _refuse_misplaced(placed: list[tuple[ShardReport, str]], count: int) -> NoReturn:
    """Refuse the first file (named from the config's folder) reported by a shard it does not hash to."""
    wrong = _misplaced(placed, "", count)
    assert wrong is not None
    shard, path, home = wrong
    raise InputError(
        f"reports {quote(path)}, a file of shard {home}/{count}, not of shard {shard.numbers[0]}/{count}",
        path=shard.path,
    )


def _folder_prefixes(paths: list[str]) -> list[str]:
    """``""`` and each folder prefix (``a/``, ``a/b/``) every one of ``paths`` is under."""
    folders = [PurePosixPath(path).parts[:-1] for path in paths]
    common: list[str] = []
    for parts in zip(*folders, strict=False):
        if len(set(parts)) != 1:
            break
        common.append(parts[0])
    return ["/".join(common[:n]) + "/" if n else "" for n in range(len(common) + 1)]


def _misplaced(
    placed: list[tuple[ShardReport, str]], prefix: str, count: int
) -> tuple[ShardReport, str, int] | None:
    """The first file (named under ``prefix``) that its shard does not hash to, with the shard it does."""
    for shard, path in placed:
        home = shard_of(path[len(prefix) :], count)
        if home != shard.numbers[0]:
            return shard, path, home
    return None


def _check_against(config: Config, first: ShardReport, files: dict[str, str], prefixes: list[str]) -> None:
    """What ``merge --config`` can check of the shards' contents without re-running them: the
    files reported are the files the configuration checks, and ``fail_on`` is the configuration's
    except for the drift-note rule's kinds (which the base commit's configuration decides).

    ``files`` maps each reported file to the shard report naming it; since every file is in the
    shard it hashes to, the same files overall are the plan's files in every shard."""
    paths = sorted(itertools.chain(*covered_files(config)))
    reported = _as_planned(files, prefixes, paths)
    missing = [path for path in paths if path not in reported]
    if missing:
        raise InputError(
            f"no shard reports {quote(missing[0])}, a file of {quote(config.source)}: "
            "merge needs every file the configuration checks"
        )
    extra = sorted(set(reported) - set(paths))
    if extra:
        raise InputError(
            f"reports {quote(extra[0])}, which {quote(config.source)} does not check", path=reported[extra[0]]
        )
    _same_fail_on(config, first)


def _as_planned(files: dict[str, str], prefixes: list[str], paths: list[str]) -> dict[str, str]:
    """The reported files as named under the folder prefix (see _home_prefixes) that names every
    planned file, else under the first."""
    named = [{path[len(prefix) :]: shard for path, shard in files.items()} for prefix in prefixes]
    return next((n for n in named if all(p in n for p in paths)), named[0])


def _same_fail_on(config: Config, first: ShardReport) -> None:
    """Refuse shards whose ``fail_on`` is not the configuration's, but for the drift-note rule's kinds."""
    kinds = None if first.info.fail_on is None else frozenset(first.info.fail_on)
    if any(kind_fails(k, kinds) != config.fails(k) for k in KINDS if k not in GUARD_KINDS):
        raise InputError(
            f"its fail_on differs from the one of {quote(config.source)}"
            " in kinds other than the drift-note rule's",
            path=first.path,
        )


def _commit(commit: str | None) -> str:
    return "no commit (outside git)" if commit is None else f"commit {commit}"


def _one_run(shards: Sequence[ShardReport]) -> None:
    """Refuse shards that are not of one run: another version, configuration, --base, commit or inputs."""
    first = shards[0]
    for shard in shards:
        _same_settings(shard, first)
        if shard.info.shard is None and len(shards) > 1:
            raise InputError(
                "a whole run's report (no --shard) cannot be merged with others", path=shard.path
            )
        _same_checkout(shard, first)


def _same_settings(shard: ShardReport, first: ShardReport) -> None:
    """Refuse a report of another version, configuration or ``--base`` than the first."""
    info = shard.info
    if info.toolreplay != __version__:
        raise InputError(
            f"written by toolreplay {quote(info.toolreplay)}, this is {quote(__version__)}; "
            "merge reports of one version with that version",
            path=shard.path,
        )
    if info.config != first.info.config or info.fail_on != first.info.fail_on:
        raise InputError(f"made with another configuration than {quote(first.path)}", path=shard.path)
    if info.base != first.info.base:
        raise InputError(f"made with another --base than {quote(first.path)}", path=shard.path)


def _same_checkout(shard: ShardReport, first: ShardReport) -> None:
    """Refuse a shard that judged another commit or read other files than the first."""
    info = shard.info
    if info.shard is not None and info.inputs is None:
        raise InputError("a shard report without the digest of what it read", path=shard.path)
    if info.commit != first.info.commit:
        raise InputError(
            f"judged {_commit(info.commit)}, {quote(first.path)} judged {_commit(first.info.commit)}: "
            "merge the shards of one commit",
            path=shard.path,
        )
    if info.inputs != first.info.inputs:
        raise InputError(
            f"read other files than {quote(first.path)} (another checkout, or an uncommitted edit): "
            "merge the shards of one checkout",
            path=shard.path,
        )


def _bind(first: ShardReport, config: Config) -> None:
    """With the configuration: the shards (which agree) judged this checkout as it is now."""
    if config_digest(config) != first.info.config:
        raise InputError(f"made with another configuration than {quote(config.source)}", path=first.path)
    if first.info.inputs is None:
        raise InputError(
            f"a whole run's report says nothing of what it read, so it cannot be checked against "
            f"{quote(config.source)}: merge the reports of check --shard",
            path=first.path,
        )
    here = checkout_commit(config)
    if first.info.commit != here:
        raise InputError(
            f"judged {_commit(first.info.commit)}, "
            f"but {quote(config.source)} is checked out at {_commit(here)}",
            path=first.path,
        )
    if first.info.inputs != inputs_digest(config):
        raise InputError(
            f"read other files than the checkout of {quote(config.source)} holds "
            "(an uncommitted edit, or another checkout)",
            path=first.path,
        )


def _shard_index(shard: ShardReport, first: ShardReport, count: int) -> int:
    """Which of ``count`` shards a report says it is."""
    index, n = shard.numbers
    if n != count:
        raise InputError(f"is shard {index}/{n}, {quote(first.path)} is of {count} shards", path=shard.path)
    if index > count:
        raise InputError(f"is shard {index}/{count}: there is no such shard", path=shard.path)
    return index


def _claim_files(shard: ShardReport, index: int, files: dict[str, str]) -> None:
    """Record in ``files`` which shard reports each file; a file reported by two shards is refused,
    and so is the drift-note rule's word from any shard but its own."""
    if shard.info.drift is not None and index != DRIFT_SHARD:
        raise InputError(
            f"carries the drift-note rule's verdict, which only shard {DRIFT_SHARD} runs", path=shard.path
        )
    for report in shard.reports:
        if report.command != "check":
            _drift_shard_only(shard, index, report)
        else:
            _claim_file(shard, report.path, files)


def _claim_file(shard: ShardReport, path: str, files: dict[str, str]) -> None:
    """Record that ``shard`` reports the file at ``path``; refused when another shard already does."""
    if path in files:
        raise InputError(f"overlaps {quote(files[path])}: both report {quote(path)}", path=shard.path)
    files[path] = shard.path


def _drift_shard_only(shard: ShardReport, index: int, report: Report) -> None:
    """The drift-note rule's reports come from the shard that runs it."""
    if index != DRIFT_SHARD:
        raise InputError(
            f"reports the drift-note rule, which only shard {DRIFT_SHARD} runs ({quote(report.path)})",
            path=shard.path,
        )


def _refuse_missing(seen: dict[int, str], count: int) -> None:
    """Refuse a merge that lacks shards, naming the first few missing."""
    # the count is the reports' word, and may be huge
    absent = (str(k) for k in range(1, count + 1) if k not in seen)  # (a range is lazy)
    missing = list(itertools.islice(absent, _MISSING_SHOWN))
    more = count - len(seen) - len(missing)
    listed = ", ".join(missing) + (f" and {more} more" if more else "")
    raise InputError(
        f"shard{'s' if count - len(seen) > 1 else ''} {listed} of {count} missing: "
        "merge needs the reports of every shard"
    )


def _whole(shards: Sequence[ShardReport], count: int) -> dict[str, str]:
    """Refuse shards that are not each of ``count`` once, or that report a file twice; which shard
    report names each file."""
    seen: dict[int, str] = {}
    files: dict[str, str] = {}
    for shard in shards:
        index = _shard_index(shard, shards[0], count)
        if index in seen:
            raise InputError(f"shard {index}/{count} again (also {quote(seen[index])})", path=shard.path)
        seen[index] = shard.path
        _claim_files(shard, index, files)
    if len(seen) < count:
        _refuse_missing(seen, count)
    return files


def merge_shards(
    shards: Sequence[ShardReport], *, config: Config | None = None
) -> tuple[CheckInfo, list[Report]]:
    """The reports and run of one unsharded ``check``, from the reports of all its shards.

    Reports come in the order ``check`` prints them: by path, a file's own report before
    the drift-note rule's report about it.
    """
    first = shards[0]
    _one_run(shards)
    if config is not None:
        _bind(first, config)
    count = first.numbers[1]
    files = _whole(shards, count)
    prefixes = _home_prefixes(shards, count)
    if config is not None:
        _check_against(config, first, files, prefixes)
    reports = [r for shard in sorted(shards, key=lambda s: s.numbers) for r in shard.reports]
    reports.sort(key=lambda r: (r.path, r.command != "check"))
    return _merged_info(shards), reports


def _merged_info(shards: Sequence[ShardReport]) -> CheckInfo:
    """What the whole run was: the shards' settings, and the drift-note rule's verdict line (the
    rule runs in one shard only)."""
    first = shards[0].info
    return CheckInfo(
        toolreplay=first.toolreplay,
        config=first.config,
        fail_on=first.fail_on,
        base=first.base,
        drift=next((s.info.drift for s in shards if s.info.drift is not None), None),
    )
