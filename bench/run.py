"""Benchmark seal, verify and replay on large generated transcripts, one per data mix.

    python bench/run.py [--megabytes 100] [--rounds 2] [--mix realistic ...]

Each operation runs as its own process (toolreplay's real CLI, the naive reference in
bench/naive.py, and sha256 over the same bytes), alternating, best of ``--rounds``; it
prints throughput ratios, which survive a noisy machine better than seconds, and the peak
RSS of the main process and of the largest worker, for each mix of bench/generate.py
(all three unless ``--mix`` names some). Every run reads compiled bytecode, as from an
installed package (see ENV). Not part of the test run.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"

# run a command in a child Python and report its own peak RSS and its children's
MEASURE = """
import resource, runpy, sys
sys.argv = sys.argv[1:]
try:
    if sys.argv[0] == "toolreplay":
        from toolreplay.cli import cli
        cli.main(args=sys.argv[1:], prog_name="toolreplay")  # exits with the command's code
    else:
        runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    sys.stderr.write(f"@@rss {me.ru_maxrss} {kids.ru_maxrss} {cpu}\\n")
"""


def run(argv: list[str]) -> tuple[float, int, int, str, float]:
    """(wall seconds, peak RSS of the process and of its largest child in KiB, stdout, CPU
    seconds of the process and its children: on a machine shared with other work the CPU
    ratio moves less than the wall-clock one)."""
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", MEASURE, *argv], capture_output=True, text=True, check=False, env=ENV
    )
    elapsed = time.perf_counter() - start
    rss = [line for line in proc.stderr.splitlines() if line.startswith("@@rss")]
    if proc.returncode not in (0, 1) or not rss:
        raise SystemExit(f"{argv} failed: {proc.stderr[-2000:]}")
    _, me, kids, cpu = rss[0].split()
    return elapsed, int(me), int(kids), proc.stdout, float(cpu)


# Compiled bytecode as an installed package has it (pip compiles on install), kept in a scratch
# folder: an editable checkout under PYTHONDONTWRITEBYTECODE would otherwise compile toolreplay's
# modules on every run, and the naive script has almost none to compile.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV["PYTHONPYCACHEPREFIX"] = str(OUT / "pycache")


def file_digest(path: Path) -> str:
    """Compare outputs without reading them whole: this process's size is inherited by the
    children it starts (ru_maxrss survives exec), so it must stay small."""
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while block := stream.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--mix", action="append", choices=MIXES, help="repeatable; default: every mix")
    ns = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    print(f"{os.cpu_count()} cores; best of {ns.rounds}, each operation alternating with the reference")
    for mix in ns.mix or MIXES:
        bench(mix, ns.megabytes, ns.rounds)


MIXES = ("ascii", "realistic", "non-ascii-heavy")


def bench(mix: str, megabytes: int, rounds: int) -> None:
    transcript = OUT / f"transcript-{mix}-{megabytes}mb.jsonl"
    if not transcript.exists():
        subprocess.run(
            [
                sys.executable,
                str(HERE / "generate.py"),
                str(transcript),
                "--megabytes",
                str(megabytes),
                "--mix",
                mix,
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    sealed = OUT / "ours.sealed.jsonl"
    naive_sealed = OUT / "naive.sealed.jsonl"
    naive = str(HERE / "naive.py")
    size = transcript.stat().st_size
    plans = {
        "seal": (
            ["toolreplay", "seal", str(transcript), "-o", str(sealed), "--force"],
            [naive, "seal", str(transcript), str(naive_sealed)],
        ),
        "verify": (["toolreplay", "verify", str(sealed)], [naive, "verify", str(naive_sealed)]),
        "replay": (["toolreplay", "replay", str(transcript)], [naive, "replay", str(transcript)]),
    }
    print(f"\n{mix}: {transcript.name}, {size / 1e6:.0f} MB")
    print(
        f"{'op':8} {'vs naive':>9} {'vs sha256':>10} {'CPU vs naive':>13}"
        f" {'peak RSS main':>14} {'largest worker':>15}"
    )
    for op, (ours_argv, naive_argv) in plans.items():
        best: dict[str, tuple[float, int, int, str, float]] = {}
        for _ in range(rounds):
            for name, argv in (
                ("naive", naive_argv),
                ("ours", ours_argv),
                ("sha", [naive, "sha", str(transcript)]),
            ):
                result = run(argv)
                if name not in best or result[0] < best[name][0]:
                    best[name] = result
        if op == "seal" and file_digest(sealed) != file_digest(naive_sealed):
            raise SystemExit("seal output differs from the naive reference")
        if op == "verify" and "chain: intact" not in best["ours"][3]:
            raise SystemExit(f"verify did not find the chain intact: {best['ours'][3][:500]}")
        ours, ref, floor = best["ours"], best["naive"], best["sha"]
        print(
            f"{op:8} {ref[0] / ours[0]:>8.2f}x {floor[0] / ours[0]:>9.2f}x {ref[4] / ours[4]:>12.2f}x"
            f" {ours[1] / 1024:>11.0f} MB {ours[2] / 1024:>12.0f} MB"
        )


if __name__ == "__main__":
    main()
