"""Volatile rules: what a rule masks, and that everything outside its masks is still compared."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from toolreplay.analyses.baseline import diff_baseline
from toolreplay.analyses.judging import Judging
from toolreplay.analyses.replay import replay
from toolreplay.analyses.volatile import Volatile
from toolreplay.cli import cli
from toolreplay.transcript import Record, make_record, record_line
from toolreplay.volatile_rules import Rule, parse_at

HASH_A, HASH_B = "a" * 40, "0123456789abcdef0123456789abcdef01234567"


def rec(tool: str, response: dict[str, Any], args: dict[str, Any] | None = None, index: int = 0) -> Record:
    return make_record(index=index, tool=tool, args=args or {}, response=response)


def same(rules: list[Rule], a: Record, b: Record) -> bool:
    """Whether two records compare equal (call and response) under ``rules``."""
    volatile = Volatile(rules)
    return volatile.texts(a) == volatile.texts(b)


def test_pointer_syntax() -> None:
    """``*`` stays a token, ``~0``/``~1`` unescape, ``#`` starts a pointer into a JSON text."""
    assert parse_at("/response/content/*/text#/datetime") == (
        ("response", "content", "*", "text"),
        ("datetime",),
    )
    assert parse_at("/args/a~1b/c~0d") == (("args", "a/b", "c~d"),)
    assert parse_at("/state") == (("state",),)


@pytest.mark.parametrize(
    ("at", "why"),
    [
        ("response/x", "must start with /args, /response or /state"),
        ("/result/x", "must start with /args, /response or /state"),
        ("/response/x#datetime", "must go on with / after #"),
        ("/response/a~2", 'has "a~2"'),
    ],
)
def test_a_place_that_cannot_be_used_is_refused(at: str, why: str) -> None:
    """A mistyped ``at`` is refused with the reason, not taken as a rule that masks nothing."""
    with pytest.raises(ValueError, match=why):
        parse_at(at)


def test_a_pattern_masks_only_its_matches() -> None:
    """A masked substring equals any other match; the text around it is still compared."""
    rule = Rule(tool="git_commit", at="/response/content/*/text", pattern="[0-9a-f]{40}")

    def answer(text: str) -> Record:
        return rec("git_commit", {"content": [{"type": "text", "text": text}]})

    assert same([rule], answer(f"committed {HASH_A}"), answer(f"committed {HASH_B}"))
    assert not same([rule], answer(f"committed {HASH_A}"), answer(f"Committed {HASH_B}"))
    assert not same([rule], answer(f"committed {HASH_A}"), answer("committed nothing"))
    # another tool is not masked
    other = rec("git_show", {"content": [{"type": "text", "text": HASH_A}]})
    assert not same([rule], other, rec("git_show", {"content": [{"type": "text", "text": HASH_B}]}))


def test_a_whole_value_compares_by_its_json_type() -> None:
    """Without a pattern the value equals any value of the same JSON type, and only that."""
    rule = Rule(tool="*", at="/response/n")
    assert same([rule], rec("t", {"n": 1}), rec("t", {"n": 2.5}))
    assert same([rule], rec("t", {"n": "x"}), rec("t", {"n": "y"}))
    assert not same([rule], rec("t", {"n": 1}), rec("t", {"n": "1"}))
    assert not same([rule], rec("t", {"n": 1}), rec("t", {}))
    assert not same([rule], rec("t", {"n": 1, "m": 1}), rec("t", {"n": 1, "m": 2}))


def test_json_inside_a_string() -> None:
    """``#`` masks a member of the JSON text a string holds; the rest of that JSON is compared."""
    rule = Rule(tool="get_current_time", at="/response/content/*/text#/datetime")

    def answer(**fields: Any) -> Record:
        text = json.dumps({"timezone": "UTC", **fields}, indent=2)
        return rec("get_current_time", {"content": [{"type": "text", "text": text}]})

    assert same([rule], answer(datetime="2026-01-01T00:00:00"), answer(datetime="2027-02-02T11:11:11"))
    assert not same([rule], answer(datetime="a", is_dst=False), answer(datetime="b", is_dst=True))
    # a text that is not JSON is compared whole, and nothing is masked in it
    volatile = Volatile([rule])
    plain = rec("get_current_time", {"content": [{"type": "text", "text": "12:00"}]})
    assert volatile.texts(plain, "x").masked == 0


