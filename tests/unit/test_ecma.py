"""JSON Schema patterns are ECMA-262 (u flag): our verdicts agree with check-jsonschema's default.

check-jsonschema runs for real (its default regex variant) on a corpus chosen where
Python's ``re`` and ECMA-262 disagree, and on patterns only one of them accepts.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from toolreplay.ecma import BoundedSearch, Unjudged, pattern_problem, search
from toolreplay.validate import validate_file

#: (pattern, value, whether Python's re gives another verdict or refuses the pattern)
MATCH_CORPUS: list[tuple[str, str, bool]] = [
    ("^docs/intro\\.md$", "docs/intro.md\n", True),
    ("^docs/intro\\.md$", "docs/intro.md", False),
    ("^[0-9a-f]{16}$", "0123456789abcdef\n", True),
    ("^\\d+$", "١٢٣", True),
    ("^\\d+$", "123", False),
    ("^\\w+$", "é", True),
    ("^\\w+$", "ab_1", False),
    ("\\bé", "é", True),
    ("^\\s$", "\u0085", True),
    ("^\\s$", "\ufeff", True),
    ("^\\s$", "\u00a0", False),
    ("^.$", "\r", True),
    ("^.$", "\u2028", True),
    ("^.$", "\n", False),
    ("^.$", "😀", False),
    ("(?<=a)b", "ab", False),
    ("(?<!a)b", "ab", False),
    ("(?<=a+)b", "aab", True),
    ("\\p{L}", "é", True),
    ("^\\p{L}+$", "p{L}", True),
    ("^\\p{Lu}$", "É", True),
    ("^\\P{L}$", "1", True),
    ("^\\p{Script=Greek}+$", "αβγ", True),
    ("\\u{1F600}", "😀", True),
    ("^\\x41$", "A", False),
    ("\\cJ", "\n", True),
    ("(a)|\\1b", "b", True),
    ("^[^]$", "x", True),
    ("^[]$", "", True),
    ("^\\/$", "/", False),
    ("^(?<n>a)\\k<n>$", "aa", True),
    ("^(?:a|b)*c", "ababc", False),
    ("docs", "my docs", False),
    ("^$", "\n", True),
]

#: patterns ECMA-262 (u flag) refuses; most of them Python accepts
INVALID: list[str] = [
    "\\Z",
    "\\A",
    "(?P<name>a)",
    "(?i)a",
    "a{",
    "\\-",
    "[\\d-z]",
    "(?#comment)",
    "a++",
    "(?>a)",
    "\\p{l}",
    "(unclosed",
    "*a",
]


def check_jsonschema(*args: str, cwd: Path) -> list[dict[str, Any]]:
    """Run the real check-jsonschema (default regex variant unless told) and return its errors."""
    done = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "-o", "json", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)["errors"]  # type: ignore[no-any-return]


def their_verdicts(tmp_path: Path, corpus: list[tuple[str, str, bool]], *variant: str) -> dict[str, bool]:
    """check-jsonschema's match verdicts: pN through ``pattern``, kN through ``patternProperties``."""
    schema: dict[str, Any] = {"properties": {}}
    instance: dict[str, Any] = {}
    for n, (pattern, value, _) in enumerate(corpus):
        schema["properties"][f"p{n}"] = {"pattern": pattern}
        instance[f"p{n}"] = value
        schema["properties"][f"k{n}"] = {"patternProperties": {pattern: False}}
        instance[f"k{n}"] = {value: 0}
    (tmp_path / "schema.json").write_text(json.dumps(schema))
    (tmp_path / "instance.json").write_text(json.dumps(instance))
    failed = {
        e["path"]
        for e in check_jsonschema(*variant, "--schemafile", "schema.json", "instance.json", cwd=tmp_path)
    }
    verdicts = {}
    for n in range(len(corpus)):
        verdicts[f"p{n}"] = f"$.p{n}" not in failed  # no error: the pattern matched
        # the false schema was reached: the key matched
        verdicts[f"k{n}"] = any(path.split(".")[1].split("[")[0] == f"k{n}" for path in failed)
    return verdicts


