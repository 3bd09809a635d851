"""The reader's limits hold on every path: every command that reads a transcript or a sealed
file gives the same verdict on the same too-deep or too-large record, sequential or parallel,
fast path or exact path, and nothing reaches a RecursionError."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import ROOT, SAMPLES
from toolreplay import parallel
from toolreplay.cli import cli
from toolreplay.limits import MAX_DEPTH, MAX_RECORD_BYTES

GOOD = b'{"args":{},"index":0,"response":{},"tool":"t"}'
GENESIS = "0" * 64


def nested(depth: int) -> str:
    """A JSON object nested ``depth`` levels deep (the object itself is level 1)."""
    return '{"a":' * (depth - 1) + "{}" + "}" * (depth - 1)


def record_text(args: str, index: int = 1) -> str:
    """A transcript record as canonical text, with ``args`` as given."""
    return '{"args":' + args + f',"index":{index},"response":{{}},"tool":"t"}}'


def sealed_text(records: list[str]) -> str:
    """Canonical links chained correctly over records given as canonical texts: only a
    limit can refuse them."""
    out = []
    prev = GENESIS
    for text in records:
        head, rest = text.split(',"index":', 1)
        index, tail = rest.split(",", 1)
        body = head + f',"index":{index},"prev":"{prev}",' + tail
        digest = hashlib.sha256(body.encode("ascii")).hexdigest()
        out.append(head + f',"digest":"{digest}","index":{index},"prev":"{prev}",' + tail)
        prev = digest
    return "".join(line + "\n" for line in out)


# (case id, args of the record on line 2, the problem every command names)
TOO_MUCH = [
    ("depth-129", nested(MAX_DEPTH), f"nesting is deeper than {MAX_DEPTH} levels"),
    ("depth-1000", nested(999), f"nesting is deeper than {MAX_DEPTH} levels"),
    ("depth-100000", nested(100_000), f"nesting is deeper than {MAX_DEPTH} levels"),
    ("depth-in-array", "[" * 200 + "]" * 200, f"nesting is deeper than {MAX_DEPTH} levels"),
    (
        "over-size",
        '{"s":"' + "x" * (MAX_RECORD_BYTES + 1000) + '"}',
        f"record is over the {MAX_RECORD_BYTES}-byte limit",
    ),
]
TOO_MUCH_PARAMS = [
    pytest.param(*case[1:], id=case[0], marks=[pytest.mark.slow] if "size" in case[0] else [])
    for case in TOO_MUCH
]


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """A folder with a good transcript, its seal, a scope, a lock and a git repository."""
    good = tmp_path / "good.jsonl"
    good.write_bytes(GOOD + b"\n")
    (tmp_path / "good.sealed.jsonl").write_text(sealed_text([GOOD.decode()]))
    shutil.copy(SAMPLES / "scope.json", tmp_path / "scope.json")
    shutil.copy(ROOT / "tests/cases/cli/replay-tools-lock/tools.lock.json", tmp_path / "tools.lock.json")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    return tmp_path


def commands(d: Path) -> list[tuple[str, list[str]]]:
    """Every command that reads a transcript or a sealed file, fed ``bad.jsonl`` or
    ``bad.sealed.jsonl`` (the same record, sealed): (the file it names, its arguments)."""
    t, s = str(d / "bad.jsonl"), str(d / "bad.sealed.jsonl")
    good, good_sealed = str(d / "good.jsonl"), str(d / "good.sealed.jsonl")
    return [
        (t, ["seal", t]),
        (t, ["seal", t, "-o", str(d / "out.sealed.jsonl")]),
        (s, ["verify", s]),
        (s, ["verify", "--format", "json", s]),
        (t, ["replay", t]),
        (t, ["scope", t, str(d / "scope.json")]),
        (t, ["diff", good_sealed, t]),
        (s, ["diff", good_sealed, s]),
        (s, ["diff", s, good]),
        (s, ["hook", "verify", s]),
        (s, ["note", s]),
        (t, ["fingerprint-diff", t, str(d / "tools.lock.json")]),
        (s, ["fingerprint-diff", s, str(d / "tools.lock.json")]),
        (t, ["import", "-o", str(d / "imported"), t]),
    ]


def write_bad(d: Path, args: str) -> None:
    bad = record_text(args)
    (d / "bad.jsonl").write_text(GOOD.decode() + "\n" + bad + "\n")
    (d / "bad.sealed.jsonl").write_text(sealed_text([GOOD.decode(), bad]))


def invoke(runner: CliRunner, cwd: Path, args: list[str]) -> tuple[int, str, str]:
    old = os.getcwd()
    os.chdir(cwd)
    try:
        result = runner.invoke(cli, args, catch_exceptions=False)
    finally:
        os.chdir(old)
    return result.exit_code, result.stdout, result.stderr


def assert_refused(code: int, out: str, err: str, path: str, problem: str, args: list[str]) -> None:
    expected = f"{path}:2: {problem}"
    if args[:2] == ["hook", "verify"]:  # the hook prints its per-file verdicts on stdout
        assert (code, out, err) == (2, expected + "\n", ""), args
    else:
        assert (code, out, err) == (2, "", f"toolreplay: error: {expected}\n"), args


@pytest.mark.parametrize(("args", "problem"), TOO_MUCH_PARAMS)
def test_every_reader_refuses_the_same_record_alike(
    runner: CliRunner, files: Path, args: str, problem: str
) -> None:
    """A record over the depth or size limit is exit 2 and one `FILE:2: problem` line from every command."""
    write_bad(files, args)
    for path, argv in commands(files):
        if argv[0] == "import" and "byte" in problem:
            continue  # import reads traces, up to 512 MiB a line; its own test covers its cap
        code, out, err = invoke(runner, files, argv)
        assert_refused(code, out, err, path, problem, argv)
    assert not (files / "out.sealed.jsonl").exists()
    assert not (files / "imported").exists() or not any((files / "imported").iterdir())


@pytest.mark.parametrize(("args", "problem"), TOO_MUCH_PARAMS)
def test_validate_and_check_name_the_same_problem(
    runner: CliRunner, files: Path, args: str, problem: str
) -> None:
    """validate and check, which list unreadable files instead of stopping, name the same line."""
    write_bad(files, args)
    expected = f"{files / 'bad.jsonl'}:2: {problem}"
    code, out, _ = invoke(runner, files, ["validate", str(files / "bad.jsonl")])
    assert code == 1 and out.splitlines()[1:] == [expected]
    (files / "toolreplay.toml").write_text('transcripts = ["bad.jsonl"]\n')
    for jobs in ("1", "2"):
        code, out, _ = invoke(runner, files, ["check", "--jobs", jobs])
        assert code == 1
        assert "bad.jsonl:2: " + problem in out
        assert out.endswith("total: 1 reports, 0 findings, 0 failing, 1 unreadable\n")


@pytest.mark.parametrize(("args", "problem"), TOO_MUCH_PARAMS)
def test_the_parallel_paths_refuse_alike(
    runner: CliRunner, files: Path, monkeypatch: pytest.MonkeyPatch, args: str, problem: str
) -> None:
    """seal and verify on every core (forced on a small file) refuse exactly as the sequential path."""
    monkeypatch.setattr(parallel, "worth_it", lambda path: True)
    write_bad(files, args)
    for path, argv in commands(files)[:4]:
        code, out, err = invoke(runner, files, argv)
        assert_refused(code, out, err, path, problem, argv)


def test_the_limit_is_exact_on_every_path(
    runner: CliRunner, files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MAX_DEPTH levels seal and verify on the fast, exact and parallel paths; the sealed file verifies."""
    write_bad(files, nested(MAX_DEPTH - 1))  # args at level 2: the record is exactly MAX_DEPTH deep
    sealed = files / "bad.sealed.jsonl"
    for forced in (False, True):
        if forced:
            monkeypatch.setattr(parallel, "worth_it", lambda path: True)
        code, out, err = invoke(runner, files, ["seal", str(files / "bad.jsonl")])
        assert (code, err) == (0, "")
        assert out == sealed.read_text()
        code, out, err = invoke(runner, files, ["verify", str(sealed)])
        assert (code, err) == (0, "")
        assert "chain: intact" in out


