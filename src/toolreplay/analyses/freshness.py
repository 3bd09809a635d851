"""A baseline's age against its limit (docs/spec.md §3.4): the date of its last commit, and
whether that is longer ago than ``max_baseline_age_days``."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

_SECONDS_PER_DAY = 86400
#: what the freshness check says of a baseline no commit has yet
NOT_COMMITTED = "not committed yet"


@dataclass(frozen=True, slots=True, kw_only=True)
class Freshness:
    """The age check of a baseline against its last git commit."""

    committed: str
    max_age_days: int
    stale: bool
    #: no commit has the baseline yet: its age starts with its first commit
    uncommitted: bool = False


def check_freshness(commit_time: int | None, *, now: int, max_age_days: int) -> Freshness:
    """Is a baseline last committed at ``commit_time`` older than ``max_age_days`` at ``now``?

    Both times are Unix seconds; ``now`` is passed in so the rule is testable and the
    report shows only the commit date, never the current time. A baseline no commit has
    yet (``None``) is not stale: it is about to be committed, and its age starts then.
    """
    if commit_time is None:
        return Freshness(committed=NOT_COMMITTED, max_age_days=max_age_days, stale=False, uncommitted=True)
    try:
        committed = datetime.fromtimestamp(commit_time, tz=UTC).strftime("%Y-%m-%d")
    except (OverflowError, OSError, ValueError):  # a commit date git takes and datetime does not
        committed = f"@{commit_time}"  # (past year 9999 or before year 1): git's own raw spelling
    stale = now - commit_time > max_age_days * _SECONDS_PER_DAY
    return Freshness(committed=committed, max_age_days=max_age_days, stale=stale)
