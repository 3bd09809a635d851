"""JSON Schema's regular expressions: ECMA-262, as draft 2020-12 requires.

Python's ``re`` (and the ``regex`` package) are not ECMA-262: there ``$`` also matches
before a final newline (so ``^[0-9a-f]{16}$`` accepts ``"0123456789abcdef\\n"``), ``\\d``
and ``\\w`` take any Unicode digit or letter, ``\\Z``, ``\\A`` and ``(?P<name>...)`` exist.
Every ``pattern`` and ``patternProperties`` toolreplay evaluates therefore goes through
the ``regress`` package (Rust's regress engine; check-jsonschema's default too), compiled
with the ``u`` flag (code points, ``\\p{...}`` property escapes) and searched anywhere in
the string, unanchored, as the specification says. A pattern regress refuses is not a
valid JSON Schema pattern.

The engine is the only part of JSON Schema written here. Every keyword is jsonschema's own
function, the ones that match regular expressions included (:func:`validator_class` runs
them with regress in place of ``re``), so what ``$ref``, ``if``/``then``/``else``, a
boolean subschema or ``unevaluatedProperties`` mean is the library's decision.

regress backtracks, so a pattern such as ``(a+)+$`` or even ``a+$`` can take exponential
or quadratic time, and it holds the interpreter's lock while it runs: it cannot be
interrupted from inside the process. Patterns from a configuration or a scope file (either
can be edited in the pull request it judges, and the values come from the run) run in a
worker process under a time limit per value and a budget per transcript
(:class:`BoundedSearch`: a scope's searches, a volatile rule's matches); toolreplay's own
published schemas use only anchored, linear patterns and run in process (:func:`search`).
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import json
import os
import select
import subprocess
import sys
import time
import types
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, NoReturn

import attrs
import regress
from jsonschema import Draft202012Validator, FormatChecker, ValidationError
from jsonschema.validators import extend

from toolreplay.errors import ToolreplayError
from toolreplay.limits import DEFAULT_BUDGET_SECONDS

#: regress flags: ``u``, as JSON Schema asks for (code points, Unicode property escapes)
FLAGS = "u"
#: Longest one pattern may take on one value before the call is left unjudged.
PATTERN_SECONDS = 1.0
#: How long the worker process may take to start (not counted in the budget).
START_SECONDS = 30.0

Search = Callable[[str, str], bool]


class Unjudged(ToolreplayError):
    """A pattern could not be evaluated in time (or at all): the value is neither in nor out."""

    #: in :meth:`BoundedSearch.cuts`, the request that could not be judged
    position = 0


@lru_cache(maxsize=1024)
def compiled(pattern: str) -> regress.Regex:
    """``pattern`` compiled as ECMA-262 with the ``u`` flag; raises ``regress.RegressError``."""
    try:
        return regress.Regex(pattern, flags=FLAGS)
    except UnicodeEncodeError as err:  # a lone surrogate cannot reach the engine
        raise regress.RegressError("holds a lone surrogate") from err


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` is not a valid ECMA-262 regular expression (None when it is)."""
    try:
        compiled(pattern)
    except regress.RegressError as err:
        return str(err) or "invalid"
    return None


def search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches somewhere in ``text``, in process and without a time limit.

    Only for toolreplay's own published patterns: see the module's docstring.
    """
    try:
        return compiled(pattern).find(text) is not None
    except UnicodeEncodeError:  # pragma: no cover - the strict reader refuses lone surrogates
        return False


def _is_regex(instance: object) -> bool:
    return not isinstance(instance, str) or pattern_problem(instance) is None


#: The draft's format checker with ``regex`` meaning ECMA-262 (its own uses Python's ``re``).
FORMAT_CHECKER = FormatChecker()
FORMAT_CHECKER.checkers = {**Draft202012Validator.FORMAT_CHECKER.checkers, "regex": (_is_regex, ())}


class _Engine:
    """What jsonschema's keyword functions see as ``re``: a ``search`` that asks ``search``."""

    def __init__(self, search: Search) -> None:
        self.search = search