def test_no_value_can_pose_as_a_masked_one() -> None:
    """A run whose text spells the mask's own marks is not taken for the masked value."""
    rule = Rule(tool="t", at="/response/text", pattern="[0-9]+")
    volatile = Volatile([rule])
    masked = volatile.texts(rec("t", {"text": "id 42"}))
    forged = masked.response.split('"text":', 1)[1][:-1]
    assert not same([rule], rec("t", {"text": "id 42"}), rec("t", {"text": forged}))
    whole = Rule(tool="t", at="/response/text")
    assert not same([whole], rec("t", {"text": "x"}), rec("t", {"text": {"<string>": 1}}))
    embedded = Rule(tool="t", at="/response/text#/a")
    spelled = Volatile([embedded]).texts(rec("t", {"text": '{"a": 1}'})).response.split('"text":', 1)[1][:-1]
    assert not same([embedded], rec("t", {"text": '{"a": 1}'}), rec("t", {"text": spelled}))


def test_masked_arguments_make_calls_identical_in_replay() -> None:
    """A request id masked in ``/args`` makes two calls the identical call (redundant, compared)."""
    calls = [
        rec("search", {"hits": [1]}, {"q": "a", "request_id": "r1"}, 0),
        rec("search", {"hits": [2]}, {"q": "a", "request_id": "r2"}, 1),
    ]
    assert replay(calls).findings == []
    volatile = Volatile([Rule(tool="search", at="/args/request_id")])
    kinds = sorted(f.kind for f in replay(calls, volatile=volatile, path="t.jsonl").findings)
    assert kinds == ["non-determinism", "redundant-call"]
    assert volatile.counts("t.jsonl") == [2]


def test_replay_masks_responses() -> None:
    """Two identical calls whose answers differ only in a masked value are not non-determinism."""
    calls = [rec("now", {"t": "10:00", "tz": "UTC"}, index=i) for i in range(2)]
    calls[1] = rec("now", {"t": "10:01", "tz": "UTC"}, index=1)
    assert sorted(f.kind for f in replay(calls).findings) == ["non-determinism", "redundant-call"]
    volatile = Volatile([Rule(tool="now", at="/response/t")])
    assert [f.kind for f in replay(calls, volatile=volatile).findings] == ["redundant-call"]


def test_diff_masks_state_and_shows_the_mask() -> None:
    """A masked post-call state value is no effect drift; a finding's message shows masks as <volatile>."""
    base = [make_record(index=0, tool="commit", args={}, response={"ok": "x 1"}, state={"head": HASH_A})]
    run = [make_record(index=0, tool="commit", args={}, response={"ok": "y 2"}, state={"head": HASH_B})]
    rules = [Rule(tool="commit", at="/state/head"), Rule(tool="commit", at="/response/ok", pattern="[0-9]")]
    result = diff_baseline(base, [("run", run)], Judging(volatile=tuple(rules)))
    (finding,) = result.runs[0].findings
    assert finding.kind == "behavior-drift"
    assert '"x <volatile>"' in finding.message and '"y <volatile>"' in finding.message
    # without the rules the state is compared too
    assert dict(diff_baseline(base, [("run", run)], Judging()).runs[0].counts) == {"behavior-drift": 1}
    same_answer = [
        make_record(index=0, tool="commit", args={}, response={"ok": "x 1"}, state={"head": HASH_B})
    ]
    assert diff_baseline(base, [("run", same_answer)], Judging(volatile=tuple(rules))).runs[0].findings == ()
    assert [f.kind for f in diff_baseline(base, [("run", same_answer)], Judging()).runs[0].findings] == [
        "effect-drift"
    ]


