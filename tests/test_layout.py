"""The package's shape: imports point one way through the layers, and no module imports itself
back through others (docs/layout.md, "How the code is laid out").

Every module's imports are read with `ast`, those inside functions included (a lazy import is
still a dependency), and resolved to modules of the package. A failure names the module pair.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "rocm_perf"

# Lowest first. A module may import its own folder and any layer below its own; two folders
# on one layer (backends, source) do not import each other: what both need lives lower down.
# `sweep` drives the optimize loop, so it sits above `optimize` (which never imports it). The MCP
# tools (`agents`) are the Python API's functions served to agents, so `agents` sits on `api`;
# `cli` starts the server, so it sits on top.
# The reproducer's format (rocm_perf/reproducer.py) is base: every command takes a reproducer.
LAYERS: list[tuple[str, ...]] = [
    ("base",),  # the top-level modules of rocm_perf/ (errors, atomic_file, process, ...)
    ("trace",),
    ("analysis",),
    ("backends", "source"),
    ("optimize",),
    ("isolate",),  # captures a program's dispatch: builds and runs it (optimize/project.py) and extracts its kernel
    ("sweep",),
    ("report",),
    ("api",),  # the Python API over the analyses (`import rocm_perf as rp`)
    ("agents",),  # the MCP server (its tools call the API), its jobs, the skill and live engines
    ("cli",),
]
RANK = {part: i for i, parts in enumerate(LAYERS) for part in parts}
# Top-level modules that are not base: `python -m rocm_perf` is the CLI.
TOP_LEVEL = {"cli": "cli", "__main__": "cli"}
# A package whose parts are each short enough to read in one sitting (issue 13).
MAX_LINES = {"sweep": 400}
# Every module and class of the package: a room one can live in (issue 53).
MODULE_MAX_LINES = 700
CLASS_MAX_METHODS = 30


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    return {module_name(p, package.parent): p for p in sorted(package.rglob("*.py"))}


def part_of(module: str, package: Path = PACKAGE) -> str:
    """The layer part a module belongs to: its folder under rocm_perf/, `cli`, or base for the rest."""
    parts = module.split(".")
    if len(parts) > 1 and (package / parts[1]).is_dir():
        return parts[1]
    if len(parts) == 2 and parts[1] in TOP_LEVEL:
        return TOP_LEVEL[parts[1]]
    return "base"  # rocm_perf/__init__.py and the other top-level modules


def imports_of(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package modules `module` imports, at top level and inside functions."""
    is_package = path.name == "__init__.py"
    here = module.split(".") if is_package else module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                prefix = here[: len(here) - node.level + 1]
                base = ".".join(prefix + ([base] if base else []))
            # `from pkg import mod` imports the module; `from mod import name` the module itself.
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:  # `import a.b.c` of a package resolves to its longest known prefix
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
    return found


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    known = modules(package)
    return {m: imports_of(m, p, known) for m, p in known.items()}


# The package's own namespace re-exports the Python API (`rp.load`, ...) from rocm_perf.api, on
# first use (PEP 562 `__getattr__`), so importing any module of the package loads nothing more.
LAZY_FACADE = ("rocm_perf", "rocm_perf.api")


def layer_violations(graph: dict[str, set[str]], package: Path = PACKAGE) -> list[str]:
    problems = []
    for module, targets in sorted(graph.items()):
        mine = part_of(module, package)
        for target in sorted(targets):
            if (module, target) == LAZY_FACADE:
                continue
            theirs = part_of(target, package)
            if mine not in RANK or theirs not in RANK:
                problems.append(f"{module}: folder {mine if mine not in RANK else theirs!r} is in no layer of LAYERS")
            elif theirs == mine:
                continue
            elif RANK[theirs] > RANK[mine]:
                problems.append(f"{module} ({mine}) imports {target} ({theirs}): a lower layer imports a higher one")
            elif RANK[theirs] == RANK[mine]:
                problems.append(f"{module} ({mine}) imports {target} ({theirs}): two folders of one layer; "
                                f"move what both need down")
    return problems


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each as a closed path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
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
            if len(component) > 1:
                circles.append(_cycle_in(sorted(component), graph))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return circles


