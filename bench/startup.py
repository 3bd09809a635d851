"""Start-up of the commands every pre-commit hook and CI step pays, as a ratio to a bare
interpreter start (``python -c pass`` from the same environment).

    python bench/startup.py [--rounds 10]

Each command runs through the ``toolreplay`` script beside this interpreter (what pre-commit
runs) on a small transcript sealed here, in a scratch folder with no configuration; ``hook
drift-note`` in a scratch git repository with one change staged (no baseline, no note: most
commits). ``validate`` is the toolreplay-validate hook's command, on the same sealed file.

Two settings, each against its own bare start:

* ``cached``: compiled bytecode is read from a scratch cache (``PYTHONPYCACHEPREFIX``,
  filled by one untimed round), as in an installed package;
* ``source``: ``PYTHONDONTWRITEBYTECODE=1``, so an editable checkout that never wrote its
  ``__pycache__`` compiles toolreplay's modules on every run (the other packages keep the
  bytecode their installer wrote).

The commands and the bare start alternate, round after round, and each keeps its best wall
time, so all see the same machine. Not part of the test run.
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
#: git variables that would point the scratch repository's git at another one
GIT_LEAKS = ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_OBJECT_DIRECTORY", "GIT_PREFIX")
BARE = "python -c pass"


def toolreplay() -> list[str]:
    """The console script beside this interpreter, else ``python -m toolreplay``."""
    script = Path(sys.executable).parent / "toolreplay"
    return [str(script)] if script.exists() else [sys.executable, "-m", "toolreplay"]


def environments(folder: Path) -> dict[str, dict[str, str]]:
    base = {k: v for k, v in os.environ.items() if k not in GIT_LEAKS}
    base.pop("PYTHONPYCACHEPREFIX", None)
    cached = {k: v for k, v in base.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cached["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
    return {"cached": cached, "source": {**base, "PYTHONDONTWRITEBYTECODE": "1"}}


def wall(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False
    )
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.decode()[-2000:]}")
    return elapsed


def scratch(folder: Path, env: dict[str, str]) -> tuple[Path, Path]:
    """A sealed transcript, and a git repository with one commit and a change staged."""
    sealed = folder / "session.sealed.jsonl"
    subprocess.run([*toolreplay(), "seal", str(SAMPLE), "-o", str(sealed)], env=env, check=True)
    repo = folder / "repo"
    repo.mkdir()

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, stdout=subprocess.DEVNULL)

    git("init", "-q")
    git("config", "user.email", "bench@example.invalid")
    git("config", "user.name", "bench")
    (repo / "README.md").write_text("one\n", encoding="utf-8")
    git("add", "README.md")
    git("commit", "-q", "-m", "one")
    (repo / "README.md").write_text("two\n", encoding="utf-8")
    git("add", "README.md")
    return sealed, repo


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    ns = parser.parse_args()
    if shutil.which("git") is None:
        raise SystemExit("bench/startup.py needs git (for hook drift-note)")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        envs = environments(folder)
        sealed, repo = scratch(folder, envs["cached"])
        cli = toolreplay()
        plans: dict[str, tuple[list[str], Path]] = {
            BARE: ([sys.executable, "-c", "pass"], folder),
            "version": ([*cli, "version"], folder),
            "verify": ([*cli, "verify", str(sealed)], folder),
            "hook verify": ([*cli, "hook", "verify", str(sealed)], folder),
            "hook drift-note": ([*cli, "hook", "drift-note"], repo),
            "validate": ([*cli, "validate", str(sealed)], folder),
        }
        for argv, cwd in plans.values():  # fills the bytecode cache; not timed
            wall(argv, cwd, envs["cached"])
        best = {(name, mode): float("inf") for name in plans for mode in envs}
        for _ in range(ns.rounds):
            for name, (argv, cwd) in plans.items():
                for mode, env in envs.items():
                    best[name, mode] = min(best[name, mode], wall(argv, cwd, env))
    print(f"{os.cpu_count()} cores; best of {ns.rounds} wall times, ratios to {BARE} in the same run")
    print(f"{'':16} {'cached':>17} {'source':>17}")
    for name in plans:
        cells = []
        for mode in envs:
            seconds = best[name, mode]
            cells.append(f"{seconds * 1000:7.1f} ms {seconds / best[BARE, mode]:5.1f}x")
        print(f"{name:16} {'  '.join(cells)}")


if __name__ == "__main__":
    main()
