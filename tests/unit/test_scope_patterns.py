"""Scope argument schemas: ECMA-262 patterns, bounded in time per value and per transcript."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from toolreplay.analyses.scope import check_scope, load_scope
from toolreplay.errors import InputError
from toolreplay.transcript import Record, make_record

#: exponential for a backtracking engine: ~50 "a" and a "b" take minutes
CATASTROPHIC = "^(a|aa)+$"
SLOW_VALUE = "a" * 50 + "b"


def write_scope(tmp_path: Path, schema: object) -> str:
    path = tmp_path / "scope.json"
    path.write_text(
        json.dumps({"agent": "a", "allowed_tools": ["read_file"], "arguments": {"read_file": schema}})
    )
    return str(path)


def calls(*args: dict[str, object]) -> list[Record]:
    return [make_record(index=i, tool="read_file", args=a, response={}) for i, a in enumerate(args)]


def kinds_and_messages(scope_path: str, args: dict[str, object], **limits: float) -> list[tuple[str, str]]:
    found = check_scope(calls(args), load_scope(scope_path), **limits).findings
    return [(f.kind, f.message) for f in found]


def test_dollar_does_not_match_before_a_final_newline(tmp_path: Path) -> None:
    """ECMA-262 '$' is the end of the string: a path with a trailing newline does not slip through."""
    path = write_scope(tmp_path, {"properties": {"path": {"type": "string", "pattern": "^docs/intro\\.md$"}}})
    assert kinds_and_messages(path, {"path": "docs/intro.md"}) == []
    assert kinds_and_messages(path, {"path": "docs/intro.md\n"}) == [
        (
            "argument-overreach",
            "tool 'read_file' was called with arguments outside the declared scope at '/path': "
            "'docs/intro.md\\n' does not match '^docs/intro\\\\.md$'",
        )
    ]


def test_pattern_properties_use_ecma_semantics(tmp_path: Path) -> None:
    """patternProperties keys are ECMA-262 too: '\\d' is ASCII only (an Arabic-Indic key is no match)."""
    schema = {"patternProperties": {"^\\d+$": {"type": "integer"}}}
    path = write_scope(tmp_path, schema)
    assert kinds_and_messages(path, {"12": "x"})[0][0] == "argument-overreach"
    assert kinds_and_messages(path, {"١٢": "x"}) == []


def test_catastrophic_value_is_unjudged_not_passed(tmp_path: Path) -> None:
    """A value that backtracks past the per-value limit is a scope-unjudged finding, found in time."""
    path = write_scope(tmp_path, {"properties": {"path": {"type": "string", "pattern": CATASTROPHIC}}})
    start = time.monotonic()
    found = kinds_and_messages(path, {"path": SLOW_VALUE}, pattern_seconds=0.2)
    assert time.monotonic() - start < 5
    assert found == [
        (
            "scope-unjudged",
            "the arguments of tool 'read_file' could not be judged against the declared scope: "
            "pattern '^(a|aa)+$' did not finish within 0.2 s on one value",
        )
    ]


def test_unjudged_pattern_under_not_is_not_a_pass(tmp_path: Path) -> None:
    """'not' around an unfinished pattern cannot turn it into a pass: the call is unjudged."""
    path = write_scope(tmp_path, {"properties": {"path": {"not": {"pattern": CATASTROPHIC}}}})
    found = kinds_and_messages(path, {"path": SLOW_VALUE}, pattern_seconds=0.2)
    assert [kind for kind, _ in found] == ["scope-unjudged"]


def test_pattern_properties_are_time_limited_too(tmp_path: Path) -> None:
    """patternProperties keys go through the same bounded search."""
    path = write_scope(tmp_path, {"patternProperties": {CATASTROPHIC: {"type": "integer"}}})
    found = kinds_and_messages(path, {SLOW_VALUE: "x"}, pattern_seconds=0.2)
    assert [kind for kind, _ in found] == ["scope-unjudged"]


def test_budget_bounds_the_whole_transcript(tmp_path: Path) -> None:
    """20 catastrophic values finish within the transcript's budget plus slack, each call a finding."""
    path = write_scope(tmp_path, {"properties": {"path": {"type": "string", "pattern": CATASTROPHIC}}})
    records = calls(*[{"path": SLOW_VALUE} for _ in range(20)], {"path": "aaaa"})
    start = time.monotonic()
    found = check_scope(records, load_scope(path), pattern_budget=1.5, pattern_seconds=0.5).findings
    elapsed = time.monotonic() - start
    assert elapsed < 1.5 + 2.0, elapsed
    assert [f.kind for f in found] == ["scope-unjudged"] * 21
    assert "did not finish within 0.5 s on one value" in found[0].message
    assert found[-1].message.endswith("the pattern budget of 1.5 s for this transcript is spent")


def test_round_trips_do_not_spend_the_budget(tmp_path: Path) -> None:
    """4000 quick values all get a verdict under a 0.05 s budget: only the engine's time counts."""
    path = write_scope(tmp_path, {"properties": {"path": {"type": "string", "pattern": "^docs/"}}})
    records = calls(*[{"path": f"docs/{i}.md" if i % 2 else f"etc/{i}"} for i in range(4000)])
    start = time.monotonic()
    found = check_scope(records, load_scope(path), pattern_budget=0.05).findings
    assert time.monotonic() - start > 0.05  # the round trips alone take longer than the budget
    assert [f.kind for f in found] == ["argument-overreach"] * 2000