def _cycle_in(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    """One closed import path through the component, for the message (a -> b -> a)."""
    members = set(component)
    start = component[0]
    path, seen = [start], {start}
    while True:
        nxt = sorted(w for w in graph[path[-1]] if w in members)
        back = [w for w in nxt if w in seen]
        if back:
            return path[path.index(back[0]):] + [back[0]]
        step = next(w for w in nxt if w not in seen)
        path.append(step)
        seen.add(step)


def test_every_import_respects_the_layers():
    problems = layer_violations(import_graph())
    assert not problems, "imports against the layer order:\n  " + "\n  ".join(problems)


def test_no_import_circles():
    circles = import_circles(import_graph())
    assert not circles, "import circles:\n  " + "\n  ".join(" -> ".join(c) for c in circles)


def test_sweep_modules_are_short():
    for folder, limit in MAX_LINES.items():
        long = {p.name: n for p in sorted((PACKAGE / folder).glob("*.py"))
                if (n := len(p.read_text(encoding="utf-8").splitlines())) > limit}
        assert not long, f"rocm_perf/{folder}/: modules over {limit} lines: {long}"


def long_modules(package: Path = PACKAGE, limit: int = MODULE_MAX_LINES) -> dict[str, int]:
    """Modules of the package over `limit` lines, with their length."""
    return {m: n for m, p in modules(package).items() if (n := len(p.read_text(encoding="utf-8").splitlines())) > limit}


def big_classes(package: Path = PACKAGE, limit: int = CLASS_MAX_METHODS) -> dict[str, int]:
    """Classes of the package with more than `limit` methods (`module.Class`), with their count."""
    found = {}
    for module, path in modules(package).items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ClassDef):
                n = sum(isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) for b in node.body)
                if n > limit:
                    found[f"{module}.{node.name}"] = n
    return found


def test_no_module_over_700_lines_and_no_class_over_30_methods():
    assert long_modules() == {}, f"modules over {MODULE_MAX_LINES} lines"
    assert big_classes() == {}, f"classes over {CLASS_MAX_METHODS} methods"


def test_every_folder_has_a_layer():
    folders = sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists())
    assert [f for f in folders if f not in RANK] == []


# ---- the checker itself fails on the shapes it is meant to catch ---------------------------------

def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_checker_names_an_upward_import_and_a_lazy_circle(tmp_path):
    pkg = _write(tmp_path / "rocm_perf", {
        "__init__.py": "",
        "errors.py": "",
        "trace/__init__.py": "",
        "trace/names.py": "from rocm_perf.backends.process import run\n",
        "backends/__init__.py": "",
        "backends/process.py": "",
        "report/__init__.py": "",
        "report/a.py": "def f():\n    from .b import g\n",
        "report/b.py": "from rocm_perf.report import a\n",
        "source/__init__.py": "",
        "source/parse.py": "import rocm_perf.backends.process\n",
    })
    graph = import_graph(pkg)
    problems = layer_violations(graph, pkg)
    assert any("rocm_perf.trace.names (trace) imports rocm_perf.backends.process (backends)" in p for p in problems)
    assert any("rocm_perf.source.parse (source) imports rocm_perf.backends.process (backends): two folders" in p
               for p in problems)
    assert import_circles(graph) == [["rocm_perf.report.a", "rocm_perf.report.b", "rocm_perf.report.a"]]


def test_checker_names_a_long_module_and_a_big_class(tmp_path):
    pkg = _write(tmp_path / "rocm_perf", {
        "__init__.py": "",
        "optimize/__init__.py": "",
        "optimize/room.py": "x = 1\n" * 701,
        "optimize/house.py": "class House:\n" + "".join(f"    def m{i}(self):\n        pass\n" for i in range(31))
                             + "class Hut:\n    def m(self):\n        pass\n",
    })
    assert long_modules(pkg) == {"rocm_perf.optimize.room": 701}
    assert big_classes(pkg) == {"rocm_perf.optimize.house.House": 31}
