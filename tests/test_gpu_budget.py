"""scripts/gpu_budget.py: the run's GPU-hours from measured rates, checked on numbers done by hand."""

import dataclasses
import sys

import pytest
from conftest import REPO

from spanaug.core.config import FrameElementSettings
from spanaug.core.overrides import read_run_config

sys.path.insert(0, str(REPO / "scripts"))
import gpu_budget

PRODUCTION = REPO / "config" / "config.yaml"


def test_rates_average_harmonically():
    # 100 tokens at 100/s and 100 at 300/s: 1 s + 1/3 s for 200 tokens, 150/s (not 200/s).
    assert gpu_budget.harmonic_mean([100, 300]) == pytest.approx(150)
    assert gpu_budget.harmonic_mean([42.0]) == 42.0
    with pytest.raises(ValueError):
        gpu_budget.harmonic_mean([100, 0])
    with pytest.raises(ValueError):
        gpu_budget.harmonic_mean([])


def test_project_hours_decodes_the_outputs_tokens_and_aligns_each_input():
    hours = gpu_budget.project_hours(
        decode_tokens_per_s=1000,
        tokens_per_request=20,
        pairs_per_s=500,
        inputs_per_request=4.5,
        seeds=3600,
        iterations=10,
    )
    assert hours.requests == 36_000
    assert hours.decode == pytest.approx(0.2)  # 36,000 x 20 tokens / 1,000 per s = 720 s
    assert hours.align == pytest.approx(0.09)  # 36,000 x 4.5 inputs / 500 per s = 324 s
    assert hours.compute == hours.total == pytest.approx(0.29)  # no jobs, no CPU stages yet


def test_longer_outputs_cost_proportionally_more_decoding():
    short = gpu_budget.project_hours(1000, 10, 500, 3, 100, 10)
    long = gpu_budget.project_hours(1000, 30, 500, 3, 100, 10)
    assert long.decode == pytest.approx(3 * short.decode)
    assert long.align == short.align


@pytest.mark.parametrize(("chain", "jobs"), [(True, 8), (False, 80)])
def test_the_job_term_counts_a_job_a_shard_or_a_shards_iteration(chain, jobs):
    assert gpu_budget.job_count(8, 10, chain) == jobs
    assert gpu_budget.jobs_hours(jobs, 45) == pytest.approx(jobs * 45 / 3600)  # 8 x 45 s = 0.1 h; 80 x 45 s = 1 h


def test_chain_jobs_hold_their_gpu_through_the_cpu_stages():
    compute = gpu_budget.project_hours(1000, 20, 500, 4.5, 3600, 10)
    chain = gpu_budget.with_jobs(
        compute, n_shards=8, iterations=10, chain=True, seconds_per_job=450, cpu_s_per_request=0.001
    )
    per_stage = gpu_budget.with_jobs(compute, 8, 10, False, 45, 0.001)
    assert chain.cpu_stages == pytest.approx(0.01)  # 36,000 requests x 1 ms
    assert chain.jobs == 8 and chain.fixed == pytest.approx(1.0)  # 8 x 450 s
    assert chain.total == pytest.approx(0.29 + 0.01 + 1.0)
    assert per_stage.cpu_stages == 0  # the head runs them as local rules
    assert per_stage.jobs == 80 and per_stage.fixed == pytest.approx(1.0)  # 80 x 45 s


def test_the_shard_term_adds_only_the_jobs_fixed_cost():
    by_shards = gpu_budget.hours_by_shards(2.0, iterations=10, chain=False, seconds_per_job=36, shards=(4, 8))
    assert by_shards == pytest.approx({4: 2.4, 8: 2.8})  # 40 jobs x 36 s = 0.4 h; 80 jobs = 0.8 h
    assert gpu_budget.hours_by_shards(2.0, 10, True, 36, shards=(4,)) == pytest.approx({4: 2.04})


def test_training_hours_scale_the_timed_rates_and_honour_a_time_limit():
    # 7,200 examples trained at 4/s (30 min) and 3,600 encoded at 2/s (30 min).
    assert gpu_budget.training_hours(7200, 4, 3600, 2) == pytest.approx(1.0)
    assert gpu_budget.training_hours(7200, 4, 3600, 2, cap_hours=0.5) == pytest.approx(0.5)
    assert gpu_budget.training_hours(7200, 4, 3600, 2, cap_hours=2) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("kind", "settings", "inputs"),
    [
        ("paper", {"mode": "align"}, 3.0),  # a pair's encoding serves its trigger and FEs
        ("cross", {"mode": "off"}, 3.0),  # the triggers alone
        ("cross", {"mode": "keep"}, 3.0),  # FEs found by their words, not aligned
        ("cross", {"mode": "align"}, 3.0 + 1.5),  # the chosen beam's FEs alone (align_rows)
        ("cross", {"mode": "align", "select": "joint"}, 3.0 + 3 * 1.5),  # every beam's
        ("cross", {"mode": "align", "require": "core"}, 3.0 + 3 * 1.5),
    ],
)
def test_inputs_per_request_are_what_the_align_stage_encodes(kind, settings, inputs):
    fe = FrameElementSettings(**settings)
    assert gpu_budget.encoder_inputs_per_request(kind, 1.5, fe, 3) == inputs