def test_rules_on_one_string_all_apply_and_each_counts() -> None:
    """Each rule masks what it would alone, in the config's order; overlapping matches are one mask
    of both rules, and each rule counts its own matches."""
    at = "/response/text"
    sha = Rule(tool="t", at=at, pattern="[0-9a-f]{40}")
    time = Rule(tool="t", at=at, pattern="[0-9]{2}:[0-9]{2}")
    digits = Rule(tool="t", at=at, pattern="[0-9]+")

    def answer(text: str) -> Record:
        return rec("t", {"text": text})

    a, b = answer(f"{HASH_A} at 10:00"), answer(f"{HASH_B} at 11:59")
    assert same([sha, time], a, b) and same([time, sha], a, b)
    assert not same([sha], a, b) and not same([time], a, b)
    assert not same([sha, time], a, answer(f"{HASH_B} on 11:59"))
    volatile = Volatile([sha, time, digits])
    # rule 3's matches overlap rule 1's and rule 2's, and each rule counts its own: the hash holds
    # three runs of digits, the time two
    assert volatile.texts(b, "b").masked == 7
    assert volatile.counts("b") == [1, 1, 5]
    assert volatile.shown(b).response == {"text": "<volatile> at <volatile>"}


def test_a_whole_mask_and_a_pattern_on_one_value() -> None:
    """A value one rule masks whole stays whole under another rule's pattern, whichever comes first,
    and both rules count it."""
    whole = Rule(tool="t", at="/response/text")
    digits = Rule(tool="t", at="/response/text", pattern="[0-9]+")
    for rules in ([whole, digits], [digits, whole]):
        volatile = Volatile(rules)
        assert same(rules, rec("t", {"text": "id 1"}), rec("t", {"text": "no 2"}))
        volatile.texts(rec("t", {"text": "id 1 or 2"}), "x")
        assert volatile.counts("x") == ([1, 2] if rules[0] is whole else [2, 1])


def test_a_pattern_does_not_cut_a_text_compared_as_json() -> None:
    """A string a rule entered with ``#`` is compared as the JSON it holds: a later rule's pattern
    on that string does not apply there (and counts nothing); a later rule masking it whole does."""
    inner = Rule(tool="t", at="/response/text#/datetime")
    digits = Rule(tool="t", at="/response/text", pattern="[0-9]+")
    volatile = Volatile([inner, digits])
    first = rec("t", {"text": '{"datetime": "10:00", "n": 1}'})
    second = rec("t", {"text": '{"datetime": "11:00", "n": 2}'})
    assert not same([inner, digits], first, second)
    volatile.texts(first, "x")
    assert volatile.counts("x") == [1, 0]
    assert same([inner, Rule(tool="t", at="/response/text")], first, second)


def _config(tmp_path: Path, body: str) -> CliRunner:
    (tmp_path / "toolreplay.toml").write_text('transcripts = ["*.jsonl"]\n' + body, encoding="utf-8")
    return CliRunner()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            '[[volatile]]\ntool = "t"\nat = "/response/x"\npattern = "("\n',
            'volatile rule 1: pattern "(" is not an ECMA-262 regular expression',
        ),
        (
            '[[volatile]]\ntool = "t"\nat = "/response/x#y"\n',
            'volatile rule 1: at "/response/x#y" must go on',
        ),
        ('[[volatile]]\ntool = "t"\nat = "/result"\n', "invalid configuration"),
        ('[[volatile]]\ntool = "t"\n', "invalid configuration: 'at' is a required property"),
    ],
    ids=["bad-pattern", "bad-hash", "bad-root", "no-at"],
)
def test_a_bad_rule_is_a_usage_error(tmp_path: Path, body: str, message: str) -> None:
    """A rule that cannot be used is one line naming the file and the rule's place, exit 2."""
    runner = _config(tmp_path, body)
    result = runner.invoke(cli, ["check", "--config", str(tmp_path / "toolreplay.toml")])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "toolreplay.toml" in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_snapshot_lookup_leaves_masked_arguments_out() -> None:
    """A snapshot answers a call whose only difference is an argument an ``/args`` rule masks."""
    from toolreplay import Snapshot
    from toolreplay.library.failures import SnapshotMissError

    records = [rec("search", {"hits": [1]}, {"q": "a", "request_id": "r1"})]
    with pytest.raises(SnapshotMissError):
        Snapshot(records).call("search", q="a", request_id="r2")
    snapshot = Snapshot(records, volatile=[Rule(tool="search", at="/args/request_id")])
    assert snapshot.call("search", q="a", request_id="r2") == {"hits": [1]}
    with pytest.raises(SnapshotMissError):
        snapshot.call("search", q="b", request_id="r1")


