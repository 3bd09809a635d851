"""The parallel seal/verify path gives the sequential path's exact bytes and verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import invoke as run
from toolreplay import parallel
from toolreplay.analyses import replay as replay_analysis
from toolreplay.cli import replay as replay_cli


def write_transcript(path: Path, count: int) -> None:
    lines = [
        json.dumps(
            {"index": i, "tool": f"t{i % 7}", "args": {"n": i, "s": "é" * (i % 5)}, "response": {"v": i / 7}}
        )
        for i in range(count)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def force_parallel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(parallel, "workers", lambda: 2)


def test_same_bytes_and_verdicts(tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sealing and verifying on worker processes prints what the sequential path prints."""
    source = tmp_path / "t.jsonl"
    write_transcript(source, 400)
    sequential = run(runner, "seal", str(source))
    sealed = tmp_path / "t.sealed.jsonl"
    sealed.write_text(sequential[1])
    sequential_verify = run(runner, "verify", str(sealed))
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(parallel, "workers", lambda: 2)
    taken: list[str] = []
    real_seal, real_verify = parallel.seal_blocks, parallel.verify_head
    monkeypatch.setattr(parallel, "seal_blocks", lambda p: (taken.append("seal"), real_seal(p))[1])
    monkeypatch.setattr(parallel, "verify_head", lambda p: (taken.append("verify"), real_verify(p))[1])
    assert run(runner, "seal", str(source)) == sequential
    assert run(runner, "verify", str(sealed)) == sequential_verify
    assert taken == ["seal", "verify"]


@pytest.mark.usefixtures("force_parallel")
def test_failures_are_reported_as_sequentially(tmp_path: Path, runner: CliRunner) -> None:
    """A late bad line, an index gap and a tampered link give the sequential messages."""
    source = tmp_path / "t.jsonl"
    write_transcript(source, 300)
    lines = source.read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines[:250], '{"index": 250, "oops"', *lines[251:]]) + "\n")
    code, out, err = run(runner, "seal", str(bad))
    assert (code, out) == (2, "") and f"{bad}:251: invalid JSON" in err
    gap = tmp_path / "gap.jsonl"
    gap.write_text("\n".join(lines[:120] + lines[121:]) + "\n")
    code, out, err = run(runner, "seal", str(gap))
    assert code == 2 and f"{gap}:121: index 121 is out of order: expected 120" in err
    sealed = tmp_path / "s.sealed.jsonl"
    sealed.write_text(run(runner, "seal", str(source))[1])
    links = sealed.read_text().splitlines()
    links[200] = links[200].replace('"n":200', '"n":201')
    sealed.write_text("\n".join(links) + "\n")
    code, out, _ = run(runner, "verify", str(sealed))
    assert code == 1 and "first broken link: index 200" in out


@pytest.mark.parametrize("blank", [b"   ", b"\t", b" \t "])
def test_a_line_of_blanks_is_skipped_as_sequentially(
    tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch, blank: bytes
) -> None:
    """A range read in one piece hands a line of blanks to the readers, which refuse it; the
    command then takes the sequential path, which skips it: same output, same line numbers."""
    source = tmp_path / "t.jsonl"
    write_transcript(source, 300)
    lines = source.read_bytes().splitlines()
    source.write_bytes(b"\n".join([*lines[:150], blank, *lines[150:]]) + b"\n")
    sealed = tmp_path / "t.sealed.jsonl"
    expected = [run(runner, "seal", str(source)), run(runner, "replay", str(source), "--format", "json")]
    sealed.write_text(expected[0][1])
    sealed.write_bytes(sealed.read_bytes().replace(b"\n", b"\n" + blank + b"\n", 1))
    expected.append(run(runner, "verify", str(sealed)))
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(parallel, "workers", lambda: 2)
    got = [run(runner, "seal", str(source)), run(runner, "replay", str(source), "--format", "json")]
    got.append(run(runner, "verify", str(sealed)))
    assert got == expected
    assert expected[2][0] == 0 and expected[1][0] in (0, 1)


@pytest.mark.parametrize(("chunk", "tail"), [(1, 0), (7, 0), (100, 0), (4096, 0), (100, 250), (7, 10_000)])
def test_byte_ranges_read_every_line_once(tmp_path: Path, chunk: int, tail: int) -> None:
    """Ranges cut anywhere (inside a line, at a line end, on blank and CRLF lines) read every
    line exactly once, as the sequential reader reads it, and count the lines in between."""
    from toolreplay.transcript import iter_lines

    data = b"".join(
        b"line %d\n" % i + (b"\n" if i % 7 == 0 else b"") + (b"x\r\n" if i % 11 == 0 else b"")
        for i in range(300)
    )
    data += b"last without a newline"
    path = tmp_path / "lines"
    path.write_bytes(data)
    with path.open("rb") as stream:
        expected = list(iter_lines(stream, str(path)))
    got: list[tuple[int, bytes]] = []
    base = 0
    for start, end in parallel.byte_ranges(len(data), chunk, tail=tail):
        with path.open("rb") as stream:
            lines = parallel.RangeLines(stream, start, end)
            got += [(base + number, raw) for number, raw in lines]
            base += lines.lines
    assert got == expected
    assert base == data.count(b"\n") + 1


