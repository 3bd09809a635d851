"""Sharding ``toolreplay check`` over a CI matrix (docs/spec.md §10), and what binds a shard to
one checkout.

With ``shard`` (``check --shard K/N``) only the jobs of shard K run, and the drift-note rule
only in shard 1; ``toolreplay merge`` puts the shards' reports back together
(:mod:`toolreplay.report.merge`).

A job (a transcript, or a baseline with the runs paired with it) goes to shard
``1 + int(sha256(PATH)[:16], 16) % N``, where PATH is the job's path as reports name it:
relative to the config file's folder, in POSIX form (``runs/checkout.jsonl``), encoded as
UTF-8. The checkout's location and the operating system do not enter it, so every job
lands in exactly one shard, the same one on every machine.

The drift-note rule (``check --base REF``) is about the pull request, not about one file:
shard 1 runs it, the other shards leave it out, and the merge takes it from shard 1.

Every shard report names the commit it judged and a digest of every file the whole check
reads (not only the shard's own), so all shards of one checkout agree on both and a shard of
another commit, or of a checkout with an uncommitted edit, does not.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from toolreplay._version import __version__
from toolreplay.config import Config, expand
from toolreplay.errors import InputError
from toolreplay.escape import quote
from toolreplay.files import SEALED_SUFFIX
from toolreplay.findings import CheckInfo
from toolreplay.git import head_commit
from toolreplay.limits import DEFAULT_BUDGET_SECONDS
from toolreplay.volatile_rules import Rule

#: The shard that runs the drift-note rule of ``--base``.
DRIFT_SHARD = 1
#: digits of a shard number: more shards than that would leave nearly all of them empty
_SHARD_DIGITS = 18


@dataclass(frozen=True, slots=True)
class Shard:
    """Shard ``index`` of ``count`` (1-based)."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(spec: str) -> Shard:
    """``K/N`` with 1 <= K <= N, as decimal numbers; anything else is a usage error."""
    index, count = _numbers(spec)
    if count < 1 or not 1 <= index <= count:
        raise InputError(f"--shard {quote(spec)}: K must be between 1 and N (N at least 1)")
    return Shard(index, count)


def _numbers(spec: str) -> tuple[int, int]:
    """The two whole numbers of ``K/N``."""
    parts = spec.strip().split("/")
    if len(parts) != 2 or not all(_digits(p) for p in parts):
        raise InputError(f"--shard {quote(spec)}: expected K/N, two whole numbers such as 2/4")
    if any(len(p) > _SHARD_DIGITS for p in parts):  # (and int() stops at 4300 digits)
        raise InputError(f"--shard {quote(spec)}: K and N have at most {_SHARD_DIGITS} digits")
    return int(parts[0]), int(parts[1])


def _digits(text: str) -> bool:
    """ASCII digits only (``str.isdigit`` also takes "²")."""
    return text.isascii() and text.isdigit()


def shard_of(path: str, count: int) -> int:
    """The shard (1..count) of the job with this path (see the module docstring)."""
    digest = hashlib.sha256(path.encode("utf-8")).hexdigest()
    return 1 + int(digest[:16], 16) % count


def config_digest(config: Config) -> str:
    """A digest of what the configuration asks for; not of where it lives, nor of its formatting."""
    settings: dict[str, object] = {
        "transcripts": list(config.transcripts),
        "baselines": list(config.baselines),
        "scope": config.scope,
        "tools_lock": config.tools_lock,
        "mutators": sorted(config.mutators),
        "state_aware": config.state_aware,
        "drift_notes": config.drift_notes,
        "max_baseline_age_days": config.max_baseline_age_days,
        "fail_on": None if config.fail_on is None else sorted(config.fail_on),
    }
    settings.update(_later_settings(config))
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def _later_settings(config: Config) -> dict[str, object]:
    """The settings added after the digest's first release, those that are set: the digests of
    configurations without them stay the same."""
    settings: dict[str, object] = {}
    if config.tools_source is not None:
        settings["tools_source"] = _source_setting(config.tools_source)
    if config.pattern_budget_seconds != DEFAULT_BUDGET_SECONDS:
        settings["pattern_budget_seconds"] = config.pattern_budget_seconds
    if config.volatile:  # shards that mask other values are not one check
        settings["volatile"] = [_rule_setting(r) for r in config.volatile]
    return settings


