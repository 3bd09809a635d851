"""The parallel seal/verify path gives the sequential path's exact bytes and verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from toolreplay import parallel
from toolreplay.cli import cli


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


def run(runner: CliRunner, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.slow
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
    real_seal, real_verify = parallel.seal_lines, parallel.verify_head
    monkeypatch.setattr(parallel, "seal_lines", lambda p: (taken.append("seal"), real_seal(p))[1])
    monkeypatch.setattr(parallel, "verify_head", lambda p: (taken.append("verify"), real_verify(p))[1])
    assert run(runner, "seal", str(source)) == sequential
    assert run(runner, "verify", str(sealed)) == sequential_verify
    assert taken == ["seal", "verify"]


@pytest.mark.slow
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


def test_chunks_cut_at_line_ends() -> None:
    """Chunks end at newlines and carry the right first line numbers."""
    import io

    data = b"".join(b"line %d\n" % i for i in range(1, 1001))
    chunks = list(parallel.read_chunks(io.BytesIO(data), size=100))
    assert b"".join(c for _, c in chunks) == data
    for first, chunk in chunks:
        assert chunk.endswith(b"\n")
        assert chunk.startswith(b"line %d\n" % first)