def test_reexecution_compares_with_the_masks(tmp_path: Path) -> None:
    """Re-executing a recorded clock passes under a rule for its time, fails without it, and
    still fails when anything else in the answer changed."""
    from toolreplay import Recorder, ReplayDivergenceError, Snapshot, ToolRegistry

    answers: list[dict[str, Any]] = []

    def now(zone: str) -> dict[str, Any]:
        return answers.pop(0)

    def session(tools: ToolRegistry, answer: dict[str, Any]) -> None:
        answers.append(answer)
        tools.register(now, version="1")
        tools.call("now", zone="UTC")
        tools.finish()

    path = tmp_path / "clock.sealed.jsonl"
    with Recorder(path, seal=True) as recorder:
        session(ToolRegistry(recorder=recorder), {"zone": "UTC", "time": "10:00"})
    rules = [Rule(tool="now", at="/response/time")]
    with pytest.raises(ReplayDivergenceError):
        session(ToolRegistry(reexecute=Snapshot.from_file(path)), {"zone": "UTC", "time": "10:01"})
    session(
        ToolRegistry(reexecute=Snapshot.from_file(path, volatile=rules)), {"zone": "UTC", "time": "10:02"}
    )
    with pytest.raises(ReplayDivergenceError, match="'/zone'"):
        masked = Snapshot.from_file(path, volatile=rules)
        session(ToolRegistry(reexecute=masked), {"zone": "CET", "time": "10:03"})


def test_suggestions_are_the_narrowest_rules_that_make_answers_equal() -> None:
    """A hash inside a text gets a pattern, a changing number a whole-value rule, a JSON text
    a pointer into it; a member that comes and goes gets no rule, and says so."""
    from toolreplay.analyses.suggest import suggest, toml

    answers = [
        {
            "content": [{"type": "text", "text": f"hash {h}"}],
            "n": n,
            "doc": json.dumps({"id": i, "ok": True}),
        }
        for h, n, i in ((HASH_A, 1, "x"), (HASH_B, 2, "y"))
    ]
    found = suggest("t", answers)
    assert [(s.at, s.rule.pattern if s.rule else "-") for s in found] == [
        ("/response/content/*/text", "[0-9a-f]{40}"),
        ("/response/doc#/id", None),
        ("/response/n", None),
    ]
    assert suggest("t", [{"a": 1}, {"a": 1}]) == []
    (gone,) = suggest("t", [{"a": {"x": 1}}, {"a": {"y": 1}}])
    assert gone.rule is None and gone.why == "members come and go"
    text = toml({"t": found, "u": [gone]}, 2, "toolreplay.toml")
    assert '# "u" at "/response/a": no rule fits (members come and go): {"x":1}, {"y":1}' in text
    import tomllib

    assert len(tomllib.loads(text)["volatile"]) == 3


