"""Scope schemas mean what JSON Schema 2020-12 says: jsonschema decides every keyword, regress the regexes.

A seeded corpus of schemas mixing the applicators and the evaluation keywords is judged by
toolreplay's scope check and by the real check-jsonschema CLI; their verdicts must agree.
Its patterns are ASCII-safe (they mean the same to ECMA-262 and Python), so any difference is
one of keyword semantics, never of the regex engine.
"""

from __future__ import annotations

import json
import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.unit.test_ecma import check_jsonschema
from toolreplay.analyses.scope import check_scope, load_scope
from toolreplay.errors import InputError
from toolreplay.transcript import Record, make_record

#: the size of the audit's corpus
SCHEMAS, INSTANCES_PER_SCHEMA = 367, 12
KEYS = ["a", "ab", "b", "cd", "e", "ee", "x_1", "z9", "path", "command"]
PATTERNS = ["^a", "b$", "^[a-c]+$", "^x_", "[0-9]", "^(ab|cd)", "e{2}", "^(?:path|command)$", "^[^a]"]
STRINGS = ["", "a", "ab", "cdcd", "x_", "9", "ee", "docs/a.md", "rm -rf /"]


class Corpus:
    """Schemas drawn from one seeded ``random.Random``, each with ``$defs`` its ``$ref``s point into."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.defs: dict[str, Any] = {}
        #: the definitions already complete: a new one may refer only to these (no $ref cycle)
        self.done: list[str] = []

    def schema(self) -> dict[str, Any]:
        """A root schema for a tool's arguments (an object), possibly with ``$defs``."""
        self.defs, self.done = {}, []
        root = self.object_schema(depth=0)
        if self.defs:
            root["$defs"] = self.defs
        return root

    def pick(self, choices: list[Any]) -> Any:
        return choices[self.rng.randrange(len(choices))]

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def object_schema(self, depth: int) -> dict[str, Any]:
        schema: dict[str, Any] = {}
        if self.chance(0.5):
            schema["type"] = "object"
        if self.chance(0.6):
            keys = self.rng.sample(KEYS, self.rng.randint(1, 2))
            schema["properties"] = {key: self.value_schema(depth + 1) for key in keys}
        if self.chance(0.4):
            patterns = self.rng.sample(PATTERNS, self.rng.randint(1, 1 if depth else 2))
            schema["patternProperties"] = {p: self.value_schema(depth + 1) for p in patterns}
        if self.chance(0.25):
            schema["additionalProperties"] = self.pick([False, True, {"type": "integer"}, {"type": "string"}])
        if self.chance(0.2):
            schema["required"] = self.rng.sample(KEYS, self.rng.randint(1, 2))
        if self.chance(0.15):
            schema["propertyNames"] = {"pattern": self.pick(PATTERNS)}
        if self.chance(0.15):
            key = self.pick(KEYS)
            schema["dependentSchemas"] = {key: self.subschema(depth + 1)}
        # applicators nest at most twice: jsonschema re-validates a subschema for each level
        # of unevaluated* above it, so deeper corpora cost more time, not more coverage
        applicators = (0.3, 0.1, 0.0)[min(depth, 2)]
        for keyword in ("allOf", "anyOf", "oneOf"):
            if self.chance(applicators):
                schema[keyword] = [self.subschema(depth + 1) for _ in range(self.rng.randint(1, 2))]
        if self.chance(applicators):
            schema["if"] = self.subschema(depth + 1)
            if self.chance(0.8):
                schema["then"] = self.subschema(depth + 1)
            if self.chance(0.6):
                schema["else"] = self.subschema(depth + 1)
        if self.chance(applicators / 3):
            schema["not"] = self.subschema(depth + 1)
        if self.chance(0.45):
            schema["unevaluatedProperties"] = self.pick([False, False, True, {"type": "string"}])
        return schema

    def subschema(self, depth: int) -> Any:
        """An applicator's subschema: boolean, a ``$ref`` into ``$defs``, or an object schema."""
        roll = self.rng.random()
        if roll < 0.2:
            return self.pick([True, True, False])
        if roll < 0.4:
            return {"$ref": "#/$defs/" + self.definition(depth)}
        return self.object_schema(depth)

    def definition(self, depth: int) -> str:
        """A (new or existing) ``$defs`` entry; new ones are booleans or object schemas, no $ref cycles."""
        if self.done and self.chance(0.3):
            return str(self.pick(self.done))
        name = f"d{len(self.defs)}"
        self.defs[name] = True  # reserves the name while its schema is drawn
        self.defs[name] = self.pick([True, False]) if self.chance(0.35) else self.object_schema(depth + 1)
        self.done.append(name)
        return name

    def value_schema(self, depth: int) -> Any:
        """A property's schema: a leaf, or (shallow) an array or a nested object."""
        roll = self.rng.random()
        if roll < 0.15:
            return self.pick([True, False])
        if roll < 0.45:
            return {"type": "string", "pattern": self.pick(PATTERNS)}
        if roll < 0.55:
            return {"type": "integer", "maximum": self.rng.randint(0, 3)}
        if roll < 0.65:
            return {"enum": self.rng.sample(STRINGS, 3)}
        if roll < 0.85 or depth > 0:
            return self.array_schema()
        return self.object_schema(depth)

    def array_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "array"}
        leaves: list[Any] = [True, False, {"type": "string"}, {"type": "integer"}, {"pattern": "^a"}]
        if self.chance(0.7):
            schema["prefixItems"] = [self.pick(leaves) for _ in range(self.rng.randint(1, 2))]
        if self.chance(0.3):
            schema["items"] = self.pick(leaves)
        if self.chance(0.3):
            schema["contains"] = self.pick(leaves)
        if self.chance(0.3):
            schema["allOf"] = [{"prefixItems": [self.pick(leaves)] * 3}]
        if self.chance(0.5):
            schema["unevaluatedItems"] = self.pick([False, False, {"type": "integer"}])
        return schema

    def instance(self) -> dict[str, Any]:
        """A tool's arguments: an object of 0-4 keys whose values fit or miss the schemas' leaves."""
        keys = self.rng.sample(KEYS, self.rng.randint(0, 4))
        return {key: self.value(depth=0) for key in keys}

    def value(self, depth: int) -> Any:
        roll = self.rng.random()
        if roll < 0.45:
            return self.pick(STRINGS)
        if roll < 0.65:
            return self.rng.randint(0, 4)
        if roll < 0.85 or depth > 1:
            return [self.pick([*STRINGS[:4], 1, 2]) for _ in range(self.rng.randint(0, 3))]
        return {key: self.value(depth + 1) for key in self.rng.sample(KEYS, self.rng.randint(0, 2))}


