"""What a baseline and its runs are judged with (docs/spec.md §3.4, §3.6, §7.1).

One value, :class:`Judging`, holds every setting that decides the differences and findings of
two sides: the volatile rules and the time their patterns may take, the tools that change
state, what a tool lock declares, and what changed in a tool's contract. Every channel that
compares a baseline with something (``diff``, ``check``, ``note``, the PR comment's review of a
changed baseline) builds it from its configuration with :func:`judging_of` (over a pull
request's range, the base commit's: :func:`toolreplay.driftnotes.pull.judged_config`) and
hands it to :func:`toolreplay.analyses.baseline.diff_tables`, which reads nothing else; so a
drift is judged the same way wherever it is shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from toolreplay.analyses.calltable import Store
from toolreplay.analyses.volatile import Volatile
from toolreplay.config import DEFAULT_MUTATORS
from toolreplay.contracts.lock import load_lock
from toolreplay.limits import DEFAULT_BUDGET_SECONDS
from toolreplay.volatile_rules import Rule

if TYPE_CHECKING:
    from toolreplay.config import Config
    from toolreplay.contracts.lock import ToolLock


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolBehaviour:
    """What a tool lock declares about one tool (docs/spec.md §1.5); None means "not declared"."""

    fingerprint: str | None = None
    deterministic: bool = True
    mutates: bool | None = None
    #: the locked contract's version, shown beside its fingerprint
    version: str | None = None
    #: the locked contract's text digest (None: the lock keeps no contract text)
    text_digest: str | None = None


def lock_behaviour(path: str) -> dict[str, ToolBehaviour]:
    """Per-tool ``fingerprint``, ``deterministic`` and ``mutates`` from a tool lock (docs/spec.md §1.5)."""

    return behaviour_of(load_lock(path))


def behaviour_of(lock: ToolLock) -> dict[str, ToolBehaviour]:
    """What the diff needs of each contract in a loaded lock."""
    return {
        name: ToolBehaviour(
            fingerprint=c.fingerprint,
            deterministic=c.deterministic,
            mutates=c.mutates,
            version=c.version,
            text_digest=c.text_digest,
        )
        for name, c in lock.tools.items()
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class Judging:
    """Every setting that decides what differs between a baseline and its runs, and what is a finding.

    ``behaviour`` is what the tool lock declares: a tool's ``mutates`` overrides ``mutators`` for
    it, ``deterministic: false`` exempts its responses from comparison, and its fingerprint and
    contract text are held to the recorded ones. ``explain`` maps a tool to what changed in its
    contract (``fingerprint-diff``'s words), added to its ``tool-drift``. Without
    ``lock_checks_runs`` a run call whose fingerprint differs from the lock is left to that run's
    own check against the lock (``check`` runs it), so one call is not reported twice. Calls and
    values are compared with what the ``volatile`` rules mask masked (:meth:`store`).
    """

    mutators: frozenset[str] = DEFAULT_MUTATORS
    behaviour: Mapping[str, ToolBehaviour] = field(default_factory=dict)
    volatile: tuple[Rule, ...] = ()
    #: the time the rules' patterns may take on one file (the config's pattern_budget_seconds)
    pattern_budget: float = DEFAULT_BUDGET_SECONDS
    explain: Mapping[str, str] = field(default_factory=dict)
    lock_checks_runs: bool = True

    def masking(self) -> Volatile:
        """The volatile rules at work, counting what they mask."""
        return Volatile(self.volatile, budget=self.pattern_budget)

    def store(self, masking: Volatile | None = None) -> Store:
        """The store every table of one comparison is read into: its calls masked by the rules
        (through ``masking``, one of :meth:`masking`'s, when its counts are wanted afterwards)."""
        return Store(self.masking() if masking is None else masking)


def judging_of(
    config: Config | None,
    *,
    explain: Mapping[str, str] | None = None,
    lock_checks_runs: bool = True,
) -> Judging:
    """What ``config`` judges a baseline and its runs with (the defaults without a configuration):
    its volatile rules, pattern budget, mutators and tools lock."""
    if config is None:
        return Judging(explain=dict(explain or {}), lock_checks_runs=lock_checks_runs)
    behaviour = lock_behaviour(str(config.root / config.tools_lock)) if config.tools_lock else {}
    return Judging(
        mutators=config.mutators,
        behaviour=behaviour,
        volatile=config.volatile,
        pattern_budget=config.pattern_budget_seconds,
        explain=dict(explain or {}),
        lock_checks_runs=lock_checks_runs,
    )


def is_mutator(tool: str, behaviour: Mapping[str, ToolBehaviour], mutators: frozenset[str]) -> bool:
    """Whether a call of ``tool`` changes state: as the lock declares it, else whether ``mutators``
    names it."""
    declared = behaviour.get(tool)
    if declared is not None and declared.mutates is not None:
        return declared.mutates
    return tool in mutators
