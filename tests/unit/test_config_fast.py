"""The configuration's fast acceptance (``config.plainly_valid``) never accepts what the
published config schema refuses, takes the usual configurations, and spares a command that
reads one the import of jsonschema."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from toolreplay.config import _PLAIN, plainly_valid
from toolreplay.kinds import KINDS
from toolreplay.schemas import schema_text, validator

SCHEMA = json.loads(schema_text("config.schema.json"))

# every value type TOML can produce, shaped to sit on either side of the schema's rules
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-2, 3)
    | st.sampled_from([0.0, 0.5, 1.0, math.inf, -math.inf, math.nan, 2**70])
    | st.sampled_from(["", "x", "runs/*.jsonl", "redundant-call", "no-such-kind", "é"])
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3), max_leaves=5)
keys = st.sampled_from([*SCHEMA["properties"], "unknown", "Transcripts"])


def schema_accepts(table: dict[str, Any]) -> bool:
    return not list(validator("config").iter_errors(table))


def test_every_key_of_the_schema_has_a_check() -> None:
    assert set(_PLAIN) == set(SCHEMA["properties"])
    assert SCHEMA["additionalProperties"] is False
    # fail_on's fast check takes the kinds of the report's table, each of them in the schema's enum
    assert set(KINDS) <= set(SCHEMA["properties"]["fail_on"]["items"]["enum"])


@settings(max_examples=examples(1500), deadline=None)
@given(st.dictionaries(keys, values, max_size=4))
def test_never_accepts_what_the_schema_refuses(table: dict[str, Any]) -> None:
    if plainly_valid(table):
        assert schema_accepts(table), table


def test_takes_the_usual_configurations() -> None:
    tables: list[dict[str, Any]] = [
        {},
        {"transcripts": ["runs/*.jsonl"], "baselines": ["baselines/*.sealed.jsonl"], "scope": "scope.json"},
        {
            "transcripts": ["a", "b"],
            "baselines": [],
            "scope": "s.json",
            "tools_lock": "tools.lock.json",
            "tools_source": ["python", "-m", "server"],
            "mutators": ["write_file"],
            "state_aware": True,
            "drift_notes": "notes",
            "max_baseline_age_days": 30,
            "pattern_budget_seconds": 2.5,
            "fail_on": sorted(KINDS),
        },
        {"tools_source": "tools.json", "pattern_budget_seconds": 10},
    ]
    for table in tables:
        assert schema_accepts(table)
        assert plainly_valid(table), table


def test_refusals_still_name_the_problem(tmp_path: Path) -> None:
    """A table the fast check declines goes to the schema, whose message the user sees."""
    from toolreplay.config import load_config
    from toolreplay.errors import InputError

    (tmp_path / "toolreplay.toml").write_text('fail_on = ["redundant-cal"]\n')
    try:
        load_config(tmp_path / "toolreplay.toml")
    except InputError as err:
        assert "unknown finding kind 'redundant-cal'" in str(err)
    else:
        raise AssertionError("a misspelt kind was accepted")


def test_reading_a_plain_configuration_does_not_import_jsonschema(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.toolreplay]\ntranscripts = ["runs/*.jsonl"]\n'
        'fail_on = ["non-determinism"]\nstate_aware = true\n'
    )
    code = (
        "import sys; from pathlib import Path; from toolreplay.config import load_config;"
        f" config = load_config(Path({str(tmp_path / 'pyproject.toml')!r}));"
        " assert config.state_aware is True;"
        " print(sorted(m for m in sys.modules if m.split('.')[0] in ('jsonschema', 'referencing')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