def test_match_verdicts_agree_with_check_jsonschema(tmp_path: Path) -> None:
    """On every corpus pair, pattern and patternProperties verdicts equal check-jsonschema's default."""
    theirs = their_verdicts(tmp_path, MATCH_CORPUS)
    with BoundedSearch() as bounded:
        for n, (pattern, value, _) in enumerate(MATCH_CORPUS):
            ours = search(pattern, value)
            assert ours == bounded(pattern, value), (pattern, value)
            assert (ours, ours) == (theirs[f"p{n}"], theirs[f"k{n}"]), (pattern, value)


def test_corpus_is_where_python_differs() -> None:
    """The pairs marked as differing really do under Python's re (a verdict or a refusal)."""
    for pattern, value, differs in MATCH_CORPUS:
        try:
            python = re.search(pattern, value) is not None
        except re.error:
            python = None
        assert (python != search(pattern, value)) == differs, (pattern, value)


def test_invalid_patterns_agree_with_check_jsonschema(tmp_path: Path) -> None:
    """A pattern is refused exactly when check-jsonschema's metaschema check refuses it."""
    names = []
    for n, pattern in enumerate(INVALID + [p for p, _, _ in MATCH_CORPUS]):
        (tmp_path / f"s{n}.json").write_text(json.dumps({"pattern": pattern}))
        names.append(f"s{n}.json")
    refused = {e["filename"] for e in check_jsonschema("--check-metaschema", *names, cwd=tmp_path)}
    for n, pattern in enumerate(INVALID + [p for p, _, _ in MATCH_CORPUS]):
        assert (pattern_problem(pattern) is not None) == (f"s{n}.json" in refused), pattern
    assert all(pattern_problem(p) for p in INVALID)


def test_property_escapes_need_the_u_flag(tmp_path: Path) -> None:
    """'\\p{L}' is a letter class only with the u flag, which JSON Schema implies and we use."""
    corpus = [("^\\p{L}$", "é", True)]
    assert their_verdicts(tmp_path, corpus)["p0"] is True
    assert their_verdicts(tmp_path, corpus, "--regex-variant", "nonunicode")["p0"] is False
    assert search("^\\p{L}$", "é") is True


def test_validate_refuses_a_fingerprint_with_a_trailing_newline(tmp_path: Path) -> None:
    """validate agrees with replay: '0123456789abcdef\\n' is not a fingerprint."""
    path = tmp_path / "run.jsonl"
    record = {"index": 0, "tool": "t", "args": {}, "response": {}, "fingerprint": "0123456789abcdef\n"}
    path.write_text(json.dumps(record) + "\n")
    assert validate_file(str(path)) == [
        f"{path}:1: '0123456789abcdef\\n' does not match '^[0-9a-f]{{16}}$' (at /fingerprint)"
    ]


def published_patterns(value: Any) -> list[str]:
    if isinstance(value, dict):
        found = [value["pattern"]] if isinstance(value.get("pattern"), str) else []
        found += list(value.get("patternProperties", {}))
        return found + [p for v in value.values() for p in published_patterns(v)]
    if isinstance(value, list):
        return [p for v in value for p in published_patterns(v)]
    return []


def test_published_patterns_are_anchored_ecma() -> None:
    """Every pattern in schemas/ is valid ECMA-262 and anchored at both ends, so no trailing text passes."""
    patterns = [
        p
        for path in sorted((ROOT / "schemas").glob("*.json"))
        for p in published_patterns(json.loads(path.read_text()))
    ]
    assert patterns
    for pattern in patterns:
        assert pattern_problem(pattern) is None, pattern
        assert pattern.startswith("^") and pattern.endswith("$"), pattern
    assert not search("^[0-9a-f]{64}$", "0" * 64 + "\n")


def test_worker_is_reused_until_it_is_cut_off() -> None:
    """A healthy worker serves the next transcript; one cut off mid-search is killed and replaced."""
    with BoundedSearch() as first:
        assert first("^a$", "a")
        worker = first._process
    with BoundedSearch() as second:
        assert not second("^a$", "b")
        assert second._process is worker
        with pytest.raises(Unjudged):
            second("^(a|aa)+$", "a" * 50 + "b")
        assert worker is not None and worker.poll() is not None  # killed
        assert second("^a$", "a")
        assert second._process is not worker