def test_byte_ranges_end_finer() -> None:
    """The last bytes go in quarter ranges, so that the workers finish together."""
    assert parallel.byte_ranges(100, 40, tail=30) == [(0, 40), (40, 70), (70, 80), (80, 90), (90, 100)]
    assert parallel.byte_ranges(100, 40, tail=200) == [(start, start + 10) for start in range(0, 100, 10)]
    assert parallel.byte_ranges(0, 40, tail=80) == [(0, 0)]


def test_replay_on_every_core_reports_as_sequentially(
    tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replay over worker processes prints the sequential report byte for byte: the same
    findings on the same line numbers (blank lines between records included), and a late
    bad line or an index gap is refused with the sequential message."""
    lines = []
    for i in range(600):
        call = i % 50 if i % 3 else i - i % 29  # repeated calls, two in a row now and then
        answer = call + (i % 7 == 0)  # some repeats with another response
        record = {"index": i, "tool": f"t{call % 4}", "args": {"n": call}, "response": {"v": answer}}
        lines.append(json.dumps(record) + ("\n" if i % 17 == 0 else ""))
    source = tmp_path / "t.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    sequential = run(runner, "replay", str(source), "--format", "json")  # json names the lines
    assert '"line": 35' in sequential[1]
    assert "non-determinism" in sequential[1] and "redundant-call" in sequential[1]
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(parallel, "workers", lambda: 2)
    taken: list[str] = []
    real = replay_analysis.file_calls
    monkeypatch.setattr(replay_cli, "file_calls", lambda p: (taken.append("replay"), real(p))[1])
    assert run(runner, "replay", str(source), "--format", "json") == sequential
    assert taken == ["replay"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines[:500], '{"index": 500, "oops"', *lines[501:]]) + "\n")
    code, out, err = run(runner, "replay", str(bad))
    assert (code, out) == (2, "") and f"{bad}:" in err and "invalid JSON" in err
    gap = tmp_path / "gap.jsonl"
    gap.write_text("\n".join(lines[:300] + lines[301:]) + "\n")
    code, out, err = run(runner, "replay", str(gap))
    assert code == 2 and "index 301 is out of order: expected 300" in err


@pytest.mark.parametrize("first", [2**63 - 1, 2**63, 2**64, 2**70])
def test_an_index_past_64_bits_is_refused_as_sequentially(
    tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch, first: int
) -> None:
    """Workers pack indexes into 64-bit arrays; a transcript whose indexes do not fit (out of
    order, since they run from 0) gets the sequential refusal from seal and replay, not an
    internal error."""
    source = tmp_path / "t.jsonl"
    write_transcript(source, 300)
    lines = source.read_text().splitlines()
    big = tmp_path / "big.jsonl"
    renumbered = [line.replace(f'"index": {i},', f'"index": {first + i},', 1) for i, line in enumerate(lines)]
    big.write_text("\n".join(renumbered) + "\n")
    commands = [["seal", str(big)], ["replay", str(big)], ["replay", str(big), "--state-aware"]]
    expected = [run(runner, *command) for command in commands]
    assert all(code == 2 and "is out of order: expected 0" in err for code, _, err in expected)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(parallel, "workers", lambda: 2)
    assert [run(runner, *command) for command in commands] == expected


def test_replay_keeps_any_first_index() -> None:
    """A library caller's records may carry any integer index: replay names it as it is."""
    from toolreplay.analyses.replay import Call, replay_calls, value_digest

    key = value_digest({"args": {}, "tool": "t"})
    for first in (0, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**90, -1):
        calls = [
            Call(first, 1, "t", key, value_digest(1), False),
            Call(first + 1, 2, "t", key, value_digest(2), False),
        ]
        for state_aware in (False, True):
            (redundant, changed) = replay_calls(calls, state_aware=state_aware).findings
            assert (redundant.kind, redundant.related) == ("redundant-call", first)
            assert (changed.kind, changed.related, changed.index) == ("non-determinism", first, first + 1)


def test_workers_fork_only_where_it_is_safe() -> None:
    """Linux with one thread forks (workers start with everything imported); another
    running thread, whose locks a forked child would copy held, makes workers spawn."""
    import subprocess
    import sys

    code = (
        "import threading, sys\n"
        "from toolreplay.pool import start_method\n"
        "print(start_method())\n"
        "done = threading.Event()\n"
        "t = threading.Thread(target=done.wait); t.start()\n"
        "print(start_method()); done.set(); t.join()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    expected = "fork" if sys.platform == "linux" else "spawn"
    assert out.split() == [expected, "spawn"]
