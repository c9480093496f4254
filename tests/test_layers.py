"""evalgate's layers, read from the source with the standard library's `ast`: no import cycle
among evalgate's modules (every import counts: module level, inside a function, under
TYPE_CHECKING), the gate (evalgate/gate/) imports nothing above it, and the command line's
module is imported by `python -m evalgate` only (docs/development.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# What the gate's decision may read besides itself: the results it compares, the words it
# speaks, and the efficiency measures' names. Everything else (config loader, plans, engine,
# criteria, judges, stores, GitHub, the pipeline, the CLI) is above it and hands it what it needs.
GATE_MAY_IMPORT = {"evalgate.i18n", "evalgate.results", "evalgate.efficiency", "evalgate.reasons"}
ABOVE_THE_GATE = (
    "evalgate.config", "evalgate.plan", "evalgate.engine", "evalgate.infer", "evalgate.criteria", "evalgate.judge",
    "evalgate.vertex", "evalgate.baselines", "evalgate.github", "evalgate.pipeline", "evalgate.pairwise", "evalgate.rerun",
    "evalgate.under_base", "evalgate.cli", "evalgate.commands", "evalgate.local_gate", "evalgate.local_run", "evalgate.agents",
)


def modules(root: Path, package: str = "evalgate") -> dict[str, Path]:
    """Module name -> file, for every .py file of `package` under `root`."""
    out = {}
    for f in sorted((root / package).rglob("*.py")):
        parts = f.relative_to(root).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return out


def imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of `mods` it imports, wherever the import statement is."""

    def target(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, f in mods.items():
        package = m if f.name == "__init__.py" else m.rpartition(".")[0]
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"), str(f))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the module's package up
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([base] if base else []))
                names = [f"{base}.{a.name}" for a in node.names] + [base]
            for n in names:
                t = target(n)
                # A submodule naming its own package (`from evalgate.gate import x` in
                # evalgate/gate/y.py) reaches the package's __init__, which imports the
                # submodules: counted only when it names a submodule, as the checker does.
                if t and t != m and not (m.startswith(t + ".") and mods[t].name == "__init__.py"):
                    edges[m].add(t)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            strong(v)
    return out


def reachable(edges: dict[str, set[str]], start: set[str]) -> set[str]:
    seen, todo = set(), list(start)
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(edges.get(m, ()))
    return seen


def test_no_import_cycle_in_evalgate():
    found = cycles(imports(modules(ROOT)))
    assert found == [], "\n".join(f"an import cycle through {len(c)} modules: {', '.join(c)}" for c in found)


def test_the_gate_imports_nothing_above_it():
    mods = modules(ROOT)
    edges = imports(mods)
    gate = {m for m in mods if m == "evalgate.gate" or m.startswith("evalgate.gate.")}
    direct = {(m, t) for m in gate for t in edges[m] if t not in gate and t not in GATE_MAY_IMPORT}
    assert direct == set(), f"the gate imports {sorted(direct)}: hand it what it needs instead (evalgate.pipeline)"
    above = sorted(m for m in reachable(edges, gate) if m.startswith(ABOVE_THE_GATE))
    assert above == [], f"the gate reaches {above} through what it imports"


def test_only_python_m_evalgate_imports_the_command_line():
    mods = {**modules(ROOT), **modules(ROOT, "entrypoint")}
    edges = imports(mods)
    users = sorted(m for m, ts in edges.items() if "evalgate.cli" in ts)
    assert users == ["evalgate.__main__"], f"{users} import evalgate.cli: its work is in evalgate.commands, the pipeline's in evalgate.pipeline"


@pytest.mark.parametrize(
    "a, b",
    [
        ("from pkg import b\n", "def f():\n    from pkg.a import x\n"),  # inside a function
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.b\n", "import pkg.a\n"),  # for the type checker only
        ("from . import b\n", "from .a import x\n"),  # relative
    ],
)
def test_the_check_finds_a_cycle_wherever_the_import_is(tmp_path, a, b):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "pkg" / "a.py").write_text(a, encoding="utf-8")
    (tmp_path / "pkg" / "b.py").write_text(b, encoding="utf-8")
    (tmp_path / "pkg" / "c.py").write_text("import pkg.a\n", encoding="utf-8")
    assert cycles(imports(modules(tmp_path, "pkg"))) == [["pkg.a", "pkg.b"]]
