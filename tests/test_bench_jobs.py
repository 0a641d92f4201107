"""scripts/bench_jobs.py runs one shard's iteration as the rules do: paraphrase, align, select and
the next iteration's constraints, each command on the previous one's output, in fresh processes."""

import importlib.util

import pytest
from conftest import REPO, shared_file

from spanaug.demo.standins import TINY

pytestmark = pytest.mark.integration

spec = importlib.util.spec_from_file_location("bench_jobs", REPO / "scripts" / "bench_jobs.py")
bench_jobs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_jobs)


def test_the_four_commands_of_an_iteration_job_run_in_turn_and_are_timed():
    shared_file("fn1.7.dev.syntaxnet.conll")  # skips without the shared data
    tiny_encoder = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64}
    seconds = bench_jobs.job_seconds(
        "cpu", sentences=2, repeats=1, max_new=2, models={"size": TINY, "encoder_shape": tiny_encoder}
    )
    assert list(seconds) == ["paraphrase", "align", "select_best", "expand_constraints"]
    assert all(s > 0 for s in seconds.values())


def test_a_snakemake_start_reads_this_workflow():
    seconds = bench_jobs.snakemake_start_seconds(repeats=1)
    assert seconds is not None and seconds > 0


def test_without_snakemake_its_start_ups_are_not_measured(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "snakemake" else real(name, *a))
    assert bench_jobs.snakemake_start_seconds() is None
