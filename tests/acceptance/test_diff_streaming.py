"""``toolreplay diff`` holds calls as digests (analyses/calltable.py): the reports do not change,
whichever path the calls take (memory, the store's temporary file, buckets, stdin, a pipe),
and the memory does not grow with the size of the inputs."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.acceptance.test_diff_cases import ALL, CASES, _args
from toolreplay.analyses import calltable, determinism
from toolreplay.cli import cli

TRICKY = CASES / "alignment-edits-repeats-mutators"


def _spill_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of two calls, none kept in memory, and a bucket for every two observations."""
    monkeypatch.setattr(calltable, "CHUNK", 2)
    monkeypatch.setattr(calltable, "RESIDENT_TAILS", 0)
    monkeypatch.setattr(determinism, "OBSERVE_GROUPS", 2)


@pytest.mark.parametrize("case", ALL, ids=[p.name for p in ALL])
def test_spilled_calls_give_the_same_reports(
    case: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every golden case reports the same bytes, text and JSON, when every call goes through
    the temporary file and the determinism verdicts through many buckets."""
    monkeypatch.chdir(case)
    kept = runner.invoke(cli, [*_args(case), "--format", "json"], catch_exceptions=False).output
    _spill_everything(monkeypatch)
    result = runner.invoke(cli, _args(case), catch_exceptions=False)
    assert result.output == (case / "expected.txt").read_text()
    assert result.exit_code == int((case / "exit_code").read_text())
    spilled = runner.invoke(cli, [*_args(case), "--format", "json"], catch_exceptions=False).output
    assert spilled == kept


def test_runs_from_stdin_and_pipes_are_read_again(runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run on stdin is copied as it is read, so the values a message quotes are still there."""
    monkeypatch.chdir(TRICKY)
    expected = runner.invoke(cli, ["diff", "baseline.sealed.jsonl", "run-1.jsonl"]).output
    assert 'the run has "B2"' in expected  # a behaviour drift: its message quotes both values
    piped = runner.invoke(cli, ["diff", "baseline.sealed.jsonl", "-"], input=Path("run-1.jsonl").read_bytes())
    assert piped.output == expected.replace("== run-1.jsonl", "== -").replace("run-1.jsonl", "-")


def test_a_baseline_on_stdin_is_checked_and_compared(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The baseline is read twice (its chain, then its calls): from stdin, the second reading is
    the copy made during the first (it used to find stdin closed: an internal error)."""
    monkeypatch.chdir(TRICKY)
    expected = runner.invoke(cli, ["diff", "baseline.sealed.jsonl", "run-1.jsonl"]).output
    result = runner.invoke(
        cli, ["diff", "-", "run-1.jsonl"], input=Path("baseline.sealed.jsonl").read_bytes()
    )
    assert result.exit_code == 1
    assert result.output == expected.replace("baseline: baseline.sealed.jsonl", "baseline: -")


@pytest.mark.skipif(sys.platform == "win32", reason="a named pipe")
def test_a_run_through_a_pipe(tmp_path: Path) -> None:
    """A run that cannot seek (a named pipe, as ``<(...)`` gives) is copied as it is read."""
    fifo = tmp_path / "run.jsonl"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"cat {TRICKY / 'run-1.jsonl'} > {fifo}"])
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "toolreplay", "diff", str(TRICKY / "baseline.sealed.jsonl"), str(fifo)],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
    finally:
        writer.wait(timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert 'the run has "B2"' in proc.stdout


def _polls(tmp_path: Path, runner: CliRunner) -> None:
    """2300 calls, mostly one poll repeated, and a run with four changes: a middle over
    MAX_EXACT_ALIGN, so difflib's autojunk decides the alignment."""

    def poll(status: str = "running") -> dict[str, object]:
        return {"tool": "poll", "args": {"job": 1}, "response": {"status": status}}

    def read(i: int) -> dict[str, object]:
        return {"tool": "read_file", "args": {"path": f"f{i}"}, "response": {"content": i}}

    base = [read(i) if i % 500 == 0 else poll() for i in range(2300)]
    run = list(base)
    del run[10]
    run[1000] = read(99999)
    run[1700] = poll("done")
    run += [poll(), read(7)]
    for name, calls in (("baseline.jsonl", base), ("run.jsonl", run)):
        lines = [json.dumps({"index": i, **call}) for i, call in enumerate(calls)]
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    sealed = runner.invoke(
        cli, ["seal", str(tmp_path / "baseline.jsonl"), "-o", str(tmp_path / "b.sealed.jsonl")]
    )
    assert sealed.exit_code == 0, sealed.output


# what diff reported on these polls before calls were held as digests (since then every drifting
# tool's first call of each kind is a finding)
POLLS_EXPECTED = """\
calls: 2301
aligned: 2298
differences: agent-drift 3, behavior-drift 1, silent-drift 1
tool 'poll': silent-drift
tool 'read_file': stable
findings: 4 (the first call of each tool and kind; differences: counts every one)
index 499: agent-drift: the run did not make the call to tool 'poll' at baseline index 499; it went on with\
 the call at baseline index 500 (and 1 more call of this tool with agent-drift)
index 1000: agent-drift: the run called tool 'read_file' where the baseline called 'poll' at index 1001
index 1700: behavior-drift: tool 'poll' returned a different response than at baseline index 1701: at\
 '/status' the baseline has "running", the run has "done"
index 1700: silent-drift: tool 'poll' returned a different response than the identical call at index 1,\
 after the same state-changing calls (if a call between them changes state, declare its tool with --mutator\
 or mutators in the config)
"""


@pytest.mark.parametrize("spill", [False, True], ids=["in-memory", "spilled"])
def test_repeated_calls_align_as_before(
    tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch, spill: bool
) -> None:
    """Thousands of identical polls: the alignment over digests is difflib's over the call keys."""
    _polls(tmp_path, runner)
    if spill:
        _spill_everything(monkeypatch)
    result = runner.invoke(cli, ["diff", str(tmp_path / "b.sealed.jsonl"), str(tmp_path / "run.jsonl")])
    assert result.exit_code == 1
    assert result.output.split("freshness: not checked\n")[1] == POLLS_EXPECTED


# --- memory ------------------------------------------------------------------------------

# the child's own peak (VmHWM): ru_maxrss would also count the test worker's size, which a
# forked child inherits (and exec keeps)
MEASURE = """
import sys
from toolreplay.cli import cli
try:
    cli.main(args=sys.argv[1:], prog_name="toolreplay")
finally:
    with open("/proc/self/status") as status:
        peak = [line.split()[1] for line in status if line.startswith("VmHWM:")][0]
    sys.stderr.write(f"@@rss {peak}\\n")
"""


def _session(path: Path, calls: int, *, changed: bool) -> None:
    """About 1.2 KB a call, every call different; ``changed``: a few edits every 400 calls."""
    rng = random.Random(5)
    with path.open("w") as out:
        index = 0
        for n in range(calls):
            text = rng.randbytes(500).hex()
            call = {"tool": f"tool_{n % 40}", "args": {"n": n}, "response": {"text": text}}
            if changed and n % 400 == 100:
                continue
            if changed and n % 400 == 200:
                call["response"] = {"text": "changed"}
            out.write(json.dumps({"index": index, **call}) + "\n")
            index += 1


def _peak_rss_of_diff(tmp_path: Path, calls: int) -> int:
    """Peak RSS (MB) of ``diff`` in its own process, over a baseline of ``calls`` and its run."""
    folder = tmp_path / str(calls)
    folder.mkdir()
    _session(folder / "base.jsonl", calls, changed=False)
    _session(folder / "run.jsonl", calls, changed=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "toolreplay",
            "seal",
            str(folder / "base.jsonl"),
            "-o",
            str(folder / "b.sealed.jsonl"),
        ],
        check=True,
        capture_output=True,
    )
    (folder / "base.jsonl").unlink()
    proc = subprocess.run(
        [sys.executable, "-c", MEASURE, "diff", str(folder / "b.sealed.jsonl"), str(folder / "run.jsonl")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert "behavior-drift" in proc.stdout and "agent-drift" in proc.stdout
    [rss] = [line for line in proc.stderr.splitlines() if line.startswith("@@rss ")]
    return int(rss.split()[1]) // 1024


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak from /proc")
def test_memory_does_not_grow_with_the_inputs(tmp_path: Path) -> None:
    """diff of a 6 MB pair and of a 30 MB pair peak within a few MB of each other (holding both
    sides' records, as diff did, grew by about 70 MB between them)."""
    small = _peak_rss_of_diff(tmp_path, 5_000)
    large = _peak_rss_of_diff(tmp_path, 25_000)
    assert large - small < 12, (small, large)
    assert large < 100, large