def test_a_real_process_never_reaches_recursion(tmp_path: Path) -> None:
    """In a plain process (default recursion limit) deep records are one line, exit 2, for seal and verify."""
    bad = record_text(nested(999))
    (tmp_path / "bad.jsonl").write_text(GOOD.decode() + "\n" + bad + "\n")
    (tmp_path / "bad.sealed.jsonl").write_text(sealed_text([GOOD.decode(), bad]))
    for command, name in (("seal", "bad.jsonl"), ("verify", "bad.sealed.jsonl")):
        done = subprocess.run(
            [sys.executable, "-m", "toolreplay", command, name], cwd=tmp_path, capture_output=True, text=True
        )
        assert (done.returncode, done.stdout) == (2, "")
        assert done.stderr == f"toolreplay: error: {name}:2: nesting is deeper than {MAX_DEPTH} levels\n"


# --- whatever seal writes, verify and diff read ------------------------------------------

LINK_WITHOUT_TEXT = len(sealed_text([record_text('{"s":""}', index=0)])) - 1  # without "\n"
# (case id, the text repeated in args.s as the input writes it, its bytes in the sealed line)
FILLERS = [
    ("ascii", "x", 1),
    ("raw-emoji", "\U0001f600", 12),
    ("raw-del", "\x7f", 6),
    ("raw-latin", "\u00e9", 6),
    ("escaped-del", "\\u007f", 6),
    ("escaped-newline", "\\n", 2),
]


