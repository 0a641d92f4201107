"""Command options from config sections, each rule's software environment and resources, and the
rules' priorities (the critical path first)."""

from __future__ import annotations

import dataclasses
import json
import shlex
from collections.abc import Iterable, Mapping
from typing import Any

from spanaug.core.config import RunConfig


def flags(section: Mapping[str, Any], keys: Iterable[str] | None = None, skip: Iterable[str] = ()) -> str:
    """Settings of a config section as the command options of the same names (``--beam-size 20``).

    A null setting is passed as ``null``; lists as several values (an empty one is left out); a
    mapping (such as filter definitions) as JSON.
    """
    keys, skip = (None if keys is None else set(keys)), set(skip)
    out = []
    for key, value in section.items():
        if (keys is not None and key not in keys) or key in skip:
            continue
        flag = f"--{key.replace('_', '-')}"
        if isinstance(value, list):
            if value:
                out.append(" ".join([flag, *(shlex.quote(str(v)) for v in value)]))
        elif isinstance(value, dict):
            out.append(f"{flag} {shlex.quote(json.dumps(value))}")
        else:
            out.append(f"{flag} {'null' if value is None else shlex.quote(str(value))}")
    return " ".join(out)


def stage_options(run: RunConfig) -> dict[str, str]:
    """The iteration stages' settings as their commands' options (model folders aside: the plan's). The
    per-stage rules pass them, and ``spanaug iterate`` (``shard_jobs: chain``) takes the same strings,
    so both ways run each stage alike."""
    cfg = dataclasses.asdict(run)
    fe = cfg["frame_elements"]
    return {
        "constraints": flags(cfg["constraints"]),
        "paraphrase": flags(cfg["paraphraser"], skip=("model", "train")),
        "align": flags(cfg["aligner"], keys=("batch_size", "dtype")),
        "align_frame_elements": flags(fe, keys=("mode", "select", "require", "candidates")),
        "select_frame_elements": flags(fe, keys=("select", "require")),
    }


def opt(flag: str, value: object) -> str:
    """One option, or nothing when the value is unset."""
    return "" if value is None else f"{flag} {shlex.quote(str(value))}"


def files_option(flag: str, files: Iterable[object]) -> str:
    """``--flag FILE...``, quoted, or nothing when there are none."""
    files = [str(f) for f in files]
    return " ".join([flag, *map(shlex.quote, files)]) if files else ""


# ---------------------------------------------------------------- software and resources


def tagger_env(spec: str | None) -> str:
    """The conda environment for POS tagging with ``spec`` (spaCy's for a spaCy model, else the CPU one)."""
    return "../../envs/spacy.yaml" if spec and spec.startswith("spacy:") else "../../envs/cpu.yaml"


def job_resources(run: RunConfig, kind: str) -> dict[str, Any]:
    """A rule's resources from the config: memory, runtime, CPUs, and on SLURM its GPUs and partition."""
    r = getattr(run.resources, kind)
    out: dict[str, Any] = {"mem_mb": r.mem_mb, "runtime": r.runtime, "cpus_per_task": r.cpus}
    if kind == "gpu":
        out["gpu"] = r.gpus
    if r.gpus:
        out["gres"] = f"gpu:{r.gpus}"
    if r.slurm_partition:
        out["slurm_partition"] = r.slurm_partition
    return out


# Every iteration waits for the seeds and both models; evaluations, augmenters and reports only fill
# the gaps (a cut-down production run on 2 cores started train_aligner 18.5 minutes late because
# evaluation jobs had taken the slots). Rules not named here keep Snakemake's default, 0.
PRIORITIES = {
    "import_corpus": 30,
    "select_seeds": 30,
    "shard_seeds": 30,
    "make_alignment_instances": 20,
    "make_synthetic_instances": 20,
    "train_aligner": 20,
    "train_paraphraser": 20,
    "expand_constraints": 10,
    "paraphrase": 10,
    "align": 10,
    "select_best": 10,
    "iterate_shard": 10,
    "gather_iteration": 10,
    "assemble": 10,
}

# On SLURM, Snakemake submits every ready job at once, and the cluster runs them in its own order
# (first come, first served under priority/basic): an evaluation submitted before train_aligner
# was ready took the slot. So each job also asks SLURM for a lower priority, --nice, 1,000 per
# point its rule is below the top of PRIORITIES; a level (10 points) outweighs any difference in submission
# order a run can make (a later job only loses one point per earlier job under priority/basic).
NICE_STEP = 1_000


def nice(priority: int) -> int:
    """The SLURM --nice of a rule of this priority (0 at the top of PRIORITIES)."""
    return NICE_STEP * (max(PRIORITIES.values()) - priority)