def _source_setting(source: str | tuple[str, ...]) -> str | list[str]:
    """A tools_source as JSON holds it: a file or module's name, or a server's command line."""
    return source if isinstance(source, str) else list(source)


def _rule_setting(rule: Rule) -> dict[str, str]:
    table = {"tool": rule.tool, "at": rule.at}
    if rule.pattern is not None:
        table["pattern"] = rule.pattern
    return table


def covered_files(config: Config) -> tuple[list[str], list[str]]:
    """(baselines, transcripts) the configuration checks, as paths relative to its folder, sorted."""
    baselines = [p for p in expand(config, config.baselines) if p.endswith(SEALED_SUFFIX)]
    transcripts = [p for p in expand(config, config.transcripts) if not p.endswith(SEALED_SUFFIX)]
    return baselines, transcripts


def input_files(config: Config) -> list[tuple[str, str, Path]]:
    """Every file a whole ``check`` of ``config`` reads, as (role, name, location): the baselines
    and transcripts, the scope, the tools lock, and the ``tools_source`` when it is a file that
    check reads (with a lock). A module or a server's command line is no file: the commit binds it."""
    baselines, transcripts = covered_files(config)
    found = [("baseline", b, config.root / b) for b in baselines]
    found += [("transcript", t, config.root / t) for t in transcripts]
    return found + _named_files(config)


def _named_files(config: Config) -> list[tuple[str, str, Path]]:
    """The scope, the tools lock, and with a lock the ``tools_source`` when it is a file."""
    found = []
    if config.scope:
        found.append(("scope", config.scope, config.root / config.scope))
    if config.tools_lock:
        found.append(("tools_lock", config.tools_lock, config.root / config.tools_lock))
        source = config.tools_source
        if isinstance(source, str) and (config.root / source).is_file():
            found.append(("tools_source", source, config.root / source))
    return found


def inputs_digest(config: Config) -> str:
    """A digest of every file a whole ``check`` of ``config`` reads: each one's role, its name as
    the configuration gives it, and the SHA-256 of its bytes (null when it cannot be read; check
    then reports it unreadable). Read in pieces, so a large transcript costs no memory."""
    entries = [[role, name, _file_digest(location)] for role, name, location in input_files(config)]
    text = json.dumps(entries, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def _file_digest(location: Path) -> str | None:
    try:
        # a device or a pipe (/dev/zero, a FIFO as the scope) is not opened, nor read to its end
        if not stat.S_ISREG(os.stat(location).st_mode):
            return None
        with open(location, "rb") as stream:
            return hashlib.file_digest(stream, "sha256").hexdigest()
    except OSError:
        return None


def checkout_commit(config: Config) -> str | None:
    """The commit checked out where the configuration lives (None outside git)."""
    return head_commit(str(config.root))


def check_info(
    config: Config,
    *,
    base: str | None,
    shard: Shard | None,
    fail_on: frozenset[str] | None,
    drift: str | None = None,
) -> CheckInfo:
    """What the run was; ``fail_on`` is the run's (the config's, or over a range what
    :func:`toolreplay.driftnotes.pull.judged_fail_on` decided)."""
    return CheckInfo(
        toolreplay=__version__,
        config=config_digest(config),
        fail_on=None if fail_on is None else tuple(sorted(fail_on)),
        base=base,
        shard=None if shard is None else (shard.index, shard.count),
        drift=drift,
        commit=None if shard is None else checkout_commit(config),
        inputs=None if shard is None else inputs_digest(config),
    )