def sized_transcript(path: Path, raw_char: str, sealed_bytes: int, target: int) -> None:
    """A one-record transcript whose sealed line is exactly ``target`` bytes."""
    count, rest = divmod(target - LINK_WITHOUT_TEXT, sealed_bytes)
    text = raw_char * count + "x" * rest
    path.write_bytes(record_text('{"s":"' + text + '"}', index=0).encode("utf-8") + b"\n")


@pytest.mark.parametrize("forced", [False, True], ids=["sequential", "parallel"])
@pytest.mark.parametrize(("char", "sealed_bytes"), [f[1:] for f in FILLERS], ids=[f[0] for f in FILLERS])
def test_what_seal_writes_verify_and_diff_read(
    runner: CliRunner,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    forced: bool,
    char: str,
    sealed_bytes: int,
) -> None:
    """A record whose sealed line is exactly the cap seals, verifies and diffs clean; one byte
    more and seal refuses it by name, writing nothing (never a file its own verify refuses)."""
    if forced:
        monkeypatch.setattr(parallel, "worth_it", lambda path: True)
    transcript, sealed = tmp_path / "t.jsonl", tmp_path / "t.sealed.jsonl"
    sized_transcript(transcript, char, sealed_bytes, MAX_RECORD_BYTES)
    assert len(transcript.read_bytes()) - 1 <= MAX_RECORD_BYTES  # the reader takes the input
    code, _, err = invoke(runner, tmp_path, ["seal", str(transcript), "-o", str(sealed)])
    assert (code, err) == (0, "")
    assert len(sealed.read_bytes()) == MAX_RECORD_BYTES + 1
    code, out, err = invoke(runner, tmp_path, ["verify", str(sealed)])
    assert (code, err) == (0, "") and "chain: intact" in out
    for argv in (["diff", str(sealed), str(transcript)], ["diff", str(sealed), str(sealed)]):
        code, out, err = invoke(runner, tmp_path, argv)
        assert (code, err) == (0, ""), argv

    sealed.unlink()
    sized_transcript(transcript, char, sealed_bytes, MAX_RECORD_BYTES + sealed_bytes)
    code, out, err = invoke(runner, tmp_path, ["seal", str(transcript), "-o", str(sealed)])
    size = MAX_RECORD_BYTES + sealed_bytes
    assert (code, out) == (2, "")
    assert err.startswith(
        f"toolreplay: error: {transcript}:1: the sealed line would be {size} bytes,"
        f" over the {MAX_RECORD_BYTES}-byte limit on a line"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl"]


def test_the_recorder_never_writes_a_line_the_reader_refuses(tmp_path: Path) -> None:
    """The library's Recorder refuses a call whose (sealed) line would be over the cap, and
    refuses a value nested too deep instead of reaching a RecursionError."""
    from toolreplay.errors import InputError
    from toolreplay.library import Recorder

    for seal in (False, True):
        path = tmp_path / f"r{seal}.jsonl"
        with Recorder(path, seal=seal) as recorder:
            recorder.record(tool="t", args={"s": "ok"}, response={})
            with pytest.raises(InputError, match=f"over the {MAX_RECORD_BYTES}-byte limit"):
                recorder.record(tool="t", args={"s": "\U0001f600" * (MAX_RECORD_BYTES // 12)}, response={})
            deep: dict[str, object] = {}
            for _ in range(5000):
                deep = {"a": deep}
            with pytest.raises(InputError, match=f"nesting is deeper than {MAX_DEPTH} levels"):
                recorder.record(tool="t", args=deep, response={})
            recorder.record(tool="t", args={}, response={})
        assert len(path.read_text().splitlines()) == 2
        code = subprocess.run(
            [sys.executable, "-m", "toolreplay", "verify" if seal else "replay", str(path)],
            capture_output=True,
        ).returncode
        assert code == 0


# --- values within the limit are walked to the end: jsonschema, the meta-schema, locks ------


def items_chain(levels: int) -> str:
    """A JSON Schema nested ``levels`` deep through ``items``."""
    return '{"items":' * (levels - 1) + "{}" + "}" * (levels - 1)


@pytest.mark.slow
def test_schemas_at_the_depth_limit_are_checked_not_crashed(tmp_path: Path) -> None:
    """A scope or tool definitions nested up to MAX_DEPTH deep are checked to the end (jsonschema
    needs more than Python's default 1000 frames for that) in plain processes; a lock holds what
    it can and refuses the rest by name."""
    (tmp_path / "t.jsonl").write_text(GOOD.decode() + "\n")
    (tmp_path / "scope.json").write_text(  # {} > arguments > t > properties > a: level 5
        '{"agent":"a","allowed_tools":["t"],"arguments":{"t":{"type":"object","properties":{"a":'
        + items_chain(MAX_DEPTH - 4)
        + "}}}}"
    )
    for levels, name in ((MAX_DEPTH - 4, "deepest.json"), (MAX_DEPTH - 5, "tools.json")):
        (tmp_path / name).write_text(  # [] > {} > inputSchema > properties > a: level 5
            '[{"name":"t","inputSchema":{"type":"object","properties":{"a":' + items_chain(levels) + "}}}]"
        )

    def run(*argv: str) -> tuple[int, str]:
        done = subprocess.run(
            [sys.executable, "-m", "toolreplay", *argv], cwd=tmp_path, capture_output=True, text=True
        )
        return done.returncode, done.stderr

    assert run("scope", "t.jsonl", "scope.json") == (0, "")
    assert run("validate", "--kind", "scope", "scope.json") == (0, "")
    from toolreplay.check import PARALLEL_MIN_FILES

    for i in range(PARALLEL_MIN_FILES):  # enough files for check to use worker processes
        (tmp_path / f"run{i}.jsonl").write_text(GOOD.decode() + "\n")
    (tmp_path / "toolreplay.toml").write_text('transcripts = ["run*.jsonl"]\nscope = "scope.json"\n')
    assert run("check", "--jobs", "2") == (0, "")
    assert run("fingerprint", "tools.json", "-o", "tools.lock.json") == (0, "")
    assert run("validate", "tools.lock.json") == (0, "")
    assert run("fingerprint-diff", "tools.lock.json", "tools.lock.json") == (0, "")
    code, err = run("fingerprint", "deepest.json")
    assert code == 2
    assert err == (
        'toolreplay: error: deepest.json: tool "t": a lock cannot hold its schema, nested deeper than'
        f" {MAX_DEPTH - 3} levels (the schema starts at level 4 of a file nested at most {MAX_DEPTH} deep)\n"
    )


MCP_SERVER = """
import json, sys
schema = '{"type":"object","properties":{"a":' + '{"items":' * DEPTH + '{}' + '}' * DEPTH + '}}'
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        version = msg["params"]["protocolVersion"]
        info = {"name": "deep", "version": "1"}
        result = json.dumps({"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info})
    elif msg["method"] == "tools/list":
        result = '{"tools":[{"name":"t","inputSchema":' + schema + '}]}'
    else:
        result = "{}"
    sys.stdout.write('{"jsonrpc":"2.0","id":' + json.dumps(msg["id"]) + ',"result":' + result + '}\\n')
    sys.stdout.flush()
"""


@pytest.mark.parametrize(
    ("depth", "problem"),
    [
        (MAX_DEPTH - 5, "a lock cannot hold its schema, nested deeper than 125 levels"),
        (140, f"input schema: nesting is deeper than {MAX_DEPTH} levels (at /tools/0/inputSchema)"),
    ],
)
def test_a_deep_schema_from_a_live_mcp_server_is_one_line(tmp_path: Path, depth: int, problem: str) -> None:
    """A real stdio MCP server listing a schema too deep to lock is exit 2 and one line naming
    the server and the tool (was a RecursionError in the meta-schema check, exit 3)."""
    server = tmp_path / "server.py"
    server.write_text(MCP_SERVER.replace("DEPTH", str(depth)))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolreplay",
            "fingerprint",
            "-o",
            "x.lock.json",
            "--mcp",
            "--",
            "python3",
            "server.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("toolreplay: error: mcp:python3 server.py: tool ")
    assert problem in done.stderr and done.stderr.count("\n") == 1
    assert not (tmp_path / "x.lock.json").exists()


def test_a_deep_github_event_is_no_pull_request(tmp_path: Path) -> None:
    """An event payload nested past json's recursion is read as "not a pull request", not a crash."""
    from toolreplay.github.action import pull_range_from_env
    from toolreplay.github.comment import target_from_env

    event = tmp_path / "event.json"
    event.write_text('{"pull_request":' + "[" * 100_000 + "]" * 100_000 + "}")
    env = {"GITHUB_EVENT_PATH": str(event), "GITHUB_REPOSITORY": "o/r"}
    assert pull_range_from_env(env) is None
    assert target_from_env(env) is None


# (case id, args as hand-written bytes, the problem) -- lines whose digest is right, so only
# the strict reader can refuse them, on verify's fast path as on its exact one
HAND_SEALED = [
    (
        "lone-surrogate",
        '{"s":"\\ud800"}',
        "string holds a lone surrogate escape (\\ud800-\\udfff without its pair)",
    ),
    ("infinity", '{"n":1e400}', "number 1e400 is too large: it would become infinity"),
    ("long-integer", '{"n":' + "9" * 5000 + "}", "integer with 5000 digits is longer than 4300"),
    ("duplicate-key", '{"a":1,"a":1}', 'duplicate key "a"'),
    ("nan", '{"n":NaN}', "NaN is not valid JSON (NaN and Infinity are refused)"),
    ("deep", nested(MAX_DEPTH), f"nesting is deeper than {MAX_DEPTH} levels"),
]


@pytest.mark.parametrize("forced", [False, True], ids=["sequential", "parallel"])
@pytest.mark.parametrize(("args", "problem"), [c[1:] for c in HAND_SEALED], ids=[c[0] for c in HAND_SEALED])
def test_verify_refuses_a_well_chained_line_the_reader_refuses(
    runner: CliRunner, files: Path, monkeypatch: pytest.MonkeyPatch, forced: bool, args: str, problem: str
) -> None:
    """A hand-made link whose digest matches its bytes is still refused by verify, diff and the
    hook exactly as the reader refuses the same record, on every path."""
    if forced:
        monkeypatch.setattr(parallel, "worth_it", lambda path: True)
    write_bad(files, args)
    for path, argv in commands(files):
        if path.endswith(".sealed.jsonl"):
            code, out, err = invoke(runner, files, argv)
            assert_refused(code, out, err, path, problem, argv)


def test_the_library_seal_refuses_a_link_over_the_cap() -> None:
    """chain.seal, the library's sealing of records, refuses what the seal command refuses:
    a link line over the cap, named by the record's line."""
    from toolreplay.chain import seal
    from toolreplay.errors import InputError
    from toolreplay.transcript import make_record

    fits = make_record(index=0, tool="t", args={"s": "x"}, response={})
    over = make_record(index=1, tool="t", args={"s": "\U0001f600" * (MAX_RECORD_BYTES // 12)}, response={})
    assert len(list(seal([fits]))) == 1
    with pytest.raises(InputError, match=f"over the {MAX_RECORD_BYTES}-byte limit on a line"):
        list(seal([fits, over]))
