"""The import rules of the house, read from the source with ``ast`` (docs/architecture.md)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from toolreplay.kinds import KIND_ORDER, REPORT_ERROR

SRC = Path(__file__).resolve().parents[2] / "src"

#: the modules that may import toolreplay.github: the CLI, github/ itself, and the
#: ``--format github`` renderer
GITHUB_IMPORTERS = ("toolreplay.cli", "toolreplay.github", "toolreplay.report.github")


@dataclass(frozen=True)
class Edge:
    """One import of a toolreplay module by another."""

    source: str
    target: str
    line: int
    #: run when the module is imported (not inside a function, not under TYPE_CHECKING, not by name)
    module_level: bool


#: a string that names a module of ours for ``import_module`` (a lazy table's ``"module:attr"``)
NAMED = re.compile(r"^(toolreplay(?:\.\w+)+)(?::\w+)?$")


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted((SRC / "toolreplay").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(body: list[ast.stmt], module_level: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement in ``body``, and whether it runs when the module is imported."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, module_level
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield from _imports(node.body, False)
        elif isinstance(node, ast.If) and _type_checking(node.test):
            yield from _imports(node.body, False)
            yield from _imports(node.orelse, module_level)
        else:
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                inner = getattr(node, field, None)
                if isinstance(inner, list):
                    yield from _imports([n for n in inner if isinstance(n, ast.stmt)], module_level)
                    for handler in inner:
                        if isinstance(handler, ast.ExceptHandler | ast.match_case):
                            yield from _imports(handler.body, module_level)


def _edges() -> list[Edge]:
    modules = _modules()

    def known(name: str) -> str:
        while name not in modules:
            name = name.rpartition(".")[0]
        return name

    edges = []
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        # a lazy table (the CLI's commands, the renderers) imports the modules it names
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                match = NAMED.match(node.value)
                if match and match.group(1) in modules:
                    edges.append(
                        Edge(source=name, target=match.group(1), line=node.lineno, module_level=False)
                    )
        for node, module_level in _imports(tree.body, True):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                # "from package import module" imports the module; "from module import name" the module
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            edges.extend(
                Edge(source=name, target=known(target), line=node.lineno, module_level=module_level)
                for target in targets
                if target == "toolreplay" or target.startswith("toolreplay.")
            )
    return edges


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _cycles(edges: list[Edge]) -> list[list[str]]:
    """The strongly connected components with more than one module (or a self-import)."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        graph.setdefault(e.source, set()).add(e.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, ()):
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_import_graph_is_read() -> None:
    """The parser sees known imports, lazy and module-level (so the rules below are not vacuous)."""
    edges = {(e.source, e.target, e.module_level) for e in _edges()}
    assert ("toolreplay.validate", "toolreplay.schemas", True) in edges
    assert ("toolreplay.config", "toolreplay.schemas", False) in edges
    assert ("toolreplay.report.github", "toolreplay.github.annotations", True) in edges
    assert ("toolreplay.cli", "toolreplay.cli.group", True) in edges
    # named in a lazy table: the group imports each command's module, the registry each renderer
    assert ("toolreplay.cli.group", "toolreplay.cli.core", False) in edges
    assert ("toolreplay.report", "toolreplay.report.sarif", False) in edges


def test_only_the_cli_and_the_github_renderer_import_toolreplay_github() -> None:
    """The rules and the renderers stand without toolreplay.github; any import counts, lazy ones too."""
    wrong = [
        f"{e.source}:{e.line} imports {e.target}"
        for e in _edges()
        if _within(e.target, ("toolreplay.github",)) and not _within(e.source, GITHUB_IMPORTERS)
    ]
    assert wrong == []


def test_the_schema_loader_is_below_its_readers() -> None:
    """validate, config and driftnote get validators from toolreplay.schemas, which imports none of them."""
    readers = {"toolreplay.validate", "toolreplay.config", "toolreplay.driftnotes.note"}
    edges = _edges()
    wrong = [
        f"{e.source}:{e.line} imports {e.target}"
        for e in edges
        if (e.source == "toolreplay.schemas" and e.target in readers)
        or (e.source in readers - {"toolreplay.validate"} and e.target in readers)
    ]
    assert wrong == []
    assert {e.source for e in edges if e.target == "toolreplay.schemas"} >= readers


def test_no_import_cycle() -> None:
    """No two modules import each other, directly or around a loop, by any import: at module level,
    inside a function, under TYPE_CHECKING, or by name from a lazy table."""
    assert _cycles(_edges()) == []


def test_the_cycle_finder_finds_cycles() -> None:
    """A loop of three modules is reported (the check above could not pass by finding nothing)."""
    loop = [Edge(source=a, target=b, line=1, module_level=True) for a, b in ("ab", "bc", "ca")]
    assert _cycles([*loop, Edge(source="c", target="d", line=1, module_level=True)]) == [["a", "b", "c"]]


def test_only_the_source_worker_imports_project_code() -> None:
    """contracts.python (which imports a project's module:object) is imported by the child process's
    worker alone: no command, hook or check imports project code in its own process."""
    wrong = [
        f"{e.source}:{e.line} imports {e.target}"
        for e in _edges()
        if e.target == "toolreplay.contracts.python" and e.source != "toolreplay.contracts._source_worker"
    ]
    assert wrong == []