def _with_globals(function: Any, **names: Any) -> Any:
    """jsonschema's own ``function`` (its code, not a copy of it) with the global ``names`` replaced.

    The library's module stays as it is (other validators in this process keep Python's
    ``re``); a name the function no longer uses means jsonschema changed inside, and
    toolreplay stops rather than let Python's ``re`` decide unseen.
    """
    unused = sorted(set(names) - set(function.__code__.co_names))
    if unused:
        raise RuntimeError(f"jsonschema's {function.__name__} no longer uses {', '.join(unused)}")
    scope = {**function.__globals__, **names}
    clone = types.FunctionType(function.__code__, scope, function.__name__, function.__defaults__)
    if function.__name__ in scope:  # a recursive helper calls itself by its global name
        scope[function.__name__] = clone
    return clone


def _pattern_keywords(search: Search) -> dict[str, Callable[..., Iterator[ValidationError]]]:
    """jsonschema's keywords that match regular expressions, matching them with ``search``.

    ``find_additional_properties`` is the one helper not taken as it is: it joins the
    ``patternProperties`` keys into one alternation, which renumbers backreferences
    (``(a)\\1|(b)\\1`` then matches ``"b"``); each pattern is searched on its own, as
    draft 2020-12 defines ``additionalProperties``.
    """
    engine = _Engine(search)

    def find_additional_properties(instance: dict[str, Any], schema: Any) -> Iterator[str]:
        properties = schema.get("properties", {})
        patterns = list(schema.get("patternProperties", {}))
        for key in instance:
            if key not in properties and not any(search(p, key) for p in patterns):
                yield key

    # the draft's own table (its module was renamed between jsonschema releases)
    library = Draft202012Validator.VALIDATORS
    unevaluated = library["unevaluatedProperties"]
    evaluated = _with_globals(unevaluated.__globals__["find_evaluated_property_keys_by_schema"], re=engine)
    return {
        "pattern": _with_globals(library["pattern"], re=engine),
        "patternProperties": _with_globals(library["patternProperties"], re=engine),
        "additionalProperties": _with_globals(
            library["additionalProperties"], find_additional_properties=find_additional_properties
        ),
        "unevaluatedProperties": _with_globals(unevaluated, find_evaluated_property_keys_by_schema=evaluated),
    }


def validator_class(search: Search) -> Any:
    """Draft 2020-12 whose regular expressions are matched by ``search`` (ECMA-262).

    Every keyword is jsonschema's own function; the four that match regular expressions
    (``pattern``, ``patternProperties``, ``additionalProperties``, and
    ``unevaluatedProperties`` through the library's evaluated-keys helper) run with
    ``search`` in place of Python's ``re``. So which keys a subschema evaluates, what
    ``$ref``, ``if``/``then``/``else`` and boolean subschemas mean, is the library's call.

    ``search`` may raise :class:`Unjudged`; it propagates out of validation so that no
    keyword (``not``, ``anyOf``, ``if``) can turn an unjudged value into a pass.
    """
    cls = extend(Draft202012Validator, validators=_pattern_keywords(search))  # type: ignore[no-untyped-call]

    # jsonschema picks the class of every subschema it descends into (a $ref included) from
    # that subschema's "$schema", and its own classes match patterns with Python's re: one
    # nested "$schema" would switch the engine back. Every subschema stays this class.
    def evolve(self: Any, **changes: Any) -> Any:
        changes.setdefault("schema", self.schema)
        for field in attrs.fields(cls):
            if field.init and field.alias not in changes:
                changes[field.alias] = getattr(self, field.name)
        return cls(**changes)

    cls.evolve = evolve
    return cls


#: Draft 2020-12 with ECMA-262 patterns evaluated in process (trusted patterns only).
EcmaValidator = validator_class(search)
_META = EcmaValidator(Draft202012Validator.META_SCHEMA, format_checker=FORMAT_CHECKER)


def schema_errors(schema: Any) -> Iterator[ValidationError]:
    """Why ``schema`` is not a valid draft 2020-12 schema whose patterns are ECMA-262."""
    return _META.iter_errors(schema)  # type: ignore[no-any-return]


