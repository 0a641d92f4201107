"""The package's architecture: layers without cycles, modules of readable size, rules without fallbacks."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

PACKAGE = REPO / "src" / "spanaug"


def test_import_contracts_hold():
    """Layers (cli > downstream > evaluation > pipeline > core) and torch-free CPU modules (pyproject.toml)."""
    lint = Path(sys.executable).parent / "lint-imports"
    if not lint.exists():
        pytest.skip("import-linter is not installed")
    result = subprocess.run(
        [str(lint), "--config", str(REPO / "pyproject.toml")], capture_output=True, text=True, cwd=REPO
    )
    assert result.returncode == 0, result.stdout[-3000:]


def import_cycles(package: str) -> list[list[str]]:
    """Every set of modules of ``package`` that import each other in a circle (imports inside
    functions and under TYPE_CHECKING count: they still tie the modules together), one sorted list
    per circle: the strongly connected components of the import graph with more than one module,
    or one module importing itself (Tarjan's algorithm, iterative)."""
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph(package, cache_dir=None)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & graph.modules) for m in sorted(graph.modules)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                elif child in on_stack:
                    low[module] = min(low[module], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == module:
                        break
                if len(component) > 1 or module in edges[module]:
                    cycles.append(sorted(component))
    return sorted(cycles)


def test_no_import_cycles():
    assert import_cycles("spanaug") == []


def test_import_cycles_are_found(tmp_path, monkeypatch):
    """The checker on a planted package: a lazy import inside a function closes a circle of three
    modules, beside a module that only imports into it (not part of the circle)."""
    package = tmp_path / "planted_cycle"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from planted_cycle import b\n")
    (package / "b.py").write_text("import planted_cycle.c\n")
    (package / "c.py").write_text("def late():\n    from planted_cycle import a\n    return a\n")
    (package / "leaf.py").write_text("from planted_cycle import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_cycles("planted_cycle") == [["planted_cycle.a", "planted_cycle.b", "planted_cycle.c"]]
    (package / "c.py").write_text("def late():\n    return None\n")
    assert import_cycles("planted_cycle") == []


def test_no_module_over_700_lines():
    long = {
        str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > 700
    }
    assert long == {}


def test_rules_read_the_config_without_fallback_defaults():
    """Defaults live in the schema (generated from the dataclasses); a rule restating one is a second copy."""
    for path in (REPO / "workflow" / "rules").glob("*.smk"):
        text = path.read_text()
        assert not re.search(r"\.get\(\s*[\"'][a-z_]+[\"']\s*,", text), f"{path.name}: .get(key, default)"
        assert "python -m spanaug" not in text and "PYTHONPATH" not in text, path.name


@pytest.mark.workflow
@pytest.mark.parametrize("configfile", ["config/config.yaml", "config/demo.yaml"])
def test_snakemake_lint_is_clean(configfile):
    snakemake = Path(sys.executable).parent / "snakemake"
    if not snakemake.exists():
        pytest.skip("snakemake is not installed")
    # The production config's data is not here: the preflight reports it without stopping the lint.
    env = dict(os.environ, SPANAUG_PREFLIGHT="warn", HF_HUB_OFFLINE="1")
    result = subprocess.run(
        [str(snakemake), "--lint", "--configfile", configfile], capture_output=True, text=True, cwd=REPO, env=env
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Lints for" not in result.stdout + result.stderr, (result.stdout + result.stderr)[-3000:]
