"""The rules' conda environments, generated from ``pyproject.toml``: one list of dependencies.

``pyproject.toml`` is the only place dependencies are written: the package's own, and its extras.
Each environment file (``envs/<name>.yaml``) is made from it by :func:`render` (``make envs``; a
test fails when a committed file is stale). An environment installs the dependencies of its extras
with pip, then the ``spanaug`` package itself, editable, from the checkout Snakemake runs
(``${SPANAUG_SOURCE}``, which ``workflow/rules/common.smk`` sets and pip expands), so its jobs run
the same code as a run without ``--sdm conda``. The dependencies are written out rather than left
to ``spanaug[extra]`` so that a changed list changes the file, and with it the hash under which
Snakemake keeps the built environment.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path
from typing import Any

#: The variable through which an environment finds the checkout to install.
SOURCE_VAR = "SPANAUG_SOURCE"
#: spaCy's English model: not on PyPI, so its wheel comes from spaCy's releases.
SPACY_MODEL_WHEEL = (
    "en_core_web_sm @ https://github.com/explosion/spacy-models/releases/download/"
    "en_core_web_sm-3.8.0/en_core_web_sm-3.8.0-py3-none-any.whl"
)
#: Conda package names of the PyPI distributions an environment takes from conda-forge.
CONDA_NAMES = {"pytorch": "torch"}


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """One environment: what its rules do, the extras it installs, what it takes from conda."""

    about: str
    extras: tuple[str, ...] = ()
    cpu_torch: bool = False
    pip_extra: tuple[str, ...] = ()


ENVS = {
    "cpu": EnvSpec(
        "CPU stages: import, seeds, constraints, selection, gathering, statistics, filters, augmenters",
        extras=("offline-encoder",),  # stats.meaning_encoder: minilm
        cpu_torch=True,
    ),
    "gpu": EnvSpec(
        "GPU stages: paraphraser training and decoding (hf, ct2), aligner training and prediction, "
        "aligner evaluation, Frame ID",
        extras=("gpu",),
    ),
    "spacy": EnvSpec(
        "CPU stages that tag with spaCy (stats.pos_tagger or augmenters.lexsub.pos_tagger 'spacy:en_core_web_sm')",
        extras=("spacy", "offline-encoder"),
        cpu_torch=True,
        pip_extra=(SPACY_MODEL_WHEEL,),
    ),
}


def _name(requirement: str) -> str:
    """The normalised distribution name of a requirement string (PEP 503)."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    if not match:
        raise ValueError(f"not a requirement: {requirement!r}")
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


def _project(source: Path) -> dict[str, Any]:
    return tomllib.loads((source / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def requirements(source: Path | str, extras: tuple[str, ...] = ()) -> list[str]:
    """The package's dependencies plus those of ``extras`` (self-references like ``spanaug[ct2]``
    expanded), in pyproject order, each once."""
    project = _project(Path(source))
    optional = project.get("optional-dependencies", {})
    out: list[str] = list(project["dependencies"])
    todo, seen = list(extras), set()
    while todo:
        extra = todo.pop(0)
        if extra in seen:
            continue
        seen.add(extra)
        for req in optional[extra]:
            inner = re.fullmatch(rf"{project['name']}\[([\w,-]+)\]", req.replace(" ", ""))
            if inner:
                todo += inner.group(1).split(",")
            else:
                out.append(req)
    return list(dict.fromkeys(out))


def render(name: str, source: Path | str) -> str:
    """The text of ``envs/<name>.yaml``."""
    spec = ENVS[name]
    source = Path(source)
    python = re.search(r"\d+\.\d+", _project(source)["requires-python"]).group(0)
    reqs = requirements(source, spec.extras)
    conda = [f"python={python}", "pip"]
    if spec.cpu_torch:
        torch = next(r for r in reqs if _name(r) == "torch")
        version = torch[len("torch") :].strip()
        conda.append(f"pytorch[version='{version}', build='cpu*']" if version else "pytorch[build='cpu*']")
    lines = [
        f"# {spec.about}.",
        "# GENERATED from pyproject.toml by `make envs` (spanaug.workflow.envs): edit the dependencies there.",
        f"# pip installs them, then this checkout's spanaug (editable; ${{{SOURCE_VAR}}} is set by the workflow).",
    ]
    if spec.cpu_torch:
        lines.append("# PyTorch is conda-forge's CPU build, so pip finds torch installed and fetches no CUDA wheel.")
    lines += ["channels:", "  - conda-forge", "  - nodefaults", "dependencies:"]
    lines += [f"  - {dep}" for dep in conda]
    lines += ["  - pip:"]
    lines += [f"      - {req}" for req in [*reqs, *spec.pip_extra]]
    lines += [f"      - -e ${{{SOURCE_VAR}}}"]
    return "\n".join(lines) + "\n"


def pip_requirements(env_file: Path | str) -> list[str]:
    """The pip section of an environment file, as lines of a requirements file."""
    import yaml

    deps = yaml.safe_load(Path(env_file).read_text(encoding="utf-8"))["dependencies"]
    return [line for dep in deps if isinstance(dep, dict) for line in dep.get("pip", [])]


def declared(env_file: Path | str) -> set[str]:
    """The normalised distribution names an environment file installs (conda and pip; the package
    itself as ``spanaug``)."""
    import yaml

    names: set[str] = set()
    for dep in yaml.safe_load(Path(env_file).read_text(encoding="utf-8"))["dependencies"]:
        if isinstance(dep, str):
            conda = re.match(r"[\w.-]+", dep).group(0)
            names.add(CONDA_NAMES.get(conda, conda))
    for line in pip_requirements(env_file):
        if line.startswith("-e ") and SOURCE_VAR in line:
            names.add("spanaug")
        elif not line.startswith("-"):
            names.add(_name(line))
    return {re.sub(r"[-_.]+", "-", n).lower() for n in names}


def conda_has_module(envs_dir: Path | str):
    """Whether the environments in ``envs_dir`` install an optional module (``--sdm conda``: the rules'
    commands import from those environments, not from the Python running Snakemake)."""
    from spanaug.workflow.preflight import OPTIONAL

    names = set().union(*(declared(f) for f in Path(envs_dir).glob("*.yaml")))

    def has_module(module: str) -> bool:
        dist = OPTIONAL[module][0] if module in OPTIONAL else module  # a spaCy model: its own name
        return re.sub(r"[-_.]+", "-", dist).lower() in names

    return has_module