#: the one dialect toolreplay evaluates, as "$schema" names it
DIALECT = "https://json-schema.org/draft/2020-12/schema"
#: why a schema that declares another dialect is refused
DIALECT_PROBLEM = f"$schema must be '{DIALECT}' (scope schemas are draft 2020-12)"
#: why a schema that uses "format" is refused
FORMAT_PROBLEM = (
    "format is not checked in scope schemas (it would let any value through): restrict the value with"
    " pattern or enum"
)
#: keywords whose values are data, not schemas
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})

Parts = tuple[str | int, ...]


def _refusal(keyword: str, value: Any) -> str | None:
    if keyword == "$schema" and isinstance(value, str) and value.rstrip("#") != DIALECT:
        return DIALECT_PROBLEM
    if keyword == "format" and isinstance(value, str):
        return FORMAT_PROBLEM
    return None


def refused_keyword(schema: Any, parts: Parts = ()) -> tuple[Parts, str] | None:
    """Where ``schema`` first uses a keyword a scope may not hold, and why (None when nowhere).

    Every subschema is evaluated as 2020-12 whatever it declares, so a ``$schema`` naming
    another draft (whose keywords mean other things) is refused rather than ignored. A
    ``format`` would restrict nothing (draft 2020-12 makes it an annotation) or, asserted,
    depend on which optional checkers are installed: it is refused rather than let any
    value through unseen.
    """
    if isinstance(schema, dict):
        return _refused_member(schema, parts)
    if isinstance(schema, list):
        return _refused_item(schema, parts)
    return None


def _refused_member(schema: dict[str, Any], parts: Parts) -> tuple[Parts, str] | None:
    """The first keyword of an object refused, itself or inside it (data keywords hold no schema)."""
    for key, value in schema.items():
        problem = _refusal(key, value)
        if problem is not None:
            return (*parts, key), problem
        found = None if key in _DATA_KEYWORDS else refused_keyword(value, (*parts, key))
        if found is not None:
            return found
    return None


def _refused_item(schema: list[Any], parts: Parts) -> tuple[Parts, str] | None:
    for position, value in enumerate(schema):
        found = refused_keyword(value, (*parts, position))
        if found is not None:
            return found
    return None


def error_pointer_parts(error: ValidationError) -> list[str | int]:
    """Where ``error`` is in the instance; a bad ``patternProperties`` key points at its entry."""
    parts: list[str | int] = list(error.absolute_path)
    if is_regex_error(error) and "propertyNames" in error.absolute_schema_path:
        parts.append(str(error.instance))
    return parts


def is_regex_error(error: ValidationError) -> bool:
    return error.validator == "format" and error.validator_value == "regex"


def error_message(error: ValidationError) -> str:
    """``error``'s message, saying what is wrong with a pattern in ECMA-262 terms."""
    if is_regex_error(error) and isinstance(error.instance, str):
        problem = pattern_problem(error.instance) or "invalid"
        return f"pattern {error.instance!r} is not a valid ECMA-262 regular expression: {problem}"
    return str(error.message)


#: The worker: a script run by path so that it imports nothing but regress.
WORKER = Path(__file__).with_name("_ecma_worker.py")


#: verdicts remembered per transcript: at most this many, on values at most this long
KNOWN_VERDICTS = 10_000
KNOWN_TEXT_CHARS = 256
#: what :meth:`BoundedSearch._reply` says when the worker's output ends
_STOPPED = b"Ethe pattern engine stopped"
#: idle workers per process (by pid), handed from one transcript's search to the next: two, for
#: the two that search one transcript at once (its scope's patterns, its volatile rules')
_IDLE: dict[int, list[subprocess.Popen[bytes]]] = {}
IDLE_WORKERS = 2


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.kill()
    process.wait()
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):  # unsent bytes for a worker that is gone
                stream.close()


@atexit.register
def _stop_idle() -> None:
    for process in _IDLE.pop(os.getpid(), []):
        _stop(process)


def _keep_idle(pid: int, process: subprocess.Popen[bytes]) -> None:
    """Keep a healthy worker for the next search in process ``pid`` (at most IDLE_WORKERS)."""
    idle = _IDLE.setdefault(pid, [])
    idle.append(process)
    while len(idle) > IDLE_WORKERS:
        _stop(idle.pop(0))


def _take_idle(pid: int) -> subprocess.Popen[bytes] | None:
    """The idle worker kept last in process ``pid`` that still runs, if any."""
    idle = _IDLE.get(pid, [])
    while idle:
        process = idle.pop()
        if process.poll() is None:
            return process
        _stop(process)
    return None