def corpus(seed: int = 24) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """The schemas and, per schema, its instances (deterministic for a seed)."""
    drawn = Corpus(seed)
    return [(drawn.schema(), [drawn.instance() for _ in range(INSTANCES_PER_SCHEMA)]) for _ in range(SCHEMAS)]


def our_verdicts(tmp_path: Path, cases: list[tuple[dict[str, Any], list[dict[str, Any]]]]) -> list[bool]:
    """toolreplay's scope check, one tool per schema, one call per instance: whether each call passes."""
    tools = [f"t{n}" for n in range(len(cases))]
    scope = tmp_path / "scope.json"
    scope.write_text(
        json.dumps(
            {
                "agent": "a",
                "allowed_tools": tools,
                "arguments": {t: s for t, (s, _) in zip(tools, cases, strict=True)},
            }
        )
    )
    records = [
        make_record(index=len(tools) * j + n, tool=tool, args=args, response={})
        for j in range(INSTANCES_PER_SCHEMA)
        for n, (tool, (_, instances)) in enumerate(zip(tools, cases, strict=True))
        for args in [instances[j]]
    ]
    overreach = {f.index for f in check_scope(records, load_scope(str(scope))).findings}
    return [r.index not in overreach for r in records]


def their_verdicts(tmp_path: Path, cases: list[tuple[dict[str, Any], list[dict[str, Any]]]]) -> list[bool]:
    """check-jsonschema's verdicts in one run: schema n is the property sN of one wrapper schema
    (its "#/$defs/..." references made "#/properties/sN/$defs/..."), instance file j holds every
    schema's j-th instance. (An "$id" per schema would keep the references as they are, but then
    the referencing library crawls the whole wrapper again on each lookup: minutes, not seconds.)"""
    tmp_path.mkdir()
    properties = {
        f"s{n}": json.loads(json.dumps(schema).replace('"#/$defs/', f'"#/properties/s{n}/$defs/'))
        for n, (schema, _) in enumerate(cases)
    }
    wrapper = {"$schema": "https://json-schema.org/draft/2020-12/schema", "properties": properties}
    (tmp_path / "wrapper.json").write_text(json.dumps(wrapper))
    names = []
    for j in range(INSTANCES_PER_SCHEMA):
        names.append(f"i{j}.json")
        (tmp_path / names[-1]).write_text(json.dumps({f"s{n}": inst[j] for n, (_, inst) in enumerate(cases)}))
    failed = {
        (error["filename"], error["path"].split(".")[1].split("[")[0])
        for error in check_jsonschema("--schemafile", "wrapper.json", *names, cwd=tmp_path)
    }
    return [
        (f"i{j}.json", f"s{n}") not in failed for j in range(INSTANCES_PER_SCHEMA) for n in range(len(cases))
    ]