def test_match_key_is_where_the_args_rules_apply() -> None:
    """snapshot, serve and the toolreplay_mcp fixture match calls through match_key: with the rules there."""
    from toolreplay.library.snapshot import match_key

    volatile = Volatile([Rule(tool="search", at="/args/request_id")])
    first = match_key("search", {"request_id": "a1", "q": "x"}, volatile)
    assert first == match_key("search", {"q": "x", "request_id": "b2"}, volatile)
    assert first != match_key("search", {"request_id": "a1", "q": "y"}, volatile)
    # no rule for the tool, or no rules: the canonical call, as Record.call_key
    args = {"request_id": "a1"}
    assert match_key("other", args, volatile) == rec("other", {}, args).call_key
    assert match_key("search", args) == rec("search", {}, args).call_key


#: exponential in regress (minutes in process): past the one-second limit of a value
SLOW_ARG = "a" * 40 + "!"


def slow_rule() -> Rule:
    return Rule(tool="search", at="/args/q", pattern="(a+)+$")


def test_a_snapshot_names_the_rule_that_cannot_mask_a_recorded_call_in_time(tmp_path: Path) -> None:
    """Snapshot replay, serve and the cassettes index a recording by its masked calls: a rule whose
    pattern runs past its time there is one error naming the rule, the file and the line."""
    from toolreplay import Snapshot
    from toolreplay.errors import InputError

    recording = tmp_path / "calls.jsonl"
    recording.write_text(
        "".join(
            record_line(rec("search", {"hits": []}, {"q": q}, i)) + "\n"
            for i, q in enumerate(["b", SLOW_ARG])
        ),
        encoding="utf-8",
    )
    with pytest.raises(InputError) as caught:
        Snapshot.from_file(recording, volatile=Volatile([slow_rule()], budget=0.5))
    assert str(caught.value) == (
        f"{recording}:2: volatile rule 1 (tool 'search', at '/args/q') could not mask a value: the pattern"
        " budget of 0.5 s for this transcript ran out while '(a+)+$' was running; simplify its pattern"
        " (anchor it, avoid nested quantifiers) or raise pattern_budget_seconds"
    )


def test_serve_answers_a_call_it_cannot_mask_in_time_with_a_tool_error() -> None:
    """A live call whose arguments a rule's pattern cannot mask in time gets a tool error naming the
    rule (the server goes on), not an internal error or a hang."""
    from toolreplay.capture.serve import answer
    from toolreplay.library.snapshot import Snapshot

    snapshot = Snapshot(
        [rec("search", {"hits": [1]}, {"q": "b"})], volatile=Volatile([slow_rule()], budget=0.5)
    )
    assert snapshot.call("search", q="b") == {"hits": [1]}
    refused = answer(snapshot, "search", {"q": SLOW_ARG})
    assert refused["isError"] is True
    assert refused["content"][0]["text"].startswith("volatile rule 1 (tool 'search', at '/args/q') could not")


def test_a_cassette_whose_rule_cannot_mask_in_time_fails_the_test_in_one_line(tmp_path: Path) -> None:
    """The pytest fixtures read the project's rules and budget: a cassette a rule cannot mask in time
    is the one line the test fails with."""
    from toolreplay.chain import seal
    from toolreplay.library.pytest_fixtures import cassette

    (tmp_path / "toolreplay.toml").write_text(
        'pattern_budget_seconds = 0.5\n[[volatile]]\ntool = "search"\nat = "/args/q"\npattern = "(a+)+$"\n',
        encoding="utf-8",
    )
    path = tmp_path / "test.sealed.jsonl"
    records = [rec("search", {"hits": []}, {"q": SLOW_ARG})]
    path.write_text("".join(line + "\n" for _, line in seal(records)), encoding="utf-8")
    found = cassette(path, mode="none", why="CI is set", label="test.sealed.jsonl", root=tmp_path)
    assert isinstance(found, str)
    assert found.startswith(
        f"{path}:1: volatile rule 1 (tool 'search', at '/args/q') could not mask a value:"
    )
    assert "budget of 0.5 s" in found
