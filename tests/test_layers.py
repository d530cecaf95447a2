"""The verifier's packages form layers: no import goes up, and no modules import each other.

Bottom-up (docs/architecture.md):
  profiles        the case contracts: profile schema, family table, vocabulary, case layout, digests
  stage_snapshot  reads a composed stage into plain data
  checks          the measure families (comparison math)
  gates           validity, preservation and objective gates; the closed-book rule
  scoring         the pytest plugin, the grading session, the reward and the report
  apps            authoring (inject, freeze, tasks), regrade, records, visual, physical
  commands        the `usdgrade` command, which registers every app's subcommands

Read from the source with `ast`, so the imports inside functions (the lazy ones that keep
start-up short) count as much as those at the top of a module. The same walk also bounds
the size of modules and functions, which keeps each one readable in one sitting.
"""
from __future__ import annotations

import ast
import functools
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NAMESPACE = "usd_repair_verifier"
LAYERS = (
    ("contracts", ("profiles",)),
    ("snapshot", ("stage_snapshot",)),
    ("measure", ("checks",)),
    ("gates", ("gates", "closed_book")),
    ("scoring", ("scoring",)),
    ("apps", ("authoring", "records", "regrade", "visual", "physical")),
    ("commands", ("commands",)),
)
RANK = {package: rank for rank, (_, packages) in enumerate(LAYERS) for package in packages}
LAYER_NAME = {package: name for name, packages in LAYERS for package in packages}
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def _modules() -> dict[str, Path]:
    """Dotted name (without the namespace) -> file, for every module of every package."""
    found = {}
    for package in RANK:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imported(module: str, path: Path) -> set[str]:
    """The repository modules this module imports (a `from package import name` names the
    submodule when there is one, else the package)."""
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(), str(path))
    # Imports under `if TYPE_CHECKING:` are for annotations only: they never run.
    typing_only = {id(inner) for node in ast.walk(tree) if isinstance(node, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(node.test) for stmt in node.body for inner in ast.walk(stmt)}
    out = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base if is_package else base[:-1]
                base = base[:len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            names = [source] + [f"{source}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            if name == "tests" or name.startswith(("tests.", "bench.", "fixtures.")) or name == "bench":
                out.add(name)   # the package must never import the repository's tests or tools
                continue
            name = name.removeprefix(NAMESPACE + ".")
            if name in MODULES and name != module:
                out.add(name)
    return out


@functools.cache
def imports() -> dict[str, set[str]]:
    """Module -> the repository modules it imports. Parsed when a test first asks, not at
    collection: every xdist worker collects this file, one of them runs its tests."""
    return {module: _imported(module, path) for module, path in MODULES.items()}


def _package(module: str) -> str:
    return module.split(".")[0]


def test_every_code_folder_is_in_a_layer():
    pyproject = (REPO / "pyproject.toml").read_text()
    mapped = {line.split('"')[1].split(".")[1] for line in pyproject.splitlines()
              if line.startswith(f'"{NAMESPACE}.') and '" = "' in line and line.count(".") == 1}
    assert mapped == set(RANK), "pyproject's package-dir and the layers list the same packages"


def test_no_import_goes_up_a_layer():
    upward = [f"{module} ({LAYER_NAME[_package(module)]}) imports {target} ({LAYER_NAME[_package(target)]})"
              for module, targets in imports().items() for target in sorted(targets)
              if target in MODULES and RANK[_package(target)] > RANK[_package(module)]]
    assert not upward, "\n".join(upward)


def test_the_package_never_imports_tests_or_tools():
    stray = [f"{module} imports {target}" for module, targets in imports().items() for target in sorted(targets)
             if target not in MODULES]
    assert not stray, "\n".join(stray)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index, low, on_stack, stack, result, counter = {}, {}, set(), [], [], [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        result.append(sorted(component))
    return result


def test_no_two_packages_import_each_other():
    graph = defaultdict(set)
    for module, targets in imports().items():
        graph[_package(module)] |= {_package(t) for t in targets if t in MODULES and _package(t) != _package(module)}
    assert not _cycles(graph)


def test_no_modules_import_each_other():
    # A module importing its own package's __init__ (which exports the package's names from its
    # modules) is not counted: that is how a package is assembled, not two modules leaning on each other.
    graph = {module: {t for t in targets if t in MODULES and not module.startswith(t + ".")}
             for module, targets in imports().items()}
    assert not _cycles(graph)


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def _long_functions(path: Path):
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                yield f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({length} lines)"


CODE_FILES = sorted(MODULES.values()) + sorted((REPO / "bench").glob("*.py")) + sorted((REPO / "tools").glob("*.py"))


@pytest.mark.parametrize("path", CODE_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_module_and_function_sizes(path: Path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path.relative_to(REPO)} has {lines} lines"
    long = list(_long_functions(path))
    assert not long, "\n".join(long)