class BoundedSearch:
    """ECMA-262 search in a worker process, with a time limit per value and a total budget.

    Each call waits at most ``per_value`` seconds and never past what is left of
    ``budget``; a value that takes longer raises :class:`Unjudged` (the stuck worker is
    killed and a fresh one starts for the next value), and once the budget is spent every
    further call raises :class:`Unjudged` at once. Use as a context manager.

    The budget counts the time the engine itself spent (the worker's CPU time per search,
    the whole wait for one that was cut off), not the round trip to the worker: that costs
    tens of microseconds per value whatever the pattern, so it grows with the transcript,
    never faster, and a long transcript of ordinary values does not run out of budget on a
    busy machine.
    """

    def __init__(
        self,
        *,
        budget: float = DEFAULT_BUDGET_SECONDS,
        per_value: float = PATTERN_SECONDS,
        spent: float = 0.0,
    ) -> None:
        self.budget = budget
        self.per_value = per_value
        #: engine time spent from the budget (``spent``: by earlier searches of the same transcript)
        self.spent = spent
        self._process: subprocess.Popen[bytes] | None = None
        self._pid = os.getpid()
        #: the worker's answers read and not taken yet, and the start of the next one
        self._lines: collections.deque[bytes] = collections.deque()
        self._buffer = b""
        #: a request was sent and its answer not read: the worker must not be handed on, or
        #: its late answer would become the verdict on another value
        self._in_flight = False
        #: verdicts on short values, which repeat in transcripts (the same path, the same mode)
        self._known: dict[tuple[str, str], bool] = {}

    def __enter__(self) -> BoundedSearch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Hand a healthy worker on to the next transcript in this process."""
        process, self._process = self._process, None
        if process is None or self._pid != os.getpid():
            return
        if self._buffer or self._lines or self._in_flight or process.poll() is not None:
            self._in_flight = False
            _stop(process)
            return
        _keep_idle(self._pid, process)

    def _discard(self) -> None:
        """Stop the worker (it is stuck, or broken); the next search starts a fresh one."""
        process, self._process = self._process, None
        self._buffer = b""
        self._lines.clear()
        self._in_flight = False
        if process is not None and self._pid == os.getpid():
            _stop(process)

    def __call__(self, pattern: str, text: str) -> bool:
        known = self._known.get((pattern, text))
        if known is not None:
            return known
        found = self._search(pattern, text)
        if len(text) <= KNOWN_TEXT_CHARS and len(self._known) < KNOWN_VERDICTS:
            self._known[pattern, text] = found
        return found

    def _search(self, pattern: str, text: str) -> bool:
        limit = self._limit()
        request = json.dumps([pattern, text, limit]).encode() + b"\n"
        process = self._started()
        start = time.monotonic()
        self._send(process, request, start)
        reply = self._answer(process, pattern, start, limit)
        self._in_flight = False
        if reply.startswith(b"E"):
            self._could_not_run(pattern, start, reply)
        found, _, seconds = reply.partition(b" ")
        self.spent += float(seconds)
        return found == b"1"

    def cuts(self, requests: Sequence[tuple[str, str]]) -> list[list[int]]:
        """Where each ``(pattern, text)``'s matches are, in one trip to the worker for them all.

        Each answer is the matches' UTF-8 byte ranges, flat (``[start, stop, start, stop,
        ...]``), as regress's ``find_iter`` gives them. Each request has the time limit of one
        value, all share the budget; one that runs out (or cannot run) raises
        :class:`Unjudged` with its ``position`` in ``requests``. A text must be UTF-8 (no lone
        surrogate), which the engine requires.
        """
        if not requests:
            return []
        limit = self._limit()
        request = json.dumps({"cut": requests, "seconds": limit}, ensure_ascii=False).encode() + b"\n"
        process = self._started()
        start = time.monotonic()
        self._send(process, request, start)
        out: list[list[int]] = []
        for position, (pattern, _) in enumerate(requests):
            try:
                limit = self._limit() if position else limit
                reply = self._answer(process, pattern, start, limit)
                if reply.startswith(b"E"):
                    self._could_not_run(pattern, start, reply)
            except Unjudged as err:
                self._discard()  # the worker may still be at work on the rest
                err.position = position
                raise
            seconds, *spans = reply.split()
            self.spent += float(seconds)
            out.append([int(bound) for bound in spans])
            start = time.monotonic()  # the worker searches the requests one after the other
        self._in_flight = False
        return out

    def _limit(self) -> float:
        """The longest the next value may take: its own limit, or what is left of the budget."""
        left = self.budget - self.spent
        if left <= 0:
            raise Unjudged(f"the pattern budget of {self.budget:g} s for this transcript is spent")
        return min(self.per_value, left)

    def _answer(self, process: subprocess.Popen[bytes], pattern: str, start: float, limit: float) -> bytes:
        """The worker's answer on one value, due ``limit`` seconds after ``start``."""
        reply = self._read(process, start + limit, start)
        if reply is None:
            self._cut_off(pattern, start, limit)
        return reply

    def _started(self) -> subprocess.Popen[bytes]:
        """The worker, started if need be."""
        if self._in_flight:  # an earlier search was interrupted: its answers are not for this one
            self._discard()
        try:
            return self._worker()
        except OSError as err:  # no pipes to wait on (select needs POSIX), no interpreter
            self._discard()
            raise ToolreplayError(f"the ECMA-262 pattern engine did not start: {err}") from err

    def _send(self, process: subprocess.Popen[bytes], request: bytes, start: float) -> None:
        """Send one request line; the answers are in flight until they are all read."""
        try:
            assert process.stdin is not None
            self._in_flight = True
            process.stdin.write(request)
            process.stdin.flush()
        except OSError as err:
            self._failed(err, start)

    def _read(self, process: subprocess.Popen[bytes], deadline: float, start: float) -> bytes | None:
        """The worker's next answer, None when it is cut off at ``deadline``."""
        try:
            return self._reply(process, deadline)
        except OSError as err:
            self._failed(err, start)

    def _failed(self, err: OSError, start: float) -> NoReturn:
        self.spent += time.monotonic() - start
        self._discard()
        raise Unjudged(f"the pattern engine failed: {err.strerror or err}") from err

    def _cut_off(self, pattern: str, start: float, limit: float) -> NoReturn:
        """A search that ran out of time: the value's limit, or what was left of the budget."""
        self.spent += time.monotonic() - start
        self._discard()
        if limit < self.per_value:
            raise Unjudged(
                f"the pattern budget of {self.budget:g} s for this transcript ran out"
                f" while {pattern!r} was running"
            )
        raise Unjudged(f"pattern {pattern!r} did not finish within {limit:g} s on one value")

    def _could_not_run(self, pattern: str, start: float, reply: bytes) -> NoReturn:
        """The worker's error answer (a stopped worker is discarded)."""
        self.spent += time.monotonic() - start
        if reply == _STOPPED:
            self._discard()
        raise Unjudged(f"pattern {pattern!r} could not run: {reply[1:].decode(errors='replace').strip()}")

    def _worker(self) -> subprocess.Popen[bytes]:
        if self._process is not None and self._pid == os.getpid():
            return self._process
        # forked (a pool worker) with the parent's worker: leave that one to the parent
        self._process, self._pid, self._buffer, self._in_flight = None, os.getpid(), b"", False
        self._lines.clear()
        idle = _take_idle(self._pid)
        if idle is not None:
            self._process = idle
            return idle
        process = subprocess.Popen(
            [sys.executable, "-I", str(WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._process = process
        if self._reply(process, time.monotonic() + START_SECONDS) != b"ready":
            self._discard()
            raise ToolreplayError(f"the ECMA-262 pattern engine did not start ({WORKER.name})")
        return process

    def _reply(self, process: subprocess.Popen[bytes], deadline: float) -> bytes | None:
        """The worker's next line (without its newline); None when the deadline passes first."""
        assert process.stdout is not None
        fd = process.stdout.fileno()
        while not self._lines:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return _STOPPED
            # a batch's answers come many to a read: split once, take them one by one
            *lines, self._buffer = (self._buffer + chunk).split(b"\n")
            self._lines.extend(lines)
        return self._lines.popleft()
