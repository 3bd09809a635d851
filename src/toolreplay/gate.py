"""Which findings fail the build: the one reading of ``fail_on`` (the config's list), ``--fail-on``
(``check``, ``diff``, ``probe``) and the Action's ``fail-on`` input (docs/spec.md §7).

A list names kinds; ``all`` stands for every kind that fails by default (all but the advisory
ones), and ``-KIND`` takes a kind out of it, so turning one kind off is
``["all", "-audit-incomplete"]`` rather than a copy of every other kind. Light on purpose:
the configuration reads it, and the hooks read a configuration on every commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from toolreplay.escape import quote
from toolreplay.kinds import ADVISORY_KINDS, KIND_ORDER, KINDS, REPORT_ERROR, STANDS_FOR, kind_fails

#: the word for every kind that fails by default
ALL = "all"


def known_kinds() -> frozenset[str]:
    """Every finding kind a list may name (``report-error``: a file that cannot be read)."""
    return frozenset(KIND_ORDER) | frozenset(KINDS) | {REPORT_ERROR}


def default_kinds() -> frozenset[str]:
    """What ``all`` stands for: every kind but the advisory ones (the default when nothing is said)."""
    return known_kinds() - ADVISORY_KINDS


def list_words() -> tuple[str, ...]:
    """Every item a ``fail_on`` list may hold, in the order the config schema lists them."""
    kinds = sorted(known_kinds())
    return (*kinds, ALL, *(f"-{kind}" for kind in kinds))


class FailOnError(ValueError):
    """A list that names no kind toolreplay knows, or says something it cannot mean; the text says why."""


def _refuse_unknown(items: Sequence[str]) -> None:
    known = known_kinds()
    for item in items:
        name = item.removeprefix("-")
        if item != ALL and name not in known:
            raise FailOnError(f"unknown finding kind {quote(name)}")


def _refuse_odd_removals(items: Sequence[str], named: set[str], removed: set[str]) -> None:
    """``-report-error``, a ``-KIND`` without ``all``, and a kind both named and taken out."""
    _refuse_report_error_removal(removed)
    if removed and ALL not in items:
        first = next(item for item in items if item.startswith("-"))
        raise FailOnError(f"{quote(first)} takes a kind out of nothing; start the list with {quote(ALL)}")
    both = sorted(named & removed)
    if both:
        raise FailOnError(f"{quote(both[0])} is both named and taken out ({quote('-' + both[0])})")


def _refuse_report_error_removal(removed: set[str]) -> None:
    # check fails on a file it cannot read whatever the list says (only the Action's none does not)
    if REPORT_ERROR in removed:
        raise FailOnError(
            f"{quote('-' + REPORT_ERROR)} changes nothing: a file that cannot be read fails the build"
        )


def _refuse_idle_removals(removed: set[str], kinds: frozenset[str]) -> None:
    """A kind taken out that fails anyway, because it stands for another kind the list keeps."""
    for kind in sorted(removed):
        stands_for = STANDS_FOR.get(kind)
        if stands_for is not None and kind_fails(stands_for, kinds):
            raise FailOnError(
                f"{quote('-' + kind)} changes nothing: {kind} fails whenever {stands_for} does;"
                f" take out {quote('-' + stands_for)} too, or keep {kind}"
            )


def resolve(items: Sequence[str]) -> frozenset[str] | None:
    """The kinds a ``fail_on`` list fails (None: the default, which ``["all"]`` is too).

    Raises :class:`FailOnError` for an unknown kind (a typo would switch the gate off for it),
    a ``-KIND`` without ``all`` before it (it would take a kind out of nothing), a kind both
    named and taken out, and taking out a kind that fails anyway because it stands for
    another kind the list keeps (``scope-unjudged`` while ``argument-overreach`` fails).
    """
    _refuse_unknown(items)
    named, removed = _named_and_removed(items)
    _refuse_odd_removals(items, named, removed)
    kinds = ((default_kinds() if ALL in items else frozenset()) | named) - removed
    _refuse_idle_removals(removed, kinds)
    if kinds == default_kinds() and ALL in items:
        return None
    return frozenset(kinds)


def _named_and_removed(items: Sequence[str]) -> tuple[set[str], set[str]]:
    """The kinds a list names, and those it takes out (``-KIND``)."""
    removed = {item[1:] for item in items if item.startswith("-")}
    named = {item for item in items if item != ALL and not item.startswith("-")}
    return named, removed


@dataclass(frozen=True, slots=True, kw_only=True)
class FailPolicy:
    """Which findings fail the job: ``kinds`` None means every kind but the advisory ones.

    ``errors``: whether unreadable files fail it.
    """

    kinds: frozenset[str] | None
    errors: bool = True

    def fails(self, kind: str) -> bool:
        return kind_fails(kind, self.kinds)


def parse_fail_on(text: str, default: frozenset[str] | None, *, name: str) -> FailPolicy:
    """A ``fail-on`` text: empty (``default``, the config's), ``any``, ``none``, or a list separated
    by commas (``all,-audit-incomplete``). ``name`` says where it came from in errors
    (``input fail-on``, ``--fail-on``); raises :class:`FailOnError`."""
    value = text.strip()
    if not value:
        return FailPolicy(kinds=default)
    word = _WORDS.get(value.lower())
    if word is not None:
        return word
    return _listed(value, name)


#: the words ``fail-on`` takes instead of a list: every kind fails, or nothing does
_WORDS = {"any": FailPolicy(kinds=None), "none": FailPolicy(kinds=frozenset(), errors=False)}


def _listed(value: str, name: str) -> FailPolicy:
    """A list of kinds separated by commas, as :func:`resolve` reads it."""
    items = [item.strip() for item in value.split(",") if item.strip()]
    choices = "use any, none, all, -KIND after all, or kinds separated by commas: " + ", ".join(
        sorted(known_kinds())
    )
    if not items:
        raise FailOnError(f"{name}: unknown finding kind {quote(value)}; {choices}")
    try:
        return FailPolicy(kinds=resolve(items))
    except FailOnError as err:
        raise FailOnError(f"{name}: {err}; {choices}") from None


def describe(policy: FailPolicy) -> str:
    """A policy as ``fail-on`` would say it, the shorter way: ``any``, ``none``, its kinds, or
    ``all`` and the kinds taken out (``all,-audit-incomplete``)."""
    if policy.kinds is None:
        return "any"
    if not policy.kinds and not policy.errors:
        return "none"
    kept = policy.kinds & default_kinds()
    if len(kept) * 2 <= len(default_kinds()):
        return ",".join(sorted(policy.kinds))
    removed = [f"-{kind}" for kind in sorted(default_kinds() - policy.kinds)]
    return ",".join([ALL, *removed, *sorted(policy.kinds - default_kinds())])