@pytest.mark.parametrize(
    ("schema", "pointer", "pattern"),
    [
        ({"properties": {"path": {"pattern": "(unclosed"}}}, "/properties/path/pattern", "(unclosed"),
        ({"properties": {"path": {"pattern": "\\Z"}}}, "/properties/path/pattern", "\\Z"),
        ({"properties": {"path": {"pattern": "(?P<n>a)"}}}, "/properties/path/pattern", "(?P<n>a)"),
        ({"patternProperties": {"^a\\Z": {}}}, "/patternProperties/^a\\Z", "^a\\Z"),
        ({"$defs": {"p~/q": {"pattern": "a{"}}}, "/$defs/p~0~1q/pattern", "a{"),
    ],
)
def test_pattern_that_is_not_ecma_is_refused_with_its_pointer(
    tmp_path: Path, schema: dict[str, object], pointer: str, pattern: str
) -> None:
    """A pattern Python accepts but ECMA-262 does not is refused when the scope loads, at its pointer."""
    path = write_scope(tmp_path, schema)
    with pytest.raises(InputError) as err:
        load_scope(path)
    assert err.value.pointer == "/arguments/read_file" + pointer
    assert err.value.path == path
    assert err.value.problem.startswith(
        f"not a valid JSON Schema: pattern {pattern!r} is not a valid ECMA-262 regular expression: "
    )


def test_ordinary_patterns_behave_as_before(tmp_path: Path) -> None:
    """A normal pattern accepts matching values and reports the others as before."""
    path = write_scope(tmp_path, {"properties": {"path": {"type": "string", "pattern": "^docs/"}}})
    assert kinds_and_messages(path, {"path": "docs/a.md"}) == []
    assert kinds_and_messages(path, {"path": "etc/passwd"})[0][1].endswith(
        "'etc/passwd' does not match '^docs/'"
    )


def test_overreach_pointer_escapes_keys(tmp_path: Path) -> None:
    """An argument named with '/' or '~' is reported at a valid JSON pointer (RFC 6901)."""
    path = write_scope(tmp_path, {"properties": {"a/b~c": {"type": "string"}}})
    found = kinds_and_messages(path, {"a/b~c": 1})
    assert "at '/a~1b~0c'" in found[0][1]


#: a newline after the name: Python's '$' matches before it, ECMA-262's does not
NEWLINE_KEY = "path_a\n"
KEYED = {"type": "object", "patternProperties": {"^path_[a-z]+$": {"type": "string", "pattern": "^docs/"}}}


@pytest.mark.parametrize("closing", ["additionalProperties", "unevaluatedProperties"])
def test_closed_objects_match_pattern_properties_as_ecma(tmp_path: Path, closing: str) -> None:
    """additionalProperties/unevaluatedProperties: false treat a key patternProperties misses as extra."""
    path = write_scope(tmp_path, {**KEYED, closing: False})
    assert kinds_and_messages(path, {"path_a": "docs/x"}) == []
    found = kinds_and_messages(path, {NEWLINE_KEY: "/etc/passwd"})
    assert [kind for kind, _ in found] == ["argument-overreach"]


@pytest.mark.parametrize("closing", ["additionalProperties", "unevaluatedProperties"])
def test_closed_objects_take_ecma_only_keys(tmp_path: Path, closing: str) -> None:
    """A '\\p{L}' key in patternProperties beside a closing keyword is judged, not a Python crash."""
    path = write_scope(tmp_path, {"type": "object", "patternProperties": {"^\\p{L}+$": {}}, closing: False})
    assert kinds_and_messages(path, {"é": 1}) == []
    assert [kind for kind, _ in kinds_and_messages(path, {"1": 1})] == ["argument-overreach"]


def test_a_nested_schema_keyword_cannot_switch_the_pattern_engine(tmp_path: Path) -> None:
    """'$schema' (2020-12) in a subschema, or at a root a $ref returns to, still means ECMA-262."""
    dialect = "https://json-schema.org/draft/2020-12/schema"
    nested = {"properties": {"path": {"$schema": dialect, "pattern": "^docs/intro\\.md$"}}}
    behind_ref = {
        "$schema": dialect,
        "properties": {"path": {"type": "string", "pattern": "^docs/intro\\.md$"}, "sub": {"$ref": "#"}},
    }
    for schema, args in (
        (nested, {"path": "docs/intro.md\n"}),
        (behind_ref, {"sub": {"path": "docs/intro.md\n"}}),
    ):
        path = write_scope(tmp_path, schema)
        assert [kind for kind, _ in kinds_and_messages(path, args)] == ["argument-overreach"], schema


@pytest.mark.parametrize(
    "dialect", ["http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2019-09/schema"]
)
def test_another_dialect_is_refused_where_it_is_declared(tmp_path: Path, dialect: str) -> None:
    """A subschema declaring an older draft is exit 2 naming its pointer, not evaluated with Python's re."""
    schema = {"$defs": {"p": {"$schema": dialect, "pattern": "^a$"}}, "const": {"$schema": dialect}}
    path = write_scope(tmp_path, schema)
    with pytest.raises(InputError) as caught:
        load_scope(path)
    assert str(caught.value) == (
        f"{path}:1: $schema must be 'https://json-schema.org/draft/2020-12/schema' (scope schemas are "
        "draft 2020-12) (at /arguments/read_file/$defs/p/$schema)"
    )
