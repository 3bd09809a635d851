"""``toolreplay render``: the picture is deterministic, data stays data, and bad input is one line."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from click.testing import CliRunner

from tests.conftest import ROOT
from toolreplay.chain import seal
from toolreplay.cli import cli
from toolreplay.transcript import make_record, record_line

HOSTILE = '<script>alert(1)</script>&"\n::error::x'


def transcript(tmp_path: Path) -> Path:
    records = [
        make_record(index=0, tool=HOSTILE, args={"q": 1}, response={"a": 1}),
        make_record(index=1, tool=HOSTILE, args={"q": 1}, response={"a": 2}),
    ]
    path = tmp_path / "run.jsonl"
    path.write_text("".join(record_line(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_a_hostile_tool_name_is_escaped_text(tmp_path: Path, runner: CliRunner) -> None:
    """A tool name with markup and a newline is XML text on one line: the SVG parses, no element leaks."""
    out = tmp_path / "run.svg"
    result = runner.invoke(cli, ["render", str(transcript(tmp_path)), "-o", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    tree = ET.fromstring(out.read_text(encoding="utf-8"))
    tags = {element.tag.rsplit("}", 1)[-1] for element in tree.iter()}
    assert tags <= {"svg", "rect", "text", "path"}
    assert "<script>" not in out.read_text() and "&lt;script&gt;" in out.read_text()
    assert "non-determinism (vs #0)" in out.read_text()


def test_the_picture_is_the_same_bytes_each_time_and_for_the_sealed_file(
    tmp_path: Path, runner: CliRunner
) -> None:
    """Drawing twice gives the same bytes; the sealed file is drawn with the very same digests."""
    source = transcript(tmp_path)
    first, second, sealed_svg = tmp_path / "1.svg", tmp_path / "2.svg", tmp_path / "s.svg"
    sealed = tmp_path / "run.sealed.jsonl"
    runner.invoke(cli, ["seal", str(source), "-o", str(sealed)], catch_exceptions=False)
    for path, out in ((source, first), (source, second), (sealed, sealed_svg)):
        assert runner.invoke(cli, ["render", str(path), "-o", str(out)]).exit_code == 0
    assert first.read_bytes() == second.read_bytes()
    assert first.read_text().replace("run.jsonl", "X") == sealed_svg.read_text().replace(
        "run.sealed.jsonl", "X"
    )


def test_a_broken_link_is_marked(tmp_path: Path, runner: CliRunner) -> None:
    """A sealed file whose second link was edited is drawn with chain-broken at that call."""
    records = [make_record(index=i, tool="search", args={"q": i}, response={"a": i}) for i in range(3)]
    lines = [line for _, line in seal(records)]
    lines[1] = lines[1].replace('"a":1', '"a":9')
    sealed = tmp_path / "x.sealed.jsonl"
    sealed.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    out = tmp_path / "x.svg"
    result = runner.invoke(cli, ["render", str(sealed), "-o", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "chain-broken" in out.read_text()


def test_bad_input_is_one_line_and_nothing_written(tmp_path: Path, runner: CliRunner) -> None:
    """A picture not named .svg, and a transcript that is not JSON, are exit 2 with one line; no file."""
    out = tmp_path / "x.png"
    result = runner.invoke(cli, ["render", str(ROOT / "samples" / "session-dirty.jsonl"), "-o", str(out)])
    assert (result.exit_code, result.stderr) == (
        2,
        f"toolreplay: error: {out}: the picture is SVG: name it FILE.svg\n",
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{nope\n", encoding="utf-8")
    result = runner.invoke(cli, ["render", str(bad), "-o", str(tmp_path / "bad.svg")])
    assert (
        result.exit_code == 2
        and result.stderr.count("\n") == 1
        and result.stderr.startswith(f"toolreplay: error: {bad}:1:")
    )
    assert not (tmp_path / "bad.svg").exists() and not out.exists()
