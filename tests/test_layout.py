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


def test_no_import_cycles():
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("spanaug")
    cycles = [m for m in graph.modules if m in graph.find_upstream_modules(m)]
    assert cycles == []


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