@pytest.mark.slow
def test_scope_verdicts_agree_with_check_jsonschema_on_a_generated_corpus(tmp_path: Path) -> None:
    """On 367 generated schemas and 4,404 instances, every scope verdict equals check-jsonschema's."""
    cases = corpus()
    with ThreadPoolExecutor(max_workers=1) as pool:  # check-jsonschema's process runs meanwhile
        pending = pool.submit(their_verdicts, tmp_path / "theirs", cases)
        ours = our_verdicts(tmp_path, cases)
        theirs = pending.result()
    assert len(ours) == len(theirs) == SCHEMAS * INSTANCES_PER_SCHEMA
    # both verdicts are common, so agreement is not the trivial "everything passes"
    assert min(ours.count(True), ours.count(False)) > len(ours) // 10
    differing = [
        (cases[k % SCHEMAS][0], cases[k % SCHEMAS][1][k // SCHEMAS], ours[k])
        for k in range(len(ours))
        if ours[k] != theirs[k]
    ]
    assert not differing, f"{len(differing)} verdicts differ; first (schema, instance, ours): {differing[0]}"


def test_the_corpus_mixes_every_keyword() -> None:
    """The generated schemas use each keyword the comparison is about, boolean subschemas included."""
    text = json.dumps(corpus())
    for keyword in (
        "allOf", "anyOf", "oneOf", "$ref", "$defs", "if", "then", "else", "unevaluatedProperties",
        "unevaluatedItems", "additionalProperties", "patternProperties", "prefixItems", "dependentSchemas",
    ):  # fmt: skip
        assert f'"{keyword}"' in text, keyword
    assert '"then": true' in text and '"d0": true' in text and '"unevaluatedProperties": false' in text


#: the issue's example: the tool may read docs, and nothing else may be passed
SNEAKY = {"path": "docs/a.md", "command": "rm -rf /"}
CLOSED = {"type": "object", "properties": {"path": {"type": "string", "pattern": "^docs/"}}}


def run_scope(tmp_path: Path, schema: object, *args: dict[str, Any]) -> list[str]:
    """The finding kinds of one call per ``args`` to a tool whose arguments' schema is ``schema``."""
    path = tmp_path / "scope.json"
    path.write_text(json.dumps({"agent": "a", "allowed_tools": ["run"], "arguments": {"run": schema}}))
    records: list[Record] = [
        make_record(index=i, tool="run", args=a, response={}) for i, a in enumerate(args)
    ]
    return [f.kind for f in check_scope(records, load_scope(str(path))).findings]


@pytest.mark.parametrize(
    "schema",
    [
        {
            **CLOSED,
            "allOf": [{"$ref": "#/$defs/common"}],
            "$defs": {"common": True},
            "unevaluatedProperties": False,
        },
        {**CLOSED, "if": {"required": ["path"]}, "then": True},
    ],
    ids=["ref-to-true", "then-true"],
)
def test_a_true_subschema_evaluates_no_key(tmp_path: Path, schema: dict[str, Any]) -> None:
    """The issue's example: a 'true' subschema keeps unevaluatedProperties: false closed ("command" fails)."""
    closed = {**schema, "unevaluatedProperties": False}
    assert run_scope(tmp_path, closed, {"path": "docs/a.md"}, SNEAKY) == ["argument-overreach"]


@pytest.mark.parametrize(
    ("schema", "pointer"),
    [
        ({"properties": {"url": {"type": "string", "format": "uri"}}}, "/properties/url/format"),
        ({"$defs": {"d": {"format": "email"}}, "allOf": [{"$ref": "#/$defs/d"}]}, "/$defs/d/format"),
        ({"not": {"format": "regex"}}, "/not/format"),
    ],
)
def test_format_is_refused_at_its_pointer(tmp_path: Path, schema: dict[str, Any], pointer: str) -> None:
    """A scope schema using format (which let "not a uri" through) is a usage error naming its pointer."""
    path = tmp_path / "scope.json"
    path.write_text(json.dumps({"agent": "a", "allowed_tools": ["run"], "arguments": {"run": schema}}))
    with pytest.raises(InputError) as caught:
        load_scope(str(path))
    assert str(caught.value) == (
        f"{path}:1: format is not checked in scope schemas (it would let any value through): restrict the"
        f" value with pattern or enum (at /arguments/run{pointer})"
    )


def test_format_as_a_name_or_as_data_is_not_refused(tmp_path: Path) -> None:
    """A property called "format", or "format" inside const/enum/default/examples, is no format keyword."""
    schema = {
        "properties": {"format": {"enum": ["json", "text"]}},
        "required": ["format"],
        "default": {"format": "uri"},
        "const": {"format": "json"},
    }
    assert run_scope(tmp_path, schema, {"format": "json"}, {"format": "xml"}) == ["argument-overreach"]
