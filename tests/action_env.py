"""A pull request's workspace and runner environment for the Action's tests.

The workspace is a real git repository with a toolreplay.toml, a scope, a transcript and a
sealed baseline; the base commit has baseline v3, the head commit re-seals it as v4 (with
or without a drift note), as a pull request that changes a baseline would.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from tests.gitrepo import Repo, note, sealed
from toolreplay.transcript import make_record, record_line

OWNER, NAME, NUMBER = "octo-org", "agents", 7
BASELINE = "baselines/checkout.sealed.jsonl"
TRANSCRIPT = "agents/run.jsonl"
V3, V4 = sealed(3)[1], sealed(4)[1]

CONFIG = """\
transcripts = ["agents/*.jsonl"]
baselines = ["baselines/*.sealed.jsonl"]
scope = "scope.json"
drift_notes = "drift-notes"
"""


def transcript(tools: list[str] | None = None) -> str:
    """read_file twice (redundant at index 1), search twice with different answers (divergence at
    index 4), then one call to each of ``tools`` (outside the scope)."""
    calls = [
        ("read_file", {"path": "docs/a.md"}, {"text": "A"}),
        ("read_file", {"path": "docs/a.md"}, {"text": "A"}),
        ("search", {"q": "x"}, {"hits": [1]}),
        ("read_file", {"path": "docs/b.md"}, {"text": "B"}),
        ("search", {"q": "x"}, {"hits": [2]}),
        *((tool, {"q": tool}, {"out": tool}) for tool in tools or []),
    ]
    return "".join(
        record_line(make_record(index=i, tool=t, args=a, response=r)) + "\n"
        for i, (t, a, r) in enumerate(calls)
    )


@dataclass(frozen=True)
class PullRequest:
    repo: Repo
    base: str
    head: str

    @property
    def path(self) -> Path:
        return self.repo.path

    def event(self, folder: Path, *, fork: bool = False) -> Path:
        """The pull_request event payload GitHub writes to GITHUB_EVENT_PATH."""
        head_repo = f"someone/{NAME}" if fork else f"{OWNER}/{NAME}"
        payload = {
            "action": "synchronize",
            "number": NUMBER,
            "pull_request": {
                "number": NUMBER,
                "base": {"sha": self.base, "ref": "main", "repo": {"full_name": f"{OWNER}/{NAME}"}},
                "head": {"sha": self.head, "ref": "feature", "repo": {"full_name": head_repo}},
            },
            "repository": {"full_name": f"{OWNER}/{NAME}"},
        }
        target = folder / "event.json"
        target.write_text(json.dumps(payload), encoding="utf-8")
        return target


def pull_request(path: Path, *, with_note: bool = False, tools: list[str] | None = None) -> PullRequest:
    """Base: config, scope, transcript, baseline v3. Head: baseline v4 (and a note when asked)."""
    repo = Repo.create(path)
    repo.write("toolreplay.toml", CONFIG)
    repo.write("scope.json", json.dumps({"agent": "docs-reader", "allowed_tools": ["read_file", "search"]}))
    repo.write(TRANSCRIPT, transcript(tools))
    repo.write_baseline(BASELINE, 3)
    repo.commit_all("base")
    base = repo.head()
    repo.git("checkout", "-q", "-b", "feature")
    repo.write_baseline(BASELINE, 4)
    if with_note:
        repo.write("drift-notes/v4.md", note(BASELINE, V3, V4))
    repo.commit_all("re-record the checkout baseline")
    return PullRequest(repo=repo, base=base, head=repo.head())


def parse_outputs(text: str) -> dict[str, str]:
    """Read a GITHUB_OUTPUT file the way the runner does (``name=value`` and ``name<<DELIM`` blocks)."""
    out: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line:
            continue
        eq, heredoc = line.find("="), line.find("<<")
        if heredoc >= 0 and (eq < 0 or heredoc < eq):
            name, delimiter = line[:heredoc], line[heredoc + 2 :]
            value: list[str] = []
            while lines[i] != delimiter:
                value.append(lines[i])
                i += 1
            i += 1
            out[name] = "\n".join(value)
        else:
            out[line[:eq]] = line[eq + 1 :]
    return out


_DELIMITER = re.compile(r"^[^<\n]+<<(ghadelimiter_[0-9a-f]{32})$", re.MULTILINE)


def delimiters(text: str) -> list[str]:
    """The heredoc delimiters used in a GITHUB_OUTPUT file."""
    return _DELIMITER.findall(text)
