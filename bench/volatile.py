"""The cost of volatile rules with a ``pattern`` on ordinary data: ``replay``, ``diff`` and
``check`` of a session whose every answer holds a commit hash the rule masks.

    python bench/volatile.py [--calls 50000] [--rounds 3] [--against OTHER/src]

Each command runs as its own process, best of ``--rounds``, alternating: with the rule, and
without any configuration (the same files, nothing masked). It prints the ratio of the two
times (what the rule costs), and with ``--against`` (the package in another source tree, the
code before a change, say) the ratio of this tree's time with the rule to that tree's, and
whether both printed the same bytes; each as wall-clock time and as CPU time (the process's
and its children's, the pattern worker included), which moves less on a machine shared with
other work. Ratios survive a noisy machine better than seconds. Not part of the test run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out" / "volatile"
ROOT = HERE.parent
RULE = '[[volatile]]\ntool = "git_commit"\nat = "/response/content/*/text"\npattern = "[0-9a-f]{40}"\n'


def answer(i: int, salt: str) -> dict[str, object]:
    commit = hashlib.sha1(f"{salt}{i}".encode()).hexdigest()
    text = f"Changes committed successfully with hash {commit}"
    return {"content": [{"type": "text", "text": text}], "isError": False}


def prepare(calls: int) -> Path:
    """A folder with a sealed baseline, a run of the same calls with other hashes, and a config."""
    folder = OUT / str(calls)
    if (folder / "toolreplay.toml").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    for name, salt in (("baseline.jsonl", "a"), ("run.jsonl", "b")):
        with (folder / name).open("w") as out:
            for i in range(calls):
                args = {"message": f"change {i % 50}", "files": [f"src/{i % 7}.py"]}
                record = {"index": i, "tool": "git_commit", "args": args, "response": answer(i, salt)}
                out.write(json.dumps(record) + "\n")
    sealed = folder / "baseline.sealed.jsonl"
    subprocess.run(
        [sys.executable, "-m", "toolreplay", "seal", str(folder / "baseline.jsonl"), "-o", str(sealed)],
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    (folder / "runs").mkdir()
    (folder / "run.jsonl").rename(folder / "runs" / "baseline.jsonl")
    # a run pairs with the baseline by name (runs/baseline.jsonl)
    checked = 'transcripts = ["runs/*.jsonl"]\nbaselines = ["baseline.sealed.jsonl"]\n'
    (folder / "toolreplay.toml").write_text(RULE)
    (folder / "plain.toml").write_text("")
    (folder / "checked.toml").write_text(checked + RULE)
    (folder / "checked-plain.toml").write_text(checked)
    return folder


def run(argv: list[str], source: Path) -> tuple[float, str, float]:
    """(wall seconds, stdout, CPU seconds of the process and its children)."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    env["PYTHONPYCACHEPREFIX"] = str(OUT / "pycache" / hashlib.sha256(str(source).encode()).hexdigest()[:8])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "toolreplay", *argv], capture_output=True, text=True, env=env
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{argv} failed: {proc.stderr[-2000:]}")
    return elapsed, proc.stdout, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", type=Path, help="another tree's src folder (the code before a change)")
    ns = parser.parse_args()
    folder = prepare(ns.calls)
    run_file, sealed = str(folder / "runs" / "baseline.jsonl"), str(folder / "baseline.sealed.jsonl")
    plans = {
        "replay": (["replay", run_file, "--config"], "toolreplay.toml", "plain.toml"),
        "diff": (["diff", sealed, run_file, "--config"], "toolreplay.toml", "plain.toml"),
        "check": (["check", "--jobs", "1", "--config"], "checked.toml", "checked-plain.toml"),
    }
    here = ROOT / "src"
    print(f"{ns.calls} calls, each answer masked once; best of {ns.rounds}")
    other = f" {'this / other':>13} {'CPU':>6} {'same output':>12}" if ns.against else ""
    print(f"{'command':8} {'rule / no rule':>15} {'CPU':>6}{other}")
    for name, (argv, rule, plain) in plans.items():
        trees = {"rule": (here, rule), "plain": (here, plain)}
        if ns.against is not None:
            trees["other"] = (ns.against.resolve(), rule)
        best: dict[str, tuple[float, str, float]] = {}
        cpu: dict[str, float] = {}
        for _ in range(ns.rounds):
            for key, (source, config) in trees.items():
                result = run([*argv, str(folder / config)], source)
                if key not in best or result[0] < best[key][0]:
                    best[key] = result
                cpu[key] = min(cpu.get(key, result[2]), result[2])
        line = f"{name:8} {best['rule'][0] / best['plain'][0]:15.2f} {cpu['rule'] / cpu['plain']:6.2f}"
        if "other" in best:
            same = "yes" if best["other"][1] == best["rule"][1] else "NO"
            line += (
                f" {best['rule'][0] / best['other'][0]:13.2f} {cpu['rule'] / cpu['other']:6.2f} {same:>12}"
            )
        print(line, flush=True)


if __name__ == "__main__":
    main()