def test_the_gpu_rules_are_read_from_the_workflow(tmp_path):
    (tmp_path / "a.smk").write_text(
        "rule on_gpu:\n    resources:\n        **GPU,\n    shell: 'x'\n\n"
        "rule on_cpu:\n    resources:\n        **CPU,\n    shell: 'y'\n\n"
        "if True:\n\n    rule nested_gpu:\n        resources:\n            **GPU,\n"
    )
    assert gpu_budget.gpu_rules(tmp_path) == ["on_gpu", "nested_gpu"]
    found = gpu_budget.gpu_rules(REPO / "workflow" / "rules")
    assert {"iterate_shard", "paraphrase", "align", "train_aligner", "frameid_point", "argid_point"} <= set(found)
    assert "select_best" not in found  # a local CPU rule


def test_the_plan_gives_each_gpu_rules_jobs():
    run = read_run_config(PRODUCTION)
    jobs = gpu_budget.planned_jobs(run)
    points = len(run.frameid.fractions) * len(run.frameid.seeds) * (1 + len(run.frameid.augmenters))
    assert jobs["frameid_point"] == points
    assert jobs["argid_point"] == len(run.argid.fractions) * len(run.argid.seeds) * (1 + len(run.argid.augmenters))
    assert run.shard_jobs == "chain"
    assert jobs["iterate_shard"] == run.n_shards and jobs["paraphrase"] == jobs["align"] == 0
    per_stage = gpu_budget.planned_jobs(dataclasses.replace(run, shard_jobs="iteration"))
    assert per_stage["iterate_shard"] == 0 and per_stage["paraphrase"] == run.n_shards * run.iterations


def test_every_gpu_rule_the_production_run_runs_is_estimated():
    """A GPU rule added to the workflow without an estimate fails here rather than leaving the budget short."""
    run = read_run_config(PRODUCTION)
    jobs = gpu_budget.planned_jobs(run)
    rules = gpu_budget.gpu_rules(REPO / "workflow" / "rules")
    assert set(rules) <= set(jobs), "a GPU rule the plan's job counts do not know"
    estimates = gpu_budget.rule_hours(run, jobs, gpu_budget.TrainingRates(100, 20, 40), gpu_budget.SEEDS, 10)
    assert gpu_budget.uncosted(rules, jobs, [e.rule for e in estimates]) == []
    assert all(e.jobs == jobs[e.rule] and e.hours_per_job > 0 for e in estimates)
    total = gpu_budget.run_hours(1.5, estimates)
    assert total == pytest.approx(1.5 + sum(e.jobs * e.hours_per_job for e in estimates))
    # Twice the rates: every estimate below its time limit takes half the time.
    faster = gpu_budget.rule_hours(run, jobs, gpu_budget.TrainingRates(200, 40, 80), gpu_budget.SEEDS, 10)
    point = {e.rule: e.hours_per_job for e in estimates}["argid_point"]
    assert {e.rule: e.hours_per_job for e in faster}["argid_point"] == pytest.approx(point / 2)


def test_an_unestimated_gpu_rule_is_named():
    assert gpu_budget.uncosted(
        ["train_aligner", "new_rule", "iterate_shard"], {"train_aligner": 1}, ["train_aligner"]
    ) == ["new_rule"]
    assert gpu_budget.uncosted(["off_rule"], {"off_rule": 0}, []) == []


def test_the_seed_count_states_its_source_and_its_arithmetic():
    assert gpu_budget.FULLTEXT_ANNOTATIONS == 28_377
    assert f"{gpu_budget.FULLTEXT_ANNOTATIONS:,}" in gpu_budget.SEEDS_SOURCE
    assert f"{gpu_budget.SEEDS - gpu_budget.FULLTEXT_ANNOTATIONS:,}" in gpu_budget.SEEDS_SOURCE
    assert "09170aa" in gpu_budget.SEEDS_SOURCE and "--seeds" in gpu_budget.SEEDS_SOURCE
