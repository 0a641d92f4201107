# Shared helpers: config validation, paths, model inputs and resources. Input functions live here.
import json
import shlex
import sys
from pathlib import Path

import yaml
from snakemake.utils import validate

SCHEMA = Path(workflow.basedir) / "workflow/schemas/config.schema.yaml"


def validate_config(config):
    """Validate against the schema, filling its defaults.

    validate() fills defaults into nested objects and fails on a section set to null ("off"),
    so the sections the schema lets be null are validated as absent and then put back as null.
    """
    properties = yaml.safe_load(SCHEMA.read_text())["properties"]
    off = [key for key, value in config.items()
           if value is None and "null" in (properties.get(key) or {}).get("type", [])]
    for key in off:
        del config[key]
    validate(config, schema=str(SCHEMA))
    for key in off:
        config[key] = None


validate_config(config)

SRC = str(Path(workflow.basedir) / "src")
# The CLI of the package in this checkout, whether it is installed (.venv) or not (conda envs).
SPANAUG = f"PYTHONPATH={shlex.quote(SRC)}${{PYTHONPATH:+:$PYTHONPATH}} python -m spanaug"

RES = f"{config['results_dir']}/{config['run_name']}"
LOGS = f"{RES}/logs"
BENCH = f"{RES}/benchmarks"
N_SHARDS = config["n_shards"]
N_ITER = config["iterations"]
SHARDS = [f"{j:03d}" for j in range(N_SHARDS)]

wildcard_constraints:
    i=r"\d+",
    j=r"\d{3}",
    augmenter=r"none|paraphrastic|lexsub|geca",
    fraction=r"[0-9]*\.?[0-9]+",
    seed=r"\d+",


def chain_shard(i, j):
    """Iteration i's output (CHAIN) for shard j; iteration 0 holds the seeds."""
    return f"{RES}/iterations/iter{int(i)}/shard{j}.chain.parquet"


def previous_chain(wildcards):
    return chain_shard(int(wildcards.i) - 1, wildcards.j)


def iteration_outputs():
    return [f"{RES}/iterations/iter{i}.chain.parquet" for i in range(1, N_ITER + 1)]


def final_outputs():
    out = [f"{RES}/augmented.parquet", f"{RES}/report/stats.json", f"{RES}/report/per_iteration.csv",
           f"{RES}/report/per_iteration.png"]
    if config["aligner"].get("evaluation"):
        out.append(f"{RES}/aligner_eval/ablation.csv")
    if config.get("baselines"):
        out.append(f"{RES}/aligner_eval/comparison.csv")
    out.append(f"{RES}/filtering/filters.csv")
    if config.get("augmenters"):
        out += [f"{RES}/augmenters/{name}.json" for name in ("paraphrastic", "lexsub", "geca", "graph")]
        if config["augmenters"].get("graph", {}).get("selftrain") and config["aligner"].get("evaluation"):
            out.append(f"{RES}/aligner_eval/selftrain/ablation.csv")
    if config.get("frameid"):
        out += [f"{RES}/frameid/curves.csv", f"{RES}/frameid/lexicon_baseline.json"]
    if config.get("human_eval"):
        out.append(f"{RES}/human_eval/task.csv")
        if config["human_eval"].get("results") or config["human_eval"].get("simulate"):
            out.append(f"{RES}/human_eval/human_eval.json")
    return out


# -- models: a trained artifact of this run, or a name/path given in the config


def paraphraser_trained():
    return config["paraphraser"].get("train") is not None


def paraphraser_model(wildcards=None):
    if paraphraser_trained():
        return f"{RES}/models/paraphraser"
    if not config["paraphraser"].get("model"):
        raise ValueError("config: set paraphraser.model or paraphraser.train")
    return config["paraphraser"]["model"]


def paraphraser_input(wildcards):
    return [f"{RES}/models/paraphraser"] if paraphraser_trained() else []


def aligner_model(wildcards=None):
    return config["aligner"]["model"] or f"{RES}/models/aligner"


