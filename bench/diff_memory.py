"""Peak memory and time of ``toolreplay diff`` (or of ``check``, which diffs its runs against
their baselines the same way) as its inputs grow.

    python bench/diff_memory.py [40 200] [--against OTHER/src] [--rounds N] [--command check]

For each size (megabytes) it generates a baseline with bench/generate.py (``--mix
realistic``), seals it, and writes a run that is the same session with a few changes
every 500 calls (a call left out, a call made twice, one with another response, one with
other arguments), so the alignment and every comparison have work to do all along. Then
``toolreplay diff`` runs as its own process and the peak RSS of that process (and of any
worker it starts) and its time are printed, with the ratio of each size's figures to the
first size's. ``--against`` also runs the diff with the package in another source tree
(``/path/to/checkout/src``, the code before a change, say) and says whether both printed
the same bytes; with ``--rounds`` the time is the best of that many runs, alternating. With
``--command check`` the baseline and the run sit in a folder of their own under the names
``session.sealed.jsonl`` and ``session.jsonl``, with a configuration that pairs them. Not part
of the test run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
#: every how many calls the run differs from the baseline (four changes each time)
EVERY = 500

# run toolreplay in a child Python and report the peak RSS of it and of its own children
MEASURE = """
import resource, sys
from toolreplay.cli import cli
try:
    cli.main(args=sys.argv[1:], prog_name="toolreplay")
finally:
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    sys.stderr.write(f"@@rss {me} {kids}\\n")
"""


def make_run(source: Path, target: Path) -> None:
    """The baseline's session with four changes every ``EVERY`` calls, re-indexed (streaming)."""
    index = 0
    with source.open(encoding="utf-8") as lines, target.open("w", encoding="utf-8") as out:
        for n, line in enumerate(lines):
            value = json.loads(line)
            step = n % EVERY
            if step == 100:
                continue  # a call the run did not make
            copies = 2 if step == 200 else 1  # a call made twice
            if step == 300:
                value["response"] = {**value["response"], "took_ms": -1}
            if step == 400:
                value["args"] = {**value["args"], "path": "elsewhere"}
            for _ in range(copies):
                value["index"] = index
                out.write(json.dumps(value) + "\n")
                index += 1


def prepare(megabytes: int) -> tuple[Path, Path]:
    OUT.mkdir(exist_ok=True)
    plain = OUT / f"diff-baseline-{megabytes}mb.jsonl"
    sealed = OUT / f"diff-baseline-{megabytes}mb.sealed.jsonl"
    run = OUT / f"diff-run-{megabytes}mb.jsonl"
    if not sealed.exists():
        generate = [sys.executable, str(HERE / "generate.py"), str(plain), "--mix", "realistic"]
        subprocess.run([*generate, "--megabytes", str(megabytes)], check=True, stdout=subprocess.DEVNULL)
        seal = [sys.executable, "-m", "toolreplay", "seal", str(plain), "-o", str(sealed), "--force"]
        subprocess.run(seal, check=True, stdout=subprocess.DEVNULL)
    if not run.exists():
        # in a child: this process's peak RSS is inherited by the children it starts
        subprocess.run([sys.executable, __file__, "--make-run", str(plain), str(run)], check=True)
    return sealed, run


def checked_folder(sealed: Path, run: Path) -> Path:
    """A folder where ``toolreplay check`` diffs ``run`` against ``sealed`` (links to both)."""
    folder = OUT / f"check-{sealed.stem}"
    folder.mkdir(exist_ok=True)
    for name, target in (("session.sealed.jsonl", sealed), ("session.jsonl", run)):
        link = folder / name
        if not link.is_symlink():
            link.symlink_to(target)
    config = 'baselines = ["session.sealed.jsonl"]\ntranscripts = ["session.jsonl"]\n'
    (folder / "toolreplay.toml").write_text(config, encoding="utf-8")
    return folder


def diff(sealed: Path, run: Path, source: str | None, command: str = "diff") -> tuple[float, int, str]:
    """(seconds, peak RSS in KB, digest of the report) of one ``toolreplay diff`` (or ``check``)."""
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = source
    if command == "check":
        argv, cwd = [sys.executable, "-c", MEASURE, "check"], checked_folder(sealed, run)
    else:
        argv, cwd = [sys.executable, "-c", MEASURE, "diff", str(sealed), str(run)], None
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, env=env, check=False, cwd=cwd)
    elapsed = time.perf_counter() - start
    rss = [line for line in proc.stderr.decode().splitlines() if line.startswith("@@rss")]
    if proc.returncode not in (0, 1) or not rss:
        raise SystemExit(f"{command} failed: {proc.stderr.decode()[-2000:]}")
    _, me, kids = rss[0].split()
    return elapsed, max(int(me), int(kids)), hashlib.sha256(proc.stdout).hexdigest()


def main() -> None:
    if sys.argv[1:2] == ["--make-run"]:
        make_run(Path(sys.argv[2]), Path(sys.argv[3]))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("sizes", nargs="*", type=int, default=[40, 200], help="megabytes (default: 40 200)")
    parser.add_argument("--against", metavar="SRC", help="also run the package found in this folder")
    parser.add_argument("--rounds", type=int, default=1, help="best time of this many runs, alternating")
    parser.add_argument("--command", choices=["diff", "check"], default="diff")
    ns = parser.parse_args()
    print(f"{'size':>6} {'calls':>8} {'code':>8} {'time':>8} {'peak RSS':>9} {'RSS/first':>9}  report")
    first: dict[str, int] = {}
    for megabytes in ns.sizes:
        sealed, run = prepare(megabytes)
        with sealed.open("rb") as stream:
            calls = sum(1 for _ in stream)
        codes = [("this", None), ("against", ns.against)] if ns.against else [("this", None)]
        best: dict[str, tuple[float, int, str]] = {}
        for _ in range(ns.rounds):
            for name, source in codes:
                result = diff(sealed, run, source, ns.command)
                if name not in best or result[0] < best[name][0]:
                    best[name] = result
        reports = {}
        for name, _ in codes:
            elapsed, rss, report = best[name]
            reports[name] = report
            first.setdefault(name, rss)
            print(
                f"{megabytes:>4}MB {calls:>8} {name:>8} {elapsed:>7.1f}s {rss / 1024:>6.0f} MB"
                f" {rss / first[name]:>8.2f}x  {report[:12]}"
            )
        if len(reports) == 2:
            print(f"{'':>6} same report: {'yes' if len(set(reports.values())) == 1 else 'NO'}")


if __name__ == "__main__":
    main()
