"""The note `toolreplay note` writes is the note the drift-note guard asks for."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gitrepo import Repo, git_env


def toolreplay(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolreplay", *args],
        cwd=repo.path,
        env=git_env(),
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize("change", ["modified", "added", "deleted"])
def test_note_then_guard(tmp_path: Path, change: str) -> None:
    """note's template plus a written reason satisfies the guard; the bare template does not."""
    repo = Repo.create(tmp_path / "repo")
    repo.write("README.md", "x\n")
    if change != "added":
        repo.write_baseline("baselines/checkout.sealed.jsonl", 3)
    repo.commit_all("start")
    if change == "modified":
        repo.write_baseline("baselines/checkout.sealed.jsonl", 4)
    elif change == "added":
        repo.write_baseline("baselines/checkout.sealed.jsonl", 2)
    else:
        os.remove(repo.path / "baselines" / "checkout.sealed.jsonl")
    made = toolreplay(repo, "note", "baselines/checkout.sealed.jsonl", "-o", "drift-notes/checkout.md")
    assert made.returncode == 0, made.stderr
    repo.git("add", "-A")
    bare = toolreplay(repo, "hook", "drift-note")
    assert bare.returncode == 1  # the reason is the human's to write
    note = repo.path / "drift-notes" / "checkout.md"
    note.write_text(note.read_text() + "\nThe checkout service now returns the new tax field.\n")
    repo.git("add", "-A")
    done = toolreplay(repo, "hook", "drift-note")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "every baseline change has its note" in done.stdout


def test_following_the_refusal_twice_keeps_the_first_note(tmp_path: Path) -> None:
    """On a second change the guard proposes a new note file, and note -o never replaces the first."""
    repo = Repo.create(tmp_path / "repo")
    repo.write_baseline("baselines/checkout.sealed.jsonl", 3)
    repo.commit_all("start")
    first = repo.path / "drift-notes" / "checkout.md"
    for calls, proposed in ((4, "drift-notes/checkout.md"), (5, "drift-notes/checkout-2.md")):
        repo.write_baseline("baselines/checkout.sealed.jsonl", calls)
        repo.git("add", "-A")
        refused = toolreplay(repo, "hook", "drift-note")
        assert refused.returncode == 1
        command = f"write the note: toolreplay note baselines/checkout.sealed.jsonl -o {proposed}\n"
        assert command in refused.stdout
        if calls == 5:
            again = toolreplay(
                repo, "note", "baselines/checkout.sealed.jsonl", "-o", "drift-notes/checkout.md"
            )
            assert again.returncode == 2
            assert again.stderr == (
                "toolreplay: error: drift-notes/checkout.md: already exists; not replacing it"
                " (--force replaces it)\n"
            )
            assert "Version 4 added a call." in first.read_text()
        made = toolreplay(repo, "note", "baselines/checkout.sealed.jsonl", "-o", proposed)
        assert made.returncode == 0, made.stderr
        written = repo.path / proposed
        written.write_text(written.read_text() + f"\nVersion {calls} added a call.\n")
        repo.git("add", "-A")
        done = toolreplay(repo, "hook", "drift-note")
        assert done.returncode == 0, done.stdout
        repo.git("commit", "-q", "-m", f"v{calls}")
