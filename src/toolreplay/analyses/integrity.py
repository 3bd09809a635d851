"""Findings about a sealed file's integrity: a broken chain, an anchor or a signature that fails,
a baseline too old to trust.

Every command that judges a sealed file (``verify``, ``check``, ``diff``) reports a failure
as one of these findings, so it reaches every report format (a SARIF result, a GitHub
annotation, a JSON finding) and not only a header line of the text report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolreplay.chain import Break
from toolreplay.escape import quote
from toolreplay.findings import Finding
from toolreplay.kinds import ANCHOR_MISMATCH, CHAIN_BROKEN, SIGNATURE_INVALID, STALE_BASELINE

if TYPE_CHECKING:  # the freshness module (datetime) is not needed to verify a chain
    from toolreplay.analyses.freshness import Freshness


def chain_broken(broken: Break, *, path: str, suffix: str = "") -> Finding:
    """The ``chain-broken`` finding at the first link that does not follow (``suffix`` ends its message)."""
    text = (
        f"the chain breaks here: {broken.reason};"
        f" expected digest {broken.expected}, found {quote(broken.found)}"
    )
    return Finding(
        kind=CHAIN_BROKEN,
        index=broken.position,
        tool="",
        path=path,
        line=broken.line,
        message=text + suffix,
    )


def anchor_mismatches(
    *, path: str, head: str, links: int, expect_head: str | None, expect_count: int | None
) -> list[Finding]:
    """One ``anchor-mismatch`` finding per anchor the intact chain does not end on.

    The finding is about the file as a whole (what it holds as a whole differs from what
    was pinned), so it has no index or line.
    """
    found = []
    if expect_head is not None and expect_head != head:
        found.append(f"the chain ends on head {head}, but the anchor expects {expect_head}")
    if expect_count is not None and expect_count != links:
        found.append(f"the chain has {links} links, but the anchor expects {expect_count}")
    return [Finding(kind=ANCHOR_MISMATCH, index=None, tool="", path=path, message=m) for m in found]


def signature_invalid(problem: str, *, path: str, signature: str) -> Finding:
    """The ``signature-invalid`` finding: ``signature`` does not anchor the file at ``path``."""
    return Finding(
        kind=SIGNATURE_INVALID,
        index=None,
        tool="",
        path=path,
        message=f"the signature {quote(signature)} does not anchor this file: {problem}",
    )


def stale_baseline(freshness: Freshness, *, path: str) -> Finding:
    """The ``stale-baseline`` finding: the baseline at ``path`` was last committed too long ago."""
    return Finding(
        kind=STALE_BASELINE,
        index=None,
        tool="",
        path=path,
        message=(
            f"last committed {freshness.committed}, more than {freshness.max_age_days} days"
            " before this check; re-record it"
        ),
    )