def aligner_input(wildcards):
    return [] if config["aligner"]["model"] else [f"{RES}/models/aligner"]


# -- evaluation inputs: external data named in the config, or what this run derives


def baseline_made_inputs(wildcards):
    """The instances/pairs made from the aligner's bitext, when baselines names no external data."""
    b = config.get("baselines") or {}
    return [] if b.get("instances") and b.get("gold_pairs") else rules.make_alignment_instances.output


def human_results():
    """The crowd results file: the user's, the simulated one (demo), or None."""
    h = config.get("human_eval") or {}
    if h.get("results"):
        return h["results"]
    return f"{RES}/human_eval/results.simulated.csv" if h.get("simulate") else None


def judgments_input(wildcards):
    """The imported judgments that train the neural filter, when there are any."""
    return [f"{RES}/human_eval/judgments.csv"] if config.get("human_eval") and human_results() else []


def filters_opt():
    """``--filters JSON`` when the run defines its own filters (the paper's Table 4 otherwise)."""
    filters = (config.get("filtering") or {}).get("filters")
    return opt("--filters", json.dumps(filters) if filters else None)


def augmenter_filter_opts(name):
    """``--filter NAME`` for an augmenter, with the run's filter definitions."""
    return " ".join([opt("--filter", ((config.get("augmenters") or {}).get(name) or {}).get("filter")), filters_opt()])


def geca_opts():
    g = (config.get("augmenters") or {}).get("geca") or {}
    return " ".join(f"--{key.replace('_', '-')} {g[key]}" for key in
                    ("window", "max_fragments_per_environment", "max_templates_per_pair", "max_outputs", "seed")
                    if key in g)


# -- the Frame ID experiment: the user's splits, or the imported corpus split by document


def _frameid_file(part):
    f = config.get("frameid") or {}
    if f.get("train"):
        return f.get(part) or []
    return f"{RES}/frameid/split/{part}.parquet"


def frameid_pool(wildcards=None):
    return _frameid_file("train")


def frameid_test(wildcards=None):
    f = config.get("frameid") or {}
    if f.get("train") and not f.get("test"):
        raise ValueError("config: frameid.train is set, so frameid.test must be too")
    return _frameid_file("test")


def frameid_point_inputs(wildcards):
    inputs = {"train": frameid_pool(), "test": frameid_test()}
    dev = _frameid_file("dev")
    if dev:
        inputs["dev"] = dev
    if wildcards.augmenter in ("paraphrastic", "lexsub"):
        inputs["examples"] = f"{RES}/augmenters/{wildcards.augmenter}.parquet"
    return inputs


def frameid_points():
    f = config.get("frameid") or {}
    return [f"{RES}/frameid/points/{augmenter}/f{float(fraction)}.s{seed}.json"
            for augmenter in ["none", *f.get("augmenters", [])] for fraction in f.get("fractions", [])
            for seed in f.get("seeds", [])]


def opt(flag, value):
    """A CLI option, or nothing when the value is unset."""
    return "" if value is None else f"{flag} {shlex.quote(str(value))}"


# -- resources: GPU rules ask SLURM for gres/memory/runtime from config; CPU rules for memory/runtime


def gpu_resources():
    r = config["resources"]["gpu"]
    out = dict(mem_mb=r["mem_mb"], runtime=r["runtime"], cpus_per_task=r["cpus"], gpu=r["gpus"])
    if r["gpus"]:
        out["gres"] = f"gpu:{r['gpus']}"
    if r.get("slurm_partition"):
        out["slurm_partition"] = r["slurm_partition"]
    return out


def cpu_resources():
    r = config["resources"]["cpu"]
    out = dict(mem_mb=r["mem_mb"], runtime=r["runtime"], cpus_per_task=r["cpus"])
    if r.get("slurm_partition"):
        out["slurm_partition"] = r["slurm_partition"]
    return out


GPU = gpu_resources()
CPU = cpu_resources()
