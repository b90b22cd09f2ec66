"""The house rules the layout promises: stages import only earlier stages, no import circles."""
from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

PKG = Path(__file__).resolve().parent.parent / "toaster"
# stage packages in pipeline order; a module may import its own stage and earlier ones only
ORDER = {"frontend": 0, "calculus": 1, "m3": 2, "k3": 3, "dist": 3, "imperative": 4, "backends": 5}


def _modules():
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG.parent).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        yield name, path


def _imports(path: Path, top_level_only: bool):
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("toaster"):
            yield node.module
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("toaster"))


def _stage(module: str):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ORDER else None


def test_no_stage_imports_a_later_stage():
    wrong = []
    for name, path in _modules():
        src = _stage(name)
        for imp in _imports(path, top_level_only=False):
            dst = _stage(imp)
            if src and dst and ORDER[dst] > ORDER[src]:
                wrong.append(f"{name} imports {imp}")
            if {src, dst} == {"k3", "dist"}:
                wrong.append(f"{name} imports {imp} (the local and distributed branches are independent)")
    assert not wrong, "\n".join(wrong)


def test_no_module_level_import_circles():
    g = nx.DiGraph()
    known = dict(_modules())
    for name, path in known.items():
        for imp in _imports(path, top_level_only=True):
            target = imp if imp in known else imp.rpartition(".")[0]
            if target in known and target != name:
                g.add_edge(name, target)
    cycles = [c for c in nx.simple_cycles(g) if not all(m.endswith("__init__") for m in c)]
    # a package's __init__ importing its own submodules is not a circle between stages
    cycles = [c for c in cycles if not any(known[m].name == "__init__.py" for m in c)]
    assert not cycles, cycles