def test_a_finding_kind_is_named_in_one_table() -> None:
    """Every finding kind's name is written in ``kinds.py`` alone: the other modules name it
    through the table's constants, so a kind is renamed or added in one place."""
    names = {*KIND_ORDER, REPORT_ERROR}
    written = {
        (name, str(path.relative_to(SRC)))
        for name_, path in _modules().items()
        if name_ != "toolreplay.kinds"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        for name in names
        if node.value == name
    }
    assert not written


#: the pipeline's stages, in order (docs/architecture.md); a module belongs to the stage of the
#: longest prefix that names it, and imports only from its own stage or an earlier one
PIPELINE: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "shared values",
        (
            "toolreplay._version",
            "toolreplay.errors",
            "toolreplay.escape",
            "toolreplay.files",
            "toolreplay.kinds",
            "toolreplay.limits",
            "toolreplay.lazy",
            "toolreplay.extras",
            "toolreplay.locate",
            "toolreplay.outputs",
            "toolreplay.processes",
            "toolreplay.confine",
            "toolreplay.pool",
            "toolreplay.findings",
            "toolreplay.gate",
            "toolreplay.sdk",
        ),
    ),
    (
        "read",
        (
            "toolreplay.canonical",
            "toolreplay.transcript",
            "toolreplay.chain",
            "toolreplay.parallel",
            "toolreplay.signing",
            "toolreplay.volatile_rules",
            "toolreplay.state_command",
            "toolreplay.config",
            "toolreplay.contracts",
            "toolreplay.importers",
            "toolreplay.git",
            "toolreplay.schemas",
            "toolreplay.ecma",
            "toolreplay._ecma_worker",
            "toolreplay.driftnotes.note",
        ),
    ),
    (
        "judge",
        (
            "toolreplay.validate",
            "toolreplay.analyses",
            "toolreplay.driftnotes",
            "toolreplay.check",
            "toolreplay.shards",
        ),
    ),
    ("report", ("toolreplay.report", "toolreplay.github.annotations")),
    (
        "deliver",
        (
            "toolreplay",
            "toolreplay.__main__",
            "toolreplay.cli",
            "toolreplay.github",
            "toolreplay.capture",
            "toolreplay.library",
            "toolreplay.pytest_plugin",
            # the tools_source child: a process of its own that runs the project's code
            "toolreplay.contracts._source_worker",
            "toolreplay.contracts.python",
        ),
    ),
)

#: edges that are no import: the runner names the child's module to start it as a process
NOT_IMPORTS = {("toolreplay.contracts.runner", "toolreplay.contracts._source_worker")}


def _stage(module: str) -> int:
    """The pipeline stage of ``module``: the one of the longest prefix naming it."""
    found = [
        (len(prefix), n)
        for n, (_, prefixes) in enumerate(PIPELINE)
        for prefix in prefixes
        # the package itself is named alone: its prefix would otherwise give every module a stage
        if module == prefix or (prefix != "toolreplay" and module.startswith(prefix + "."))
    ]
    assert found, f"{module} has no stage in PIPELINE"
    return max(found)[1]


def test_every_module_has_a_stage() -> None:
    """Each module of the package sits in one stage of the pipeline."""
    for module in _modules():
        _stage(module)


def test_imports_follow_the_pipeline() -> None:
    """Data flows read -> judge -> report -> deliver: no module imports from a later stage
    (counting every import, as the cycle test does)."""

    assert _backward(_edges()) == []


def _backward(edges: Iterable[Edge]) -> list[str]:
    """The imports of ``edges`` that go from a stage to a later one."""

    def named(module: str) -> str:
        return f"{module} ({PIPELINE[_stage(module)][0]})"

    return sorted(
        {
            f"{named(e.source)} imports {named(e.target)}"
            for e in edges
            if _stage(e.target) > _stage(e.source) and (e.source, e.target) not in NOT_IMPORTS
        }
    )


def test_the_pipeline_test_sees_a_backward_import() -> None:
    """A reader that imported a renderer would be caught; the renderer importing it would not."""
    reader, renderer = "toolreplay.transcript", "toolreplay.report.text"
    assert _backward([Edge(source=reader, target=renderer, line=1, module_level=True)]) == [
        "toolreplay.transcript (read) imports toolreplay.report.text (report)"
    ]
    assert _backward([Edge(source=renderer, target=reader, line=1, module_level=True)]) == []


def test_no_private_name_is_imported_from_another_module() -> None:
    """A ``_name`` stays in its module: what another module needs is public where it is defined."""
    found = sorted(
        f"{module} imports {node.module}.{alias.name}"
        for module, path in _modules().items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("toolreplay")
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    )
    assert found == []


def test_no_module_re_exports_a_name() -> None:
    """No ``from m import name as name``: a name is imported from where it is defined."""
    found = sorted(
        f"{module} re-exports {node.module}.{alias.name}"
        for module, path in _modules().items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("toolreplay")
        for alias in node.names
        if alias.asname == alias.name
    )
    assert found == []
