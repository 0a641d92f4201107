"""How the production run is scheduled: rule priorities (the critical path before evaluations and
reports) and, in profiles/slurm, one GPU job per shard for all its iterations (``shard_jobs: chain``,
the production config's) or, with a job per stage, each shard's iteration grouped into one SLURM job."""

import os
import re
import subprocess

import pytest
from conftest import REPO, SNAKEMAKE, production_config
from test_rehearsal import rehearsal

pytestmark = pytest.mark.workflow

#: A shard's iteration: the rules of its grouped SLURM job, and the local rules around them.
GPU_JOB_RULES = ("paraphrase", "align")
ITERATION_RULES = ("expand_constraints", *GPU_JOB_RULES, "select_best")

CRITICAL_PATH = {
    "import_corpus",
    "select_seeds",
    "shard_seeds",
    "make_synthetic_instances",
    "train_aligner",
    "expand_constraints",
    "paraphrase",
    "align",
    "select_best",
    "gather_iteration",
    "assemble",
}


@pytest.fixture(scope="module")
def planned(per_stage_dry_run):
    """The production config's dry run through profiles/slurm with a job per stage: what it prints."""
    return per_stage_dry_run.stdout


def _jobs(printed: str) -> list[tuple[str, str]]:
    """(rule, the job's printed block) of every job a dry run lists."""
    blocks = re.split(r"^ *(?:local)?rule (\w+):$", printed, flags=re.M)
    return list(zip(blocks[1::2], blocks[2::2]))


def test_the_critical_path_outranks_evaluations_and_reports(planned):
    priorities = {}
    for rule, block in _jobs(planned):
        found = re.search(r"^\s+priority: (\d+)$", block, re.M)
        priorities.setdefault(rule, set()).add(int(found.group(1)) if found else 0)
    assert all(len(values) == 1 for values in priorities.values())
    priority = {rule: values.pop() for rule, values in priorities.items()}
    others = set(priority) - CRITICAL_PATH - {"all"}
    assert set(priority) >= CRITICAL_PATH and {"align_ablation", "frameid_point", "report_summary"} <= others
    assert min(priority[r] for r in CRITICAL_PATH) > max(priority[r] for r in others)
    # The models every iteration waits for start before the iterations compete for slots.
    assert priority["train_aligner"] > priority["paraphrase"]


def test_slurm_runs_the_critical_path_first_too(planned):
    """Snakemake submits every ready job at once; SLURM orders them by --nice (lower runs first)."""
    nice = {}
    for rule, block in _jobs(planned):
        found = re.search(r"slurm_extra=--nice=(\d+)", block)
        nice.setdefault(rule, int(found.group(1)) if found else 0)
    assert nice["import_corpus"] == 0 < nice["train_aligner"] < nice["paraphrase"] < nice["align_ablation"]
    assert nice["frameid_point"] == nice["report_summary"] == nice["align_ablation"]


def test_each_shards_iteration_is_one_slurm_job(planned):
    """profiles/slurm groups the two GPU rules of a shard's iteration: 80 jobs instead of 160 at the
    production config's 8 shards x 10 iterations, each rule keeping its own outputs; the iteration's
    CPU rules run on the head, neither in the GPU job nor in jobs of their own."""
    production = production_config()
    shards, iterations = production.n_shards, production.iterations
    groups = re.findall(r"Group job (iter\d+) \(", planned)
    assert len(groups) == shards * iterations and len(set(groups)) == iterations
    grouped = re.findall(r"^    rule (\w+):$", planned, re.M)
    assert {rule: grouped.count(rule) for rule in set(grouped)} == dict.fromkeys(GPU_JOB_RULES, shards * iterations)
    ungrouped = re.findall(r"^rule (\w+):$", planned, re.M)
    assert not set(GPU_JOB_RULES) & set(ungrouped)
    # The CPU rules: a job each per shard and iteration, outside the groups, run by the head (a dry
    # run prints local rules as any other; make demo-slurm runs them).
    head = set(ITERATION_RULES) - set(GPU_JOB_RULES)
    assert head <= rehearsal.local_rules()
    assert {rule: ungrouped.count(rule) for rule in head} == dict.fromkeys(head, shards * iterations)


def test_production_runs_one_gpu_job_per_shard_for_every_iteration(production_dry_run, planned):
    """shard_jobs: chain (config/config.yaml): n_shards GPU jobs where a job per stage makes n_shards x
    iterations grouped ones, each asking for the GPU rules' resources, on the critical path, in no
    group; no rule of a stage runs on its own."""
    production = production_config()
    assert production.shard_jobs == "chain"
    printed = production_dry_run.stdout
    jobs = _jobs(printed)
    chains = [block for rule, block in jobs if rule == "iterate_shard"]
    assert len(chains) == production.n_shards
    assert not {rule for rule, _ in jobs} & set(ITERATION_RULES) and "Group job" not in printed
    for block in chains:
        assert "gres=gpu:1" in block and "mem_mb=32000" in block and "runtime=240" in block
        assert "iter10/" in block and "--iterations 10" in block
    priority = {rule: re.search(r"^\s+priority: (\d+)$", block, re.M) for rule, block in jobs}
    assert int(priority["iterate_shard"].group(1)) == int(
        re.search(r"^\s+priority: (\d+)$", dict(_jobs(planned))["paraphrase"], re.M).group(1)
    )


def test_an_iterations_rules_never_remake_the_seeds(tmp_path):
    """The iteration's rules have no maker of iteration 0's chain: the seeds are shard_seeds' alone.
    When select_best matched iter0's chain, a grouped job on SLURM (whose Snakemake may run only the
    group's rules, then all four of the iteration's) planned an iteration -1 and make demo-slurm failed."""
    if SNAKEMAKE is None:
        pytest.skip("snakemake is not installed")
    env = dict(os.environ, SPANAUG_PREFLIGHT="warn", HF_HUB_OFFLINE="1")
    group = list(ITERATION_RULES)
    run = [SNAKEMAKE, "-n", "--configfile", "config/demo.yaml", "--config", f"results_dir={tmp_path}"]

    def plan(i: int) -> subprocess.CompletedProcess:
        """What a Snakemake allowed only the iteration's rules plans for iteration i's chain."""
        target = f"{tmp_path}/demo/iterations/iter{i}/shard000.chain.parquet"
        return subprocess.run(
            [*run, "--allowed-rules", *group, "--", target], cwd=REPO, capture_output=True, text=True, env=env
        )

    seeds = plan(0)
    assert seeds.returncode != 0 and "MissingRuleException" in seeds.stderr + seeds.stdout
    iteration = plan(1)
    # iteration 1 is planned from the seeds' chain, which the group's rules cannot make: missing input
    assert "iter0/shard000.chain.parquet" in iteration.stderr + iteration.stdout
    assert "iter-1" not in iteration.stderr + iteration.stdout
