"""Start-up of the commands every pre-commit hook and CI step pays, as a ratio to a bare
interpreter start (``python -c pass`` from the same environment).

    python bench/startup.py [--rounds 10]

Each command runs through the installed ``toolreplay`` script (what pre-commit runs) on a
small transcript sealed here, in a scratch folder with no configuration; ``hook drift-note``
in a scratch git repository with one change staged. The commands and the bare start
alternate, round after round, and each keeps its best wall time, so both see the same
machine. Not part of the test run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parent / "samples" / "session-clean.jsonl"


def toolreplay() -> list[str]:
    """The console script beside this interpreter, else ``python -m toolreplay``."""
    script = Path(sys.executable).parent / "toolreplay"
    return [str(script)] if script.exists() else [sys.executable, "-m", "toolreplay"]


def wall(argv: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.decode()[-2000:]}")
    return elapsed


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, stdout=subprocess.DEVNULL)


def scratch(folder: Path) -> tuple[Path, Path]:
    """A sealed transcript, and a git repository with one commit and a change staged."""
    sealed = folder / "session.sealed.jsonl"
    subprocess.run([*toolreplay(), "seal", str(SAMPLE), "-o", str(sealed)], check=True)
    repo = folder / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "bench@example.invalid")
    git(repo, "config", "user.name", "bench")
    (repo / "README.md").write_text("one\n", encoding="utf-8")
    git(repo, "add", "README.md")
    git(repo, "commit", "-q", "-m", "one")
    (repo / "README.md").write_text("two\n", encoding="utf-8")
    git(repo, "add", "README.md")
    return sealed, repo


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    ns = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        sealed, repo = scratch(folder)
        cli = toolreplay()
        plans: dict[str, tuple[list[str], Path]] = {
            "python -c pass": ([sys.executable, "-c", "pass"], folder),
            "version": ([*cli, "version"], folder),
            "verify": ([*cli, "verify", str(sealed)], folder),
            "hook verify": ([*cli, "hook", "verify", str(sealed)], folder),
            "hook drift-note": ([*cli, "hook", "drift-note"], repo),
            "validate": ([*cli, "validate", str(sealed)], folder),
        }
        best = dict.fromkeys(plans, float("inf"))
        for _ in range(ns.rounds):
            for name, (argv, cwd) in plans.items():
                best[name] = min(best[name], wall(argv, cwd))
    bare = best.pop("python -c pass")
    print(f"{os.cpu_count()} cores; best of {ns.rounds}; python -c pass: {bare * 1000:.1f} ms")
    print(f"{'command':16} {'ms':>7} {'vs bare':>8}")
    for name, seconds in best.items():
        print(f"{name:16} {seconds * 1000:>7.1f} {seconds / bare:>7.1f}x")


if __name__ == "__main__":
    if shutil.which("git") is None:
        raise SystemExit("bench/startup.py needs git (for hook drift-note)")
    main()