def test_a_dead_worker_leaves_the_call_unjudged_and_is_replaced() -> None:
    """If the worker dies, that value is unjudged (never a pass) and the next value gets a new worker."""
    with BoundedSearch() as bounded:
        assert bounded("^a$", "a")
        worker = bounded._process
        assert worker is not None
        worker.kill()
        worker.wait()
        with pytest.raises(Unjudged, match="the pattern engine"):
            bounded("^a$", "b")
        assert not bounded("^a$", "c")
        assert bounded._process is not worker


def test_repeated_values_cost_one_search() -> None:
    """A short value seen before gets its remembered verdict without another search."""
    with BoundedSearch() as bounded:
        assert bounded("^docs/", "docs/a.md")
        spent, worker = bounded.spent, bounded._process
        assert worker is not None
        worker.kill()  # a second search would now fail
        worker.wait()
        assert bounded("^docs/", "docs/a.md")
        assert bounded.spent == spent


class _Interrupted(Exception):
    pass


def _interrupt_a_search(bounded: BoundedSearch) -> None:
    """Start a search that backtracks ~0.5 s (a quiet machine) and then matches; interrupt it after 0.1 s."""
    import signal

    def interrupt(signum: int, frame: object) -> None:
        raise _Interrupted

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.1)
        with pytest.raises(_Interrupted):
            bounded("^(a|aa)+b$|^a+c$", "a" * 35 + "c")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_a_search_interrupted_mid_flight_never_answers_the_next_one() -> None:
    """An exception (a signal, Ctrl-C) during a search: the late answer ("match") to that question
    never becomes the verdict on the next value, in the same search or the next transcript's."""
    with BoundedSearch() as first:
        first("^x$", "x")
        _interrupt_a_search(first)
        time.sleep(1.0)  # the old search has finished: its answer waits in the pipe
        assert not first("^docs/", "/etc/passwd")
    with BoundedSearch() as second:
        second("^x$", "x")
        _interrupt_a_search(second)
    time.sleep(1.0)
    with BoundedSearch() as third:
        assert not third("^docs/", "/etc/passwd")


def test_cuts_find_every_match_of_many_values_in_one_trip() -> None:
    """``cuts`` answers many (pattern, text) requests with one request line: the matches' UTF-8 byte
    ranges as regress's find_iter gives them, in order."""
    requests = [("[0-9a-f]{4}", "id beef and cafe"), ("é+", "aéé b é"), ("x", "none here")]
    with BoundedSearch() as bounded:
        assert bounded.cuts(requests) == [[3, 7, 12, 16], [1, 5, 8, 10], []]
        assert bounded.cuts([]) == []


def test_a_cut_past_the_limit_names_its_request_and_the_worker_is_replaced() -> None:
    """A request that runs past the limit of one value raises Unjudged with its position; the worker,
    still at work on it, is killed, and the next requests get a fresh one."""
    catastrophic = ("(a+)+$", "a" * 40 + "!")
    with BoundedSearch(per_value=0.2) as bounded:
        start = time.monotonic()
        with pytest.raises(Unjudged, match=r"did not finish within 0\.2 s on one value") as caught:
            bounded.cuts([("a", "a"), catastrophic, ("b", "b")])
        assert caught.value.position == 1
        assert time.monotonic() - start < 5
        assert bounded.cuts([("b", "abb")]) == [[1, 2, 2, 3]]


def test_cuts_share_the_budget_and_a_budget_spent_before_names_none_later() -> None:
    """The budget counts across the requests (and from ``spent``, what earlier trips of the same
    transcript took): once it is spent, every request is Unjudged at once."""
    with BoundedSearch(budget=0.3, spent=0.3) as bounded:
        with pytest.raises(Unjudged, match="is spent") as caught:
            bounded.cuts([("a", "a")])
        assert caught.value.position == 0
    with BoundedSearch(budget=0.3) as bounded:
        with pytest.raises(Unjudged, match="ran out while") as caught:
            bounded.cuts([("a", "a"), ("(a+)+$", "a" * 40 + "!")])
        assert caught.value.position == 1
        assert bounded.spent >= 0.3
